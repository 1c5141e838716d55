"""Hypothesis strategies for the fuzz targets' cases, for property tests written with `@given`.

`cases(name)` draws a case with the target's own generator from a Hypothesis-controlled `random.Random` (`st.randoms`), so
Hypothesis records every choice the generator makes and shrinks a failing case through them; `finding(name, case)` runs the
target's property and returns the Finding (None when it holds). Every target (encodings of every format and opcode, one
instruction on the emulator with edge-biased operands and EXEC masks, the oracle, tinygrad programs) is available this way.
The CLI (`python -m fuzz`) stays the tool for time-boxed campaigns that keep going after a failure (docs/fuzzing.md, "Design").
"""
from __future__ import annotations
from typing import Any
from hypothesis import strategies as st
from fuzz import registry, runner
from fuzz.finding import Finding

def cases(name:str) -> st.SearchStrategy:
  """Cases of the fuzz target `name` (e.g. 'encoding.rdna3', 'exec.cdna', 'oracle.rdna4'), shrinkable by Hypothesis."""
  return st.randoms(use_true_random=False).map(registry.get(name).generate)

def finding(name:str, case:Any) -> Finding | None:
  """The target's property on one case: None when it holds, else the Finding (a crash of the check becomes `harness-crash`)."""
  return runner.check_case(registry.get(name), case)
