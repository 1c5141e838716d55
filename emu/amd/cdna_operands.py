"""CDNA (gfx9) operand routing: SDWA byte/word selects (their semantics: emu/amd/cdna.py's docstring; gfx9 DPP: emu/amd/dpp.py) and
which 16-bit results zero the high half of their VGPR."""
from __future__ import annotations
import numpy as np
from emu.amd.arch import ArchSpec
from emu.amd.decode import code
from emu.amd.operands import Src, resolve_src

U64 = np.uint64

# ---- 16-bit results ----
LEGACY_FORMATS = ("VOP1Op", "VOP2Op", "VOPCOp")

def legacy_16bit(spec:ArchSpec, op) -> bool:
  """Whether `op` is a gfx9 VOP1/VOP2/VOPC opcode, in any encoding (e32, SDWA, DPP, or its VOP3 twin V_X_E64). Their 16-bit results
  zero bits 31:16 of the destination VGPR and their VOP3 form has no op_sel (LLVM's GCNSubtarget::zeroesHigh16BitsOfDest: "most
  instructions maintain the legacy behavior of 0ing"; its gfx942 code ORs such results together unmasked). The 16-bit ops gfx9
  added to VOP3 (V_MAD_F16/U16/I16, V_FMA_F16, V_ADD/SUB_I16, V_MIN3/MAX3/MED3_*16 ...) take op_sel like RDNA's: they write the
  half op_sel[3] names and keep the other; the VOP3 legacy ops (V_MAD_LEGACY_F16 ...) spell their zeroing out in the pcode."""
  if not spec.zeroes_high16: return False
  fmt = type(op).__name__
  if fmt in LEGACY_FORMATS: return True
  return fmt == "VOP3Op" and op.name.endswith("_E64") and any(op.name[:-4] + "_E32" in getattr(spec.enum, e).__members__
                                                              for e in LEGACY_FORMATS)

# ---- SDWA ----
SEL_BITS = {0: (0, 8), 1: (8, 8), 2: (16, 8), 3: (24, 8), 4: (0, 16), 5: (16, 16), 6: (0, 32)}   # SDWA_SEL -> (shift, width)

def sdwa_select(v:np.ndarray, sel:int, sext:bool) -> np.ndarray:
  """The byte/word `sel` of 32-bit values, zero- or sign-extended to 32 bits."""
  shift, width = SEL_BITS[sel]
  x = (v >> U64(shift)) & U64((1 << width) - 1)
  if sext and width < 32: x = ((x ^ U64(1 << (width - 1))) - U64(1 << (width - 1))) & U64(0xffffffff)
  return x

def sdwa_merge(old:np.ndarray, result:np.ndarray, sel:int, unused:int) -> np.ndarray:
  """Place `result`'s low bits in field `sel` of the 32-bit destination: other bits 0 (unused 0), the field's sign (1) or old (2)."""
  shift, width = SEL_BITS[sel]
  fmask = U64(((1 << width) - 1) << shift)
  field = (np.asarray(result, dtype=U64) << U64(shift)) & fmask
  if unused == 2: return (np.asarray(old, dtype=U64) & ~fmask & U64(0xffffffff)) | field
  if unused == 1 and shift + width < 32:
    neg = (field >> U64(shift + width - 1)) & U64(1)
    field |= np.where(neg != 0, U64(0xffffffff) & ~U64((1 << (shift + width)) - 1), U64(0))
  return field

def check_sel(sel:int, what:str) -> int:
  """`sel` when it is an SDWA select the ISA defines (0-6); ValueError for the reserved 7 (an illegal instruction)."""
  if sel not in SEL_BITS: raise ValueError(f"SDWA {what} select {sel} is reserved")
  return sel

class SdwaSrc:
  """An SDWA source, read like a `Src`: the register (VGPR, or SGPR/constant when the S bit is set) and its byte/word select.
  `bits` is the op's operand width (float neg/abs apply at it, after the select)."""
  def __init__(self, src:Src, sel:int, sext:bool, bits:int):
    self.src, self.sel, self.sext, self.bits, self.kind = src, check_sel(sel, "source"), sext, bits, src.kind
  def read_lanes(self, st, wv, ln, dense=None) -> np.ndarray:
    return sdwa_select(self.src.read_lanes(st, wv, ln, dense), self.sel, self.sext)

def sdwa_source(inst, i:int, bits:int, fmt, literal, spec:ArchSpec) -> SdwaSrc:
  """Source i (0 or 1) of an SDWA instruction whose op reads it at `bits` in format `fmt`."""
  reg, sgpr = code(inst, f"vsrc{i}"), getattr(inst, f"s{i}")
  src = resolve_src(reg - 256, 32, fmt, literal, spec) if sgpr else Src("vgpr", reg - 256, 32)
  return SdwaSrc(src, getattr(inst, f"src{i}_sel"), bool(getattr(inst, f"src{i}_sext")), bits)
