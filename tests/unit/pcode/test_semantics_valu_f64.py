"""rdna3 f64 VALU semantics: IEEE double add/mul/fma (exact single rounding), denormals, signed zero, NaN, min/max."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from tinygrad.runtime.autogen.amd.rdna3.enum import VOP3Op
from test_ops import run
from test_semantics_helpers import F64_QNAN, F64_SNAN, asf64, bits, f64bits, fma_ref

F64 = st.floats(allow_nan=False, allow_infinity=False, allow_subnormal=True, min_value=-1e150, max_value=1e150)
HYP = settings(max_examples=150, deadline=None, derandomize=True)

def same(got, want):
  nan = np.isnan(want)
  return np.array_equal(np.isnan(got), nan) and np.array_equal(got.view(np.uint64)[~nan], want.view(np.uint64)[~nan])

def test_v_add_f64_edges():
  a = np.array([1.0, 1e308, -0.0, 0.0, 5e-324, np.inf, 0.1, 1.0], np.float64)
  b = np.array([2.0**-53, 1e308, -0.0, -0.0, 5e-324, -np.inf, 0.2, 2.0**-53 + 2.0**-105], np.float64)
  with np.errstate(all="ignore"): want = a + b
  assert same(asf64(run(VOP3Op.V_ADD_F64, S0=f64bits(*a), S1=f64bits(*b)).D0), want)

def test_v_mul_f64_edges():
  a = np.array([1e200, 2.0**-1074, 2.0**-1022, -0.0, np.inf, 1.0 + 2.0**-52], np.float64)
  b = np.array([-1e200, 0.5, 0.5, 3.0, 0.0, 1.0 + 2.0**-52], np.float64)
  with np.errstate(all="ignore"): want = a * b
  got = asf64(run(VOP3Op.V_MUL_F64, S0=f64bits(*a), S1=f64bits(*b)).D0)
  assert same(got, want) and got[2] == 2.0**-1023  # denormal result kept

@HYP
@given(a=st.lists(F64, min_size=8, max_size=8), b=st.lists(F64, min_size=8, max_size=8))
def test_v_add_mul_f64_match_numpy(a, b):
  a, b = np.array(a), np.array(b)
  assert same(asf64(run(VOP3Op.V_ADD_F64, S0=f64bits(*a), S1=f64bits(*b)).D0), a + b)
  assert same(asf64(run(VOP3Op.V_MUL_F64, S0=f64bits(*a), S1=f64bits(*b)).D0), a * b)

@HYP
@given(a=F64, b=F64, c=F64)
def test_v_fma_f64_exact_single_rounding(a, b, c):
  want = np.float64(fma_ref(np.float64(a), np.float64(b), np.float64(c), np.float64))
  got = asf64(run(VOP3Op.V_FMA_F64, S0=f64bits(a), S1=f64bits(b), S2=f64bits(c)).D0)[0]
  assert got.view(np.uint64) == want.view(np.uint64), (a, b, c, want, got)

def test_v_fma_f64_edges():
  e = 1.0 + 2.0**-52  # e*e - 1 = 2^-51 + 2^-104 exactly: only a fused op keeps the 2^-104
  got = asf64(run(VOP3Op.V_FMA_F64, S0=f64bits(e, np.inf, -0.0), S1=f64bits(e, 0.0, 1.0), S2=f64bits(-1.0, 1.0, -0.0)).D0)
  assert got[0] == 2.0**-51 + 2.0**-104 and np.isnan(got[1]) and got.view(np.uint64)[2] == 0x8000000000000000

def test_v_nan_f64():
  got = asf64(run(VOP3Op.V_ADD_F64, S0=bits(F64_SNAN, F64_QNAN), S1=f64bits(1.0, 1.0)).D0)
  assert np.isnan(got).all()

@pytest.mark.parametrize("op,s0,s1,want", [
  (VOP3Op.V_MAX_F64, 0.0, -0.0, 0.0), (VOP3Op.V_MAX_F64, -0.0, 0.0, 0.0), (VOP3Op.V_MIN_F64, 0.0, -0.0, -0.0),
  (VOP3Op.V_MIN_F64, np.nan, 2.0, 2.0), (VOP3Op.V_MAX_F64, -np.inf, 5e-324, 5e-324),
])
def test_v_min_max_f64(op, s0, s1, want):
  got = asf64(run(op, S0=f64bits(s0), S1=f64bits(s1), MODE_IEEE=False).D0)[0]
  assert got.view(np.uint64) == np.float64(want).view(np.uint64)

def test_v_max_f64_ieee_snan_is_quieted():
  got = int(run(VOP3Op.V_MAX_F64, S0=bits(F64_SNAN), S1=f64bits(1.0), MODE_IEEE=True).D0[0])
  assert got == F64_SNAN | (1 << 51)
