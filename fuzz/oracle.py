"""Reference semantics for AMD arithmetic ops (RDNA3 names; fuzz.targets.oracle maps RDNA4/CDNA names onto them), written from
the ISA's documented meaning, independently of emu/pcode.

Floats are exact: a result is the exact rational value (fractions.Fraction) rounded once to nearest-even in the destination format
(denormals kept, as the emulator documents); infinities and NaNs follow IEEE 754. Integers are Python ints. MODE.IEEE = 1 (the
emulator's mode) decides min/max on NaNs: a signalling NaN input gives a quiet NaN, a quiet NaN loses to a number.

`ORACLE[base name]` (base name = opcode name without _E32/_E64) is an `Op(kind, width, fn)`; `fn` takes the source values as raw
bits (plus SCC for SALU ops that read it, VCC bit for ops that read it) and returns {'D0': bits} and, where the op defines
them, 'SCC' or 'VCC' (a carry / compare bit). Kinds: 'valu' (D0 into vdst), 'cmp' (D0 is the lane's compare bit), 'salu'.
`ORACLE_COVERAGE` lists the ops by group (docs/fuzzing.md has the same table).
"""
from __future__ import annotations
import math, struct
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable

FMT = {16: (5, 10), 32: (8, 23), 64: (11, 52)}  # exponent bits, mantissa bits

def to_float(bits:int, w:int) -> float:
  """The value of IEEE bits of width w as a Python float (exact for 16/32/64)."""
  e, m = FMT[w]
  sign, exp, man = bits >> (w - 1) & 1, bits >> m & ((1 << e) - 1), bits & ((1 << m) - 1)
  bias = (1 << (e - 1)) - 1
  if exp == (1 << e) - 1: v = math.inf if man == 0 else math.nan
  elif exp == 0: v = math.ldexp(man, 1 - bias - m)
  else: v = math.ldexp(man | 1 << m, exp - bias - m)
  return -v if sign else v

def is_nan(bits:int, w:int) -> bool: return math.isnan(to_float(bits, w))
def is_snan(bits:int, w:int) -> bool: return is_nan(bits, w) and not bits >> (FMT[w][1] - 1) & 1
def quiet(bits:int, w:int) -> int: return bits | 1 << (FMT[w][1] - 1)
def sign(bits:int, w:int) -> int: return bits >> (w - 1) & 1

def round_to(q:Fraction|float, w:int, neg_zero:bool=False) -> int:
  """IEEE bits of the exact value q rounded to nearest-even at width w (overflow to infinity, denormals kept)."""
  e, m = FMT[w]
  bias, top = (1 << (e - 1)) - 1, ((1 << e) - 1) << m
  if isinstance(q, float) and math.isnan(q): return top | 1 << (m - 1)
  if isinstance(q, float) and math.isinf(q): return top | (1 << (w - 1) if q < 0 else 0)
  q = Fraction(q)
  if q == 0: return (1 << (w - 1)) if neg_zero else 0
  s, a = (1 << (w - 1)) if q < 0 else 0, abs(q)
  ex = a.numerator.bit_length() - a.denominator.bit_length()
  if Fraction(2) ** ex > a: ex -= 1
  ex = max(ex, 1 - bias)                                   # denormal range shares the minimum exponent
  scaled = a / Fraction(2) ** (ex - m)                     # mantissa with m fraction bits
  n, r = divmod(scaled.numerator, scaled.denominator)
  if 2 * r > scaled.denominator or (2 * r == scaled.denominator and n & 1): n += 1
  if n >> (m + 1): n, ex = n >> 1, ex + 1                  # rounding carried into a new binade
  if ex > bias: return s | top                             # overflow
  return s | (0 if n < 1 << m else ex + bias) << m | (n & ((1 << m) - 1))

def _exact(bits:int, w:int) -> Fraction|float:
  v = to_float(bits, w)
  return v if math.isinf(v) or math.isnan(v) else Fraction(v)

def fma(a:int, b:int, c:int, w:int) -> int:
  """a*b+c rounded once (IEEE fusedMultiplyAdd), sign of an exact zero per IEEE."""
  fa, fb, fc = (to_float(x, w) for x in (a, b, c))
  if any(math.isnan(x) or math.isinf(x) for x in (fa, fb, fc)): return round_to(fa * fb + fc, w)  # specials: float arithmetic is exact
  q = Fraction(fa) * Fraction(fb) + Fraction(fc)
  prod_neg = sign(a, w) ^ sign(b, w)
  return round_to(q, w, neg_zero=q == 0 and (fa == 0 or fb == 0) and fc == 0 and bool(prod_neg) and bool(sign(c, w)))

def add(a:int, b:int, w:int) -> int: return fma(a, round_to(Fraction(1), w), b, w)
def mul(a:int, b:int, w:int) -> int: return fma(a, b, (1 << (w - 1)), w)  # + (-0): keeps the sign of a zero product
def neg(a:int, w:int) -> int: return a ^ (1 << (w - 1))

def minmax(a:int, b:int, w:int, want_min:bool) -> int:
  """V_MIN/V_MAX in IEEE mode: sNaN -> quiet NaN, quiet NaN loses to a number, -0 < +0."""
  for x in (a, b):
    if is_snan(x, w): return quiet(x, w)
  if is_nan(b, w): return a
  if is_nan(a, w): return b
  fa, fb = to_float(a, w), to_float(b, w)
  a_lt = fa < fb or (fa == fb == 0 and sign(a, w) and not sign(b, w))
  a_gt = fa > fb or (fa == fb == 0 and not sign(a, w) and sign(b, w))
  return a if (a_lt if want_min else a_gt) else b

def minmax_num(a:int, b:int, w:int, want_min:bool) -> int:
  """RDNA4 V_MIN_NUM/V_MAX_NUM (IEEE 754-2019 minimumNumber): any NaN, signalling too, loses to a number; two NaNs give quiet(a)."""
  if is_nan(a, w) and is_nan(b, w): return quiet(a, w)
  return minmax(b if is_nan(a, w) else a, a if is_nan(b, w) else b, w, want_min)

def f_to_int(bits:int, w:int, signed:bool) -> int:
  """Float to 32-bit integer: truncate toward zero, saturate, NaN -> 0."""
  v = to_float(bits, w)
  if math.isnan(v): return 0
  lo, hi = (-(1 << 31), (1 << 31) - 1) if signed else (0, (1 << 32) - 1)
  return (lo if v < lo else hi if v > hi else int(v)) & 0xffffffff

def sx(v:int, bits:int) -> int: return v - (1 << bits) if v >> (bits - 1) & 1 else v

@dataclass(frozen=True)
class Op:
  """One op's reference: kind ('valu', 'cmp', 'salu'), data width of D0 in bits, and fn(*sources, scc=, vcc=) -> outputs."""
  kind: str
  width: int
  fn: Callable[..., dict]
  reads_scc: bool = False
  reads_vcc: bool = False

ORACLE: dict[str, Op] = {}
ORACLE_COVERAGE: dict[str, list[str]] = {}

def _add(group:str, name:str, op:Op):
  ORACLE[name] = op
  ORACLE_COVERAGE.setdefault(group, []).append(name)

M32, M64 = 0xffffffff, (1 << 64) - 1
FLOAT_CMP = {"F": lambda a, b: False, "LT": lambda a, b: a < b, "EQ": lambda a, b: a == b, "LE": lambda a, b: a <= b, "GT": lambda a, b: a > b,
             "LG": lambda a, b: a < b or a > b, "GE": lambda a, b: a >= b, "O": lambda a, b: not (math.isnan(a) or math.isnan(b)),
             "U": lambda a, b: math.isnan(a) or math.isnan(b), "NGE": lambda a, b: not a >= b, "NLG": lambda a, b: not (a < b or a > b),
             "NGT": lambda a, b: not a > b, "NLE": lambda a, b: not a <= b, "NEQ": lambda a, b: not a == b, "NLT": lambda a, b: not a < b,
             "T": lambda a, b: True}
INT_CMP = {"F": lambda a, b: False, "LT": lambda a, b: a < b, "EQ": lambda a, b: a == b, "LE": lambda a, b: a <= b, "GT": lambda a, b: a > b,
           "NE": lambda a, b: a != b, "GE": lambda a, b: a >= b, "T": lambda a, b: True}

for _w, _t in ((16, "F16"), (32, "F32"), (64, "F64")):
  _m = (1 << _w) - 1
  _add("float arithmetic", f"V_ADD_{_t}", Op("valu", _w, lambda a, b, w=_w: {"D0": add(a, b, w)}))
  _add("float arithmetic", f"V_MUL_{_t}", Op("valu", _w, lambda a, b, w=_w: {"D0": mul(a, b, w)}))
  _add("float arithmetic", f"V_FMA_{_t}", Op("valu", _w, lambda a, b, c, w=_w: {"D0": fma(a, b, c, w)}))
  _add("float arithmetic", f"V_MIN_{_t}", Op("valu", _w, lambda a, b, w=_w: {"D0": minmax(a, b, w, True)}))
  _add("float arithmetic", f"V_MAX_{_t}", Op("valu", _w, lambda a, b, w=_w: {"D0": minmax(a, b, w, False)}))
  _add("float arithmetic", f"V_MIN_NUM_{_t}", Op("valu", _w, lambda a, b, w=_w: {"D0": minmax_num(a, b, w, True)}))
  _add("float arithmetic", f"V_MAX_NUM_{_t}", Op("valu", _w, lambda a, b, w=_w: {"D0": minmax_num(a, b, w, False)}))
  if _w != 64:
    _add("float arithmetic", f"V_SUB_{_t}", Op("valu", _w, lambda a, b, w=_w: {"D0": add(a, neg(b, w), w)}))
    _add("float arithmetic", f"V_SUBREV_{_t}", Op("valu", _w, lambda a, b, w=_w: {"D0": add(b, neg(a, w), w)}))
  for _c, _f in FLOAT_CMP.items():
    _add("float compares", f"V_CMP_{_c}_{_t}", Op("cmp", 1, lambda a, b, w=_w, f=_f: {"D0": int(f(to_float(a, w), to_float(b, w)))}))
for _w, _t in ((16, "16"), (32, "32"), (64, "64")):
  for _c, _f in INT_CMP.items():
    _add("integer compares", f"V_CMP_{_c}_U{_t}", Op("cmp", 1, lambda a, b, f=_f: {"D0": int(f(a, b))}))
    _add("integer compares", f"V_CMP_{_c}_I{_t}", Op("cmp", 1, lambda a, b, w=_w, f=_f: {"D0": int(f(sx(a, w), sx(b, w)))}))

_CVT = {"V_CVT_F32_F16": (16, 32), "V_CVT_F16_F32": (32, 16), "V_CVT_F64_F32": (32, 64), "V_CVT_F32_F64": (64, 32)}
for _n, (_a, _b) in _CVT.items(): _add("conversions", _n, Op("valu", _b, lambda x, a=_a, b=_b: {"D0": round_to(_exact(x, a), b, sign(x, a) == 1)}))
for _n, _w, _s in (("V_CVT_I32_F32", 32, True), ("V_CVT_U32_F32", 32, False), ("V_CVT_I32_F64", 64, True), ("V_CVT_U32_F64", 64, False)):
  _add("conversions", _n, Op("valu", 32, lambda x, w=_w, s=_s: {"D0": f_to_int(x, w, s)}))
for _n, _w, _s in (("V_CVT_F32_I32", 32, True), ("V_CVT_F32_U32", 32, False), ("V_CVT_F64_I32", 64, True), ("V_CVT_F64_U32", 64, False)):
  _add("conversions", _n, Op("valu", _w, lambda x, w=_w, s=_s: {"D0": round_to(Fraction(sx(x, 32) if s else x), w)}))
for _k in range(4): _add("conversions", f"V_CVT_F32_UBYTE{_k}", Op("valu", 32, lambda x, k=_k: {"D0": round_to(Fraction(x >> (8 * k) & 0xff), 32)}))

_VINT = {
  "V_ADD_NC_U32": lambda a, b: a + b, "V_SUB_NC_U32": lambda a, b: a - b, "V_SUBREV_NC_U32": lambda a, b: b - a,
  "V_MUL_LO_U32": lambda a, b: a * b, "V_MUL_HI_U32": lambda a, b: a * b >> 32, "V_MUL_HI_I32": lambda a, b: sx(a, 32) * sx(b, 32) >> 32,
  "V_MUL_I32_I24": lambda a, b: sx(a & 0xffffff, 24) * sx(b & 0xffffff, 24), "V_MUL_U32_U24": lambda a, b: (a & 0xffffff) * (b & 0xffffff),
  "V_MUL_HI_I32_I24": lambda a, b: sx(a & 0xffffff, 24) * sx(b & 0xffffff, 24) >> 32,
  "V_MUL_HI_U32_U24": lambda a, b: (a & 0xffffff) * (b & 0xffffff) >> 32,
  "V_LSHLREV_B32": lambda a, b: b << (a & 31), "V_LSHRREV_B32": lambda a, b: b >> (a & 31), "V_ASHRREV_I32": lambda a, b: sx(b, 32) >> (a & 31),
  "V_AND_B32": lambda a, b: a & b, "V_OR_B32": lambda a, b: a | b, "V_XOR_B32": lambda a, b: a ^ b, "V_XNOR_B32": lambda a, b: ~(a ^ b),
  "V_MIN_I32": lambda a, b: min(sx(a, 32), sx(b, 32)), "V_MAX_I32": lambda a, b: max(sx(a, 32), sx(b, 32)),
  "V_MIN_U32": lambda a, b: min(a, b), "V_MAX_U32": lambda a, b: max(a, b), "V_BCNT_U32_B32": lambda a, b: bin(a).count("1") + b,
  "V_NOT_B32": lambda a: ~a, "V_MOV_B32": lambda a: a, "V_BFREV_B32": lambda a: int(f"{a:032b}"[::-1], 2),
  "V_BFE_U32": lambda a, b, c: a >> (b & 31) & ((1 << (c & 31)) - 1),
  "V_BFE_I32": lambda a, b, c: sx(sx(a, 32) >> (b & 31) & ((1 << (c & 31)) - 1), c & 31) if c & 31 else 0,  # i32 shift: arithmetic
  "V_BFI_B32": lambda a, b, c: (a & b) | (~a & c), "V_ADD3_U32": lambda a, b, c: a + b + c, "V_LSHL_ADD_U32": lambda a, b, c: (a << (b & 31)) + c,
  "V_ADD_LSHL_U32": lambda a, b, c: (a + b) << (c & 31), "V_LSHL_OR_B32": lambda a, b, c: (a << (b & 31)) | c,
  "V_AND_OR_B32": lambda a, b, c: (a & b) | c, "V_OR3_B32": lambda a, b, c: a | b | c, "V_XOR3_B32": lambda a, b, c: a ^ b ^ c,
}
for _n, _f in _VINT.items():
  _add("integer VALU (32-bit)", _n, Op("valu", 32, lambda *s, f=_f: {"D0": f(*s) & M32}))
_VINT64 = {"V_LSHLREV_B64": lambda a, b: b << (a & 63), "V_LSHRREV_B64": lambda a, b: b >> (a & 63),
           "V_ASHRREV_I64": lambda a, b: sx(b, 64) >> (a & 63)}
for _n, _f in _VINT64.items():
  _add("integer VALU (64-bit)", _n, Op("valu", 64, lambda *s, f=_f: {"D0": f(*s) & M64}))
_VINT16 = {"V_ADD_NC_U16": lambda a, b: a + b, "V_SUB_NC_U16": lambda a, b: a - b, "V_MUL_LO_U16": lambda a, b: a * b,
           "V_LSHLREV_B16": lambda a, b: b << (a & 15), "V_LSHRREV_B16": lambda a, b: b >> (a & 15),
           "V_ASHRREV_I16": lambda a, b: sx(b, 16) >> (a & 15),
           "V_MIN_I16": lambda a, b: min(sx(a, 16), sx(b, 16)), "V_MAX_I16": lambda a, b: max(sx(a, 16), sx(b, 16)),
           "V_MIN_U16": lambda a, b: min(a, b), "V_MAX_U16": lambda a, b: max(a, b)}
for _n, _f in _VINT16.items(): _add("integer VALU (16-bit)", _n, Op("valu", 16, lambda *s, f=_f: {"D0": f(*s) & 0xffff}))
_add("integer VALU (32-bit)", "V_CNDMASK_B32", Op("valu", 32, lambda a, b, vcc: {"D0": b if vcc else a}, reads_vcc=True))

def _salu(w:int, f:Callable, scc:str="nz") -> Callable:
  """A SALU op whose SCC is 'nz' (result != 0), None (unchanged) or computed by f itself (f returns (d, scc))."""
  def fn(*s, scc_in=0):
    r = f(*s, scc_in) if scc == "fn" else f(*s)
    d, c = (r[0] & ((1 << w) - 1), r[1]) if scc == "fn" else (r & ((1 << w) - 1), None)
    return {"D0": d, "SCC": int(d != 0) if scc == "nz" else c}
  return fn

_SALU32 = {"S_AND_B32": lambda a, b: a & b, "S_OR_B32": lambda a, b: a | b, "S_XOR_B32": lambda a, b: a ^ b, "S_NAND_B32": lambda a, b: ~(a & b),
           "S_NOR_B32": lambda a, b: ~(a | b), "S_XNOR_B32": lambda a, b: ~(a ^ b), "S_AND_NOT1_B32": lambda a, b: a & ~b,
           "S_OR_NOT1_B32": lambda a, b: a | ~b, "S_LSHL_B32": lambda a, b: a << (b & 31), "S_LSHR_B32": lambda a, b: a >> (b & 31),
           "S_ASHR_I32": lambda a, b: sx(a, 32) >> (b & 31), "S_NOT_B32": lambda a: ~a, "S_ABS_I32": lambda a: abs(sx(a, 32)),
           "S_BCNT1_I32_B32": lambda a: bin(a).count("1"), "S_BCNT0_I32_B32": lambda a: 32 - bin(a).count("1"),
           "S_BFE_U32": lambda a, b: a >> (b & 31) & ((1 << (b >> 16 & 0x7f)) - 1)}
for _n, _f in _SALU32.items(): _add("SALU (32-bit)", _n, Op("salu", 32, _salu(32, _f)))
for _n in ("S_AND", "S_OR", "S_XOR", "S_NAND", "S_NOR", "S_XNOR", "S_AND_NOT1", "S_OR_NOT1", "S_NOT"):
  _add("SALU (64-bit)", f"{_n}_B64", Op("salu", 64, _salu(64, _SALU32[f"{_n}_B32"])))
_add("SALU (64-bit)", "S_LSHL_B64", Op("salu", 64, _salu(64, lambda a, b: a << (b & 63))))
_add("SALU (64-bit)", "S_LSHR_B64", Op("salu", 64, _salu(64, lambda a, b: a >> (b & 63))))
_add("SALU (64-bit)", "S_ASHR_I64", Op("salu", 64, _salu(64, lambda a, b: sx(a, 64) >> (b & 63))))
_SALU_NOSCC = {"S_MOV_B32": lambda a: a, "S_BREV_B32": lambda a: int(f"{a:032b}"[::-1], 2), "S_MUL_I32": lambda a, b: sx(a, 32) * sx(b, 32),
               "S_MUL_HI_U32": lambda a, b: a * b >> 32, "S_MUL_HI_I32": lambda a, b: sx(a, 32) * sx(b, 32) >> 32,
               "S_SEXT_I32_I8": lambda a: sx(a & 0xff, 8), "S_SEXT_I32_I16": lambda a: sx(a & 0xffff, 16)}
for _n, _f in _SALU_NOSCC.items(): _add("SALU (32-bit)", _n, Op("salu", 32, _salu(32, _f, scc="none")))
_add("SALU (64-bit)", "S_MOV_B64", Op("salu", 64, _salu(64, lambda a: a, scc="none")))
_SALU_SCC = {
  "S_ADD_U32": lambda a, b, c: (a + b, int(a + b > M32)), "S_SUB_U32": lambda a, b, c: (a - b, int(b > a)),
  "S_ADDC_U32": lambda a, b, c: (a + b + c, int(a + b + c > M32)), "S_SUBB_U32": lambda a, b, c: (a - b - c, int(b + c > a)),
  "S_ADD_I32": lambda a, b, c: (r:=sx(a, 32) + sx(b, 32), int(not -(1 << 31) <= r < 1 << 31)),
  "S_SUB_I32": lambda a, b, c: (r:=sx(a, 32) - sx(b, 32), int(not -(1 << 31) <= r < 1 << 31)),
  "S_MIN_I32": lambda a, b, c: (min(sx(a, 32), sx(b, 32)), int(sx(a, 32) < sx(b, 32))),
  "S_MAX_I32": lambda a, b, c: (max(sx(a, 32), sx(b, 32)), int(sx(a, 32) >= sx(b, 32))),
  "S_MIN_U32": lambda a, b, c: (min(a, b), int(a < b)), "S_MAX_U32": lambda a, b, c: (max(a, b), int(a >= b)),  # ISA: max sets SCC on >=, min on <
  "S_CSELECT_B32": lambda a, b, c: (a if c else b, c),
}
for _n, _f in _SALU_SCC.items(): _add("SALU (32-bit)", _n, Op("salu", 32, _salu(32, _f, scc="fn"), reads_scc=True))
_add("SALU (64-bit)", "S_CSELECT_B64", Op("salu", 64, _salu(64, _SALU_SCC["S_CSELECT_B32"], scc="fn"), reads_scc=True))
for _c, _f in (("EQ", INT_CMP["EQ"]), ("LG", INT_CMP["NE"]), *((c, INT_CMP[c]) for c in ("GT", "GE", "LT", "LE"))):
  _add("SALU compares", f"S_CMP_{_c}_U32", Op("salu", 0, lambda a, b, f=_f: {"SCC": int(f(a, b))}))
  _add("SALU compares", f"S_CMP_{_c}_I32", Op("salu", 0, lambda a, b, f=_f: {"SCC": int(f(sx(a, 32), sx(b, 32)))}))
  if _c in ("EQ", "LG"): _add("SALU compares", f"S_CMP_{_c}_U64", Op("salu", 0, lambda a, b, f=_f: {"SCC": int(f(a, b))}))
_add("SALU compares", "S_BITCMP0_B32", Op("salu", 0, lambda a, b: {"SCC": int(not a >> (b & 31) & 1)}))
_add("SALU compares", "S_BITCMP1_B32", Op("salu", 0, lambda a, b: {"SCC": int(a >> (b & 31) & 1)}))

def f32_bits(x:float) -> int:
  """IEEE single bits of a Python float (for tests and docs)."""
  return struct.unpack("<I", struct.pack("<f", x))[0]
