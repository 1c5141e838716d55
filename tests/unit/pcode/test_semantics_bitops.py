"""rdna3 vector bit ops, expected values from Python integers: BFE/BFI/BFM, ALIGNBIT/ALIGNBYTE, CLZ/CTZ/CLS (0 and -1 give -1),
BCNT (adds S1), PERM byte selects, LSHL_OR/AND_OR/ADD3 three-operand forms."""
import pytest
from hypothesis import given, settings, strategies as st
from tinygrad.runtime.autogen.amd.rdna3.enum import VOP1Op, VOP3Op
from emu.pcode import OpState, compile_op
from test_ops import run, u32
from test_semantics_helpers import sx

M32 = 0xffffffff
HYP = settings(max_examples=60, deadline=None, derandomize=True)
U32S = st.lists(st.integers(0, M32), min_size=8, max_size=8)

def bfe_u(s0, s1, s2): return (s0 >> (s1 & 31)) & ((1 << (s2 & 31)) - 1)
def bfe_i(s0, s1, s2):
  # the ISA shifts S0.i32 arithmetically, so a field reaching past bit 31 pulls in copies of the sign bit
  w = s2 & 31
  return (sx((sx(s0, 32) >> (s1 & 31)) & ((1 << w) - 1), w) & M32) if w else 0

@HYP
@given(a=U32S, b=U32S, c=U32S)
def test_v_bfe_u32_i32_random(a, b, c):
  assert [int(d) for d in run(VOP3Op.V_BFE_U32, S0=u32(*a), S1=u32(*b), S2=u32(*c)).D0] == [bfe_u(*t) for t in zip(a, b, c)]
  assert [int(d) for d in run(VOP3Op.V_BFE_I32, S0=u32(*a), S1=u32(*b), S2=u32(*c)).D0] == [bfe_i(*t) for t in zip(a, b, c)]

def test_v_bfe_edges():
  # offset/width are masked to 5 bits: width 32 -> 0 -> empty field
  s0, s1, s2 = [0x80000000, 0xdeadbeef, 0xdeadbeef, 0x0000ff00], [31, 36, 0, 8], [1, 8, 32, 8]
  assert list(run(VOP3Op.V_BFE_I32, S0=u32(*s0), S1=u32(*s1), S2=u32(*s2)).D0) == [M32, 0xffffffee, 0, 0xffffffff]
  assert list(run(VOP3Op.V_BFE_U32, S0=u32(*s0), S1=u32(*s1), S2=u32(*s2)).D0) == [1, 0xee, 0, 0xff]

def test_v_bfi_bfm():
  assert list(run(VOP3Op.V_BFI_B32, S0=u32(0xffff0000, 0), S1=u32(0x12345678, 1), S2=u32(0x9abcdef0, 2)).D0) == [0x1234def0, 2]
  assert list(run(VOP3Op.V_BFM_B32, S0=u32(8, 32, 31, 0), S1=u32(4, 0, 1, 5)).D0) == [0xff0, 0, 0xfffffffe, 0]

@pytest.mark.parametrize("s0,s1,s2", [(0x12345678, 0x9abcdef0, 0), (0x12345678, 0x9abcdef0, 4), (0x12345678, 0x9abcdef0, 31),
                                      (0x12345678, 0x9abcdef0, 32), (0x12345678, 0x9abcdef0, 33), (M32, 0, 1)])
def test_v_alignbit_alignbyte(s0, s1, s2):
  assert int(run(VOP3Op.V_ALIGNBIT_B32, S0=u32(s0), S1=u32(s1), S2=u32(s2)).D0[0]) == ((s0 << 32 | s1) >> (s2 & 31)) & M32
  assert int(run(VOP3Op.V_ALIGNBYTE_B32, S0=u32(s0), S1=u32(s1), S2=u32(s2)).D0[0]) == ((s0 << 32 | s1) >> (8 * (s2 & 3))) & M32

def clz(x): return 31 - x.bit_length() + 1 if x else M32
def ctz(x): return (x & -x).bit_length() - 1 if x else M32
def cls(x):
  if x in (0, M32): return M32
  return 32 - (x ^ (M32 if x >> 31 else 0)).bit_length()

@pytest.mark.parametrize("x", [0, M32, 1, 0x80000000, 0x40000000, 0xbfffffff, 0x00010000, 0x7fffffff, 0xfffffffe, 0x00000f00])
def test_v_clz_ctz_cls(x):
  assert int(run(VOP1Op.V_CLZ_I32_U32_E32, S0=u32(x)).D0[0]) == clz(x)
  assert int(run(VOP1Op.V_CTZ_I32_B32_E32, S0=u32(x)).D0[0]) == ctz(x)
  assert int(run(VOP1Op.V_CLS_I32_E32, S0=u32(x)).D0[0]) == cls(x)

def test_v_bcnt_u32_b32_adds_s1():
  assert list(run(VOP3Op.V_BCNT_U32_B32, S0=u32(M32, 0, 0x80000001), S1=u32(5, 0, M32)).D0) == [37, 0, 1]

def test_v_mbcnt_lo_hi():
  # count of mask bits below this lane (lane 5: bits 4:0 of the low mask), plus S1
  lo, hi = compile_op("rdna3", VOP3Op.V_MBCNT_LO_U32_B32), compile_op("rdna3", VOP3Op.V_MBCNT_HI_U32_B32)
  st_ = OpState(n=2, laneId=u32(5, 2), S0=u32(M32, 0b1011), S1=u32(10, 0), WAVE32=True, WAVE64=False)
  lo.fn(st_)
  assert list(st_.D0) == [15, 2]
  st_ = OpState(n=2, laneId=u32(34, 3), S0=u32(0b111, M32), S1=u32(1, 4), WAVE32=False, WAVE64=True)
  hi.fn(st_)
  assert list(st_.D0) == [3, 4]  # lane 34 counts bits 1:0 of the high mask; lanes < 32 add nothing

def test_v_perm_b32_all_selectors():
  s0, s1 = 0x8899aabb, 0x11223344  # combined bytes 7..0: 88 99 aa bb 11 22 33 44
  comb = (s0 << 32 | s1).to_bytes(8, "little")
  def sel(b):
    if b < 8: return comb[b]
    if b < 12: return 0xff if comb[2 * (b - 8) + 1] & 0x80 else 0
    return 0 if b == 12 else 0xff
  for base in range(0, 16, 4):
    s2 = base | (base + 1) << 8 | (base + 2) << 16 | (base + 3) << 24
    want = sum(sel(base + i) << (8 * i) for i in range(4))
    assert int(run(VOP3Op.V_PERM_B32, S0=u32(s0), S1=u32(s1), S2=u32(s2)).D0[0]) == want, base

@HYP
@given(a=U32S, b=U32S, c=U32S)
def test_v_three_operand_int_random(a, b, c):
  assert [int(d) for d in run(VOP3Op.V_ADD3_U32, S0=u32(*a), S1=u32(*b), S2=u32(*c)).D0] == [(x + y + z) & M32 for x, y, z in zip(a, b, c)]
  assert [int(d) for d in run(VOP3Op.V_LSHL_OR_B32, S0=u32(*a), S1=u32(*b), S2=u32(*c)).D0] == \
    [((x << (y & 31)) & M32) | z for x, y, z in zip(a, b, c)]
  assert [int(d) for d in run(VOP3Op.V_LSHL_ADD_U32, S0=u32(*a), S1=u32(*b), S2=u32(*c)).D0] == \
    [(((x << (y & 31)) & M32) + z) & M32 for x, y, z in zip(a, b, c)]
  assert [int(d) for d in run(VOP3Op.V_AND_OR_B32, S0=u32(*a), S1=u32(*b), S2=u32(*c)).D0] == [(x & y) | z for x, y, z in zip(a, b, c)]
  assert [int(d) for d in run(VOP3Op.V_XAD_U32, S0=u32(*a), S1=u32(*b), S2=u32(*c)).D0] == [((x ^ y) + z) & M32 for x, y, z in zip(a, b, c)]

@pytest.mark.parametrize("arch", ["rdna3", "rdna4", "cdna"])
def test_bit_counts_match_python_popcount_on_random_operands_every_isa(arch):
  # the bit-count loops are rewritten to one countbits (emu.pcode.rules); the expected counts come from int.bit_count
  import importlib, numpy as np
  enum = importlib.import_module(f"tinygrad.runtime.autogen.amd.{arch}.enum")
  rng = np.random.default_rng(7)
  s0, s1 = (rng.integers(0, 1 << 32, 64, dtype=np.uint64) for _ in range(2))
  lanes = np.arange(64, dtype=np.uint64)
  st_ = OpState(n=64, S0=s0.copy(), S1=s1.copy(), laneId=lanes, WAVE32=False, WAVE64=True)
  compile_op(arch, enum.VOP3Op.V_BCNT_U32_B32).fn(st_)
  assert [int(d) for d in st_.D0] == [(int(a).bit_count() + int(b)) & M32 for a, b in zip(s0, s1)]
  below = [(1 << int(ln)) - 1 for ln in lanes]
  for name, part in (("V_MBCNT_LO_U32_B32", lambda m: m & M32), ("V_MBCNT_HI_U32_B32", lambda m: m >> 32)):
    st_ = OpState(n=64, S0=s0.copy(), S1=s1.copy(), laneId=lanes, WAVE32=False, WAVE64=True)
    compile_op(arch, getattr(enum.VOP3Op, name)).fn(st_)
    assert [int(d) for d in st_.D0] == [((int(a) & part(m)).bit_count() + int(b)) & M32 for a, b, m in zip(s0, s1, below)], name
  for x in [0, 1, M32, 0x8000000000000001, (1 << 64) - 1] + [int(v) << 32 | int(w) for v, w in zip(s0[:8], s1[:8])]:
    for bits, one, zero in ((32, "S_BCNT1_I32_B32", "S_BCNT0_I32_B32"), (64, "S_BCNT1_I32_B64", "S_BCNT0_I32_B64")):
      ones = (x & ((1 << bits) - 1)).bit_count()
      for name, want in ((one, ones), (zero, bits - ones)):
        st_ = OpState(S0=x & ((1 << bits) - 1))
        compile_op(arch, getattr(enum.SOP1Op, name)).fn(st_)
        assert (st_.D0, st_.SCC) == (want, int(want != 0)), (name, hex(x))

@HYP
@given(xs=st.lists(st.integers(0, (1 << 64) - 1), min_size=1, max_size=16), w=st.sampled_from([1, 7, 8, 16, 31, 32, 33, 63, 64]))
def test_reverse_bits_on_arrays_matches_reversing_the_binary_text(xs, w):
  import numpy as np
  from emu.pcode.runtime import reverse_bits
  a = np.repeat(np.array(xs, dtype=np.uint64), 2)[::2]   # a strided view as well as contiguous data
  want = [int(f"{x & ((1 << w) - 1):0{w}b}"[::-1], 2) for x in xs]
  assert [int(v) for v in reverse_bits(a, w)] == want and [int(v) for v in reverse_bits(a.copy(), w)] == want
  assert [int(v) for v in run(VOP1Op.V_BFREV_B32_E32, S0=u32(*[x & M32 for x in xs])).D0] == [int(f"{x & M32:032b}"[::-1], 2) for x in xs]

FIND_FIRST = {"rdna3": ("V_CTZ_I32_B32_E32", "V_CLZ_I32_U32_E32", "S_CTZ_I32_B32", "S_CTZ_I32_B64", "S_CLZ_I32_U32", "S_CLZ_I32_U64",
                        "V_CLS_I32_E32", "S_CLS_I32", "S_CLS_I32_I64"),
              "cdna": ("V_FFBL_B32_E32", "V_FFBH_U32_E32", "S_FF1_I32_B32", "S_FF1_I32_B64", "S_FLBIT_I32_B32", "S_FLBIT_I32_B64",
                       "V_FFBH_I32_E32", "S_FLBIT_I32", "S_FLBIT_I32_I64")}
FIND_FIRST["rdna4"] = FIND_FIRST["rdna3"]

@pytest.mark.parametrize("arch", ["rdna3", "rdna4", "cdna"])
def test_find_first_bit_ops_match_python_bit_length_every_isa(arch):
  # the search loops are rewritten to one popcount over Y ^ (Y - 1) (emu.pcode.rules); expected values from int.bit_length
  import importlib, numpy as np
  enum = importlib.import_module(f"tinygrad.runtime.autogen.amd.{arch}.enum")
  v_low, v_high, s_low32, s_low64, s_high32, s_high64, v_sign, s_sign32, s_sign64 = FIND_FIRST[arch]
  low = lambda x: ((x & -x).bit_length() - 1) & M32 if x else M32       # index of the lowest set bit, -1 when none
  high = lambda x, w: (w - x.bit_length()) & M32 if x else M32          # leading zeros, -1 when none
  sign = lambda x, w: high(x ^ ((1 << w) - 1) if x >> (w - 1) else x, w)   # leading bits equal to the sign bit, -1 when all are
  rng = np.random.default_rng(3)
  shifts = rng.integers(0, 32, 40)
  randoms = [int(v) >> int(s) for v, s in zip(rng.integers(0, 1 << 32, 40, dtype=np.uint64), shifts)]
  xs = [0, 1, 1 << 31, M32, 6, 0x00010000, 0xfffe0000, 0x80000001, 0xc0000000] + randoms + [M32 ^ x for x in randoms[:10]]
  for name, want in ((v_low, low), (v_high, lambda x: high(x, 32)), (v_sign, lambda x: sign(x, 32))):
    st_ = OpState(n=len(xs), S0=np.array(xs, dtype=np.uint64))
    compile_op(arch, getattr(enum.VOP1Op, name)).fn(st_)
    assert [int(d) for d in st_.D0] == [want(x) for x in xs], name
  wide = xs + [x << 32 | y for x, y in zip(xs[:20], xs[20:40])] + [1 << 63, (1 << 64) - 1, 0xffffffff00000000, (1 << 63) | 1]
  for name, bits, want in ((s_low32, 32, low), (s_low64, 64, low), (s_high32, 32, lambda x: high(x, 32)), (s_high64, 64, lambda x: high(x, 64)),
                           (s_sign32, 32, lambda x: sign(x, 32)), (s_sign64, 64, lambda x: sign(x, 64))):
    for x in wide:
      st_ = OpState(S0=x & ((1 << bits) - 1))
      compile_op(arch, getattr(enum.SOP1Op, name)).fn(st_)
      assert st_.D0 == want(x & ((1 << bits) - 1)), (name, hex(x))
