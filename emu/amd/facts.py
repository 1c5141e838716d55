"""Every fact the emulator holds about one opcode of one arch, as one record: where its semantics come from, whether the
executor owns it and why (emu.amd_ops.OWNED), the step that runs it, its timing class, port, cost and the counters it waits
on, the SQTT packet its issue is reported with and whether it may join a native region. Each field is read from the table
or function that decides it when the emulator runs, so the record cannot drift from them; `python -m emu.amd.card` prints
it and tests/unit/amd/test_facts.py walks every opcode of every arch checking that the deciders agree with one another."""
from __future__ import annotations
from dataclasses import dataclass
from functools import cached_property
from typing import Iterator
from tinygrad.renderer.amd.dsl import EnumBitField, Inst
from emu import amd_ops
from emu.amd import regions
from emu.amd.api import GPUIllegalInstruction
from emu.amd.arch import get_spec
from emu.amd.decode import Instr, decode, encode_fields
from emu.amd.sqtt_layouts import CDNA_LAYOUT, RDNA3_LAYOUT, RDNA4_LAYOUT, Layout
from emu.amd.step import Step
from emu.amd.step_build import compile_step
from emu.amd.cu_model import make_stream, replay_op, simulate_cu
from emu.amd.timing import PARAMS, OpInfo, classify

LAYOUTS: dict[str, Layout] = {"rdna3": RDNA3_LAYOUT, "rdna4": RDNA4_LAYOUT, "cdna": CDNA_LAYOUT}
VARIANTS = ("_LIT", "DPP", "SDWA")   # encodings that only change how operands are given (their opcodes are the base class's)

def opcodes(arch:str) -> Iterator[tuple[str, type[Inst], object]]:
  """(class name, class, opcode) of every opcode of every base encoding of the arch (the operand-variant classes left out)."""
  spec = get_spec(arch)
  for cname, cls in sorted(vars(spec.ins).items()):
    if not (isinstance(cls, type) and issubclass(cls, Inst) and cls is not Inst) or any(v in cname for v in VARIANTS): continue
    f = dict(cls._fields).get("op")
    if not isinstance(f, EnumBitField): continue
    for op in (f.allowed if f.allowed is not None else f._enum):
      if op.value <= f.mask: yield cname, cls, op

@dataclass(frozen=True)
class Facts:
  """One opcode of one arch, as the emulator sees the instruction with every other field zero."""
  arch: str
  encoding: str                 # the instruction class (SOP1, VOP3, DS ...)
  name: str
  raw: bytes                    # the zero-field instruction's bytes
  owned: amd_ops.Owned | None   # what the executor does with it and why its pcode does not run (None: the pcode runs)
  instr: Instr | None           # decoded (None: the zero-field bytes do not decode)
  step: Step | None             # the step that runs it (None: does not build; `problem` says why)
  problem: str                  # why it does not decode or build with zero fields ('' when it does)
  timing: OpInfo | None         # emu.amd.timing.classify
  sqtt: str | None              # the packet an issue is reported with on the family's layout ('' when it is never reported)
  region: bool                  # may join a native region (emu.amd.regions.joins; its op may still lack a lowering)
  op: object                    # the opcode (the wheel's enum member)

  @cached_property
  def semantics(self) -> str:
    """Where its semantics come from (emu.pcode's report: the vendor pcode, corrected, hand-written, executor-owned), or why it has none."""
    from emu.pcode import compile_op
    from emu.pcode.__main__ import semantics
    from emu.pcode.abi import Unsupported
    try: return semantics(self.arch, self.op, compile_op(self.arch, self.op))
    except Unsupported as e: return f"none ({e})"

COUNTER_OF = {"vmem_load": "vm", "vmem_store": "vs"}   # the counter a vector memory class counts on (SMEM and DS: OpInfo.counter)
DEPENDENCY = {"valu": 1, "trans": 5}   # s_delay_alu instid0 naming the most recent VALU (VALU_DEP_1) / transcendental (TRANS32_DEP_1)

def latency(info:OpInfo, family:str) -> tuple[str, int] | None:
  """How long after this instruction's issue the timing model lets an instruction that needs its result issue, measured by
  replaying it (cu_model, the family's costs, cold caches): for a memory instruction, the instruction after a wait on its
  counter; for an ALU result, a VALU whose s_delay_alu names it. None for the other classes."""
  if info.cls in COUNTER_OF or info.cls in ("smem", "lds"):
    wait = OpInfo("waitcnt", None, waits=((COUNTER_OF.get(info.cls, info.counter), 0),))
    what, then = "the instruction after a wait on its counter", [replay_op(wait)]
  elif info.cls in DEPENDENCY: what, then = "a dependent VALU (s_delay_alu)", [replay_op(OpInfo("delay", None, delay=DEPENDENCY[info.cls]))]
  else: return None
  ops = [replay_op(info), *then, replay_op(OpInfo("valu", "valu")), replay_op(OpInfo("end", None))]
  p = PARAMS[family]
  (_, _, issued, _), = simulate_cu([make_stream(ops, [8 * k for k in range(len(ops))])], [0], 1, 1, p, p.launch)
  return what, issued[len(then) + 1] - issued[0]

def sqtt_packet(layout:Layout, info:OpInfo, instr:Instr) -> str:
  """The packet the layout reports an instruction's (taken) issue with, as 'CLASS' or 'CLASS:OP'; '' when none is written."""
  if info.cls == "end": return layout.wave_end.__name__
  if (issue := layout.issue(info, instr, True)) is None: return ""
  pcls, op = issue
  return pcls.__name__ + (f":{op.name}" if op is not None else "")

def facts(arch:str, cname:str, cls:type[Inst], op) -> Facts:
  """The record of opcode `op` of encoding class `cls` on `arch` (see the module docstring)."""
  spec = get_spec(arch)
  raw = encode_fields(cls, {"op": op.value})
  instr = step = info = packet = None
  problem, region = "", False
  try:
    instr = decode(raw, spec)
    step = compile_step(instr, spec, 0)
    info = classify(step)
    packet, region = sqtt_packet(LAYOUTS[spec.family], info, instr), regions.joins(step)
  except (GPUIllegalInstruction, ValueError, KeyError) as e: problem = f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
  return Facts(arch, cname, op.name, raw, amd_ops.OWNED.get(op.name), instr, step, problem, info, packet, region, op)

def of_mnemonic(arch:str, mnemonic:str) -> list[Facts]:
  """The records of every base encoding that carries `mnemonic` (or its _E32/_E64 form) on `arch`."""
  want = mnemonic.upper()
  return [facts(arch, cname, cls, op) for cname, cls, op in opcodes(arch) if op.name in (want, f"{want}_E32", f"{want}_E64")]
