"""rdna3 SALU semantics with Python ints: SCC rules (carry/borrow, signed overflow, result != 0), 64-bit carry chains,
S_CSELECT, shift-amount masking, S_BFE packing (offset S1[4:0], width S1[22:16]) and count ops."""
import pytest
from hypothesis import given, settings, strategies as st
from tinygrad.runtime.autogen.amd.rdna3.enum import SOP1Op, SOP2Op, SOPCOp, SOPKOp
from test_ops import run
from test_semantics_helpers import sx

M32, M64 = 0xffffffff, 2**64 - 1
HYP = settings(max_examples=100, deadline=None, derandomize=True)
W32 = st.integers(0, M32)

@pytest.mark.parametrize("a,b", [(0xffffffff, 1), (0x7fffffff, 1), (0x80000000, 0x80000000), (0, 0), (5, 0xfffffffb), (0x80000000, 0xffffffff)])
def test_s_add_sub_u32_i32_scc(a, b):
  st_ = run(SOP2Op.S_ADD_U32, S0=a, S1=b)
  assert (st_.D0, st_.SCC) == ((a + b) & M32, int(a + b > M32))
  st_ = run(SOP2Op.S_SUB_U32, S0=a, S1=b)
  assert (st_.D0, st_.SCC) == ((a - b) & M32, int(b > a))
  r = sx(a, 32) + sx(b, 32)
  st_ = run(SOP2Op.S_ADD_I32, S0=a, S1=b)
  assert (st_.D0, st_.SCC) == (r & M32, int(not -2**31 <= r < 2**31))
  r = sx(a, 32) - sx(b, 32)
  st_ = run(SOP2Op.S_SUB_I32, S0=a, S1=b)
  assert (st_.D0, st_.SCC) == (r & M32, int(not -2**31 <= r < 2**31))

@HYP
@given(x=st.integers(0, M64), y=st.integers(0, M64))
def test_s_add_u32_addc_u32_64bit_chain(x, y):
  lo = run(SOP2Op.S_ADD_U32, S0=x & M32, S1=y & M32)
  hi = run(SOP2Op.S_ADDC_U32, S0=x >> 32, S1=y >> 32, SCC=lo.SCC)
  assert (hi.D0 << 32 | lo.D0, hi.SCC) == ((x + y) & M64, int(x + y > M64))
  lo = run(SOP2Op.S_SUB_U32, S0=x & M32, S1=y & M32)
  hi = run(SOP2Op.S_SUBB_U32, S0=x >> 32, S1=y >> 32, SCC=lo.SCC)
  assert (hi.D0 << 32 | lo.D0, hi.SCC) == ((x - y) & M64, int(y > x))

def test_s_addc_with_carry_in_wraps_exactly():
  st_ = run(SOP2Op.S_ADDC_U32, S0=0xffffffff, S1=0, SCC=1)
  assert (st_.D0, st_.SCC) == (0, 1)
  st_ = run(SOP2Op.S_SUBB_U32, S0=0, S1=0xffffffff, SCC=1)
  assert (st_.D0, st_.SCC) == (0, 1)

@pytest.mark.parametrize("op,f,w", [
  (SOP2Op.S_AND_B32, lambda a, b: a & b, 32), (SOP2Op.S_OR_B32, lambda a, b: a | b, 32), (SOP2Op.S_XOR_B32, lambda a, b: a ^ b, 32),
  (SOP2Op.S_AND_NOT1_B32, lambda a, b: a & ~b & M32, 32), (SOP2Op.S_NOR_B32, lambda a, b: ~(a | b) & M32, 32),
  (SOP2Op.S_AND_B64, lambda a, b: a & b, 64), (SOP2Op.S_OR_NOT1_B64, lambda a, b: (a | ~b) & M64, 64),
  (SOP2Op.S_XNOR_B64, lambda a, b: ~(a ^ b) & M64, 64),
], ids=lambda x: getattr(x, "name", ""))
def test_s_logic_scc_is_result_nonzero(op, f, w):
  m = (1 << w) - 1
  for a, b in [(0, 0), (0xf0, 0x0f), (m, m), (1 << (w - 1), 1 << (w - 1)), (m, 0)]:
    st_ = run(op, S0=a, S1=b)
    assert (st_.D0, st_.SCC) == (f(a, b), int(f(a, b) != 0)), (a, b)

def test_s_shifts_mask_amount_and_set_scc():
  st_ = run(SOP2Op.S_LSHL_B64, S0=1, S1=64)
  assert (st_.D0, st_.SCC) == (1, 1)  # S1[5:0] = 0
  assert run(SOP2Op.S_LSHL_B64, S0=1, S1=63 + 64).D0 == 1 << 63
  st_ = run(SOP2Op.S_LSHL_B64, S0=1 << 63, S1=1)
  assert (st_.D0, st_.SCC) == (0, 0)
  assert run(SOP2Op.S_LSHL_B32, S0=3, S1=33).D0 == 6 and run(SOP2Op.S_LSHL_B32, S0=0x80000000, S1=1).SCC == 0
  assert run(SOP2Op.S_LSHR_B32, S0=0x80000000, S1=63).D0 == 1
  assert run(SOP2Op.S_LSHR_B64, S0=1 << 63, S1=127).D0 == 1
  assert run(SOP2Op.S_ASHR_I64, S0=1 << 63, S1=64 + 63).D0 == M64
  assert run(SOP2Op.S_ASHR_I32, S0=0x80000000, S1=32).D0 == 0x80000000

def test_s_cselect():
  assert run(SOP2Op.S_CSELECT_B64, S0=1 << 40, S1=7, SCC=1).D0 == 1 << 40 and run(SOP2Op.S_CSELECT_B64, S0=1 << 40, S1=7, SCC=0).D0 == 7

@pytest.mark.parametrize("s0,off,width", [(0xdeadbeef, 4, 8), (0x80000000, 31, 1), (0x0000f000, 12, 4), (0x12345678, 0, 0), (0x7f, 0, 7),
                                          (0xff, 4, 31)])
def test_s_bfe_u32_i32(s0, off, width):
  s1 = off | width << 16
  field = (s0 >> off) & ((1 << width) - 1)
  st_ = run(SOP2Op.S_BFE_U32, S0=s0, S1=s1)
  assert (st_.D0, st_.SCC) == (field, int(field != 0))
  want = (sx(field, width) & M32) if width else 0
  st_ = run(SOP2Op.S_BFE_I32, S0=s0, S1=s1)
  assert (st_.D0, st_.SCC) == (want, int(want != 0))

def test_s_bfe_i64_and_bfm():
  assert run(SOP2Op.S_BFE_I64, S0=0x8000_0000_0000_0000, S1=63 | 1 << 16).D0 == M64
  assert run(SOP2Op.S_BFE_U64, S0=0xabcd_0000_0000, S1=32 | 16 << 16).D0 == 0xabcd
  assert run(SOP2Op.S_BFM_B32, S0=4, S1=8).D0 == 0xf00 and run(SOP2Op.S_BFM_B32, S0=36, S1=40).D0 == 0xf00  # S0[4:0], S1[4:0]
  assert run(SOP2Op.S_BFM_B64, S0=64, S1=0).D0 == 0 and run(SOP2Op.S_BFM_B64, S0=63, S1=1).D0 == 1 << 1 | 0x7fff_ffff_ffff_ffff << 1

@HYP
@given(a=W32, b=W32)
def test_s_mul_random(a, b):
  assert run(SOP2Op.S_MUL_I32, S0=a, S1=b).D0 == (a * b) & M32
  assert run(SOP2Op.S_MUL_HI_U32, S0=a, S1=b).D0 == (a * b) >> 32
  assert run(SOP2Op.S_MUL_HI_I32, S0=a, S1=b).D0 == ((sx(a, 32) * sx(b, 32)) >> 32) & M32

def test_s_min_max_scc_and_abs():
  st_ = run(SOP2Op.S_MIN_I32, S0=0xffffffff, S1=1, SCC=0)
  assert (st_.D0, st_.SCC) == (0xffffffff, 1)  # SCC = S0 selected (S0 < S1)
  st_ = run(SOP2Op.S_MAX_U32, S0=0xffffffff, S1=1, SCC=0)
  assert (st_.D0, st_.SCC) == (0xffffffff, 1)
  st_ = run(SOP1Op.S_ABS_I32, S0=0x80000000)
  assert (st_.D0, st_.SCC) == (0x80000000, 1)
  assert run(SOP2Op.S_ABSDIFF_I32, S0=0x80000000, S1=1).D0 == 0x7fffffff

def test_s_count_ops():
  st_ = run(SOP1Op.S_BCNT1_I32_B64, S0=M64)
  assert (st_.D0, st_.SCC) == (64, 1)
  st_ = run(SOP1Op.S_BCNT0_I32_B32, S0=M32)
  assert (st_.D0, st_.SCC) == (0, 0)
  assert run(SOP1Op.S_CLZ_I32_U32, S0=0).D0 == M32 and run(SOP1Op.S_CLZ_I32_U64, S0=1).D0 == 63
  assert run(SOP1Op.S_CLS_I32, S0=0).D0 == M32 and run(SOP1Op.S_CLS_I32, S0=M32).D0 == M32 and run(SOP1Op.S_CLS_I32, S0=0x0fffffff).D0 == 4
  assert run(SOP1Op.S_CLS_I32_I64, S0=0xffff_0000_0000_0000).D0 == 16 and run(SOP1Op.S_CTZ_I32_B64, S0=1 << 63).D0 == 63
  assert run(SOP1Op.S_CTZ_I32_B64, S0=0).D0 == M32

def test_s_not_and_sext():
  st_ = run(SOP1Op.S_NOT_B32, S0=M32)
  assert (st_.D0, st_.SCC) == (0, 0)
  assert run(SOP1Op.S_SEXT_I32_I8, S0=0x1280).D0 == 0xffffff80 and run(SOP1Op.S_SEXT_I32_I16, S0=0x7fff).D0 == 0x7fff

def test_s_cmp_signedness():
  assert run(SOPCOp.S_CMP_LT_I32, S0=0xffffffff, S1=0).SCC == 1 and run(SOPCOp.S_CMP_LT_U32, S0=0xffffffff, S1=0).SCC == 0
  assert run(SOPCOp.S_CMP_EQ_U64, S0=1 << 32, S1=0).SCC == 0 and run(SOPCOp.S_CMP_LG_U64, S0=1 << 32, S1=0).SCC == 1
  assert run(SOPCOp.S_BITCMP0_B64, S0=1 << 40, S1=40).SCC == 0

def test_sopk():
  st_ = run(SOPKOp.S_ADDK_I32, D0=0x7fffffff, SIMM16=1)
  assert (st_.D0, st_.SCC) == (0x80000000, 1)  # signed overflow sets SCC
  assert run(SOPKOp.S_MOVK_I32, SIMM16=0x8000).D0 == 0xffff8000  # sign-extended
  assert run(SOPKOp.S_CMPK_LT_U32, S0=5, SIMM16=0xffff).SCC == 1  # zero-extended for unsigned compares
