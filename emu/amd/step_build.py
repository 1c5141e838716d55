"""Instruction -> `Step`: which executor runs a decoded instruction, built once per instruction bytes per process (and kept on disk
for the next one by emu.amd.step_cache). Region forming and program fetch (emu.amd.steps, emu.amd.regions) sit above this."""
from __future__ import annotations
from emu import amd_ops
from emu.amd.api import GPUIllegalInstruction
from emu.amd.arch import ArchSpec
from emu.amd.decode import Instr, decode
from emu.amd.exec_salu import ControlStep, MessageStep, ModeStep, SaluStep, SmemStep
from emu.amd.exec_ds import DsCounterStep, DsSwizzleStep
from emu.amd.cdna import AccMoveStep, MubufStep
from emu.amd.exec_valu import ValuStep, VopdStep
from emu.amd.exec_vmem import VmemStep
from emu.amd.operands import register_overrun
from emu.amd.semantics import get_op
from emu.amd.step import Step
from emu.amd.step_cache import STEP_CACHE
from emu.common.hostparts import charged

SCALAR = ("SOP1", "SOP2", "SOPC", "SOPK", "SOPP")
VALU = ("VOP1", "VOP2", "VOPC", "VOP3", "VOP3SD", "VOP3P", "VINTERP")
VMEM = ("DS", "GLOBAL", "FLAT", "SCRATCH")
# executor-owned ops (emu.amd_ops.OWNED) by what the executor does with them: effect 'step' ops have their own Step (by name),
# messages and mode writes theirs; every other one is a ControlStep, which knows the ends, barriers, traps and no-ops (waits,
# hints, cache invalidation, prefetch) and raises GPUIllegalInstruction for the ops the emulator does not model
EXECUTOR_STEPS = {"DS_SWIZZLE_B32": DsSwizzleStep, "DS_APPEND": DsCounterStep, "DS_CONSUME": DsCounterStep, "V_ACCVGPR_READ": AccMoveStep,
                  "V_ACCVGPR_WRITE": AccMoveStep, "V_ACCVGPR_MOV_B32_E32": AccMoveStep, "V_ACCVGPR_MOV_B32_E64": AccMoveStep}
EFFECT_STEPS = {"message": MessageStep, "mode": ModeStep}

def _build(instr:Instr, spec:ArchSpec) -> Step:
  fmt, name = instr.fmt, instr.name.upper()
  if fmt == "VOPD": return VopdStep(instr, spec)
  if (owned := amd_ops.effect(name)) is not None:
    return EXECUTOR_STEPS[name](instr, spec) if owned == "step" else EFFECT_STEPS.get(owned, ControlStep)(instr, spec)
  op = get_op(spec.name, instr.op, raw=instr.raw)
  if fmt == "MUBUF" and not spec.buffer_ops:
    raise GPUIllegalInstruction(0, instr.raw, f"{instr.name}: {spec.name} buffer instructions are not emulated")
  if fmt == "MUBUF": return MubufStep(instr, spec)
  if fmt in SCALAR: return SaluStep(instr, spec, op)
  if fmt == "SMEM": return SmemStep(instr, spec)
  if fmt in VALU: return ValuStep(instr, spec)
  if fmt in VMEM: return VmemStep(instr, spec)
  raise GPUIllegalInstruction(0, instr.raw, f"{fmt} instructions ({instr.name}) are not implemented")

_steps: dict[tuple[str, bytes], Step] = {}

def compile_step(instr:Instr, spec:ArchSpec, pc:int) -> Step:
  """The Step for a decoded instruction (cached on its bytes); failures become GPUIllegalInstruction at `pc`."""
  if (s := _steps.get(key := (spec.name, instr.raw))) is not None: return s
  if (why := register_overrun(instr)) is not None: raise GPUIllegalInstruction(pc, instr.raw, f"{instr.name}: operand {why}")
  try: s = _build(instr, spec)
  except GPUIllegalInstruction as e: raise GPUIllegalInstruction(pc, instr.raw, e.reason) from None
  except (KeyError, ValueError, AttributeError, TypeError) as e:
    raise GPUIllegalInstruction(pc, instr.raw, f"{instr.name}: cannot execute ({type(e).__name__}: {e})") from e
  _steps[key] = s
  return s

def load_step(data:bytes, spec:ArchSpec, pc:int) -> Step:
  """The Step of the instruction at the start of `data` (16 bytes of code, fewer at a mapping's end): from the step cache, else
  decoded and built (and kept there)."""
  if (s := STEP_CACHE.load(data, spec)) is not None: return s
  with charged("step build"):
    s = compile_step(decode(data, spec, pc), spec, pc)
    STEP_CACHE.keep(data, spec, s)
  return s
