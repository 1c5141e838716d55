"""Suite-wide settings. Hypothesis runs derandomized (the same examples every run, so CI is reproducible; the fuzzers in
fuzz/ are where exploration happens) and without per-example deadlines (the suite runs under pytest-xdist on 2 cores,
where wall-clock deadlines would make results depend on machine load). The step cache is off (below)."""
import os
from hypothesis import settings

# Steps kept on disk by earlier processes (emu.amd.step_cache) would hide what a test monkeypatches into decoding or step building;
# the suite builds every step itself, and tests/unit/amd/test_step_cache.py tests the cache in folders of its own
os.environ.setdefault("EMU_STEP_CACHE", "0")

settings.register_profile("tinygrad-emu", derandomize=True, deadline=None, database=None, print_blob=True)
settings.load_profile("tinygrad-emu")
