"""rdna3 integer VALU semantics: wrap-around adds/subs/muls at 16/32/64 bits, high-half multiplies, 64-bit mads with carry-out,
carry chains through VCC, shift-amount masking and signed/unsigned min/max/med3. Expected values are Python integers."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from tinygrad.runtime.autogen.amd.rdna3.enum import VOP2Op, VOP3Op, VOP3SDOp
from emu.pcode import OpState, compile_op
from test_ops import run, u32
from test_semantics_helpers import bits, lanes, sx

M32, M64 = 0xffffffff, 2**64 - 1
U32S = st.lists(st.integers(0, M32), min_size=16, max_size=16)
HYP = settings(max_examples=60, deadline=None, derandomize=True)
EDGE = [0, 1, 0x7fffffff, 0x80000000, 0xffffffff, 0xfffffffe, 0x8000, 0xffff, 0x10000, 0x12345678]

BINOPS = {
  VOP2Op.V_ADD_NC_U32_E32: lambda a, b: (a + b) & M32,
  VOP2Op.V_SUB_NC_U32_E32: lambda a, b: (a - b) & M32,
  VOP2Op.V_SUBREV_NC_U32_E32: lambda a, b: (b - a) & M32,
  VOP3Op.V_MUL_LO_U32: lambda a, b: (a * b) & M32,
  VOP3Op.V_MUL_HI_U32: lambda a, b: (a * b) >> 32,
  VOP3Op.V_MUL_HI_I32: lambda a, b: ((sx(a, 32) * sx(b, 32)) >> 32) & M32,
  VOP2Op.V_MUL_U32_U24_E32: lambda a, b: ((a & 0xffffff) * (b & 0xffffff)) & M32,
  VOP2Op.V_MUL_HI_U32_U24_E32: lambda a, b: ((a & 0xffffff) * (b & 0xffffff)) >> 32,
  VOP2Op.V_MUL_I32_I24_E32: lambda a, b: (sx(a, 24) * sx(b, 24)) & M32,
  VOP2Op.V_MUL_HI_I32_I24_E32: lambda a, b: ((sx(a, 24) * sx(b, 24)) >> 32) & M32,
  VOP3Op.V_ADD_NC_I32: lambda a, b: (a + b) & M32,
  VOP3Op.V_SUB_NC_I32: lambda a, b: (a - b) & M32,
  VOP2Op.V_MIN_I32_E32: lambda a, b: min(sx(a, 32), sx(b, 32)) & M32,
  VOP2Op.V_MAX_I32_E32: lambda a, b: max(sx(a, 32), sx(b, 32)) & M32,
  VOP2Op.V_MIN_U32_E32: min, VOP2Op.V_MAX_U32_E32: max,
  VOP2Op.V_AND_B32_E32: lambda a, b: a & b, VOP2Op.V_XOR_B32_E32: lambda a, b: a ^ b, VOP2Op.V_XNOR_B32_E32: lambda a, b: ~(a ^ b) & M32,
  VOP2Op.V_LSHLREV_B32_E32: lambda a, b: (b << (a & 31)) & M32,
  VOP2Op.V_LSHRREV_B32_E32: lambda a, b: b >> (a & 31),
  VOP2Op.V_ASHRREV_I32_E32: lambda a, b: (sx(b, 32) >> (a & 31)) & M32,
}

@pytest.mark.parametrize("op", list(BINOPS), ids=lambda o: o.name)
def test_int_binop_edges(op):
  a, b = [x for x in EDGE for _ in EDGE], [y for _ in EDGE for y in EDGE]
  got = run(op, S0=u32(*a), S1=u32(*b)).D0
  assert [int(g) for g in got] == [BINOPS[op](x, y) for x, y in zip(a, b)]

@pytest.mark.parametrize("op", [VOP2Op.V_ADD_NC_U32_E32, VOP3Op.V_MUL_LO_U32, VOP3Op.V_MUL_HI_U32, VOP3Op.V_MUL_HI_I32, VOP2Op.V_ASHRREV_I32_E32],
                         ids=lambda o: o.name)
@HYP
@given(a=U32S, b=U32S)
def test_int_binop_random(op, a, b):
  assert [int(g) for g in run(op, S0=u32(*a), S1=u32(*b)).D0] == [BINOPS[op](x, y) for x, y in zip(a, b)]

@pytest.mark.parametrize("op,f,w", [
  (VOP3Op.V_ADD_NC_U16, lambda a, b: (a + b) & 0xffff, 16), (VOP3Op.V_SUB_NC_U16, lambda a, b: (a - b) & 0xffff, 16),
  (VOP3Op.V_ADD_NC_I16, lambda a, b: (a + b) & 0xffff, 16), (VOP3Op.V_SUB_NC_I16, lambda a, b: (a - b) & 0xffff, 16),
  (VOP3Op.V_MUL_LO_U16, lambda a, b: (a * b) & 0xffff, 16),
  (VOP3Op.V_LSHLREV_B16, lambda a, b: (b << (a & 15)) & 0xffff, 16), (VOP3Op.V_LSHRREV_B16, lambda a, b: b >> (a & 15), 16),
  (VOP3Op.V_ASHRREV_I16, lambda a, b: (sx(b, 16) >> (a & 15)) & 0xffff, 16),
  (VOP3Op.V_MAX_I16, lambda a, b: max(sx(a, 16), sx(b, 16)) & 0xffff, 16), (VOP3Op.V_MIN_U16, min, 16),
], ids=lambda x: getattr(x, "name", ""))
def test_int16_ops_wrap_and_keep_high_half(op, f, w):
  vals = [0, 1, 0x7fff, 0x8000, 0xffff, 0xfffe, 16, 17, 0x1234]
  a, b = [x for x in vals for _ in vals], [y for _ in vals for y in vals]
  st_ = run(op, S0=u32(*[x | 0xdead0000 for x in a]), S1=u32(*[y | 0xbeef0000 for y in b]), D0=lanes(*[0xcafe0000] * len(a)))
  assert [int(g) for g in st_.D0] == [0xcafe0000 | f(x, y) for x, y in zip(a, b)]

def test_v_lshlrev_b64_masks_shift_to_6_bits():
  st_ = run(VOP3Op.V_LSHLREV_B64, S0=u32(0, 1, 63, 64, 65, 32), S1=bits(*[0x8000000000000001] * 6))
  assert [int(x) for x in st_.D0] == [0x8000000000000001, 2, 1 << 63, 0x8000000000000001, 2, 1 << 32]
  st_ = run(VOP3Op.V_ASHRREV_I64, S0=u32(63, 64, 4), S1=bits(1 << 63, 1 << 63, 0xf0))
  assert [int(x) for x in st_.D0] == [M64, 1 << 63, 0xf]
  st_ = run(VOP3Op.V_LSHRREV_B64, S0=u32(63, 127), S1=bits(1 << 63, 1 << 63))
  assert [int(x) for x in st_.D0] == [1, 1]

@HYP
@given(a=U32S, b=U32S, c=st.lists(st.integers(0, M64), min_size=16, max_size=16))
def test_v_mad_u64_u32_random(a, b, c):
  st_ = run(VOP3SDOp.V_MAD_U64_U32, S0=u32(*a), S1=u32(*b), S2=bits(*c))
  full = [x * y + z for x, y, z in zip(a, b, c)]
  assert [int(d) for d in st_.D0] == [v & M64 for v in full] and [int(d) for d in st_.D1] == [v >> 64 for v in full]

def test_v_mad_i64_i32_signed_and_overflow_bit():
  # D1 is bit 64 of the 65-bit signed result (sign-extended operands)
  cases = [(-1, -1, -1), (0x7fffffff, 0x7fffffff, 2**63 - 1), (-0x80000000, -0x80000000, 0), (-3, 5, 7), (1, -1, -(2**63))]
  st_ = run(VOP3SDOp.V_MAD_I64_I32, S0=u32(*[a for a, _, _ in cases]), S1=u32(*[b for _, b, _ in cases]), S2=bits(*[c for _, _, c in cases]))
  want = [(a * b + c) & (2**65 - 1) for a, b, c in cases]
  assert [int(d) for d in st_.D0] == [w & M64 for w in want] and [int(d) for d in st_.D1] == [w >> 64 for w in want]

@pytest.mark.parametrize("arch", ["rdna3", "rdna4", "cdna"])
def test_mad_64_32_with_carry_out_match_exact_integers_every_isa(arch):
  # { D1, D0 } is the 65-bit a * b + c (sign-extended operands for the I64_I32 form); the generator computes it in 64-bit arithmetic
  # and a carry (emu.pcode.rules carry-out-mad): expected from Python's unbounded integers
  import importlib
  ops = importlib.import_module(f"tinygrad.runtime.autogen.amd.{arch}.enum").VOP3SDOp
  rng = np.random.default_rng(11)
  edge32, edge64 = [0, 1, 2, 0x7fffffff, 0x80000000, 0xfffffffe, M32], [0, 1, 2**63 - 1, 2**63, M64 - 1, M64, 2**62, 2**32]
  a = edge32 * len(edge32) * len(edge64) + rng.integers(0, 1 << 32, 200).tolist()
  b = [y for y in edge32 for _ in edge32 for _ in edge64] + rng.integers(0, 1 << 32, 200).tolist()
  c = [z for _ in edge32 for _ in edge32 for z in edge64][:len(a) - 200] + [int(x) for x in rng.integers(0, 1 << 63, 200, dtype=np.uint64) * 2 + 1]
  a = (a * 2)[:len(c)]
  sx = lambda v, w: v - (1 << w) if v >> (w - 1) else v
  for name, signed in (("V_MAD_U64_U32", False), ("V_MAD_I64_I32", True), ("V_MAD_CO_U64_U32", False), ("V_MAD_CO_I64_I32", True)):
    if not hasattr(ops, name): continue
    st_ = OpState(n=len(a), laneId=np.arange(len(a), dtype=np.uint64), S0=u32(*a), S1=u32(*b), S2=bits(*c))
    compile_op(arch, getattr(ops, name)).fn(st_)
    full = [(sx(x, 32) * sx(y, 32) + sx(z, 64) if signed else x * y + z) & ((1 << 65) - 1) for x, y, z in zip(a, b, c)]
    assert [int(d) for d in st_.D0] == [v & M64 for v in full], (arch, name)
    assert [int(d) for d in st_.D1] == [v >> 64 for v in full], (arch, name)

def test_v_add_co_ci_u32_64bit_chain():
  xs = [0xffffffffffffffff, 0x00000001ffffffff, 0x123456789abcdef0, 0x8000000000000000]
  ys = [1, 1, 0xfedcba9876543210, 0x8000000000000000]
  lo = run(VOP3SDOp.V_ADD_CO_U32, S0=u32(*[x & M32 for x in xs]), S1=u32(*[y & M32 for y in ys]))
  hi = run(VOP2Op.V_ADD_CO_CI_U32_E32, S0=u32(*[x >> 32 for x in xs]), S1=u32(*[y >> 32 for y in ys]), VCC=lo.VCC)
  got = [(int(h) << 32) | int(lw) for h, lw in zip(hi.D0, lo.D0)]
  assert got == [(x + y) & M64 for x, y in zip(xs, ys)] and [int(c) for c in hi.VCC] == [(x + y) >> 64 for x, y in zip(xs, ys)]

def test_v_sub_co_ci_u32_64bit_borrow_chain():
  xs, ys = [0, 0x100000000, 5, 0x8000000000000000], [1, 1, 7, 1]
  lo = run(VOP3SDOp.V_SUB_CO_U32, S0=u32(*[x & M32 for x in xs]), S1=u32(*[y & M32 for y in ys]))
  hi = run(VOP2Op.V_SUB_CO_CI_U32_E32, S0=u32(*[x >> 32 for x in xs]), S1=u32(*[y >> 32 for y in ys]), VCC=lo.VCC)
  got = [(int(h) << 32) | int(lw) for h, lw in zip(hi.D0, lo.D0)]
  assert got == [(x - y) & M64 for x, y in zip(xs, ys)] and [int(c) for c in hi.VCC] == [int(x < y) for x, y in zip(xs, ys)]

def test_v_subrev_co_u32_borrow():
  st_ = run(VOP3SDOp.V_SUBREV_CO_U32, S0=u32(1, 0), S1=u32(0, 1))
  assert list(st_.D0) == [M32, 1] and list(st_.VCC) == [1, 0]

@pytest.mark.parametrize("op,f", [
  (VOP3Op.V_MED3_I32, lambda *v: sorted(sx(x, 32) for x in v)[1] & M32), (VOP3Op.V_MED3_U32, lambda *v: sorted(v)[1]),
  (VOP3Op.V_MIN3_I32, lambda *v: min(sx(x, 32) for x in v) & M32), (VOP3Op.V_MAX3_U32, lambda *v: max(v)),
  (VOP3Op.V_MAX3_I32, lambda *v: max(sx(x, 32) for x in v) & M32), (VOP3Op.V_MIN3_U32, lambda *v: min(v)),
], ids=lambda x: getattr(x, "name", ""))
def test_int_3op_min_med_max(op, f):
  vals = [0, 1, 0x7fffffff, 0x80000000, M32]
  trip = [(a, b, c) for a in vals for b in vals for c in vals]
  st_ = run(op, S0=u32(*[t[0] for t in trip]), S1=u32(*[t[1] for t in trip]), S2=u32(*[t[2] for t in trip]))
  assert [int(d) for d in st_.D0] == [f(*t) for t in trip]

def test_v_med3_i16_u16_keep_high_half():
  st_ = run(VOP3Op.V_MED3_I16, S0=u32(0x8000, 0x7fff), S1=u32(0xffff, 0x0001), S2=u32(0x0001, 0x8000), D0=lanes(0x11110000, 0))
  assert list(st_.D0) == [0x1111ffff, 0x0001]
  st_ = run(VOP3Op.V_MED3_U16, S0=u32(0x8000), S1=u32(0xffff), S2=u32(0x0001), D0=lanes(0))
  assert list(st_.D0) == [0x8000]

def test_v_mad_u32_u24_and_mad_i32_i24():
  st_ = run(VOP3Op.V_MAD_U32_U24, S0=u32(0xffffff, 0x1000000), S1=u32(0xffffff, 5), S2=u32(7, 9))
  assert [int(d) for d in st_.D0] == [(0xffffff * 0xffffff + 7) & M32, 9]
  st_ = run(VOP3Op.V_MAD_I32_I24, S0=u32(0x800000, 0xffffff), S1=u32(2, 3), S2=u32(1, 0))
  assert [int(d) for d in st_.D0] == [(-0x800000 * 2 + 1) & M32, (-3) & M32]

def test_v_cndmask_b32_per_lane_with_vcc():
  vcc = np.array([1, 0, 1, 0], np.uint64)
  assert list(run(VOP2Op.V_CNDMASK_B32_E32, S0=u32(1, 2, 3, 4), S1=u32(10, 20, 30, 40), VCC=vcc).D0) == [10, 2, 30, 4]
