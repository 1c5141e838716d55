"""An independent reference for single PTX instructions, written apart from emu/nv: per lane, in Python integers and exact
fractions, from the PTX ISA's definitions and IEEE 754 (round to nearest even, subnormals, signed zeros, infinities).

`ORACLE` maps an opcode to the types it is modelled for here and a function (mods, type, a, b, c) -> result bits (or a tuple
of acceptable results where the ISA allows several); operands and results are raw bit patterns of the instruction type. A float
result of NaN is any NaN (`is_nan`): the PTX ISA leaves NaN payloads to the implementation. Division by zero and other results
the ISA leaves unspecified are never generated.
"""
from __future__ import annotations
import math
from fractions import Fraction
from typing import Callable

FLOAT = {"f16": (5, 10), "f32": (8, 23), "f64": (11, 52)}   # exponent bits, stored mantissa bits

def width(t:str) -> int: return int(t.lstrip("bfsu"))
def signed(t:str) -> bool: return t[0] == "s"
def mask(t:str) -> int: return (1 << width(t)) - 1
def to_int(bits:int, t:str) -> int:
  """The integer value of `bits` as type t."""
  bits &= mask(t)
  return bits - (1 << width(t)) if signed(t) and bits >> (width(t) - 1) else bits

# ---- floats ----
def decode(bits:int, t:str):
  """A float's value: a Fraction, or 'nan', or +-math.inf; zeros as (Fraction 0, sign) via `sign_of`."""
  e_bits, m_bits = FLOAT[t]
  sign, e, m = bits >> (e_bits + m_bits) & 1, bits >> m_bits & ((1 << e_bits) - 1), bits & ((1 << m_bits) - 1)
  bias = (1 << (e_bits - 1)) - 1
  if e == (1 << e_bits) - 1: return "nan" if m else (-math.inf if sign else math.inf)
  v = Fraction(m, 1 << m_bits) * Fraction(2) ** (1 - bias) if e == 0 else (1 + Fraction(m, 1 << m_bits)) * Fraction(2) ** (e - bias)
  return -v if sign else v

def sign_of(bits:int, t:str) -> int: return bits >> (sum(FLOAT[t])) & 1

def encode(v, t:str, neg_zero:bool=False, mode:str="rn") -> int:
  """Round an exact value (Fraction / +-inf / 'nan') into format t in `mode` (rn: nearest even; rz, rm, rp: toward zero, -inf,
  +inf); bits."""
  e_bits, m_bits = FLOAT[t]
  top = sum(FLOAT[t])
  inf = ((1 << e_bits) - 1) << m_bits
  if v == "nan": return inf | (1 << (m_bits - 1))
  if v in (math.inf, -math.inf): return inf | (1 << top if v < 0 else 0)
  if v == 0: return (1 << top) if neg_zero else 0
  sign, a = (1, -v) if v < 0 else (0, v)
  bias = (1 << (e_bits - 1)) - 1
  e = max(math.floor(math.log2(a.numerator)) - math.floor(math.log2(a.denominator)) + 1, 1 - bias)
  while Fraction(2) ** e <= a: e += 1        # now 2^(e-1) <= a < 2^e, or a is subnormal (e = 1 - bias)
  while e > 1 - bias and Fraction(2) ** (e - 1) > a: e -= 1
  exp = max(e - 1, 1 - bias)                  # the binade's exponent (subnormals share the lowest)
  ulp = Fraction(2) ** (exp - m_bits)
  q, r = divmod(a, ulp)
  up = {"rn": r > ulp / 2 or (r == ulp / 2 and int(q) & 1), "rz": False, "rm": r > 0 and sign == 1, "rp": r > 0 and sign == 0}[mode]
  q = int(q) + int(up)
  value = q * ulp
  if value >= Fraction(2) ** (bias + 1):   # overflow: inf, or the largest finite where the mode rounds toward zero
    to_inf = mode == "rn" or (mode == "rp" and sign == 0) or (mode == "rm" and sign == 1)
    return (inf if to_inf else inf - 1) | (sign << top)
  if value < Fraction(2) ** (1 - bias): return (sign << top) | int(value / Fraction(2) ** (1 - bias - m_bits))   # subnormal (or 0)
  e2 = math.floor(math.log2(value.numerator)) - math.floor(math.log2(value.denominator))
  if Fraction(2) ** e2 > value: e2 -= 1
  if Fraction(2) ** (e2 + 1) <= value: e2 += 1
  mant = int((value / Fraction(2) ** e2 - 1) * (1 << m_bits))
  return (sign << top) | ((e2 + bias) << m_bits) | mant

def is_nan(bits:int, t:str) -> bool: return decode(bits, t) == "nan"

def _sum(x, y, neg_zero:bool):
  """x + y exactly (IEEE specials: inf + -inf is NaN); returns (value, negative-zero flag)."""
  if "nan" in (x, y): return "nan", False
  if isinstance(x, float) or isinstance(y, float):
    if isinstance(x, float) and isinstance(y, float) and x != y: return "nan", False
    return x if isinstance(x, float) else y, False
  return x + y, neg_zero and x + y == 0

def f_add(mods, t, a, b, c=0, negate_b=False):
  x, y = decode(a, t), decode(b, t)
  sa, sb = sign_of(a, t), sign_of(b, t) ^ negate_b
  if negate_b: y = "nan" if y == "nan" else -y
  v, _ = _sum(x, y, False)
  return encode(v, t, neg_zero=v == 0 and sa == 1 and sb == 1)   # RNE: an exact zero sum is -0 only for (-0) + (-0)

def f_mul(mods, t, a, b, c=0):
  x, y = decode(a, t), decode(b, t)
  neg = sign_of(a, t) ^ sign_of(b, t)
  if "nan" in (x, y): return encode("nan", t)
  if isinstance(x, float) or isinstance(y, float):
    if 0 in (x, y): return encode("nan", t)   # inf * 0
    return encode(-math.inf if neg else math.inf, t)
  return encode(x * y, t, neg_zero=neg == 1)

def f_fma(mods, t, a, b, c):
  x, y, z = decode(a, t), decode(b, t), decode(c, t)
  neg_p = sign_of(a, t) ^ sign_of(b, t)
  if "nan" in (x, y, z): return encode("nan", t)
  if isinstance(x, float) or isinstance(y, float):
    if 0 in (x, y): return encode("nan", t)
    p = -math.inf if neg_p else math.inf
  else: p = x * y
  v, _ = _sum(p, z, False)
  zero_neg = v == 0 and ((neg_p and sign_of(c, t)) if not (isinstance(p, float)) else False)
  return encode(v, t, neg_zero=bool(zero_neg))

def f_minmax(pick_max:bool):
  def fn(mods, t, a, b, c=0):
    x, y = decode(a, t), decode(b, t)
    if x == "nan": return b if y != "nan" else encode("nan", t)
    if y == "nan": return a
    if x == y == 0: return (a, b)   # zeros of both signs: either (which one the PTX ISA does not say)
    return a if (x > y) == pick_max else b
  return fn

def f_neg(mods, t, a, b=0, c=0): return a ^ (1 << sum(FLOAT[t]))
def f_abs(mods, t, a, b=0, c=0): return a & ~(1 << sum(FLOAT[t]))

def f_div(mods, t, a, b, c=0):
  x, y = decode(a, t), decode(b, t)
  neg = sign_of(a, t) ^ sign_of(b, t)
  if "nan" in (x, y) or (isinstance(x, float) and isinstance(y, float)) or (x == 0 and y == 0): return encode("nan", t)
  if isinstance(x, float) or y == 0: return encode(-math.inf if neg else math.inf, t)
  if isinstance(y, float): return encode(0, t, neg_zero=neg == 1)
  return encode(x / y, t, neg_zero=neg == 1)

def f_sqrt(mods, t, a, b=0, c=0):
  x = decode(a, t)
  if x == "nan" or x == -math.inf or (x != 0 and not isinstance(x, float) and x < 0): return encode("nan", t)
  if x == math.inf or x == 0: return a
  # the correctly rounded root: bisect on the format's representable values (monotone), exact squares compare with Fractions
  lo, hi = 0, encode(math.inf, t)
  while hi - lo > 1:
    mid = (lo + hi) // 2
    if decode(mid, t) ** 2 <= x: lo = mid
    else: hi = mid
  lv, hv = decode(lo, t), decode(hi, t)
  mid = (lv + hv) / 2 if not isinstance(hv, float) else None
  return hi if mid is not None and (mid ** 2 < x or (mid ** 2 == x and lo & 1)) else lo

def f_setp(mods, t, a, b, c=0):
  x, y = decode(a, t), decode(b, t)
  cmp = next(m for m in mods if m in CMPS)
  unordered = x == "nan" or y == "nan"
  if cmp in ("num", "nan"): return int(unordered) if cmp == "nan" else int(not unordered)
  if unordered: return int(cmp.endswith("u") and cmp != "u")
  base = cmp[:-1] if cmp.endswith("u") and len(cmp) == 3 else cmp
  return int({"eq": x == y, "ne": x != y, "lt": x < y, "le": x <= y, "gt": x > y, "ge": x >= y}[base])

CMPS = ("eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan", "lo", "ls", "hi", "hs")

# ---- integers ----
def i_wrap(f:Callable[[int, int, int], int]):
  def fn(mods, t, a, b, c=0):
    return f(to_int(a, t), to_int(b, t), to_int(c, t)) & mask(t)
  return fn

def i_mul(mods, t, a, b, c=0):
  p = to_int(a, t) * to_int(b, t)
  if "wide" in mods: return p & ((1 << (2 * width(t))) - 1)
  return (p >> width(t)) & mask(t) if "hi" in mods else p & mask(t)

def i_mad(mods, t, a, b, c):
  p = to_int(a, t) * to_int(b, t)
  if "wide" in mods: return (p + to_int(c, t[0] + str(2 * width(t)))) & ((1 << (2 * width(t))) - 1)   # c is as wide as the product
  return ((p >> width(t) if "hi" in mods else p) + to_int(c, t)) & mask(t)

def i_div(mods, t, a, b, c=0):
  x, y = to_int(a, t), to_int(b, t)
  q = abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)   # truncated toward zero
  return q & mask(t)

def i_rem(mods, t, a, b, c=0):
  x, y = to_int(a, t), to_int(b, t)
  q = abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
  return (x - q * y) & mask(t)

def i_shl(mods, t, a, b, c=0):
  n = b & 0xffffffff
  return 0 if n >= width(t) else (a << n) & mask(t)

def i_shr(mods, t, a, b, c=0):
  n, x = b & 0xffffffff, to_int(a, t) if signed(t) else a & mask(t)
  return (x >> min(n, width(t))) & mask(t) if signed(t) else (0 if n >= width(t) else x >> n)

def i_setp(mods, t, a, b, c=0):
  x, y = to_int(a, t), to_int(b, t)
  cmp = {"lo": "lt", "ls": "le", "hi": "gt", "hs": "ge"}.get(next(m for m in mods if m in CMPS), next(m for m in mods if m in CMPS))
  return int({"eq": x == y, "ne": x != y, "lt": x < y, "le": x <= y, "gt": x > y, "ge": x >= y}[cmp])

def i_minmax(pick_max:bool):
  def fn(mods, t, a, b, c=0):
    x, y = to_int(a, t), to_int(b, t)
    return (max(x, y) if pick_max else min(x, y)) & mask(t)
  return fn

def i_clz(mods, t, a, b=0, c=0): return width(t) - (a & mask(t)).bit_length()
def i_popc(mods, t, a, b=0, c=0): return bin(a & mask(t)).count("1")

INT = ("s16", "s32", "s64", "u16", "u32", "u64")
BITS = ("b16", "b32", "b64")
FLOATS = tuple(FLOAT)
# opcode -> (types, operand count, fn); the `ptx.*` fuzz targets draw from this table, and only from it
ORACLE: dict[str, tuple[tuple[str, ...], int, Callable]] = {
  "add": (INT + FLOATS, 2, lambda m, t, a, b, c=0: f_add(m, t, a, b) if t in FLOAT else i_wrap(lambda x, y, z: x + y)(m, t, a, b)),
  "sub": (INT + FLOATS, 2, lambda m, t, a, b, c=0: f_add(m, t, a, b, negate_b=True) if t in FLOAT else i_wrap(lambda x, y, z: x - y)(m, t, a, b)),
  "mul": (INT + FLOATS, 2, lambda m, t, a, b, c=0: f_mul(m, t, a, b) if t in FLOAT else i_mul(m, t, a, b)),
  "fma": (FLOATS, 3, f_fma),
  "mad": (INT, 3, i_mad),
  "min": (INT + FLOATS, 2, lambda m, t, a, b, c=0: (f_minmax(False) if t in FLOAT else i_minmax(False))(m, t, a, b)),
  "max": (INT + FLOATS, 2, lambda m, t, a, b, c=0: (f_minmax(True) if t in FLOAT else i_minmax(True))(m, t, a, b)),
  "neg": (("s16", "s32", "s64") + FLOATS, 1, lambda m, t, a, b=0, c=0: f_neg(m, t, a) if t in FLOAT else (-to_int(a, t)) & mask(t)),
  "abs": (("s16", "s32", "s64") + FLOATS, 1, lambda m, t, a, b=0, c=0: f_abs(m, t, a) if t in FLOAT else abs(to_int(a, t)) & mask(t)),
  "div": (INT + ("f32", "f64"), 2, lambda m, t, a, b, c=0: f_div(m, t, a, b) if t in FLOAT else i_div(m, t, a, b)),
  "rem": (INT, 2, i_rem),
  "sqrt": (("f32", "f64"), 1, f_sqrt),
  "and": (BITS, 2, lambda m, t, a, b, c=0: a & b & mask(t)),
  "or": (BITS, 2, lambda m, t, a, b, c=0: (a | b) & mask(t)),
  "xor": (BITS, 2, lambda m, t, a, b, c=0: (a ^ b) & mask(t)),
  "not": (BITS, 1, lambda m, t, a, b=0, c=0: ~a & mask(t)),
  "shl": (BITS, 2, i_shl),
  "shr": (INT + BITS, 2, i_shr),
  "clz": (("b32", "b64"), 1, i_clz),
  "popc": (("b32", "b64"), 1, i_popc),
  "setp": (INT + FLOATS, 2, lambda m, t, a, b, c=0: f_setp(m, t, a, b) if t in FLOAT else i_setp(m, t, a, b)),
}

def cvt(mods, dt:str, st:str, a:int) -> int:
  """cvt.mods.dt.st of bits a: floats from the exact source value rounded in the mode (integral modes .rni/.rzi/.rmi/.rpi
  between floats and to integers); to integers saturating, NaN -> 0; integers to integers truncating or extending (.sat clamps)."""
  mode = next((m for m in mods if m in ("rn", "rz", "rm", "rp")), "rn")
  integral = next((m for m in mods if m in ("rni", "rzi", "rmi", "rpi")), None)
  x = decode(a, st) if st in FLOAT else Fraction(to_int(a, st))
  if dt in FLOAT:
    if x in ("nan", math.inf, -math.inf): return encode(x, dt)
    neg_zero = st in FLOAT and sign_of(a, st) == 1
    if integral is not None: x = _to_integral(x, integral)
    return encode(x, dt, neg_zero=neg_zero and x == 0, mode=mode)
  lo, hi = (-(1 << (width(dt) - 1)), (1 << (width(dt) - 1)) - 1) if signed(dt) else (0, mask(dt))
  if st in FLOAT:
    if x == "nan": return 0
    v = lo if x == -math.inf else hi if x == math.inf else int(_to_integral(x, integral or "rzi"))
    return min(max(v, lo), hi) & mask(dt)
  v = int(x)
  return (min(max(v, lo), hi) if "sat" in mods else v) & mask(dt)

def _to_integral(x:Fraction, mode:str) -> Fraction:
  f = math.floor(x)
  if mode == "rmi": return Fraction(f)
  if mode == "rpi": return Fraction(math.ceil(x))
  if mode == "rzi": return Fraction(math.trunc(x))
  r = x - f   # rni: nearest, ties to even
  return Fraction(f + (1 if r > Fraction(1, 2) or (r == Fraction(1, 2) and f % 2) else 0))

