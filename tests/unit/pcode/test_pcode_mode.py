"""The wave's MODE in compiled ops (abi.py: MODE_ROUND32/16, MODE_DENORM32/16): denormal flushing and directed rounding, checked
against exact rationals (fractions) and numpy's IEEE arithmetic, independent of emu.pcode.numerics."""
from fractions import Fraction as Q
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.rdna3.enum import VOP1Op, VOP2Op, VOP3Op
from emu.pcode import compile_op
from emu.pcode.abi import MODE_DEFAULTS, OpState

F32_DENORM, F32_TINY = np.float32(2.0 ** -140), np.float32(2.0 ** -100)   # a denormal; a normal whose square is no f32 (underflows to 0)
DENORM_MODES = range(4)   # FP_DENORM: bit 0 keeps denormal inputs, bit 1 keeps denormal results

def call(op, mode:dict, **regs) -> np.ndarray:
  """Run a vector op on uint64 operand bits with the given MODE_* fields (others at their defaults); returns D0."""
  st = OpState(n=len(next(iter(regs.values()))), laneId=np.zeros(1, np.uint64), MODE_IEEE=True, ROUND_MODE=0, **{**MODE_DEFAULTS, **mode},
               **{k: np.asarray(v, np.uint64) for k, v in regs.items()})
  compile_op("rdna3", op).fn(st)
  return st.D0

def bits(x, dt) -> np.ndarray: return np.asarray(x, dt).view({np.float16: np.uint16, np.float32: np.uint32, np.float64: np.uint64}[dt])
def value(d, dt) -> np.ndarray:
  ut = {np.float16: np.uint16, np.float32: np.uint32, np.float64: np.uint64}[dt]
  return np.asarray(d).astype(ut).view(dt)

def rounded(x:Q, dt, rm:int):
  """The dt value of exact x rounded in mode rm (0 nearest even, 1 up, 2 down, 3 toward zero), by searching the neighbours."""
  c = dt(float(x))
  while Q(float(c)) > x: c = np.nextafter(c, dt(-np.inf))
  while Q(float(np.nextafter(c, dt(np.inf)))) <= x: c = np.nextafter(c, dt(np.inf))
  lo = c
  if Q(float(lo)) == x: return lo
  hi = np.nextafter(lo, dt(np.inf))
  if rm == 1: return hi
  if rm == 2: return lo
  if rm == 3: return lo if x > 0 else hi
  dlo, dhi = x - Q(float(lo)), Q(float(hi)) - x
  if dlo != dhi: return lo if dlo < dhi else hi
  return lo if int(bits(lo, dt)) % 2 == 0 else hi

def expect_flush(x, dt, flush:bool):
  """x (a dt value), or a zero of its sign when flush and x is denormal."""
  x = dt(x)
  return dt(np.copysign(0, x)) if flush and x != 0 and abs(x) < np.finfo(dt).smallest_normal else x

@pytest.mark.parametrize("dm", DENORM_MODES)
def test_v_add_f32_denormal_inputs_and_results(dm):
  a = np.array([F32_DENORM, -F32_DENORM, np.float32(1.5), F32_DENORM * 3], np.float32)
  b = np.array([0.0, 0.0, 2.0, -F32_DENORM], np.float32)
  out = value(call(VOP2Op.V_ADD_F32_E32, {"MODE_DENORM32": dm}, S0=bits(a, np.float32), S1=bits(b, np.float32)), np.float32)
  fa, fb = (np.array([expect_flush(x, np.float32, not dm & 1) for x in v]) for v in (a, b))
  want = np.array([expect_flush(x, np.float32, not dm & 2) for x in fa + fb])
  assert bits(out, np.float32).tolist() == bits(want, np.float32).tolist()

@pytest.mark.parametrize("dm", DENORM_MODES)
def test_v_mul_f32_denormal_result_from_normal_inputs(dm):
  a, b = np.array([F32_TINY, -F32_TINY], np.float32), np.array([np.float32(2.0 ** -30)] * 2, np.float32)
  out = value(call(VOP2Op.V_MUL_F32_E32, {"MODE_DENORM32": dm}, S0=bits(a, np.float32), S1=bits(b, np.float32)), np.float32)
  exact = [np.float32(Q(float(x)) * Q(float(y))) for x, y in zip(a, b)]   # 2**-130: exactly representable as a denormal
  assert bits(out, np.float32).tolist() == bits([expect_flush(x, np.float32, not dm & 2) for x in exact], np.float32).tolist()

@pytest.mark.parametrize("dm", DENORM_MODES)
def test_v_fma_f32_denormal_input_normal_result(dm):
  a = np.array([F32_DENORM, -F32_DENORM], np.float32)
  out = value(call(VOP3Op.V_FMA_F32, {"MODE_DENORM32": dm}, S0=bits(a, np.float32), S1=bits([2.0 ** 20] * 2, np.float32),
                   S2=bits([0.0] * 2, np.float32)), np.float32)
  fa = np.array([expect_flush(x, np.float32, not dm & 1) for x in a])
  want = fa * np.float32(2.0 ** 20) + np.float32(0.0)   # exact; a flushed -0 input gives -0 * 2**20 + 0 = +0
  assert want.tolist() == ([0.0, 0.0] if not dm & 1 else [2.0 ** -120, -(2.0 ** -120)])
  assert bits(out, np.float32).tolist() == bits(want, np.float32).tolist()

@pytest.mark.parametrize("dm", DENORM_MODES)
def test_f16_and_f64_follow_denorm_16_64_not_32(dm):
  d16, d64 = np.float16(2.0 ** -20), np.float64(2.0 ** -1060)
  for op, dt, d in ((VOP2Op.V_ADD_F16_E32, np.float16, d16), (VOP3Op.V_ADD_F64, np.float64, d64)):
    regs = {"S0": bits([d, -d], dt), "S1": bits([0.0, 0.0], dt), "D0": np.zeros(2, np.uint64)}
    out = value(call(op, {"MODE_DENORM16": dm}, **regs), dt)
    want = [expect_flush(expect_flush(x, dt, not dm & 1) + dt(0.0), dt, not dm & 2) for x in (d, -d)]
    assert bits(out, dt).tolist() == bits(want, dt).tolist(), op
    assert bits(value(call(op, {"MODE_DENORM32": 0}, **regs), dt), dt).tolist() == bits([d, -d], dt).tolist()   # f32's mode: no effect
  f32 = value(call(VOP2Op.V_ADD_F32_E32, {"MODE_DENORM16": dm}, S0=bits([F32_DENORM], np.float32), S1=bits([0.0], np.float32)), np.float32)
  assert f32[0] == F32_DENORM

@pytest.mark.parametrize("rm", range(4))
def test_v_add_f32_rounding_modes(rm):
  rng = np.random.default_rng(rm)
  a = (rng.standard_normal(64) * 2.0 ** rng.integers(-20, 20, 64)).astype(np.float32)
  b = (rng.standard_normal(64) * 2.0 ** rng.integers(-20, 20, 64)).astype(np.float32)
  out = value(call(VOP2Op.V_ADD_F32_E32, {"MODE_ROUND32": rm}, S0=bits(a, np.float32), S1=bits(b, np.float32)), np.float32)
  want = [rounded(Q(float(x)) + Q(float(y)), np.float32, rm) for x, y in zip(a, b)]
  assert bits(out, np.float32).tolist() == bits(want, np.float32).tolist()
  if rm: assert (out != a + b).any()   # some sums are inexact: the mode made a difference

@pytest.mark.parametrize("rm", range(4))
def test_v_cvt_f16_f32_rounding_modes(rm):
  x = np.random.default_rng(10 + rm).uniform(-1000, 1000, 64).astype(np.float32)
  d = call(VOP1Op.V_CVT_F16_F32_E32, {"MODE_ROUND16": rm}, S0=bits(x, np.float32), D0=np.zeros(64, np.uint64))
  assert (d.astype(np.uint16).view(np.float16) == np.array([rounded(Q(float(v)), np.float16, rm) for v in x])).all()
  d32 = call(VOP1Op.V_CVT_F16_F32_E32, {"MODE_ROUND32": rm}, S0=bits(x, np.float32), D0=np.zeros(64, np.uint64))
  assert (d32.astype(np.uint16).view(np.float16) == x.astype(np.float16)).all()   # a conversion to f16 rounds in the f16/f64 mode

def test_v_mul_f64_rounding_toward_zero():
  a, b = np.array([1 / 3, -1 / 3, 0.1]), np.array([3.0, 3.0, 0.7])
  out = value(call(VOP3Op.V_MUL_F64, {"MODE_ROUND16": 3}, S0=bits(a, np.float64), S1=bits(b, np.float64)), np.float64)
  assert out.tolist() == [rounded(Q(x) * Q(y), np.float64, 3) for x, y in zip(a, b)]

def test_pcode_round_mode_wins_over_the_wave_mode():
  x = np.array([1.0 + 2.0 ** -12, -(1.0 + 2.0 ** -12)], np.float32)   # between two f16 values: RTZ and round-up differ
  d = call(VOP3Op.V_CVT_PK_RTZ_F16_F32, {"MODE_ROUND16": 1, "MODE_ROUND32": 1}, S0=bits(x, np.float32), S1=bits(x, np.float32))
  assert (d & np.uint64(0xffff)).astype(np.uint16).view(np.float16).tolist() == [1.0, -1.0]

def test_default_mode_is_ieee_and_absent_fields_mean_default():
  a = np.array([F32_DENORM, 1.0, 3.0], np.float32)
  b = np.array([F32_DENORM, 2.0 ** -30, 7.0], np.float32)
  st = OpState(n=3, S0=bits(a, np.float32), S1=bits(b, np.float32))
  op = compile_op("rdna3", VOP2Op.V_ADD_F32_E32)
  assert {"MODE_ROUND32", "MODE_DENORM32"} <= op.reads
  op.fn(st)
  assert bits(value(st.D0, np.float32), np.float32).tolist() == bits(a + b, np.float32).tolist()
  assert value(call(VOP2Op.V_ADD_F32_E32, {}, S0=bits(a, np.float32), S1=bits(b, np.float32)), np.float32).tolist() == (a + b).tolist()
