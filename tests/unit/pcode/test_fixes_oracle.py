"""Fixes for emulator bugs the `oracle.*` fuzz targets found (docs/fuzzing.md, "Findings of the oracle targets"; reproducers in
fuzz/findings/regressions/oracle-*.json). Expected values are worked by hand from IEEE 754 and the ISA's documented meaning."""
from fractions import Fraction
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.cdna import enum as cdna
from tinygrad.runtime.autogen.amd.rdna3 import enum as rdna3
from tinygrad.runtime.autogen.amd.rdna4 import enum as rdna4
from emu.pcode import OpState, compile_op

SNAN32, QNAN32 = 0x7fa00000, 0x7fe00000   # a signalling NaN and the same NaN quietened (quiet bit 22 set)
SNAN16, QNAN16 = 0x7d00, 0x7f00
ONE32, TWO32, THREE32 = 0x3f800000, 0x40000000, 0x40400000
ONE16, TWO16 = 0x3c00, 0x4000

def run(arch:str, op, **kw) -> list[int]:
  """D0 of a vector op, one lane per value of the (equally long) operand lists; D0 starts as 0."""
  n = max(len(v) for v in kw.values() if isinstance(v, list))
  ops = {k: np.array(v, np.uint64) if isinstance(v, list) else v for k, v in kw.items()}
  st = OpState(n=n, laneId=np.arange(n, dtype=np.uint64), D0=np.zeros(n, np.uint64), **ops)
  compile_op(arch, op).fn(st)
  return [int(x) for x in st.D0]

# ---- V_MIN3/MAX3/MINMAX/MAXMIN/PK_MIN/PK_MAX: MODE.IEEE (oracle-rdna3-min3-snan-not-quieted) ----
# V_MIN_F32/V_MAX_F32 in IEEE mode: a signalling NaN operand gives that NaN quietened, a quiet NaN loses to a number; with IEEE off any NaN
# loses. The 3-operand and packed ops are defined by the vendor as compositions of V_MIN/V_MAX and follow the same rule.
@pytest.mark.parametrize("arch, op", [("rdna3", rdna3.VOP3Op.V_MIN3_F32), ("cdna", cdna.VOP3Op.V_MIN3_F32_E64)])
def test_min3_f32_quiets_a_signalling_nan_in_ieee_mode(arch, op):
  # min(1, sNaN) = qNaN (IEEE) then min(qNaN, 2) = 2; IEEE off: min(1, sNaN) = 1, min(1, 2) = 1
  assert run(arch, op, S0=[ONE32], S1=[SNAN32], S2=[TWO32], MODE_IEEE=True) == [TWO32]
  assert run(arch, op, S0=[ONE32], S1=[SNAN32], S2=[TWO32], MODE_IEEE=False) == [ONE32]
  # the NaN comes last: min(1, 2) = 1, min(1, sNaN) = qNaN
  assert run(arch, op, S0=[ONE32], S1=[TWO32], S2=[SNAN32], MODE_IEEE=True) == [QNAN32]

@pytest.mark.parametrize("op, want_ieee, want_off", [
  (rdna3.VOP3Op.V_MAX3_F32, QNAN32, TWO32),      # max(max(2, 1), sNaN)
  (rdna3.VOP3Op.V_MINMAX_F32, QNAN32, ONE32),    # max(min(2, 1), sNaN)
  (rdna3.VOP3Op.V_MAXMIN_F32, QNAN32, TWO32)])   # min(max(2, 1), sNaN)
def test_f32_min_max_compositions_follow_mode_ieee(op, want_ieee, want_off):
  assert run("rdna3", op, S0=[TWO32], S1=[ONE32], S2=[SNAN32], MODE_IEEE=True) == [want_ieee]
  assert run("rdna3", op, S0=[TWO32], S1=[ONE32], S2=[SNAN32], MODE_IEEE=False) == [want_off]

@pytest.mark.parametrize("op", [rdna3.VOP3Op.V_MIN3_F16, rdna3.VOP3Op.V_MAXMIN_F16])
def test_f16_min_max_compositions_follow_mode_ieee(op):
  # min3(1, 2, sNaN) and maxmin = min(max(1, 2), sNaN): IEEE -> sNaN quietened (0x7d00 | 0x0200), off -> 1 / 2
  off = ONE16 if op == rdna3.VOP3Op.V_MIN3_F16 else TWO16
  assert run("rdna3", op, S0=[ONE16], S1=[TWO16], S2=[SNAN16], MODE_IEEE=True) == [QNAN16]
  assert run("rdna3", op, S0=[ONE16], S1=[TWO16], S2=[SNAN16], MODE_IEEE=False) == [off]

@pytest.mark.parametrize("arch, op", [("rdna3", rdna3.VOP3POp.V_PK_MIN_F16), ("cdna", cdna.VOP3POp.V_PK_MIN_F16)])
def test_pk_min_f16_follows_mode_ieee_per_half(arch, op):
  # low halves min(1.0, sNaN 0x7c01), high halves min(sNaN 0x7d00, 2.0): IEEE -> 0x7e01 / 0x7f00; off -> 1.0 / 2.0
  s0, s1 = SNAN16 << 16 | ONE16, TWO16 << 16 | 0x7c01
  assert run(arch, op, S0=[s0], S1=[s1], MODE_IEEE=True) == [QNAN16 << 16 | 0x7e01]
  assert run(arch, op, S0=[s0], S1=[s1], MODE_IEEE=False) == [TWO16 << 16 | ONE16]

def test_pk_max_f16_follows_mode_ieee():
  # max(1.0, sNaN) low, max(2.0, 1.0) high
  s0, s1 = TWO16 << 16 | ONE16, ONE16 << 16 | SNAN16
  assert run("rdna3", rdna3.VOP3POp.V_PK_MAX_F16, S0=[s0], S1=[s1], MODE_IEEE=True) == [TWO16 << 16 | QNAN16]
  assert run("rdna3", rdna3.VOP3POp.V_PK_MAX_F16, S0=[s0], S1=[s1], MODE_IEEE=False) == [TWO16 << 16 | ONE16]

@pytest.mark.parametrize("ieee", [True, False])
def test_rdna4_min3_num_lets_a_signalling_nan_lose(ieee):
  # RDNA4 has no IEEE mode for these: V_MIN3_NUM_F32 is IEEE 754-2019 minimumNumber, a NaN (signalling too) loses to a number
  assert run("rdna4", rdna4.VOP3Op.V_MIN3_NUM_F32, S0=[ONE32], S1=[SNAN32], S2=[TWO32], MODE_IEEE=ieee) == [ONE32]

# ---- V_FREXP_MANT / V_FREXP_EXP (oracle-rdna3-frexp-mant-fraction-bits, oracle-rdna3-frexp-exp-of-zero) ----
# C's frexp: x = m * 2**e with 0.5 <= |m| < 1; frexp(0) = (0, 0); denormals are normalised; the ISA: inf and NaN give (x, 0).
F32_FREXP = [  # (x bits, mantissa bits, exponent)
  (0x3fc00000, 0x3f400000, 1),      # 1.5 = 0.75 * 2
  (0xc0a00000, 0xbf200000, 3),      # -5 = -0.625 * 8
  (0x3f000000, 0x3f000000, 0),      # 0.5 = 0.5 * 1
  (0x00000000, 0x00000000, 0),      # +0
  (0x80000000, 0x80000000, 0),      # -0
  (0x00000001, 0x3f000000, -148),   # 2**-149 = 0.5 * 2**-148
  (0x00600000, 0x3f400000, -126),   # 0.75 * 2**-126 (denormal)
  (0x7f7fffff, 0x3f7fffff, 128),    # (2 - 2**-23) * 2**127 = (1 - 2**-24) * 2**128
  (0x7f800000, 0x7f800000, 0),      # +inf
  (0xff800000, 0xff800000, 0),      # -inf
  (0x7fc00001, 0x7fc00001, 0)]      # NaN (returned as is)

@pytest.mark.parametrize("arch", ["rdna3", "rdna4", "cdna"])
def test_frexp_f32_is_c_frexp(arch):
  E = {"rdna3": rdna3, "rdna4": rdna4, "cdna": cdna}[arch]
  xs = [x for x, _, _ in F32_FREXP]
  assert run(arch, E.VOP1Op.V_FREXP_MANT_F32_E32, S0=xs) == [m for _, m, _ in F32_FREXP]
  assert run(arch, E.VOP1Op.V_FREXP_EXP_I32_F32_E32, S0=xs) == [e & 0xffffffff for _, _, e in F32_FREXP]

def test_frexp_f16_and_f64():
  # f16: 1.5 -> (0.75, 1); 2**-24 (smallest denormal) -> (0.5, -23); -0 -> (-0, 0); 65504 = (1 - 2**-11) * 2**16
  x16, m16, e16 = [0x3e00, 0x0001, 0x8000, 0x7bff, 0x7c00], [0x3a00, 0x3800, 0x8000, 0x3bff, 0x7c00], [1, -23, 0, 16, 0]
  assert run("rdna3", rdna3.VOP1Op.V_FREXP_MANT_F16_E32, S0=x16) == m16
  assert run("rdna3", rdna3.VOP1Op.V_FREXP_EXP_I16_F16_E32, S0=x16) == [e & 0xffff for e in e16]
  # f64: 3.0 -> (0.75, 2); 2**-1074 -> (0.5, -1073); 0 -> (0, 0)
  x64 = [0x4008000000000000, 0x0000000000000001, 0]
  assert run("rdna3", rdna3.VOP3Op.V_FREXP_MANT_F64_E64, S0=x64) == [0x3fe8000000000000, 0x3fe0000000000000, 0]
  assert run("rdna3", rdna3.VOP3Op.V_FREXP_EXP_I32_F64_E64, S0=x64) == [2, -1073 & 0xffffffff, 0]

# ---- V_LDEXP (oracle-rdna3-ldexp-scale-overflow): x * 2**n rounded once ----
LDEXP_F32 = [  # (x bits, n, result bits)
  (0x3f000000, 128, 0x7f000000),          # 0.5 * 2**128 = 2**127 (2**128 alone overflows f32)
  (0x00000001, 276, 0x7f000000),          # 2**-149 * 2**276 = 2**127
  (0x3f800000, 128, 0x7f800000),          # 2**128 overflows: +inf
  (0x3f800000, -149, 0x00000001),         # the smallest denormal
  (0x3fc00000, -149, 0x00000002),         # 1.5 * 2**-149: tie between 1 and 2 units, to even
  (0x3fa00000, -149, 0x00000001),         # 1.25 units -> 1
  (0x3f800000, -150, 0x00000000),         # half a unit: tie, to even (0)
  (0xbf800000, -150, 0x80000000),         # -0.5 unit -> -0
  (0x3fc00000, -150, 0x00000001),         # 0.75 unit -> 1
  (0x3f800000, 0x7fffffff, 0x7f800000),   # n = 2**31 - 1
  (0x3f800000, 0x80000000, 0x00000000),   # n = -2**31
  (0x00000000, 200, 0x00000000),          # 0 * 2**200 = 0 (not 0 * inf)
  (0xff800000, -200, 0xff800000),         # -inf stays -inf
  (SNAN32, 3, QNAN32)]                    # a NaN comes back quiet

def test_ldexp_f32_rounds_once():
  xs, ns, want = zip(*LDEXP_F32)
  assert run("rdna3", rdna3.VOP3Op.V_LDEXP_F32, S0=list(xs), S1=[n & 0xffffffff for n in ns]) == list(want)
  assert run("cdna", cdna.VOP3Op.V_LDEXP_F32, S0=list(xs), S1=[n & 0xffffffff for n in ns]) == list(want)

def test_ldexp_f16_and_f64():
  # f16: 0 * 2**16 = 0; 1 * 2**15 = 32768; 2**16 overflows; 2**-24 the smallest denormal (S1.i16 = 0xffe8 = -24); 2**-25 ties to 0
  assert run("rdna3", rdna3.VOP2Op.V_LDEXP_F16_E32, S0=[0, ONE16, ONE16, ONE16, ONE16], S1=[16, 15, 16, 0xffe8, 0xffe7]) == \
    [0, 0x7800, 0x7c00, 0x0001, 0x0000]
  # f64: -inf * 2**-3 = -inf; 0.5 * 2**1024 = 2**1023; 2**-1074; 2**-1075 ties to 0
  x64, n64 = [0xfff0000000000000, 0x3fe0000000000000, 0x3ff0000000000000, 0x3ff0000000000000], [-3, 1024, -1074, -1075]
  assert run("rdna3", rdna3.VOP3Op.V_LDEXP_F64, S0=x64, S1=[n & 0xffffffff for n in n64]) == \
    [0xfff0000000000000, 0x7fe0000000000000, 0x0000000000000001, 0]

def test_ldexp_follows_the_wave_float_mode():
  op = rdna3.VOP3Op.V_LDEXP_F32
  # round toward zero: 1.5 units -> 1, 2**128 -> the largest finite; toward +inf: 1.25 units -> 2
  assert run("rdna3", op, S0=[0x3fc00000, 0x3f800000], S1=[-149 & 0xffffffff, 128], MODE_ROUND32=3, MODE_DENORM32=3) == [0x00000001, 0x7f7fffff]
  assert run("rdna3", op, S0=[0x3fa00000], S1=[-149 & 0xffffffff], MODE_ROUND32=1, MODE_DENORM32=3) == [0x00000002]
  # f32 denormals flushed (FP_DENORM 0): a denormal result is +-0, a denormal input reads as 0
  assert run("rdna3", op, S0=[0x3f800000, 0x00000001], S1=[-149 & 0xffffffff, 149], MODE_ROUND32=0, MODE_DENORM32=0) == [0, 0]

# ---- V_RSQ (oracle-rdna4-rsq-f32-over-1ulp): 1/sqrt(x) rounded once ----
def rsq_brackets(x_bits:int, y_bits:int, w:int) -> bool:
  """y (bits of a positive width-w float) is 1/sqrt(x) rounded to nearest: the midpoints between y and its neighbours bracket
  1/sqrt(x). With m > 0, 1/sqrt(x) < m exactly when m * m * x > 1 (exact rational arithmetic)."""
  dt, ut = {16: (np.float16, np.uint16), 32: (np.float32, np.uint32)}[w]
  val = lambda b: Fraction(float(np.array(b, ut).view(dt)))  # noqa: E731
  x, y, lo, hi = val(x_bits), val(y_bits), val(y_bits - 1), val(y_bits + 1)
  return ((lo + y) / 2) ** 2 * x <= 1 <= ((y + hi) / 2) ** 2 * x

@pytest.mark.parametrize("arch, op", [("rdna4", rdna4.VOP1Op.V_RSQ_F32_E32), ("rdna3", rdna3.VOP1Op.V_RSQ_F32_E32),
                                      ("cdna", cdna.VOP1Op.V_RSQ_F32_E32), ("rdna4", rdna4.VOP3Op.V_S_RSQ_F32)])
def test_rsq_f32_rounds_once(arch, op):
  # 0x6692e0ba: 1/sqrt rounds to 0x2beefb9f; sqrt rounded to f32 first, then 1/that rounded, gives 0x2beefba0 (1.12 ULP away).
  # 1 + 2**-23: 1/sqrt = 1 - 2**-24 + 3 * 2**-50 ..., nearest 1 - 2**-24; sqrt first rounds to 1, giving 1.0
  xs, want = [0x6692e0ba, 0x3f800001], [0x2beefb9f, 0x3f7fffff]
  assert all(rsq_brackets(x, y, 32) for x, y in zip(xs, want)) and not rsq_brackets(0x6692e0ba, 0x2beefba0, 32)
  assert run(arch, op, S0=xs) == want
  # 1/sqrt(4) = 0.5, 1/sqrt(+0) = +inf, 1/sqrt(-0) = -inf, 1/sqrt(+inf) = +0, 1/sqrt(-1) = NaN
  got = run(arch, op, S0=[0x40800000, 0, 0x80000000, 0x7f800000, 0xbf800000])
  assert got[:4] == [0x3f000000, 0x7f800000, 0xff800000, 0] and (got[4] & 0x7fc00000) == 0x7fc00000

def test_rsq_f16_rounds_once():
  # 1 + 2**-10: 1/sqrt = 1 - 2**-11 + 3 * 2**-23 ..., nearest f16 1 - 2**-11 (0x3bff); sqrt rounded to f16 first is 1.0, giving 1.0
  assert rsq_brackets(0x3c01, 0x3bff, 16) and not rsq_brackets(0x3c01, 0x3c00, 16)
  assert run("rdna3", rdna3.VOP1Op.V_RSQ_F16_E32, S0=[0x3c01, 0x4400]) == [0x3bff, 0x3800]   # and 1/sqrt(4) = 0.5

# ---- DS_PERMUTE_B32 / DS_BPERMUTE_B32 with addresses >= 2**31 ----
def permute(arch:str, op, lanes:int, addrs:list[int]) -> list[int]:
  """v1 after the op with v0 = addrs (byte addresses), v2 = 100 + lane, every lane on, offset 0."""
  vgpr = np.zeros((lanes, 3), np.uint32)
  vgpr[:, 0], vgpr[:, 2] = addrs, 100 + np.arange(lanes)
  compile_op(arch, op).fn(OpState(VGPR=vgpr, EXEC=(1 << lanes) - 1, WAVE32=lanes == 32, WAVE64=lanes == 64, OFFSET=0, ADDR=0, DATA=2, VDST=1))
  return vgpr[:, 1].tolist()

@pytest.mark.parametrize("arch, lanes", [("rdna3", 32), ("rdna4", 32), ("rdna4", 64)])
def test_permute_lane_is_the_unsigned_address(arch, lanes):
  # the lane is (address / 4) modulo the lane count, the address unsigned: 0x80000000 + 4 * k names lane k (0x80000000 / 4 is a multiple
  # of 64), 0xfffffffc lane 0x3fffffff % lanes = lanes - 1
  E = rdna3 if arch == "rdna3" else rdna4
  addrs = [0x80000000 + 4 * ((i + 1) % lanes) for i in range(lanes)]
  # forward: lane i sends its data to lane i + 1, so lane j holds lane j - 1's data; backward: lane i reads lane i + 1
  assert permute(arch, E.DSOp.DS_PERMUTE_B32, lanes, addrs) == [100 + (j - 1) % lanes for j in range(lanes)]
  assert permute(arch, E.DSOp.DS_BPERMUTE_B32, lanes, addrs) == [100 + (i + 1) % lanes for i in range(lanes)]
  assert permute(arch, E.DSOp.DS_BPERMUTE_B32, lanes, [0xfffffffc] * lanes) == [100 + lanes - 1] * lanes

def test_fixes_compile_with_their_reason_on_every_arch():
  from emu.pcode import ops_for
  from emu.pcode.overrides import ARCH_PCODE_FIXES, PCODE_FIXES
  for arch in ("rdna3", "rdna4", "cdna"):
    fixes = {**PCODE_FIXES, **ARCH_PCODE_FIXES[arch]}
    for op in ops_for(arch):
      if op.name in fixes: assert compile_op(arch, op).override == fixes[op.name][0], (arch, op.name)

# ---- V_SIN/V_COS take revolutions (oracle-cdna-v_sin_f16-argument-rounded) ----
# The vendor text sin(S0 * PI * 2.0) rounded the product to f16: 0x4215 = 3.041015625 revolutions -> sin(2*pi*0.041015625) =
# 0.25482 (f16 0x3414; the rounded product 19.109375 radians gave 0.2420); 0xd715 = -113.3125 revolutions -> cos(2*pi*0.3125) =
# -0.38268 (f16 0xb61f; the product gave 0.0712).
@pytest.mark.parametrize("arch, sin, cos", [("cdna", cdna.VOP1Op.V_SIN_F16_E32, cdna.VOP1Op.V_COS_F16_E32),
                                            ("rdna3", rdna3.VOP1Op.V_SIN_F16_E32, rdna3.VOP1Op.V_COS_F16_E32),
                                            ("rdna4", rdna4.VOP1Op.V_SIN_F16_E32, rdna4.VOP1Op.V_COS_F16_E32)])
def test_f16_sin_cos_reduce_revolutions_exactly(arch, sin, cos):
  want = lambda f, x: int(np.float16(f(2 * np.pi * (x - round(x)))).view(np.uint16))
  assert run(arch, sin, S0=[0x4215]) == [want(np.sin, 3.041015625)] == [0x3414]
  assert run(arch, cos, S0=[0xd715]) == [want(np.cos, -113.3125)] == [0xb61f]

def test_f32_sin_of_a_large_argument_keeps_f32_accuracy():
  # 200.3 revolutions (f32 200.3000030517578): sin(2*pi*0.3000030517578) = 0.9510546 within 2**-20; the rounded product lost ~1e-5
  x = np.float32(200.3)
  got = np.uint32(run("rdna3", rdna3.VOP1Op.V_SIN_F32_E32, S0=[int(x.view(np.uint32))])[0]).view(np.float32)
  assert abs(float(got) - np.sin(2 * np.pi * (float(x) - 200))) < 2 ** -20
