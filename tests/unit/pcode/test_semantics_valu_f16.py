"""rdna3 f16 VALU semantics: IEEE half arithmetic (denormals kept, RNE, overflow to inf), exact fma, sign rules of
min/max, and the 16-bit partial write of D0 (bits 31:16 of the old destination are kept)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from tinygrad.runtime.autogen.amd.rdna3.enum import VOP2Op, VOP3Op
from test_ops import run
from test_semantics_helpers import F16_QNAN, asf16, f16bits, fma_ref, lanes

F16 = st.floats(width=16, allow_nan=False, allow_infinity=False, allow_subnormal=True)
HYP = settings(max_examples=150, deadline=None, derandomize=True)

def np_op(name, a, b):
  with np.errstate(all="ignore"): return {"add": a + b, "sub": a - b, "mul": a * b}[name]

OPS = [("add", VOP2Op.V_ADD_F16_E32), ("sub", VOP2Op.V_SUB_F16_E32), ("mul", VOP2Op.V_MUL_F16_E32)]

@pytest.mark.parametrize("name,op", OPS)
def test_v_add_sub_mul_f16_edges(name, op):
  a = np.array([65504.0, 65504.0, 2.0**-24, -0.0, 1.0, np.inf, 6.1e-5, 0.1, -2.0**-24], np.float16)
  b = np.array([16.0, 15.0, 2.0**-24, -0.0, 2.0**-11, -np.inf, -6.0e-5, 0.2, 0.5], np.float16)
  want = np_op(name, a, b)
  got = asf16(run(op, S0=f16bits(*a), S1=f16bits(*b)).D0)
  nan = np.isnan(want)
  assert np.array_equal(np.isnan(got), nan) and np.array_equal(got.view(np.uint16)[~nan], want.view(np.uint16)[~nan])

@pytest.mark.parametrize("name,op", OPS)
def test_v_add_sub_mul_f16_random_bits_match_numpy(name, op):
  # 20000 random raw bit pairs (every class: NaN, inf, denormal, zero) in one vectorised call
  rng = np.random.default_rng(1234)
  a, b = rng.integers(0, 1 << 16, 20000, dtype=np.uint64), rng.integers(0, 1 << 16, 20000, dtype=np.uint64)
  want = np_op(name, asf16(a), asf16(b))
  got = asf16(run(op, S0=a, S1=b).D0)
  nan = np.isnan(want)
  assert np.array_equal(np.isnan(got), nan) and np.array_equal(got.view(np.uint16)[~nan], want.view(np.uint16)[~nan])

def test_v_add_f16_overflow_rounds_to_inf():
  # 65504 + 16 = 65520 is the halfway point between 65504 (odd mantissa) and 2^16: ties-to-even gives inf
  got = asf16(run(VOP2Op.V_ADD_F16_E32, S0=f16bits(65504.0, -65504.0, 65504.0), S1=f16bits(16.0, -16.0, 15.0)).D0)
  assert list(got) == [np.inf, -np.inf, 65504.0]

def test_v_add_f16_keeps_high_half_of_destination():
  st_ = run(VOP2Op.V_ADD_F16_E32, S0=f16bits(1.0), S1=f16bits(2.0), D0=lanes(0xabcd0000))
  assert int(st_.D0[0]) == 0xabcd4200  # f16(3.0) = 0x4200 in the low half

def test_v_add_f16_ignores_high_input_bits():
  st_ = run(VOP2Op.V_ADD_F16_E32, S0=lanes(0x12343c00), S1=lanes(0xffff3c00))
  assert int(st_.D0[0]) & 0xffff == 0x4000

def test_v_add_f16_nan():
  got = asf16(run(VOP2Op.V_ADD_F16_E32, S0=lanes(0x7c01, F16_QNAN, 0x7c00), S1=f16bits(1.0, 1.0, -np.inf)).D0)
  assert np.isnan(got).all()

@HYP
@given(a=F16, b=F16, c=F16)
def test_v_fma_f16_exact_single_rounding(a, b, c):
  a, b, c = np.float16(a), np.float16(b), np.float16(c)
  exact = float(a) * float(b) + float(c)
  if abs(exact) >= 65504.0: return  # keep clear of the overflow boundary
  want = np.float16(fma_ref(a, b, c, np.float16))
  got = asf16(run(VOP3Op.V_FMA_F16, S0=f16bits(a), S1=f16bits(b), S2=f16bits(c)).D0)[0]
  assert got.view(np.uint16) == want.view(np.uint16), (a, b, c, want, got)

def test_v_fma_f16_double_rounding_case():
  # (1 + 2^-10)^2 - (1 + 2^-9) = 2^-20 exactly (an f16 denormal); rounding the product to f16 first would give 0
  a = np.float16(1 + 2**-10)
  got = asf16(run(VOP3Op.V_FMA_F16, S0=f16bits(a), S1=f16bits(a), S2=f16bits(-(1 + 2**-9))).D0)[0]
  assert got == np.float16(2**-20) and got != 0

@pytest.mark.parametrize("op,s0,s1,want", [
  (VOP2Op.V_MAX_F16_E32, 0x0000, 0x8000, 0x0000), (VOP2Op.V_MAX_F16_E32, 0x8000, 0x0000, 0x0000),
  (VOP2Op.V_MIN_F16_E32, 0x0000, 0x8000, 0x8000), (VOP2Op.V_MIN_F16_E32, 0x3c00, F16_QNAN, 0x3c00),
  (VOP2Op.V_MAX_F16_E32, F16_QNAN, 0xfc00, 0xfc00), (VOP2Op.V_MIN_F16_E32, 0x0001, 0x8001, 0x8001),
])
def test_v_min_max_f16(op, s0, s1, want):
  assert int(run(op, S0=lanes(s0), S1=lanes(s1), MODE_IEEE=False).D0[0]) & 0xffff == want

def test_v_med3_min3_max3_f16():
  a, b, c = f16bits(1.0, 3.0, -np.inf), f16bits(2.0, 1.0, 0.5), f16bits(3.0, 2.0, 65504.0)
  assert list(asf16(run(VOP3Op.V_MED3_F16, S0=a, S1=b, S2=c, MODE_IEEE=False).D0)) == [2.0, 2.0, 0.5]
  assert list(asf16(run(VOP3Op.V_MIN3_F16, S0=a, S1=b, S2=c, MODE_IEEE=False).D0)) == [1.0, 1.0, -np.inf]
  assert list(asf16(run(VOP3Op.V_MAX3_F16, S0=a, S1=b, S2=c, MODE_IEEE=False).D0)) == [3.0, 3.0, 65504.0]
