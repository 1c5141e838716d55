"""IEEE-754 / AMD numeric core for the generated instruction semantics (numpy + stdlib only, no other repo imports).

Conventions (read these before mapping pcode helpers onto this module):
- Every function is vectorised: arguments may be numpy arrays of any shape, 0-d arrays or Python scalars (np.asarray is
  applied); arguments broadcast against each other and the result has the broadcast shape.
- Formats numpy has are passed as typed arrays: f16 = np.float16, f32 = np.float32, f64 = np.float64. A function documented
  as taking f32 converts its argument with np.asarray(x, np.float32); pass typed arrays (e.g. `u32_bits.view(np.float32)`)
  so NaN payloads and signalling bits survive. Formats numpy lacks are raw-bit unsigned arrays: bf16 -> uint16,
  fp8/bf8 (and FNUZ variants) -> uint8, fp6/bf6/fp4 -> uint8 holding the code in the low bits.
- Format names follow the pcode: fp8 = E4M3, bf8 = E5M2, fp6 = E2M3, bf6 = E3M2, fp4 = E2M1. The OCP variants (OCP 8-bit
  floating point spec / OCP MX spec) are used by gfx950 and RDNA4 (gfx12); gfx942 (MI300) uses the FNUZ variants (bias one
  larger, no infinities, no -0, the single NaN 0x80). Select with `fnuz=True`. fp6/bf6/fp4 exist only in the OCP MX form.
- `rm` is AMD's MODE.FP_ROUND encoding: 0 = nearest-even, 1 = toward +inf, 2 = toward -inf, 3 = toward zero (RM_* constants).
  It may be an int or an array broadcastable against the data (per-lane modes).
- Denormal control: `daz=True` flushes denormal inputs to signed zero, `ftz=True` flushes denormal results (after rounding)
  to signed zero; callers derive both from the wave's MODE.FP_DENORM bits. Defaults keep denormals (IEEE behaviour).
- `rnd` (stochastic rounding, the ISA's *_sr helpers) is a uint32 random value per element. Stochastic rounding rounds the
  magnitude up iff frac + rnd / 2**32 >= 1, where frac in [0, 1) is the discarded part in units of the result's last
  place; for a normal result this is exactly "add the top bits of rnd to the discarded mantissa bits, then truncate". Note
  V_CVT_SR_FP8_F32 etc. spell out their own mantissa arithmetic in pcode (adding S1[31:12] to the f32 mantissa with wrap,
  then a nearest-even f32_to_fp8); the *_sr helpers here implement the helper-level definition above.
- Nothing depends on numpy's floating-point error state and no function emits warnings.
- Exactness: every rounding and conversion is exact (correctly rounded, all modes), including fma_f16/f32/f64, the f16/f32/f64
  add/sub/mul and f16/f32 div/sqrt with directed rounding, and ldexp (f64 div/sqrt in directed modes: exact unless the
  remainder underflows). Approximate (<= 1 ulp, computed in f64 and rounded once, so
  usually correctly rounded): log2, exp2, sin/cos (radians and revolutions), rsq, and every f64 transcendental.
- NaNs produced by arithmetic are quiet. Conversions between IEEE formats keep the sign and the top payload bits and set
  the quiet bit; conversions into formats with a single NaN encoding produce that encoding.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
from emu import native

RM_NE, RM_UP, RM_DOWN, RM_ZERO = 0, 1, 2, 3

# ---------------------------------------------------------------------------------------------------------------------
# formats


@dataclass(frozen=True)
class Fmt:
  """A binary floating-point format. kind: 'ieee' (inf + NaNs at the top exponent), 'fn' (no inf, only the all-ones code
  is NaN: OCP E4M3), 'fnuz' (no inf, no -0, 0x80.. is the only NaN), 'none' (no inf, no NaN: OCP MX fp6/fp4)."""
  name: str
  ebits: int
  mbits: int
  bias: int
  kind: str

  @property
  def width(self) -> int: return 1 + self.ebits + self.mbits

  @property
  def emin(self) -> int: return 1 - self.bias

  @property
  def max_enc(self) -> int:
    """The magnitude code (bits without the sign) of the largest finite value."""
    top = (1 << (self.ebits + self.mbits)) - 1
    return {"ieee": top - (1 << self.mbits), "fn": top - 1}.get(self.kind, top)

  @functools.cached_property
  def utype(self): return {64: np.uint64, 32: np.uint32, 16: np.uint16}.get(self.width, np.uint8)

  @property
  def max_value(self) -> float:
    """The largest finite value as a Python float."""
    return float(decode(np.uint64(self.max_enc), self))


F64 = Fmt("f64", 11, 52, 1023, "ieee")
F32 = Fmt("f32", 8, 23, 127, "ieee")
F16 = Fmt("f16", 5, 10, 15, "ieee")
BF16 = Fmt("bf16", 8, 7, 127, "ieee")
FP8 = Fmt("fp8", 4, 3, 7, "fn")              # OCP E4M3FN: max 448, NaN = S.1111.111
FP8_FNUZ = Fmt("fp8_fnuz", 4, 3, 8, "fnuz")  # gfx942 E4M3FNUZ: max 240
BF8 = Fmt("bf8", 5, 2, 15, "ieee")           # OCP E5M2: max 57344, inf 0x7C
BF8_FNUZ = Fmt("bf8_fnuz", 5, 2, 16, "fnuz") # gfx942 E5M2FNUZ: max 57344
FP6 = Fmt("fp6", 2, 3, 1, "none")            # OCP MX E2M3: max 7.5
BF6 = Fmt("bf6", 3, 2, 3, "none")            # OCP MX E3M2: max 28
FP4 = Fmt("fp4", 2, 1, 1, "none")            # OCP MX E2M1: values 0, 0.5, 1, 1.5, 2, 3, 4, 6
_TYPED = {np.dtype(np.float64): F64, np.dtype(np.float32): F32, np.dtype(np.float16): F16}
_FLOAT_OF = {64: np.float64, 32: np.float32, 16: np.float16}


def fp8_fmt(fnuz: bool = False) -> Fmt:
  """The fp8 (E4M3) format: OCP (gfx950, RDNA4) or FNUZ (gfx942)."""
  return FP8_FNUZ if fnuz else FP8


def bf8_fmt(fnuz: bool = False) -> Fmt:
  """The bf8 (E5M2) format: OCP (gfx950, RDNA4) or FNUZ (gfx942)."""
  return BF8_FNUZ if fnuz else BF8


def _fmt_of(x: np.ndarray) -> Fmt:
  if x.dtype not in _TYPED: raise TypeError(f"expected a float16/float32/float64 array, got {x.dtype}")
  return _TYPED[x.dtype]


def _bits(x: np.ndarray) -> np.ndarray:
  """The bit pattern of a typed float array as uint64."""
  return x.view(_fmt_of(x).utype).astype(np.uint64)


def _fields(x: np.ndarray):
  """(sign bool, biased exponent int64, mantissa uint64, Fmt) of a typed float array."""
  f, b = _fmt_of(x), _bits(x)
  return (b >> np.uint64(f.width - 1)) == 1, ((b >> np.uint64(f.mbits)) & np.uint64((1 << f.ebits) - 1)).astype(np.int64), \
    b & np.uint64((1 << f.mbits) - 1), f


def _typed(x, dtype=None) -> np.ndarray:
  x = np.asarray(x) if dtype is None else np.asarray(x, dtype)
  if x.dtype not in _TYPED: x = x.astype(np.float32)
  return x


# ---------------------------------------------------------------------------------------------------------------------
# the rounding core: every narrowing in this module goes through _round_core + _pack


def _bitlen(sig: np.ndarray) -> np.ndarray:
  """Bit length of uint64 values < 2**62 (0 for 0)."""
  with np.errstate(all="ignore"):
    nb = np.frexp(sig.astype(np.float64))[1].astype(np.int64)
  # float64(sig) may round up to the next power of two
  over = (nb > 0) & ((sig >> np.maximum(nb - 1, 0).astype(np.uint64)) == 0)
  return nb - over


def _round_core(neg, sig, e2, mbits: int, emin: int, rm, rnd=None) -> np.ndarray:
  """Round (-1)**neg * sig * 2**e2 (uint64 sig < 2**62, int64 e2) to a format with `mbits` fraction bits and minimum normal
  exponent `emin` (unbounded above). Returns the magnitude code as uint64: (biased exponent << mbits) + fraction, where a
  carry out of the fraction correctly bumps the exponent and the subnormal range comes out with exponent field 0."""
  sig, e2 = np.asarray(sig, np.uint64), np.asarray(e2, np.int64)
  nb = _bitlen(sig)
  e = e2 + nb - 1
  eq = np.maximum(e, emin)
  shift = eq - mbits - e2                     # bits to drop (negative: exact, shift left)
  sh = np.minimum(np.maximum(shift, 0), nb + 1)  # dropping more than nb+1 bits decides the same way
  ush = sh.astype(np.uint64)
  kept = np.where(shift > 0, sig >> ush, sig << np.maximum(-shift, 0).astype(np.uint64))
  rem = sig & ((np.uint64(1) << ush) - np.uint64(1))
  if rnd is not None:
    r = np.asarray(rnd).astype(np.uint64)
    frac32 = np.where(shift <= 32, rem << np.clip(32 - shift, 0, 63).astype(np.uint64), rem >> np.clip(shift - 32, 0, 63).astype(np.uint64))
    inc = frac32 + r >= np.uint64(1 << 32)
  else:
    half = np.where(sh > 0, np.uint64(1) << np.maximum(sh - 1, 0).astype(np.uint64), np.uint64(0))
    ne = (sh > 0) & ((rem > half) | ((rem == half) & ((kept & np.uint64(1)) == 1)))
    rm = np.asarray(rm)
    inexact = rem != 0
    inc = np.where(rm == RM_NE, ne, np.where(rm == RM_UP, inexact & ~neg, np.where(rm == RM_DOWN, inexact & neg, False)))
  # the exponent part is clamped where the value overflows any format anyway, so the uint64 code cannot wrap
  enc = (np.minimum(eq - emin, 4000).astype(np.uint64) << np.uint64(mbits)) + kept + inc.astype(np.uint64)
  return np.where(sig == 0, np.uint64(0), enc)


def _pack(neg, enc, f: Fmt, rm, saturate: bool, ftz: bool, nan=None, inf=None, payload=None, sr: bool = False) -> np.ndarray:
  """Turn a rounded magnitude code into the format's bits: overflow per rounding mode / saturation, flush, NaN/inf inputs.
  payload: the input NaN's fraction as a 52-bit (f64-aligned) uint64, kept (top bits) by IEEE formats."""
  neg, enc, rm = np.asarray(neg, bool), np.asarray(enc, np.uint64), np.asarray(rm)
  mx = np.uint64(f.max_enc)
  ovf = enc > mx
  to_inf = np.ones_like(ovf) if sr else (rm == RM_NE) | ((rm == RM_UP) & ~neg) | ((rm == RM_DOWN) & neg)
  out = np.where(ovf, mx, enc)
  if ftz: out = np.where(out < np.uint64(1 << f.mbits), np.uint64(0), out)
  big = ovf & to_inf                          # rounds past the largest finite value: inf, or NaN without inf
  if inf is not None: out, big = np.where(inf, mx, out), big | inf
  if saturate: big = np.zeros_like(big)
  nan = np.zeros_like(big) if nan is None else np.asarray(nan, bool)
  if f.kind == "ieee":
    out = np.where(big, mx + np.uint64(1), out)
    pl = np.uint64(0) if payload is None else np.asarray(payload, np.uint64) >> np.uint64(52 - f.mbits)
    out = np.where(nan, np.uint64((((1 << f.ebits) - 1) << f.mbits) | (1 << (f.mbits - 1))) | pl, out)
  elif f.kind == "fn":
    out = np.where(big | nan, np.uint64((1 << (f.ebits + f.mbits)) - 1), out)
  elif f.kind == "none":
    out = np.where(nan, mx, out)              # no NaN encoding: NaN saturates like inf (assumption, unverified on hw)
  sign = neg.astype(np.uint64) << np.uint64(f.width - 1)
  bits = sign | out
  if f.kind == "fnuz":                        # no -0; 0x80.. is the only NaN
    bits = np.where(out == 0, np.uint64(0), bits)
    bits = np.where(big | nan, np.uint64(1 << (f.width - 1)), bits)
  return bits.astype(f.utype)


def _split_f64(x: np.ndarray):
  """(neg, sig, e2, nan, inf, payload) of a float64 array, value = (-1)**neg * sig * 2**e2 for finite x."""
  b = np.asarray(x, np.float64).view(np.uint64)
  neg = (b >> np.uint64(63)) == 1
  E = ((b >> np.uint64(52)) & np.uint64(0x7FF)).astype(np.int64)
  M = b & np.uint64((1 << 52) - 1)
  sig = np.where(E > 0, M | np.uint64(1 << 52), M)
  sig = np.where(E == 0x7FF, np.uint64(0), sig)
  e2 = np.where(E > 0, E - 1075, -1074)
  return neg, sig, e2, (E == 0x7FF) & (M != 0), (E == 0x7FF) & (M == 0), M


def encode(x, f: Fmt, rm=RM_NE, saturate: bool = False, ftz: bool = False, rnd=None) -> np.ndarray:
  """Round float64 values (exact input) once into format f; returns the raw bits (uint8/16/32/64 by width).
  saturate: finite overflow and infinities become +-max instead of inf/NaN (formats without inf/NaN always saturate).
  rnd: uint32 per element for stochastic rounding (then rm is ignored)."""
  neg, sig, e2, nan, inf, payload = _split_f64(np.asarray(x, np.float64))
  enc = _round_core(neg, sig, e2, f.mbits, f.emin, rm, rnd)
  return _pack(neg, enc, f, rm, saturate, ftz, nan, inf, payload, sr=rnd is not None)


def decode(bits, f: Fmt) -> np.ndarray:
  """The exact float64 value of raw bits in format f (NaN payloads of IEEE formats are kept, quiet bit set)."""
  b = np.asarray(bits).astype(np.uint64) & np.uint64((1 << f.width) - 1)
  neg = ((b >> np.uint64(f.width - 1)) & np.uint64(1)) == 1
  E = ((b >> np.uint64(f.mbits)) & np.uint64((1 << f.ebits) - 1)).astype(np.int64)
  M = b & np.uint64((1 << f.mbits) - 1)
  sig = np.where(E > 0, M | np.uint64(1 << f.mbits), M).astype(np.float64)
  with np.errstate(all="ignore"):
    val = np.ldexp(sig, (np.maximum(E, 1) - f.bias - f.mbits).astype(np.int32))
  val = np.where(neg, -val, val)
  emax = (1 << f.ebits) - 1
  if f.kind == "ieee":
    nanbits = (np.uint64(0x7FF8 << 48) | (M << np.uint64(52 - f.mbits)) | (neg.astype(np.uint64) << np.uint64(63))).view(np.float64)
    val = np.where((E == emax) & (M == 0), np.where(neg, -np.inf, np.inf), val)
    val = np.where((E == emax) & (M != 0), nanbits, val)
  elif f.kind == "fn":
    val = np.where((E == emax) & (M == (1 << f.mbits) - 1), np.nan, val)
  elif f.kind == "fnuz":
    val = np.where(b == np.uint64(1 << (f.width - 1)), np.nan, val)
  return val


def to_f64(x) -> np.ndarray:
  """Exact float64 value of a typed f16/f32/f64 array (NaN payload kept and quieted)."""
  x = _typed(x)
  with np.errstate(all="ignore"):             # casting a signalling NaN raises the invalid flag
    v = x.astype(np.float64)
  # numpy's f16 cast is exact but keeps a signalling NaN signalling: arrays holding NaNs take the bit-level decode
  return decode(x.view(np.uint16), F16) if x.dtype == np.float16 and np.isnan(v).any() else v


def _is_rne(rm) -> bool:
  """rm is the single mode nearest-even (enables the fast paths)."""
  return rm == RM_NE if type(rm) is int else np.ndim(rm) == 0 and int(rm) == RM_NE


def _narrow(x64, f: Fmt, rm=RM_NE, ftz: bool = False, rnd=None) -> np.ndarray:
  """Round float64 (exact) values to the typed numpy float of format f. Nearest-even uses numpy's cast, which rounds
  f64 -> f32 / f16 directly and correctly (subnormals, overflow to inf)."""
  x64 = np.asarray(x64, np.float64)
  if rnd is None and not ftz and _is_rne(rm) and not np.isnan(x64).any():   # (numpy's f16 cast mangles NaN payloads)
    with np.errstate(all="ignore"):
      return x64.astype(_FLOAT_OF[f.width])
  return encode(x64, f, rm, ftz=ftz, rnd=rnd).view(_FLOAT_OF[f.width])


# ---------------------------------------------------------------------------------------------------------------------
# bits <-> value helpers and IEEE conversions


def f32_to_f16(x, rm=RM_NE, ftz: bool = False) -> np.ndarray:
  """f32 -> f16 (np.float16), correctly rounded in mode rm."""
  return _narrow(to_f64(_typed(x, np.float32)), F16, rm, ftz)


def f16_to_f32(x) -> np.ndarray:
  """f16 -> f32 (exact; NaN quieted with payload)."""
  return _narrow(to_f64(_typed(x, np.float16)), F32)


def f32_to_f64(x) -> np.ndarray:
  """f32 -> f64 (exact; NaN quieted with payload)."""
  return to_f64(_typed(x, np.float32))


def f64_to_f32(x, rm=RM_NE, ftz: bool = False) -> np.ndarray:
  """f64 -> f32, correctly rounded in mode rm (also: round an exact float64 value to f32)."""
  return _narrow(np.asarray(x, np.float64), F32, rm, ftz)


def f64_to_f16(x, rm=RM_NE, ftz: bool = False) -> np.ndarray:
  """f64 -> f16, correctly rounded in mode rm (one rounding, unlike f64 -> f32 -> f16)."""
  return _narrow(np.asarray(x, np.float64), F16, rm, ftz)


def f64_to_bf16(x, rm=RM_NE) -> np.ndarray:
  """f64 -> bf16 bits (uint16), correctly rounded in mode rm."""
  return encode(np.asarray(x, np.float64), BF16, rm)


def f32_to_bf16(x, rm=RM_NE) -> np.ndarray:
  """f32 -> bf16 bits (uint16), correctly rounded in mode rm; NaN -> quiet NaN keeping the top payload bits."""
  if not _is_rne(rm): return encode(f32_to_f64(x), BF16, rm)
  x = _typed(x, np.float32)
  b = x.view(np.uint32).astype(np.uint64)       # same exponent range: nearest-even on the bit pattern is exact
  r = ((b + np.uint64(0x7FFF) + ((b >> np.uint64(16)) & np.uint64(1))) >> np.uint64(16)).astype(np.uint16)
  return np.where(is_nan(x), (b >> np.uint64(16)).astype(np.uint16) | np.uint16(0x40), r)


def f32_to_bf16_trunc(x) -> np.ndarray:
  """f32 -> bf16 bits by dropping the low 16 bits (the ISA's truncating conversions); NaNs stay NaN (quiet bit set)."""
  b = _typed(x, np.float32).view(np.uint32)
  hi = (b >> np.uint32(16)).astype(np.uint16)
  return np.where(is_nan(_typed(x, np.float32)), hi | np.uint16(0x40), hi)


def bf16_to_f32(bits) -> np.ndarray:
  """bf16 bits -> f32 (exact: the bits shifted into the high half, NaN payload and signalling bit unchanged)."""
  return (np.asarray(bits).astype(np.uint32) << np.uint32(16)).view(np.float32)


def f32_to_f16_sr(x, rnd) -> np.ndarray:
  """f32 -> f16 with stochastic rounding using uint32 random values `rnd` (see module docstring)."""
  return _narrow(f32_to_f64(x), F16, rnd=rnd)


def f32_to_bf16_sr(x, rnd) -> np.ndarray:
  """f32 -> bf16 bits with stochastic rounding using uint32 random values `rnd`."""
  return encode(f32_to_f64(x), BF16, rnd=rnd)


def f32_to_fp8(x, fnuz: bool = False, saturate: bool = False, rm=RM_NE) -> np.ndarray:
  """f32 -> fp8 (E4M3) bits. Non-saturating: overflow -> NaN (OCP E4M3 has no inf); saturate: clamp to +-max (448 / 240)."""
  return encode(f32_to_f64(x), fp8_fmt(fnuz), rm, saturate)


def f32_to_bf8(x, fnuz: bool = False, saturate: bool = False, rm=RM_NE) -> np.ndarray:
  """f32 -> bf8 (E5M2) bits. Non-saturating: overflow -> inf (OCP) / NaN (FNUZ); saturate: clamp to +-57344."""
  return encode(f32_to_f64(x), bf8_fmt(fnuz), rm, saturate)


def fp8_to_f32(bits, fnuz: bool = False) -> np.ndarray:
  """fp8 (E4M3) bits -> f32 (exact)."""
  return decode(bits, fp8_fmt(fnuz)).astype(np.float32)


def bf8_to_f32(bits, fnuz: bool = False) -> np.ndarray:
  """bf8 (E5M2) bits -> f32 (exact)."""
  return decode(bits, bf8_fmt(fnuz)).astype(np.float32)


def f32_to_fp8_sr(x, rnd, fnuz: bool = False, saturate: bool = False) -> np.ndarray:
  """f32 -> fp8 bits with stochastic rounding (uint32 `rnd` per element)."""
  return encode(f32_to_f64(x), fp8_fmt(fnuz), saturate=saturate, rnd=rnd)


def f32_to_bf8_sr(x, rnd, fnuz: bool = False, saturate: bool = False) -> np.ndarray:
  """f32 -> bf8 bits with stochastic rounding (uint32 `rnd` per element)."""
  return encode(f32_to_f64(x), bf8_fmt(fnuz), saturate=saturate, rnd=rnd)


# ---------------------------------------------------------------------------------------------------------------------
# OCP MX scaled conversions (gfx950 V_CVT_SCALEF32_*): scale is an E8M0 byte, 2**(scale - 127), 0xFF = NaN

_SCALE_SRC = {"f32": F32, "f16": F16, "bf16": BF16}
_SCALE_DST = {"fp8": FP8, "bf8": BF8, "fp6": FP6, "bf6": BF6, "fp4": FP4}


def e8m0_to_f64(scale) -> np.ndarray:
  """E8M0 scale byte -> its float64 value 2**(scale-127); 0xFF -> NaN."""
  s = np.asarray(scale).astype(np.int64)
  return np.where(s == 0xFF, np.nan, np.ldexp(1.0, (s - 127).astype(np.int32)))


def value_of(x, f: Fmt) -> np.ndarray:
  """Exact float64 value of x in format f: typed arrays for f16/f32/f64, raw bits for the others."""
  return to_f64(np.asarray(x, _FLOAT_OF[f.width])) if f in (F64, F32, F16) else decode(x, f)


def scale_down(x, src: Fmt, dst: Fmt, scale, rnd=None, saturate: bool = False, rm=RM_NE) -> np.ndarray:
  """x / 2**(scale-127) rounded once into dst (bits); x in format src (typed f16/f32, or bf16 bits). Scale 0xFF -> NaN
  (fp4/fp6 have no NaN: they saturate, see encode). The division by a power of two is exact in f64 for these ranges."""
  with np.errstate(all="ignore"):
    v = value_of(x, src) / e8m0_to_f64(scale)
  return encode(v, dst, rm, saturate, rnd=rnd)


def scale_up(bits, src: Fmt, dst: Fmt, scale, rm=RM_NE) -> np.ndarray:
  """value(bits in src) * 2**(scale-127) rounded once into dst (typed f16/f32, or bf16 bits)."""
  with np.errstate(all="ignore"):
    v = decode(bits, src) * e8m0_to_f64(scale)
  return encode(v, dst, rm).view(_FLOAT_OF[dst.width]) if dst in (F32, F16) else encode(v, dst, rm)


def _make_scaled():
  table = {}
  for sn, sf in _SCALE_SRC.items():
    for dn, df in _SCALE_DST.items():
      table[f"{sn}_to_{dn}_scale"] = lambda x, scale, sf=sf, df=df: scale_down(x, sf, df, scale)
      table[f"{sn}_to_{dn}_sr_scale"] = lambda x, rnd, scale, sf=sf, df=df: scale_down(x, sf, df, scale, rnd=rnd)
      table[f"{dn}_to_{sn}_scale"] = lambda bits, scale, sf=sf, df=df: scale_up(bits, df, sf, scale)
  return table


SCALED = _make_scaled()
"""pcode helper name -> function for every scaled conversion, e.g. SCALED['f32_to_fp8_scale'](x, scale_byte),
SCALED['f16_to_fp4_sr_scale'](x, rnd, scale_byte), SCALED['fp6_to_bf16_scale'](bits, scale_byte). OCP formats,
non-saturating (use scale_down(saturate=True) directly where hardware clamps)."""


# ---------------------------------------------------------------------------------------------------------------------
# float <-> int

_INT_RANGE = {"i8": (-(1 << 7), (1 << 7) - 1), "u8": (0, 255), "i16": (-(1 << 15), (1 << 15) - 1), "u16": (0, (1 << 16) - 1),
              "i32": (-(1 << 31), (1 << 31) - 1), "u32": (0, (1 << 32) - 1), "i64": (-(1 << 63), (1 << 63) - 1), "u64": (0, (1 << 64) - 1)}


def float_to_int(x, kind: str, rm=RM_ZERO) -> np.ndarray:
  """Float (typed f16/f32/f64) -> integer kind ('i8','u8','i16','u16','i32','u32','i64','u64') as the ISA does it:
  round per rm (default toward zero, as f32_to_i32 etc.), NaN -> 0, out-of-range values and +-inf clamp to the range."""
  v = to_f64(_typed(x))
  if np.ndim(rm) == 0: r = {RM_NE: np.rint, RM_UP: np.ceil, RM_DOWN: np.floor}.get(int(rm), np.trunc)(v)   # one mode: one rounding pass
  else: r = np.where(rm == RM_NE, np.rint(v), np.where(rm == RM_UP, np.ceil(v), np.where(rm == RM_DOWN, np.floor(v), np.trunc(v))))
  lo, hi = _INT_RANGE[kind]
  dt = np.dtype({"i": "int", "u": "uint"}[kind[0]] + kind[1:])
  low, high = r <= float(lo), r >= float(hi + 1)   # both bounds are powers of two (or 0): exact in float64
  inside = np.where(np.isnan(r) | low | high, 0.0, r).astype(dt)
  return np.where(high, dt.type(hi), np.where(low, dt.type(lo), inside))


def int_to_float(x, f: Fmt, rm=RM_NE) -> np.ndarray:
  """Integer array (any numpy int dtype incl. int64/uint64) -> format f, correctly rounded in mode rm. Returns typed
  f16/f32/f64 arrays for those formats, raw bits otherwise."""
  x = np.asarray(x)
  if x.dtype.kind not in "iu": x = x.astype(np.int64)
  if _is_rne(rm) and f in (F16, F32, F64):   # numpy's cast rounds once, to nearest even (f16: exactly through f32, or overflows)
    with np.errstate(all="ignore"): return x.astype(_FLOAT_OF[f.width])
  neg = x < 0
  xu = x.astype(np.uint64)                         # two's complement wrap for negative values
  mag = np.where(neg, ~xu + np.uint64(1), xu)
  # bring to < 2**62 keeping a sticky bit (rounding drops at least 8 more bits, so the sticky bit decides like the rest)
  big = mag >= np.uint64(1 << 62)
  mag = np.where(big, (mag >> np.uint64(2)) | ((mag & np.uint64(3)) != 0).astype(np.uint64), mag)
  bits = _pack(neg, _round_core(neg, mag, np.where(big, 2, 0), f.mbits, f.emin, rm), f, rm, False, False)
  return bits.view(_FLOAT_OF[f.width]) if f in (F64, F32, F16) else bits


# ---------------------------------------------------------------------------------------------------------------------
# exact arithmetic


def _two_sum(a, b):
  s = a + b
  bb = s - a
  return s, (a - (s - bb)) + (b - bb)


def _split(a):
  c = 134217729.0 * a
  hi = c - (c - a)
  return hi, a - hi


def _two_prod(a, b):
  p = a * b
  ah, al = _split(a)
  bh, bl = _split(b)
  return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _to_odd(s, err):
  """Round-to-odd correction: s = RN(x), err = x - s exactly (finite); returns RO(x) at 53 bits. A later rounding of
  RO(x) to <= 51 bits in any mode equals rounding x directly (the odd last bit acts as a sticky bit)."""
  sb = s.view(np.uint64)
  fix = np.isfinite(err) & (err != 0) & ((sb & np.uint64(1)) == 0)
  step = np.where(np.signbit(s) == np.signbit(err), np.uint64(1), np.uint64(0xFFFFFFFFFFFFFFFF))
  return np.where(fix, sb + step, sb).view(np.float64)


def _zero_sign(s, p, c, rm):
  """IEEE sign of an exactly-zero sum p + c: -0 iff both are -0, or (rounding down) either is negative."""
  rm = np.asarray(rm)
  neg = np.where(rm == RM_DOWN, np.signbit(p) | np.signbit(c), np.signbit(p) & np.signbit(c))
  return np.where(s == 0, np.where(neg, -0.0, 0.0), s)


# per format: mask of the float64 bits below its last mantissa bit, the midpoint pattern there, f64 bits of its smallest normal - 1
_RNE_CHECK = {f: (np.uint64((1 << (52 - f.mbits)) - 1), np.uint64(1 << (51 - f.mbits)), np.uint64(((1023 + f.emin) << 52) - 1))
              for f in (F32, F16)}


def _fma_rne(a, b, c, f: Fmt, dtype):
  """Nearest-even fma via one float64 rounding, s = RN53(a*b + c) (the product is exact), then numpy's narrowing cast.
  RN53 is monotone and every midpoint between adjacent values of f is a float64, so RN(s) == RN(a*b + c) unless s *is* such
  a midpoint (normal range: the 52 - mbits dropped bits are exactly 10...0), or s lies in f's subnormal range (other
  midpoint spacing). Returns (result, lanes needing the exact path) with lanes None when there are none; None overall when
  some s is NaN (payload rules live in the exact path)."""
  with np.errstate(all="ignore"):
    s = np.asarray(to_f64(a) * to_f64(b) + to_f64(c))
    if np.isnan(s).any(): return None
    u = s.view(np.uint64) & np.uint64(0x7FFFFFFFFFFFFFFF)
    low, half, below_tiny = _RNE_CHECK[f]
    odd = ((u & low) == half) | ((u - np.uint64(1)) < below_tiny)
    return s.astype(dtype), (np.nonzero(odd.ravel())[0] if odd.any() else None)


def _native_fma(a, b, c, exact):
  """The CPU's fused multiply-add (emu.native) with its NaN lanes recomputed by `exact` on those lanes (the payload rules are
  ours, the CPU's NaNs are not the GPU's); None when the native kernels do not run here."""
  if (got := native.fma(a, b, c)) is None: return None
  r, some_nan = got
  if some_nan:
    nan = np.isnan(r)
    r[nan] = exact(*(np.broadcast_to(v, r.shape)[nan] for v in (a, b, c)))
  return r


def _fma_narrow(a, b, c, rm, daz, ftz, dtype):
  a, b, c = (np.asarray(v, dtype) for v in (a, b, c))
  if daz: a, b, c = flush_denorm(a), flush_denorm(b), flush_denorm(c)
  f = _TYPED[np.dtype(dtype)]
  if dtype is np.float32 and not ftz and _is_rne(rm) and \
     (r := _native_fma(a, b, c, lambda x, y, z: _fma_exact(x, y, z, rm, ftz, f))) is not None: return r
  if not ftz and _is_rne(rm) and (fast := _fma_rne(a, b, c, f, dtype)) is not None:
    r, odd = fast
    if odd is None: return r
    a, b, c = (np.broadcast_to(v, r.shape).ravel()[odd] for v in (a, b, c))
    r.ravel()[odd] = _fma_exact(a, b, c, rm, ftz, f)   # r is a fresh contiguous array: ravel() is a view
    return r
  return _fma_exact(a, b, c, rm, ftz, f)


def _sum_to_odd(A, B, C):
  """(A*B + C rounded to odd at 53 bits, the product A*B) for float64 values of f32 or narrower operands: the product is exact
  (2*24 significant bits, exponents far inside f64's range), TwoSum gives the exact sum as s + err (no overflow or underflow is
  possible), round-to-odd folds err into s's last bit. A zero sum has nearest-even's sign."""
  p = A * B
  return _to_odd(*_two_sum(p, C)), p


def fma_to_odd(a, b, c) -> np.ndarray:
  """a*b + c for f32 (or narrower) arrays as float64 rounded to odd: one later rounding of it (or of it times a power of two
  that stays in range) to 24 bits or fewer, in any mode, equals rounding the exact value once. Lanes with an infinite or NaN
  result take fma_f64's."""
  with np.errstate(all="ignore"):
    A, B, C = np.broadcast_arrays(to_f64(a), to_f64(b), to_f64(c))
    r, _ = _sum_to_odd(A, B, C)
    if not (finite := np.isfinite(r)).all(): r[~finite] = fma_f64(A[~finite], B[~finite], C[~finite])
  return r


def _fma_exact(a, b, c, rm, ftz, f: Fmt):
  """a*b+c rounded once to f in mode rm: TwoSum plus round-to-odd over float64, then the narrowing."""
  with np.errstate(all="ignore"):
    A, B, C = to_f64(a), to_f64(b), to_f64(c)
    s, p = _sum_to_odd(A, B, C)
    if not (np.ndim(rm) == 0 and int(rm) != RM_DOWN): s = _zero_sign(s, p, C, rm)  # numpy's sum has the right sign otherwise
  return _narrow(s, f, rm, ftz)


def fma_f32(a, b, c, rm=RM_NE, daz: bool = False, ftz: bool = False) -> np.ndarray:
  """a*b+c in f32 with a single rounding (mode rm). Exact: the f64 product of f32 values is exact, TwoSum gives the exact
  sum as s + err, round-to-odd folds err into s's last bit, and the final narrowing to 24 bits is then correct. Nearest-even
  without ftz rounds through one float64 sum and redoes only the lanes where that can differ (_fma_rne)."""
  return _fma_narrow(a, b, c, rm, daz, ftz, np.float32)


def fma_bf16(a, b, c, rm=RM_NE) -> np.ndarray:
  """a*b+c on bf16 bits (uint16) with a single rounding to bf16 bits: the bf16 product is exact in float64, TwoSum gives the
  exact sum, round-to-odd keeps it exact enough for the final rounding to 8 bits (the same method as fma_f32)."""
  with np.errstate(all="ignore"):
    A, B, C = (bf16_to_f32(v).astype(np.float64) for v in (a, b, c))
    p = A * B
    s, err = _two_sum(p, C)
    s = _zero_sign(_to_odd(s, err), p, C, rm)
  return encode(s, BF16, rm)


def fma_f16(a, b, c, rm=RM_NE, daz: bool = False, ftz: bool = False) -> np.ndarray:
  """a*b+c in f16 with a single rounding (same method as fma_f32)."""
  return _fma_narrow(a, b, c, rm, daz, ftz, np.float16)


def add_f32(a, b, rm=RM_NE, daz: bool = False, ftz: bool = False) -> np.ndarray:
  """a+b in f32 rounded in mode rm (exact: fma_f32(a, 1, b))."""
  return fma_f32(a, np.float32(1), b, rm, daz, ftz)


def sub_f32(a, b, rm=RM_NE, daz: bool = False, ftz: bool = False) -> np.ndarray:
  """a-b in f32 rounded in mode rm (exact)."""
  return fma_f32(a, np.float32(1), -np.asarray(b, np.float32), rm, daz, ftz)


def _mul_narrow(a, b, rm, daz, ftz, dtype):
  a, b = np.asarray(a, dtype), np.asarray(b, dtype)
  if daz: a, b = flush_denorm(a), flush_denorm(b)
  with np.errstate(all="ignore"):
    return _narrow(to_f64(a) * to_f64(b), _TYPED[np.dtype(dtype)], rm, ftz)


def mul_f32(a, b, rm=RM_NE, daz: bool = False, ftz: bool = False) -> np.ndarray:
  """a*b in f32 rounded in mode rm (exact: the f64 product of two f32 values is exact, then one narrowing)."""
  return _mul_narrow(a, b, rm, daz, ftz, np.float32)


def mul_f16(a, b, rm=RM_NE, daz: bool = False, ftz: bool = False) -> np.ndarray:
  """a*b in f16 rounded in mode rm (exact, as mul_f32)."""
  return _mul_narrow(a, b, rm, daz, ftz, np.float16)


def _div_narrow(a, b, rm, daz, ftz, dtype):
  a, b = np.asarray(a, dtype), np.asarray(b, dtype)
  if daz: a, b = flush_denorm(a), flush_denorm(b)
  f = _TYPED[np.dtype(dtype)]
  with np.errstate(all="ignore"):
    A, B = to_f64(a), to_f64(b)
    q = A / B
    if _is_rne(rm): return _narrow(q, f, rm, ftz)   # 53 >= 2*24+2: RN_f64 then RN of a quotient is correctly rounded
    hi, lo = _two_prod(q, B)
    r = (A - hi) - lo                       # sign(r) = sign(a - q*b) = sign(a/b - q) * sign(b)
    r = np.where(np.isfinite(q) & (q != 0), r * np.where(np.signbit(B), -1.0, 1.0), 0.0)
    return _narrow(_to_odd(q, r), f, rm, ftz)


def div_f32(a, b, rm=RM_NE, daz: bool = False, ftz: bool = False) -> np.ndarray:
  """a/b in f32 rounded in mode rm. Exact: q = RN_f64(a/b); the sign of the remainder a - q*b is computed exactly
  (Dekker product; a - hi is exact by Sterbenz), giving RO(a/b) at 53 bits, then one narrowing."""
  return _div_narrow(a, b, rm, daz, ftz, np.float32)


def div_f16(a, b, rm=RM_NE, daz: bool = False, ftz: bool = False) -> np.ndarray:
  """a/b in f16 rounded in mode rm (exact, as div_f32)."""
  return _div_narrow(a, b, rm, daz, ftz, np.float16)


def _sqrt_narrow(x, rm, daz, ftz, dtype):
  x = np.asarray(x, dtype)
  if daz: x = flush_denorm(x)
  f = _TYPED[np.dtype(dtype)]
  with np.errstate(all="ignore"):
    X = to_f64(x)
    s = np.sqrt(X)
    if _is_rne(rm): return _narrow(s, f, rm, ftz)   # same argument as for division
    hi, lo = _two_prod(s, s)
    r = np.where(np.isfinite(s) & (s > 0), (X - hi) - lo, 0.0)
    return _narrow(_to_odd(s, r), f, rm, ftz)


def sqrt_f32(x, rm=RM_NE, daz: bool = False, ftz: bool = False) -> np.ndarray:
  """sqrt in f32 rounded in mode rm (exact: RN_f64 root s, exact sign of x - s*s, round-to-odd, one narrowing)."""
  return _sqrt_narrow(x, rm, daz, ftz, np.float32)


def sqrt_f16(x, rm=RM_NE, daz: bool = False, ftz: bool = False) -> np.ndarray:
  """sqrt in f16 rounded in mode rm (exact, as sqrt_f32)."""
  return _sqrt_narrow(x, rm, daz, ftz, np.float16)


def add_f16(a, b, rm=RM_NE, daz: bool = False, ftz: bool = False) -> np.ndarray:
  """a+b in f16 rounded in mode rm (exact: fma_f16(a, 1, b))."""
  return fma_f16(a, np.float16(1), b, rm, daz, ftz)


def sub_f16(a, b, rm=RM_NE, daz: bool = False, ftz: bool = False) -> np.ndarray:
  """a-b in f16 rounded in mode rm (exact)."""
  return fma_f16(a, np.float16(1), -np.asarray(b, np.float16), rm, daz, ftz)


def _fma_f64_slow(a: float, b: float, c: float):
  """Exact a*b+c with Python ints -> (neg, sig < 2**62 with sticky bit, e2)."""
  na, da = a.as_integer_ratio()
  nb, db = b.as_integer_ratio()
  nc, dc = c.as_integer_ratio()
  ep, ec = -(da.bit_length() - 1) - (db.bit_length() - 1), -(dc.bit_length() - 1)
  e = min(ep, ec)
  n = ((na * nb) << (ep - e)) + (nc << (ec - e))
  neg, n = n < 0, abs(n)
  k = max(n.bit_length() - 62, 0)
  if k: n, e = (n >> k) | int(n & ((1 << k) - 1) != 0), e + k
  return neg, n, e


def fma_f64(a, b, c, rm=RM_NE, daz: bool = False, ftz: bool = False) -> np.ndarray:
  """a*b+c in f64 with a single rounding (mode rm), exact for all inputs.
  Fast path (vectorised): Dekker product uh+ul = a*b and TwoSum th+tl = c+uh (both exact in range), v+verr = tl+ul,
  z+zerr = th+v, so a*b+c = z + zerr + verr exactly; z is the answer (or its neighbour, decided by the exact signs) whenever
  verr is far too small to cross a rounding boundary. Elements failing the range/boundary checks go to an exact Python
  integer path."""
  a, b, c = np.broadcast_arrays(*(np.asarray(v, np.float64) for v in (a, b, c)))
  if daz: a, b, c = flush_denorm(a), flush_denorm(b), flush_denorm(c)
  if not ftz and _is_rne(rm) and (r := _native_fma(a, b, c, lambda x, y, z: _fma_f64_numpy(x, y, z, rm, ftz))) is not None: return r
  return _fma_f64_numpy(a, b, c, rm, ftz)


def _fma_f64_numpy(a, b, c, rm, ftz: bool) -> np.ndarray:
  """fma_f64 on broadcast float64 operands, in numpy (see fma_f64)."""
  shape, rmb = a.shape, np.broadcast_to(np.asarray(rm), a.shape)
  a, b, c, rmf = a.ravel(), b.ravel(), c.ravel(), rmb.ravel()
  with np.errstate(all="ignore"):
    out = a * b + c                                 # right for inf/NaN operands
    out = np.where(np.isfinite(a) & np.isfinite(b) & np.isinf(c), c, out)   # a finite product (even one that overflows f64) + inf
    finite = np.isfinite(a) & np.isfinite(b) & np.isfinite(c)
    pz = finite & ((a == 0) | (b == 0))
    zc = _zero_sign(np.where(c == 0, 0.0, c), a * b, c, rmf)
    out = np.where(pz, np.where(c == 0, zc, c), out)
    ea, eb = np.frexp(a)[1], np.frexp(b)[1]
    todo = finite & ~pz
    fast = todo & (np.abs(ea) < 450) & (np.abs(eb) < 450) & (np.abs(c) < 2.0 ** 1000)
    uh, ul = _two_prod(a, b)
    th, tl = _two_sum(c, uh)
    v, verr = _two_sum(tl, ul)
    z, zerr = _two_sum(th, v)
    up, dn = np.nextafter(z, np.inf), np.nextafter(z, -np.inf)
    gap_small = np.minimum(up - z, z - dn)
    side = np.where(zerr > 0, up - z, z - dn)
    az = np.abs(z)
    fast &= (az > 2.0 ** -1000) & (az < 2.0 ** 1000) & (np.abs(verr) <= gap_small * 2.0 ** -20)
    fast &= (np.abs(zerr) <= side * 0.5 * (1 - 2.0 ** -10)) | (np.abs(zerr) == side * 0.5)
    sigma = zerr + verr                             # exact sign of (a*b+c) - z
    tie_move = (np.abs(zerr) == side * 0.5) & (verr != 0) & (np.signbit(verr) == np.signbit(zerr))
    toward = np.where(zerr > 0, up, dn)
    res = np.where(rmf == RM_NE, np.where(tie_move, toward, z),
                   np.where(rmf == RM_UP, np.where(sigma > 0, up, z),
                            np.where(rmf == RM_DOWN, np.where(sigma < 0, dn, z),
                                     np.where((sigma != 0) & (np.signbit(sigma) != np.signbit(z)), np.where(z > 0, dn, up), z))))
    out = np.where(fast, res, out)
  if ftz: out = flush_denorm(out)
  slow = np.flatnonzero(todo & ~fast)
  if slow.size:
    parts = [_fma_f64_slow(float(a[i]), float(b[i]), float(c[i])) for i in slow]
    neg = np.array([p[0] for p in parts])
    sig = np.array([p[1] for p in parts], dtype=np.uint64)
    e2 = np.array([p[2] for p in parts], dtype=np.int64)
    r = rmf[slow]
    zero = sig == 0
    neg = np.where(zero, r == RM_DOWN, neg)         # exact cancellation: +0, or -0 when rounding down
    out[slow] = _pack(neg, _round_core(neg, sig, e2, 52, -1022, r), F64, r, False, ftz).view(np.float64)
  return out.reshape(shape)


def add_f64(a, b, rm=RM_NE, daz: bool = False, ftz: bool = False) -> np.ndarray:
  """a+b in f64 rounded in mode rm (exact: fma_f64(a, 1, b))."""
  return fma_f64(a, 1.0, b, rm, daz, ftz)


def sub_f64(a, b, rm=RM_NE, daz: bool = False, ftz: bool = False) -> np.ndarray:
  """a-b in f64 rounded in mode rm (exact)."""
  return fma_f64(a, 1.0, -np.asarray(b, np.float64), rm, daz, ftz)


def mul_f64(a, b, rm=RM_NE, daz: bool = False, ftz: bool = False) -> np.ndarray:
  """a*b in f64 rounded in mode rm (exact: fma_f64(a, b, -0), whose zero results take the product's sign, which the -0 addend
  would turn negative when rounding down)."""
  a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
  r = fma_f64(a, b, -0.0, rm, daz, ftz)
  return np.where(r == 0, np.where(np.signbit(a) ^ np.signbit(b), -0.0, 0.0), r)


def _directed(q, sigma, rm) -> np.ndarray:
  """The value x rounded in mode rm, given q = RN_f64(x) and sigma with the sign of x - q (0 when q is exact): x lies between
  q and its neighbour toward sigma, so directed modes return one of the two (for an overflow to inf pass sigma = -q)."""
  rm = np.asarray(rm)
  away = np.where(rm == RM_UP, sigma > 0, np.where(rm == RM_DOWN, sigma < 0, (rm == RM_ZERO) & (sigma != 0) & (np.signbit(sigma) != np.signbit(q))))
  return np.where((rm != RM_NE) & away, np.nextafter(q, np.where(sigma > 0, np.inf, -np.inf)), q)


def div_f64(a, b, rm=RM_NE, daz: bool = False, ftz: bool = False) -> np.ndarray:
  """a/b in f64 rounded in mode rm: q = RN(a/b) and the sign of the remainder a - q*b (fma_f64, exact unless it underflows)."""
  a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
  if daz: a, b = flush_denorm(a), flush_denorm(b)
  with np.errstate(all="ignore"):
    q = a / b
    if not _is_rne(rm):
      fin = np.isfinite(a) & np.isfinite(b) & (b != 0)
      r = fma_f64(-np.where(np.isfinite(q), q, 0.0), b, a) * np.where(np.signbit(b), -1.0, 1.0)
      q = _directed(q, np.where(fin & np.isfinite(q), r, np.where(fin & np.isinf(q), -q, 0.0)), rm)
  return flush_denorm(q) if ftz else q


def sqrt_f64(x, rm=RM_NE, daz: bool = False, ftz: bool = False) -> np.ndarray:
  """sqrt in f64 rounded in mode rm: s = RN(sqrt(x)) and the sign of x - s*s (fma_f64)."""
  x = np.asarray(x, np.float64)
  if daz: x = flush_denorm(x)
  with np.errstate(all="ignore"):
    s = np.sqrt(x)
    if not _is_rne(rm):
      ok = np.isfinite(s) & (s > 0)
      s = _directed(s, np.where(ok, fma_f64(-np.where(ok, s, 0.0), s, x), 0.0), rm)
  return flush_denorm(s) if ftz else s


# ---------------------------------------------------------------------------------------------------------------------
# denormals, NaNs, classification


def flush_denorm(x) -> np.ndarray:
  """Denormals of a typed f16/f32/f64 array -> zero of the same sign; everything else unchanged (bitwise)."""
  x = _typed(x)
  neg, E, M, f = _fields(x)
  sb = np.uint64(1 << (f.width - 1))
  return np.where((E == 0) & (M != 0), (neg.astype(np.uint64) * sb).astype(f.utype), _bits(x).astype(f.utype)).view(x.dtype)


def flush_denorm_f32(x) -> np.ndarray:
  """flush_denorm for f32."""
  return flush_denorm(_typed(x, np.float32))


def flush_denorm_f64(x) -> np.ndarray:
  """flush_denorm for f64."""
  return flush_denorm(_typed(x, np.float64))


def flush_denorm_f16(x) -> np.ndarray:
  """flush_denorm for f16."""
  return flush_denorm(_typed(x, np.float16))


def is_nan(x) -> np.ndarray:
  """NaN test (typed f16/f32/f64): exponent all ones, mantissa not zero; numpy's isnan tests exactly that pattern."""
  return np.isnan(_typed(x))


def _quiet_bit(x:np.ndarray) -> np.ndarray:
  """Whether the top mantissa bit (the quiet bit of a NaN) is set, per element of a typed float array."""
  f = _fmt_of(x)
  return (x.view(f.utype) & f.utype(1 << (f.mbits - 1))) != 0


def is_signal_nan(x) -> np.ndarray:
  """Signalling NaN: NaN with the quiet bit (top mantissa bit) clear."""
  x = _typed(x)
  return np.isnan(x) & ~_quiet_bit(x)


def is_quiet_nan(x) -> np.ndarray:
  """Quiet NaN: NaN with the quiet bit set."""
  x = _typed(x)
  return np.isnan(x) & _quiet_bit(x)


def quiet_nan(x) -> np.ndarray:
  """cvtToQuietNAN: set the quiet bit of NaNs (payload and sign kept); other values unchanged."""
  x = _typed(x)
  f = _fmt_of(x)
  b = x.view(f.utype)
  return np.where(np.isnan(x), b | f.utype(1 << (f.mbits - 1)), b).astype(f.utype).view(x.dtype)


def canonical_nan(dtype) -> np.ndarray:
  """The canonical quiet NaN (0x7E00 / 0x7FC00000 / 0x7FF8000000000000) of numpy float dtype `dtype` as a 0-d array."""
  f = _TYPED[np.dtype(dtype)]
  return np.array(((1 << (f.ebits + 1)) - 1) << (f.mbits - 1), dtype=f.utype).view(np.dtype(dtype))


BF16_CANONICAL_NAN = 0x7FC0

CLASS_SNAN, CLASS_QNAN, CLASS_NINF, CLASS_NNORM, CLASS_NDENORM, CLASS_NZERO, CLASS_PZERO, CLASS_PDENORM, CLASS_PNORM, CLASS_PINF = \
  (1 << i for i in range(10))


def classify(x) -> np.ndarray:
  """V_CMP_CLASS class of each element as a one-hot uint32 (bit 0 sNaN, 1 qNaN, 2 -inf, 3 -normal, 4 -denorm, 5 -0,
  6 +0, 7 +denorm, 8 +normal, 9 +inf)."""
  x = _typed(x)
  neg, E, M, f = _fields(x)
  emax = (1 << f.ebits) - 1
  idx = np.where(E == emax, np.where(M == 0, np.where(neg, 2, 9), np.where((M >> np.uint64(f.mbits - 1)) == 0, 0, 1)),
                 np.where(E > 0, np.where(neg, 3, 8), np.where(M != 0, np.where(neg, 4, 7), np.where(neg, 5, 6))))
  return (np.uint32(1) << idx.astype(np.uint32)).astype(np.uint32)


def cmp_class(x, mask) -> np.ndarray:
  """V_CMP_CLASS_*: True where x's class bit is set in the 10-bit `mask`."""
  return (classify(x) & np.asarray(mask).astype(np.uint32)) != 0


# ---------------------------------------------------------------------------------------------------------------------
# exponent / mantissa / ldexp / rounding to integers


def exponent_field(x) -> np.ndarray:
  """The pcode's exponent(x): the biased exponent field (int32), e.g. 255 for f32 inf/NaN, 0 for zero/denormals."""
  return _fields(_typed(x))[1].astype(np.int32)


def mantissa_field(x) -> np.ndarray:
  """The stored fraction bits of x (uint64), as used by the pcode's 23'B(mantissa(S0.f32))."""
  return _fields(_typed(x))[2]


def sign_bit(x) -> np.ndarray:
  """The pcode's sign(x): the sign bit as uint32 (also for -0 and NaN; numpy's signbit reads exactly that bit)."""
  return np.signbit(_typed(x)).astype(np.uint32)


def frexp_exp(x) -> np.ndarray:
  """V_FREXP_EXP_*: e with x = m * 2**e, 0.5 <= |m| < 1 (denormals normalised); 0 for inf, NaN and zero (int32)."""
  x = _typed(x)
  with np.errstate(all="ignore"):
    e = np.frexp(to_f64(x))[1]
  return np.where(np.isfinite(x), e, 0).astype(np.int32)


def frexp_mant(x) -> np.ndarray:
  """V_FREXP_MANT_*: m with x = m * 2**e, 0.5 <= |m| < 1, same dtype as x; zeros keep their sign; inf/NaN returned as is."""
  x = _typed(x)
  with np.errstate(all="ignore"):
    m = np.frexp(to_f64(x))[0].astype(x.dtype)
  return np.where(np.isfinite(x), m, x)


def ldexp(x, n, rm=RM_NE, ftz: bool = False) -> np.ndarray:
  """x * 2**n for typed f16/f32/f64 x and integer n, one correct rounding in mode rm (denormal results rounded, overflow
  per mode to inf or max). NaN/inf/zero pass through."""
  x = _typed(x)
  f = _fmt_of(x)
  n = np.clip(np.asarray(n, np.int64), -4000, 4000)
  if f is not F64 and _is_rne(rm) and not ftz and not np.isnan(x).any():
    # an f16/f32 value times 2**n is exact in float64 down to 2**-1022 (24 significant bits); below that f16/f32 round it to zero
    # however float64 rounded it, and above 2**1024 it is inf in both: the cast back is the one rounding
    with np.errstate(all="ignore"): return np.asarray(np.ldexp(x.astype(np.float64), n.astype(np.int32)).astype(x.dtype))
  neg, sig, e2, nan, inf, payload = _split_f64(to_f64(x))
  e2 = e2 + n
  enc = _round_core(neg, sig, e2, f.mbits, f.emin, rm)
  return _pack(neg, enc, f, rm, False, ftz, nan, inf, payload).view(x.dtype)


def trunc(x) -> np.ndarray:
  """Round toward zero (exact, sign of zero kept)."""
  return np.trunc(_typed(x))


def floor(x) -> np.ndarray:
  """Round toward -inf (exact)."""
  return np.floor(_typed(x))


def ceil(x) -> np.ndarray:
  """Round toward +inf (exact)."""
  return np.ceil(_typed(x))


def rint(x) -> np.ndarray:
  """Round to nearest integer, ties to even (exact)."""
  return np.rint(_typed(x))


def fract(x) -> np.ndarray:
  """V_FRACT_*: x - floor(x) (one rounding in x's format, nearest-even), clamped to the largest value below 1.0 so that
  fract(-tiny) is not 1.0; inf and NaN -> NaN; fract(-0.0) = +0.0 (as the pcode's S0 + -floor(S0))."""
  x = _typed(x)
  with np.errstate(all="ignore"):
    r = x - np.floor(x)
  below_one = np.nextafter(x.dtype.type(1), x.dtype.type(0))
  return np.where(np.isfinite(x), np.minimum(r, below_one), np.array(np.nan, x.dtype)).astype(x.dtype)


# ---------------------------------------------------------------------------------------------------------------------
# min / max


def _minmax(a, b, ieee: bool, want_max: bool):
  a, b = np.broadcast_arrays(_typed(a), _typed(b))
  if a.dtype != b.dtype: raise TypeError("min/max operands must have the same dtype")
  f = _fmt_of(a)
  with np.errstate(all="ignore"):
    r = np.where((a > b) if want_max else (a < b), a, b)
    # equal operands: and-ing the bits makes max(+0, -0) = +0, or-ing makes min(+0, -0) = -0
    ab, bb = a.view(f.utype), b.view(f.utype)
    r = np.where(a == b, ((ab & bb) if want_max else (ab | bb)).view(a.dtype), r)
  na, nb = is_nan(a), is_nan(b)
  if not (na.any() or nb.any()): return r
  r = np.where(na, b, np.where(nb, a, r))
  ieee = np.asarray(ieee, bool)   # a bool, or one per element
  r = np.where(ieee & is_signal_nan(b), quiet_nan(b), r)
  r = np.where(ieee & is_signal_nan(a), quiet_nan(a), r)
  return r.astype(a.dtype)


def max_f(a, b, ieee: bool = True) -> np.ndarray:
  """V_MAX_F* (IEEE 754-2008 maxNum flavour, as the pcode): a NaN operand yields the other operand (b if both are NaN);
  with ieee=True (MODE.IEEE; a bool or one per element) a signalling NaN operand (a first) yields that NaN quieted instead. +0 > -0."""
  return _minmax(a, b, ieee, True)


def min_f(a, b, ieee: bool = True) -> np.ndarray:
  """V_MIN_F*: as max_f with -0 < +0."""
  return _minmax(a, b, ieee, False)


def _num(a, b, want_max: bool):
  a, b = np.broadcast_arrays(_typed(a), _typed(b))
  return np.where(is_nan(a) & is_nan(b), quiet_nan(a), _minmax(a, b, False, want_max)).astype(a.dtype)


def max_num(a, b) -> np.ndarray:
  """V_MAX_NUM_F* (RDNA4, IEEE 754-2019 maximumNumber): a NaN operand (signalling or quiet) yields the other operand, two NaNs
  yield the first quieted; +0 > -0."""
  return _num(a, b, True)


def min_num(a, b) -> np.ndarray:
  """V_MIN_NUM_F* (RDNA4, IEEE 754-2019 minimumNumber): as max_num with -0 < +0."""
  return _num(a, b, False)


def _minimum_maximum(a, b, want_max: bool):
  a, b = np.broadcast_arrays(_typed(a), _typed(b))
  r = _minmax(a, b, False, want_max)
  r = np.where(is_nan(b), b, r)
  r = np.where(is_nan(a), a, r)
  r = np.where(is_signal_nan(b), quiet_nan(b), r)
  return np.where(is_signal_nan(a), quiet_nan(a), r).astype(a.dtype)


def maximum_f(a, b) -> np.ndarray:
  """V_MAXIMUM_F* (IEEE 754-2019 maximum): NaN-propagating (priority sNaN a, sNaN b (quieted), qNaN a, qNaN b), +0 > -0."""
  return _minimum_maximum(a, b, True)


def minimum_f(a, b) -> np.ndarray:
  """V_MINIMUM_F* (IEEE 754-2019 minimum): NaN-propagating, -0 < +0."""
  return _minimum_maximum(a, b, False)


# ---------------------------------------------------------------------------------------------------------------------
# reciprocal, roots, transcendentals (same dtype in and out)


def _via_f64(fn, x):
  x = _typed(x)
  with np.errstate(all="ignore"):
    r = fn(to_f64(x))
  return r if x.dtype == np.float64 else _narrow(r, _fmt_of(x))


def rcp(x) -> np.ndarray:
  """1/x, correctly rounded (nearest-even): f32 via div_f32, f64 one IEEE division, f16 via the f64 quotient (an 11-bit
  quotient is never within 2**-53 of an f16 rounding boundary unless on it, so the double rounding is harmless)."""
  x = _typed(x)
  return div_f32(np.float32(1), x) if x.dtype == np.float32 else _via_f64(lambda v: 1.0 / v, x)


def sqrt(x) -> np.ndarray:
  """Square root, correctly rounded (nearest-even) for f16/f32/f64."""
  x = _typed(x)
  return sqrt_f32(x) if x.dtype == np.float32 else _via_f64(np.sqrt, x)


def rsq(x) -> np.ndarray:
  """1/sqrt(x) (<= 1 ulp; hardware is approximate too). rsq(+-0) = +-inf, rsq(negative) = NaN."""
  return _via_f64(lambda v: 1.0 / np.sqrt(v), x)


def _libm(name, numpy_fn):
  """The C library's `name` over float64 values through emu.native, the function a native region calls for it (numpy's loop may
  be a vector library's on some CPUs, a different approximation); numpy's where the native kernels do not run."""
  def f(v):
    r = native.libm(name, v)
    return numpy_fn(v) if r is None else r
  return f


_LOG2, _EXP2 = _libm("log2", np.log2), _libm("exp2", np.exp2)


def log2(x) -> np.ndarray:
  """log2 (<= 1 ulp). log2(0) = -inf, log2(negative) = NaN."""
  return _via_f64(_LOG2, x)


def exp2(x) -> np.ndarray:
  """2**x, the pcode's pow(2.0, x) (<= 1 ulp)."""
  return _via_f64(_EXP2, x)


def _rev(x):
  """x - nearest integer, exactly (for revolution arguments)."""
  return x - np.rint(x)


def sin_rev(x) -> np.ndarray:
  """The hardware's V_SIN: sin(2*pi*x), x in revolutions, exact argument reduction (<= 1 ulp). The pcode writes
  sin(S0 * 32'F(PI * 2.0)); mapping that whole expression here avoids the error of the rounded product."""
  return _via_f64(lambda v: np.sin(2 * np.pi * _rev(v)), x)


def cos_rev(x) -> np.ndarray:
  """The hardware's V_COS: cos(2*pi*x), x in revolutions (<= 1 ulp)."""
  return _via_f64(lambda v: np.cos(2 * np.pi * _rev(v)), x)


def sin(x) -> np.ndarray:
  """sin of radians (<= 1 ulp), for a literal translation of the pcode's sin()."""
  return _via_f64(np.sin, x)


def cos(x) -> np.ndarray:
  """cos of radians (<= 1 ulp)."""
  return _via_f64(np.cos, x)
