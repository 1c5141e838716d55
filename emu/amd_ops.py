"""What the vendor's tables do not say about AMD instructions, written once: the executor-owned opcodes (what each does in
the emulator and why its pseudocode does not run), which counters each wait waits on and where its immediate holds each
count, the instructions the instruction buffer consumes without issuing them, and how long a pause stalls. This module imports
nothing, so every layer reads it: the pcode overrides, the executors, the step builder, the timing model, the SQTT layouts,
the fuzzers' reference executor and `python -m emu.amd.card` (emu.amd.facts joins it with the derived facts per opcode).
Counter layouts from LLVM's AMDGPU waitcnt encoding (AMDGPUWaitcnt.cpp: 6-bit load, store, sample and DS counts, 3-bit BVH,
5-bit scalar-memory; the combined gfx12 waits hold load or store count in bits 13:8 and DS count in bits 5:0)."""
from __future__ import annotations
from typing import NamedTuple

# counters by the timing model's names: 'vm' vector-memory loads (RDNA4: loads, samples and BVH), 'vs' vector stores, 'lgkm'
# LDS + scalar memory + messages (before RDNA4), 'ds' LDS and 'km' scalar memory (RDNA4), 'va' VALU results not yet written
# to VGPRs (s_waitcnt_depctr's va_vdst field, bits 15:12; LLVM AMDGPUBaseInfo's DepCtr encoding). None: a counter the model
# does not keep (exports; depctr's other dependency counters). Each field is (counter, low bit, width) of the 16-bit immediate.
COUNTER_WAITS: dict[str, tuple[tuple[str | None, int, int], ...]] = {
  "S_WAITCNT_VMCNT": (("vm", 0, 6),), "S_WAITCNT_VSCNT": (("vs", 0, 6),), "S_WAITCNT_LGKMCNT": (("lgkm", 0, 6),),
  "S_WAITCNT_EXPCNT": ((None, 0, 3),), "S_WAITCNT_DEPCTR": (("va", 12, 4), (None, 0, 12)),
  "S_WAIT_LOADCNT": (("vm", 0, 6),), "S_WAIT_SAMPLECNT": (("vm", 0, 6),), "S_WAIT_BVHCNT": (("vm", 0, 3),),
  "S_WAIT_STORECNT": (("vs", 0, 6),), "S_WAIT_DSCNT": (("ds", 0, 6),), "S_WAIT_KMCNT": (("km", 0, 5),), "S_WAIT_EXPCNT": ((None, 0, 3),),
  "S_WAIT_LOADCNT_DSCNT": (("vm", 8, 6), ("ds", 0, 6)), "S_WAIT_STORECNT_DSCNT": (("vs", 8, 6), ("ds", 0, 6)),
}
PACKED_WAIT = "S_WAITCNT"   # several counters packed per arch (emu.amd.arch.ArchSpec.waitcnt)
OTHER_WAITS = {"S_WAIT_IDLE", "S_WAIT_EVENT"}   # wait for the wave's own outstanding work or an event: nothing outstanding here
UNISSUED = {"S_DELAY_ALU", "S_WAIT_ALU", "S_BARRIER_WAIT"}   # consumed by the instruction buffer, never issued (nor traced)
SLEEP_UNIT = 64             # s_sleep n: n * 64 cycles (ISA)
PAUSES = {"S_NOP": lambda simm: (simm & 0xf) + 1, "S_SLEEP": lambda simm: (simm & 0x7f) * SLEEP_UNIT}   # stall cycles per immediate


def counts(name:str, simm16:int) -> tuple[tuple[str, int], ...]:
  """The (counter, most outstanding) limits a single-purpose wait's immediate encodes, for the counters the model keeps."""
  return tuple((counter, (simm16 >> lo) & ((1 << width) - 1)) for counter, lo, width in COUNTER_WAITS[name] if counter)


class Owned(NamedTuple):
  """An executor-owned opcode: what the executor does with it and why the vendor pseudocode does not run.
  effect: 'none' (no architectural effect here: waits, hints, coherent-memory cache control), 'end' (ends the wave), 'halt'
  (ends it when SIMM16[0] is set), 'barrier' (the wave parks at the workgroup barrier), 'trap', 'message' (a message whose reply
  lands in SDST), 'mode' (a mode-register write), 'step' (its own executor step: cross-lane moves, LDS counters, accumulation
  registers) or 'illegal' (hardware the emulator does not model: an illegal instruction naming it, never a silent no-op)."""
  effect: str
  reason: str

CACHE = "cache control (emulated memory is coherent: no effect)"
PREFETCH = "prefetch hint (MODE.SCALAR_PREFETCH_EN; no architectural effect)"
_FORMAT = "converts through the buffer resource's data format, which only the executor decodes (pcode: ConvertFromFormat/ConvertToFormat)"
_BVH = "ray-tracing traversal stack (the pcode calls DECODE_ADDR/ENCODE_ADDR, which the ISA does not define)"
_CSP = "fork/join on the wave's control-stack pointer (WAVE_MODE.CSP) and a stack in SGPRs: executor control flow"
_GS = "geometry-shader ordered-count registers (graphics only; prose pcode)"
_DEBUG = "debugger branch: taken only when a debugger set the wave's conditional-debug bits; none is attached, so never taken"
_ACC = "accumulation-register move; the wheel has no pcode for it (executor: emu.amd.cdna.AccMoveStep)"
_ENDS = "ends the wave"
_BARRIER = "workgroup barrier (executor/dispatcher)"
_BUFFERS = ("BUFFER_LOAD", "BUFFER_STORE", "TBUFFER_LOAD", "TBUFFER_STORE")

def _none(*names:str, why:str) -> dict[str, Owned]: return {n: Owned("none", why) for n in names}
def _illegal(*names:str, why:str) -> dict[str, Owned]: return {n: Owned("illegal", why) for n in names}

OWNED: dict[str, Owned] = {
  PACKED_WAIT: Owned("none", "waits on memory counters: timing, owned by the executor (emulated memory completes at once)"),
  **_none(*COUNTER_WAITS, why="memory counter wait (emulated memory completes at once; timing)"),
  **_none(*OTHER_WAITS, why="waits for the wave's outstanding work or an event (nothing is outstanding in the emulator)"),
  "S_WAIT_ALU": Owned("none", "dependency wait (timing)"), "S_DELAY_ALU": Owned("none", "scheduling hint; timing only (prose pcode)"),
  "S_BARRIER_WAIT": Owned("none", "the second half of RDNA4's split barrier: the wave already parked at s_barrier_signal until "
                                  "its workgroup arrived, so the wait finds it released (timing sees both)"),
  "S_NOP": Owned("none", "no operation; timing only"), "S_SLEEP": Owned("none", "timing only (prose pcode)"),
  **_none("S_SLEEP_VAR", "S_SETPRIO", "S_CLAUSE", "S_SET_INST_PREFETCH_DISTANCE", "S_INCPERFLEVEL", "S_DECPERFLEVEL", "S_SETKILL",
          why="scheduling, priority or performance hint; timing only (no pcode or prose pcode)"),
  "S_VERSION": Owned("none", "no operation"),
  "DS_NOP": Owned("none", "no operation (the wheel has no pseudocode for it)"),
  "S_WAKEUP": Owned("none", "wakes waves sleeping in s_sleep: timing only"),
  "S_SENDMSG": Owned("none", "message to the SPI/host (VGPR deallocation, interrupts): no effect on compute results"),
  **_none("S_TTRACEDATA", "S_TTRACEDATA_IMM", why="writes into the thread trace, which the timing model's SQTT stream produces"),
  **_none("S_CBRANCH_CDBGSYS", "S_CBRANCH_CDBGUSER", "S_CBRANCH_CDBGSYS_OR_USER", "S_CBRANCH_CDBGSYS_AND_USER", why=_DEBUG),
  **_none("S_ICACHE_INV", "S_DCACHE_INV", "S_GL1_INV", "S_DCACHE_WB", "S_DCACHE_INV_VOL", "S_DCACHE_WB_VOL", "BUFFER_WBL2", "BUFFER_INV",
          "BUFFER_GL0_INV", "BUFFER_GL1_INV", "GLOBAL_INV", "GLOBAL_WB", "GLOBAL_WBINV", why=CACHE),
  **_none("S_PREFETCH_INST", "S_PREFETCH_INST_PC_REL", "S_PREFETCH_DATA", "S_BUFFER_PREFETCH_DATA", "S_PREFETCH_DATA_PC_REL", why=PREFETCH),
  **{n: Owned("end", _ENDS) for n in ("S_ENDPGM", "S_ENDPGM_SAVED", "S_ENDPGM_ORDERED_PS_DONE")},
  "S_SENDMSGHALT": Owned("end", "message, then halt: ends the wave"),
  "S_SETHALT": Owned("halt", "halts the wave with SIMM16[0] = 1 (no debugger resumes it: it ends); SIMM16[0] = 0 resumes, a no-op"),
  "S_BARRIER": Owned("barrier", _BARRIER), "S_BARRIER_SIGNAL": Owned("barrier", "RDNA4's barrier arrive: " + _BARRIER),
  "S_TRAP": Owned("trap", "trap entry: a GPUTrapFault naming the trap id (no trap handler runs)"),
  **{n: Owned("message", "message whose reply (doorbell, realtime clock ...) lands in SDST") for n in ("S_SENDMSG_RTN_B32", "S_SENDMSG_RTN_B64")},
  **{n: Owned("mode", "mode register write (round and denormal modes)") for n in ("S_ROUND_MODE", "S_DENORM_MODE")},
  "DS_SWIZZLE_B32": Owned("step", "cross-lane swizzle; the pcode is C-like prose over thread_in/thread_out (executor moves data between lanes)"),
  "DS_APPEND": Owned("step", "wave-wide LDS/GDS counter at M0.base, incremented by the active-lane count (prose pcode; executor)"),
  "DS_CONSUME": Owned("step", "wave-wide LDS/GDS counter at M0.base, decremented by the active-lane count (prose pcode; executor)"),
  **{n: Owned("step", _ACC) for n in ("V_ACCVGPR_READ", "V_ACCVGPR_WRITE", "V_ACCVGPR_MOV_B32_E32", "V_ACCVGPR_MOV_B32_E64")},
  "S_BARRIER_SIGNAL_ISFIRST": Owned("illegal", "named-barrier arrive that reports the first arrival (not modelled)"),
  "S_CODE_END": Owned("illegal", "padding after a program, never executed"),
  "S_RFE_B64": Owned("illegal", "trap return (no trap handler runs)"),
  **_illegal("DS_ADD_GS_REG_RTN", "DS_SUB_GS_REG_RTN", why=_GS),
  "DS_BVH_STACK_RTN_B32": Owned("illegal", "ray-tracing traversal stack (prose pcode with DECODE_ADDR/DATA_VALID functions)"),
  **_illegal("DS_BVH_STACK_PUSH4_POP1_RTN_B32", "DS_BVH_STACK_PUSH8_POP1_RTN_B32", "DS_BVH_STACK_PUSH8_POP2_RTN_B64", why=_BVH),
  "LDS_DIRECT_LOAD": Owned("illegal", "LDS-direct parameter load (the pcode is a field list)"),
  "IMAGE_GET_LOD": Owned("illegal", "texture sampling (prose pcode)"),
  **_illegal(*(f"{p}_{d}FORMAT_{c}" for p in _BUFFERS for d in ("", "D16_", "D16_HI_") for c in ("X", "XY", "XYZ", "XYZW")
               if d != "D16_HI_" or p.startswith("BUFFER") and c == "X"), why=_FORMAT),   # D16_HI: buffer X only
  **_illegal(*(f"{p}_FORMAT_{d}{c}" for p in _BUFFERS for d in ("D16_", "D16_HI_") for c in ("X", "XY", "XYZ", "XYZW")   # cdna spelling
               if d != "D16_HI_" or p.startswith("BUFFER") and c == "X"), why=_FORMAT),
  "GLOBAL_ATOMIC_ORDERED_ADD_B64": Owned("illegal", "geometry-shader ordered append (graphics only; the pcode names the GS register "
                                                    "VGT_GS_MAX_WAVE_ID)"),
  "S_GET_BARRIER_STATE": Owned("illegal", "named-barrier state (BARRIER_STATE records the dispatcher owns)"),
  "S_ALLOC_VGPR": Owned("illegal", "dynamic VGPR reallocation (waits for idle, resizes the wave's register file)"),
  **_illegal("S_CBRANCH_JOIN", "S_CBRANCH_G_FORK", "S_CBRANCH_I_FORK", why=_CSP),
  "S_SET_GPR_IDX_ON": Owned("illegal", "enables VGPR indexing through M0 (WAVE_MODE.GPR_IDX_EN): changes how the executor reads operands"),
  "S_SET_GPR_IDX_OFF": Owned("illegal", "disables VGPR indexing (WAVE_MODE.GPR_IDX_EN): executor operand mode"),
}
EFFECTS = ("none", "end", "halt", "barrier", "trap", "message", "mode", "step", "illegal")


def effect(name:str) -> str | None:
  """What the executor does with opcode `name` (Owned.effect), None where its semantics are the vendor's (or a fixed) pcode."""
  return o.effect if (o := OWNED.get(name)) is not None else None
