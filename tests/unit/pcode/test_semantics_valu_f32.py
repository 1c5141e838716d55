"""rdna3 f32 VALU semantics: IEEE edge values, NaN/sNaN handling, signed zeros, min/max/med3 and randomized exactness checks.
Expected values come from numpy float32 arithmetic, exact rationals or the ISA text worked by hand."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from tinygrad.runtime.autogen.amd.rdna3.enum import VOP2Op, VOP3Op
from test_ops import asf32, f32bits, run
from test_semantics_helpers import F32_QNAN, F32_SNAN, fma_ref, u32

F32 = st.floats(width=32, allow_nan=False, allow_infinity=True, allow_subnormal=True)
HYP = settings(max_examples=150, deadline=None, derandomize=True)

def np_op(name, a, b):
  with np.errstate(all="ignore"): return {"add": a + b, "sub": a - b, "mul": a * b}[name]

@pytest.mark.parametrize("name,op", [("add", VOP2Op.V_ADD_F32_E32), ("sub", VOP2Op.V_SUB_F32_E32), ("mul", VOP2Op.V_MUL_F32_E32)])
def test_v_add_sub_mul_f32_edges(name, op):
  a = np.array([1.0, np.inf, np.inf, -0.0, 0.0, 1e-45, -1e-45, 3.4e38, 1e-38, 0.1, -0.0], np.float32)
  b = np.array([2.0**-24, -np.inf, 0.0, -0.0, -0.0, 1e-45, 1e-45, 3.4e38, 0.5, 0.2, 0.0], np.float32)
  want = np_op(name, a, b)
  got = asf32(run(op, S0=f32bits(*a), S1=f32bits(*b)).D0)
  nan = np.isnan(want)
  assert np.array_equal(np.isnan(got), nan) and np.array_equal(got.view(np.uint32)[~nan], want.view(np.uint32)[~nan])

@pytest.mark.parametrize("name,op", [("add", VOP2Op.V_ADD_F32_E32), ("sub", VOP2Op.V_SUB_F32_E32), ("mul", VOP2Op.V_MUL_F32_E32)])
@HYP
@given(a=st.lists(F32, min_size=8, max_size=8), b=st.lists(F32, min_size=8, max_size=8))
def test_v_add_sub_mul_f32_match_numpy(name, op, a, b):
  a, b = np.array(a, np.float32), np.array(b, np.float32)
  want = np_op(name, a, b)
  got = asf32(run(op, S0=f32bits(*a), S1=f32bits(*b)).D0)
  nan = np.isnan(want)
  assert np.array_equal(np.isnan(got), nan) and np.array_equal(got.view(np.uint32)[~nan], want.view(np.uint32)[~nan])

def test_v_nan_inputs_give_nan():
  for op in (VOP2Op.V_ADD_F32_E32, VOP2Op.V_MUL_F32_E32, VOP2Op.V_SUB_F32_E32):
    got = asf32(run(op, S0=u32(F32_SNAN, F32_QNAN, 0x7f800000), S1=f32bits(1.0, 1.0, np.nan)).D0)
    assert np.isnan(got).all()

def test_v_mul_f32_overflow_underflow_denormal_kept():
  got = asf32(run(VOP2Op.V_MUL_F32_E32, S0=f32bits(3e38, -3e38, 2.0**-126, 2.0**-149, 2.0**-149), S1=f32bits(2.0, 2.0, 0.5, 0.5, -0.75)).D0)
  assert got[0] == np.inf and got[1] == -np.inf and got[2] == np.float32(2.0**-127)  # denormal result kept (no FTZ)
  assert got.view(np.uint32)[3] == 0 and got.view(np.uint32)[4] == 0x80000001  # 2^-150 ties to even 0; -0.75 ulp rounds to -1 ulp

@HYP
@given(a=F32, b=F32, c=F32)
def test_v_fma_f32_exact_single_rounding(a, b, c):
  a, b, c = np.float32(a), np.float32(b), np.float32(c)
  if not (np.isfinite(a) and np.isfinite(b) and np.isfinite(c)): return
  if not np.isfinite(float(a) * float(b) + float(c)) or abs(float(a) * float(b) + float(c)) > 3.4e38: return  # keep clear of overflow
  want = fma_ref(a, b, c, np.float32)
  got = asf32(run(VOP3Op.V_FMA_F32, S0=f32bits(a), S1=f32bits(b), S2=f32bits(c)).D0)[0]
  assert got.view(np.uint32) == np.float32(want).view(np.uint32), (a, b, c, want, got)

def test_v_fma_f32_edges():
  got = asf32(run(VOP3Op.V_FMA_F32, S0=f32bits(np.inf, 0.0, -0.0, 2.0**-75, 1e38), S1=f32bits(0.0, 5.0, 1.0, 2.0**-75, 10.0),
                  S2=f32bits(1.0, -0.0, -0.0, 0.0, -np.inf)).D0)
  assert np.isnan(got[0])  # inf*0 is invalid even with a finite addend
  assert got.view(np.uint32)[1] == 0 and got.view(np.uint32)[2] == 0x80000000  # +0 + -0 = +0; -0 + -0 = -0
  assert got.view(np.uint32)[3] == 0  # 2^-150 ties to even -> +0
  assert got[4] == -np.inf

# V_MAX_F32 / V_MIN_F32: +0 > -0; with IEEE mode off a NaN operand yields the other operand; with IEEE on a sNaN yields
# the quieted sNaN and a qNaN yields the other operand.
@pytest.mark.parametrize("op,s0,s1,ieee,want", [
  (VOP2Op.V_MAX_F32_E32, 0x00000000, 0x80000000, False, 0x00000000),
  (VOP2Op.V_MAX_F32_E32, 0x80000000, 0x00000000, False, 0x00000000),
  (VOP2Op.V_MIN_F32_E32, 0x00000000, 0x80000000, True, 0x80000000),
  (VOP2Op.V_MIN_F32_E32, 0x80000000, 0x00000000, True, 0x80000000),
  (VOP2Op.V_MAX_F32_E32, F32_QNAN, 0x3f800000, False, 0x3f800000),
  (VOP2Op.V_MAX_F32_E32, 0x3f800000, F32_QNAN, True, 0x3f800000),
  (VOP2Op.V_MIN_F32_E32, F32_SNAN, 0xbf800000, False, 0xbf800000),
  (VOP2Op.V_MAX_F32_E32, 0xff800000, 0x7f7fffff, True, 0x7f7fffff),
  (VOP2Op.V_MIN_F32_E32, 0x00000001, 0x80000001, False, 0x80000001),  # denormals compare as values
])
def test_v_min_max_f32(op, s0, s1, ieee, want):
  assert int(run(op, S0=u32(s0), S1=u32(s1), MODE_IEEE=ieee).D0[0]) == want

def test_v_max_f32_ieee_snan_is_quieted():
  assert int(run(VOP2Op.V_MAX_F32_E32, S0=u32(F32_SNAN), S1=u32(0x3f800000), MODE_IEEE=True).D0[0]) == 0x7fc00001

def test_v_min_f32_ieee_snan_in_s1_is_quieted():
  assert int(run(VOP2Op.V_MIN_F32_E32, S0=u32(0x3f800000), S1=u32(0xff800002), MODE_IEEE=True).D0[0]) == 0xffc00002

@pytest.mark.parametrize("a,b,c,want", [
  (1.0, 2.0, 3.0, 2.0), (3.0, 1.0, 2.0, 2.0), (2.0, 3.0, 1.0, 2.0), (-np.inf, np.inf, 0.5, 0.5), (5.0, 5.0, -1.0, 5.0),
  (-0.0, 0.0, 1.0, 0.0),
])
def test_v_med3_f32(a, b, c, want):
  got = asf32(run(VOP3Op.V_MED3_F32, S0=f32bits(a), S1=f32bits(b), S2=f32bits(c), MODE_IEEE=False).D0)[0]
  assert got == want and np.signbit(got) == np.signbit(np.float32(want))

def test_v_min3_max3_f32():
  a, b, c = f32bits(1.0, -np.inf, -0.0, 7.0), f32bits(-2.0, 3.0, 0.0, np.nan), f32bits(0.5, 2.0, 0.0, 1.0)
  mn = asf32(run(VOP3Op.V_MIN3_F32, S0=a, S1=b, S2=c, MODE_IEEE=False).D0)
  mx = asf32(run(VOP3Op.V_MAX3_F32, S0=a, S1=b, S2=c, MODE_IEEE=False).D0)
  assert list(mn[:2]) == [-2.0, -np.inf] and list(mx[:2]) == [1.0, 3.0]
  assert np.signbit(mn[2]) and not np.signbit(mx[2])
  assert mn[3] == 1.0 and mx[3] == 7.0  # NaN operand ignored with IEEE mode off
