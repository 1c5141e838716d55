"""The one door to instruction semantics: compiled vendor pcode from `emu.pcode`, memoised per (arch family, opcode).

Every op handed out here is memoised for the life of the process and has a `token` naming it, by which a Step read back from
disk (emu.amd.step_cache) finds the same object again."""
from __future__ import annotations
import functools
from emu.amd.api import GPUIllegalInstruction
from emu.common.hostparts import charged

_tokens: dict[int, tuple] = {}   # id(op) -> (op, token); the op is held so that its id is never reused by another object

def _named(cop, token:tuple):
  if cop is not None: _tokens[id(cop)] = (cop, token)
  return cop

@functools.cache
def _compile(family:str, op):
  from emu.pcode import compile_op
  from emu.pcode.abi import Unsupported
  try:
    with charged("pcode"): return _named(compile_op(family, op), ("op", family, op)), None
  except Unsupported as e: return None, f"{e.category}: {e.reason}"

def get_op(arch:str, op, pc:int=0, raw:bytes=b""):
  """The `CompiledOp` of `op` for gfx target `arch` (gfx942 and gfx950 differ in fp8 formats); an op the pcode compiler cannot
  build raises GPUIllegalInstruction naming it."""
  cop, why = _compile(arch, op)
  if cop is None: raise GPUIllegalInstruction(pc, raw[:8], f"{op.name} is not implemented ({why})")
  return cop

@functools.cache
def get_across(arch:str, op):
  """The scalar op `op` as numpy code over many waves (emu.pcode.compiler.compile_across_waves), None where there is none."""
  from emu.pcode.compiler import compile_across_waves
  with charged("pcode"): return _named(compile_across_waves(arch, op), ("across", arch, op))

def token(cop) -> tuple | None:
  """How to find `cop` again in another process (from_token), None for an op that did not come from here."""
  hit = _tokens.get(id(cop))
  return hit[1] if hit is not None and hit[0] is cop else None

def from_token(tok:tuple):
  """The op `token` named."""
  kind, arch, op = tok
  return get_op(arch, op) if kind == "op" else get_across(arch, op)
