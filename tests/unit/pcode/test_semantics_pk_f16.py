"""rdna3 packed 16-bit VOP3P semantics: each half computed independently (IEEE f16, wrap-around u16/i16, shift amounts masked
to 4 bits per half), plus V_SAT_PK_U8_I16 saturation. Expected values from numpy float16 and Python ints."""
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.rdna3.enum import VOP1Op, VOP3POp
from test_ops import run, u32
from test_semantics_helpers import f16bits, sx

def pk(lo, hi): return (int(hi) & 0xffff) << 16 | (int(lo) & 0xffff)

@pytest.mark.parametrize("op,f", [(VOP3POp.V_PK_ADD_F16, np.add), (VOP3POp.V_PK_MUL_F16, np.multiply)], ids=lambda x: getattr(x, "name", ""))
def test_v_pk_add_mul_f16(op, f):
  rng = np.random.default_rng(7)
  a, b = rng.integers(0, 1 << 32, 4000, dtype=np.uint64), rng.integers(0, 1 << 32, 4000, dtype=np.uint64)
  ah, bh = a.astype(np.uint32).view(np.float16), b.astype(np.uint32).view(np.float16)
  with np.errstate(all="ignore"): want = f(ah, bh)
  got = run(op, S0=a, S1=b).D0.astype(np.uint32).view(np.float16)
  nan = np.isnan(want)
  assert np.array_equal(np.isnan(got), nan) and np.array_equal(got.view(np.uint16)[~nan], want.view(np.uint16)[~nan])

def test_v_pk_fma_f16_single_rounding_per_half():
  a = np.float16(1 + 2**-10)
  s0 = u32(pk(f16bits(a)[0], f16bits(2.0)[0]))
  s1 = u32(pk(f16bits(a)[0], f16bits(3.0)[0]))
  s2 = u32(pk(f16bits(-(1 + 2**-9))[0], f16bits(-6.0)[0]))
  got = run(VOP3POp.V_PK_FMA_F16, S0=s0, S1=s1, S2=s2).D0.astype(np.uint32).view(np.float16)
  assert got[0] == np.float16(2**-20) and got.view(np.uint16)[1] == 0  # exact 2^-20 (f16 denormal); 2*3-6 = +0

def test_v_pk_max_min_f16_signed_zero():
  got = run(VOP3POp.V_PK_MAX_F16, S0=u32(pk(0x8000, 0x0000)), S1=u32(pk(0x0000, 0x8000)), MODE_IEEE=False).D0
  assert int(got[0]) == pk(0x0000, 0x0000)
  got = run(VOP3POp.V_PK_MIN_F16, S0=u32(pk(0x8000, 0x3c00)), S1=u32(pk(0x0000, 0x7e00)), MODE_IEEE=False).D0
  assert int(got[0]) == pk(0x8000, 0x3c00)

@pytest.mark.parametrize("op,f", [
  (VOP3POp.V_PK_ADD_U16, lambda a, b: a + b), (VOP3POp.V_PK_SUB_U16, lambda a, b: a - b), (VOP3POp.V_PK_ADD_I16, lambda a, b: a + b),
  (VOP3POp.V_PK_MUL_LO_U16, lambda a, b: a * b), (VOP3POp.V_PK_LSHLREV_B16, lambda a, b: b << (a & 15)),
  (VOP3POp.V_PK_LSHRREV_B16, lambda a, b: b >> (a & 15)), (VOP3POp.V_PK_ASHRREV_I16, lambda a, b: sx(b, 16) >> (a & 15)),
  (VOP3POp.V_PK_MAX_I16, lambda a, b: max(sx(a, 16), sx(b, 16))), (VOP3POp.V_PK_MIN_U16, min),
], ids=lambda x: getattr(x, "name", ""))
def test_v_pk_int16_halves_wrap_independently(op, f):
  vals = [0, 1, 0x7fff, 0x8000, 0xffff, 16, 17]
  pairs = [(a, b) for a in vals for b in vals]
  s0 = u32(*[pk(a, b) for a, b in pairs])  # hi half uses the swapped pair so halves differ
  s1 = u32(*[pk(b, a) for a, b in pairs])
  got = [int(d) for d in run(op, S0=s0, S1=s1).D0]
  assert got == [pk(f(a, b), f(b, a)) for a, b in pairs]

def test_v_sat_pk_u8_i16_clamps_each_half():
  # halves as signed i16: <0 -> 0, >255 -> 255; result in bits 15:0, bits 31:16 zero
  cases = [(0x8000, 0x7fff, 0xff00), (0x00ff, 0x0100, 0xffff), (0xffff, 0x0000, 0x0000), (0x0080, 0x0001, 0x0180)]
  got = run(VOP1Op.V_SAT_PK_U8_I16_E32, S0=u32(*[hi << 16 | lo for lo, hi, _ in cases])).D0
  assert [int(g) for g in got] == [w for _, _, w in cases]
