"""rdna3 conversion semantics: f32<->f16 (RNE), f64<->f32, float->int truncation with saturation (NaN -> 0), int->float
rounding, V_CVT_F32_UBYTEn, V_CVT_PK_RTZ_F16_F32 (round toward zero) and packing conversions."""
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.rdna3.enum import VOP1Op, VOP2Op, VOP3Op
from test_ops import asf32, f32bits, run, u32
from test_semantics_helpers import F32_QNAN, F32_SNAN, F64_SNAN, asf16, asf64, bits, f16bits, f64bits, lanes

def test_v_cvt_f16_f32_rne_overflow_denormal():
  a = np.array([1.0 + 2**-11, 1.0 + 3 * 2**-11, 65519.0, 65520.0, 2.0**-25, 2.0**-25 * 3, 2.0**-24 * 1.5, -0.0, 1e-30, -np.inf, 0.1], np.float32)
  with np.errstate(all="ignore"): want = a.astype(np.float16)  # numpy's f32->f16 cast rounds to nearest even and keeps f16 denormals
  got = asf16(run(VOP1Op.V_CVT_F16_F32_E32, S0=f32bits(*a), D0=lanes(*[0] * len(a))).D0)
  assert np.array_equal(got.view(np.uint16), want.view(np.uint16))
  assert got[0] == 1.0 and got[1] == np.float16(1 + 2**-9) and got[3] == np.inf and got[4] == 0 and got[5] == np.float16(2.0**-23)

def test_v_cvt_f16_f32_nan_keeps_high_half():
  st_ = run(VOP1Op.V_CVT_F16_F32_E32, S0=u32(F32_QNAN, F32_SNAN, 0xffc00000), D0=lanes(0x12340000, 0, 0))
  assert int(st_.D0[0]) >> 16 == 0x1234 and np.isnan(asf16(st_.D0)).all() and int(st_.D0[2]) & 0x8000

def test_v_cvt_f32_f16_exact_incl_denormals():
  h = np.array([2.0**-24, -2.0**-14, 65504.0, -np.inf, -0.0, 0.333], np.float16)
  got = asf32(run(VOP1Op.V_CVT_F32_F16_E32, S0=f16bits(*h) | np.uint64(0xffff0000)).D0)
  assert np.array_equal(got.view(np.uint32), h.astype(np.float32).view(np.uint32))

@pytest.mark.parametrize("op,vals,want", [
  (VOP1Op.V_CVT_I32_F32_E32, [1.9, -1.9, 2.5, 2147483520.0, 2147483648.0, -2147483648.0, -3e9, np.inf, -np.inf, np.nan, -0.0, 1e-40],
   [1, -1, 2, 2147483520, 0x7fffffff, -0x80000000, -0x80000000, 0x7fffffff, -0x80000000, 0, 0, 0]),
  (VOP1Op.V_CVT_U32_F32_E32, [1.9, -1.9, -0.5, 4294967040.0, 4294967296.0, np.inf, -np.inf, np.nan, 3e9],
   [1, 0, 0, 4294967040, 0xffffffff, 0xffffffff, 0, 0, 3000000000]),
  (VOP1Op.V_CVT_FLOOR_I32_F32_E32, [1.5, -1.5, -0.0, 2.0], [1, -2, 0, 2]),
  (VOP1Op.V_CVT_NEAREST_I32_F32_E32, [1.4, -1.6, 0.5, 1.5, -2.5], [1, -2, 1, 2, -2]),  # floor(x + 0.5)
], ids=lambda x: getattr(x, "name", ""))
def test_v_cvt_f32_to_int_truncate_saturate(op, vals, want):
  assert [int(d) for d in run(op, S0=f32bits(*vals)).D0] == [w & 0xffffffff for w in want]

@pytest.mark.parametrize("op,vals,want", [
  (VOP1Op.V_CVT_I32_F64_E32, [1.9999, -2.5, 2147483647.9, 2147483648.0, -2147483648.9, -1e300, np.nan, np.inf],
   [1, -2, 0x7fffffff, 0x7fffffff, -0x80000000, -0x80000000, 0, 0x7fffffff]),
  (VOP1Op.V_CVT_U32_F64_E32, [4294967295.5, 4294967296.0, -1.0, np.nan, 7.99], [0xffffffff, 0xffffffff, 0, 0, 7]),
], ids=lambda x: getattr(x, "name", ""))
def test_v_cvt_f64_to_int_truncate_saturate(op, vals, want):
  assert [int(d) for d in run(op, S0=f64bits(*vals)).D0] == [w & 0xffffffff for w in want]

def test_v_cvt_f32_from_int_rounds_to_nearest_even():
  i = [16777217, 16777219, -16777217, 0x7fffffff, -0x80000000, 0]
  assert list(asf32(run(VOP1Op.V_CVT_F32_I32_E32, S0=u32(*i)).D0)) == list(np.array(i, np.int64).astype(np.float32))
  u = [0xffffffff, 0x80000080, 0x80000081, 16777217]
  assert list(asf32(run(VOP1Op.V_CVT_F32_U32_E32, S0=u32(*u)).D0)) == [2.0**32, 2.0**31, 2.0**31 + 256, 16777216.0]

def test_v_cvt_f64_from_int_exact():
  assert list(asf64(run(VOP1Op.V_CVT_F64_I32_E32, S0=u32(-0x80000000, -1, 0x7fffffff)).D0)) == [-2.0**31, -1.0, 2.0**31 - 1]
  assert list(asf64(run(VOP1Op.V_CVT_F64_U32_E32, S0=u32(0xffffffff)).D0)) == [2.0**32 - 1]

def test_v_cvt_f32_f64_rne_overflow_denormal():
  d = np.array([1.0 + 2**-24, 1.0 + 3 * 2**-24, 1e39, -1e39, 2.0**-149 * 0.5, 2.0**-149 * 0.75, 2.0**-130, 3.4028235677973366e38, -0.0], np.float64)
  with np.errstate(all="ignore"): want = d.astype(np.float32)
  got = asf32(run(VOP1Op.V_CVT_F32_F64_E32, S0=f64bits(*d)).D0)
  assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
  assert got[0] == 1.0 and got[2] == np.inf and got[4] == 0 and got[5] == np.float32(2.0**-149)

def test_v_cvt_f64_f32_exact_and_nan():
  f = np.array([2.0**-149, -np.inf, 0.1, -0.0], np.float32)
  assert np.array_equal(asf64(run(VOP1Op.V_CVT_F64_F32_E32, S0=f32bits(*f)).D0), f.astype(np.float64))
  got = asf64(run(VOP1Op.V_CVT_F64_F32_E32, S0=u32(F32_SNAN)).D0)
  assert np.isnan(got).all() and int(got.view(np.uint64)[0]) & (1 << 51)  # quiet NaN out
  assert np.isnan(asf32(run(VOP1Op.V_CVT_F32_F64_E32, S0=bits(F64_SNAN)).D0)).all()

@pytest.mark.parametrize("n,op", list(enumerate([VOP1Op.V_CVT_F32_UBYTE0_E32, VOP1Op.V_CVT_F32_UBYTE1_E32, VOP1Op.V_CVT_F32_UBYTE2_E32,
                                            VOP1Op.V_CVT_F32_UBYTE3_E32])))
def test_v_cvt_f32_ubyte(n, op):
  v = [0xff80_7f01, 0x0102_0304, 0]
  assert list(asf32(run(op, S0=u32(*v)).D0)) == [float((x >> (8 * n)) & 0xff) for x in v]

def test_v_cvt_pk_rtz_f16_f32_rounds_toward_zero():
  # 1 + 2^-11 + 2^-12 is above the halfway point: RNE would give 1 + 2^-10, RTZ truncates to 1.0; 65535 -> 65504 (no inf)
  lo = np.array([1 + 2**-11 + 2**-12, -(1 + 2**-11 + 2**-12), 65535.0, 1e9, 2.0**-25, -np.inf], np.float32)
  hi = np.array([0.1, -3.0, np.nan, -1e9, -2.0**-25, 2.0], np.float32)
  st_ = run(VOP2Op.V_CVT_PK_RTZ_F16_F32_E32, S0=f32bits(*lo), S1=f32bits(*hi), ROUND_MODE=0)
  got = st_.D0.astype(np.uint32).view(np.float16).reshape(-1, 2)
  assert list(got[:, 0]) == [1.0, -1.0, 65504.0, 65504.0, 0.0, -np.inf]
  assert got[0, 1] == np.float16(0.0999755859375) and got[1, 1] == -3.0 and np.isnan(got[2, 1]) and got[3, 1] == -65504.0
  assert got.view(np.uint16)[4, 1] == 0x8000 and got[5, 1] == 2.0
  assert st_.ROUND_MODE == 0  # the mode is restored

def test_v_cvt_pk_u16_u32_saturates():
  # the ISA (and LLVM's llvm.amdgcn.cvt.pk.u16/i16, which select these instructions) saturate to the 16-bit range
  assert int(run(VOP3Op.V_CVT_PK_U16_U32, S0=u32(0x10000), S1=u32(5)).D0[0]) == 0x0005_ffff

def test_v_cvt_pk_i16_i32_saturates():
  assert int(run(VOP3Op.V_CVT_PK_I16_I32, S0=u32(-0x8001), S1=u32(0x8000)).D0[0]) == 0x7fff_8000

def test_v_cvt_pk_rtz_f16_f32_exact_values_pack_lo_hi():
  st_ = run(VOP2Op.V_CVT_PK_RTZ_F16_F32_E32, S0=f32bits(1.0, -np.inf, 2.0**-24), S1=f32bits(-3.0, np.nan, 65504.0), ROUND_MODE=0)
  got = st_.D0.astype(np.uint32).view(np.float16).reshape(-1, 2)
  assert list(got[:, 0]) == [1.0, -np.inf, 2.0**-24] and got[0, 1] == -3.0 and np.isnan(got[1, 1]) and got[2, 1] == 65504.0

def test_v_cvt_pk_u16_u32_i16_i32_in_range_pack():
  assert int(run(VOP3Op.V_CVT_PK_U16_U32, S0=u32(0xffff), S1=u32(1)).D0[0]) == 0x0001_ffff
  assert int(run(VOP3Op.V_CVT_PK_I16_I32, S0=u32(-0x8000), S1=u32(0x7fff)).D0[0]) == 0x7fff_8000

def test_v_cvt_i32_i16_and_u32_u16_extend():
  assert list(run(VOP1Op.V_CVT_I32_I16_E32, S0=u32(0x1234_8000, 0x7fff)).D0) == [0xffff8000, 0x7fff]
  assert list(run(VOP1Op.V_CVT_U32_U16_E32, S0=u32(0x1234_8000)).D0) == [0x8000]

def test_v_cvt_i16_f16_u16_f16_saturate():
  h = f16bits(-1.5, 40000.0, -40000.0, np.nan, np.inf)
  assert [int(d) & 0xffff for d in run(VOP1Op.V_CVT_I16_F16_E32, S0=h, D0=lanes(0, 0, 0, 0, 0)).D0] == [0xffff, 0x7fff, 0x8000, 0, 0x7fff]
  h = f16bits(-1.5, 65504.0, 2.9, np.nan)
  assert [int(d) & 0xffff for d in run(VOP1Op.V_CVT_U16_F16_E32, S0=h, D0=lanes(0, 0, 0, 0)).D0] == [0, 65504, 2, 0]
