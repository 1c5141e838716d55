"""Operand meaning: what a source code (0-511) denotes and how its bits are fetched, modified and written back.

Owned here, not by the pcode: inline constants (128-208 integers, 240-248 floats in the operand's own float format,
248 = 1/(2*pi)), literals (a 32-bit literal for a 64-bit float operand is its high half; for 64-bit integer operands it is
zero-extended, as LLVM's disassembler models it), NULL/M0/VCC/EXEC/SCC/VCCZ/EXECZ numbering, 16-bit halves, neg/abs
on float operands, and clamp/omod on float results.
"""
from __future__ import annotations
import functools, struct
from dataclasses import dataclass
import numpy as np
from tinygrad.runtime.autogen.amd.common import Fmt
from emu.amd.arch import ArchSpec
from emu.amd.decode import SGPR_DEST_TYPES, Instr, code, field_of
from emu.amd.mnemonic import parse
from emu.amd.wave import WaveState

U64 = np.uint64
INV_2PI = 0.15915494309189535
_FLOATS = {240: 0.5, 241: -0.5, 242: 1.0, 243: -1.0, 244: 2.0, 245: -2.0, 246: 4.0, 247: -4.0, 248: INV_2PI}
# exact encodings of 1/(2*pi) the hardware uses per width (the f16/f32 ones are not plain roundings of each other)
_INV_2PI_BITS = {16: 0x3118, 32: 0x3e22f983, 64: 0x3fc45f306dc9c882}
VCCZ, EXECZ, SCC_SRC, LDS_DIRECT, LIT_SRC = 251, 252, 253, 254, 255
APERTURES = range(235, 239)   # SHARED_BASE/LIMIT, PRIVATE_BASE/LIMIT (ArchSpec.aperture_values; a 32-bit read gets the low half)

def operand_fmt(operands:dict, field:str) -> Fmt | None:
  """The format the wheel's operand table gives encoding field `field`. The tables name a source 'srcN' or 'vsrcN' either way
  round (VOP2's VGPR-only S1 is field vsrc1, entry 'vsrc1'; rdna4's VOP3 table calls most ops' field src0 'vsrc0')."""
  return next((operands[k][0] for k in (field, field.removeprefix("v"), "v" + field) if k in operands), None)

def float_kind(fmt:Fmt|None) -> int:
  """Float width (16/32/64) an operand format holds, or 0 for integer/bit formats. Packed f16 counts as 16; bf16 as 0."""
  name = fmt.name if fmt is not None else ""
  if "BF16" in name: return 0
  for w in (16, 32, 64):
    if name.endswith(f"F{w}"): return w
  return 0

# ops whose bit-typed sources take the float input modifiers anyway (neg/abs on the sign bit at this width): the ISA's selects. LLVM
# gives V_CNDMASK FP32/FP16 input modifiers and uses them for sign selects (`v_cndmask_b32_e64 v0, -s8, s9, s4` in tinygrad's sin).
FLOAT_MODIFIER_OPS = {"V_CNDMASK_B32": 32, "V_CNDMASK_B16": 16}

def modifier_float_kind(op, i:int, fmt:Fmt|None) -> int:
  """Float width (16/32/64) at which the neg/abs input modifiers apply to source `i` of the VALU op `op` (its CompiledOp), or 0
  for none. A float-format operand qualifies unless the compiled pcode reads it only as an integer (`op.views`: V_LDEXP_F16's
  exponent, V_CMP_CLASS_F16's class mask; the wheel's operand table calls them F16); bit-typed operands only for the ops of
  FLOAT_MODIFIER_OPS."""
  if (base := parse(op.name).name) in FLOAT_MODIFIER_OPS: return FLOAT_MODIFIER_OPS[base]
  if (kind := float_kind(fmt)) and (views := op.views.get(f"S{i}")) and not views & {"f", "bf"}: return 0
  return kind

def float_bits(x:float, width:int) -> int:
  """IEEE bits of x at `width` (16, 32 or 64)."""
  if x == INV_2PI: return _INV_2PI_BITS[width]
  return {16: lambda: int(np.float16(x).view(np.uint16)), 32: lambda: struct.unpack("<I", struct.pack("<f", x))[0],
          64: lambda: struct.unpack("<Q", struct.pack("<d", x))[0]}[width]()

def inline_constant(code:int, bits:int, fkind:int) -> int | None:
  """Raw bits of inline constant `code` for an operand of `bits` width and float kind `fkind`; None if code is no constant. On a
  packed operand (VOP3P's two halves) the constant is the low half and the high half is 0: it is not replicated (docs/emulator.md)."""
  mask = (1 << min(bits, 64)) - 1
  if 128 <= code <= 208: return (code - 128 if code <= 192 else 192 - code) & mask
  if code in _FLOATS: return float_bits(_FLOATS[code], fkind or (64 if bits == 64 else 16 if bits == 16 else 32))
  return None

@dataclass(frozen=True)
class Src:
  """One decoded source operand."""
  kind: str          # 'sgpr' | 'vgpr' | 'const' | 'scc' | 'vccz' | 'execz'
  reg: int = 0       # register number (SGPR operand number, or VGPR index)
  bits: int = 32
  value: int = 0     # raw bits of a constant or literal
  hi: bool = False   # 16-bit operand taken from bits 31:16

  @property
  def nregs(self) -> int: return max(1, (self.bits + 31) // 32)

  def read_lanes(self, st:WaveState, wv:np.ndarray, ln:np.ndarray, dense:slice|None=None) -> np.ndarray:
    """Raw bits for each (wave, lane) pair: uint64 (n,), or uint32 (n, k) for operands wider than 64 bits.
    `dense`: the pairs are every lane of the waves in this slice, in order (read by slicing instead of gathering)."""
    if self.kind != "vgpr": return self.read_waves(st, wv)
    if self.bits > 64:
      if dense is not None: return st.vgpr[dense, :, self.reg:self.reg + self.nregs].reshape(-1, self.nregs)
      return st.vgpr[wv[:, None], ln[:, None], self.reg + np.arange(self.nregs)]
    at = (lambda r: st.vgpr[dense, :, r].astype(U64).reshape(-1)) if dense is not None else (lambda r: st.vgpr[wv, ln, r].astype(U64))
    return self.assemble(at(self.reg), at(self.reg + 1) if self.bits == 64 else None)

  def assemble(self, word0, word1=None):
    """The operand's bits from its first register's 32-bit word and, for a 64-bit operand, the next one's (uint64 lanes, or
    lanes_ir.Bits in a native region): the pair's value, a 16-bit operand's half, or the word. (A bit rule: see apply_neg_abs.)"""
    v = word0 | (word1 << 32) if self.bits == 64 else word0
    return (v >> 16) & 0xffff if self.hi else v & 0xffff if self.bits == 16 else v

  def read_lanes32(self, st:WaveState, wv:np.ndarray, ln:np.ndarray, dense:slice|None=None) -> np.ndarray:
    """A 32-bit VGPR's bits for each (wave, lane) pair as uint32 (n,): what an op that reads the operand only as a float takes
    (abi.py), without widening to uint64. Read-only: it may be a view of the register file."""
    v = st.vgpr[dense, :, self.reg].reshape(-1) if dense is not None else st.vgpr[wv, ln, self.reg]
    v.flags.writeable = False
    return v

  def _sgpr_lanes(self, st:WaveState, wv:np.ndarray) -> np.ndarray:
    if self.bits > 64: return st.sgpr[wv[:, None], self.reg + np.arange(self.nregs)]
    return self.assemble(st.sgpr[wv, self.reg].astype(U64), st.sgpr[wv, self.reg + 1].astype(U64) if self.bits == 64 else None)

  def read_waves(self, st:WaveState, ws:np.ndarray) -> np.ndarray:
    """One uint64 value per wave (scalar operands only)."""
    if self.kind == "const": return np.full(len(ws), self.value, dtype=U64)
    if self.kind == "sgpr": return self._sgpr_lanes(st, ws)
    if self.kind == "scc": return st.scc[ws].astype(U64)
    reg = st.spec.vcc_lo if self.kind == "vccz" else st.spec.exec_lo
    z = st.sgpr[ws, reg] == 0
    if st.lanes == 64: z &= st.sgpr[ws, reg + 1] == 0
    return z.astype(U64)

  def read_int(self, st:WaveState, w:int) -> int:
    """The operand of one wave as a Python int (scalar ops)."""
    if self.kind == "sgpr" and self.bits > 64: return sum(int(st.sgpr[w, self.reg + i]) << (32 * i) for i in range(self.nregs))
    return int(self.read_waves(st, np.array([w]))[0])

def resolve_src(code:int, bits:int, fmt:Fmt|None, literal:int|None, spec:ArchSpec) -> Src:
  """Decode source operand `code` (0-511) of `bits` width."""
  if code >= 256: return Src("vgpr", code - 256, bits)
  if code == LIT_SRC:
    lit = literal or 0
    return Src("const", bits=bits, value=(lit << 32) if bits == 64 and float_kind(fmt) == 64 else lit)
  if (c := inline_constant(code, bits, float_kind(fmt))) is not None: return Src("const", bits=bits, value=c)
  if code == SCC_SRC: return Src("scc", bits=bits)
  if code == VCCZ: return Src("vccz", bits=bits)
  if code == EXECZ: return Src("execz", bits=bits)
  if code in APERTURES: return Src("const", bits=bits, value=spec.aperture_values()[code] & ((1 << min(bits, 64)) - 1))
  if code == spec.null_reg: return Src("const", bits=bits, value=0)
  if code < 128: return Src("sgpr", code, bits)
  raise ValueError(f"source operand {code} is not valid")

N_SCALAR_OPERANDS, N_VGPRS = 128, 256   # scalar register operand numbers s0..EXEC_HI; VGPRs per lane (each file: VGPRs, CDNA's AGPRs)
SADDR_OFF = 0x7f   # gfx9 encodes "no SADDR" as 0x7f (RDNA as NULL): no register is read

def register_overrun(instr:Instr) -> str|None:
  """Why an instruction's register operand runs past the end of its register file (a 64-bit source at EXEC_HI, v[255:256], an
  SGPR block past s127), or None. Widths come from the wheel's operand table (`Instr.operands`: field -> (format, bits, type)),
  so every format is covered the same way; an operand the table does not list is not checked."""
  inst = instr.inst
  for name, (_, bits, typ) in instr.operands.items():
    off = code(inst, f"v{name}") if name.startswith("src") and field_of(type(inst), f"v{name}") is not None else code(inst, name)  # DPP/SDWA
    if off is None or (name == "saddr" and off == SADDR_OFF): continue
    count = max(1, (bits + 31) // 32)
    if typ.name.startswith(SGPR_DEST_TYPES) and "dst" in name:   # an SGPR destination, also in a VGPR-typed field (VOP3 compares)
      if off >= 256: off -= 256
      if off + count > N_SCALAR_OPERANDS: return f"{name} (an SGPR destination) is operand {off}, not s0..s{N_SCALAR_OPERANDS - count}"
    if off >= 256 and off - 256 + count > N_VGPRS: return f"{name} v[{off - 256}:{off - 256 + count - 1}] runs past v{N_VGPRS - 1}"
    if off < N_SCALAR_OPERANDS and off + count > N_SCALAR_OPERANDS:
      return f"{name} s[{off}:{off + count - 1}] runs past the scalar register operands (EXEC_HI is {N_SCALAR_OPERANDS - 1})"
  return None

# ---- modifiers ----
# The bit rules below are written once over the bit operators (&, |, ^, <<, >> with Python-int constants): the numpy path applies
# them to uint64/uint32 lane arrays, the native regions to emu.pcode.lanes_ir.Bits, which emit the same operations as LLVM IR.
MASK64 = (1 << 64) - 1

def apply_neg_abs(v, width:int, neg:bool, abs_:bool):
  """Sign-bit abs/neg on float raw bits of `width`."""
  sign = 1 << (width - 1)
  if abs_: v = v & (MASK64 ^ sign)
  if neg: v = v ^ sign
  return v

def packed_halves(v, h:int, fkind:int, packed:tuple):
  """A VOP3P source of two `h`-bit halves (16-bit halves of a dword, CDNA's packed f32 halves of a register pair) from raw bits v:
  the op_sel half low, the op_sel_hi half high, each sign flipped by neg_lo / neg_hi on a float operand (`packed`: (op_sel,
  op_sel_hi, neg_lo, neg_hi) of this source)."""
  (lo_sel, hi_sel, neg_lo, neg_hi), mask, sign = packed, (1 << h) - 1, 1 << (h - 1)
  def half(sel:int, neg:int):
    x = (v >> (h * sel)) & mask
    return x ^ sign if fkind and neg else x
  return half(lo_sel, neg_lo) | (half(hi_sel, neg_hi) << h)

def merge_half(old, value, hi:bool):
  """A 16-bit result written into one half of a 32-bit register whose bits are `old`: the other half kept."""
  return (old & 0xffff) | ((value & 0xffff) << 16) if hi else (old & 0xffff0000) | (value & 0xffff)

_FT = {16: (np.float16, np.uint16), 32: (np.float32, np.uint32), 64: (np.float64, np.uint64)}

def omod_applies(mode:dict, width:int, ieee_bit:bool) -> bool:
  """Whether the hardware applies a float result's omod under the wave's MODE (`WaveState.mode`): not in IEEE mode (archs with the
  IEEE bit) and not when output denormals of the result's width are kept (MODE.FP_DENORM bit 1 of its field). This is LLVM's
  account of the hardware (SIFoldOperands folds omod only then: "omod is ignored by hardware if IEEE bit is enabled", "if output
  denormals are enabled, omod is ignored"); the ISA guides describe only the scaling. LLVM's compute kernels keep denormals (and
  set IEEE up to gfx11), so omod is ignored there."""
  if ieee_bit and mode["MODE_IEEE"]: return False
  return not (mode["MODE_DENORM32" if width == 32 else "MODE_DENORM16"] & 2)

def apply_omod_clamp(v:np.ndarray, width:int, omod:int, clamp:bool, packed:bool=False) -> np.ndarray:
  """Output modifiers of a float result: omod 1 = *2, 2 = *4, 3 = /2, then clamp to [0, 1]. `packed`: v holds two floats of
  width/2 (a VOP3P result: f16 pairs, CDNA's f32 pairs), each modified on its own."""
  if packed:
    h = width // 2
    m = U64((1 << h) - 1)
    return apply_omod_clamp(v & m, h, omod, clamp) | (apply_omod_clamp((v >> U64(h)) & m, h, omod, clamp) << U64(h))
  if not (omod or clamp) or width not in _FT: return v
  ft, it = _FT[width]
  f = (v & U64((1 << width) - 1)).astype(it).view(ft)
  with np.errstate(all="ignore"):
    if omod: f = f * ft((2.0, 4.0, 0.5)[omod - 1])
    if clamp: f = np.where(np.isnan(f), ft(0), np.clip(f, ft(0), ft(1)))
  return f.astype(ft).view(it).astype(U64)

# integer clamp (CLMP on an integer op): the exact result of these ops, saturated to the destination type instead of wrapping.
# (operation, data types) of the mnemonic (emu.amd.mnemonic) -> the exact result as a formula over the sources a, b, c as
# Python-sized ints (int64 arrays, already sign-extended for signed types). RDNA names, gfx9's (V_ADD_U32/U16 and V_ADD_I32/I16
# are RDNA's V_ADD_NC_*; V_MAD_LEGACY_U16/I16 are VI's V_MAD_U16/I16), and VOP3P's V_PK_ADD/SUB_{U,I}16, saturated per 16-bit
# half (LLVM selects them with clamp for v2i16 add/sub sat; the packed mads define none). Carry-in ops get the lane's carry-in bit
# as c. `python -m emu.amd.card` prints an op's formula.
_NARROW = ("U16", "U32", "I16", "I32")
INT_CLAMP_OPS: dict[tuple[str, tuple[str, ...]], str] = {
  **{(op, (t,)): f for op, f in (("ADD_NC", "a + b"), ("SUB_NC", "a - b"), ("SUBREV_NC", "b - a"), ("ADD", "a + b"), ("SUB", "a - b"))
     for t in _NARROW},
  ("SUBREV", ("U16",)): "b - a", ("SUBREV", ("U32",)): "b - a", ("ADD3", ("U32",)): "a + b + c",
  ("ADD_CO", ("U32",)): "a + b", ("SUB_CO", ("U32",)): "a - b", ("SUBREV_CO", ("U32",)): "b - a",
  **{(op, (t,)): "a * b + c" for op in ("MAD", "MAD_LEGACY") for t in ("U16", "I16")},
  ("MAD", ("U32", "U24")): "u24(a) * u24(b) + c", ("MAD", ("I32", "I24")): "i24(a) * i24(b) + c",
  **{(f"PK_{o}", (t,)): f for o, f in (("ADD", "a + b"), ("SUB", "a - b")) for t in ("U16", "I16")},
  ("ADD_CO_CI", ("U32",)): "a + b + c", ("SUB_CO_CI", ("U32",)): "a - b - c", ("SUBREV_CO_CI", ("U32",)): "b - a - c",
  ("ADDC_CO", ("U32",)): "a + b + c", ("SUBB_CO", ("U32",)): "a - b - c", ("SUBBREV_CO", ("U32",)): "b - a - c"}
_FORMULA_NAMES = {"u24": lambda x: x & 0xffffff, "i24": lambda x: ((x & 0xffffff) ^ 0x800000) - 0x800000}

def int_clamp_formula(name:str) -> str | None:
  """The exact result INT_CLAMP_OPS gives the integer op `name` before saturation (over sources a, b, c), None if none."""
  m = parse(name)
  return INT_CLAMP_OPS.get((m.operation, m.types)) if m.prefix == "V" else None

class IntClamp:
  """(raw sources S0, S1, S2 as uint64 (the carry-in bit instead of S2 for the carry-in ops), the op's D0) -> D0 with the result bits
  replaced by the saturated result of integer op `name` (bits above the type's width, e.g. the high half of a 16-bit op, kept
  from D0). V_PK_* ops saturate each 16-bit half from the same half of the (op_sel-selected) sources. Pickled by the op's name."""
  def __init__(self, name:str, formula:str):
    m = parse(name)
    # the table's own text: one source for the card and the executor
    self.name, self.fn = name, eval(f"lambda a, b, c: {formula}", dict(_FORMULA_NAMES))
    typ = m.types[0]
    self.signed, self.bits = typ[0] == "I", int(typ[1:])
    self.lo, self.hi = (-(1 << (self.bits - 1)), (1 << (self.bits - 1)) - 1) if self.signed else (0, (1 << self.bits) - 1)
    self.mask = U64((1 << self.bits) - 1)
    self.shifts = (0, 16) if m.words[0] == "PK" else (0,)

  def __call__(self, srcs:list[np.ndarray], d0:np.ndarray) -> np.ndarray:
    d, bits, mask = np.asarray(d0, dtype=U64), self.bits, self.mask
    for sh in self.shifts:
      vals = [((np.asarray(x, dtype=U64) >> U64(sh)) & mask).astype(np.int64) for x in srcs] + [np.int64(0)] * (3 - len(srcs))
      if self.signed: vals = [(v ^ (1 << (bits - 1))) - (1 << (bits - 1)) for v in vals]
      d = (d & ~(mask << U64(sh))) | ((np.clip(self.fn(*vals), self.lo, self.hi).astype(U64) & mask) << U64(sh))
    return d

  def __reduce__(self): return (int_clamp, (self.name,))

@functools.cache
def int_clamp(name:str) -> IntClamp | None:
  """The saturating clamp (IntClamp) of an integer op the table knows, None for any other op; one object per op name."""
  return None if (formula := int_clamp_formula(name)) is None else IntClamp(name, formula)

# ---- destination writes ----
def dest_bits(op_widths:dict[str, int], op_bits:dict[str, int], field:str) -> int:
  """Bits stored for the destination register field `field` (vdst, sdst) of an op writing D0: the ISA operand table's width
  (`inst.op_bits`) when it spans whole registers, not the pcode's widest view of D0 (S_BCNT1_I32_B64's `SCC = D0.u64 != 0` reads
  its 32-bit result as 64 bits); for 16-bit table widths the pcode's (whether the op keeps or zeroes the rest of the register)."""
  table, pcode = op_bits.get(field), op_widths.get("D0")
  if table is not None and (table >= 32 or pcode is None): return table
  return pcode if pcode is not None else 32

def write_vgpr_lanes(st:WaveState, wv:np.ndarray, ln:np.ndarray, reg:int, bits:int, val:np.ndarray, hi:bool=False, dense:slice|None=None):
  """Store `bits` of val (uint64 (n,), or uint32 (n, k) when wider than 64) into VGPR reg.. of each (wave, lane); `dense` as in
  `Src.read_lanes`."""
  if bits > 64:
    k = (bits + 31) // 32
    v = np.asarray(val, dtype=np.uint32)[:, :k]
    if dense is not None: st.vgpr[dense, :, reg:reg + k] = v.reshape(-1, st.lanes, k)
    else: st.vgpr[wv[:, None], ln[:, None], reg + np.arange(k)] = v
    return
  if dense is not None:
    shape = st.vgpr[dense, :, reg].shape
    def put(r:int, x:np.ndarray): st.vgpr[dense, :, r] = x.reshape(shape)
    get = lambda r: st.vgpr[dense, :, r].reshape(-1)
  else:
    def put(r:int, x:np.ndarray): st.vgpr[wv, ln, r] = x
    get = lambda r: st.vgpr[wv, ln, r]
  if bits == 16: put(reg, merge_half(get(reg), (val & 0xffff).astype(np.uint32), hi))
  else:
    # a uint64 array stored into the uint32 registers keeps its low bits (numpy's assignment casts): no mask, no converted copy
    lanes64 = isinstance(val, np.ndarray) and val.dtype == U64
    put(reg, val if lanes64 else (val & U64(0xffffffff)).astype(np.uint32))
    if bits == 64: put(reg + 1, val >> U64(32) if lanes64 else (val >> U64(32)).astype(np.uint32))

def read_vgpr_lanes(st:WaveState, wv:np.ndarray, ln:np.ndarray, reg:int, bits:int, hi:bool=False, dense:slice|None=None) -> np.ndarray:
  """The current value of a VGPR destination (for merging partial writes)."""
  return Src("vgpr", reg, bits, hi=hi).read_lanes(st, wv, ln, dense)

def write_sgpr(st:WaveState, w, reg:int, bits:int, value):
  """Store a scalar result of `bits` width into SGPR reg.. of wave w (an int value), or of waves w (an array; value uint64 (n,),
  bits <= 64, or uint32 (n, k) dwords, any width); writes to NULL are dropped. A 16-bit result replaces the low half and keeps
  the high one, as in a VGPR."""
  if reg == st.spec.null_reg: return
  if isinstance(value, np.ndarray) and value.ndim == 2:
    st.sgpr[w, reg:reg + value.shape[1]] = value
    return
  if bits == 16:
    st.sgpr[w, reg] = (st.sgpr[w, reg] & 0xffff0000) | (value & 0xffff)
    return
  for i in range(max(1, (bits + 31) // 32)): st.sgpr[w, reg + i] = (value >> (32 * i)) & 0xffffffff
