"""When a dispatch is declared hung.

Two budgets, either of which ends a dispatch with `GPUHangFault`:
- wall-clock seconds (`EMU_WATCHDOG_S`, default `DEFAULT_SECONDS`): the bound a user feels, independent of the grid's width
  (one runaway wave and 512 runaway waves fault after the same time);
- wave-instructions (`EMU_WATCHDOG`, default none): deterministic, for tests and fuzzers that need the fault at the same
  instruction on every machine.
A dispatch can also be cancelled from another thread (`cancel`: its queue was reset); the executing thread notices at its
next instruction batch. The default of 20 s is below tinygrad's own 30 s signal-wait timeout, so a hang reaches tinygrad as
this fault rather than as an anonymous wait timeout, and about ten times the longest dispatch of the bench's own suites and
demo (docs/reliability.md has the measurements).
"""
from __future__ import annotations
import os, time
from emu.common.faults import GPUHangFault

DEFAULT_SECONDS = 20.0
CLOCK_EVERY = 16   # instruction batches between wall-clock reads

def budget_seconds(seconds:float|None=None) -> float|None:
  """The wall-clock budget: the argument, else env EMU_WATCHDOG_S (0 = none), else DEFAULT_SECONDS."""
  if seconds is None: seconds = float(os.environ.get("EMU_WATCHDOG_S", DEFAULT_SECONDS))
  return seconds if seconds > 0 else None

def budget_instructions(instructions:int|None=None) -> int|None:
  """The wave-instruction budget: the argument, else env EMU_WATCHDOG (0 or unset = none)."""
  if instructions is None: instructions = int(os.environ.get("EMU_WATCHDOG", 0))
  return instructions if instructions > 0 else None

class Watchdog:
  """The budgets of the dispatches of one GPU. `arm()` starts a dispatch's clock; `check` is called once per batch."""
  def __init__(self, instructions:int|None=None, seconds:float|None=None):
    self.instructions, self.seconds = budget_instructions(instructions), budget_seconds(seconds)
    self._deadline = float("inf")
    self._cancelled: str | None = None
    self._batches = 0

  def arm(self):
    """A dispatch starts: its wall-clock budget starts now; an earlier cancel no longer applies."""
    self._deadline = time.monotonic() + self.seconds if self.seconds is not None else float("inf")
    self._cancelled, self._batches = None, 0

  def cancel(self, reason:str):
    """Make the running dispatch fail at its next batch with a hang fault naming `reason` (safe from any thread)."""
    self._cancelled = reason

  def check(self, executed:int, pc:int, waves=None, w:int=0, long:bool=False):
    """Raise GPUHangFault when a budget is spent or the dispatch was cancelled; it names wave `waves[w]` (looked up only then).
    `long`: the batch may have run long (a native region that looped), so the clock is read now, not only every CLOCK_EVERY."""
    self._batches += 1
    why = None
    if self._cancelled is not None: why = f"was reset: {self._cancelled}"
    elif self.instructions is not None and executed > self.instructions:
      why = f"exceeded its watchdog budget of {self.instructions} wave-instructions (EMU_WATCHDOG)"
    elif (long or self._batches % CLOCK_EVERY == 0) and time.monotonic() > self._deadline:
      why = f"exceeded its watchdog budget of {self.seconds:g} s wall clock (EMU_WATCHDOG_S)"
    if why is not None: raise GPUHangFault(why, executed, pc, waves[w] if waves is not None else None)
