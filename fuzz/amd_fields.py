"""Edge-biased raw values for the bit fields of the wheel's AMD instruction classes (tinygrad.runtime.autogen.amd.*.ins).

A case is built from raw field values, not through the Inst constructors, so the decoder and the encoder are both under test.
"""
from __future__ import annotations
import functools, importlib, inspect, random
from tinygrad.renderer.amd.dsl import (Inst, BitField, FixedBitField, EnumBitField, SrcField, VGPRField, SGPRField, SSrcField,
                                       AlignedSGPRField, VDSTYField, OPERANDS)
from emu.amd.arch import FAMILIES
from emu.amd.decode import encode_fields  # noqa: F401 (re-exported: the fuzzers build encodings from raw fields)

ARCHS = FAMILIES   # the ISA families fuzzed (one per table family in the wheel)
# src-space markers that select an encoding variant instead of naming an operand
MARKERS = {"_LIT": 255, "_DPP16": 250, "_DPP8": 233, "_SDWA": 249, "_SDWA_SDST": 249}
SGPR_MAX = {"rdna3": 105, "rdna4": 105, "cdna": 101}  # CDNA: 102-105 alias FLAT_SCRATCH/XNACK_MASK
SPECIAL_SCALAR = {"rdna3": (106, 124, 125, 126), "rdna4": (106, 124, 125, 126), "cdna": (106, 124, 126)}  # VCC, NULL, M0, EXEC
# DPP controls the ISA defines: quad_perm, row_shl/shr/ror 1-15, row_mirror, row_half_mirror, then per family RDNA's row_share and
# row_xmask, gfx9's wave_shl/rol/shr/ror, row_bcast15/31 and (gfx90a+) row_newbcast; RDNA3 also runs 0x142 (observed on hardware)
_DPP_COMMON = (0x00, 0xe4, 0x1b, 0xff, 0x101, 0x10f, 0x111, 0x11f, 0x121, 0x12f, 0x140, 0x141)
_DPP_RDNA = _DPP_COMMON + (0x150, 0x15f, 0x160, 0x16f)
DPP_CTRL = {"rdna3": _DPP_RDNA + (0x142,), "rdna4": _DPP_RDNA, "cdna": _DPP_COMMON + (0x130, 0x134, 0x138, 0x13c, 0x142, 0x143, 0x150, 0x153)}
# modifier bits the ISA only allows on some opcodes: left at their default most of the time so that most cases are valid
MODIFIERS = {"omod", "clmp", "opsel", "opsel_hi", "opsel_hi2", "neg", "neg_hi", "abs", "gds", "sve", "tfe", "lwe", "src0_sext", "acc_cd", "fi", "bc",
             "src0_neg", "src0_abs", "src1_neg", "src1_abs"}
INLINE_CONSTS = (128, 129, 130, 192, 193, 208, 240, 241, 242, 243, 244, 245, 246, 247, 248)
# register numbers at the edges of the register files, which the wheel's tables accept whatever the operand's width: the last VGPRs
# (a 64-bit operand at v255 runs past the file), the last SGPRs, VCC_HI, the trap temporaries, NULL/M0 and EXEC_HI
EDGE_VGPRS = (254, 255)
EDGE_SCALARS = (101, 102, 103, 104, 105, 107, 108, 123, 124, 125, 127)

@functools.cache
def inst_classes(arch:str) -> dict[str, type[Inst]]:
  """Every instruction class of an arch's ins module, by class name."""
  mod = importlib.import_module(f"tinygrad.runtime.autogen.amd.{arch}.ins")
  return {n: c for n, c in vars(mod).items() if inspect.isclass(c) and issubclass(c, Inst) and c is not Inst and c.__module__ == mod.__name__}

def variant(cls:type[Inst]) -> str:
  """The variant suffix of a class name ('' for a base format)."""
  return next((s for s in sorted(MARKERS, key=len, reverse=True) if cls.__name__.endswith(s)), "")

def ops_of(cls:type[Inst]) -> list:
  """Opcodes a class may carry (the op field's allowed set, else its whole enum)."""
  f = dict(cls._fields).get("op") or dict(cls._fields).get("opx")
  if not isinstance(f, EnumBitField): return [None]
  return sorted((o for o in (f.allowed if f.allowed is not None else f._enum) if o.value <= f.mask), key=lambda o: o.value)

def operand_regs(op, name:str) -> tuple[int, str]:
  """(register count, operand type name) of a field from operands.py; variant names (vsrc0) map to their base name (src0)."""
  ops = OPERANDS.get(op, {}) if op is not None else {}
  info = ops.get(name) or ops.get(name[1:] if name.startswith("v") else "", None)
  return (max(1, info[1] // 32), info[2].name) if info else (1, "")

def _aligned(rng:random.Random, hi:int, count:int) -> int:
  align = 4 if count >= 4 else 2 if count == 2 else 1
  return rng.choice([0, hi - count + 1, rng.randint(0, hi - count + 1)]) // align * align

def scalar_reg(rng:random.Random, arch:str, count:int) -> int:
  """An SGPR operand number for `count` registers: s0/the last aligned SGPR/a random aligned one, or VCC/NULL/M0/EXEC."""
  if rng.random() < 0.2: return rng.choice([106, 126] if count >= 2 else list(SPECIAL_SCALAR[arch]))
  return _aligned(rng, SGPR_MAX[arch], count)

def _vgpr(rng:random.Random, arch:str, count:int) -> int:
  return _aligned(rng, 255, count) if arch == "cdna" or count > 1 else rng.choice([0, 1, 255, rng.randint(0, 255)])

def field_value(rng:random.Random, arch:str, cls:type[Inst], op, name:str, f:BitField) -> int:
  """A raw value for field `name`, valid for the operand type where operands.py says what it is, biased to edge cases."""
  count, kind = operand_regs(op, name)
  if isinstance(f, VGPRField): return _vgpr(rng, arch, count)
  if isinstance(f, VDSTYField): return rng.randint(0, f.mask)
  if isinstance(f, AlignedSGPRField): return rng.choice([0, 1, rng.randint(0, f.mask)])
  if isinstance(f, SGPRField) or (isinstance(f, SSrcField) and "dst" in name): return scalar_reg(rng, arch, count)
  if isinstance(f, SrcField):
    lo = f._valid_range[0]
    vgpr_ok = f._valid_range[1] >= 256 and "SREG" not in kind and "SSRC" not in kind
    scalar_ok = kind not in ("OPR_VGPR", "OPR_SRC_VGPR", "OPR_VGPR_OR_ACCVGPR", "OPR_ACCVGPR")
    pick = [p for p, ok in (("v", vgpr_ok), ("s", scalar_ok), ("c", scalar_ok and "dst" not in name)) if ok] or ["v" if vgpr_ok else "s"]
    match rng.choice(pick):
      case "v": return 256 + _vgpr(rng, arch, count) - lo
      case "s": return scalar_reg(rng, arch, count) - lo
      case _: return rng.choice(INLINE_CONSTS) - lo
  if name == "literal": return rng.choice([0, 1, 0x3f800000, 0x7fffffff, 0x80000000, 0xffffffff, rng.getrandbits(32)])
  if name == "dpp": return rng.choice(DPP_CTRL[arch])
  if name.endswith("_sel"): return rng.randint(0, 6)  # SDWA BYTE_0..DWORD; 7 is reserved and crashes LLVM 19's gfx942 disassembler
  if name == "dst_unused": return rng.randint(0, 2)
  if name in MODIFIERS: return default_raw(f) if rng.random() < 0.8 else rng.randint(0, f.mask)
  return rng.choice([0, 0, 1, f.mask, rng.randint(0, f.mask)])

def edge_value(rng:random.Random, f:BitField, name:str) -> int|None:
  """A raw value that LLVM (and the hardware) may reject although the field can hold it: a register at a file's edge whatever
  the operand's width or type, any code of a source field (reserved ones included), any SDWA select. None: no edge for `f`."""
  if isinstance(f, VGPRField): return rng.choice(EDGE_VGPRS)
  if isinstance(f, (SGPRField, AlignedSGPRField)): return min(f.mask, rng.choice(EDGE_SCALARS))
  if isinstance(f, SrcField):
    lo = f._valid_range[0]
    return rng.choice([rng.randint(0, f.mask), 256 + rng.choice(EDGE_VGPRS) - lo if f._valid_range[1] >= 256 else 0,
                       rng.choice(EDGE_SCALARS) - lo if lo == 0 else 0]) & f.mask
  if name.endswith("_sel"): return rng.randint(0, f.mask)
  return None

def default_raw(f:BitField) -> int:
  """A field's default as a raw value (register defaults such as NULL/v0 translated to the field's encoding)."""
  d = f.default
  return d if isinstance(d, int) else d.offset - getattr(f, "_valid_range", (0,))[0]

def is_marker(cls:type[Inst], name:str, raw:int) -> bool:
  """True when field `name` holds the src-space marker that selects the class's variant (a literal, DPP or SDWA)."""
  f = dict(cls._fields)[name]
  return isinstance(f, SrcField) and not isinstance(f, VGPRField) and (raw + f._valid_range[0]) in MARKERS.values() and variant(cls) != ""

def canonical(cls:type[Inst], fields:dict[str, int]) -> dict[str, int]:
  """The same opcode and variant with every other field at its default: the plainest encoding of the instruction."""
  return {n: v if n in ("op", "opx", "opy", "literal") or is_marker(cls, n, v) else default_raw(dict(cls._fields)[n]) for n, v in fields.items()}

def _unused_operand(cls:type[Inst], op, name:str) -> bool:
  """A register field the opcode does not use (operands.py lists the opcode's operands but not this one): it must stay at its default."""
  f = dict(cls._fields)[name]
  return isinstance(f, (SrcField, AlignedSGPRField)) and bool(OPERANDS.get(op)) and operand_regs(op, name)[1] == ""

def random_fields(rng:random.Random, arch:str, cls:type[Inst], op, edges:float=0.0) -> dict[str, int]:
  """Raw values for every settable field of `cls` carrying opcode `op`, with the variant's src0 marker where it has one. With
  probability `edges` per field an operand field takes an `edge_value` instead (an encoding LLVM may reject)."""
  fields: dict[str, int] = {}
  for name, f in cls._fields:
    if isinstance(f, FixedBitField): continue
    if isinstance(f, EnumBitField):
      fields[name] = op.value if name in ("op", "opx") else rng.choice([o for o in f._enum if o.value <= f.mask]).value
    elif edges and rng.random() < edges and (e := edge_value(rng, f, name)) is not None: fields[name] = e
    elif _unused_operand(cls, op, name): fields[name] = default_raw(f)
    else: fields[name] = field_value(rng, arch, cls, op, name, f)
  if (v:=variant(cls)) == "_LIT":
    srcs = [n for n, f in cls._fields if isinstance(f, SrcField) and not isinstance(f, VGPRField) and "dst" not in n]
    used = [n for n in srcs if operand_regs(op, n)[1]] or srcs  # a source the opcode reads, where operands.py lists any
    if used:
      lit = rng.choice(used)
      fields[lit] = 255 - dict(cls._fields)[lit]._valid_range[0]
  elif v and "src0" in fields: fields["src0"] = MARKERS[v]
  return fields
