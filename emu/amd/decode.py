"""Instruction decoding: bytes -> `Instr`, using the wheel's encoding tables; cached on the instruction bytes.

The wheel's decoder (`decode_inst`: detect_format, then Inst.from_bytes) picks the format and the _LIT/_DPP16 (CDNA: _SDWA, _MFMA)
variant; `detect` and `from_bytes` make the same choices from its tables read once as data (its own walk over field objects was most
of a first-seen instruction's decode time; tests compare the two). What it misses on RDNA is DPP8 (src0 = 233/234,
'DPP8'/'DPP8FI'), the DPP16 forms of VOP3/VOP3SD/VOP3P (src0 = 250 in the second dword: it only looks at the first), and the
literal of a VOP3 SDST form (v_cmp/v_cmpx_*_e64) whose vdst field is 250 (it takes that for a DPP marker and drops the literal
dword), recognised here; on CDNA it decodes gfx942's XF32 MFMAs as plain VOP3P, whose bits the hardware reads in the matrix layout
(CBSZ/ABID/BLGP/ACC/ACC_CD), so they are re-read as VOP3P_MFMA. Operand meaning (inline constants, special registers) is
`operands.py`'s job. Whether a VOP1/VOP3 destination is an SGPR (v_readfirstlane, v_readlane, rdna4 v_s_exp_f32 ...) comes from the
operand table's type for vdst, not from the class name: the cdna table makes v_readfirstlane_b32 a plain VOP1 (no _SDST class)
although its operand is OPR_SREG_NOVCC.
"""
from __future__ import annotations
import functools, sys
from dataclasses import dataclass
from tinygrad.renderer.amd import _load_formats
from tinygrad.renderer.amd.dsl import AlignedSGPRField, EnumBitField, FixedBitField, Inst, SrcField
from emu.amd.api import GPUIllegalInstruction
from emu.amd.arch import ArchSpec
from emu.amd.mnemonic import parse

# rdna4 renamed the vector memory encodings; executors and the timing model see the rdna3 family names
FMT_ALIASES = {"VGLOBAL": "GLOBAL", "VFLAT": "FLAT", "VSCRATCH": "SCRATCH"}
VARIANTS = ("_SDWA_SDST", "_SDWA", "_MFMA", "_SDST_LIT", "_SDST", "_LIT", "_DPP16", "_DPP8")
DPP16_SRC0 = 250                      # source code of a DPP16 marker (its control dword follows)
DPP_SRC0 = {233: ("DPP8", False), 234: ("DPP8", True), DPP16_SRC0: ("DPP16", None)}   # src0 code -> variant, DPP8 fetch-inactive (FI) flag
LITERAL = 255                         # source code of a literal dword after the instruction
SDWA_SRC0 = 0xF9                      # gfx9: src0 code of a VOP1/VOP2/VOPC word followed by an SDWA dword (the wheel decodes it plain)
SDWA_CLASSES = {"VOP1": "VOP1_SDWA", "VOP2": "VOP2_SDWA", "VOPC": "VOPC_SDWA_SDST"}
MATRIX_OPS = ("MFMA", "SMFMAC")   # gfx9: always the matrix (MAI) layout of VOP3P; the wheel decodes the XF32 ones as plain VOP3P
SGPR_DEST_TYPES = ("OPR_SREG", "OPR_SDST")   # operand-table types (and their _NOVCC... variants) of an SGPR destination

def encode_fields(cls:type[Inst], fields:dict[str, int]) -> bytes:
  """Pack raw field values into an instruction of class `cls` (its fixed fields from the class; absent fields 0)."""
  raw = 0
  for name, f in cls._fields:
    val = f.default if isinstance(f, FixedBitField) else fields.get(name, 0)
    raw |= (val & f.mask) << f.lo
  return raw.to_bytes(cls._base_size, "little")

def sgpr_dest(inst:Inst) -> bool:
  """The operand table names an SGPR type for the instruction's vdst."""
  dst = inst.operands.get("vdst")
  return dst is not None and dst[2].name.startswith(SGPR_DEST_TYPES)

SIZED_FIELDS = (SrcField, AlignedSGPRField)   # the wheel's register fields whose attribute read resizes the register (offset unchanged)

@functools.cache
def field_of(cls:type, name:str):
  """Encoding class `cls`'s field object `name`, None where it has none."""
  return next((f for n, f in cls._fields if n == name), None)

def rawf(inst, name:str, absent:int|None=None) -> int:
  """The raw bits of field `name` (register fields decode to operand objects; executors want the number); `absent` where the
  encoding has no such field (None: AttributeError)."""
  if (bf := field_of(type(inst), name)) is not None: return (inst._raw >> bf.lo) & bf.mask
  if absent is None: raise AttributeError(f"{type(inst).__name__} has no field {name}")
  return absent

def code(inst, name:str) -> int | None:
  """The operand code (0-511: SGPRs and specials, constants, 256+ VGPRs) of register field `name`, None where the encoding has no such
  register field: the wheel's `getattr(inst, name).offset`. Source and aligned-SGPR fields are decoded by the field alone, not read
  as attributes: those also size the register from the operand table on every read, the largest part of building a step."""
  if (bf := field_of(type(inst), name)) is None: return None
  if isinstance(bf, SIZED_FIELDS): return bf.decode((inst._raw >> bf.lo) & bf.mask).offset
  return getattr(getattr(inst, name), "offset", None)   # VOPD's VDSTY (read with VDSTX), plain bit fields (no register: None)

@dataclass(eq=False)
class Instr:
  """One decoded instruction, independent of where it sits in memory."""
  inst: Inst          # the wheel's DSL object (fields by name, repr is assembly-like)
  fmt: str            # encoding family without variant suffix: 'VOP2', 'GLOBAL', 'SOPP', ...
  variant: str        # '' | 'LIT' | 'DPP16' | 'DPP8' | 'SDWA' | 'MFMA' (SDST forms keep fmt and set sdst_dest)
  sdst_dest: bool     # VOP1/VOP3 form whose vdst is an SGPR (v_readfirstlane, v_readlane)
  size: int           # bytes, literal included
  raw: bytes

  @functools.cached_property   # (an enum field's read builds its member anew each time)
  def op(self): return self.inst.opx if self.fmt == "VOPD" else self.inst.op
  @functools.cached_property
  def operands(self) -> dict:   # the wheel's operand table entry (field -> (format, bits, type)), looked up by opcode on each read
    return self.inst.operands
  @functools.cached_property
  def name(self) -> str:
    return f"{self.inst.opx.name.lower()} :: {self.inst.opy.name.lower()}" if self.fmt == "VOPD" else self.inst.op.name.lower()
  @property
  def literal(self) -> int | None: return getattr(self.inst, "literal", None)
  def __repr__(self) -> str: return describe(self)

def describe(instr:Instr) -> str:
  """The instruction as assembly for messages; its bytes in hex when the wheel cannot print it (a fault message must never
  be the reason a fault is lost)."""
  try: return repr(instr.inst)
  except Exception: return f"{instr.fmt} {instr.raw.hex()}"

def _sources(raw:int) -> tuple[int, int, int]:
  """src0, src1, src2 codes of a 64-bit VOP3/VOP3SD/VOP3P encoding (its second dword)."""
  return (raw >> 32) & 0x1ff, (raw >> 41) & 0x1ff, (raw >> 50) & 0x1ff

def _split(cls_name:str) -> tuple[str, str, bool]:
  for sfx in VARIANTS:
    if cls_name.endswith(sfx):
      base = cls_name[:-len(sfx)]
      return base, ("LIT" if "LIT" in sfx else "SDWA" if "SDWA" in sfx else "" if sfx == "_SDST" else sfx[1:]), "SDST" in sfx and "SDWA" not in sfx
  return cls_name, "", False

_cache: dict[tuple, Instr] = {}   # by own_key (16 bytes of code in view), else by (family, bytes) (fewer at a mapping's end)
_sizes: dict[tuple[str, bytes], tuple[int, ...]] = {}   # (family, first dword) -> sizes of the instructions cached with it

@functools.cache
def detection_bits(spec:ArchSpec) -> tuple[tuple[int, int], ...]:
  """(dword, mask) of the bits after the first dword that the wheel's format detection reads for `spec`'s family: the fixed and
  opcode-set fields of any of its encoding classes (CDNA's VOP3PX2 has some in the third dword; RDNA's are all in the first)."""
  masks: dict[int, int] = {}
  for cls in vars(spec.ins).values():
    if isinstance(cls, type) and issubclass(cls, Inst) and cls is not Inst:
      for _, f in cls._fields:
        if f.lo >= 32 and (isinstance(f, FixedBitField) or (isinstance(f, EnumBitField) and f.allowed is not None)):
          masks[f.lo // 32] = masks.get(f.lo // 32, 0) | (f.mask << (f.lo % 32))
  return tuple(sorted(masks.items()))

def own_key(data:bytes, spec:ArchSpec, size:int) -> tuple:
  """What decoding the `size`-byte instruction at the start of `data` (16 bytes) depends on: its own bytes and the detection bits
  (detection_bits) of the dwords after it. The same instruction followed by other code decodes the same, and is cached once."""
  return (spec.family, data[:size], tuple(int.from_bytes(data[4 * k:4 * k + 4], "little") & m for k, m in detection_bits(spec) if 4 * k >= size))
# formats the wheel's decoder does not detect for a family: (class name, bits [31:26] of the first dword). RDNA3's MUBUF carries
# the cache invalidations LLVM emits for acquire fences (buffer_gl0_inv, buffer_gl1_inv); its other ops are not emulated (steps.py)
UNDETECTED = {"rdna3": (("MUBUF", 0x38),)}

# class suffix -> the src0 code (bits [8:0]) the wheel's detection requires of it
VARIANT_SRC0 = (("_SDWA", SDWA_SRC0), ("_SDWA_SDST", SDWA_SRC0), ("_DPP16", DPP16_SRC0))

@functools.cache
def format_checks(family:str) -> tuple[tuple[type[Inst], int, tuple, tuple, int | None], ...]:
  """The wheel's format detection (tinygrad.renderer.amd.detect_format) for `family` as data: its encoding classes in its order, each
  with the bytes its fields need, (dword, mask, value) of its fixed fields (one per dword), (dword, shift, mask, opcodes) of its opcode
  fields that allow only some opcodes, and the src0 code its variant suffix requires. The wheel checks each class by walking its field
  objects (decoding the opcode to an enum member for the allowed test): most of a first-seen instruction's decode time."""
  out = []
  for cls in _load_formats()[family]:
    fixed: dict[int, tuple[int, int]] = {}
    allowed = []
    for _, f in cls._fields:
      k, sh = f.lo // 32, f.lo % 32   # the wheel reads each field from its first dword only
      if isinstance(f, FixedBitField):
        m, v = (f.mask << sh) & 0xffffffff, f.default << sh   # (a value with bits past the dword never matches, as in the wheel)
        fixed[k] = (fixed.get(k, (0, 0))[0] | m, fixed.get(k, (0, 0))[1] | v)
      elif isinstance(f, EnumBitField) and f.allowed is not None: allowed.append((k, sh, f.mask, frozenset(m.value for m in f.allowed)))
    need = max(4 * (f.lo // 32 + 1) for _, f in cls._fields)
    src0 = next((code for sfx, code in VARIANT_SRC0 if cls.__name__.endswith(sfx)), None)
    out.append((cls, need, tuple((k, m, v) for k, (m, v) in fixed.items()), tuple(allowed), src0))
  return tuple(out)

def detect(data:bytes, family:str) -> type[Inst]:
  """The encoding class the wheel's detect_format picks for `data` (format_checks); ValueError where it finds none."""
  if len(data) < 4: raise ValueError(f"need at least 4 bytes, got {len(data)}")
  words = [int.from_bytes(data[i:i + 4], "little") for i in range(0, len(data) - 3, 4)]
  for cls, need, fixed, allowed, src0 in format_checks(family):
    if len(data) < need: continue
    for k, m, v in fixed:
      if words[k] & m != v: break
    else:
      for k, sh, m, ok in allowed:
        if (words[k] >> sh) & m not in ok: break
      else:
        if src0 is None or words[0] & 0x1ff == src0: return cls
  raise ValueError(f"unknown {family} format word={words[0]:#010x}")

UPGRADE_MARKERS = ("_LIT", "_DPP8", "_DPP16", "_SDWA")   # a class whose name holds one is never moved (none has a variant: a shortcut)
MARKER_VARIANTS = {LITERAL: "_LIT", DPP16_SRC0: "_DPP16"}   # source code -> variant class suffix (249: _SDWA on CDNA, _DPP8 on RDNA)

@functools.cache
def _source_fields(cls:type[Inst]) -> tuple[str, ...]:
  return tuple(n for n, f in cls._fields if isinstance(f, SrcField))

def from_bytes(cls:type[Inst], data:bytes) -> Inst:
  """The instruction of class `cls` in `data` as the wheel's Inst.from_bytes builds it: a class that is no variant moves to its
  _LIT / _DPP16 / _DPP8 (CDNA: _SDWA) variant, where the family has one, when its first source field holding a marker code
  holds 255 / 250 / 249, and a VOPD with an FMAMK/FMAAK half to its _LIT. Read from the bits: the wheel reads each source as a
  register sized from the operand table, a third of a first-seen instruction's decode time."""
  inst = object.__new__(cls)
  inst._raw = int.from_bytes(data[:cls._base_size], "little")
  if any(m in cls.__name__ for m in UPGRADE_MARKERS): return inst
  if any(field_of(cls, f) is not None and any(k in getattr(inst, f).name for k in ("FMAMK", "FMAAK")) for f in ("opx", "opy")): suffix = "_LIT"
  else:
    c = next((c for n in _source_fields(cls) if (c := code(inst, n)) in (SDWA_SRC0, DPP16_SRC0, LITERAL)), None)
    suffix = ("_SDWA" if "cdna" in cls.__module__ else "_DPP8") if c == SDWA_SRC0 else MARKER_VARIANTS.get(c)
  variant = getattr(sys.modules[cls.__module__], cls.__name__ + suffix, None) if suffix else None
  return inst if variant is None else from_bytes(variant, data)

def _decode_inst(data:bytes, spec:ArchSpec) -> Inst:
  try: return from_bytes(detect(data, spec.family), data)
  except ValueError:
    word = int.from_bytes(data[:4], "little")
    if (cls := next((c for c, enc in UNDETECTED.get(spec.family, ()) if word >> 26 == enc), None)) is None: raise
    return from_bytes(getattr(spec.ins, cls), data)

def decode(data:bytes, spec:ArchSpec, pc:int=0) -> Instr:
  """Decode the instruction at the start of `data` (up to 16 bytes; fewer only at the end of a mapping)."""
  if full := len(data) == 16:
    for n in _sizes.get(first := (spec.family, data[:4]), ()):
      if (hit := _cache.get(own_key(data, spec, n))) is not None: return hit
  elif (hit := _cache.get((spec.family, data))) is not None: return hit
  try:
    inst = _decode_inst(data, spec)
    base, variant, sdst = _split(type(inst).__name__)
    if variant == "" and spec.dpp == "rdna" and base in ("VOP1", "VOP2", "VOPC", "VOP3", "VOP3SD", "VOP3P") and \
        (dpp := DPP_SRC0.get(inst._raw & 0x1ff if base in ("VOP1", "VOP2", "VOPC") else (inst._raw >> 32) & 0x1ff)) is not None:
      variant, fi = dpp
      inst = from_bytes(getattr(spec.ins, f"{base}_{variant}"), data)
      if variant == "DPP8": inst.dpp8_fi = fi
    if variant == "" and spec.dpp == "rdna" and base in ("VOP3", "VOP3SD", "VOP3P") and LITERAL in _sources(inst._raw) and \
        (lit := getattr(spec.ins, f"{type(inst).__name__}_LIT", None)) is not None:
      inst, variant = from_bytes(lit, data), "LIT"
    if variant == "" and spec.dpp == "gfx9" and base in SDWA_CLASSES and inst._raw & 0x1ff == SDWA_SRC0:
      inst, variant = from_bytes(getattr(spec.ins, SDWA_CLASSES[base]), data), "SDWA"
    if variant == "" and spec.dpp == "gfx9" and base == "VOP3P" and parse(inst.op.name).words[0] in MATRIX_OPS:
      inst, variant = from_bytes(spec.ins.VOP3P_MFMA, data), "MFMA"
    if not spec.vop3_literal and base in ("VOP3", "VOP3SD", "VOP3P") and LITERAL in _sources(inst._raw):
      raise ValueError(f"{base} source code {LITERAL} (a literal): {spec.name} VOP3 encodings take no literal dword")
    if base in ("VOP1", "VOP3") and variant != "SDWA": sdst = sdst or sgpr_dest(inst)
    size = inst.size()
    if size > len(data): raise ValueError(f"instruction needs {size} bytes, only {len(data)} mapped")
  except (ValueError, RuntimeError, AssertionError) as e:
    raise GPUIllegalInstruction(pc, data[:8], f"cannot decode as {spec.name}: {e}") from None
  instr = Instr(inst, FMT_ALIASES.get(base, base), variant, sdst, size, bytes(data[:size]))
  if full:
    _cache[own_key(data, spec, size)] = instr
    if size not in (sizes := _sizes.get(first, ())): _sizes[first] = sizes + (size,)
  else: _cache[(spec.family, data)] = instr
  return instr
