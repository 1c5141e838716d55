"""Native chains (emu.amd.chain): a wave runs from one native region into the next inside one driver call, each wave as far as its
native code goes. The numpy path (EMU_REGIONS=0) is the reference (the `both` fixture: registers, SCC, bytes and wave-instruction
counts; every region test using `both` checks the chained path too); expected values are worked by hand."""
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.rdna3.ins import (s, v, EXEC_LO, s_and_saveexec_b32, s_cbranch_execz, s_lshl_b32, s_mov_b32,
  s_or_b32, v_add_nc_u32_e32, v_mul_f32_e32, v_sub_f32_e32, global_store_b32)
from emu import native
from emu.amd import chain, regions, run_program
from emu.amd.api import GPUHangFault
from test_region_loops import _loop   # (the region loop tests' counted loop)

pytestmark = pytest.mark.skipif(not native.available(), reason=f"no native code here: {native.NATIVE.why}")
LANES = np.arange(32)

@pytest.fixture
def chained(monkeypatch, regions_at_once):
  """Regions compile at their first run, in this thread, and chains are on; returns each driver call's (why it stopped, [(waves,
  [(row, runs) per region call])], wave-instructions)."""
  monkeypatch.setenv("EMU_CHAINS", "1")
  seen, real = [], chain.Chain.run
  def spy(self, *a):
    if (done := real(self, *a)) is not None: seen.append((done[0], [(w.tolist(), c.tolist()) for w, c in done[1]], done[2]))
    return done
  monkeypatch.setattr(chain.Chain, "run", spy)
  return seen

def _guarded_loop(block:list, tail:list=()) -> list:
  """A loop of s2 trips whose body is `block` run under EXEC &= s5 (skipped by s_cbranch_execz when no lane is left: LLVM's guarded
  block), then `tail`: regions joined by branches."""
  skip = sum(len(i.to_bytes()) for i in block) // 4
  return _loop([s_and_saveexec_b32(s[4], s[5]), s_cbranch_execz(simm16=skip), *block, s_or_b32(EXEC_LO, EXEC_LO, s[4]), *tail])

def test_blocks_joined_by_branches_run_in_one_driver_call_each_wave_its_own_way(chained, both):
  prog = _guarded_loop([v_add_nc_u32_e32(v[1], 7, v[1])], [v_add_nc_u32_e32(v[2], 1, v[2])])
  st = both(prog, waves=3, sgprs={2: [5, 3, 4], 5: [0xffff, 0, 0xffffffff]}, vgprs={1: LANES, 2: 0})
  for w, (trips, lanes) in enumerate(((5, 16), (3, 0), (4, 32))):
    assert (st.vgpr[w, :, 1] == LANES + np.where(LANES < lanes, 7 * trips, 0)).all() and (st.vgpr[w, :, 2] == trips).all()
  assert (st.sgpr[:, 2] == 0).all() and st.get_mask(0, EXEC_LO.offset) == 0xffffffff
  # the first batch ran the loop's head (compiling each region as the numpy path met it); then each wave its trips in one call: two
  # regions a trip (the guard, then the block and the loop's tail; a skipped block's branch goes to the tail's own region)
  assert chained[0][1] == [([0, 1, 2], [[0, 1]])]
  assert max(len(calls) for _, groups, _ in chained for _, calls in groups) >= 2 * 4 and all(why == chain.STOP_DONE for why, _, _ in chained)

def test_waves_that_run_the_same_calls_are_reported_together(chained, both):
  prog = _guarded_loop([v_add_nc_u32_e32(v[1], 7, v[1])])
  both(prog, waves=4, sgprs={2: [3, 3, 2, 3], 5: [0xffff, 0xffff, 0xffff, 0]}, vgprs={1: LANES})
  grouped = [w for _, groups, _ in chained for w, _ in groups]
  assert [0, 1] in grouped and [2] in grouped and [3] in grouped   # waves 0 and 1 ran alike; 2 fewer trips; 3 skipped every block

@pytest.mark.parametrize("trips, stop", [([3, 2], chain.STOP_SPLIT), ([3, 1], chain.STOP_FELL)], ids=["together", "on-its-own"])
def test_a_wave_that_falls_back_mid_chain_finishes_that_region_on_the_numpy_path(chained, both, trips, stop):
  # v1 *= 1e20 each trip under the guard; v2 = v1 - v1 is NaN once v1 is inf: lanes 16.. overflow on the 2nd trip (1e3 start).
  # Both waves on the 2nd trip: they fall back in a call of the batch together; wave 1 done after one: wave 0 goes on, and falls
  # back, on its own
  start = np.where(LANES < 16, 1e-30, 1e3).astype(np.float32)
  prog = _guarded_loop([v_mul_f32_e32(v[1], 1e20, v[1]), v_sub_f32_e32(v[2], v[1], v[1])])
  for _ in range(2):   # (the first run compiles each region as it meets it; the second chains from the start)
    st = both(prog, waves=2, sgprs={2: trips, 5: 0xffffffff}, vgprs={1: start})
  assert any(why == stop for why, _, _ in chained)
  small = start[:16] * np.float32(1e20) * np.float32(1e20) * np.float32(1e20)   # 1e30: still finite
  assert (st.vgpr[0, :16, 1].view(np.float32) == small).all() and (st.vgpr[0, :16, 2] == 0).all()
  assert np.isinf(st.vgpr[0, 16:, 1].view(np.float32)).all() and np.isnan(st.vgpr[0, 16:, 2].view(np.float32)).all()

@pytest.mark.parametrize("what", ["pause", "full"])
def test_a_call_that_stops_early_goes_on_in_the_next(monkeypatch, chained, both, what):
  # after about LOOP_BUDGET wave-instructions a call returns (the wall clock and Ctrl-C are seen between calls); a full trace too
  if what == "pause": monkeypatch.setattr(regions, "LOOP_BUDGET", 10)
  else: monkeypatch.setattr(chain, "TRACE_ENTRIES", 3)
  prog = _guarded_loop([v_add_nc_u32_e32(v[1], 7, v[1])])
  st = both(prog, waves=2, sgprs={2: [6, 4], 5: 0xffff}, vgprs={1: LANES})
  assert (st.vgpr[0, :, 1] == LANES + np.where(LANES < 16, 42, 0)).all() and (st.vgpr[1, :, 1] == LANES + np.where(LANES < 16, 28, 0)).all()
  stop = chain.STOP_PAUSE if what == "pause" else chain.STOP_FULL
  assert sum(why == stop for why, _, _ in chained) >= 2

def _self_loop() -> list:
  """A region (ended by a branch to the next instruction), then a region that branches back to its own start (s2 trips): the
  second loops inside its call, up to the limit the driver gives it."""
  return [v_add_nc_u32_e32(v[1], 1, v[1]), s_cbranch_execz(simm16=0), *_loop([v_add_nc_u32_e32(v[1], 7, v[1])])]

def _nested_loop() -> list:
  """An outer loop of s2 trips around an inner region that branches back to its own start 3 times (s3): a chain's calls of that
  region run it 3 times each."""
  return _loop([s_mov_b32(s[3], 3), s_cbranch_execz(simm16=0), *_loop([v_add_nc_u32_e32(v[1], 7, v[1])], counter=3)])

@pytest.mark.parametrize("budget", [1, 9, 23, 40, 41, 57, 100])
@pytest.mark.parametrize("shape", [_guarded_loop([v_add_nc_u32_e32(v[1], 7, v[1])]), _self_loop()], ids=["guarded", "self-loop"])
def test_the_instruction_watchdog_fires_where_one_region_a_call_fires_for_one_wave(monkeypatch, chained, budget, shape):
  prog = shape
  run_program(prog, sgprs={2: 1, 5: 0xffff})   # (every region compiled)
  faults = []
  for chains in ("1", "0"):
    monkeypatch.setenv("EMU_CHAINS", chains)
    with pytest.raises(GPUHangFault) as e: run_program(prog, sgprs={2: 1000, 5: 0xffff}, watchdog=budget)
    faults.append((e.value.executed, e.value.pc))
  assert faults[0] == faults[1] and budget < faults[0][0] <= budget + 5   # (past it by less than a region run: at most 5 instructions)

@pytest.mark.parametrize("shape", [_guarded_loop([v_add_nc_u32_e32(v[1], 7, v[1])]), _self_loop()], ids=["guarded", "self-loop"])
def test_the_instruction_watchdog_fires_within_one_region_run_of_a_batch_past_its_budget(chained, shape):
  run_program(shape, waves=3, sgprs={2: 1, 5: 0xffff})
  for budget in (30, 77, 200):
    with pytest.raises(GPUHangFault) as e: run_program(shape, waves=3, sgprs={2: [2, 9, 1000], 5: 0xffff}, watchdog=budget)
    assert budget < e.value.executed <= budget + 5 * 3   # (past it by less than one region run of every wave of a batch)

def test_stores_in_chained_regions_land_as_on_the_numpy_path(monkeypatch, chained):
  # each trip stores v1 (lane + 7 * the trips so far) at out[wave][trip][lane]: the store ends a region, the loop's branch another
  from emu.common.memory import MemoryMap
  block = [v_add_nc_u32_e32(v[1], 7, v[1]), global_store_b32(addr=v[3], data=v[1], saddr=s[6:7]), v_add_nc_u32_e32(v[3], 128, v[3])]
  prog = _guarded_loop(block)
  outs = []
  for flag in ("1", "0"):
    monkeypatch.setenv("EMU_REGIONS", flag)
    out = np.zeros((2, 4, 32), dtype=np.uint32)
    mem = MemoryMap()
    mem.map(out.ctypes.data, out.nbytes, backing=out.view(np.uint8).reshape(-1))
    for _ in range(2):   # (the first run compiles each region as it meets it; the second chains from the start)
      out[...] = 0
      st = run_program(prog, waves=2, sgprs={2: [4, 2], 5: 0xffffffff, 6: [out.ctypes.data, out.ctypes.data + 512]},
                       vgprs={1: LANES, 3: LANES * 4}, memory=mem)
    outs.append((out.copy(), st.stats.bytes_written))
  want = np.zeros((2, 4, 32), dtype=np.uint32)
  want[0] = LANES + 7 * np.arange(1, 5)[:, None]
  want[1, :2] = LANES + 7 * np.arange(1, 3)[:, None]
  assert (outs[0][0] == want).all() and (outs[1][0] == want).all() and outs[0][1] == outs[1][1] == 6 * 32 * 4
  assert any(len(calls) > 3 for _, groups, _ in chained for _, calls in groups)

def _timed(prog:list, trips:list[int], masks:list[int]) -> tuple:
  from test_timing import relative, timed   # (the timing tests' dispatch with a timing model)
  cycles, timeline, st = timed(prog, waves=len(trips), sgprs={2: trips, 5: masks})
  return cycles, relative(timeline), st.stats.wave_instructions

@pytest.mark.parametrize("entry_from", [2, 10 ** 9], ids=["chain-entries", "run-entries"])
@pytest.mark.parametrize("shape, trips", [("guarded", [5, 1, 3]), ("self-loop", [5, 1, 3]), ("nested", [4, 2, 3])],
                         ids=["guarded", "self-loop", "nested"])
def test_the_timing_model_sees_each_waves_stream_as_one_region_a_call_and_the_numpy_path_give_it(monkeypatch, chained, shape, trips,
                                                                                                  entry_from):
  # waves that skip the block, or loop their own number of times in one region together (or as many times: calls of several
  # runs each): each wave's stream as the numpy path's, whether the timing model records a chain's calls as one entry (from
  # `entry_from` calls on) or an entry per region run
  from emu.amd import timing
  monkeypatch.setattr(timing, "CHAIN_CALLS", entry_from)
  prog = {"guarded": lambda: _guarded_loop([v_add_nc_u32_e32(v[1], 7, v[1]), v_mul_f32_e32(v[2], 2.0, v[1])], [s_lshl_b32(s[7], s[2], 1)]),
          "self-loop": _self_loop, "nested": _nested_loop}[shape]()
  masks = [0xffff, 0, 0xffffffff]
  _timed(prog, trips, masks)   # (every region compiled)
  chained.clear()
  got = _timed(prog, trips, masks)
  assert chained and (shape != "guarded" or max(len(calls) for _, groups, _ in chained for _, calls in groups) > 3)
  monkeypatch.setenv("EMU_CHAINS", "0")
  assert _timed(prog, trips, masks) == got
  monkeypatch.setenv("EMU_REGIONS", "0")
  assert _timed(prog, trips, masks) == got
