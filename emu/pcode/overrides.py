"""The override table: opcodes whose vendor pcode is prose or wrong, with the reason for each.

`EXECUTOR_OWNED`: control/wait/barrier ops whose behaviour is the executor's (they come back as kind 'executor').
Each entry is tested in tests/unit/pcode/test_overrides.py."""
from __future__ import annotations
from emu.pcode.abi import CompiledOp

EXECUTOR_OWNED = {
  "S_WAITCNT": "waits on memory counters: timing, owned by the executor", "S_WAITCNT_VSCNT": "memory counter wait (executor)",
  "S_WAITCNT_VMCNT": "memory counter wait (executor)", "S_WAITCNT_LGKMCNT": "memory counter wait (executor)",
  "S_WAITCNT_EXPCNT": "memory counter wait (executor)", "S_WAIT_LOADCNT": "memory counter wait (executor)",
  "S_WAIT_STORECNT": "memory counter wait (executor)", "S_WAIT_DSCNT": "memory counter wait (executor)",
  "S_WAIT_KMCNT": "memory counter wait (executor)",
  "S_WAIT_SAMPLECNT": "memory counter wait (executor)", "S_WAIT_BVHCNT": "memory counter wait (executor)",
  "S_WAIT_EXPCNT": "memory counter wait (executor)",
  "S_WAIT_LOADCNT_DSCNT": "memory counter wait (executor)", "S_WAIT_STORECNT_DSCNT": "memory counter wait (executor)",
  "S_WAIT_ALU": "dependency wait (executor)", "S_WAIT_IDLE": "wait (executor)", "S_WAIT_EVENT": "wait (executor)",
  "S_BARRIER": "workgroup barrier (executor/dispatcher)", "S_BARRIER_WAIT": "workgroup barrier (executor)",
  "S_BARRIER_SIGNAL": "workgroup barrier (executor)", "S_BARRIER_SIGNAL_ISFIRST": "workgroup barrier (executor)",
  "S_ENDPGM": "ends the wave (executor)", "S_ENDPGM_SAVED": "ends the wave (executor)", "S_ENDPGM_ORDERED_PS_DONE": "ends the wave (executor)",
  "S_NOP": "no operation; timing only", "S_DELAY_ALU": "scheduling hint; timing only (prose pcode)", "S_SLEEP": "timing only (prose pcode)",
  "S_SLEEP_VAR": "timing only", "S_SETPRIO": "scheduling priority; timing only", "S_CODE_END": "padding, never executed",
  "S_SENDMSG": "message to the SPI/host (executor)", "S_SENDMSGHALT": "message (executor)", "S_SENDMSG_RTN_B32": "message (executor)",
  "S_SENDMSG_RTN_B64": "message (executor)", "S_TRAP": "trap entry (executor)", "S_RFE_B64": "trap return (executor)",
  "S_ICACHE_INV": "cache control",
  "S_DCACHE_INV": "cache control", "S_GL1_INV": "cache control", "S_TTRACEDATA": "trace (executor)", "S_TTRACEDATA_IMM": "trace (executor)",
  "S_CLAUSE": "scheduling hint", "S_SETHALT": "halts the wave (executor)", "S_WAKEUP": "wave wakeup (executor)", "S_INST_PREFETCH": "prefetch hint",
  "S_ROUND_MODE": "mode register write (executor)", "S_DENORM_MODE": "mode register write (executor)", "S_VERSION": "no operation",
  "S_DCACHE_WB": "cache control", "S_DCACHE_INV_VOL": "cache control", "S_DCACHE_WB_VOL": "cache control", "BUFFER_WBL2": "cache control",
  "BUFFER_INV": "cache control", "BUFFER_GL0_INV": "cache control", "BUFFER_GL1_INV": "cache control", "BUFFER_WBINVL1": "cache control",
  "BUFFER_WBINVL1_VOL": "cache control", "GLOBAL_INV": "cache control", "GLOBAL_WB": "cache control", "GLOBAL_WBINV": "cache control",
  "S_CBRANCH_CDBGSYS": "debugger branch (executor)", "S_CBRANCH_CDBGUSER": "debugger branch (executor)",
  "S_CBRANCH_CDBGSYS_OR_USER": "debugger branch (executor)", "S_CBRANCH_CDBGSYS_AND_USER": "debugger branch (executor)",
}

def lookup(arch:str, op) -> CompiledOp | None:
  """The override for an opcode, or None when its pcode is used."""
  if op.name in EXECUTOR_OWNED: return CompiledOp(arch, op.name, "executor", None, override=EXECUTOR_OWNED[op.name])
  return None

def extra_ops(arch:str) -> list:
  """Opcodes with an override but no pcode entry (none yet)."""
  return []
