"""Host seconds the emulator spends on one-off work, by kind, for the whole process: generating instruction semantics from the
pcode (`pcode`), decoding and building steps (`step build`), reading built steps from the step cache (`step cache`), lowering
native regions to IR (`region lower`), compiling them with LLVM (`region compile`) and loading compiled objects from the disk
cache (`native load`). These are what a test file of many distinct small kernels pays per new kernel, where a long kernel pays
them once; `mockgpu.profile` and `python -m mockgpu.bench --suite` show them beside the per-dispatch figures.

Each part is charged its own time: a part entered inside another (a step build that compiles an op's pcode) is taken out of the
outer one, so the parts never count a second twice. Always on: it is entered only for work that costs at least tens of
microseconds (two clock reads each)."""
from __future__ import annotations
import threading, time
from contextlib import contextmanager

PARTS = ("pcode", "step build", "step cache", "region lower", "region compile", "native load")
_totals: dict[str, float] = dict.fromkeys(PARTS, 0.0)
_lock = threading.Lock()
_local = threading.local()   # per thread: the inner parts' seconds of each part entered and not yet left

@contextmanager
def charged(part:str):
  """Charge the time spent inside to `part` (one of PARTS), less what parts entered inside it were charged."""
  if part not in _totals: raise KeyError(f"unknown host part {part!r}: one of {', '.join(PARTS)}")
  stack = _local.__dict__.setdefault("stack", [])
  stack.append(0.0)
  t = time.perf_counter()
  try: yield
  finally:
    spent = time.perf_counter() - t
    inner = stack.pop()
    if stack: stack[-1] += spent
    with _lock: _totals[part] += spent - inner

def seconds() -> dict[str, float]:
  """Each part's host seconds so far in this process (every thread's)."""
  with _lock: return dict(_totals)
