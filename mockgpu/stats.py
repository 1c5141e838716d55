"""Process-wide counters of what the emulated devices did, for reports such as the demo's table.

Engines call `record_dispatch` once per finished dispatch; readers take `totals()` before and after a piece of work
and subtract. Device time is the emulator's own (cycles at the shader clock), never host wall time.
"""
from __future__ import annotations
import threading

_lock = threading.Lock()
_totals = {"dispatches": 0, "waves": 0, "wave_instructions": 0, "cycles": 0, "device_s": 0.0}
_pending: list = []   # dispatches whose cycles are still deferred (DispatchStats.pending): counted when totals() is read
PENDING_TIDY = 4096

def record_dispatch(stats) -> None:
  """Add one finished dispatch (an `emu.amd.api.DispatchStats`, or anything with the same fields)."""
  with _lock:
    _totals["dispatches"] += 1
    _totals["waves"] += stats.waves
    _totals["wave_instructions"] += stats.wave_instructions
    if getattr(stats, "pending", False): _pending.append(stats)
    else: _add_time(stats)
    if len(_pending) >= PENDING_TIDY:   # a run that never reads them: count the ones replayed since, keep those still waiting
      keep = []
      for st in _pending:   # (one look each: a replay may finish meanwhile)
        if st.pending: keep.append(st)
        else: _add_time(st)
      _pending[:] = keep

def _add_time(stats):
  _totals["cycles"] += stats.cycles
  _totals["device_s"] += stats.seconds

def totals() -> dict:
  """A snapshot of the counters since the process started (deferred cycle counts are replayed for it)."""
  with _lock: pending, _pending[:] = list(_pending), []
  for st in pending: st.resolve()
  with _lock:
    for st in pending: _add_time(st)
    return dict(_totals)
