"""fuzz/oracle.py, the ISA reference model of the oracle.* targets, checked against values worked by hand from IEEE 754 and the ISA's
documented meaning (never from the emulator), one group at a time; plus the target's operand reading and comparison (fuzz/targets/oracle.py)."""
import math, struct
import pytest
from fuzz import oracle
from fuzz.oracle import ORACLE, evaluate, accepts, f32_bits
from fuzz.targets import oracle as target

def f16(x:float) -> int: return struct.unpack("<H", struct.pack("<e", x))[0]
def f64(x:float) -> int: return struct.unpack("<Q", struct.pack("<d", x))[0]
def ev(name:str, *vals, **mods) -> dict: return evaluate(ORACLE[name], list(vals), **mods)
def d0(name:str, *vals, **mods) -> int: return ev(name, *vals, **mods)["D0"]
def ok(name:str, vals, got:int, **mods) -> bool: return accepts(ORACLE[name], ev(name, *vals, **mods), got)

def test_neg_abs_act_on_the_operands_own_sign_bit():
  assert d0("V_ADD_F16", f16(1.0), f16(2.0), neg=1) == f16(1.0)            # -1 + 2: bit 15, not bit 31
  assert d0("V_ADD_F16", f16(-1.0) | 0xabcd0000, f16(2.0), abs_=1) == f16(3.0)   # bits above the f16 are not its sign
  assert d0("V_MUL_F32", f32_bits(-2.0), f32_bits(3.0), neg=1, abs_=1) == f32_bits(-6.0)  # abs first, then neg
  assert d0("V_FMA_F64", f64(2.0), f64(3.0), f64(1.0), neg=4) == f64(5.0)   # 2*3 - 1: bit 63 of the third source
  assert d0("V_CMP_LT_F32", f32_bits(1.0), f32_bits(-2.0), abs_=2) == 1   # 1 < |-2|
  assert d0("V_CMP_CLASS_F32", f32_bits(2.0), 1 << 3, neg=1) == 1          # -2.0 is a negative normal (class bit 3)
  assert d0("V_LDEXP_F32", f32_bits(1.0), 3, neg=2) == f32_bits(8.0)       # the exponent operand is an integer: no modifier

def test_clamp():
  assert d0("V_ADD_F32", f32_bits(1.5), f32_bits(0.25), clamp=True) == f32_bits(1.0)
  assert d0("V_ADD_F32", f32_bits(-3.0), 0, clamp=True) == 0
  assert d0("V_MUL_F16", 0x7e00, f16(1.0), clamp=True) == 0                # DX10 clamp: NaN -> +0
  assert ok("V_ADD_F32", [0x80000000, 0x80000000], 0x80000000, clamp=True) and ok("V_ADD_F32", [0x80000000, 0x80000000], 0, clamp=True)
  assert d0("V_ADD_NC_U32", 0xffffffff, 1, clamp=True) == 0xffffffff and d0("V_ADD_NC_U32", 0xffffffff, 1) == 0
  assert d0("V_SUB_NC_U32", 1, 2, clamp=True) == 0 and d0("V_SUB_NC_I32", 0x80000000, 1, clamp=True) == 0x80000000
  assert d0("V_ADD_NC_I16", 0x7fff, 1, clamp=True) == 0x7fff and d0("V_SUB_NC_U16", 0, 1, clamp=True) == 0
  assert d0("V_MAD_U32_U24", 0xffffff, 0xffffff, 0xffffffff, clamp=True) == 0xffffffff
  assert ev("V_ADD_CO_U32", 0xffffffff, 2, clamp=True) == {"D0": 0xffffffff, "CO": 1}   # the carry-out stays the unsigned carry
  assert d0("V_CVT_F32_I32", 5, clamp=True) == f32_bits(1.0)

def test_packed_op_sel_and_negs():
  a, b = f16(2.0) << 16 | f16(1.0), f16(4.0) << 16 | f16(3.0)
  assert d0("V_PK_ADD_F16", a, b, opsel_hi=3) == f16(6.0) << 16 | f16(4.0)  # op_sel 0 (low halves), op_sel_hi 1 (high halves)
  # low result: src0 high (op_sel bit 0), -src1 low (neg bit 1): 2 - 3; high result: -src0 low (neg_hi bit 0), src1 high: -1 + 4
  assert d0("V_PK_ADD_F16", a, b, opsel=1, opsel_hi=2, neg=2, neg_hi=1) == f16(3.0) << 16 | f16(-1.0)
  assert d0("V_PK_FMA_F16", a, b, f16(0.5) * 0x10001, opsel_hi=7) == f16(8.5) << 16 | f16(3.5)
  assert d0("V_PK_ADD_U16", 0xffff0001, 0x00010001, opsel_hi=3, clamp=True) == 0xffff0002
  assert d0("V_PK_SUB_I16", 0x80007fff, 0x0001ffff, opsel_hi=3, clamp=True) == 0x80007fff
  assert d0("V_PK_LSHLREV_B16", 0x00110004, 0x00010001, opsel_hi=3) == 0x00020010   # shift by the selected half's low 4 bits
  assert d0("V_PK_MAX_F16", 0x7d00 << 16 | f16(1.0), f16(2.0) << 16 | 0x7e00, opsel_hi=3) == 0x7f00 << 16 | f16(1.0)  # sNaN quiet, qNaN loses
  pair = lambda hi, lo: f32_bits(hi) << 32 | f32_bits(lo)
  assert d0("V_PK_MUL_F32", pair(3.0, 2.0), pair(5.0, 0.5), opsel_hi=3) == pair(15.0, 1.0)   # CDNA: f32 halves of 64-bit registers
  assert d0("V_PK_ADD_F16", f16(0.25) << 16 | f16(-2.0), f16(0.5), opsel_hi=3, clamp=True) == f16(0.25) << 16   # per half: -1.5 -> 0
  assert not accepts(ORACLE["V_PK_ADD_F16"], ev("V_PK_ADD_F16", 0x7e00, 0, opsel_hi=0), 0x7e000000)  # a NaN half is still a half

def test_carry_ops():
  assert ev("V_ADD_CO_U32", 0xffffffff, 1) == {"D0": 0, "CO": 1}
  assert ev("V_SUB_CO_U32", 1, 2) == {"D0": 0xffffffff, "CO": 1} and ev("V_SUBREV_CO_U32", 1, 2) == {"D0": 1, "CO": 0}
  assert ev("V_ADD_CO_CI_U32", 0xfffffffe, 1, mask=1) == {"D0": 0, "CO": 1}
  assert ev("V_SUB_CO_CI_U32", 0, 0, mask=1) == {"D0": 0xffffffff, "CO": 1} and ev("V_SUB_CO_CI_U32", 5, 2, mask=1) == {"D0": 2, "CO": 0}
  assert ev("V_SUBREV_CO_CI_U32", 2, 2, mask=1) == {"D0": 0xffffffff, "CO": 1}
  # (2**32-1)**2 + 2**64-1 = 2**65 - 2**33: low 64 bits 2**64 - 2**33, bit 64 set
  assert ev("V_MAD_U64_U32", 0xffffffff, 0xffffffff, (1 << 64) - 1) == {"D0": 0xfffffffe00000000, "CO": 1}
  assert ev("V_MAD_I64_I32", 0xffffffff, 1, 0) == {"D0": (1 << 64) - 1, "CO": 1}   # -1: bit 64 of the 65-bit result is its sign
  assert ev("V_MAD_I64_I32", 0xffffffff, 0xffffffff, 5) == {"D0": 6, "CO": 0}

def test_transcendentals_within_the_documented_ulps():
  half = f32_bits(0.5)
  assert all(ok("V_RCP_F32", [f32_bits(2.0)], g) for g in (half, half + 1, half - 1)) and not ok("V_RCP_F32", [f32_bits(2.0)], half + 2)
  assert d0("V_RCP_F32", 0) == 0x7f800000 and d0("V_RCP_F32", 0x80000000) == 0xff800000 and d0("V_RCP_F32", 0x7f800000) == 0
  assert ok("V_RCP_F32", [0x00400000], 0x7f000000) and ok("V_RCP_F32", [0x00400000], 0x7f800000)  # 1/2**-127, or a flushed input
  assert ok("V_RCP_F32", [f32_bits(2.0 ** 127)], f32_bits(2.0 ** -127)) and ok("V_RCP_F32", [f32_bits(2.0 ** 127)], 0)  # flushed output
  assert oracle.is_nan(d0("V_SQRT_F32", f32_bits(-1.0)), 32) and d0("V_SQRT_F32", 0x80000000) == 0x80000000
  assert ok("V_SQRT_F32", [f32_bits(2.0)], f32_bits(math.sqrt(2.0))) and not ok("V_SQRT_F32", [f32_bits(2.0)], f32_bits(math.sqrt(2.0)) + 2)
  assert d0("V_RSQ_F32", 0x80000000) == 0xff800000 and d0("V_RSQ_F32", 0x7f800000) == 0 and ok("V_RSQ_F32", [f32_bits(4.0)], half)
  assert d0("V_LOG_F32", 0) == 0xff800000 and oracle.is_nan(d0("V_LOG_F32", f32_bits(-1.0)), 32)
  assert ok("V_LOG_F32", [f32_bits(1.0)], 0) and not ok("V_LOG_F32", [f32_bits(1.0)], 1)        # log2(1) = +0 exactly
  assert ok("V_LOG_F32", [f32_bits(8.0)], f32_bits(3.0)) and ok("V_EXP_F32", [f32_bits(-1.0)], half)
  assert d0("V_EXP_F32", 0xff800000) == 0 and ok("V_EXP_F32", [f32_bits(128.0)], 0x7f800000)      # 2**128 overflows f32
  assert ok("V_EXP_F16", [f16(-2.0)], f16(0.25)) and ok("V_RCP_F16", [f16(3.0)], f16(1 / 3)) and not ok("V_RCP_F16", [f16(3.0)], f16(1 / 3) + 2)
  third = f64(1 / 3)
  assert ok("V_RCP_F64", [f64(3.0)], third + (1 << 28)) and not ok("V_RCP_F64", [f64(3.0)], third + (1 << 30))  # 2**29 ULP
  assert d0("V_SQRT_F64", 1 << 63) == 1 << 63 and d0("V_RSQ_F64", 0) == 0x7ff0000000000000

def test_sin_cos_take_revolutions():
  assert ok("V_SIN_F32", [f32_bits(0.25)], f32_bits(1.0)) and ok("V_COS_F32", [f32_bits(0.5)], f32_bits(-1.0))
  assert ok("V_SIN_F32", [f32_bits(-1.0)], 0) and not ok("V_SIN_F32", [f32_bits(1.0)], f32_bits(math.sin(1.0)))  # not radians
  assert oracle.is_nan(d0("V_SIN_F32", 0x7f800000), 32) and not ok("V_COS_F32", [0xff800000], 0)
  assert ok("V_SIN_F32", [f32_bits(1000.0)], f32_bits(0.7))          # outside [-256, 256]: not defined
  assert ok("V_SIN_F16", [f16(0.125)], f16(math.sqrt(0.5)))

def test_float_rounding_and_exponents():
  assert d0("V_RNDNE_F32", f32_bits(2.5)) == f32_bits(2.0) and d0("V_RNDNE_F32", f32_bits(-0.5)) == 0x80000000
  assert d0("V_FLOOR_F32", f32_bits(-0.5)) == f32_bits(-1.0) and d0("V_CEIL_F32", f32_bits(-0.5)) == 0x80000000
  assert d0("V_TRUNC_F64", f64(-2.75)) == f64(-2.0) and d0("V_FLOOR_F16", f16(2.5)) == f16(2.0)
  assert d0("V_LDEXP_F32", f32_bits(0.5), 128) == 0x7f000000                # 2**127: scaled exactly, 2**128 never formed
  assert d0("V_LDEXP_F32", 1, 149) == f32_bits(1.0) and d0("V_LDEXP_F16", 0, 0x7c00) == 0
  assert d0("V_FREXP_MANT_F32", f32_bits(2.0 ** -7)) == f32_bits(0.5) and d0("V_FREXP_EXP_I32_F32", f32_bits(2.0 ** -7)) == (-6) & 0xffffffff
  assert d0("V_FREXP_MANT_F32", 1) == f32_bits(0.5) and d0("V_FREXP_EXP_I32_F32", 1) == (-148) & 0xffffffff   # denormals normalised
  assert d0("V_FREXP_EXP_I32_F32", 0x80000000) == 0 and d0("V_FREXP_MANT_F64", 1 << 63) == 1 << 63           # C frexp of -0
  assert d0("V_FREXP_EXP_I16_F16", f16(-3.0)) == 2 and d0("V_FREXP_MANT_F16", f16(-3.0)) == f16(-0.75)
  assert [d0("V_CMP_CLASS_F32", x, 1 << c) for x, c in ((0x7fa00000, 0), (0x7fc00000, 1), (0xff800000, 2), (0x80000000, 5), (1, 7))] == [1] * 5
  assert d0("V_CVT_FLOOR_I32_F32", f32_bits(-1.5)) == 0xfffffffe and d0("V_CVT_I16_F16", 0xfbff) == 0x8000
  assert d0("V_CVT_F16_U16", 65535) == 0x7c00 and d0("V_CVT_U16_F16", f16(-1.0)) == 0
  lo, hi = f32_bits(1 + 2 ** -11 + 2 ** -12), f32_bits(65520.0)         # round toward zero: 1.00073 -> 1.0, 65520 -> 65504 (not inf)
  assert d0("V_CVT_PK_RTZ_F16_F32", lo, hi) == 0x7bff << 16 | f16(1.0)
  assert d0("V_PACK_B32_F16", f16(1.0), f16(-2.0), neg=2) == f16(2.0) << 16 | f16(1.0)

def test_min_max_families():
  one, two, snan = f32_bits(1.0), f32_bits(2.0), 0x7fa00000
  assert d0("V_MIN3_F32", snan, two, one) == one           # min(sNaN, 2) = qNaN, then the qNaN loses to 1
  assert d0("V_MAXMIN_F32", one, two, f32_bits(1.5)) == f32_bits(1.5) and d0("V_MINMAX_F32", one, two, f32_bits(1.5)) == f32_bits(1.5)
  assert d0("V_MINIMUM_F32", 0x7fc00000, one) == 0x7fc00000 and d0("V_MINIMUM_F32", 0, 0x80000000) == 0x80000000
  assert d0("V_MAXIMUM3_F16", f16(1.0), 0x7d00, f16(3.0)) == 0x7f00   # a NaN input wins, quietened
  assert d0("V_MIN3_NUM_F32", snan, two, one) == one and d0("V_MED3_I32", 0xffffffff, 5, 3) == 3 and d0("V_MAX3_U16", 1, 0xffff, 2) == 0xffff

def test_integer_and_bit_ops():
  assert d0("V_ALIGNBIT_B32", 0x12345678, 0x9abcdef0, 8) == 0x789abcde and d0("V_ALIGNBYTE_B32", 0x12345678, 0x9abcdef0, 1) == 0x789abcde
  assert d0("V_LERP_U8", 0x00ff0102, 0x00ff0304, 0x00010100) == 0x00ff0203     # (a + b + lsb of c's byte) >> 1 per byte
  assert d0("V_SAD_U8", 0x0a000005, 0x00030002, 100) == 100 + 10 + 3 + 3 and d0("V_SAD_HI_U8", 0x01, 0x03, 1) == (2 << 16) + 1
  assert d0("V_MSAD_U8", 0x0a000005, 0x00030002, 0) == 3 + 3               # reference byte 0 is skipped
  assert d0("V_SAD_U16", 0x00010005, 0x00030001, 0) == 2 + 4 and d0("V_SAD_U32", 3, 10, 1) == 8
  assert d0("V_PERM_B32", 0x11223344, 0x55667788, 0x0c0d0700) == 0x00ff1188    # 12 -> 0x00, 13 -> 0xff, 7/0 -> bytes of {a, b}
  assert d0("V_PERM_B32", 0x80000000, 0, 0x0b0b0b0b) == 0xffffffff              # 11: sign of byte 7
  assert d0("V_CLZ_I32_U32", 1) == 31 and d0("V_CLZ_I32_U32", 0) == 0xffffffff and d0("V_CTZ_I32_B32", 8) == 3
  assert d0("V_CLS_I32", 0x40000000) == 1 and d0("V_CLS_I32", 1) == 31 and d0("V_CLS_I32", 0xffffffff) == 0xffffffff
  assert d0("V_BFM_B32", 4, 8) == 0xf00 and d0("V_XAD_U32", 0xff, 0x0f, 1) == 0xf1 and d0("V_MAD_I32_I16", 0xffff, 3, 1) == 0xfffffffe
  assert d0("V_MBCNT_LO_U32_B32", 0xffffffff, 0, lane=5) == 5 and d0("V_MBCNT_HI_U32_B32", 0xff, 10, lane=40) == 18
  assert d0("V_CVT_PK_I16_I32", 70000, (-70000) & 0xffffffff) == 0x80007fff and d0("V_CVT_PK_U16_U32", 70000, 7) == 0x0007ffff
  assert d0("V_SAT_PK_U8_I16", 0x0100ff80) == 0xff00
  assert d0("V_CNDMASK_B32", f32_bits(1.0), f32_bits(2.0), mask=1, neg=2) == f32_bits(-2.0)

def test_salu():
  assert ev("S_BFE_I32", 0x0000ff00, 8 << 16 | 8) == {"D0": 0xffffffff, "SCC": 1} and d0("S_BFE_U64", 0xf << 60, 4 << 16 | 60) == 0xf
  assert d0("S_BITSET1_B32", 33, d0=0) == 2 and d0("S_BITSET0_B64", 63, d0=(1 << 64) - 1) == (1 << 63) - 1
  assert d0("S_CMOV_B32", 7, scc=0, d0=3) == 3 and d0("S_CMOVK_I32", scc=1, d0=3, k=0x8000) == 0xffff8000
  assert ev("S_ADDK_I32", d0=0x7fffffff, k=1) == {"D0": 0x80000000, "SCC": 1} and d0("S_MULK_I32", d0=3, k=0xfffe) == 0xfffffffa
  assert d0("S_MOVK_I32", k=0xffff) == 0xffffffff
  assert ev("S_CMPK_LT_U32", d0=5, k=0xffff)["SCC"] == 1 and ev("S_CMPK_LT_I32", d0=5, k=0xffff)["SCC"] == 0
  assert ev("S_LSHL2_ADD_U32", 0x40000000, 0, scc=0) == {"D0": 0, "SCC": 1} and ev("S_ABSDIFF_I32", (-5) & 0xffffffff, 3) == {"D0": 8, "SCC": 1}
  assert d0("S_ABSDIFF_I32", 0x80000000, 1) == 0x7fffffff          # INT_MIN - 1 wraps to INT_MAX: its absolute value
  assert d0("S_QUADMASK_B32", 0x00f00010) == 0x22 and d0("S_WQM_B32", 0x00f00010) == 0x00f000f0
  assert d0("S_PACK_HL_B32_B16", 0x12345678, 0x9abcdef0) == 0xdef01234 and d0("S_BITREPLICATE_B64_B32", 0b101) == 0b110011
  assert d0("S_CLS_I32_I64", 1 << 62) == 1 and d0("S_FF0_I32_B32", 0xfffffff7) == 3 and d0("S_FF0_I32_B32", 0xffffffff) == 0xffffffff
  assert ev("S_BCNT0_I32_B64", 0)["D0"] == 64 and ev("S_BITCMP1_B64", 1 << 40, 40)["SCC"] == 1
  assert d0("S_CVT_HI_F32_F16", f16(1.0) << 16) == f32_bits(1.0) and d0("S_ADD_F16", f16(1.0), f16(2.0)) == f16(3.0)
  assert ev("S_CMP_NEQ_F32", 0x7fc00000, 0x7fc00000)["SCC"] == 1 and ev("S_CMP_LG_F32", 0x7fc00000, 0)["SCC"] == 0
  assert d0("S_FMAMK_F32", f32_bits(2.0), f32_bits(1.0), k=f32_bits(3.0)) == f32_bits(7.0)

def _case(cls:str, op:str, fields:dict, vgprs:dict, sgprs:dict|None=None, lanes:int=32) -> dict:
  return {"arch": "rdna3", "lanes": lanes, "cls": cls, "op": op, "fields": fields, "exec": (1 << lanes) - 1, "scc": 0, "sgprs": sgprs or {},
          "vgprs": vgprs}

def test_true16_e32_operands_and_vop3_op_sel_read_high_halves():
  case = _case("VOP2", "V_ADD_F16_E32", {"op": 50, "vdst": 1, "src0": 256 + 130, "vsrc1": 3}, {"2": [0x44003c00] * 32, "3": [0x3c00] * 32})
  sg, vg = target.amd_exec.initial_state(case)
  assert target.source(case, "src0", 16, "FMT_NUM_F16", 0, sg, vg) == 0x4400    # v130 in a 16-bit e32 operand: v2.h
  vop3 = _case("VOP3", "V_ADD_F16_E64", {"op": 306, "vdst": 1, "src0": 258, "src1": 259, "src2": 0, "omod": 0, "neg": 0, "abs": 0, "clmp": 0,
                                          "opsel": 1}, {"2": [0x44003c00] * 32, "3": [0x3c00] * 32})
  assert target.source(vop3, "src0", 16, "FMT_NUM_F16", 0, sg, vg, hi=True) == 0x4400 and target.value_sources(vop3)[0][1] == 16

def test_carry_case_passes_and_carry_out_is_compared(monkeypatch):
  # v_add_co_ci_u32_e32 v1, v2, v3 with VCC = 1 in lane 0: 0xffffffff + 0 + 1 = 0, carry 1; other lanes 0xffffffff + 0 + 0
  case = _case("VOP2", "V_ADD_CO_CI_U32_E32", {"op": 32, "vdst": 1, "src0": 258, "vsrc1": 3}, {"2": [0xffffffff] * 32, "3": [0] * 32},
               {"106": 1})
  target.check(case)
  bad = ORACLE["V_ADD_CO_CI_U32"]
  no_carry = oracle.Op("valu", 32, lambda a, b, mask: {**bad.fn(a, b, mask), "CO": 0}, reads=("mask",), carry=True)
  monkeypatch.setitem(ORACLE, "V_ADD_CO_CI_U32", no_carry)
  with pytest.raises(Exception, match="carry-out"): target.check(case)

def test_coverage_table_lists_every_op_once():
  listed = [n for ops in oracle.ORACLE_COVERAGE.values() for n in ops]
  assert sorted(listed) == sorted(ORACLE) and len(set(listed)) == len(listed)

def test_div_fmas_is_one_rounding_without_vcc_and_unchecked_with_it(monkeypatch):
  # a*b + c = -(1 + 2**-24 + 4688 * 2**-70), just past the f32 tie: nearest f32 is -(1 + 2**-23) = 0xbf800001 (worked by hand)
  a, b, c = f32_bits(-(2.0 ** -24) * (1 + 2896 * 2.0 ** -23)), f32_bits(1 - 2895 * 2.0 ** -23), f32_bits(-1.0)
  assert d0("V_DIV_FMAS_F32", a, b, c, vcc=0) == 0xbf800001 and d0("V_DIV_FMAS_F64", f64(2.0), f64(3.0), f64(1.0), vcc=0) == f64(7.0)
  assert ok("V_DIV_FMAS_F32", (a, b, c), 0x12345678, vcc=1)   # the scaling direction is not in the ISA text: anything passes
  # the target reads VCC itself (not a source operand): lanes 0-15 with VCC clear are checked, lanes 16-31 are not
  case = _case("VOP3", "V_DIV_FMAS_F32", {"op": 567, "vdst": 1, "src0": 258, "src1": 259, "src2": 260, "omod": 0, "neg": 0, "abs": 0,
                                               "clmp": 0, "opsel": 0}, {"2": [a] * 32, "3": [b] * 32, "4": [c] * 32}, {"106": 0xffff0000})
  assert [s[0] for s in target.value_sources(case)] == ["src0", "src1", "src2"]
  target.check(case)
  monkeypatch.setitem(ORACLE, "V_DIV_FMAS_F32", oracle.Op("valu", 32, lambda a, b, c, vcc: {"D0": 0xbf800000}, fsrc=(32,) * 3, fout=32,
                                                            reads=("vcc",)))
  with pytest.raises(Exception, match="v1"): target.check(case)   # the rounded-to-even answer is rejected
