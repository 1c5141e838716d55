"""Native regions that loop (emu.amd.regions): a region ending with a branch back to its own start runs again for the same wave
inside one native call, each wave its own number of trips, at most a limit per call (LOOP_BUDGET), and a wave that makes a NaN
part way leaves its earlier trips committed and runs that trip on the numpy path. The numpy path (EMU_REGIONS=0) is the reference
(the `both` fixture: registers, bytes and wave-instruction counts) and the expected values are worked by hand."""
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.rdna3.ins import (s, v, s_add_i32, s_cmp_lg_u32, s_cbranch_scc1, v_add_nc_u32_e32, v_mul_f32_e32,
  v_sub_f32_e32)
from emu import native
from emu.amd import regions

pytestmark = pytest.mark.skipif(not native.available(), reason=f"no native code here: {native.NATIVE.why}")
LANES = np.arange(32)

def _calls(monkeypatch) -> list:
  """(instructions, runs per wave) of each native region call, in order."""
  seen, real = [], regions.Region.run
  def spy(self, m, ws, budget=None):
    if (ran := real(self, m, ws, budget)) is not None:
      runs = ran[0].tolist()
      assert ran[1:] == (max(runs), sum(runs))   # (the most runs of a wave and all waves' runs, as the function tallied them)
      seen.append((self.count, runs))
    return ran
  monkeypatch.setattr(regions.Region, "run", spy)
  return seen

def _loop(body:list, counter:int=2) -> list:
  """body, then `s_add_i32 sN, sN, -1; s_cmp_lg_u32 sN, 0; s_cbranch_scc1` back to the body's start (N = `counter`): sN trips
  (sN >= 1)."""
  body = [*body, s_add_i32(s[counter], s[counter], -1), s_cmp_lg_u32(s[counter], 0)]
  back = -(sum(len(i.to_bytes()) for i in body) + 4) // 4   # simm16 counts dwords from the next instruction
  return [*body, s_cbranch_scc1(simm16=back & 0xffff)]

def test_each_wave_runs_its_own_trips_in_one_call(monkeypatch, native_runs, both):
  calls = _calls(monkeypatch)
  trips = [5, 1, 3]
  st = both(_loop([v_add_nc_u32_e32(v[1], 7, v[1])]), waves=3, sgprs={2: trips}, vgprs={1: LANES})
  assert calls == [(4, trips)]
  for w, t in enumerate(trips): assert (st.vgpr[w, :, 1] == LANES + 7 * t).all()
  assert (st.sgpr[:, 2] == 0).all() and st.stats.wave_instructions == 4 * sum(trips) + 3   # (+ each wave's s_endpgm)

def test_a_call_stops_at_its_limit_and_the_next_goes_on(monkeypatch, native_runs, both):
  calls = _calls(monkeypatch)
  monkeypatch.setattr(regions, "LOOP_BUDGET", 4 * 2 * 2)   # 4 instructions: two trips per call of 2 waves, four of 1
  st = both(_loop([v_add_nc_u32_e32(v[1], 1, v[1])]), waves=2, sgprs={2: [5, 2]}, vgprs={1: 0})
  assert calls == [(4, [2, 2]), (4, [3])]   # wave 1 done after its two trips; wave 0 goes on alone
  assert st.vgpr[0, 0, 1] == 5 and st.vgpr[1, 0, 1] == 2

def test_a_nan_part_way_keeps_the_trips_before_it(monkeypatch, native_runs, both):
  calls = _calls(monkeypatch)
  # v1 *= 1e20 each trip; v2 = v1 - v1 is NaN once v1 is inf: lanes 16.. overflow on the 2nd trip, lanes 0..15 never (1e-30 start)
  start = np.where(LANES < 16, 1e-30, 1e3).astype(np.float32)
  prog = _loop([v_mul_f32_e32(v[1], 1e20, v[1]), v_sub_f32_e32(v[2], v[1], v[1])])
  st = both(prog, waves=2, sgprs={2: [3, 1]}, vgprs={1: start})
  # wave 0: trip 1 native, trip 2 falls back (NaN), trip 3 too (inf - inf again); wave 1: its one trip native
  assert calls[0] == (5, [2, 1]) and [c for c, _ in calls] == [5, 5] and calls[1][1] == [1]
  small = start[:16] * np.float32(1e20) * np.float32(1e20) * np.float32(1e20)   # 1e30: still finite
  assert (st.vgpr[0, :16, 1].view(np.float32) == small).all() and (st.vgpr[0, :16, 2] == 0).all()
  assert np.isinf(st.vgpr[0, 16:, 1].view(np.float32)).all() and np.isnan(st.vgpr[0, 16:, 2].view(np.float32)).all()

@pytest.mark.parametrize("budget", [1, 7, 11, 12, 13, 35, 36, 37, 100])
def test_the_instruction_watchdog_fires_after_the_run_it_would_fire_after_one_run_a_call(monkeypatch, native_runs, budget):
  # a region is one batch for the watchdog (it checks after the whole region has run for every wave of the batch): looping inside
  # one call must stop at the run after which the region, one run a call, would have fired (LOOP_BUDGET 1: one run a call)
  from emu.amd import run_program
  from emu.amd.api import GPUHangFault
  prog = _loop([v_add_nc_u32_e32(v[1], 1, v[1])])   # 4 instructions a trip: waves of 2 and 9 trips, and one of 1000
  faults = []
  for one_run_a_call in (False, True):
    if one_run_a_call: monkeypatch.setattr(regions, "LOOP_BUDGET", 1)
    with pytest.raises(GPUHangFault) as e: run_program(prog, waves=3, sgprs={2: [2, 9, 1000]}, watchdog=budget)
    faults.append((e.value.executed, e.value.pc))
  assert faults[0] == faults[1] and native_runs

def test_a_runaway_native_loop_reads_the_wall_clock_after_every_call(monkeypatch, native_runs):
  # a call that looped may have run long: the wall-clock watchdog looks at once, not only every CLOCK_EVERY batches (set out of
  # reach here; the instruction budget is the backstop that would name itself if the clock were not read)
  import time
  from emu.amd import run_program
  from emu.common import watchdog
  from emu.amd.api import GPUHangFault
  from tinygrad.runtime.autogen.amd.rdna3.ins import s_cmp_eq_u32
  monkeypatch.setattr(watchdog, "CLOCK_EVERY", 1 << 40)
  spin = [v_add_nc_u32_e32(v[1], 1, v[1]), s_cmp_eq_u32(0, 0)]
  back = -(sum(len(i.to_bytes()) for i in spin) + 4) // 4
  t = time.perf_counter()
  with pytest.raises(GPUHangFault, match="0.2 s wall clock"):
    run_program([*spin, s_cbranch_scc1(simm16=back & 0xffff)], watchdog_s=0.2, watchdog=2_000_000_000)
  assert time.perf_counter() - t < 10 and native_runs

def _timed(prog:list, trips:list[int]) -> tuple:
  """(cycles, timeline, wave-instructions) of one workgroup of len(trips) waves (wave w's s2 = trips[w]) under the timing model."""
  from test_timing import relative, timed   # (the timing tests' dispatch with a timing model)
  cycles, timeline, st = timed(prog, waves=len(trips), sgprs={2: trips})
  return cycles, relative(timeline), st.stats.wave_instructions

@pytest.mark.parametrize("trips", [[6, 6], [5, 1, 3]], ids=["lockstep", "each-its-own"])
def test_the_timing_model_sees_a_native_loop_as_the_numpy_path_runs_it(monkeypatch, native_runs, trips):
  prog = _loop([v_add_nc_u32_e32(v[1], 7, v[1]), v_mul_f32_e32(v[2], 2.0, v[1])])
  calls = _calls(monkeypatch)
  looped = _timed(prog, trips)
  assert calls and calls[0][1] == trips   # every trip in one native call
  monkeypatch.setattr(regions, "LOOP_BUDGET", 1)   # one run a call
  assert _timed(prog, trips) == looped
  monkeypatch.setenv("EMU_REGIONS", "0")
  assert _timed(prog, trips) == looped
