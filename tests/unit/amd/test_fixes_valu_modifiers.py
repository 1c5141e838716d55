"""VALU operand widths and modifiers found wrong by the oracle and asm fuzzers: 16-bit op_sel / true16 halves, clamp of 16-bit and
packed results, integer clamp (RDNA VOP3P, gfx9 names), inline constants of packed operands (VOP3P: low half, high half 0) and gfx9's zeroed high
half of 16-bit results. Expected values are worked by hand from IEEE 754 and the ISA's documented semantics (the f16 bit patterns:
0x3400 = 0.25, 0x3800 = 0.5, 0x3c00 = 1.0, 0x4000 = 2.0, 0x4200 = 3.0, 0x4400 = 4.0, 0xbc00 = -1.0)."""
import pytest
from tinygrad.runtime.autogen.amd.rdna3 import ins as r3
from tinygrad.runtime.autogen.amd.cdna import ins as cd
from tinygrad.runtime.autogen.amd.cdna.enum import VOP2Op
from emu.amd import run_program
from emu.pcode import compile_op

def rdna3(insts, **kw): return run_program(insts, **kw)
def cdna(insts, **kw): return run_program(insts, arch="gfx942", lanes=64, **kw)
def reg(st, r:int) -> int:
  """VGPR r of lane 0; every test gives all lanes the same inputs, so all lanes must agree."""
  assert (st.vgpr[0, :, r] == st.vgpr[0, 0, r]).all()
  return int(st.vgpr[0, 0, r])

def vop2_sdwa(op, vdst, vsrc0, vsrc1, dst_sel=6, dst_unused=0) -> bytes:
  """A gfx9 SDWA VOP2 word pair (CDNA3 ISA SDWA layout; both sources whole dwords, src*_sel = DWORD)."""
  w0 = (op.value << 25) | (vdst << 17) | (vsrc1 << 9) | 0xF9
  w1 = vsrc0 | (dst_sel << 8) | (dst_unused << 11) | (6 << 16) | (6 << 24)
  return w0.to_bytes(4, "little") + w1.to_bytes(4, "little")

# ---- widths: the pcode's views, not a bare 32-bit use of the operand under them ----
def test_f16_op_widths_are_16_bits():
  from tinygrad.runtime.autogen.amd.rdna3.enum import VOP3Op, VOPCOp
  assert compile_op("rdna3", VOP3Op.V_ADD_F16_E64).widths == {"S0": 16, "S1": 16, "D0": 16}   # D0.f16 = S0.f16 + S1.f16
  assert compile_op("rdna3", VOPCOp.V_CMP_CLASS_F16_E32).widths["S1"] == 16   # the class mask: bits 9:0 (S1.u32[... ? 2 : 9])
  assert compile_op("rdna3", VOP3Op.V_ALIGNBYTE_B32).widths["S2"] == 16      # S2.u32[1 : 0]: a 16-bit operand in the ISA table

# ---- RDNA3 VOP3 op_sel and true16 e32 halves ----
def test_vop3_opsel_source_high_half():
  # op_sel[0]: S0 = v2[31:16] = 2.0; S1 = v3[15:0] = 1.0 -> 3.0 in v1[15:0], v1[31:16] kept
  st = rdna3([r3.v_add_f16_e64(r3.v[1], r3.v[2], r3.v[3], opsel=1)], vgprs={1: 0x12340000, 2: 0x40003c00, 3: 0x3c00})
  assert reg(st, 1) == 0x12344200

def test_vop3_opsel_destination_high_half():
  # op_sel[3]: 1.0 + 1.0 = 2.0 written to v1[31:16], v1[15:0] kept
  st = rdna3([r3.v_add_f16_e64(r3.v[1], r3.v[2], r3.v[3], opsel=8)], vgprs={1: 0x12345678, 2: 0x3c00, 3: 0x3c00})
  assert reg(st, 1) == 0x40005678

def test_vop3_opsel_on_sgpr_source():
  # op_sel picks the high half of a 16-bit SGPR operand as well: s5[31:16] = 2.0, + 1.0 = 3.0
  st = rdna3([r3.v_add_f16_e64(r3.v[1], r3.s[5], r3.v[3], opsel=1)], sgprs={5: 0x40003c00}, vgprs={1: 0, 3: 0x3c00})
  assert reg(st, 1) == 0x4200

def test_true16_e32_v128_is_high_half():
  # VOP2 16-bit operands: v130 is v2[31:16] (2.0, not v130's own 4.0); vdst v129 is v1[31:16]
  st = rdna3([r3.v_add_f16_e32(r3.v[129], r3.v[130], r3.v[3])], vgprs={1: 0x00005678, 2: 0x40003c00, 3: 0x3c00, 130: 0x4400, 129: 0})
  assert reg(st, 1) == 0x42005678 and reg(st, 129) == 0

def test_true16_e32_class_mask_high_half():
  # V_CMP_CLASS_F16 S1 is a 16-bit mask: v131 is v3[31:16] = 0x0200 (bit 9: +inf); v3[15:0] = 0 matches no class
  st = rdna3([r3.v_cmp_class_f16_e32(r3.v[2], r3.v[131])], vgprs={2: 0x7c00, 3: 0x02000000, 131: 0})
  assert int(st.sgpr[0, 106]) == 0xffffffff

def test_vop3_opsel_on_16bit_operand_of_32bit_op():
  # V_ALIGNBYTE_B32's S2 is 16 bits: op_sel[2] takes v4[31:16] = 1 -> ({v2, v3} >> 8)[31:0]; v4[15:0] = 3 would shift 3 bytes
  st = rdna3([r3.v_alignbyte_b32(r3.v[1], r3.v[2], r3.v[3], r3.v[4], opsel=4)], vgprs={2: 0x11223344, 3: 0x55667788, 4: 0x00010003})
  assert reg(st, 1) == 0x44556677

# ---- clamp of 16-bit and packed float results ----
def test_f16_clamp_acts_on_the_16_bit_result():
  # 0.25 + 0.25 = 0.5 (inside [0, 1]: unchanged) and 1.0 + 1.0 = 2.0 -> 1.0; v1[31:16] (0xc000) neither changes nor is clamped
  st = rdna3([r3.v_add_f16_e64(r3.v[1], r3.v[2], r3.v[2], clmp=1), r3.v_add_f16_e64(r3.v[4], r3.v[3], r3.v[3], clmp=1)],
             vgprs={1: 0xc0000000, 2: 0x3400, 3: 0x3c00, 4: 0xc0000000})
  assert reg(st, 1) == 0xc0003800 and reg(st, 4) == 0xc0003c00

def test_pk_f16_clamp_per_half():
  # high: 1.0 + 0.5 = 1.5 -> 1.0; low: -1.0 + 0.5 = -0.5 -> 0
  st = rdna3([r3.v_pk_add_f16(r3.v[1], r3.v[2], r3.v[3], clmp=1)], vgprs={2: 0x3c00bc00, 3: 0x38003800})
  assert reg(st, 1) == 0x3c000000

def test_cdna_pk_f32_clamp_per_half():
  # V_PK_ADD_F32 on register pairs: low 0.25 + 0.5 = 0.75 (0x3f400000) kept, high 1.0 + 1.0 = 2.0 -> 1.0 (0x3f800000)
  st = cdna([cd.v_pk_add_f32(cd.v[0:1], cd.v[2:3], cd.v[4:5], clmp=1)],
            vgprs={2: 0x3e800000, 3: 0x3f800000, 4: 0x3f000000, 5: 0x3f800000})
  assert (reg(st, 0), reg(st, 1)) == (0x3f400000, 0x3f800000)

# ---- integer clamp (saturation) ----
def test_pk_u16_i16_clamp_saturates_each_half():
  # u16: high 0xffff + 1 -> 0xffff, low 1 + 1 = 2. i16: low -32768 - 1 -> -32768 (0x8000), high 32767 - (-1) -> 32767 (0x7fff)
  st = rdna3([r3.v_pk_add_u16(r3.v[1], r3.v[2], r3.v[3], clmp=1), r3.v_pk_sub_i16(r3.v[4], r3.v[5], r3.v[6], clmp=1),
              r3.v_pk_add_u16(r3.v[7], r3.v[2], r3.v[3])], vgprs={2: 0xffff0001, 3: 0x00010001, 5: 0x7fff8000, 6: 0xffff0001})
  assert reg(st, 1) == 0xffff0002 and reg(st, 4) == 0x7fff8000 and reg(st, 7) == 0x00000002   # without clamp: wraps per half

def test_cdna_int_clamp_gfx9_names():
  st = cdna([cd.v_add_i32(cd.v[1], cd.v[2], cd.v[3], clmp=1), cd.v_add_i32(cd.v[4], cd.v[2], cd.v[3]),
             cd.v_sub_u32_e64(cd.v[5], cd.v[3], cd.v[6], clmp=1), cd.v_add_u16_e64(cd.v[7], cd.v[8], cd.v[3], clmp=1),
             cd.v_sub_i16(cd.v[9], cd.v[10], cd.v[3], clmp=1)], vgprs={2: 0x7fffffff, 3: 1, 6: 2, 8: 0xffff, 10: 0x8000})
  assert reg(st, 1) == 0x7fffffff and reg(st, 4) == 0x80000000   # INT_MAX + 1: saturates with clamp, wraps without
  assert reg(st, 5) == 0                                          # 1 - 2 -> 0
  assert reg(st, 7) == 0xffff and reg(st, 9) == 0x8000            # 0xffff + 1 -> 0xffff; -32768 - 1 -> -32768

# ---- inline constants of packed operands ----
def test_inline_constant_of_packed_operand_outside_vop3p_is_the_32bit_value():
  # V_SAT_PK_U8_I16 (VOP1) src 2 = 0x00000002: low i16 2 -> 2, high i16 0 -> 0: D0[15:0] = 0x0002 (RDNA keeps v1[31:16])
  st = rdna3([r3.v_sat_pk_u8_i16_e32(r3.v[1], 2)], vgprs={1: 0xabcd0000})
  assert reg(st, 1) == 0xabcd0002

@pytest.mark.parametrize("arch", ["gfx1100", "gfx1201", "gfx942"])
def test_vop3p_inline_constant_is_the_low_half_and_zero_above(arch):
  # the hardware does not replicate an inline constant into the high half of a packed source (docs/emulator.md, "Inline constants")
  from emu.amd.arch import get_spec
  ins, lanes = get_spec(arch).ins, 32 if arch.startswith("gfx1") else 64
  # v_pk_add_u16 v1, 1, v2 (op_sel_hi [1,1]): (5 + 0, 7 + 1)
  st = run_program([ins.v_pk_add_u16(ins.v[1], 1, ins.v[2])], arch=arch, lanes=lanes, vgprs={2: 0x00050007})
  assert int(st.vgpr[0, 0, 1]) == 0x00050008
  # v_pk_add_f16 v1, v3 = 0x3c003c00, 1.0 op_sel_hi:[1,1]: (1.0 + 0.0, 1.0 + 1.0) = 0x3c00_4000; with op_sel_hi:[1,0] the high lane
  # reads the constant's low half: (1.0 + 1.0, 1.0 + 1.0), the splat LLVM encodes
  for hi, want in ((1, 0x3c004000), (0, 0x40004000)):
    st = run_program([ins.v_pk_add_f16(ins.v[1], ins.v[3], 1.0, opsel_hi=0b01 | hi << 1)], arch=arch, lanes=lanes, vgprs={3: 0x3c003c00})
    assert int(st.vgpr[0, 0, 1]) == want, (hi, hex(int(st.vgpr[0, 0, 1])))

# ---- gfx9: 16-bit results of VOP1/VOP2 ops zero bits 31:16 ----
def test_cdna_16bit_result_zeroes_high_half():
  # v_lshlrev_b16 (e32 and e64): 3 << 1 = 6; v_min_u16_e64: min(5, 7) = 5. The old high half 0xdead is gone.
  st = cdna([cd.v_lshlrev_b16_e32(cd.v[1], 1, cd.v[2]), cd.v_lshlrev_b16_e64(cd.v[3], 1, cd.v[2]), cd.v_min_u16_e64(cd.v[4], cd.v[5], cd.v[6])],
            vgprs={1: 0xdead0000, 2: 0x12340003, 3: 0xdead0000, 4: 0xdead0000, 5: 5, 6: 7})
  assert (reg(st, 1), reg(st, 3), reg(st, 4)) == (6, 6, 5)

def test_cdna_sdwa_16bit_result_dword_and_preserve():
  # SDWA v_min_u16 min(5, 7) = 5: dst_sel DWORD writes the zero-extended result; WORD_0 with UNUSED_PRESERVE keeps v[31:16]
  st = cdna([vop2_sdwa(VOP2Op.V_MIN_U16, 2, 0, 1, dst_sel=6), vop2_sdwa(VOP2Op.V_MIN_U16, 3, 0, 1, dst_sel=4, dst_unused=2)],
            vgprs={0: 5, 1: 7, 2: 0xdeadbeef, 3: 0xdeadbeef})
  assert reg(st, 2) == 5 and reg(st, 3) == 0xdead0005

def test_cdna_vop3_only_16bit_ops_take_op_sel():
  # gfx9's op_sel-capable VOP3 ops (V_MAD_U16 ...) write the half op_sel[3] names and keep the other: 2 * 3 + 4 = 10
  st = cdna([cd.v_mad_u16(cd.v[1], cd.v[2], cd.v[3], cd.v[4]), cd.v_mad_u16(cd.v[5], cd.v[2], cd.v[3], cd.v[4], opsel=8)],
            vgprs={1: 0xdead0000, 2: 2, 3: 3, 4: 4, 5: 0x0000beef})
  assert reg(st, 1) == 0xdead000a and reg(st, 5) == 0x000abeef
