"""The override table: opcodes whose vendor pcode is prose, incomplete or wrong, with the reason for each.

Three kinds of entry, looked up by mnemonic (the same name on every arch unless the table says otherwise):
- `EXECUTOR_OWNED`: control/wait/barrier ops and ops whose pcode is prose about hardware the executor owns (cross-lane
  swizzles, GS registers, buffer formats): they come back as kind 'executor' with `fn is None`.
- `PCODE_FIXES` (and `CDNA_PCODE_FIXES`, cdna only): corrected pcode, compiled by the normal compiler (the vendor entry leaves a
  table empty or names an operand the executor never provides).
- `HANDWRITTEN` (and `HANDWRITTEN_RDNA4`): semantics written in Python in `emu.pcode.handwritten` (IEEE division/trig helpers,
  WMMA in each arch's register layout).
Every `PCODE_FIXES` and `HANDWRITTEN` entry is tested in tests/unit/pcode/test_overrides.py; the rdna4/cdna-only entries in
tests/unit/pcode/test_rdna4_cdna.py."""
from __future__ import annotations
from emu.pcode.abi import CompiledOp

_COUNTER_WAIT = "memory counter wait (executor)"
_CACHE = "cache control"
_FORMAT = "converts through the buffer resource's data format, which only the executor decodes (pcode: ConvertFromFormat/ConvertToFormat)"
_PREFETCH = "prefetch hint (MODE.SCALAR_PREFETCH_EN; no architectural effect)"
_BVH = "ray-tracing traversal stack (the pcode calls DECODE_ADDR/ENCODE_ADDR, which the ISA does not define)"
_CSP = "fork/join on the wave's control-stack pointer (WAVE_MODE.CSP) and a stack in SGPRs: executor control flow"
EXECUTOR_OWNED = {
  "S_WAITCNT": "waits on memory counters: timing, owned by the executor", "S_WAITCNT_VSCNT": _COUNTER_WAIT, "S_WAITCNT_VMCNT": _COUNTER_WAIT,
  "S_WAITCNT_LGKMCNT": _COUNTER_WAIT, "S_WAITCNT_EXPCNT": _COUNTER_WAIT, "S_WAIT_LOADCNT": _COUNTER_WAIT, "S_WAIT_STORECNT": _COUNTER_WAIT,
  "S_WAIT_DSCNT": _COUNTER_WAIT, "S_WAIT_KMCNT": _COUNTER_WAIT, "S_WAIT_SAMPLECNT": _COUNTER_WAIT, "S_WAIT_BVHCNT": _COUNTER_WAIT,
  "S_WAIT_EXPCNT": _COUNTER_WAIT, "S_WAIT_LOADCNT_DSCNT": _COUNTER_WAIT, "S_WAIT_STORECNT_DSCNT": _COUNTER_WAIT,
  "S_WAIT_ALU": "dependency wait (executor)", "S_WAIT_IDLE": "wait (executor)", "S_WAIT_EVENT": "wait (executor)",
  "S_BARRIER": "workgroup barrier (executor/dispatcher)", "S_BARRIER_WAIT": "workgroup barrier (executor)",
  "S_BARRIER_SIGNAL": "workgroup barrier (executor)", "S_BARRIER_SIGNAL_ISFIRST": "workgroup barrier (executor)",
  "S_ENDPGM": "ends the wave (executor)", "S_ENDPGM_SAVED": "ends the wave (executor)", "S_ENDPGM_ORDERED_PS_DONE": "ends the wave (executor)",
  "S_NOP": "no operation; timing only", "S_DELAY_ALU": "scheduling hint; timing only (prose pcode)", "S_SLEEP": "timing only (prose pcode)",
  "S_SLEEP_VAR": "timing only", "S_SETPRIO": "scheduling priority; timing only", "S_CODE_END": "padding, never executed",
  "S_SENDMSG": "message to the SPI/host (executor)", "S_SENDMSGHALT": "message (executor)", "S_SENDMSG_RTN_B32": "message (executor)",
  "S_SENDMSG_RTN_B64": "message (executor)", "S_TRAP": "trap entry (executor)", "S_RFE_B64": "trap return (executor)",
  "S_ICACHE_INV": _CACHE, "S_DCACHE_INV": _CACHE, "S_GL1_INV": _CACHE, "S_TTRACEDATA": "trace (executor)", "S_TTRACEDATA_IMM": "trace (executor)",
  "S_CLAUSE": "scheduling hint", "S_SETHALT": "halts the wave (executor)", "S_WAKEUP": "wave wakeup (executor)", "S_INST_PREFETCH": "prefetch hint",
  "S_ROUND_MODE": "mode register write (executor)", "S_DENORM_MODE": "mode register write (executor)", "S_VERSION": "no operation",
  "S_DCACHE_WB": _CACHE, "S_DCACHE_INV_VOL": _CACHE, "S_DCACHE_WB_VOL": _CACHE, "BUFFER_WBL2": _CACHE, "BUFFER_INV": _CACHE,
  "BUFFER_GL0_INV": _CACHE, "BUFFER_GL1_INV": _CACHE, "BUFFER_WBINVL1": _CACHE, "BUFFER_WBINVL1_VOL": _CACHE, "GLOBAL_INV": _CACHE,
  "GLOBAL_WB": _CACHE, "GLOBAL_WBINV": _CACHE,
  "S_CBRANCH_CDBGSYS": "debugger branch (executor)", "S_CBRANCH_CDBGUSER": "debugger branch (executor)",
  "S_CBRANCH_CDBGSYS_OR_USER": "debugger branch (executor)", "S_CBRANCH_CDBGSYS_AND_USER": "debugger branch (executor)",
  # prose pcode about hardware outside one lane's registers
  "DS_SWIZZLE_B32": "cross-lane swizzle; the pcode is C-like prose over thread_in/thread_out (executor moves data between lanes)",
  "DS_ADD_GS_REG_RTN": "geometry-shader ordered-count registers (graphics only; prose pcode)",
  "DS_SUB_GS_REG_RTN": "geometry-shader ordered-count registers (graphics only; prose pcode)",
  "DS_BVH_STACK_RTN_B32": "ray-tracing traversal stack (prose pcode with DECODE_ADDR/DATA_VALID functions)",
  "DS_APPEND": "wave-wide LDS/GDS counter at M0.base, incremented by the active-lane count (prose pcode; executor)",
  "DS_CONSUME": "wave-wide LDS/GDS counter at M0.base, decremented by the active-lane count (prose pcode; executor)",
  "DS_CONDXCHG32_RTN_B64": "GDS conditional exchange; the pcode redeclares its own operands (ADDR = S0, RETURN_DATA as an array)",
  "LDS_DIRECT_LOAD": "LDS-direct parameter load (the pcode is a field list; executor)", "IMAGE_GET_LOD": "texture sampling (prose pcode)",
  **{f"{p}_{d}FORMAT_{c}": _FORMAT for p in ("BUFFER_LOAD", "BUFFER_STORE", "TBUFFER_LOAD", "TBUFFER_STORE")
     for d in ("", "D16_", "D16_HI_") for c in ("X", "XY", "XYZ", "XYZW")},
  **{f"{p}_FORMAT_{d}{c}": _FORMAT for p in ("BUFFER_LOAD", "BUFFER_STORE", "TBUFFER_LOAD", "TBUFFER_STORE")  # cdna spelling
     for d in ("D16_", "D16_HI_") for c in ("X", "XY", "XYZ", "XYZW")},
  "S_PREFETCH_INST": _PREFETCH, "S_PREFETCH_INST_PC_REL": _PREFETCH, "S_PREFETCH_DATA": _PREFETCH, "S_BUFFER_PREFETCH_DATA": _PREFETCH,
  "S_PREFETCH_DATA_PC_REL": _PREFETCH,
  "GLOBAL_ATOMIC_ORDERED_ADD_B64": "geometry-shader ordered append (graphics only; the pcode names the GS register VGT_GS_MAX_WAVE_ID)",
  "DS_BVH_STACK_PUSH4_POP1_RTN_B32": _BVH, "DS_BVH_STACK_PUSH8_POP1_RTN_B32": _BVH, "DS_BVH_STACK_PUSH8_POP2_RTN_B64": _BVH,
  "S_GET_BARRIER_STATE": "named-barrier state (BARRIER_STATE records the dispatcher owns)",
  "S_ALLOC_VGPR": "dynamic VGPR reallocation (waits for idle, resizes the wave's register file: executor)",
  "S_CBRANCH_JOIN": _CSP, "S_CBRANCH_G_FORK": _CSP, "S_CBRANCH_I_FORK": _CSP,
  "S_SET_GPR_IDX_ON": "enables VGPR indexing through M0 (WAVE_MODE.GPR_IDX_EN): changes how the executor reads operands",
  "S_SET_GPR_IDX_OFF": "disables VGPR indexing (WAVE_MODE.GPR_IDX_EN): executor operand mode",
}

# name -> (reason, corrected pcode)
PCODE_FIXES = {
  "V_CVT_OFF_F32_I4_E32": ("the vendor entry declares CVT_OFF_TABLE but never fills it; the table is i4 / 16 (0, 0.0625 ... 0.4375, -0.5 ... "
                           "-0.0625)", "D0.f32 = 32'F(S0.i4.i32) * 0.0625F"),
  "GLOBAL_LOAD_ADDTID_B32": ("ADDR is the effective address the executor computes (SGPR base + offset + laneId * 4); the pcode names the "
                             "SGPR pair SGPR_ADDR", "RETURN_DATA.u32 = MEM[ADDR].u32"),
  "GLOBAL_STORE_ADDTID_B32": ("ADDR is the effective address the executor computes (SGPR base + offset + laneId * 4); the pcode names the "
                              "SGPR pair SGPR_ADDR", "MEM[ADDR].u32 = DATA.u32"),
}
PCODE_FIXES["V_CVT_OFF_F32_I4_E64"] = PCODE_FIXES["V_CVT_OFF_F32_I4_E32"]
_ADDTID = "the vendor entry `declare`s OFFSET0 and OFFSET1, which compiles them as zeroed locals instead of the instruction's offset fields"
_ADDTID_ADDR = "MEM[32'I(OFFSET.u32 + M0[15 : 0].u32) + laneID.i32 * 4].u32"   # OFFSET = { OFFSET1, OFFSET0 }
for _name in ("DS_LOAD_ADDTID_B32", "DS_READ_ADDTID_B32"): PCODE_FIXES[_name] = (_ADDTID, f"RETURN_DATA.u32 = {_ADDTID_ADDR}")
for _name in ("DS_STORE_ADDTID_B32", "DS_WRITE_ADDTID_B32"): PCODE_FIXES[_name] = (_ADDTID, f"{_ADDTID_ADDR} = DATA0.u32")
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
_RNDNE = "the vendor's floor(x + 0.5) rounds x + 0.5 first (0.49999997 -> 1.0); the instruction rounds to the nearest even integer exactly"
for _w in ("F16", "F32", "F64"):
  for _name in (f"V_RNDNE_{_w}_E32", f"V_RNDNE_{_w}_E64", f"S_RNDNE_{_w}"):
    PCODE_FIXES[_name] = (_RNDNE, f"D0.{_w.lower()} = rint(S0.{_w.lower()})")

def fixed_pcode(op, arch:str="") -> tuple[str, str] | None:
  """(reason, corrected pcode) for an opcode of an arch whose vendor pcode is replaced, else None."""
  return (CDNA_PCODE_FIXES.get(op.name) if arch == "cdna" else None) or PCODE_FIXES.get(op.name)

def lookup(arch:str, op, target:str="") -> CompiledOp | None:
  """The executor-owned or hand-written op for an opcode, or None when its (possibly corrected) pcode is compiled. target: the
  arch name compile_op was given (gfx942 and gfx950 differ in their MFMA fp8 formats)."""
  if op.name in EXECUTOR_OWNED: return CompiledOp(arch, op.name, "executor", None, override=EXECUTOR_OWNED[op.name])
  from emu.pcode import handwritten
  return handwritten.lookup(arch, op, target)

def extra_ops(arch:str) -> list:
  """Opcodes with a hand-written override but no pcode entry."""
  from emu.pcode import handwritten
  return handwritten.extra_ops(arch)
