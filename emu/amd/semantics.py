"""The one door to instruction semantics: compiled vendor pcode from `emu.pcode`, memoised per (arch family, opcode)."""
from __future__ import annotations
import functools
from emu.amd.api import GPUIllegalInstruction

@functools.cache
def _compile(family:str, op):
  from emu.pcode import compile_op
  from emu.pcode.abi import Unsupported
  try: return compile_op(family, op), None
  except Unsupported as e: return None, f"{e.category}: {e.reason}"

def get_op(arch:str, op, pc:int=0, raw:bytes=b""):
  """The `CompiledOp` of `op` for gfx target `arch` (gfx942 and gfx950 differ in fp8 formats); an op the pcode compiler cannot
  build raises GPUIllegalInstruction naming it."""
  cop, why = _compile(arch, op)
  if cop is None: raise GPUIllegalInstruction(pc, raw[:8], f"{op.name} is not implemented ({why})")
  return cop
