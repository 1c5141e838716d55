"""Hand-written semantics for the override table (see emu.pcode.overrides): ops whose vendor pcode is wrong or prose.

IEEE division (what LLVM emits for an f32/f64 `a / b`):
  d' = V_DIV_SCALE(d, d, n); n' = V_DIV_SCALE(n, d, n) -> VCC; r = V_RCP(d'); Newton steps with V_FMA on d', n', r giving a
  quotient q' and residual e; q = V_DIV_FMAS(e, r, q') (uses VCC); result = V_DIV_FIXUP(q, d, n).
DIV_SCALE scales operands by 2**±64 (f32; 2**±128 for f64) so the Newton steps see no denormals and no overflow. When it scales
numerator and denominator alike the quotient is unchanged (VCC = 0); when it scales only one of them it sets VCC and the
quotient is off by 2**±64, which DIV_FMAS undoes inside its fused multiply-add (one rounding, so denormal quotients round
correctly): 2**+64 if the scaled quotient S2 is large (exponent above the bias), else 2**-64. DIV_FIXUP handles the special
operands (NaN, 0, inf) and a quotient that overflowed in the scaled domain, and applies the sign.
The vendor pcode gets this wrong: DIV_SCALE leaves D0 unwritten when no scaling is needed, writes VCC as a whole register,
tests `1.0 / d` for denormal in f64 (never true for f32 d) and scales a huge denominator up instead of down; DIV_FMAS always
scales by 2**32 (2**64 for f64); DIV_FIXUP names undefined constants (UNDERFLOW_F32, OVERFLOW_F32).
"""
from __future__ import annotations
from dataclasses import dataclass
from typing import Callable
import numpy as np
from emu.pcode import numerics as N
from emu.pcode import runtime as R
from emu.pcode.abi import CompiledOp

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

def div_scale(f:_Fmt):
  def op(st):
    s0, d, n = _f(st.S0, f), _f(st.S1, f), _f(st.S2, f)
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
      up, down = N.ldexp(s0, f.scale), N.ldexp(s0, -f.scale)
      out = np.where(zero, np.asarray(np.nan, f.ftype), s0)
      out = np.where(far & is_d, up, out)                    # quotient near overflow: scale only the denominator up
      out = np.where(d_den | n_tiny, up, out)                # both up: ratio unchanged
      out = np.where(d_huge & q_den & is_d, down, out)       # 1/d and n/d denormal: scale only the denominator down
      out = np.where(d_huge & ~q_den, down, out)             # 1/d denormal: both down
      out = np.where(~d_huge & q_den & is_n, up, out)        # n/d denormal: scale only the numerator up
    st.D0 = _bits(out, f)
    st.VCC = (far | q_den).astype(np.uint64)
  return op

def div_fmas(f:_Fmt):
  def op(st):
    a, b, c = _f(st.S0, f), _f(st.S1, f), _f(st.S2, f)
    vcc = np.asarray(st.VCC).astype(bool)
    k = np.where(vcc, np.where(_expf(c, f) > f.bias, f.scale, -f.scale), 0)
    with np.errstate(all="ignore"):
      if f is _F32:
        # round to odd at 53 bits (RZ with the inexact bit as sticky), scale exactly in f64, then one rounding to f32
        A, B, C = (x.astype(np.float64) for x in (a, b, c))
        rz, ru = N.fma_f64(A, B, C, N.RM_ZERO), N.fma_f64(A, B, C, N.RM_UP)
        odd = np.where(np.isfinite(rz) & (rz != ru), rz.view(np.uint64) | np.uint64(1), rz.view(np.uint64)).view(np.float64)
        r = N.f64_to_f32(np.where(np.isfinite(rz), odd, N.fma_f64(A, B, C)) * np.float64(2.0) ** k)
      else: r = N.ldexp(N.fma_f64(a, b, c), k)  # scaled results below the f64 normal range round twice
    st.D0 = _bits(r, f)
  return op

def div_fixup(f:_Fmt):
  def op(st):
    q, d, n = _f(st.S0, f), _f(st.S1, f), _f(st.S2, f)
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
    st.D0 = _bits(out, f)
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
_WMMA_IN = {"F16": (16, "f16"), "BF16": (16, "bf16"), "IU8": (8, "iu"), "IU4": (4, "iu")}

def _unpack_rows(vgpr, reg:int, w:int) -> np.ndarray:
  """16 elements of w bits per lane, lanes 0-15, as a (16, 16) uint64 array."""
  words = vgpr[0:16, reg:reg + (16 * w) // 32].astype(np.uint64)
  k = np.arange(16)
  return (words[:, (k * w) // 32] >> ((k * w) % 32).astype(np.uint64)) & np.uint64((1 << w) - 1)

def _values(bits:np.ndarray, w:int, kind:str, signed:bool) -> np.ndarray:
  if kind == "f16": return bits.astype(np.uint16).view(np.float16).astype(np.float64)
  if kind == "bf16": return (bits << np.uint64(16)).astype(np.uint32).view(np.float32).astype(np.float64)
  v = bits.astype(np.int64)
  return np.where(signed & (v >= (1 << (w - 1))), v - (1 << w), v)

def wmma(src:str, dst:str):
  w, kind = _WMMA_IN[src]
  def op(st):
    vgpr, hi, neg = st.VGPR, (int(st.OPSEL) >> 2) & 1, int(st.NEG)
    a = _values(_unpack_rows(vgpr, int(st.SRC0), w), w, kind, bool(neg & 1))
    b = _values(_unpack_rows(vgpr, int(st.SRC1), w), w, kind, bool(neg & 2)).T
    c_words = np.stack([vgpr[0:16, int(st.SRC2):int(st.SRC2) + 8], vgpr[16:32, int(st.SRC2):int(st.SRC2) + 8]], axis=2)  # [col, v, row%2]
    c_bits = c_words.transpose(1, 2, 0).reshape(16, 16).astype(np.uint64)  # [2v + half, col]
    if dst == "F32": c = c_bits.astype(np.uint32).view(np.float32).astype(np.float64)
    elif dst == "I32": c = c_bits.astype(np.uint32).view(np.int32).astype(np.int64)
    else: c = _values((c_bits >> np.uint64(16 * hi)) & np.uint64(0xffff), 16, dst.lower(), False)
    with np.errstate(all="ignore"):
      d = a @ b + c  # f64 products are exact; one rounding to the output format below
      if dst == "F32": out = d.astype(np.float32).view(np.uint32).astype(np.uint64)
      elif dst == "F16": out = d.astype(np.float16).view(np.uint16).astype(np.uint64)
      elif dst == "BF16": out = np.asarray(R.bf16_bits(d.astype(np.float32)), np.uint64)
      else:
        d = d.astype(np.int64)
        out = (np.clip(d, -(1 << 31), (1 << 31) - 1) if st.CLAMP else d).astype(np.int64).view(np.uint64) & np.uint64(0xffffffff)
    if dst in ("F16", "BF16"):
      old = np.stack([vgpr[0:16, int(st.VDST):int(st.VDST) + 8], vgpr[16:32, int(st.VDST):int(st.VDST) + 8]], axis=2)
      old = old.transpose(1, 2, 0).reshape(16, 16).astype(np.uint64)
      out = (old & ~np.uint64(0xffff << (16 * hi))) | (out << np.uint64(16 * hi))
    out = out.reshape(8, 2, 16).transpose(2, 0, 1).astype(np.uint32)  # [col, v, half]
    vgpr[0:16, int(st.VDST):int(st.VDST) + 8] = out[:, :, 0]
    vgpr[16:32, int(st.VDST):int(st.VDST) + 8] = out[:, :, 1]
    st.VGPR = vgpr
  return op

# ---- WMMA (RDNA4 wave32), the layout of AMD's RDNA4 ISA guide (tinygrad's amd_rdna4 tensor-core swizzle agrees) ----
# No lane duplication. A (16xK): lane l holds row l % 16; its element e (packed from bit 0 of the register run SRC0...) is
# K = e % g + g * (l // 16) + 2g * (e // g), g = 4 for 16- and 8-bit inputs (16-bit: V0 holds K 0,1 in lanes 0-15 and K 4,5 in
# lanes 16-31; V1 K 2,3 / 6,7; V2 K 8,9 / 12,13 ...) and g = 8 for 4-bit inputs. B (Kx16) the same with column l % 16 from SRC1.
# C/D: element v of lane l is [v + 8 * (l // 16)][l % 16]; f32/i32 one register each (8 registers), f16/bf16 packed two per
# register (element v in register v // 2, half v % 2; 4 registers).
_WMMA4_IN = {"F16": (16, "f16", 4), "BF16": (16, "bf16", 4), "IU8": (8, "iu", 4), "IU4": (4, "iu", 8), "FP8": (8, "fp8", 4), "BF8": (8, "bf8", 4)}

def _rdna4_in(vgpr, reg:int, src:str, k:int, signed:bool) -> np.ndarray:
  """The (16, k) float64/int64 values of an A (rows) or B (columns, transposed) operand."""
  w, kind, g = _WMMA4_IN[src]
  per = k // 2
  words = vgpr[0:32, reg:reg + per * w // 32].astype(np.uint64)
  e, lanes = np.arange(per), np.arange(32)
  bits = (words[:, (e * w) // 32] >> ((e * w) % 32).astype(np.uint64)) & np.uint64((1 << w) - 1)
  out = np.zeros((16, k), np.uint64)
  out[(lanes % 16)[:, None], (e % g)[None, :] + g * (lanes // 16)[:, None] + 2 * g * (e // g)[None, :]] = bits
  if kind == "fp8": return N.fp8_to_f32(out).astype(np.float64)
  if kind == "bf8": return N.bf8_to_f32(out).astype(np.float64)
  return _values(out, w, kind, signed)

def _rdna4_acc(vgpr, reg:int, packed:bool) -> np.ndarray:
  """The (16, 16) raw bits of a C/D operand."""
  v, lanes = np.arange(8), np.arange(32)
  words = vgpr[0:32, reg:reg + (4 if packed else 8)].astype(np.uint64)
  bits = (words[:, v // 2] >> (16 * (v % 2)).astype(np.uint64)) & np.uint64(0xffff) if packed else words[:, v]
  out = np.zeros((16, 16), np.uint64)
  out[v[None, :] + 8 * (lanes // 16)[:, None], (lanes % 16)[:, None]] = bits
  return out

def wmma_rdna4(a_src:str, b_src:str, dst:str, k:int):
  packed = dst in ("F16", "BF16")
  def op(st):
    vgpr, neg = st.VGPR, int(st.NEG)
    a = _rdna4_in(vgpr, int(st.SRC0), a_src, k, bool(neg & 1))
    b = _rdna4_in(vgpr, int(st.SRC1), b_src, k, bool(neg & 2)).T
    cb = _rdna4_acc(vgpr, int(st.SRC2), packed)
    c = cb.astype(np.uint32).view(np.float32).astype(np.float64) if dst == "F32" else cb.astype(np.uint32).view(np.int32).astype(np.int64) \
      if dst == "I32" else _values(cb, 16, dst.lower(), False)
    with np.errstate(all="ignore"):
      d = a @ b + c  # exact products; f64 sums, one rounding to the output format
      if dst == "F32": out = d.astype(np.float32).view(np.uint32).astype(np.uint64)
      elif dst == "F16": out = d.astype(np.float16).view(np.uint16).astype(np.uint64)
      elif dst == "BF16": out = np.asarray(R.bf16_bits(d.astype(np.float32)), np.uint64)
      else:
        d = d.astype(np.int64)
        out = (np.clip(d, -(1 << 31), (1 << 31) - 1) if st.CLAMP else d).view(np.uint64) & np.uint64(0xffffffff)
    v, lanes = np.arange(8), np.arange(32)
    per_lane = out[v[None, :] + 8 * (lanes // 16)[:, None], (lanes % 16)[:, None]]  # (32, 8)
    if packed: per_lane = per_lane[:, 0::2] | (per_lane[:, 1::2] << np.uint64(16))
    vgpr[0:32, int(st.VDST):int(st.VDST) + per_lane.shape[1]] = per_lane.astype(np.uint32)
    st.VGPR = vgpr
  return op

# ---- MFMA (CDNA3/CDNA4 wave64), AMD's matrix instruction calculator / GPUOpen "AMD matrix cores" layout ----
# Single-block shapes M x N x K with M = N = 16 or 32 (tinygrad's renderer emits 16x16x16 f16/bf16, 16x16x32 fp8/bf8 and, on
# gfx950, 16x16x32 f16/bf16). The 64 lanes form G = 64 / M groups of M lanes; each lane holds E = K / G consecutive K elements,
# packed from bit 0 of its register run. A: lane l holds row l % M, elements k = E * (l // M) + e from SRC0; B: column l % M the
# same way from SRC1. C/D (f32/i32, one register each, M*N/64 registers): register v of lane l holds
# [8 * (v // 4) + 4 * (l // M) + v % 4][l % M] (16x16: rows 4 * (l // 16) + v). ACC bit 0/1 put A/B in AGPRs, ACC_CD puts C and D
# in AGPRs (else VGPRs). fp8/bf8 are FNUZ on gfx942 and OCP on gfx950 (and for 'cdna'). The broadcast controls CBSZ/ABID/BLGP
# are not modelled (tinygrad passes 0): the op raises ValueError if they are set.
_MFMA_IN = {"F32": 32, "F16": 16, "BF16": 16, "I8": 8, "FP8": 8, "BF8": 8}

def _mfma_decode(bits:np.ndarray, src:str, fnuz:bool) -> np.ndarray:
  if src == "F32": return bits.astype(np.uint32).view(np.float32).astype(np.float64)
  if src in ("F16", "BF16"): return _values(bits, 16, src.lower(), False)
  if src == "I8": return _values(bits, 8, "iu", True)
  return (N.fp8_to_f32 if src == "FP8" else N.bf8_to_f32)(bits, fnuz=fnuz).astype(np.float64)

def _mfma_in(regs:np.ndarray, reg:int, src:str, m:int, k:int, fnuz:bool) -> np.ndarray:
  """The (m, k) values of an A operand (rows) or B operand (columns, transposed) from one wave's register file."""
  w, e_per = _MFMA_IN[src], k // (64 // m)
  words = regs[0:64, reg:reg + max(1, e_per * w // 32)].astype(np.uint64)
  e, lanes = np.arange(e_per), np.arange(64)
  bits = (words[:, (e * w) // 32] >> ((e * w) % 32).astype(np.uint64)) & np.uint64((1 << w) - 1)
  out = np.zeros((m, k), np.uint64)
  out[(lanes % m)[:, None], (e_per * (lanes // m))[:, None] + e[None, :]] = bits
  return _mfma_decode(out, src, fnuz)

def _mfma_acc_index(m:int):
  """(row, col) index arrays of shape (64, m*m/64): the C/D element register v of lane l holds."""
  v, lanes = np.arange(m * m // 64), np.arange(64)
  return 8 * (v // 4)[None, :] + 4 * (lanes // m)[:, None] + (v % 4)[None, :], np.broadcast_to((lanes % m)[:, None], (64, m * m // 64))

def mfma(a_src:str, b_src:str, dst:str, m:int, k:int, fnuz:bool):
  def op(st):
    if int(st.CBSZ) or int(st.ABID) or int(st.BLGP): raise ValueError("MFMA broadcast controls (CBSZ/ABID/BLGP) are not modelled")
    acc, cd = int(st.ACC), st.AGPR if int(st.ACC_CD) else st.VGPR
    a = _mfma_in(st.AGPR if acc & 1 else st.VGPR, int(st.SRC0), a_src, m, k, fnuz)
    b = _mfma_in(st.AGPR if acc & 2 else st.VGPR, int(st.SRC1), b_src, m, k, fnuz).T
    rows, cols = _mfma_acc_index(m)
    c = np.zeros((m, m), np.uint64)
    c[rows, cols] = cd[0:64, int(st.SRC2):int(st.SRC2) + m * m // 64]
    with np.errstate(all="ignore"):
      if dst == "I32":
        d = a.astype(np.int64) @ b.astype(np.int64) + c.astype(np.uint32).view(np.int32).astype(np.int64)
        out = d.astype(np.int64).view(np.uint64) & np.uint64(0xffffffff)
      else:  # exact f64 products, f64 sums, one rounding to f32
        d = a @ b + c.astype(np.uint32).view(np.float32).astype(np.float64)
        out = d.astype(np.float32).view(np.uint32).astype(np.uint64)
    cd[0:64, int(st.VDST):int(st.VDST) + m * m // 64] = out[rows, cols].astype(np.uint32)
  return op

def accvgpr(direction:str):
  """V_ACCVGPR_READ (AGPR SRC0 -> VGPR VDST), V_ACCVGPR_WRITE (VGPR SRC0 -> AGPR VDST), V_ACCVGPR_MOV (AGPR -> AGPR), EXEC lanes
  only. SRC0 of V_ACCVGPR_WRITE may also be a scalar/constant: the executor passes it as S0 (Python int), else S0 is None."""
  def op(st):
    lanes = np.array([i for i in range(64) if (int(st.EXEC) >> i) & 1], np.intp)
    src = st.AGPR if direction in ("read", "mov") else st.VGPR
    dst = st.VGPR if direction == "read" else st.AGPR
    v = src[lanes, int(st.SRC0)] if getattr(st, "S0", None) is None else np.uint32(int(st.S0) & 0xffffffff)
    dst[lanes, int(st.VDST)] = v
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

_DIV = "IEEE division helper; the vendor pcode is wrong (see emu.pcode.handwritten)"
HANDWRITTEN: dict[str, Hand] = {
  "V_DIV_SCALE_F32": Hand(_DIV, "vector", div_scale(_F32), ("S0", "S1", "S2"), ("D0", "VCC"), {"S0": 32, "S1": 32, "S2": 32, "D0": 32, "VCC": 1},
                          ("VCC",)),
  "V_DIV_SCALE_F64": Hand(_DIV, "vector", div_scale(_F64), ("S0", "S1", "S2"), ("D0", "VCC"), {"S0": 64, "S1": 64, "S2": 64, "D0": 64, "VCC": 1},
                          ("VCC",)),
  "V_DIV_FMAS_F32": Hand(_DIV, "vector", div_fmas(_F32), ("S0", "S1", "S2", "VCC"), ("D0",), {"S0": 32, "S1": 32, "S2": 32, "D0": 32, "VCC": 1},
                         ("VCC",)),
  "V_DIV_FMAS_F64": Hand(_DIV, "vector", div_fmas(_F64), ("S0", "S1", "S2", "VCC"), ("D0",), {"S0": 64, "S1": 64, "S2": 64, "D0": 64, "VCC": 1},
                         ("VCC",)),
  "V_DIV_FIXUP_F32": Hand(_DIV, "vector", div_fixup(_F32), ("S0", "S1", "S2"), ("D0",), {"S0": 32, "S1": 32, "S2": 32, "D0": 32}),
  "V_DIV_FIXUP_F64": Hand(_DIV, "vector", div_fixup(_F64), ("S0", "S1", "S2"), ("D0",), {"S0": 64, "S1": 64, "S2": 64, "D0": 64}),
  "V_DIV_FIXUP_F16": Hand(_DIV, "vector", div_fixup(_F16), ("S0", "S1", "S2"), ("D0",), {"S0": 16, "S1": 16, "S2": 16, "D0": 16}),
  "V_TRIG_PREOP_F64": Hand("trig range reduction constant; the vendor pcode takes the wrong end of the shifted 2/pi (see trig_preop)", "vector",
                           trig_preop, ("S0", "S1"), ("D0",), {"S0": 64, "S1": 32, "D0": 64}),
}
_WMMA_ARGS = ("VGPR", "SRC0", "SRC1", "SRC2", "VDST", "OPSEL", "NEG", "CLAMP")
_WMMA = ("matrix multiply-accumulate; the vendor pcode is prose (`D = A (16x16) * B (16x16) + C`): wave32 register layout in "
         "emu.pcode.handwritten")
for _src, _dst in (("F16", "F32"), ("BF16", "F32"), ("F16", "F16"), ("BF16", "BF16"), ("IU8", "I32"), ("IU4", "I32")):
  HANDWRITTEN[f"V_WMMA_{_dst}_16X16X16_{_src}"] = Hand(_WMMA, "wave", wmma(_src, _dst), _WMMA_ARGS, ("VGPR",), {})

_WMMA4 = ("matrix multiply-accumulate; the vendor pcode is prose (`D = A (16x16) * B (16x16) + C`): RDNA4 wave32 register layout in "
          "emu.pcode.handwritten")
HANDWRITTEN_RDNA4: dict[str, Hand] = {}  # rdna4's own layout for the WMMA mnemonics it shares with rdna3
for _a, _b, _dst, _k in (("F16", "F16", "F32", 16), ("BF16", "BF16", "F32", 16), ("F16", "F16", "F16", 16), ("BF16", "BF16", "BF16", 16),
                         ("IU8", "IU8", "I32", 16), ("IU4", "IU4", "I32", 16), ("IU4", "IU4", "I32", 32), ("FP8", "FP8", "F32", 16),
                         ("FP8", "BF8", "F32", 16), ("BF8", "FP8", "F32", 16), ("BF8", "BF8", "F32", 16)):
  _srcs = _a if _a == _b and _a not in ("FP8", "BF8") else f"{_a}_{_b}"
  HANDWRITTEN_RDNA4[f"V_WMMA_{_dst}_16X16X{_k}_{_srcs}"] = Hand(_WMMA4, "wave", wmma_rdna4(_a, _b, _dst, _k), _WMMA_ARGS, ("VGPR",), {})

_MFMA = ("matrix fused multiply-add; the vendor pcode is prose (`D = A (16x16) * B (16x16) + C`): CDNA wave64 register layout in "
         "emu.pcode.handwritten")
_MFMA_ARGS = ("VGPR", "AGPR", "SRC0", "SRC1", "SRC2", "VDST", "ACC", "ACC_CD", "CBSZ", "ABID", "BLGP")
def _mfma_table(fnuz:bool) -> dict[str, Hand]:
  t = {}
  for name, (a, b, dst, m, k) in {"V_MFMA_F32_16X16X4_F32": ("F32", "F32", "F32", 16, 4), "V_MFMA_F32_32X32X2_F32": ("F32", "F32", "F32", 32, 2),
                                  "V_MFMA_F32_16X16X16_F16": ("F16", "F16", "F32", 16, 16), "V_MFMA_F32_32X32X8_F16": ("F16", "F16", "F32", 32, 8),
                                  "V_MFMA_F32_16X16X16_BF16": ("BF16", "BF16", "F32", 16, 16),
                                  "V_MFMA_F32_32X32X8_BF16": ("BF16", "BF16", "F32", 32, 8),
                                  "V_MFMA_F32_16X16X32_F16": ("F16", "F16", "F32", 16, 32), "V_MFMA_F32_32X32X16_F16": ("F16", "F16", "F32", 32, 16),
                                  "V_MFMA_F32_16X16X32_BF16": ("BF16", "BF16", "F32", 16, 32),
                                  "V_MFMA_F32_32X32X16_BF16": ("BF16", "BF16", "F32", 32, 16),
                                  "V_MFMA_I32_16X16X32_I8": ("I8", "I8", "I32", 16, 32), "V_MFMA_I32_32X32X16_I8": ("I8", "I8", "I32", 32, 16),
                                  "V_MFMA_I32_16X16X64_I8": ("I8", "I8", "I32", 16, 64), "V_MFMA_I32_32X32X32_I8": ("I8", "I8", "I32", 32, 32),
                                  **{f"V_MFMA_F32_{m}X{m}X{k}_{x}_{y}": (x, y, "F32", m, k) for m, k in ((16, 32), (32, 16))
                                     for x in ("FP8", "BF8") for y in ("FP8", "BF8")}}.items():
    t[name] = Hand(_MFMA, "wave", mfma(a, b, dst, m, k, fnuz), _MFMA_ARGS, ("VGPR", "AGPR"), {})
  return t
_ACC = "accumulation-register move; the vendor pcode has no AGPR file (see emu.pcode.handwritten.accvgpr)"
HANDWRITTEN_CDNA: dict[str, dict[str, Hand]] = {}   # 'gfx942' (FNUZ fp8/bf8) and 'gfx950' (OCP) variants; 'cdna' is gfx950
for _t, _fnuz in (("gfx942", True), ("gfx950", False)):
  HANDWRITTEN_CDNA[_t] = _mfma_table(_fnuz)
  for _n, _d in (("V_ACCVGPR_READ", "read"), ("V_ACCVGPR_WRITE", "write"), ("V_ACCVGPR_MOV_B32", "mov")):
    HANDWRITTEN_CDNA[_t][_n] = Hand(_ACC, "wave", accvgpr(_d), ("VGPR", "AGPR", "SRC0", "VDST", "EXEC", "S0"), ("VGPR", "AGPR"), {})
HANDWRITTEN_CDNA["cdna"] = HANDWRITTEN_CDNA["gfx950"]

def lookup(arch:str, op, target:str="") -> CompiledOp | None:
  """The hand-written op for an opcode of an arch (target: the name compile_op was called with, e.g. 'gfx942'), or None."""
  h = (HANDWRITTEN_RDNA4.get(op.name) if arch == "rdna4" else None) or \
    (HANDWRITTEN_CDNA.get(target, HANDWRITTEN_CDNA["cdna"]).get(op.name.removesuffix("_E32").removesuffix("_E64")) if arch == "cdna" else None) or \
    HANDWRITTEN.get(op.name) or HANDWRITTEN.get(op.name.removesuffix("_E64"))  # cdna spells VOP3-only ops V_DIV_FMAS_F32_E64
  if h is None: return None
  if h.reason == _WMMA and arch != "rdna3" or h.reason == _WMMA4 and arch != "rdna4": return None
  reads = frozenset(h.reads) | ({"n"} if h.kind == "vector" else set())
  return CompiledOp(arch, op.name, h.kind, h.fn, reads, frozenset(h.writes), dict(h.widths), frozenset(h.lane_masks), override=h.reason,
                    source=f"(hand-written: emu.pcode.handwritten.{h.fn.__qualname__.split('.')[0]})")

def extra_ops(arch:str) -> list:
  """Opcodes with a hand-written op and no pcode entry: cdna's V_ACCVGPR_* moves."""
  if arch != "cdna": return []
  from tinygrad.runtime.autogen.amd.cdna.enum import VOP1Op, VOP3Op, VOP3POp
  return [VOP3POp.V_ACCVGPR_READ, VOP3POp.V_ACCVGPR_WRITE, VOP1Op.V_ACCVGPR_MOV_B32_E32, VOP3Op.V_ACCVGPR_MOV_B32_E64]
