"""Suite-wide settings. Hypothesis runs derandomized (the same examples every run, so CI is reproducible; the fuzzers in
fuzz/ are where exploration happens) and without per-example deadlines (the suite runs under pytest-xdist on 2 cores,
where wall-clock deadlines would make results depend on machine load)."""
from hypothesis import settings

settings.register_profile("tinygrad-emu", derandomize=True, deadline=None, database=None, print_blob=True)
settings.load_profile("tinygrad-emu")
