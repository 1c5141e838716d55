"""The override table: opcodes whose vendor pcode is prose, incomplete or wrong, with the reason for each.

Four kinds of entry, looked up by mnemonic (the same name on every arch unless the table says otherwise):
- `EXECUTOR_OWNED`: control/wait/barrier ops and ops whose pcode is prose about hardware the executor owns (cross-lane
  swizzles, GS registers, buffer formats), read from emu.amd_ops.OWNED: they come back as kind 'executor' with `fn is None`.
- `EXECUTOR_RUN`: ops whose vendor text compiles for the operand metadata the executor uses, but never runs (rdna4's block moves).
- `PCODE_FIXES` (and `ARCH_PCODE_FIXES` for one arch: `CDNA_PCODE_FIXES` ...): corrected pcode, compiled by the normal compiler
  (the vendor entry leaves a table empty, names an operand the executor never provides, or computes something else than the ISA
  documents).
- `HANDWRITTEN` (per arch: `HANDWRITTEN_RDNA3`/`_RDNA4`/`_CDNA`): semantics written in Python in `emu.pcode.handwritten` (IEEE division/trig helpers,
  WMMA in each arch's register layout).
Rules the generator applies to every vendor text replace per-op fixes where the vendor's intent is uniform: the float
v_min/v_max/v_min3/v_max3 helpers (the V_MIN/V_MAX instructions, whose NaN rule depends on the mode) get WAVE_MODE.IEEE as
their last argument (`helpers.Helper.ieee_arg`), which covers MIN3/MAX3/MED3/MINMAX/MAXMIN and the packed f16 min/max; and
`emu.pcode.rules` rewrites `x * 2.0 ** n` (ldexp), `sin/cos(x * 2 * PI)` (revolutions), `1.0 / sqrt(x)` (rsq) and the
floor(x + 0.5) round-half-even idiom (rint), and frexp's `mantissa()` into a float / `exponent() - bias + 1` (frexp_mant,
frexp_exp) before compiling; the compiler keeps fields an entry `declare`s (DS_*_ADDTID's 8-bit OFFSET0/OFFSET1) as inputs of the
declared width.
Every `PCODE_FIXES` and `HANDWRITTEN` entry is tested in tests/unit/pcode/test_overrides.py (the fixes for findings of the
`oracle.*` fuzz targets in tests/unit/pcode/test_fixes_oracle.py); the rdna4/cdna-only entries in tests/unit/pcode/test_rdna4_cdna.py."""
from __future__ import annotations
from emu import amd_ops
from emu.pcode.abi import CompiledOp

# control, wait, barrier and message ops, hints, and ops whose pcode is prose about hardware the executor owns: one table
# (emu.amd_ops.OWNED) says what the executor does with each and why the pcode does not run
EXECUTOR_OWNED = {name: owned.reason for name, owned in amd_ops.OWNED.items()}

# name -> (reason, corrected pcode)
PCODE_FIXES = {
  "V_CVT_OFF_F32_I4_E32": ("the vendor entry declares CVT_OFF_TABLE but never fills it; the table is i4 / 16 (0, 0.0625 ... 0.4375, -0.5 ... "
                           "-0.0625)", "D0.f32 = 32'F(S0.i4.i32) * 0.0625F"),
}
PCODE_FIXES["V_CVT_OFF_F32_I4_E64"] = PCODE_FIXES["V_CVT_OFF_F32_I4_E32"]
PCODE_FIXES["DS_CONDXCHG32_RTN_B64"] = (
  "the vendor entry redeclares its operands (ADDR = S0, DATA = S1, LDS[...], RETURN_DATA as an array of two dwords); this is its "
  "text in the names every DS op takes (each dword written where its bit 31 is set, with that bit clear; both old dwords returned)",
  "declare OFFSET0 : 8'U;\ndeclare OFFSET1 : 8'U;\noffset = { OFFSET1, OFFSET0 };\nADDR0 = ((ADDR.u32 + offset.u32) & 0xfff8U);\n"
  "ADDR1 = ADDR0 + 4U;\ntmp0 = MEM[ADDR0].u32;\nif DATA[31] then\nMEM[ADDR0].u32 = { 1'0, DATA[30 : 0] }\nendif;\n"
  "tmp1 = MEM[ADDR1].u32;\nif DATA[63] then\nMEM[ADDR1].u32 = { 1'0, DATA[62 : 32] }\nendif;\nRETURN_DATA.b64 = { tmp1, tmp0 }")
_SETREG = ("rdna3's entry builds mask = (1 << size) - 1 and never shifts it to `offset`, so a field at a non-zero offset is written "
           "through the low bits' mask (the register's low bits cleared, the new value lost); rdna4's and cdna's entries shift it: "
           "this is their text")
for _name, _src in (("S_SETREG_B32", "S0"), ("S_SETREG_IMM32_B32", "SIMM32")):
  PCODE_FIXES[_name] = (_SETREG, "hwRegId = SIMM16.u16[5 : 0];\noffset = SIMM16.u16[10 : 6];\nsize = SIMM16.u16[15 : 11].u32 + 1U;\n"
                                 "mask = (1 << size) - 1;\nmask = (mask << offset.u32);\nmask = (mask & HwRegWriteMask(hwRegId, WAVE_STATUS.PRIV));\n"
                                 f"value = (({_src}.u32 << offset.u32) & mask.u32);\n"
                                 "value = (value | 32'U(HW_REGISTERS[hwRegId].i32 & ~mask));\nHW_REGISTERS[hwRegId] = value.b32;")
_SDWA = ("the cdna entry selects the source byte/word with SDWA_SRC0_SEL; the executor applies SDWA operand selection before the call, so "
         "S0 arrives with the selected byte (word) in its low bits, and the plain VOP1 encoding uses byte (word) 0")
CDNA_PCODE_FIXES: dict[str, tuple[str, str]] = {}  # cdna only (the same mnemonic compiles from the vendor text on rdna4)
for _t in ("FP8", "BF8"):
  CDNA_PCODE_FIXES[f"V_CVT_F32_{_t}_E32"] = (_SDWA, f"D0.f32 = {_t.lower()}_to_f32(S0[7 : 0].{_t.lower()})")
  CDNA_PCODE_FIXES[f"V_CVT_PK_F32_{_t}_E32"] = (_SDWA, f"D0[31 : 0].f32 = {_t.lower()}_to_f32(S0[7 : 0].{_t.lower()});\n"
                                                  f"D0[63 : 32].f32 = {_t.lower()}_to_f32(S0[15 : 8].{_t.lower()})")
_ADD_F64 = "the vendor entry assigns RETURN_DATA = tmp without a type, which reads as 32 bits: the pre-op value's high dword was lost"
for _name in ("DS_ADD_F64", "DS_ADD_RTN_F64", "FLAT_ATOMIC_ADD_F64", "GLOBAL_ATOMIC_ADD_F64", "BUFFER_ATOMIC_ADD_F64"):
  CDNA_PCODE_FIXES[_name] = (_ADD_F64, "tmp = MEM[ADDR].f64;\nMEM[ADDR].f64 += DATA.f64;\nRETURN_DATA.f64 = tmp")

_PERMUTE = ("the vendor text takes the lane as 32'I(addr + offset) / 4 % n, a signed division: an address >= 2**31 gives a negative lane; "
            "the lane is the unsigned byte address / 4 modulo n (\"high-order bits are ignored\"), as cdna's text has it")
def _permute(backward:bool, modulus:str, fetch_inactive:bool=False) -> str:
  """DS_PERMUTE_B32 / DS_BPERMUTE_B32 (and rdna4's DS_BPERMUTE_FI_B32, which reads the source lane whatever its EXEC bit) as the
  vendor writes them, with the lane index computed unsigned."""
  lane = f"(VGPR[i][ADDR].u32 + OFFSET.u32) / 4U % {modulus}"
  move = (f"src_lane = {lane};\ntmp[i] = VGPR[src_lane][DATA0]" if fetch_inactive else
          f"src_lane = {lane};\nif EXEC[src_lane].u1 then\ntmp[i] = VGPR[src_lane][DATA0]\nendif" if backward else
          f"if EXEC[i].u1 then\ndst_lane = {lane};\ntmp[dst_lane] = VGPR[i][DATA0]\nendif")
  return ("declare tmp : 32'B[64];\ndeclare OFFSET : 16'U;\ndeclare DATA0 : 32'U;\ndeclare VDST : 32'U;\n"
          f"for i in 0 : WAVE64 ? 63 : 31 do\ntmp[i] = 0x0\nendfor;\nfor i in 0 : WAVE64 ? 63 : 31 do\n{move}\nendfor;\n"
          "for i in 0 : WAVE64 ? 63 : 31 do\nif EXEC[i].u1 then\nVGPR[i][VDST] = tmp[i]\nendif\nendfor")
_MIX = ("the vendor text never applies the source modifiers, which the hardware applies to each input after its f16 or f32 selection: "
        "NEG_HI[i] takes |x| and NEG[i] negates (for the mixed-precision ops LLVM encodes abs in neg_hi)")
def _mix(result:str) -> str:
  """V_FMA_MIX* / gfx9's V_MAD_MIX* as the vendor writes them, with the input modifiers applied after the selection."""
  return ("declare in : 32'F[3];\ndeclare S : 32'B[3];\nfor i in 0 : 2 do\nif !OPSEL_HI.u3[i] then\nin[i] = S[i].f32\nelsif OPSEL.u3[i] then\n"
          "in[i] = f16_to_f32(S[i][31 : 16].f16)\nelse\nin[i] = f16_to_f32(S[i][15 : 0].f16)\nendif;\nif NEG_HI.u3[i] then\nin[i] = abs(in[i])\n"
          f"endif;\nif NEG.u3[i] then\nin[i] = -in[i]\nendif\nendfor;\n{result}")
# the cdna table's V_MAD_MIX* (gfx9 text: in[0] * in[1] + in[2], two roundings) are fused on gfx90a and later, the only CDNA chips
# emulated: LLVM's gfx942/gfx950 disassembler names these opcodes v_fma_mix_f32 / v_fma_mixlo_f16 / v_fma_mixhi_f16
_MAD_MIX = _MIX + "; on gfx942/gfx950 the opcode is V_FMA_MIX* (one fused rounding, as LLVM names it there), not gfx9's unfused mad"
for _op, _why in (("FMA_MIX", _MIX), ("MAD_MIX", _MAD_MIX)):
  PCODE_FIXES[f"V_{_op}_F32"] = (_why, _mix("D0[31 : 0].f32 = fma(in[0], in[1], in[2])"))
  for _half, _bits in (("LO", "15 : 0"), ("HI", "31 : 16")):
    PCODE_FIXES[f"V_{_op}{_half}_F16"] = (_why, _mix(f"D0[{_bits}].f16 = f32_to_f16(fma(in[0], in[1], in[2]))"))

# per arch, taking precedence over PCODE_FIXES (cdna: CDNA_PCODE_FIXES). rdna3 keeps its "destination lane is MOD 32 regardless of
# wave size", rdna4 takes the lane modulo the wave size
ARCH_PCODE_FIXES: dict[str, dict[str, tuple[str, str]]] = {"cdna": CDNA_PCODE_FIXES, "rdna3": {}, "rdna4": {}}
for _arch, _mod in (("rdna3", "32U"), ("rdna4", "(WAVE64 ? 64U : 32U)")):
  for _name, _back in (("DS_PERMUTE_B32", False), ("DS_BPERMUTE_B32", True)):
    ARCH_PCODE_FIXES[_arch][_name] = (_PERMUTE, _permute(_back, _mod))
ARCH_PCODE_FIXES["rdna4"]["DS_BPERMUTE_FI_B32"] = (_PERMUTE, _permute(True, "(WAVE64 ? 64U : 32U)", fetch_inactive=True))

# ops whose vendor text compiles (the executor uses the op's operand metadata) but never runs: the executor performs the instruction
EXECUTOR_RUN = dict.fromkeys(("GLOBAL_LOAD_BLOCK", "GLOBAL_STORE_BLOCK", "SCRATCH_LOAD_BLOCK", "SCRATCH_STORE_BLOCK"),
  "the vendor text indexes VGPRs by the address (it treats ADDR as a register number); the executor moves dword i between "
  "address + 4i and VGPR vdst/vsrc + i for each set bit i of M0 (emu.amd.exec_vmem.VmemStep._block)")

def fixed_pcode(op, arch:str="") -> tuple[str, str] | None:
  """(reason, corrected pcode) for an opcode of an arch whose vendor pcode is replaced, else None."""
  return ARCH_PCODE_FIXES.get(arch, {}).get(op.name) or PCODE_FIXES.get(op.name)

def lookup(arch:str, op, target:str="") -> CompiledOp | None:
  """The executor-owned or hand-written op for an opcode, or None when its (possibly corrected) pcode is compiled. target: the
  arch name compile_op was given (gfx942 and gfx950 differ in their MFMA fp8 formats)."""
  if op.name in EXECUTOR_OWNED: return CompiledOp(arch, op.name, "executor", None, override=EXECUTOR_OWNED[op.name])
  from emu.pcode import handwritten
  return handwritten.lookup(arch, op, target)

def extra_ops(arch:str) -> list:
  """Opcodes with an override but no pcode entry: cdna's V_ACCVGPR_* moves (executor-owned), gfx942's XF32 MFMAs and gfx950's
  V_MFMA_SCALE_* (VOP3PX2, hand-written)."""
  return _EXTRA_OPS.get(arch, list)()

def _cdna_extra_ops() -> list:
  from tinygrad.runtime.autogen.amd.cdna.enum import VOP1Op, VOP3Op, VOP3POp, VOP3PX2Op
  return [VOP3POp.V_ACCVGPR_READ, VOP3POp.V_ACCVGPR_WRITE, VOP1Op.V_ACCVGPR_MOV_B32_E32, VOP3Op.V_ACCVGPR_MOV_B32_E64,
          VOP3POp.V_MFMA_F32_16X16X8_XF32, VOP3POp.V_MFMA_F32_32X32X4_XF32, *VOP3PX2Op]

_EXTRA_OPS = {"cdna": _cdna_extra_ops}   # per ISA family
