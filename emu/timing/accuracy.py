"""How far to trust an emulated AMD kernel time: the timing model's leave-one-kernel-out figures, measured by MEASURED's
command on the repository's captures. One table: `python -m mockgpu doctor`, the notice the mock prints once under DEBUG>=2
and docs/timing.md read it (tests/timing/test_fit.py checks the doc's table against it). Re-measure after a change to the model
and update the three fields together."""
from __future__ import annotations

MEASURED = {"date": "2026-12-07", "commit": "7093826", "command": "python -m emu.timing compare --loo --dir data"}
WITHIN_2 = {"rdna3": 0.816, "rdna4": 0.955}   # non-DRAM issue-to-issue deltas within ±2 cycles (cdna: no instruction traces)
RATIOS = {"rdna3": (0.38, 3.15), "rdna4": (0.48, 3.54), "cdna": (0.78, 1.10)}   # whole-kernel emulated / hardware cycles

def band(family:str) -> str:
  """The family's leave-one-kernel-out figures in a few words."""
  lo, hi = RATIOS[family]
  issue = f"{WITHIN_2[family]:.1%} of issue deltas within ±2 cycles, " if family in WITHIN_2 else ""
  return f"{family}: {issue}whole-kernel times {lo:.2f}-{hi:.2f}x the hardware's"

def provenance() -> str:
  """How and when the figures were measured."""
  return f"leave-one-kernel-out on real captures, {MEASURED['date']}, commit {MEASURED['commit']}: {MEASURED['command']}"
