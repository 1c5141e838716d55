"""The mock counts a dispatch whose timing replay is deferred (DispatchStats.pending) exactly as one replayed at its end: in the
device clock when it is next read, and in the process-wide stats when they are read."""
from emu.amd.api import DispatchStats
from mockgpu import stats as mock_stats
from mockgpu.clock import DeviceClock

def deferred(cycles:int, mhz:float) -> DispatchStats:
  st = DispatchStats(waves=1, wave_instructions=5, clock_mhz=mhz)
  st.replay = lambda: cycles
  return st

def test_the_clock_counts_a_deferred_dispatch_when_read():
  eager, lazy = DeviceClock(), DeviceClock()
  # 2970 cycles at 2970 MHz = 1 us = 100 ticks of the 100 MHz counter; 1000 cycles with no shader clock named: the board's 2500 MHz
  # (0.4 us = 40 ticks); a packet is one tick
  eager.advance_dispatch(DispatchStats(cycles=2970, clock_mhz=2970.0), 2500.0); eager.advance_packet()
  eager.advance_dispatch(DispatchStats(cycles=1000), 2500.0)
  a, b = deferred(2970, 2970.0), deferred(1000, 0.0)
  lazy.advance_dispatch(a, 2500.0); lazy.advance_packet(); lazy.advance_dispatch(b, 2500.0)
  assert a.pending and b.pending and lazy.ticks == 1   # only the packet so far
  assert lazy.now() == eager.now() == 100 + 1 + 40 and not a.pending and not b.pending

def test_stats_totals_replay_what_is_deferred():
  before = mock_stats.totals()
  st = deferred(2970, 2970.0)
  mock_stats.record_dispatch(st)
  assert st.pending
  after = mock_stats.totals()
  assert not st.pending and after["cycles"] - before["cycles"] == 2970 and after["dispatches"] - before["dispatches"] == 1
  assert abs((after["device_s"] - before["device_s"]) - 1e-6) < 1e-15

def test_a_clock_nobody_reads_keeps_only_the_dispatches_still_waiting(monkeypatch):
  from mockgpu import clock as clock_mod
  monkeypatch.setattr(clock_mod, "PENDING_TIDY", 4)
  c, made = DeviceClock(), [deferred(2970, 2970.0) for _ in range(6)]
  for st in made[:3]: c.advance_dispatch(st, 2500.0)
  made[0].resolve(); made[1].resolve()   # e.g. the deferred-replay budget ran the oldest
  c.advance_dispatch(made[3], 2500.0)    # the fourth: the two replayed are counted, two stay
  assert len(c._pending) == 2 and c.ticks == 200
  for st in made[4:]: c.advance_dispatch(st, 2500.0)
  assert c.now() == 600 and not c._pending
