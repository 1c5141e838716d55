"""mockgpu.profile's bookkeeping on hand-made dispatches: rows per kernel code and launch shape, host phases summed."""
import numpy as np
from emu.amd.api import Dispatch, DispatchStats
from emu.common.memory import MemoryMap
from mockgpu.profile import CODE_BYTES, Profile, code_digest

def _setup():
  mem, code = MemoryMap(), np.zeros(4096, np.uint8)
  code[:8], code[1024:1032] = 1, 2
  mem.map(0x10000, code.nbytes, backing=code)
  return mem

def _stats(winst, total, decode, observe):
  s = DispatchStats(workgroups=2, waves=4, wave_instructions=winst)
  s.host = {"total": total, "decode": decode, "observe": observe}
  return s

def test_rows_by_code_and_shape_sum_their_dispatches():
  mem, prof = _setup(), Profile("1")
  a, b = (Dispatch(code_addr=addr, grid=(2, 1, 1), workgroup=(64, 1, 1), user_sgprs=[]) for addr in (0x10000, 0x10400))
  prof.dispatch(mem, a, _stats(100, 0.5, 0.25, 0.125))
  prof.dispatch(mem, a, _stats(100, 0.5, 0.0, 0.125))
  prof.dispatch(mem, b, _stats(7, 0.25, 0.0, 0.0))
  rows = sorted(prof.kernels.values(), key=lambda r: -r.wave_instructions)
  assert [(r.dispatches, r.wave_instructions, r.waves) for r in rows] == [(2, 200, 8), (1, 7, 4)]
  assert rows[0].host == {"total": 1.0, "decode": 0.25, "observe": 0.25}
  assert rows[0].label == f"code {code_digest(mem, 0x10000).hex()}" and rows[0].label != rows[1].label
  text = prof.table()
  assert "2x1x1" in text and "0.500" in text   # execute = total 1.0 - decode 0.25 - observe 0.25

def test_pm4_time_is_reported_without_the_kernels_it_launched():
  mem, prof = _setup(), Profile("1")
  prof.dispatch(mem, Dispatch(code_addr=0x10000, grid=(1, 1, 1), workgroup=(32, 1, 1), user_sgprs=[]), _stats(1, 2.0, 0.0, 0.0))
  prof.add("PM4", 2.5)
  prof.add("host waits", 1.0)
  assert "PM4 0.500" in prof.table() and "host waits 1.000" in prof.table()

def test_code_digest_reads_at_most_the_mapping():
  mem = _setup()
  assert code_digest(mem, 0x10000 + 4096 - 4) is not None and code_digest(mem, 0x9000) is None
  assert CODE_BYTES <= 4096

def test_a_deferred_replay_counts_once_it_has_run_and_the_report_runs_the_rest():
  mem, prof = _setup(), Profile("1")
  d = Dispatch(code_addr=0x10000, grid=(1, 1, 1), workgroup=(32, 1, 1), user_sgprs=[])
  ran, waiting = _stats(10, 0.5, 0.125, 0.0), _stats(10, 0.5, 0.125, 0.0)
  for s in (ran, waiting):
    s.clock_mhz, s.replay = 1000.0, (lambda: 2000)   # 2000 cycles at 1 GHz: 2 us of device time each
    prof.dispatch(mem, d, s)
  ran.resolve()   # e.g. the device clock read its cycles
  secs = prof.seconds()
  assert prof.counts() == (2, 1) and secs["decode_s"] == 0.25 and secs["timing_s"] == ran.host["observe"] > 0
  assert secs["emulated_s"] == 1.0 + ran.host["observe"]   # the dispatches' own seconds, and the one replay that ran
  text = prof.table()   # replays the other one to show every kernel's device time
  assert not waiting.pending and prof.counts() == (2, 0) and "ran only for this report" in text
  assert abs(next(iter(prof.kernels.values())).device_s - 4e-6) < 1e-15
