"""The one door to instruction semantics: compiled vendor pcode from `emu.pcode`, memoised per (arch family, opcode)."""
from __future__ import annotations
import functools, sys
from emu.amd.api import GPUIllegalInstruction

@functools.cache
def _compile(family:str, op):
  from emu.pcode import compile_op
  from emu.pcode.abi import Unsupported
  try: return compile_op(family, op), None
  except Unsupported as e: return None, f"{e.category}: {e.reason}"

def _vop1_twin(op):
  """The VOP1 opcode (V_X_E32) whose VOP3 encoding `op` (V_X_E64) is, or None. Both encodings run the same operation (VOP3 only adds
  modifiers the executor applies), and the cdna wheel gives pseudocode for the VOP1 forms only."""
  if not op.name.endswith("_E64"): return None
  return sys.modules[type(op).__module__].VOP1Op.__members__.get(op.name[:-4] + "_E32")

def get_op(arch:str, op, pc:int=0, raw:bytes=b""):
  """The `CompiledOp` of `op` for gfx target `arch` (gfx942 and gfx950 differ in fp8 formats); an op the pcode compiler cannot
  build raises GPUIllegalInstruction naming it."""
  cop, why = _compile(arch, op)
  if cop is None and why.startswith("no pcode") and (twin := _vop1_twin(op)) is not None: cop = _compile(arch, twin)[0]
  if cop is None: raise GPUIllegalInstruction(pc, raw[:8], f"{op.name} is not implemented ({why})")
  return cop
