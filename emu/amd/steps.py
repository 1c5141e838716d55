"""Instruction fetch and compilation: PC -> `Step`, decoded once per PC per dispatch and compiled once per instruction bytes (per
process; emu.amd.step_cache keeps them on disk for the next process)."""
from __future__ import annotations
import time
from emu.amd import regions
from emu.amd.api import GPUFault, GPUIllegalInstruction, GPUMemoryFault
from emu.amd.arch import ArchSpec
from emu.amd.decode import Instr, decode
from emu.amd.exec_salu import ControlStep, MessageStep, ModeStep, SaluStep, SmemStep, BARRIERS, ENDS, NO_EFFECT
from emu.amd.exec_ds import DsCounterStep, DsSwizzleStep
from emu.amd.cdna import AccMoveStep, MubufStep
from emu.amd.exec_valu import ValuStep, VopdStep
from emu.amd.exec_vmem import VmemStep
from emu.amd.memory import MemoryMap
from emu.amd.operands import register_overrun
from emu.amd.semantics import get_op
from emu.amd.step import Step
from emu.amd.step_cache import STEP_CACHE

SCALAR = ("SOP1", "SOP2", "SOPC", "SOPK", "SOPP")
VALU = ("VOP1", "VOP2", "VOPC", "VOP3", "VOP3SD", "VOP3P", "VINTERP")
VMEM = ("DS", "GLOBAL", "FLAT", "SCRATCH")
CONTROL = ENDS | NO_EFFECT | BARRIERS | {"S_TRAP"}
MESSAGES = ("S_SENDMSG_RTN_B32", "S_SENDMSG_RTN_B64")
MODE_OPS = ("S_ROUND_MODE", "S_DENORM_MODE")

# executor-owned ops (pcode kind 'executor') with their own Step; every other executor-owned op is a ControlStep, which knows the
# no-ops (waits, hints, cache invalidation, prefetch) and raises GPUIllegalInstruction for the rest
EXECUTOR_STEPS = {"DS_SWIZZLE_B32": DsSwizzleStep, "DS_APPEND": DsCounterStep, "DS_CONSUME": DsCounterStep, "V_ACCVGPR_READ": AccMoveStep,
                  "V_ACCVGPR_WRITE": AccMoveStep, "V_ACCVGPR_MOV_B32_E32": AccMoveStep, "V_ACCVGPR_MOV_B32_E64": AccMoveStep}

def _build(instr:Instr, spec:ArchSpec) -> Step:
  fmt, name = instr.fmt, instr.name.upper()
  if fmt == "VOPD": return VopdStep(instr, spec)
  if fmt in SCALAR and name in CONTROL: return ControlStep(instr, spec)
  if fmt in SCALAR and name in MESSAGES: return MessageStep(instr, spec)
  if fmt in SCALAR and name in MODE_OPS: return ModeStep(instr, spec)
  op = get_op(spec.name, instr.op, raw=instr.raw)
  if op.kind == "executor": return EXECUTOR_STEPS.get(name, ControlStep)(instr, spec)
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
  if (why := register_overrun(instr.inst)) is not None: raise GPUIllegalInstruction(pc, instr.raw, f"{instr.name}: operand {why}")
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
  s = compile_step(decode(data, spec, pc), spec, pc)
  STEP_CACHE.keep(data, spec, s)
  return s

MAX_REGION = 256   # instructions in one native region (bounds its IR and compile time)

class Program:
  """The code one dispatch runs: steps by PC, fetched from mapped memory on first use; native regions by their first PC."""
  def __init__(self, spec:ArchSpec, mem:MemoryMap):
    self.spec, self.mem, self.steps = spec, mem, {}
    self.regions: dict[int, regions.Region | None] = {}
    self.load_s = 0.0   # host seconds spent fetching, decoding and building steps

  def region(self, pc:int, lanes:int, mode:int) -> regions.Region | None:
    """The native region (emu.amd.regions) of the straight-line VALU and load run starting at pc, None when there is none; found once per
    dispatch (the first batch's lanes and MODE), built once per code bytes."""
    if pc in self.regions: return self.regions[pc]
    t, before, run, at = time.perf_counter(), self.load_s, [], pc
    try:
      while len(run) < MAX_REGION:
        try: s = self.at(at)
        except GPUFault: break   # past the end of the code, or an instruction that faults when (if ever) a wave reaches it
        if not regions.joins(s): break
        run.append(s)
        at += s.size
        if regions.ends(s): break
      r = self.regions[pc] = regions.build(run, lanes, self.spec, mode) if run else None
    finally: self.load_s = before + time.perf_counter() - t   # (the steps' own loading, inside, is part of it once)
    return r

  def at(self, pc:int) -> Step:
    if (s := self.steps.get(pc)) is None:
      t = time.perf_counter()
      try: s = self.steps[pc] = self._load(pc)
      finally: self.load_s += time.perf_counter() - t
    return s

  def _load(self, pc:int) -> Step:
    if (m := self.mem.find(pc, 4)) is None: raise GPUMemoryFault(pc, False, pc=pc, detail="instruction fetch")
    return load_step(bytes(m.view[pc - m.addr: min(pc - m.addr + 16, m.size)]), self.spec, pc)
