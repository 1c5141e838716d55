"""Hand-written semantics for the override table (see emu.pcode.overrides): ops whose vendor pcode is wrong or prose.

IEEE division (what LLVM emits for an f32/f64 `a / b`):
  d' = V_DIV_SCALE(d, d, n); n' = V_DIV_SCALE(n, d, n) -> VCC; r = V_RCP(d'); Newton steps with V_FMA on d', n', r giving a
  quotient q' and residual e; q = V_DIV_FMAS(e, r, q') (uses VCC); result = V_DIV_FIXUP(q, d, n).
DIV_SCALE scales operands by 2**±64 (f32; 2**±128 for f64) so the Newton steps see no denormals and no overflow. When it scales
numerator and denominator alike the quotient is unchanged (VCC = 0); when it scales only one of them it sets VCC and the
quotient is off by 2**±64, which DIV_FMAS undoes inside its fused multiply-add (one rounding, so denormal quotients round
correctly). Only-one cases: a quotient near overflow (denominator up: DIV_FMAS scales by 2**+64), a denormal quotient and a
tiny numerator (numerator up: 2**-64). DIV_FMAS tells them apart by the scaled quotient S2 and the numerator it came from
(about S2 / S1, S1 being the reciprocal of the scaled denominator): 2**+64 only where both are large. A zero operand gives NaN
with VCC set. DIV_FIXUP handles the special operands (NaN, 0, inf) and a quotient that overflowed in the scaled domain, and
applies the sign. All three read their operands through the MODE's FP_DENORM field of their format: in flush mode a denormal
operand is a zero (x / denormal = inf, as FTZ division gives) and DIV_FMAS/DIV_FIXUP flush a denormal result.
The vendor pcode gets this wrong: DIV_SCALE leaves D0 unwritten when no scaling is needed, writes VCC as a whole register, clears
VCC for a zero operand and a tiny numerator (hardware sets it; docs/emulator.md has the evidence), tests `1.0 / d` for denormal
in f64 (never true for f32 d) and scales a huge denominator up instead of down; DIV_FMAS always scales by 2**32 (2**64 for f64);
DIV_FIXUP names undefined constants (UNDERFLOW_F32, OVERFLOW_F32).
"""
from __future__ import annotations
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable
import numpy as np
from emu.pcode import numerics as N
from emu.pcode import runtime as R
from emu.pcode.abi import FP8_FNUZ, CompiledOp, InvalidField

@dataclass(frozen=True)
class _Fmt:
  ftype: type
  utype: type
  bias: int
  mbits: int
  scale: int     # DIV_SCALE/DIV_FMAS scale exponent
  far: int       # exponent difference n - d from which the quotient is near overflow
  tiny: int      # numerator exponent field at or below which the numerator is too small for the residual

_F32 = _Fmt(np.float32, np.uint32, 127, 23, 64, 96, 23)
_F64 = _Fmt(np.float64, np.uint64, 1023, 52, 128, 768, 53)
_F16 = _Fmt(np.float16, np.uint16, 15, 10, 0, 0, 0)

def _f(bits, f:_Fmt): return np.asarray(bits).astype(f.utype).view(f.ftype)
def _bits(x, f:_Fmt): return np.asarray(x, f.ftype).view(f.utype).astype(np.uint64)
def _expf(x, f:_Fmt): return ((x.view(f.utype).astype(np.int64) >> f.mbits) & (2 * f.bias + 1))

def _mode(st, f:_Fmt) -> int:
  """The FP_DENORM field that governs format f (f32: MODE_DENORM32; f16/f64: MODE_DENORM16); 3 (keep) when absent."""
  return int(getattr(st, "MODE_DENORM32" if f is _F32 else "MODE_DENORM16", 3))

def _flush_in(x, st, f:_Fmt):
  """Operand x of format f as the op reads it: denormals flushed to signed zero unless the MODE keeps input denormals."""
  return x if _mode(st, f) & 1 else N.flush_denorm(x)

def _flush_out(x, st, f:_Fmt):
  """Result x of format f as the op writes it: denormals flushed unless the MODE keeps result denormals."""
  return x if _mode(st, f) & 2 else N.flush_denorm(np.asarray(x, f.ftype))

def div_scale(f:_Fmt):
  """V_DIV_SCALE_F32/F64 (see the module docstring). Denormal operands are flushed first when the MODE flushes inputs, so in
  flush mode a denormal numerator or denominator is a zero. VCC is set whenever numerator and denominator are not scaled
  alike (quotient near overflow, n/d denormal, tiny numerator), and for the NaN of a zero operand (hardware; the vendor
  text clears it there and scales a tiny numerator and the denominator alike)."""
  def op(st):
    s0, d, n = (_flush_in(_f(x, f), st, f) for x in (st.S0, st.S1, st.S2))
    ed, en = _expf(d, f), _expf(n, f)
    with np.errstate(all="ignore"):
      tiny_min = np.float64(2.0) ** (1 - f.bias)
      q64 = n.astype(np.float64) / d.astype(np.float64) if f is _F32 else np.abs(n) / np.abs(d)
      zero = (d == 0) | (n == 0)
      far = ~zero & (en - ed >= f.far)
      d_den = ~zero & ~far & (ed == 0)
      d_huge = ~zero & ~far & ~d_den & (np.abs(d.astype(np.float64)) > 1 / tiny_min)   # 1/d is denormal
      q_den = ~zero & ~far & ~d_den & (np.abs(q64) < tiny_min) & np.isfinite(q64)
      n_tiny = ~zero & ~far & ~d_den & ~d_huge & ~q_den & (en <= f.tiny)
      is_d, is_n = s0.view(f.utype) == d.view(f.utype), s0.view(f.utype) == n.view(f.utype)
      # (each scaling only when some lane takes it: in most divisions none does)
      up = N.ldexp(s0, f.scale) if (far | d_den | q_den | n_tiny).any() else s0
      down = N.ldexp(s0, -f.scale) if d_huge.any() else s0
      out = np.where(zero, np.asarray(np.nan, f.ftype), s0)
      out = np.where(far & is_d, up, out)                    # quotient near overflow: scale only the denominator up
      out = np.where(d_den, up, out)                         # both up: ratio unchanged
      out = np.where(d_huge & q_den & is_d, down, out)       # 1/d and n/d denormal: scale only the denominator down
      out = np.where(d_huge & ~q_den, down, out)             # 1/d denormal: both down
      out = np.where((q_den & ~d_huge | n_tiny) & is_n, up, out)   # n/d denormal or n tiny: scale only the numerator up
    st.D0 = _bits(out, f)
    st.VCC = (zero | far | q_den | n_tiny).astype(np.uint64)
  return op

def div_fmas(f:_Fmt):
  def op(st):
    a, b, c = (_flush_in(_f(x, f), st, f) for x in (st.S0, st.S1, st.S2))
    vcc = np.asarray(st.VCC).astype(bool)
    # 2**+scale for a quotient near overflow (S2 large, and the numerator it came from, ~S2 / S1, at least 2**(far - bias)),
    # 2**-scale for a scaled-up numerator (n/d denormal: S2 small; tiny n: numerator at most 2**(tiny - bias + scale))
    n_exp = _expf(c, f) - _expf(b, f)
    near_overflow = (_expf(c, f) > f.bias) & (n_exp > (f.far + f.tiny + f.scale) // 2 - f.bias)
    k = np.where(vcc, np.where(near_overflow, f.scale, -f.scale), 0)
    with np.errstate(all="ignore"):
      if f is _F32:
        # round to odd at 53 bits, scale exactly in f64, then one rounding to f32
        r = N.f64_to_f32(N.fma_to_odd(a, b, c) * np.float64(2.0) ** k)
      else:
        fm = N.fma_f64(a, b, c)
        r = N.ldexp(fm, k)
        # a quotient scaled into the denormal range would round twice: round those lanes once from the exact value
        for i in np.nonzero(np.isfinite(fm) & (fm != 0) & (np.abs(r) < np.finfo(np.float64).tiny))[0]:
          r[i] = float((Fraction(float(a[i])) * Fraction(float(b[i])) + Fraction(float(c[i]))) * Fraction(2) ** int(k[i]))
    st.D0 = _bits(_flush_out(r, st, f), f)
  return op

def div_fixup(f:_Fmt):
  def op(st):
    q, d, n = (_flush_in(_f(x, f), st, f) for x in (st.S0, st.S1, st.S2))
    neg = np.signbit(d) ^ np.signbit(n)
    inf, zero = np.where(neg, -np.inf, np.inf).astype(f.ftype), np.where(neg, -0.0, 0.0).astype(f.ftype)
    default_nan = _f(np.uint64(0xffc00000 if f is _F32 else 0xfff8000000000000 if f is _F64 else 0xfe00), f)
    with np.errstate(all="ignore"):
      out = np.where(neg, -np.abs(q), np.abs(q)).astype(f.ftype)
      out = np.where(~np.isfinite(q), inf, out)                          # the quotient overflowed in the scaled domain
      out = np.where((np.abs(d) == np.inf) | (n == 0), zero, out)        # x/inf, 0/y
      out = np.where((d == 0) | (np.abs(n) == np.inf), inf, out)         # x/0, inf/y
      out = np.where(((d == 0) & (n == 0)) | ((np.abs(d) == np.inf) & (np.abs(n) == np.inf)), default_nan, out)
      out = np.where(np.isnan(d), N.quiet_nan(d), out)
      out = np.where(np.isnan(n), N.quiet_nan(n), out)
    st.D0 = _bits(_flush_out(out, st, f), f)
  return op

def _two_over_pi_bits(nbits:int) -> int:
  """floor(2/pi * 2**nbits), exactly (pi by Machin's formula in integer arithmetic with guard bits)."""
  prec = nbits + 64
  def arctan_inv(x:int) -> int:
    total, term, k, x2 = 0, (1 << prec) // x, 0, x * x
    while term:
      total += term // (2 * k + 1) if k % 2 == 0 else -(term // (2 * k + 1))
      term //= x2
      k += 1
    return total
  pi = 4 * (4 * arctan_inv(5) - arctan_inv(239))
  return ((2 << (2 * prec)) // pi) >> (prec - nbits)

_TWO_OVER_PI = _two_over_pi_bits(1201)  # the fraction bits b_1200 .. b_0 of 2/pi

def trig_preop(st):
  """V_TRIG_PREOP_F64: 53 bits of 2/pi starting `S1[4:0] * 53` bits (plus S0's excess exponent over 1077) below the binary
  point, as a double scaled to their position (2**-53-shift; 2**128 more when S0's exponent field is >= 1968). The vendor pcode
  keeps the low 53 bits of the shifted constant instead of the top ones and builds 2/pi from a double."""
  x = _f(st.S0, _F64)
  e = _expf(x, _F64)
  out = np.empty(len(x), np.float64)
  for i, (ei, s1) in enumerate(zip(e.tolist(), np.asarray(st.S1).tolist())):
    shift = (int(s1) & 31) * 53 + max(ei - 1077, 0)
    chunk = (_TWO_OVER_PI << 53 << max(shift - 1201, 0) >> max(1201 - shift, 0)) & ((1 << 53) - 1)  # past the table: zeros
    out[i] = N.ldexp(np.float64(chunk), -53 - shift + (128 if ei >= 1968 else 0))
  st.D0 = out.view(np.uint64)

# ---- WMMA (RDNA3 wave32), layout of AMD's RDNA3 ISA guide / GPUOpen's WMMA article ----
# A (16x16): lane i (and its copy i + 16) holds row i, element k at bits [w*k, w*k + w) of the register run SRC0...
# B (16x16): lane j (and j + 16) holds column j the same way, from SRC1. C/D: register v of lane l holds element
# [2v + l // 16][l % 16] (f32/i32: the whole register; f16/bf16: the low half, or the high half when OPSEL bit 2 is set).
# Every WMMA takes VGPR as one wave's (lanes, registers) or a batch's (waves, lanes, registers) array (`_waves`: one call for
# all the waves of a batch, emu.amd.exec_valu), computing each wave's product alone.
_WMMA_IN = {"F16": (16, "f16"), "BF16": (16, "bf16"), "IU8": (8, "iu"), "IU4": (4, "iu")}

def _waves(vgpr:np.ndarray) -> np.ndarray:
  """VGPR as a (waves, lanes, registers) array (a view: writes reach the register file)."""
  return vgpr if vgpr.ndim == 3 else vgpr[None]

def _unpack_rows(vgpr, reg:int, w:int) -> np.ndarray:
  """16 elements of w bits per lane, lanes 0-15 of each wave, as a (waves, 16, 16) uint64 array."""
  words = vgpr[:, 0:16, reg:reg + (16 * w) // 32].astype(np.uint64)
  k = np.arange(16)
  return (words[:, :, (k * w) // 32] >> ((k * w) % 32).astype(np.uint64)) & np.uint64((1 << w) - 1)

def _values(bits:np.ndarray, w:int, kind:str, signed:bool) -> np.ndarray:
  if kind == "f16": return bits.astype(np.uint16).view(np.float16).astype(np.float64)
  if kind == "bf16": return (bits << np.uint64(16)).astype(np.uint32).view(np.float32).astype(np.float64)
  v = bits.astype(np.int64)
  return np.where(signed & (v >= (1 << (w - 1))), v - (1 << w), v)

def _product(a:np.ndarray, b:np.ndarray, c:np.ndarray) -> np.ndarray:
  """A @ B + C of each matrix ((..., M, K) by (..., K, N) plus (..., M, N)): exact f64 (or int64) products added to C one K
  element at a time, in K order (a fixed order: BLAS's depends on the machine's kernels and on how matrices are stacked)."""
  d = c.copy()
  for k in range(a.shape[-1]): d += a[..., :, k, None] * b[..., None, k, :]
  return d

def _round_out(d:np.ndarray, dst:str, clamp) -> np.ndarray:
  """The raw bits of WMMA results d (f64 or int64) in the output format dst (one rounding; I32 saturating when clamp is set)."""
  if dst == "F32": return d.astype(np.float32).view(np.uint32).astype(np.uint64)
  if dst == "F16": return d.astype(np.float16).view(np.uint16).astype(np.uint64)
  if dst == "BF16": return np.asarray(R.bf16_bits(d.astype(np.float32)), np.uint64)
  d = d.astype(np.int64)
  return (np.clip(d, -(1 << 31), (1 << 31) - 1) if clamp else d).view(np.uint64) & np.uint64(0xffffffff)

def _c_values(cb:np.ndarray, dst:str) -> np.ndarray:
  """C's element values from their raw bits in the output format dst."""
  if dst == "F32": return cb.astype(np.uint32).view(np.float32).astype(np.float64)
  if dst == "I32": return cb.astype(np.uint32).view(np.int32).astype(np.int64)
  return _values(cb, 16, dst.lower(), False)

def wmma(src:str, dst:str):
  w, kind = _WMMA_IN[src]
  def op(st):
    vgpr, hi, neg = _waves(st.VGPR), (int(st.OPSEL) >> 2) & 1, int(st.NEG)
    a = _values(_unpack_rows(vgpr, int(st.SRC0), w), w, kind, bool(neg & 1))
    b = _values(_unpack_rows(vgpr, int(st.SRC1), w), w, kind, bool(neg & 2)).swapaxes(1, 2)
    c2, d2 = int(st.SRC2), int(st.VDST)
    c_words = np.stack([vgpr[:, 0:16, c2:c2 + 8], vgpr[:, 16:32, c2:c2 + 8]], axis=3)  # [wave, col, v, row%2]
    c_bits = c_words.transpose(0, 2, 3, 1).reshape(-1, 16, 16).astype(np.uint64)  # [wave, 2v + half, col]
    c = _c_values((c_bits >> np.uint64(16 * hi)) & np.uint64(0xffff) if dst in ("F16", "BF16") else c_bits, dst)
    with np.errstate(all="ignore"): out = _round_out(_product(a, b, c), dst, st.CLAMP)
    if dst in ("F16", "BF16"):
      old = np.stack([vgpr[:, 0:16, d2:d2 + 8], vgpr[:, 16:32, d2:d2 + 8]], axis=3)
      old = old.transpose(0, 2, 3, 1).reshape(-1, 16, 16).astype(np.uint64)
      out = (old & ~np.uint64(0xffff << (16 * hi))) | (out << np.uint64(16 * hi))
    out = out.reshape(-1, 8, 2, 16).transpose(0, 3, 1, 2).astype(np.uint32)  # [wave, col, v, half]
    vgpr[:, 0:16, d2:d2 + 8] = out[..., 0]
    vgpr[:, 16:32, d2:d2 + 8] = out[..., 1]
  return op

# ---- WMMA (RDNA4 wave32), the layout of AMD's RDNA4 ISA guide (tinygrad's amd_rdna4 tensor-core swizzle agrees) ----
# No lane duplication. A (16xK): lane l holds row l % 16; its element e (packed from bit 0 of the register run SRC0...) is
# K = e % g + g * (l // 16) + 2g * (e // g), g = 4 for 16- and 8-bit inputs (16-bit: V0 holds K 0,1 in lanes 0-15 and K 4,5 in
# lanes 16-31; V1 K 2,3 / 6,7; V2 K 8,9 / 12,13 ...) and g = 8 for 4-bit inputs. B (Kx16) the same with column l % 16 from SRC1.
# C/D: element v of lane l is [v + 8 * (l // 16)][l % 16]; f32/i32 one register each (8 registers), f16/bf16 packed two per
# register (element v in register v // 2, half v % 2; 4 registers).
_WMMA4_IN = {"F16": (16, "f16", 4), "BF16": (16, "bf16", 4), "IU8": (8, "iu", 4), "IU4": (4, "iu", 8), "FP8": (8, "fp8", 4), "BF8": (8, "bf8", 4)}

def _rdna4_in(vgpr, reg:int, src:str, k:int, signed:bool, index=None) -> np.ndarray:
  """The (waves, 16, k) float64/int64 values of an A (rows) or B (columns, transposed) operand; `index`: the lanes' sparsity
  index bits of a V_SWMMAC_* A operand (k/4 compressed elements per lane, see expand_sparse)."""
  w, kind, g = _WMMA4_IN[src]
  per = k // 2
  e, lanes = np.arange(per), np.arange(32)
  bits = lane_elements(vgpr[:, 0:32], reg, w, per if index is None else per // 2)
  if index is not None: bits = expand_sparse(bits, index)
  out = np.zeros((len(vgpr), 16, k), np.uint64)
  out[:, (lanes % 16)[:, None], (e % g)[None, :] + g * (lanes // 16)[:, None] + 2 * g * (e // g)[None, :]] = bits
  if kind == "fp8": return N.fp8_to_f32(out).astype(np.float64)
  if kind == "bf8": return N.bf8_to_f32(out).astype(np.float64)
  return _values(out, w, kind, signed)

_ACC_ROWS, _ACC_COLS = np.arange(8)[None, :] + 8 * (np.arange(32) // 16)[:, None], (np.arange(32) % 16)[:, None]   # lane l's v-th element

def _rdna4_acc(vgpr, reg:int, packed:bool) -> np.ndarray:
  """The (waves, 16, 16) raw bits of a C/D operand."""
  v = np.arange(8)
  words = vgpr[:, 0:32, reg:reg + (4 if packed else 8)].astype(np.uint64)
  bits = (words[:, :, v // 2] >> (16 * (v % 2)).astype(np.uint64)) & np.uint64(0xffff) if packed else words[:, :, v]
  out = np.zeros((len(vgpr), 16, 16), np.uint64)
  out[:, _ACC_ROWS, _ACC_COLS] = bits
  return out

def wmma_rdna4(a_src:str, b_src:str, dst:str, k:int, sparse:bool=False):
  """An RDNA4 V_WMMA_* op, or with `sparse` a V_SWMMAC_* op: A is 4:2 structured sparse (its register run holds k/4 compressed
  elements per lane, two for each run of 4 dense elements of the lane, placed by expand_sparse), SRC2 is the VGPR holding the
  lanes' index sets (k/4 * 2 bits each; OPSEL[1:0], the index key, selects the set) and C is D itself (VDST, accumulated in
  place). A dense op's C may be an inline constant (C_CONST, not None: one element's raw bits), as LLVM emits for gfx12 (a zero
  accumulator as `0`); RDNA3's WMMA takes C from VGPRs only. VGPR: as RDNA3's WMMA takes it."""
  packed = dst in ("F16", "BF16")
  def op(st):
    vgpr, neg, index = _waves(st.VGPR), int(st.NEG), None
    if sparse:
      ibits, key = k // 2, int(st.OPSEL) & 3
      if key >= 32 // ibits: raise InvalidField(f"SWMMAC: index key {key} out of range")
      index = (vgpr[:, 0:32, int(st.SRC2)].astype(np.uint64) >> np.uint64(key * ibits)) & np.uint64((1 << ibits) - 1)
    a = _rdna4_in(vgpr, int(st.SRC0), a_src, k, bool(neg & 1), index)
    b = _rdna4_in(vgpr, int(st.SRC1), b_src, k, bool(neg & 2)).swapaxes(1, 2)
    if (c_const := None if sparse else getattr(st, "C_CONST", None)) is not None:   # an inline constant C: every element
      cb = np.full((len(vgpr), 16, 16), c_const & (0xffff if packed else 0xffffffff), np.uint64)
    else: cb = _rdna4_acc(vgpr, int(st.VDST) if sparse else int(st.SRC2), packed)
    with np.errstate(all="ignore"): out = _round_out(_product(a, b, _c_values(cb, dst)), dst, st.CLAMP)
    per_lane = out[:, _ACC_ROWS, _ACC_COLS]  # (waves, 32, 8)
    if packed: per_lane = per_lane[:, :, 0::2] | (per_lane[:, :, 1::2] << np.uint64(16))
    vgpr[:, 0:32, int(st.VDST):int(st.VDST) + per_lane.shape[2]] = per_lane.astype(np.uint32)
  return op

# ---- MFMA (CDNA3/CDNA4 wave64), AMD's matrix instruction calculator / GPUOpen "AMD matrix cores" layout ----
# Shapes M x N x K (M = N) with B blocks (the _nB suffix: B independent M x M products in one instruction). The 64 lanes form
# G = 64 / M groups of M lanes; group g belongs to block g // KG, KG = G / B groups per block, and holds E = K / KG consecutive
# K elements, packed from bit 0 of its register run (elements may straddle registers: fp6). A: lane l holds row l % M of block
# (l // M) // KG, elements k = E * ((l // M) % KG) + e, from SRC0; B: column l % M the same way from SRC1 (single-block shapes:
# B = 1, KG = G; 4x4x4_16B: every lane group is one block holding all K = 4; F64 4x4x4_4B: KG = 4, one f64 per lane).
# C/D hold B*M*M elements, f32/i32 one register each, f64 two (item t in registers 2t, 2t + 1); for M >= 16 item t of lane l is
# element [8 * (t' // 4) + 4 * (l // M) + t' % 4][l % M] of block t // R, t' = t % R, R = M*M/64 items per block (16x16: rows
# 4 * (l // 16) + t'); for M = 4 (blocks spread over lanes) item t of lane l is [r % 4][l % 4] of block r // 4, r = T * (l // 4) + t,
# T = B*16/64 items per lane (4x4x1_16B: block l // 4, row t). ACC bit 0/1 put A/B in AGPRs, ACC_CD puts C and D in AGPRs (else
# VGPRs); C_CONST (not None) replaces C by an inline constant, the same raw bits in every element. fp8/bf8 are FNUZ on gfx942
# and OCP on gfx950 (and for 'cdna'). The broadcast controls CBSZ/ABID/BLGP are not modelled (tinygrad passes 0): the op raises
# InvalidField if they are set, except where the ISA gives them another meaning:
# - gfx950 V_MFMA_[SCALE_]F32_*_F8F6F4: CBSZ (A) and BLGP (B) select the input format, 0 fp8 E4M3, 1 bf8 E5M2, 2 fp6 E2M3, 3 bf6
#   E3M2, 4 fp4 E2M1 (OCP). Each lane holds E = 32 elements (fp8: 8 registers, fp6: 6, fp4: 4). The SCALE variants multiply
#   every element by its lane's E8M0 scale 2**(s - 127) (0xFF: NaN): one scale per lane, i.e. per 32 consecutive K elements of
#   a row of A (column of B). s is byte OPSEL[0] | OPSEL_HI[0] << 1 of the lane's SCALE_SRC0 value (A), byte OPSEL[1] |
#   OPSEL_HI[1] << 1 of SCALE_SRC1 (B).
# - V_SMFMAC_* (sparse A, 4:2 structured): SRC0 holds E/2 compressed A elements per lane, two for each run of 4 dense K elements
#   of that lane; 2-bit index i_c (bits [2c+1 : 2c] of the lane's index set) gives compressed element c's position in its run
#   (dense element 4 * (c // 2) + i_c; two equal indices in one run: the later element wins). SRC2 is the VGPR holding the index
#   sets (E bits per set: ABID selects the set, CBSZ must be 0); C is D itself (VDST, accumulated in place). B is dense.
# F64 accumulates with one fused multiply-add per K element in K order (D = fma(A[:, K-1], B[K-1], ... fma(A[:, 0], B[0], C)));
# f32 results are exact f64 products added to C in f64 in K order (_product) with one rounding to f32; XF32 (gfx942) first rounds each f32 input to
# nearest-even at 10 mantissa bits (1 + 8 + 10 = 19 bits; inf/NaN unchanged).
_MFMA_IN = {"F64": 64, "F32": 32, "XF32": 32, "F16": 16, "BF16": 16, "I8": 8, "FP8": 8, "BF8": 8, "FP6": 6, "BF6": 6, "FP4": 4}
_F8F6F4 = ("FP8", "BF8", "FP6", "BF6", "FP4")  # CBSZ / BLGP codes of V_MFMA_*_F8F6F4

@dataclass(frozen=True)
class _Geo:
  """An MFMA shape: M x M x K, `blocks` blocks."""
  m: int
  k: int
  blocks: int = 1
  @property
  def kg(self) -> int: return 64 // self.m // self.blocks  # lane groups per block
  @property
  def e_per(self) -> int: return self.k // self.kg          # K elements per lane
  @property
  def items(self) -> int: return self.blocks * self.m * self.m // 64  # C/D elements per lane

def xf32_round(bits:np.ndarray) -> np.ndarray:
  """f32 bits rounded to nearest-even at 10 mantissa bits (XF32), as float64; inf/NaN unchanged."""
  b = bits.astype(np.uint64)
  r = (b + np.uint64(0xfff) + ((b >> np.uint64(13)) & np.uint64(1))) & ~np.uint64(0x1fff)
  return np.where((b & np.uint64(0x7f800000)) == np.uint64(0x7f800000), b, r).astype(np.uint32).view(np.float32).astype(np.float64)

def _mfma_decode(bits:np.ndarray, src:str, fnuz:bool) -> np.ndarray:
  if src == "F64": return bits.view(np.float64)
  if src == "F32": return bits.astype(np.uint32).view(np.float32).astype(np.float64)
  if src == "XF32": return xf32_round(bits)
  if src in ("F16", "BF16"): return _values(bits, 16, src.lower(), False)
  if src == "I8": return _values(bits, 8, "iu", True)
  if src in ("FP6", "BF6", "FP4"): return N.decode(bits, getattr(N, src))
  return (N.fp8_to_f32 if src == "FP8" else N.bf8_to_f32)(bits, fnuz=fnuz).astype(np.float64)

def lane_elements(regs:np.ndarray, reg:int, w:int, count:int) -> np.ndarray:
  """(..., lanes, count) uint64: `count` w-bit elements per lane packed from bit 0 of the register run regs[..., reg...] (regs:
  (lanes, registers), or with leading wave axes)."""
  nw = max(1, -(-count * w // 32))
  words = np.zeros(regs.shape[:-1] + (nw + 1,), np.uint64)
  words[..., :nw] = regs[..., reg:reg + nw]
  bit = np.arange(count) * w
  pair = words[..., bit // 32] | (words[..., bit // 32 + 1] << np.uint64(32))
  return (pair >> (bit % 32).astype(np.uint64)) & np.uint64((1 << w) - 1)

def expand_sparse(bits:np.ndarray, index:np.ndarray) -> np.ndarray:
  """4:2 structured sparsity: (..., lanes, c) compressed elements and each lane's index bits (..., lanes) -> (..., lanes, 2c) dense
  elements (zeros elsewhere); compressed element c goes to 4 * (c // 2) + bits [2c+1 : 2c] of the index."""
  c = np.arange(bits.shape[-1])
  pos = 4 * (c // 2) + ((index.astype(np.uint64)[..., None] >> (2 * c).astype(np.uint64)) & np.uint64(3)).astype(np.int64)
  out = np.zeros(bits.shape[:-1] + (2 * bits.shape[-1],), bits.dtype)
  np.put_along_axis(out, pos, bits, axis=-1)
  return out

def _mfma_place(lane_vals:np.ndarray, geo:_Geo) -> np.ndarray:
  """(waves, 64, E) per-lane A (or B) elements -> the (waves, blocks, M, K) operand."""
  lanes, e = np.arange(64), np.arange(geo.e_per)
  g = lanes // geo.m
  out = np.zeros((len(lane_vals), geo.blocks, geo.m, geo.k), lane_vals.dtype)
  out[:, (g // geo.kg)[:, None], (lanes % geo.m)[:, None], (geo.e_per * (g % geo.kg))[:, None] + e[None, :]] = lane_vals
  return out

def _mfma_in(regs:np.ndarray, reg:int, src:str, geo:_Geo, fnuz:bool, index=None, scale=None) -> np.ndarray:
  """The (waves, blocks, M, K) values of an A operand (rows) or B operand (columns, transposed) from the waves' register files
  (waves, lanes, registers); `index`: the lanes' sparsity index bits (SMFMAC A), `scale`: the lanes' E8M0 scale bytes."""
  bits = lane_elements(regs[:, 0:64], reg, _MFMA_IN[src], geo.e_per // 2 if index is not None else geo.e_per)
  if index is not None: bits = expand_sparse(bits, index)
  vals = _mfma_decode(bits, src, fnuz)
  if scale is not None: vals = vals * N.e8m0_to_f64(scale)[:, None]
  return _mfma_place(vals, geo)

def _mfma_acc_index(geo:_Geo):
  """(block, row, col) index arrays of shape (64, items): the C/D element item t of lane l holds."""
  t, lanes = np.arange(geo.items)[None, :], np.arange(64)[:, None]
  if geo.m >= 16:
    per = geo.m * geo.m // 64
    tt = t % per
    blk, row, col = t // per, 8 * (tt // 4) + 4 * (lanes // geo.m) + tt % 4, lanes % geo.m
  else:
    r = (lanes // 4) * geo.items + t
    blk, row, col = r // 4, r % 4, lanes % 4
  return tuple(np.broadcast_to(x, (64, geo.items)) for x in (blk, row, col))

def _byte(v, sel:int) -> np.ndarray: return (np.asarray(v).astype(np.uint64) >> np.uint64(8 * sel)) & np.uint64(0xff)

def mfma(a_src:str, b_src:str, dst:str, geo:_Geo, fnuz:bool, sparse:bool=False, scaled:bool=False):
  """A CDNA MFMA/SMFMAC op (layout above); a_src 'F8F6F4' takes the A/B formats from CBSZ/BLGP."""
  dw = 2 if dst == "F64" else 1
  def op(st):
    cbsz, abid, blgp = int(st.CBSZ), int(st.ABID), int(st.BLGP)
    fa, fb, index, sa, sb = a_src, b_src, None, None, None
    if a_src == "F8F6F4":
      if abid or cbsz > 4 or blgp > 4: raise InvalidField("F8F6F4 MFMA: ABID must be 0 and CBSZ/BLGP at most 4")
      fa, fb = _F8F6F4[cbsz], _F8F6F4[blgp]
    elif sparse:
      if cbsz or blgp: raise InvalidField("SMFMAC: CBSZ and BLGP must be 0 (ABID selects the index set)")
      ibits = geo.e_per  # 2 bits for each of the E/2 compressed elements
      if abid >= 32 // ibits: raise InvalidField(f"SMFMAC: index set {abid} out of range")
      index = (_waves(st.VGPR)[:, 0:64, int(st.SRC2)].astype(np.uint64) >> np.uint64(abid * ibits)) & np.uint64((1 << ibits) - 1)
    elif cbsz or abid or blgp:
      raise InvalidField(", ".join(f"{k}={v}" for k, v in (("CBSZ", cbsz), ("ABID", abid), ("BLGP", blgp)) if v) + ": MFMA broadcast is not modelled")
    if scaled:
      opsel, opsel_hi = int(st.OPSEL), int(st.OPSEL_HI)
      sa = _byte(st.SCALE_SRC0, (opsel & 1) | (opsel_hi & 1) << 1)
      sb = _byte(st.SCALE_SRC1, (opsel >> 1 & 1) | (opsel_hi >> 1 & 1) << 1)
    vgpr, acc = _waves(st.VGPR), int(st.ACC)
    agpr = _waves(st.AGPR) if acc & 3 or int(st.ACC_CD) else None
    cd = agpr if int(st.ACC_CD) else vgpr
    a = _mfma_in(agpr if acc & 1 else vgpr, int(st.SRC0), fa, geo, fnuz, index=index, scale=sa)
    b = _mfma_in(agpr if acc & 2 else vgpr, int(st.SRC1), fb, geo, fnuz, scale=sb).swapaxes(2, 3)
    blk, rows, cols = _mfma_acc_index(geo)
    c_reg, c_const = (int(st.VDST), None) if sparse else (int(st.SRC2), getattr(st, "C_CONST", None))
    c = np.zeros((len(vgpr), geo.blocks, geo.m, geo.m), np.uint64)
    if c_const is not None: c[:] = np.uint64(c_const)   # an inline constant C: every element
    else:
      words = cd[:, 0:64, c_reg:c_reg + geo.items * dw].astype(np.uint64)
      c[:, blk, rows, cols] = words[:, :, 0::2] | (words[:, :, 1::2] << np.uint64(32)) if dw == 2 else words
    with np.errstate(all="ignore"):
      if dst == "I32":
        d = _product(a.astype(np.int64), b.astype(np.int64), c.astype(np.uint32).view(np.int32).astype(np.int64))
        out = d.view(np.uint64) & np.uint64(0xffffffff)
      elif dst == "F64":
        d = c.view(np.float64)
        for kk in range(geo.k): d = N.fma_f64(a[..., :, kk, None], b[..., None, kk, :], d)
        out = d.view(np.uint64)
      else:  # exact f64 products added to C in K order (_product), one rounding to f32
        out = _round_out(_product(a, b, c.astype(np.uint32).view(np.float32).astype(np.float64)), "F32", False)
    res = out[:, blk, rows, cols]
    if dw == 2: res = np.stack([res & np.uint64(0xffffffff), res >> np.uint64(32)], axis=3).reshape(len(res), 64, 2 * geo.items)
    cd[:, 0:64, int(st.VDST):int(st.VDST) + geo.items * dw] = res.astype(np.uint32)
  return op

@dataclass(frozen=True)
class Hand:
  """One hand-written op: the reason, kind, function and the operand metadata of its `CompiledOp`."""
  reason: str
  kind: str
  fn: Callable
  reads: tuple
  writes: tuple
  widths: dict
  lane_masks: tuple = ()
  waves_at_once: bool = False

_DIV = "IEEE division helper; the vendor pcode is wrong (see emu.pcode.handwritten)"

def _div(make, f:_Fmt, vcc_in:bool=False, vcc_out:bool=False) -> Hand:
  """A division helper's entry: S0-S2 and D0 of format f, the MODE field of f, VCC as a lane mask where it is read or written."""
  w, mode = 8 * np.dtype(f.ftype).itemsize, "MODE_DENORM32" if f is _F32 else "MODE_DENORM16"
  vcc = ("VCC",) if vcc_in or vcc_out else ()
  return Hand(_DIV, "vector", make(f), ("S0", "S1", "S2", mode) + (vcc if vcc_in else ()), ("D0",) + (vcc if vcc_out else ()),
              {"S0": w, "S1": w, "S2": w, "D0": w} | ({"VCC": 1} if vcc else {}), vcc)

HANDWRITTEN: dict[str, Hand] = {
  "V_DIV_SCALE_F32": _div(div_scale, _F32, vcc_out=True), "V_DIV_SCALE_F64": _div(div_scale, _F64, vcc_out=True),
  "V_DIV_FMAS_F32": _div(div_fmas, _F32, vcc_in=True), "V_DIV_FMAS_F64": _div(div_fmas, _F64, vcc_in=True),
  "V_DIV_FIXUP_F32": _div(div_fixup, _F32), "V_DIV_FIXUP_F64": _div(div_fixup, _F64), "V_DIV_FIXUP_F16": _div(div_fixup, _F16),
  "V_TRIG_PREOP_F64": Hand("trig range reduction constant; the vendor pcode takes the wrong end of the shifted 2/pi (see trig_preop)", "vector",
                           trig_preop, ("S0", "S1"), ("D0",), {"S0": 64, "S1": 32, "D0": 64}),
}
_WMMA_ARGS = ("VGPR", "SRC0", "SRC1", "SRC2", "VDST", "OPSEL", "NEG", "CLAMP")
_WMMA = ("matrix multiply-accumulate; the vendor pcode is prose (`D = A (16x16) * B (16x16) + C`): wave32 register layout in "
         "emu.pcode.handwritten")
HANDWRITTEN_RDNA3: dict[str, Hand] = {}  # rdna3's WMMA register layout
for _src, _dst in (("F16", "F32"), ("BF16", "F32"), ("F16", "F16"), ("BF16", "BF16"), ("IU8", "I32"), ("IU4", "I32")):
  HANDWRITTEN_RDNA3[f"V_WMMA_{_dst}_16X16X16_{_src}"] = Hand(_WMMA, "wave", wmma(_src, _dst), _WMMA_ARGS, ("VGPR",), {},
                                                            waves_at_once=True)

_WMMA4 = ("matrix multiply-accumulate; the vendor pcode is prose (`D = A (16x16) * B (16x16) + C`): RDNA4 wave32 register layout in "
          "emu.pcode.handwritten")
HANDWRITTEN_RDNA4: dict[str, Hand] = {}  # rdna4's own layout for the WMMA mnemonics it shares with rdna3
for _a, _b, _dst, _k in (("F16", "F16", "F32", 16), ("BF16", "BF16", "F32", 16), ("F16", "F16", "F16", 16), ("BF16", "BF16", "BF16", 16),
                         ("IU8", "IU8", "I32", 16), ("IU4", "IU4", "I32", 16), ("IU4", "IU4", "I32", 32), ("FP8", "FP8", "F32", 16),
                         ("FP8", "BF8", "F32", 16), ("BF8", "FP8", "F32", 16), ("BF8", "BF8", "F32", 16)):
  _srcs = _a if _a == _b and _a not in ("FP8", "BF8") else f"{_a}_{_b}"
  HANDWRITTEN_RDNA4[f"V_WMMA_{_dst}_16X16X{_k}_{_srcs}"] = Hand(_WMMA4, "wave", wmma_rdna4(_a, _b, _dst, _k), _WMMA_ARGS + ("C_CONST",),
                                                               ("VGPR",), {}, waves_at_once=True)
  if _k == 16 or _a == "IU4":  # V_SWMMAC_*: the same inputs with twice the (dense) K
    HANDWRITTEN_RDNA4[f"V_SWMMAC_{_dst}_16X16X{2 * _k}_{_srcs}"] = Hand(_WMMA4, "wave", wmma_rdna4(_a, _b, _dst, 2 * _k, sparse=True),
                                                                         _WMMA_ARGS, ("VGPR",), {}, waves_at_once=True)

_MFMA = ("matrix fused multiply-add; the vendor pcode is prose (`D = A (16x16) * B (16x16) + C`): CDNA wave64 register layout in "
         "emu.pcode.handwritten")
_MFMA_ARGS = ("VGPR", "AGPR", "SRC0", "SRC1", "SRC2", "VDST", "ACC", "ACC_CD", "CBSZ", "ABID", "BLGP")
_SCALE_ARGS = ("OPSEL", "OPSEL_HI", "SCALE_SRC0", "SCALE_SRC1")
_MFMA_NAME = re.compile(r"V_(S?)MFMAC?_(SCALE_)?(F32|I32|F64)_(\d+)X\d+X(\d+)(?:_(\d+)B)?_(\w+)")

def _mfma_table(fnuz:bool) -> dict[str, Hand]:
  """Every V_MFMA_* / V_SMFMAC_* of the cdna enums, from its name (gfx942: without gfx950's F8F6F4 ops)."""
  from tinygrad.runtime.autogen.amd.cdna.enum import VOP3POp, VOP3PX2Op
  t = {}
  for op in [*VOP3POp, *VOP3PX2Op]:
    if not (mt := _MFMA_NAME.fullmatch(op.name)) or fnuz and mt[7] == "F8F6F4": continue
    sparse, scaled, dst, m, k, blocks, srcs = mt[1] == "S", bool(mt[2]), mt[3], int(mt[4]), int(mt[5]), int(mt[6] or 1), mt[7].split("_")
    fn = mfma(srcs[0], srcs[-1], dst, _Geo(m, k, blocks), fnuz, sparse=sparse, scaled=scaled)
    t[op.name] = Hand(_MFMA, "wave", fn, _MFMA_ARGS + (() if sparse else ("C_CONST",)) + (_SCALE_ARGS if scaled else ()), ("VGPR", "AGPR"), {},
                      waves_at_once=not scaled)   # (a scaled op reads each wave's scale sources)
  return t
HANDWRITTEN_CDNA: dict[str, dict[str, Hand]] = {t: _mfma_table(fnuz) for t, fnuz in FP8_FNUZ.items()}   # fp8/bf8: FNUZ / OCP
HANDWRITTEN_CDNA["cdna"] = HANDWRITTEN_CDNA["gfx950"]
# per family (CDNA per target: the fp8 formats differ), the family's table when the target has none of its own
_OWN = {"rdna3": HANDWRITTEN_RDNA3, "rdna4": HANDWRITTEN_RDNA4, **HANDWRITTEN_CDNA}

def lookup(arch:str, op, target:str="") -> CompiledOp | None:
  """The hand-written op for an opcode of an arch (target: the name compile_op was called with, e.g. 'gfx942'), or None."""
  own = _OWN.get(target) or _OWN[arch]
  h = own.get(op.name) or own.get(op.name.removesuffix("_E32").removesuffix("_E64")) or \
    HANDWRITTEN.get(op.name) or HANDWRITTEN.get(op.name.removesuffix("_E64"))  # cdna spells VOP3-only ops V_DIV_FMAS_F32_E64
  if h is None: return None
  reads = frozenset(h.reads) | ({"n"} if h.kind == "vector" else set())
  return CompiledOp(arch, op.name, h.kind, h.fn, reads, frozenset(h.writes), dict(h.widths), frozenset(h.lane_masks), override=h.reason,
                    source=f"(hand-written: emu.pcode.handwritten.{h.fn.__qualname__.split('.')[0]})", waves_at_once=h.waves_at_once)
