"""Native VALU regions (emu.amd.regions): straight-line runs give the numpy path's registers bit for bit (EMU_REGIONS=0 is the
reference, and numpy arithmetic where the expectation is simple), they really run natively where they should, and they step aside
where they must: lane-mask results read as scalars, NaN results (that wave re-runs on the numpy path), another MODE, the timing
model and the trace."""
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.rdna3.ins import (s, v, VCC, v_add_f32_e32, v_mul_f32_e32, v_fma_f32, v_add_co_u32, v_add_co_ci_u32,
  v_cmp_gt_f32_e32, v_cmp_gt_f32_e64, v_cmp_gt_u32_e64, v_cndmask_b32_e32, v_add_nc_u32_e32, v_lshlrev_b64, v_add_f64, v_fmamk_f32_e32, v_max_f32_e32,
  VOPD, VOPDOp, s_delay_alu, s_round_mode, s_nop)
from emu import native
from emu.amd import regions, run_program
from emu.amd.exec_valu import ValuStep

pytestmark = pytest.mark.skipif(not native.available(), reason=f"no native code here: {native.NATIVE.why}")
LANES = np.arange(64)

def f32(x) -> np.ndarray: return np.asarray(x, dtype=np.float32).view(np.uint32)
def as_f32(x) -> np.ndarray: return np.asarray(x, dtype=np.uint32).view(np.float32)

def test_carry_chain_partial_exec_two_waves(monkeypatch, native_runs, both):
  lo = np.where(LANES[:32] % 3 == 0, 0xffffffff, LANES[:32] * 0x10000001).astype(np.uint32)
  prog = [v_add_co_u32(v[4], s[10], v[1], v[2]), s_delay_alu(0x1), v_add_co_ci_u32(v[5], s[12], v[3], v[3], s[10])]
  st = both(prog, waves=2, vgprs={1: lo, 2: 7, 3: 0x7fffffff + LANES[:32] % 2, 4: 0xdead, 5: 0xbeef}, exec_mask=0x0ff0ff0f)
  assert native_runs == [2]
  on = (0x0ff0ff0f >> LANES[:32]) & 1 == 1
  total = lo.astype(np.uint64) + np.uint64(7)
  carry = total >> np.uint64(32)
  assert (st.vgpr[0, :, 4] == np.where(on, total & np.uint64(0xffffffff), 0xdead)).all()
  assert int(st.sgpr[1, 10]) == sum(1 << i for i in range(32) if on[i] and carry[i])   # inactive lanes write 0, carry or not
  second = np.uint64(2) * (np.uint64(0x7fffffff) + (LANES[:32] % 2).astype(np.uint64)) + carry
  assert (st.vgpr[1, :, 5] == np.where(on, second & np.uint64(0xffffffff), 0xbeef)).all()
  assert int(st.sgpr[0, 12]) == sum(1 << i for i in range(32) if on[i] and second[i] >> np.uint64(32))

def _region_sizes(monkeypatch) -> list:
  """The instruction counts of the regions that run natively, in order (with the native_runs fixture's batch sizes)."""
  sizes, real = [], regions.Region.run
  monkeypatch.setattr(regions.Region, "run", lambda self, m, ws, *a: (r := real(self, m, ws, *a), r is not None and sizes.append(self.count))[0])
  return sizes

@pytest.mark.parametrize("cmp", [v_cmp_gt_f32_e32, lambda a, b: v_cmp_gt_f32_e64(VCC, a, b)], ids=["e32", "e64"])
def test_vopc_lane_mask_feeds_cndmask_wave64(monkeypatch, native_runs, both, cmp):
  sizes = _region_sizes(monkeypatch)
  prog = [cmp(v[1], v[2]), v_cndmask_b32_e32(v[3], v[4], v[5])]
  st = both(prog, lanes=64, vgprs={1: f32(LANES - 20.0), 2: f32(3.0), 3: 1, 4: 10, 5: 20}, exec_mask=(1 << 64) - 1 - (1 << 40))
  assert native_runs == [1] and sizes == [2]   # the compare and the select in one region
  gt = LANES - 20.0 > 3.0
  on = LANES != 40
  assert (st.vgpr[0, :, 3] == np.where(on, np.where(gt, 20, 10), 1)).all()
  assert st.get_mask(0, 106) == sum(1 << i for i in range(64) if gt[i] and on[i])

@pytest.mark.parametrize("tier", [native.FULL, native.QUICK])
def test_exp_log_and_rsq_run_natively_and_their_object_is_position_independent(monkeypatch, native_runs, both, tmp_path, tier):
  # V_EXP/V_LOG: the C library's exp2/log2 of the value in double, rounded to f32 (numerics); V_RSQ: 1/sqrt in double. The region
  # reaches exp2/log2 through emu.native's table, so its loaded image holds no outside address and is kept for later processes, in
  # either tier (QUICK's unoptimised code generator once turned the prologue's llvm.memset into a call to the C library's memset)
  import math
  from tinygrad.runtime.autogen.amd.rdna3.ins import v_exp_f32_e32, v_log_f32_e32, v_rsq_f32_e32
  monkeypatch.setenv("EMU_PCODE_CACHE", str(tmp_path / "pcode"))   # (the native objects are kept beside it)
  monkeypatch.setattr(regions.Region, "_tier", lambda self: tier)
  monkeypatch.setattr(regions, "_built", {})   # (compiled here, not the region of these bytes an earlier test made)
  sizes = _region_sizes(monkeypatch)
  x = (LANES[:32] / 4 - 3).astype(np.float32)
  st = both([v_exp_f32_e32(v[2], v[1]), v_log_f32_e32(v[3], v[2]), v_rsq_f32_e32(v[4], v[1])], vgprs={1: f32(x)})
  assert native_runs == [1] and sizes == [3]
  e = np.array([np.float32(math.exp2(float(t))) for t in x])
  assert (as_f32(st.vgpr[0, :, 2]) == e).all()
  assert (as_f32(st.vgpr[0, :, 3]) == np.array([np.float32(math.log2(float(t))) for t in e])).all()
  r = as_f32(st.vgpr[0, :, 4])
  assert (r[x > 0] == np.array([np.float32(1 / math.sqrt(float(t))) for t in x[x > 0]])).all() and np.isnan(r[x < 0]).all()
  from emu.amd.chain import DRIVER_IR
  # (the chain driver's object too, when `both` compiled it here)
  (obj,) = [o for o in (tmp_path / "native").glob("*.o") if o.stem != native.NATIVE.key(DRIVER_IR)]
  assert native.NATIVE.function_by_key(obj.stem, regions.SIGNATURE) is not None   # as a later process loads it: the image is kept
  assert (tmp_path / "native" / f"{obj.stem}.img").exists()

def test_a_lane_mask_read_as_a_scalar_in_the_same_region(monkeypatch, native_runs, both):
  # the compare's word is made when it is written: the add reads the whole mask in every lane, inactive lanes' bits 0
  prog = [v_cmp_gt_u32_e64(s[4], v[1], 9), v_add_nc_u32_e32(v[2], s[4], v[1])]
  st = both(prog, vgprs={1: LANES[:32], 2: 3}, exec_mask=0xfffff0ff)
  mask = sum(1 << i for i in range(32) if i > 9 and not 8 <= i < 12)
  assert (st.vgpr[0, :, 2] == np.where((LANES[:32] < 8) | (LANES[:32] >= 12), (mask + LANES[:32]) & 0xffffffff, 3)).all()
  assert native_runs == [1]

def test_vopd_halves_read_before_either_writes(monkeypatch, native_runs, both):
  swap = VOPD(VOPDOp.V_DUAL_MOV_B32, VOPDOp.V_DUAL_MOV_B32, vdstx=v[1], vdsty=v[2], srcx0=v[2], srcy0=v[1])
  st = both([swap, v_add_nc_u32_e32(v[3], v[1], v[2])], vgprs={1: LANES[:32], 2: 100})
  assert native_runs == [1]
  assert (st.vgpr[0, :, 1] == 100).all() and (st.vgpr[0, :, 2] == LANES[:32]).all() and (st.vgpr[0, :, 3] == LANES[:32] + 100).all()

def test_64_bit_operands_modifiers_and_literals(monkeypatch, native_runs, both):
  x = (LANES[:32].astype(np.float64) - 7.5)
  xb = x.view(np.uint64)
  prog = [v_lshlrev_b64(v[6:7], 3, v[1:2]), v_add_f64(v[8:9], v[1:2], v[1:2]), v_fma_f32(v[10], -v[3], abs(v[4]), 0.5),
          v_fmamk_f32_e32(v[11], v[3], v[4], literal=0x3fa00000), s_nop(0), v_mul_f32_e32(v[12], 3.0, v[11])]
  st = both(prog, vgprs={1: (xb & 0xffffffff).astype(np.uint32), 2: (xb >> np.uint64(32)).astype(np.uint32),
                                      3: f32(LANES[:32] * 0.5), 4: f32(-2.0)})
  assert native_runs == [1]
  shifted = (st.vgpr[0, :, 6].astype(np.uint64) | st.vgpr[0, :, 7].astype(np.uint64) << np.uint64(32))
  assert (shifted == xb << np.uint64(3)).all()
  doubled = (st.vgpr[0, :, 8].astype(np.uint64) | st.vgpr[0, :, 9].astype(np.uint64) << np.uint64(32)).view(np.float64)
  assert (doubled == x + x).all()
  a = (LANES[:32] * 0.5).astype(np.float32)
  assert (as_f32(st.vgpr[0, :, 10]) == -a * np.float32(2.0) + np.float32(0.5)).all()   # exact in f32: one rounding or two agree
  assert (as_f32(st.vgpr[0, :, 12]) == np.float32(3.0) * (a * np.float32(1.25) + np.float32(-2.0))).all()

def test_a_nan_result_reruns_its_waves_on_the_numpy_path(monkeypatch, native_runs):
  calls = []
  real = ValuStep.run
  monkeypatch.setattr(ValuStep, "run", lambda self, m, ws: (calls.append(list(ws)), real(self, m, ws))[1])
  prog = [v_add_f32_e32(v[2], v[1], v[1]), v_mul_f32_e32(v[3], 0, v[2])]   # inf + inf = inf, then 0 * inf = NaN
  finite = run_program(prog, waves=3, vgprs={1: f32(LANES[:32])})
  assert native_runs == [3] and calls == []   # no NaN: nothing ran on the numpy path
  assert (as_f32(finite.vgpr[:, :, 3]) == 0).all()
  nan_in = {1: f32(np.where(LANES[:32] == 5, np.float32(np.inf), np.float32(1.0)))}
  st = run_program(prog, waves=3, vgprs=nan_in)
  assert native_runs == [3, 3] and calls == [[0, 1, 2], [0, 1, 2]]   # every wave made a NaN: each re-ran both steps
  monkeypatch.setenv("EMU_REGIONS", "0")
  want = run_program(prog, waves=3, vgprs=nan_in)
  np.testing.assert_array_equal(st.vgpr_store, want.vgpr_store)
  assert np.isnan(as_f32(st.vgpr[2, 5, 3])) and (as_f32(st.vgpr[2, :5, 3]) == 0).all()

def test_an_op_lowered_for_another_mode_is_not_used(monkeypatch, native_runs, both):
  tiny = f32(np.float32(1.5 * 2.0 ** -24))   # 1 + tiny: nearest even rounds up to 1 + 2^-23, toward zero keeps 1
  prog = [s_round_mode(0x3), v_add_f32_e32(v[2], v[1], v[4]), v_max_f32_e32(v[3], v[1], v[2])]
  st = both(prog, vgprs={1: f32(1.0), 4: tiny})
  assert native_runs == [1]   # v_max alone: the add's toward-zero code does not lower
  assert (as_f32(st.vgpr[0, :, 2]) == 1.0).all() and (as_f32(st.vgpr[0, :, 3]) == 1.0).all()

@pytest.mark.parametrize("compiled", [True, False], ids=["native", "not-yet-hot"])
def test_tinygrad_matmul_and_timing_agree_with_the_numpy_path(monkeypatch, native_runs, compiled, fresh_process):
  # regions native, or still below their threshold (their steps run on the numpy path and observers hear of them all at once):
  # the same numbers, cycles and instruction counts as without regions
  from emu.amd.gpu import AMDGPU
  from emu.amd.kernel import Buffers, compile_kernel, kernel_dispatch
  if not compiled:   # (fresh regions: those of an earlier test may be compiled)
    monkeypatch.setattr(regions, "REGION_HOT", 10 ** 9)
    monkeypatch.setattr(regions, "REGION_HOT_MAX", 10 ** 9)
    fresh_process("0")
  k = compile_kernel(lambda a, b: a @ b, (32, 32), (32, 32))
  rng = np.random.default_rng(1)
  a, b = rng.standard_normal((32, 32)).astype(np.float32), rng.standard_normal((32, 32)).astype(np.float32)
  results, ran = [], []
  from emu.amd.timing import TimingModel
  monkeypatch.setattr(TimingModel, "ran", lambda self, *a, real=TimingModel.ran: ran.append(1) or real(self, *a))
  for flag in ("1", "0"):
    monkeypatch.setenv("EMU_REGIONS", flag)
    out, bufs = np.zeros(32 * 32, dtype=np.float32), Buffers()
    stats = AMDGPU("gfx1100", bufs.mem, timing=True).dispatch(kernel_dispatch(k, [a, b], out, bufs))
    results.append((out.copy(), stats.cycles, stats.wave_instructions))
  assert (len(native_runs) > 0) == compiled and len(ran) > 0
  np.testing.assert_array_equal(results[0][0], results[1][0])
  assert results[0][1:] == results[1][1:]
  np.testing.assert_allclose(results[0][0].reshape(32, 32), a @ b, rtol=1e-4, atol=1e-4)

def test_the_trace_sees_every_instruction_on_the_numpy_path(native_runs, capsys):
  from emu.amd.timing import TimingModel
  from emu.amd.trace import Tracer
  assert Tracer.reads_registers and not TimingModel.reads_registers
  run_program([v_add_nc_u32_e32(v[2], 1, v[1]), v_add_nc_u32_e32(v[3], 1, v[2])], vgprs={1: LANES[:32]}, trace=True)
  assert native_runs == [] and capsys.readouterr().out.count("v_add_nc_u32") == 2

def test_a_hot_region_compiles_in_the_background_and_then_runs_natively(monkeypatch):
  import secrets, time
  monkeypatch.setattr(regions, "REGION_HOT", 0)   # BACKGROUND stays on, as in use
  monkeypatch.setattr(regions, "REGION_HOT_PER_INSTR", 0)
  monkeypatch.setenv("EMU_CHAINS", "0")   # (each region call observed)
  k = secrets.randbits(30) | 1   # a literal no earlier run compiled: the object cannot come from the disk cache
  prog = [v_add_nc_u32_e32(v[2], k, v[1]), v_mul_f32_e32(v[3], 2.0, v[2])]
  runs, real = [], regions.Region.run
  monkeypatch.setattr(regions.Region, "run", lambda self, m, ws, *a: (done := real(self, m, ws, *a), runs.append(done is not None))[0])
  first = run_program(prog, vgprs={1: LANES[:32]})   # queues the compile, runs on the numpy path
  deadline = time.monotonic() + 60
  while not runs and time.monotonic() < deadline:
    time.sleep(0.02)
    st = run_program(prog, vgprs={1: LANES[:32]})
  assert runs == [True], "the background compile never delivered"
  for out in (first, st):
    assert (out.vgpr[0, :, 2] == (LANES[:32] + k) & 0xffffffff).all()
    assert (as_f32(out.vgpr[0, :, 3]) == np.float32(2.0) * (LANES[:32] + k).astype(np.uint32).view(np.float32)).all()

def test_a_lane_mask_written_over_exec_ends_the_region(monkeypatch, native_runs, both):
  from tinygrad.runtime.autogen.amd.rdna3.ins import M0
  # wave64: a compare into the pair at M0 also writes EXEC_LO, which the next instruction then runs under
  prog = [v_add_nc_u32_e32(v[2], 1, v[1]), v_cmp_gt_u32_e64(M0, v[1], 40), v_add_nc_u32_e32(v[3], 5, v[1])]
  st = both(prog, lanes=64, vgprs={1: LANES, 3: 7})
  assert native_runs == [1, 1]   # the first add, then the second after the compare ran on the numpy path
  on = LANES[32:] > 40   # EXEC_LO (the pair's second word) now holds lanes 32-63 of the compare; EXEC_HI is unchanged
  assert (st.vgpr[0, :32, 3] == np.where(on, LANES[:32] + 5, 7)).all() and (st.vgpr[0, 32:, 3] == LANES[32:] + 5).all()

def test_a_scalar_loop_runs_its_trips_in_one_native_call(monkeypatch, native_runs, both):
  from tinygrad.runtime.autogen.amd.rdna3.ins import s_mov_b32, s_add_i32, s_cmp_lg_u32, s_cbranch_scc1
  body = [v_fma_f32(v[1], v[1], v[0], 1.0), s_add_i32(s[2], s[2], -1), s_cmp_lg_u32(s[2], 0)]
  back = -(sum(len(i.to_bytes()) for i in body) + 4) // 4   # simm16 counts dwords from the next instruction
  prog = [s_mov_b32(s[2], 5), *body, s_cbranch_scc1(simm16=back & 0xffff)]
  st = both(prog, waves=3, vgprs={0: f32(2.0), 1: f32(LANES[:32])}, scc=1)
  # the first trip in the region from the s_mov (its branch goes to the body, not its own start); the other four in one call of
  # the body's region (body, counter, compare and branch), which loops back to its own start natively
  assert native_runs == [3, 3]
  assert (as_f32(st.vgpr[:, :, 1]) == (LANES[:32] + 1) * 32.0 - 1).all()   # v = 2v + 1, five times (exact)
  assert (st.sgpr[:, 2] == 0).all() and (st.scc == 0).all()

def test_scalar_carries_and_a_lane_mask_read_as_a_scalar(monkeypatch, native_runs, both):
  from tinygrad.runtime.autogen.amd.rdna3.ins import s_add_u32, s_addc_u32, s_and_b32, v_mov_b32_e32
  a, b = 0xfffffff0_00000010, 0x00000001_fffffff8
  prog = [s_add_u32(s[4], s[4], s[6]), s_addc_u32(s[5], s[5], s[7]), v_mov_b32_e32(v[2], s[4]), v_mov_b32_e32(v[3], s[5]),
          v_cmp_gt_u32_e64(s[10], v[1], 5), s_and_b32(s[11], s[10], s[12]), v_add_nc_u32_e32(v[4], s[11], v[1])]
  st = both(prog, vgprs={1: LANES[:32]}, sgprs={4: a, 6: b, 12: 0x0000fff0})
  total = (a + b) & ((1 << 64) - 1)
  assert (st.vgpr[0, :, 2] == total & 0xffffffff).all() and (st.vgpr[0, :, 3] == total >> 32).all()
  mask = sum(1 << i for i in range(32) if i > 5) & 0x0000fff0
  assert int(st.sgpr[0, 11]) == mask and (st.vgpr[0, :, 4] == (mask + LANES[:32]) & 0xffffffff).all()
  assert native_runs == [1]   # the s_and reads the compare's word, made where it was written

def test_heat_and_compiled_regions_carry_over_to_later_processes(monkeypatch, tmp_path, fresh_process):
  # a 4-instruction region, hot at 12 instructions: a process running it twice leaves 8 of heat, so the next one goes native on
  # its first run (and keeps what it compiled); the one after that is native from its first run without lowering it again; an
  # object compiled for another CPU is not used (lowered again instead). Without the step cache none of this happens.
  from emu.amd.step_cache import STEP_CACHE
  monkeypatch.setattr(regions, "REGION_HOT", 12)
  monkeypatch.setattr(regions, "REGION_HOT_PER_INSTR", 0)
  monkeypatch.setattr(regions, "BACKGROUND", False)
  monkeypatch.delenv("EMU_REGIONS", raising=False)
  monkeypatch.setenv("EMU_CHAINS", "0")   # (each region call observed)
  native_calls, lowered, run, lower = [], [], regions.Region.run, regions.Region._lower
  monkeypatch.setattr(regions.Region, "run", lambda self, m, ws, *a: native_calls.append(1) or run(self, m, ws, *a))
  monkeypatch.setattr(regions.Region, "_lower", lambda self: lowered.append(1) or lower(self))
  prog = [v_add_f32_e32(v[2], v[0], v[1]), v_mul_f32_e32(v[3], v[2], v[2]), v_add_nc_u32_e32(v[4], v[3], v[0]),
          v_max_f32_e32(v[5], v[4], v[1])]
  x = LANES[:32].astype(np.float32)
  def process(cache:str) -> tuple[list[int], int]:
    """Two runs of the program in a fresh 'process' (no regions, no steps in memory): which ran natively, and how many lowerings."""
    fresh_process(cache)
    done = []
    lowered.clear()
    for _ in range(2):
      native_calls.clear()
      st = run_program(prog, vgprs={0: x, 1: 1.5})
      s = x + np.float32(1.5)   # v2; v3 = v2 * v2; v4 = the integer sum of v3's and v0's bits; v5 = max(v4, 1.5) as floats
      np.testing.assert_array_equal(as_f32(st.vgpr[0, :, 5]), np.maximum(((s * s).view(np.uint32) + x.view(np.uint32)).view(np.float32), 1.5))
      done.append(len(native_calls))
    STEP_CACHE.write()
    return done, len(lowered)
  assert process("0") == ([0, 0], 0) and process("0") == ([0, 0], 0)
  assert process(str(tmp_path)) == ([0, 0], 0)   # 4 + 4 < 12; it leaves 8
  assert process(str(tmp_path)) == ([1, 1], 1)   # 8 + 4: hot on the first run, lowered and compiled once
  assert process(str(tmp_path)) == ([1, 1], 0)   # restored: native without lowering
  monkeypatch.setattr(native.NATIVE, "cpu", lambda: "another CPU")
  assert process(str(tmp_path)) == ([1, 1], 1)   # not restored on another CPU: lowered again (hot by its heat)

def test_a_region_whose_first_step_does_not_lower_is_not_lowered_again_in_later_processes(monkeypatch, native_runs, tmp_path, fresh_process):
  # v_sin_f32 (a transcendental numpy computes) does not lower: the candidate from it is cut to that step, the rest is a region of its own. A later
  # process learns both from the step cache and lowers nothing; the numbers stay the numpy path's
  from emu.amd.step_cache import STEP_CACHE
  from tinygrad.runtime.autogen.amd.rdna3.ins import v_sin_f32_e32
  lowered, lower = [], regions.Region._lower
  monkeypatch.setattr(regions.Region, "_lower", lambda self: lowered.append(self.count) or lower(self))
  prog = [v_sin_f32_e32(v[2], v[0]), v_add_f32_e32(v[3], v[0], v[1]), v_mul_f32_e32(v[4], v[3], v[3])]
  x = LANES[:32].astype(np.float32) / 8
  for want_lowered in ([3, 2], []):
    fresh_process(str(tmp_path))
    lowered.clear(), native_runs.clear()
    st = run_program(prog, vgprs={0: x, 1: 0.25})
    STEP_CACHE.write()
    assert lowered == want_lowered and native_runs == [1]   # the add and the mul natively, in both processes
    np.testing.assert_array_equal(as_f32(st.vgpr[0, :, 4]), (x + np.float32(0.25)) * (x + np.float32(0.25)))
    np.testing.assert_allclose(as_f32(st.vgpr[0, :, 2]), np.sin(2 * np.pi * x.astype(np.float64)), atol=1e-6)   # (x in revolutions)

def test_a_region_is_hot_once_the_numpy_path_has_cost_what_compiling_it_would(monkeypatch, fresh_process):
  # compiling costs a fixed part and a part per instruction (REGION_HOT + REGION_HOT_PER_INSTR * n instructions of numpy-path
  # running, at most REGION_HOT_MAX): with 6 + 3 per instruction, one instruction is hot at 9 (its 9th run is native), four at 18
  # (their 5th run), or at 15 under a cap of 15 (their 4th)
  monkeypatch.setattr(regions, "REGION_HOT", 6)
  monkeypatch.setattr(regions, "REGION_HOT_PER_INSTR", 3)
  monkeypatch.setattr(regions, "REGION_HOT_MAX", 400)
  monkeypatch.setattr(regions, "BACKGROUND", False)
  monkeypatch.delenv("EMU_REGIONS", raising=False)
  monkeypatch.setenv("EMU_CHAINS", "0")   # (each region call observed)
  fresh_process("0")
  calls, real = [], regions.Region.run
  monkeypatch.setattr(regions.Region, "run", lambda self, m, ws, *a: calls.append(self.count) or real(self, m, ws, *a))
  one = [v_mul_f32_e32(v[3], v[1], v[2])]
  four = [v_add_f32_e32(v[2], v[0], v[1]), v_mul_f32_e32(v[3], v[2], v[2]), v_add_nc_u32_e32(v[4], v[3], v[0]), v_max_f32_e32(v[5], v[4], v[1])]
  for prog, first_native, cap in ((one, 9, 400), (four, 5, 400), (four, 4, 15)):
    monkeypatch.setattr(regions, "REGION_HOT_MAX", cap)
    fresh_process("0")
    native = []
    for _ in range(10):
      calls.clear()
      run_program(prog, vgprs={0: LANES[:32], 1: 1.5, 2: 2.0})
      native.append(bool(calls))
    assert native == [k + 1 >= first_native for k in range(10)], (len(prog), native)

def test_emu_regions_eager_compiles_a_region_before_its_first_run():
  # the process-wide setting (read at import): the region of two adds is native at its first batch, compiled in this thread
  code = ("import numpy as np; from emu.amd import regions, run_program\n"
          "from tinygrad.runtime.autogen.amd.rdna3.ins import v, v_add_f32_e32\n"
          "runs, real = [], regions.Region.run\n"
          "regions.Region.run = lambda self, m, ws, *a: runs.append((self.count, self.tier)) or real(self, m, ws, *a)\n"
          "st = run_program([v_add_f32_e32(v[2], v[1], v[1]), v_add_f32_e32(v[3], v[2], v[1])], vgprs={1: np.float32(1.5).view(np.uint32)})\n"
          "print(runs, regions.BACKGROUND, st.vgpr[0, 0, 3].view(np.float32))")
  import os, subprocess, sys
  # eager: the FULL tier at once; check: QUICK first (FULL once promoted), so both tiers' code is checked
  for flag, want in (("eager", "[(2, 'full')] False 4.5"), ("check", "[(2, 'quick')] False 4.5"), ("1", "[] True 4.5")):
    env = {**os.environ, "EMU_REGIONS": flag, "EMU_STEP_CACHE": "0", "EMU_CHAINS": "0"}   # (each region call observed)
    assert subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout.strip() == want

def _tiered_runs(monkeypatch, promote:int):
  """runs(n): a two-instruction region run n times on two waves (checked against hand-worked values), the step cache written after;
  the tier of each native call. Hot once 6 instructions ran (per batch); FULL once its QUICK code ran `promote` + 2 wave-instructions."""
  from emu.amd.step_cache import STEP_CACHE
  monkeypatch.setattr(regions, "REGION_HOT", 6)
  monkeypatch.setattr(regions, "PROMOTE", promote)
  monkeypatch.setattr(regions, "PROMOTE_PER_INSTR", 1)
  tiers, real = [], regions.Region.run
  monkeypatch.setattr(regions.Region, "run", lambda self, m, ws, *a: (tiers.append(self.tier), real(self, m, ws, *a))[1])
  prog = [v_add_f32_e32(v[2], v[0], v[1]), v_mul_f32_e32(v[3], v[2], v[2])]
  x = LANES[:32].astype(np.float32) / 3
  want = (x + np.float32(1.5)) * (x + np.float32(1.5))
  def runs(n:int) -> list:
    tiers.clear()
    for _ in range(n): np.testing.assert_array_equal(as_f32(run_program(prog, waves=2, vgprs={0: f32(x), 1: 1.5}).vgpr[:, :, 3]), [want, want])
    STEP_CACHE.write()
    return list(tiers)
  return runs

def test_code_hot_across_processes_is_compiled_quick_and_in_full_once_it_runs_long(monkeypatch, native_runs, fresh_process, tmp_path):
  # heat mostly from earlier processes (a suite's short bursts): compiled QUICK; once it has run PROMOTE + PROMOTE_PER_INSTR * n
  # wave-instructions natively it is compiled FULL (here at once: BACKGROUND is off), the same numbers either way, and a later
  # process restores the FULL code. Heat mostly from this process (a long kernel): FULL at once
  runs = _tiered_runs(monkeypatch, 6)   # FULL after 8 wave-instructions: the 2nd native run of 2 waves
  fresh_process(str(tmp_path))
  assert runs(2) == [] and native_runs == []   # 4 of heat, not yet hot
  fresh_process(str(tmp_path))
  assert runs(3) == [native.QUICK, native.QUICK, native.FULL] and native_runs == [2, 2, 2]   # hot at 4 + 2: QUICK
  fresh_process(str(tmp_path))
  assert runs(1) == [native.FULL]   # restored as FULL
  fresh_process(str(tmp_path / "another"))
  assert runs(3) == [native.FULL]   # hot at its 3rd run (native from it on), all of the heat this process's: FULL at once
  assert native.NATIVE.key("ir", native.QUICK) != native.NATIVE.key("ir", native.FULL)   # the tiers' objects are kept apart

def test_quick_code_is_promoted_once_its_runs_over_several_processes_pay_for_full(monkeypatch, native_runs, fresh_process, tmp_path):
  # a suite's code: hot over processes, compiled QUICK, then run a little in each later process; its QUICK runs add up across them
  # (kept in the step cache) and FULL is compiled once they pay for it, not only when one process runs it long enough
  runs = _tiered_runs(monkeypatch, 10)   # FULL once its QUICK code ran 12 wave-instructions: 3 runs of 2 waves
  def process(n:int) -> list:
    fresh_process(str(tmp_path))
    return runs(n)
  assert process(2) == []   # 4 of heat
  assert process(2) == [native.QUICK, native.QUICK]   # hot at its first run here: QUICK, 8 wave-instructions run in it
  assert process(2) == [native.QUICK, native.FULL]   # 8 + 4 pay for FULL: promoted after this process's first run
  assert process(1) == [native.FULL]   # restored as FULL

def test_a_16_bit_source_reads_the_low_half_in_a_region(monkeypatch, native_runs, both):
  # v_alignbit_b32's shift amount S2 is a 16-bit operand (threefry's rotates in tinygrad's random kernels): it joins the region
  from tinygrad.runtime.autogen.amd.rdna3.ins import v_alignbit_b32
  sizes = _region_sizes(monkeypatch)
  x = (LANES[:32] * 0x9e3779b9 & 0xffffffff).astype(np.uint64)
  shift = 0xabc0000 | LANES[:32]   # the bits above the low half are not the operand's (and its low 5 bits rotate)
  prog = [v_add_nc_u32_e32(v[3], v[1], v[1]), v_alignbit_b32(v[4], v[3], v[1], v[5]), v_add_nc_u32_e32(v[6], 1, v[4])]
  st = both(prog, vgprs={1: x.astype(np.uint32), 5: shift.astype(np.uint32)})
  assert native_runs == [1] and sizes == [3]
  s0 = (2 * x) & np.uint64(0xffffffff)
  want = (((s0 << np.uint64(32)) | x) >> (shift & 0x1f).astype(np.uint64)) & np.uint64(0xffffffff)
  assert (st.vgpr[0, :, 4] == want).all() and (st.vgpr[0, :, 6] == (want + np.uint64(1)) & np.uint64(0xffffffff)).all()
  # v_mad_u32_u16: S0.u16 * S1.u16 + S2.u32, its generated code trusting the executor for 16-bit inputs
  from tinygrad.runtime.autogen.amd.rdna3.ins import v_mad_u32_u16
  sizes.clear()
  st = both([v_mad_u32_u16(v[4], v[1], v[2], v[3]), v_add_nc_u32_e32(v[5], 1, v[4])],
            vgprs={1: 0x10000 * 7 + LANES[:32], 2: 0xffff0005, 3: 1000})
  assert sizes == [2] and (st.vgpr[0, :, 4] == LANES[:32] * 5 + 1000).all()

PACKED_MODS = [(0b000, 0b111, 0b000, 0b000), (0b001, 0b111, 0b010, 0b100), (0b110, 0b010, 0b101, 0b011), (0b111, 0b000, 0b000, 0b111)]

def _vop3p(opsel:int, opsel_hi:int, neg:int, neg_hi:int) -> dict:
  """The DSL's VOP3P modifier fields for per-source bits (src2's op_sel_hi bit is a field of its own)."""
  return {"opsel": opsel, "opsel_hi": opsel_hi & 3, "opsel_hi2": opsel_hi >> 2, "neg": neg, "neg_hi": neg_hi}

@pytest.mark.parametrize("opsel, opsel_hi, neg, neg_hi", PACKED_MODS)
def test_cdna_packed_f32_halves_join_a_region_each_picked_and_negated_on_its_own(monkeypatch, native_runs, both, opsel, opsel_hi, neg, neg_hi):
  # v_pk_fma_f32 on a register pair per operand: op_sel picks each source's low result half, op_sel_hi its high, neg/neg_hi
  # flip each half's sign (exec_valu.SrcSpec.read); then a v_pk_mul_f32 in the same region
  from tinygrad.runtime.autogen.amd.cdna import ins as C
  sizes = _region_sizes(monkeypatch)
  x = (LANES + 1).astype(np.float32)
  regs = {0: f32(x), 1: f32(-x * 0.5), 2: f32(2.0), 3: f32(0.25), 6: f32(1.0), 7: f32(3.0)}
  prog = [C.v_pk_fma_f32(C.v[4:5], C.v[0:1], C.v[2:3], C.v[6:7], **_vop3p(opsel, opsel_hi, neg, neg_hi)),
          C.v_pk_mul_f32(C.v[8:9], C.v[4:5], C.v[2:3])]
  st = both(prog, arch="gfx942", lanes=64, vgprs=regs)
  assert native_runs == [1] and sizes == [2]
  pair = {0: (x, -x * np.float32(0.5)), 1: (np.float32(2.0), np.float32(0.25)), 2: (np.float32(1.0), np.float32(3.0))}
  def half(i:int, sel:int, negs:int): return (-1 if negs >> i & 1 else 1) * pair[i][sel >> i & 1]
  lo = half(0, opsel, neg) * half(1, opsel, neg) + half(2, opsel, neg)   # (exact in f32: one rounding or two agree)
  hi = half(0, opsel_hi, neg_hi) * half(1, opsel_hi, neg_hi) + half(2, opsel_hi, neg_hi)
  assert (as_f32(st.vgpr[0, :, 4]) == lo).all() and (as_f32(st.vgpr[0, :, 5]) == hi).all()
  assert (as_f32(st.vgpr[0, :, 8]) == lo * np.float32(2.0)).all() and (as_f32(st.vgpr[0, :, 9]) == hi * np.float32(0.25)).all()

@pytest.mark.parametrize("opsel, opsel_hi, neg, neg_hi", PACKED_MODS)
def test_rdna_packed_16_bit_halves_join_a_region_each_picked_on_its_own(monkeypatch, native_runs, both, opsel, opsel_hi, neg, neg_hi):
  # v_pk_mad_u16: op_sel / op_sel_hi pick each source's 16-bit half of a dword; neg bits do nothing to integer operands
  from tinygrad.runtime.autogen.amd.rdna3.ins import v_pk_mad_u16
  sizes = _region_sizes(monkeypatch)
  pair = {0: (LANES[:32] * 1000 + 7, LANES[:32] + 3), 1: (np.full(32, 300), np.full(32, 5)), 2: (np.full(32, 11), np.full(32, 60000))}
  def pack(lo, hi): return (np.asarray(lo) & 0xffff | (np.asarray(hi) & 0xffff) << 16).astype(np.uint32)
  prog = [v_pk_mad_u16(v[4], v[0], v[2], v[6], **_vop3p(opsel, opsel_hi, neg, neg_hi)), v_add_nc_u32_e32(v[8], 1, v[4])]
  st = both(prog, vgprs={0: pack(*pair[0]), 2: pack(*pair[1]), 6: pack(*pair[2])})
  assert native_runs == [1] and sizes == [2]
  def half(i:int, sel:int): return pair[i][sel >> i & 1].astype(np.int64)
  lo, hi = ((half(0, sel) * half(1, sel) + half(2, sel)) & 0xffff for sel in (opsel, opsel_hi))   # (mod 2**16)
  assert (st.vgpr[0, :, 4] == pack(lo, hi)).all() and (st.vgpr[0, :, 8] == pack(lo, hi) + 1).all()

def f16(x) -> np.ndarray: return np.asarray(x, dtype=np.float16).view(np.uint16).astype(np.uint32)

@pytest.mark.parametrize("opsel, opsel_hi, neg, neg_hi", PACKED_MODS)
def test_rdna_packed_f16_halves_join_a_region_each_picked_and_negated_on_its_own(monkeypatch, native_runs, both, opsel, opsel_hi, neg, neg_hi):
  # v_pk_fma_f16: each half a*b+c rounded once to half (the products and sums here are exact in double), each half picked by
  # op_sel/op_sel_hi and negated by neg/neg_hi; then v_pk_add_f16 of the result with itself in the same region
  from tinygrad.runtime.autogen.amd.rdna3.ins import v_pk_fma_f16, v_pk_add_f16
  sizes = _region_sizes(monkeypatch)
  x = (LANES[:32] * 0.37 - 5).astype(np.float16)
  pair = {0: (x, (x * np.float16(0.5)).astype(np.float16)), 1: (np.float16(1.5), np.float16(-3.0)), 2: (np.float16(0.125), np.float16(7.0))}
  def pack(lo, hi): return f16(np.broadcast_to(lo, (32,))) | f16(np.broadcast_to(hi, (32,))) << 16
  prog = [v_pk_fma_f16(v[4], v[0], v[2], v[6], **_vop3p(opsel, opsel_hi, neg, neg_hi)), v_pk_add_f16(v[8], v[4], v[4])]
  st = both(prog, vgprs={0: pack(*pair[0]), 2: pack(*pair[1]), 6: pack(*pair[2])})
  assert native_runs == [1] and sizes == [2]
  def half(i:int, sel:int, negs:int): return (-1.0 if negs >> i & 1 else 1.0) * np.float64(pair[i][sel >> i & 1])
  lo, hi = ((half(0, sel, n) * half(1, sel, n) + half(2, sel, n)).astype(np.float16) for sel, n in ((opsel, neg), (opsel_hi, neg_hi)))
  assert (st.vgpr[0, :, 4] == pack(lo, hi)).all() and (st.vgpr[0, :, 8] == pack(lo + lo, hi + hi)).all()

def test_f16_arithmetic_and_conversions_run_natively(monkeypatch, native_runs, both):
  # f32 -> f16 (nearest even), an f16 add (the high half kept), fma with a negated operand, and back to f32, in one region
  from tinygrad.runtime.autogen.amd.rdna3.ins import v_cvt_f16_f32_e32, v_add_f16_e32, v_fma_f16, v_cvt_f32_f16_e32
  sizes = _region_sizes(monkeypatch)
  x = (LANES[:32] / 3 - 4).astype(np.float32)
  prog = [v_cvt_f16_f32_e32(v[2], v[1]), v_add_f16_e32(v[3], v[2], v[2]), v_fma_f16(v[4], -v[2], v[3], 0.5), v_cvt_f32_f16_e32(v[5], v[4])]
  st = both(prog, vgprs={1: f32(x), 2: 0xabcd0000, 3: 0x12340000, 4: 0})
  assert native_runs == [1] and sizes == [4]
  h = x.astype(np.float16)
  twice = (h + h).astype(np.float16)
  fma = (-h.astype(np.float64) * twice.astype(np.float64) + 0.5).astype(np.float16)   # (exact in double: one rounding)
  assert (st.vgpr[0, :, 2] == 0xabcd0000 | f16(h)).all() and (st.vgpr[0, :, 3] == 0x12340000 | f16(twice)).all()
  assert (st.vgpr[0, :, 4] & 0xffff == f16(fma)).all() and (st.vgpr[0, :, 5] == f32(fma.astype(np.float32))).all()

def test_f16_fma_rounds_once(native_runs, both):
  # operands whose a*b+c rounded to float first and then to half ends one unit off (found by search): 1.644 not 1.645 ...
  from tinygrad.runtime.autogen.amd.rdna3.ins import v_fma_f16
  a, b, c = (np.array(x * 11, dtype=np.uint16)[:32] for x in ([0x3d26, 0x3f6f, 0x3f12], [0x3d1c, 0x3dee, 0x3d54], [0x8281, 0x831f, 0x017e]))
  st = both([v_fma_f16(v[4], v[1], v[2], v[3])], vgprs={1: a, 2: b, 3: c, 4: 0})
  assert native_runs == [1]
  exact = a.view(np.float16).astype(np.float64) * b.view(np.float16).astype(np.float64) + c.view(np.float16).astype(np.float64)
  assert (st.vgpr[0, :, 4] == exact.astype(np.float16).view(np.uint16)).all()   # (the sum is exact in double: one rounding)
