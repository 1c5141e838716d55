"""Warp-level matrix multiply-accumulate, `mma.sync.aligned.<shape>.row.col.<dtype>.<atype>.<btype>.<ctype> d, a, b, c`: the
forms the emulator runs, where each lane's fragment elements sit in the logical matrices, and the arithmetic.

Fragment layouts: PTX ISA 9.x section 9.7.14.5, "Matrix Fragments for mma.mMnNkK" (one subsection per shape, a figure per
operand and type). Every m16n8kK and m8n8kK layout given there for the types below follows one rule, written once here
(`position`). With groupID = %laneid >> 2, threadID_in_group = %laneid % 4 and P = 32 / bits elements per 32-bit register
(low bits first):
  A (M x K): element i is element e = i % P of register j = i // P; registers step through the M/8 row groups first:
             row = groupID + 8 * (j % (M/8)), col = threadID_in_group * P + e + 4P * (j // (M/8))
  B (K x N): row = threadID_in_group * P + e + 4P * j, col = groupID
  C, D (M x N): row = groupID + 8 * (i // 2), col = threadID_in_group * 2 + i % 2   (f16 accumulators two per register)
tests/unit/nv/test_mma.py checks it against the ISA's own per-figure formulas, written out there separately for each form.

Arithmetic (the ISA does not document the order in which the hardware adds): float forms multiply exactly and add in float64,
rounding once to the accumulator type; integer forms add exactly and wrap to s32, or clamp with `.satfinite`. tf32 operands
are f32 registers whose low 13 mantissa bits are not read.
"""
from __future__ import annotations
from dataclasses import dataclass
from functools import cache
import numpy as np
from emu.pcode import numerics as N

# shape -> the input types the ISA defines mma.sync for at that shape (sm_80+: f16/bf16/tf32/integers; sm_89+: fp8)
SHAPES: dict[str, tuple[str, ...]] = {
  "m16n8k4": ("tf32",), "m16n8k8": ("f16", "bf16", "tf32"), "m16n8k16": ("f16", "bf16", "e4m3", "e5m2", "s8", "u8"),
  "m16n8k32": ("e4m3", "e5m2", "s8", "u8", "s4", "u4"), "m16n8k64": ("s4", "u4"), "m8n8k16": ("s8", "u8"), "m8n8k32": ("s4", "u4")}
BITS = {"f16": 16, "bf16": 16, "tf32": 32, "e4m3": 8, "e5m2": 8, "s8": 8, "u8": 8, "s4": 4, "u4": 4}
FP8 = ("e4m3", "e5m2")
INTEGER = ("s8", "u8", "s4", "u4")
# input type -> the accumulator types (.dtype and .ctype, each) the ISA allows with it
ACCUMULATORS = {"f16": ("f16", "f32"), "bf16": ("f32",), "tf32": ("f32",), "e4m3": ("f16", "f32"), "e5m2": ("f16", "f32"),
                **{t: ("s32",) for t in INTEGER}}
TYPES = tuple(BITS) + ("f32", "s32", "f64")   # f64: accepted to be refused by name (NOT_MODELLED)
NOT_MODELLED = {"m8n8k4": "m8n8k4 (the sm_70 quad-pair layout and the f64 form) is not modelled by the emulator",
                "f64": "mma on .f64 is not modelled by the emulator"}
MODIFIERS = ("sync", "aligned", "row", "col", "satfinite", *SHAPES, "m8n8k4")   # m8n8k4: accepted to be refused by name

class FormError(ValueError):
  """An mma the ISA does not define (or the emulator does not model), with the reason."""

@dataclass(frozen=True)
class Form:
  """One mma form: shape M x N x K, the input types of A and B, the accumulator types of D and C, `.satfinite`."""
  m: int
  n: int
  k: int
  atype: str
  btype: str
  dtype: str
  ctype: str
  satfinite: bool

  def registers(self, operand:str) -> int:
    """How many 32-bit registers the operand's vector has in every lane."""
    if operand in "ab":
      bits = BITS[self.atype if operand == "a" else self.btype]
      return (self.m if operand == "a" else self.n) * self.k * bits // 32 // 32
    per = 2 if (self.dtype if operand == "d" else self.ctype) == "f16" else 1
    return self.m * self.n // 32 // per

def form(mods:tuple[str, ...]) -> Form:
  """The form an mma's modifiers name; FormError (why) for one the ISA does not define or the emulator does not model."""
  for m in mods:
    if m in NOT_MODELLED: raise FormError(NOT_MODELLED[m])
  shapes = [m for m in mods if m in SHAPES]
  if len(shapes) != 1: raise FormError("mma needs one shape (.m16n8k8, .m16n8k16, ...)")
  if not {"sync", "aligned"} <= set(mods): raise FormError("mma needs .sync.aligned")
  if [m for m in mods if m in ("row", "col")] != ["row", "col"]: raise FormError("mma with these shapes takes exactly .row.col")
  types = [m for m in mods if m in TYPES]
  if len(types) != 4: raise FormError("mma needs four types: .dtype.atype.btype.ctype")
  dtype, atype, btype, ctype = types
  shape = shapes[0]
  m, n, k = (int(x) for x in shape[1:].replace("n", " ").replace("k", " ").split())
  for t in (atype, btype):
    if t not in SHAPES[shape]: raise FormError(f"mma.{shape} does not take .{t} inputs (it takes {', '.join(SHAPES[shape])})")
  same = atype == btype or {atype, btype} <= set(FP8) or {atype, btype} <= {"s8", "u8"} or {atype, btype} <= {"s4", "u4"}
  if not same: raise FormError(f"mma does not multiply .{atype} by .{btype}")
  for t in (dtype, ctype):
    if t not in ACCUMULATORS[atype]: raise FormError(f"mma with .{atype} inputs accumulates in {', '.join(ACCUMULATORS[atype])}, not .{t}")
  satfinite = "satfinite" in mods
  if satfinite and atype not in INTEGER: raise FormError("mma takes .satfinite only with integer inputs")
  return Form(m, n, k, atype, btype, dtype, ctype, satfinite)

def position(kind:str, f:Form, lane:np.ndarray, i:int) -> tuple[np.ndarray, np.ndarray]:
  """(row, col) in the logical matrix of element i of each lane's `kind` ('a', 'b' or 'c' for C and D) fragment (module
  docstring)."""
  g, tig = lane >> 2, lane % 4
  if kind == "c": return g + 8 * (i // 2), tig * 2 + i % 2
  per = 32 // BITS[f.atype if kind == "a" else f.btype]
  j, e = divmod(i, per)
  if kind == "b": return tig * per + e + 4 * per * j, g
  groups = f.m // 8
  return g + 8 * (j % groups), tig * per + e + 4 * per * (j // groups)

@cache
def _lanes_of(kind:str, f:Form, count:int) -> tuple[np.ndarray, np.ndarray]:
  """For each of a warp's 32 lanes and `count` elements: the flat index of the element in the logical matrix."""
  cols = f.k if kind == "a" else f.n
  lane = np.arange(32)
  out = np.stack([(lambda rc: rc[0] * cols + rc[1])(position(kind, f, lane, i)) for i in range(count)], axis=1)
  return out, lane

def elements(words:list[np.ndarray], typ:str) -> np.ndarray:
  """The fragment elements 32-bit registers hold, low bits first, as (lanes, elements): float64 for floats, int64 for integers."""
  w = np.stack([np.asarray(x, np.uint32) for x in words], axis=1)   # (lanes, registers)
  if typ in ("f32", "tf32", "s32"):
    if typ == "s32": return w.view(np.int32).astype(np.int64)
    if typ == "tf32": w = w & np.uint32(0xffffe000)
    return w.view(np.float32).astype(np.float64)
  bits = BITS[typ]
  per = 32 // bits
  parts = (w[:, :, None] >> (np.arange(per, dtype=np.uint32) * bits)) & np.uint32((1 << bits) - 1)
  parts = parts.reshape(len(w), -1)
  if typ == "f16": return parts.astype(np.uint16).view(np.float16).astype(np.float64)
  if typ == "bf16": return (parts << np.uint32(16)).view(np.float32).astype(np.float64)
  if typ in FP8: return N.decode(parts, N.FP8 if typ == "e4m3" else N.BF8).astype(np.float64)
  signed = typ[0] == "s"
  v = parts.astype(np.int64)
  return v - ((v >> (bits - 1)) << bits) if signed else v

def words_of(values:np.ndarray, typ:str) -> list[np.ndarray]:
  """Accumulator values (lanes, elements) as the 32-bit registers of D, low half first for f16."""
  if typ == "f32": return [values[:, i].astype(np.float32).view(np.uint32) for i in range(values.shape[1])]
  if typ == "s32": return [values[:, i].astype(np.int32).view(np.uint32) for i in range(values.shape[1])]
  h = values.astype(np.float16).view(np.uint16).astype(np.uint32)
  return [h[:, 2 * j] | (h[:, 2 * j + 1] << np.uint32(16)) for j in range(values.shape[1] // 2)]

def multiply(f:Form, a:np.ndarray, b:np.ndarray, c:np.ndarray) -> np.ndarray:
  """D = A @ B + C for each warp: `a`, `b`, `c` are (warps, 32, elements) fragments as `elements` gives them; returns D's
  fragment the same way (float64 or int64, before rounding to the accumulator type)."""
  warps = a.shape[0]
  mats = {}
  for kind, frag, shape in (("a", a, (f.m, f.k)), ("b", b, (f.k, f.n)), ("c", c, (f.m, f.n))):
    flat, _ = _lanes_of(kind, f, frag.shape[2])
    mat = np.zeros((warps, shape[0] * shape[1]), frag.dtype)
    mat[:, flat.reshape(-1)] = frag.reshape(warps, -1)
    mats[kind] = mat.reshape(warps, *shape)
  d = mats["a"] @ mats["b"] + mats["c"]
  if f.atype in INTEGER:
    d = np.clip(d, -2**31, 2**31 - 1) if f.satfinite else (d + 2**31) % 2**32 - 2**31
  flat, _ = _lanes_of("c", f, c.shape[2])
  return d.reshape(warps, -1)[:, flat]
