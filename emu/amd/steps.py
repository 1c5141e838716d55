"""Instruction fetch and compilation: PC -> `Step`, decoded once per PC per dispatch and compiled once per instruction bytes."""
from __future__ import annotations
from emu.amd.api import GPUIllegalInstruction, GPUMemoryFault
from emu.amd.arch import ArchSpec
from emu.amd.decode import Instr, decode
from emu.amd.exec_salu import ControlStep, MessageStep, SaluStep, SmemStep, ENDS, NO_EFFECT
from emu.amd.exec_valu import ValuStep, VopdStep
from emu.amd.exec_vmem import VmemStep
from emu.amd.memory import MemoryMap
from emu.amd.semantics import get_op
from emu.amd.step import Step

SCALAR = ("SOP1", "SOP2", "SOPC", "SOPK", "SOPP")
VALU = ("VOP1", "VOP2", "VOPC", "VOP3", "VOP3SD", "VOP3P", "VINTERP")
VMEM = ("DS", "GLOBAL", "FLAT", "SCRATCH")
CONTROL = ENDS | NO_EFFECT | {"S_BARRIER", "S_TRAP"}
MESSAGES = ("S_SENDMSG_RTN_B32", "S_SENDMSG_RTN_B64")

def _build(instr:Instr, spec:ArchSpec) -> Step:
  fmt = instr.fmt
  if fmt in SCALAR:
    if instr.op.name in CONTROL: return ControlStep(instr, spec)
    if instr.op.name in MESSAGES: return MessageStep(instr, spec)
    op = get_op(spec.family, instr.op, raw=instr.raw)
    return ControlStep(instr, spec) if op.kind == "executor" else SaluStep(instr, spec, op)
  if fmt == "SMEM": return SmemStep(instr, spec)
  if fmt in VALU: return ValuStep(instr, spec)
  if fmt == "VOPD": return VopdStep(instr, spec)
  if fmt in VMEM: return VmemStep(instr, spec)
  raise GPUIllegalInstruction(0, instr.raw, f"{fmt} instructions ({instr.name}) are not implemented")

_steps: dict[tuple[str, bytes], Step] = {}

def compile_step(instr:Instr, spec:ArchSpec, pc:int) -> Step:
  """The Step for a decoded instruction (cached on its bytes); failures become GPUIllegalInstruction at `pc`."""
  if (s := _steps.get(key := (spec.family, instr.raw))) is not None: return s
  try: s = _build(instr, spec)
  except GPUIllegalInstruction as e: raise GPUIllegalInstruction(pc, instr.raw, e.reason) from None
  except (KeyError, ValueError, AttributeError, TypeError) as e:
    raise GPUIllegalInstruction(pc, instr.raw, f"{instr.name}: cannot execute ({type(e).__name__}: {e})") from e
  _steps[key] = s
  return s

class Program:
  """The code one dispatch runs: steps by PC, fetched from mapped memory on first use."""
  def __init__(self, spec:ArchSpec, mem:MemoryMap):
    self.spec, self.mem, self.steps = spec, mem, {}

  def at(self, pc:int) -> Step:
    if (s := self.steps.get(pc)) is None: s = self.steps[pc] = self._load(pc)
    return s

  def _load(self, pc:int) -> Step:
    if (m := self.mem.find(pc, 4)) is None: raise GPUMemoryFault(pc, False, pc=pc, detail="instruction fetch")
    data = bytes(m.view[pc - m.addr: min(pc - m.addr + 16, m.size)])
    return compile_step(decode(data, self.spec, pc), self.spec, pc)
