"""Emulator bugs the exec.* / kernel.amd / oracle fuzzers found (fuzz/findings/regressions/), pinned with expectations from the ISA and numpy."""
from fractions import Fraction
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.cdna import ins as C
from tinygrad.runtime.autogen.amd.rdna3 import ins as I
from tinygrad.runtime.autogen.amd.rdna4 import ins as R4
from emu.amd import run_program
from emu.amd.api import GPUIllegalInstruction
from emu.amd.arch import get_spec
from emu.amd.decode import decode

M0 = 125
s, v = I.s, I.v

@pytest.mark.parametrize("scc", [0, 1])
def test_s_cmov_writes_only_when_scc_set(scc):
  st = run_program([I.s_cmov_b32(s[0], s[1]), I.s_cmov_b64(s[2:3], s[4:5]), I.s_cmovk_i32(s[6], 0xfffe)], scc=scc,
                   sgprs={0: 7, 1: 9, 2: 0x1111111122222222, 4: 0x3333333344444444, 6: 5})
  assert [int(x) for x in st.sgpr[0, :4]] == ([9, 9, 0x44444444, 0x33333333] if scc else [7, 9, 0x22222222, 0x11111111])
  assert int(st.sgpr[0, 6]) == (0xfffffffe if scc else 5)

def test_s_setreg_then_s_getreg_reads_the_field_back():
  hwreg = lambda reg, offset, size: reg | offset << 6 | (size - 1) << 11
  st = run_program([I.s_setreg_b32(s[1], hwreg(3, 0, 8)), I.s_getreg_b32(s[0], hwreg(3, 0, 32)), I.s_getreg_b32(s[2], hwreg(3, 4, 4))],
                   sgprs={1: 0x1ab})   # only the low 8 bits of s1 land
  assert int(st.sgpr[0, 0]) == 0xab and int(st.sgpr[0, 2]) == 0xa

def test_s_movrel_reads_and_writes_relative_to_m0():
  st = run_program([I.s_movrels_b64(s[0:1], s[4:5]), I.s_movreld_b64(s[20:21], s[8:9])], sgprs={M0: 2, 6: 0x66, 7: 0x77, 8: 0x88, 9: 0x99})
  assert [int(x) for x in st.sgpr[0, [0, 1, 22, 23]]] == [0x66, 0x77, 0x88, 0x99]
  st = run_program([I.s_movrelsd_2_b32(s[30], s[10])], sgprs={M0: 2 | 3 << 16, 12: 0xcc})   # source += M0[9:0], destination += M0[25:16]
  assert int(st.sgpr[0, 33]) == 0xcc

def test_s_movrel_out_of_range_reads_s0_and_drops_the_write():
  # ISA out-of-range rule: an SGPR index past the file reads s0; a write there does not happen
  st = run_program([I.s_movrels_b32(s[1], s[4]), I.s_movreld_b32(s[100], s[2])], sgprs={M0: 1000, 0: 0x5a, 2: 0x77})
  assert int(st.sgpr[0, 1]) == 0x5a and int(st.sgpr[0, 100]) == 0

def test_v_movrel_relative_and_out_of_range():
  lanes = np.arange(32)
  st = run_program([I.v_movrels_b32_e32(v[1], v[3]), I.v_movreld_b32_e32(v[6], v[4])], sgprs={M0: 2}, vgprs={0: lanes, 5: lanes + 50, 4: 7})
  assert (st.vgpr[0, :, 1] == lanes + 50).all() and (st.vgpr[0, :, 8] == 7).all()
  before = run_program([], vgprs={0: lanes, 4: 7}).vgpr.copy()
  st = run_program([I.v_movrels_b32_e32(v[1], v[3]), I.v_movreld_b32_e32(v[6], v[4])], sgprs={M0: 0xb0000000}, vgprs={0: lanes, 4: 7})
  expect = before.copy()
  expect[0, :, 1] = lanes   # past the file: the read returns v0, the write is dropped
  assert (st.vgpr == expect).all()

def test_s_bcnt1_i32_b64_writes_one_sgpr():
  st = run_program([I.s_bcnt1_i32_b64(s[0], s[2:3])], sgprs={1: 0x12345678, 2: 0xff00ff00ff})
  assert int(st.sgpr[0, 0]) == 24 and int(st.sgpr[0, 1]) == 0x12345678 and int(st.scc[0]) == 1

def test_vop3_dpp16_is_one_instruction():
  # v_cmpx_t_f16_e64 with DPP16 (src0 = 250 in the second dword): 12 bytes, and it writes EXEC only
  raw = bytes.fromhex("00008fd4fa000000ff410120")
  instr = decode(raw + bytes(4), get_spec("gfx1100"))
  assert (instr.variant, instr.size) == ("DPP16", 12)
  st = run_program([raw], vgprs={0: 0xc0000000, 160: 0xa000})
  assert (st.vgpr[0, :, 0] == 0xc0000000).all()

@pytest.mark.parametrize("mask, pick", [(-1, 2), (0, 1)])
def test_inline_constant_lane_masks(mask, pick):
  lanes = np.arange(32)
  st = run_program([I.v_cndmask_b32_e64(v[0], v[1], v[2], mask), I.v_sub_co_ci_u32(v[3], s[4], v[1], v[2], mask)],
                   vgprs={1: lanes + 100, 2: lanes})
  assert (st.vgpr[0, :, 0] == st.vgpr[0, :, pick]).all()
  assert (st.vgpr[0, :, 3] == 100 - (mask & 1)).all()   # carry-in from the constant mask: 100 - borrow

@pytest.mark.parametrize("make", [I.v_fmac_dx9_zero_f32_e32, I.v_fmac_dx9_zero_f32_e64])
def test_v_fmac_dx9_zero_accumulates_into_vdst(make):
  a, b, acc = np.float32([2, 0, 3, 0]), np.float32([3, np.inf, 0, np.nan]), np.float32([1, 5, 6, 7])
  st = run_program([make(v[0], v[1], v[2])], vgprs={1: np.tile(a, 8), 2: np.tile(b, 8), 0: np.tile(acc, 8)})
  assert st.vgpr[0, :4, 0].view(np.float32).tolist() == [7.0, 5.0, 6.0, 7.0]   # 0 * x keeps the accumulator (DX9 rule)

def test_v_permlane64():
  lanes = np.arange(64)
  st = run_program([I.v_permlane64_b32_e32(v[1], v[0])], lanes=64, vgprs={0: lanes, 1: 0})
  assert (st.vgpr[0, :, 1] == lanes ^ 32).all()
  st = run_program([I.v_permlane64_b32_e32(v[1], v[0])], vgprs={0: np.arange(32), 1: 9})
  assert (st.vgpr[0, :, 1] == 9).all()   # wave32: a no-op
  with pytest.raises(GPUIllegalInstruction, match="V_PERMLANE64_B32_E32: src0 must be a VGPR"):
    run_program([I.v_permlane64_b32_e32(v[1], 0x12345678)], lanes=64)

def test_wmma_with_a_non_vgpr_operand_is_illegal():
  with pytest.raises(GPUIllegalInstruction, match="V_WMMA_F32_16X16X16_F16: src0 must be a VGPR"):
    run_program([I.v_wmma_f32_16x16x16_f16(v[0:7], 0x3c003c00, v[16:23], v[24:31])])

# float64 division. tinygrad's LLVM renderer emits `fdiv nsz arcp contract afn`, which LLVM lowers to rcp + Newton steps (the first
# sequence); without arcp it is the IEEE-exact div_scale/fmas/fixup sequence (the second). Expectations: exact fma from Fractions.
NUM = [3.0, -3.0, 0.0, 1.0, 5.0, 0.0, 1e300, 2.0, 1.0, -7.5]
DEN = [0.0, 0.0, 0.0, -0.0, 2.0, 3.0, 1e-300, np.inf, 3.0, 1e-310]

def _fma(a:float, b:float, c:float) -> float:
  if not all(np.isfinite([a, b, c])) or a * b == 0:
    with np.errstate(all="ignore"): return float(np.float64(a) * np.float64(b) + np.float64(c))   # inf/nan rules: IEEE, no rounding
  return float(Fraction(a) * Fraction(b) + Fraction(c))

def _f64_regs(xs) -> tuple[np.ndarray, np.ndarray]:
  u = np.array(xs + [1.0] * (32 - len(xs)), dtype=np.float64).view(np.uint32).reshape(-1, 2)
  return u[:, 0], u[:, 1]

def _run_f64(prog) -> np.ndarray:
  (n0, n1), (d0, d1) = _f64_regs(NUM), _f64_regs(DEN)
  st = run_program(prog, vgprs={0: n0, 1: n1, 2: d0, 3: d1})
  return st.vgpr[0, :len(NUM), 10:12].copy().view(np.float64).reshape(-1)

def test_f64_division_rcp_newton_sequence_matches_ieee_fma():
  # the code LLVM emits for tinygrad's a / b (v[0:1] = a, v[2:3] = b): x/0 is NaN here on IEEE hardware too (fma(-0, inf, 1) = NaN)
  prog = [I.v_rcp_f64_e32(v[4:5], v[2:3]), I.v_fma_f64(v[6:7], v[2:3], v[4:5], 1.0, neg=1), I.v_fma_f64(v[4:5], v[6:7], v[4:5], v[4:5]),
          I.v_fma_f64(v[6:7], v[2:3], v[4:5], 1.0, neg=1), I.v_fma_f64(v[4:5], v[6:7], v[4:5], v[4:5]), I.v_mul_f64(v[8:9], v[0:1], v[4:5]),
          I.v_fma_f64(v[6:7], v[2:3], v[8:9], v[0:1], neg=1), I.v_fma_f64(v[10:11], v[6:7], v[4:5], v[8:9])]
  want = []
  for a, b in zip(NUM, DEN):
    with np.errstate(all="ignore"): r = float(np.float64(1.0) / np.float64(b))   # v_rcp_f64 of these is exact or +-inf / 0
    r = _fma(_fma(-b, r, 1.0), r, r)
    r = _fma(_fma(-b, r, 1.0), r, r)
    with np.errstate(all="ignore"): q = float(np.float64(a) * np.float64(r))
    want.append(_fma(_fma(-b, q, a), r, q))
  np.testing.assert_array_equal(_run_f64(prog), np.array(want))

def test_f64_division_ieee_sequence_gives_ieee_quotients():
  prog = [I.v_div_scale_f64(v[4:5], I.VCC_LO, v[2:3], v[2:3], v[0:1]), I.v_rcp_f64_e32(v[6:7], v[4:5]),
          I.v_fma_f64(v[8:9], v[4:5], v[6:7], 1.0, neg=1), I.v_fma_f64(v[6:7], v[6:7], v[8:9], v[6:7]),
          I.v_fma_f64(v[8:9], v[4:5], v[6:7], 1.0, neg=1), I.v_fma_f64(v[6:7], v[6:7], v[8:9], v[6:7]),
          I.v_div_scale_f64(v[8:9], I.VCC_LO, v[0:1], v[2:3], v[0:1]), I.v_mul_f64(v[12:13], v[8:9], v[6:7]),
          I.v_fma_f64(v[14:15], v[4:5], v[12:13], v[8:9], neg=1), I.v_div_fmas_f64(v[12:13], v[14:15], v[6:7], v[12:13]),
          I.v_div_fixup_f64(v[10:11], v[12:13], v[2:3], v[0:1])]
  with np.errstate(all="ignore"): want = np.array(NUM) / np.array(DEN)
  np.testing.assert_array_equal(_run_f64(prog), want)

def test_v_movrelsd_with_a_literal_source_is_illegal():
  with pytest.raises(GPUIllegalInstruction, match="V_MOVRELSD_B32_E32: src0 must be a VGPR"):
    run_program([I.v_movrelsd_b32_e32(v[1], 0x12345678)])

def test_dpp_form_of_an_op_reading_a_vgpr_by_number_is_illegal():
  # v_movrels_b32 reads VGPR[lane][SRC0 + M0] itself (no S0 value to route), so a DPP8/DPP16 form (src0 = 233/250) has no meaning
  # here: it used to index the register file with the DPP marker (233 - 256)
  dpp8 = I.VOP1_DPP8(I.VOP1Op.V_MOVRELS_B32_E32, vdst=v[0], src0=I.src[233], vsrc0=v[0], **{f"lane_sel_{i}": 0 for i in range(8)})
  dpp16 = I.VOP1_DPP16(I.VOP1Op.V_MOVRELS_B32_E32, vdst=v[0], src0=I.src[250], vsrc0=v[1], dpp=0x111, row_mask=0xf, bank_mask=0xf)
  for inst, form in ((dpp8, "DPP8"), (dpp16, "DPP16")):
    with pytest.raises(GPUIllegalInstruction, match=f"V_MOVRELS_B32_E32: no {form} form"): run_program([inst])

# cdna / rdna4 findings: expectations worked out by hand from the ISA (f16 2.0 = 0x4000, 3.0 = 0x4200, 0.5 = 0x3800, 1.0 = 0x3c00)
def test_cdna_v_mac_f16_e32_has_no_opsel():
  # VOP2 has no OPSEL field, so OPSEL = 0: D0 = {16'0, S0 * S1 + D0.f16} (2 * 3 + 1 = 7.0 = 0x4700, the high half cleared)
  st = run_program([C.v_mac_f16_e32(C.v[2], C.v[0], C.v[1])], arch="gfx942", lanes=64, vgprs={0: 0x4000, 1: 0x4200, 2: 0xabcd3c00})
  assert (st.vgpr[0, :, 2] == 0x4700).all()

def test_cdna_v_madak_madmk_f16_take_k_from_the_literal():
  prog = [C.v_madak_f16_e32(C.v[2], C.v[0], C.v[1], literal=0x3800), C.v_madmk_f16_e32(C.v[3], C.v[0], C.v[1], literal=0x3800)]
  st = run_program(prog, arch="gfx942", lanes=64, vgprs={0: 0x4000, 1: 0x4200})
  assert (st.vgpr[0, :, 2] == 0x4680).all()   # 2 * 3 + 0.5 = 6.5
  assert (st.vgpr[0, :, 3] == 0x4400).all()   # 2 * 0.5 + 3 = 4.0

def test_rdna4_v_cvt_fp8_e32_reads_the_low_bytes():
  # VOP1 has no OPSEL: byte 0 (word 0 for the packed form). OCP E4M3: 0x38 = 1.0, 0x3c = 1.5, 0x40 = 2.0, 0x44 = 3.0
  st = run_program([R4.v_cvt_f32_fp8_e32(R4.v[1], R4.v[0]), R4.v_cvt_pk_f32_fp8_e32(R4.v[2:3], R4.v[0])], arch="gfx1201",
                   vgprs={0: 0x44403c38})
  assert st.vgpr[0, :, 1:4].view(np.float32).tolist() == [[1.0, 1.0, 1.5]] * 32

def test_cdna_v_min_max_f32_order_signed_zeros():
  # the gfx9 pseudocode tests `S0 == +0.0 && S1 == -0.0` by sign: -0 < +0 for both min and max
  a, b = [0x80000000, 0, 0x80000000, 0], [0, 0x80000000, 0x80000000, 0]
  st = run_program([C.v_min_f32_e32(C.v[2], C.v[0], C.v[1]), C.v_max_f32_e32(C.v[3], C.v[0], C.v[1])], arch="gfx942", lanes=64,
                   vgprs={0: a * 16, 1: b * 16})
  assert st.vgpr[0, :4, 2].tolist() == [0x80000000, 0x80000000, 0x80000000, 0]
  assert st.vgpr[0, :4, 3].tolist() == [0, 0, 0x80000000, 0]

@pytest.mark.parametrize("kw, field", [({"cbsz": 1}, "CBSZ=1"), ({"abid": 2}, "ABID=2"), ({"blgp": 3}, "BLGP=3")])
def test_cdna_mfma_broadcast_is_an_illegal_instruction(kw, field):
  with pytest.raises(GPUIllegalInstruction, match=f"V_MFMA_F32_16X16X32_FP8_FP8: {field}: MFMA broadcast is not modelled"):
    run_program([C.v_mfma_f32_16x16x32_fp8_fp8(C.v[0:3], C.v[4:5], C.v[6:7], C.v[0:3], **kw)], arch="gfx942", lanes=64)

def test_cdna_xf32_mfma_reads_the_matrix_layout():
  # exec.cdna finding exec-cdna-mfma-xf32-decoded-as-vop3p: the wheel decodes gfx942's XF32 MFMAs as plain VOP3P (no CBSZ/ABID/BLGP/ACC
  # fields), and running one raised AttributeError. The hardware reads those bits in the matrix layout: with them clear, 16x16x8 of
  # A = 1.0 and B = 2.0 sums eight products of 2.0 into every element of D (C = 0)
  one, two = int(np.float32(1.0).view(np.uint32)), int(np.float32(2.0).view(np.uint32))
  regs = {0: [one] * 64, 1: [one] * 64, 2: [two] * 64, 3: [two] * 64, **{r: [0] * 64 for r in range(4, 8)}}
  mfma = C.v_mfma_f32_16x16x8_xf32
  st = run_program([mfma(C.v[8:11], C.v[0:1], C.v[2:3], C.v[4:7], opsel_hi=0, opsel_hi2=0)], arch="gfx942", lanes=64, vgprs=regs)
  assert (st.vgpr[0, :, 8:12].view(np.float32) == 16.0).all()
  # the DSL's default opsel_hi/opsel_hi2 bits are ACC=3 and ABID=8 in that layout: a broadcast, which is a clear error
  with pytest.raises(GPUIllegalInstruction, match="V_MFMA_F32_16X16X8_XF32: ABID=8: MFMA broadcast is not modelled"):
    run_program([mfma(C.v[8:11], C.v[0:1], C.v[2:3], C.v[4:7])], arch="gfx942", lanes=64, vgprs=regs)

@pytest.mark.parametrize("src2", [255, 129, 0], ids=["literal", "inline-constant", "sgpr"])
def test_a_128_bit_source_must_be_a_vgpr(src2):
  # exec.rdna3 finding exec-rdna3-mqsad-constant-128-bit-source: v_mqsad_u32_u8 with a literal S2 raised IndexError (a constant read
  # as one value where the op takes four dwords). S2's register class is VGPR-only (LLVM disassembles an SGPR, inline constant or
  # literal there as invalid), so each is an illegal instruction. VOP3 op 573: 0xd6000000 | 573 << 16 | vdst; src0 v4, src1 v6
  raw = (0b110101 << 26 | 573 << 16).to_bytes(4, "little") + ((256 + 4) | (256 + 6) << 9 | src2 << 18).to_bytes(4, "little")
  inst = decode(raw + bytes(4), get_spec("gfx1100")).inst
  with pytest.raises(GPUIllegalInstruction, match="V_MQSAD_U32_U8: src2 is a 128-bit operand and must be a VGPR"):
    run_program([inst])

def test_vop3_f16_neg_abs_act_on_bit_15():
  # kernel.gfx1100 finding kernel-f16-vop3-neg-ignored: -(sum) in f16 came out positive. VOP3 reads an f16 source as a 32-bit
  # register, so neg/abs must flip/clear bit 15 (the f16 sign), not bit 31. 4.0 = 0x4400, -3.0 = 0xc200.
  st = run_program([I.v_sub_f16_e64(v[3], v[1], v[2], neg=1), I.v_mul_f16_e64(v[4], v[1], v[2], abs=2, neg=2),
                    I.v_add_f16_e64(v[5], v[1], v[2], abs=3), I.s_endpgm()],
                   vgprs={1: np.full(32, 0x4400, np.uint32), 2: np.full(32, 0xc200, np.uint32)})
  assert st.vgpr[0, 0, 3] & 0xffff == 0xbc00   # -4 - (-3) = -1
  assert st.vgpr[0, 0, 4] & 0xffff == 0xca00   # 4 * -|-3| = -12
  assert st.vgpr[0, 0, 5] & 0xffff == 0x4700   # |4| + |-3| = 7

@pytest.mark.parametrize("arch", ["gfx1100", "gfx1201"])
def test_vop3_sdst_form_with_vdst_250_keeps_its_literal(arch):
  # v_cmpx_gt_f32_e64 with the literal 1.5 and its (ignored) vdst field = 250: the wheel's decoder takes 250 for a DPP marker and
  # drops the literal, which then ran as a VOP2 instruction of its own (0x3fc00000: op 31, vdst v224)
  raw = bytearray(I.v_cmpx_gt_f32_e64(I.EXEC_LO, 1.5, v[1]).to_bytes())
  raw[0] = 250
  instr = decode(bytes(raw) + bytes(4), get_spec(arch))
  assert (instr.variant, instr.size, instr.literal) == ("LIT", 12, 0x3fc00000)
  lanes = np.arange(32, dtype=np.float32) / 8   # 0, 0.125, ... 3.875: 1.5 > x for lanes 0-11
  st = run_program([bytes(raw), I.v_mov_b32_e32(v[2], 7)], arch=arch, vgprs={1: lanes, 2: 0, 224: 5})
  assert int(st.sgpr[0, 126]) == (1 << 12) - 1
  assert st.vgpr[0, :, 2].tolist() == [7] * 12 + [0] * 20 and (st.vgpr[0, :, 224] == 5).all()
