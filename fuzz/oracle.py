"""Reference semantics for AMD arithmetic ops (RDNA3 names; fuzz.targets.oracle maps RDNA4/CDNA names onto them), written from
the ISA's documented meaning, independently of emu/pcode.

Floats are exact: a result is the exact rational value (fractions.Fraction) rounded once to nearest-even in the destination format
(denormals kept, as the emulator's default MODE has them); infinities and NaNs follow IEEE 754. Integers are Python ints.
MODE.IEEE = 1 decides min/max on NaNs: a signalling NaN input gives a quiet NaN, a quiet NaN loses to a number.

Modifiers (`evaluate`): neg/abs act on the sign bit of each float source at the source's own width (`Op.fsrc`; abs first);
clamp saturates a float result to [0, 1] (NaN -> 0: MODE.DX10_CLAMP is set; -0 may stay -0) and an integer result of the ops
whose ISA defines it (`Op.clamp == 'int'`) to the destination type; omod is ignored: the hardware applies it only when output
denormals are flushed (and not in IEEE mode), and the emulator's MODE keeps denormals. Packed (VOP3P) ops run their per-half op on
the halves op_sel (low result) and op_sel_hi (high result) pick, with neg_lo/neg_hi on f16 halves.
Transcendentals are not exact on the hardware: the ISA documents 1 ULP for the f32 ops (rcp/rsq/sqrt/log/exp), 2**29 ULP for
V_RCP/RSQ/SQRT_F64; the oracle accepts that error around a high-precision reference (f16: 1 ULP), takes the IEEE values for the
special inputs exactly, and for f32 also a flushed denormal input or output (LLVM treats these units as flushing denormals).
V_SIN/V_COS take revolutions (sin(2*pi*x), the argument reduced exactly: the hardware computes in revolutions, not on the pcode's
rounded product x * 2*pi); the ISA gives no accuracy, the oracle allows an absolute error of 2**-18 (f16: 2**-10) on the valid
domain |x| <= 256; outside it the result is not defined (any value passes).

`ORACLE[base name]` (base name = opcode name without _E32/_E64) is an `Op`; `fn` takes the source values as raw bits plus the
keyword inputs the op lists in `reads` and returns {'D0': bits} and, where the op defines them, 'SCC' or 'CO' (a carry-out /
compare bit) and 'ok' (a predicate on the destination bits for approximate results). `ORACLE_COVERAGE` lists the ops by group
(docs/fuzzing.md has the same table).
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
def is_denormal(bits:int, w:int) -> bool: return bits >> FMT[w][1] & ((1 << FMT[w][0]) - 1) == 0 and bits & ((1 << FMT[w][1]) - 1) != 0
def max_finite(w:int) -> Fraction: return Fraction(2) ** ((1 << (FMT[w][0] - 1)) - 1) * (2 - Fraction(1, 1 << FMT[w][1]))

def round_to(q:Fraction|float, w:int, neg_zero:bool=False, rtz:bool=False) -> int:
  """IEEE bits of the exact value q rounded at width w: to nearest-even (overflow to infinity) or, with rtz, toward zero (overflow to
  the largest finite value); denormals kept. A float q may be an infinity, a NaN or a signed zero."""
  e, m = FMT[w]
  bias, top = (1 << (e - 1)) - 1, ((1 << e) - 1) << m
  if isinstance(q, float) and math.isnan(q): return top | 1 << (m - 1)
  if isinstance(q, float) and math.isinf(q): return top | (1 << (w - 1) if q < 0 else 0)
  if isinstance(q, float) and q == 0: return (1 << (w - 1)) if math.copysign(1, q) < 0 or neg_zero else 0
  q = Fraction(q)
  if q == 0: return (1 << (w - 1)) if neg_zero else 0
  s, a = (1 << (w - 1)) if q < 0 else 0, abs(q)
  ex = a.numerator.bit_length() - a.denominator.bit_length()
  if Fraction(2) ** ex > a: ex -= 1
  ex = max(ex, 1 - bias)                                   # denormal range shares the minimum exponent
  scaled = a / Fraction(2) ** (ex - m)                     # mantissa with m fraction bits
  n, r = divmod(scaled.numerator, scaled.denominator)
  if not rtz and (2 * r > scaled.denominator or (2 * r == scaled.denominator and n & 1)): n += 1
  if n >> (m + 1): n, ex = n >> 1, ex + 1                  # rounding carried into a new binade
  if ex > bias: return s | (top - 1 if rtz else top)        # overflow
  return s | (0 if n < 1 << m else ex + bias) << m | (n & ((1 << m) - 1))

def _exact(bits:int, w:int) -> Fraction|float:
  """The exact value: a Fraction for finite numbers other than -0, else the float (inf, NaN, -0.0)."""
  v = to_float(bits, w)
  return v if math.isinf(v) or math.isnan(v) or (v == 0 and sign(bits, w)) else Fraction(v)

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

def _lt(a:int, b:int, w:int) -> bool:
  """a < b for non-NaN floats with -0 < +0."""
  fa, fb = to_float(a, w), to_float(b, w)
  return fa < fb or (fa == fb == 0 and bool(sign(a, w)) and not sign(b, w))

def minmax(a:int, b:int, w:int, want_min:bool) -> int:
  """V_MIN/V_MAX in IEEE mode: sNaN -> quiet NaN, quiet NaN loses to a number, -0 < +0."""
  for x in (a, b):
    if is_snan(x, w): return quiet(x, w)
  if is_nan(b, w): return a
  if is_nan(a, w): return b
  return a if (_lt(a, b, w) if want_min else _lt(b, a, w)) else b

def minmax_num(a:int, b:int, w:int, want_min:bool) -> int:
  """RDNA4 V_MIN_NUM/V_MAX_NUM (IEEE 754-2019 minimumNumber): any NaN, signalling too, loses to a number; two NaNs give quiet(a)."""
  if is_nan(a, w) and is_nan(b, w): return quiet(a, w)
  return minmax(b if is_nan(a, w) else a, a if is_nan(b, w) else b, w, want_min)

def minimum(a:int, b:int, w:int, want_min:bool) -> int:
  """RDNA4 V_MINIMUM/V_MAXIMUM (IEEE 754-2019 minimum/maximum): a NaN input gives that NaN quietened (a's first), -0 < +0."""
  for x in (a, b):
    if is_nan(x, w): return quiet(x, w)
  return a if (_lt(a, b, w) if want_min else _lt(b, a, w)) else b

def f_to_int(bits:int, w:int, signed:bool, out:int=32) -> int:
  """Float to an `out`-bit integer: truncate toward zero, saturate, NaN -> 0."""
  v = to_float(bits, w)
  if math.isnan(v): return 0
  lo, hi = (-(1 << (out - 1)), (1 << (out - 1)) - 1) if signed else (0, (1 << out) - 1)
  return (lo if v < lo else hi if v > hi else int(v)) & ((1 << out) - 1)

def sx(v:int, bits:int) -> int: return v - (1 << bits) if v >> (bits - 1) & 1 else v

def round_int(bits:int, w:int, how:Callable[[Fraction], int]) -> int:
  """V_TRUNC/FLOOR/CEIL/RNDNE: the integer `how` picks for the exact value, with the source's sign on a zero result; NaN quietened."""
  v = _exact(bits, w)
  if isinstance(v, float): return quiet(bits, w) if math.isnan(v) else bits
  return round_to(Fraction(how(v)), w, neg_zero=bool(sign(bits, w)))

def ldexp(bits:int, n:int, w:int) -> int:
  """x * 2**n rounded once; NaN quietened, infinities and zeros kept."""
  v = _exact(bits, w)
  if isinstance(v, float): return quiet(bits, w) if math.isnan(v) else bits
  if v == 0: return bits
  n = max(min(n, 4096), -4096)                             # beyond every format's range either way
  return round_to(v * Fraction(2) ** n, w)

def frexp(bits:int, w:int) -> tuple[int, int]:
  """(mantissa bits in [0.5, 1) with the source's sign, exponent) as C's frexp; inf/NaN give themselves and 0, zeros 0."""
  v = _exact(bits, w)
  if isinstance(v, float) or v == 0: return (bits, 0)
  _, ex = math.frexp(float(v))
  return round_to(v / Fraction(2) ** ex, w), ex

# float classes of V_CMP_CLASS: mask bit per class
def fclass(bits:int, w:int) -> int:
  """V_CMP_CLASS bit index of a float: 0 sNaN, 1 qNaN, 2 -inf, 3 -normal, 4 -denormal, 5 -0, 6 +0, 7 +denormal, 8 +normal, 9 +inf."""
  if is_nan(bits, w): return 0 if is_snan(bits, w) else 1
  v, s = to_float(bits, w), sign(bits, w)
  if math.isinf(v): return 2 if s else 9
  if v == 0: return 5 if s else 6
  return (4 if s else 7) if is_denormal(bits, w) else (3 if s else 8)

# ---- approximate (transcendental) results ----
def ulp(q:Fraction, w:int) -> Fraction:
  """The spacing of width-w floats at |q| (the denormal spacing below the normal range)."""
  e, m = FMT[w]
  a = abs(q)
  ex = a.numerator.bit_length() - a.denominator.bit_length() if a else 2 - (1 << (e - 1))
  if a and Fraction(2) ** ex > a: ex -= 1
  return Fraction(2) ** (max(ex, 2 - (1 << (e - 1))) - m)

def near(got:int, want:Fraction|float, w:int, ulps:int, flush:bool=False) -> bool:
  """got is within `ulps` ULP of the exact value `want` (a float want: NaN, an infinity or a signed zero, matched exactly); with
  `flush` a result in the denormal range may also be flushed to a zero of its sign."""
  if isinstance(want, float): return is_nan(got, w) if math.isnan(want) else got == round_to(want, w)
  g = to_float(got, w)
  if math.isnan(g): return False
  if math.isinf(g): return abs(want) > max_finite(w) and (g < 0) == (want < 0)
  if flush and abs(want) < Fraction(2) ** (2 - (1 << (FMT[w][0] - 1))) and g == 0 and bool(sign(got, w)) == (want < 0): return True
  return abs(Fraction(g) - want) <= ulps * ulp(want, w) and (g == 0 or (g < 0) == (want < 0))

def sqrt_q(q:Fraction, bits:int=160) -> Fraction:
  """sqrt(q) for q > 0 with a relative error below 2**-bits (plenty for ULP checks up to f64)."""
  k = bits + max(0, q.denominator.bit_length() - q.numerator.bit_length())
  return Fraction(math.isqrt(q.numerator * q.denominator * 4 ** k), q.denominator * 2 ** k)

def _rcp(v:Fraction|float) -> Fraction|float:
  if isinstance(v, float): return v if math.isnan(v) else math.copysign(math.inf if v == 0 else 0.0, v)
  return math.copysign(math.inf, v) if v == 0 else 1 / v
def _sqrt(v:Fraction|float) -> Fraction|float:
  if isinstance(v, float): return v if v == 0 or v == math.inf else math.nan   # -0 -> -0, +inf -> +inf, -inf/NaN -> NaN
  return math.nan if v < 0 else sqrt_q(v) if v else 0.0
def _rsq(v:Fraction|float) -> Fraction|float:
  if isinstance(v, float): return math.nan if math.isnan(v) or v == -math.inf else -math.inf if v == 0 else 0.0
  return math.nan if v < 0 else math.inf if v == 0 else 1 / sqrt_q(v)
def _log2(v:Fraction|float) -> Fraction|float:
  if isinstance(v, float): return -math.inf if v == 0 else v if v == math.inf or math.isnan(v) else math.nan
  if v <= 0: return -math.inf if v == 0 else math.nan
  return 0.0 if v == 1 else Fraction(math.log2(float(v)))
def _exp2(v:Fraction|float) -> Fraction|float:
  if isinstance(v, float): return Fraction(1) if v == 0 else v if math.isnan(v) or v > 0 else 0.0
  if v >= 1024: return math.inf
  if v <= -1100: return Fraction(1, 1 << 1100)
  return Fraction(2) ** int(v) if v.denominator == 1 else Fraction(math.exp2(float(v)))

def approx(f:Callable, w:int, ulps:int) -> Callable:
  """fn of a one-source op whose result is within `ulps` ULP of f(x) (f: exact value of _exact(x)); f32 may flush denormals."""
  flush = w == 32
  def fn(x:int) -> dict:
    wants = [f(_exact(x, w))] + ([f(_exact(x & (1 << (w - 1)), w))] if flush and is_denormal(x, w) else [])
    return {"D0": round_to(wants[0], w), "ok": lambda g: any(near(g, v, w, ulps, flush) for v in wants)}
  return fn

def trig(f:Callable[[float], float], w:int) -> Callable:
  """fn of V_SIN/V_COS: f(2*pi*x) for x in revolutions, within the module docstring's tolerance on |x| <= 256."""
  def fn(x:int) -> dict:
    v = to_float(x, w)
    if math.isnan(v) or math.isinf(v): return {"D0": round_to(math.nan, w), "ok": lambda g: is_nan(g, w)}
    r = Fraction(v) - round(Fraction(v))                    # exact reduction to [-1/2, 1/2] revolutions
    want, tol = f(2 * math.pi * float(r)), 2.0 ** -18 if w == 32 else 2.0 ** -10
    if abs(v) > 256: return {"D0": round_to(Fraction(want), w), "ok": lambda g: True}
    return {"D0": round_to(Fraction(want), w), "ok": lambda g: not is_nan(g, w) and abs(to_float(g, w) - want) <= tol}
  return fn

# ---- ops and modifiers ----
@dataclass(frozen=True)
class Op:
  """One op's reference. kind: 'valu', 'cmp' (D0 is the lane's compare bit), 'salu' or 'pk' (VOP3P: `lane_op` on each half of
  the `width`-bit registers). fsrc: per source, the float width neg/abs act on (0: none). fout: float width of the result (NaN
  matches NaN; float clamp) or 0. clamp: 'float', 'int' (fn(..., clamp=True) saturates) or '' (no clamp defined). reads: keyword
  inputs of fn: 'scc', 'mask' (the lane's VCC / carry-in bit), 'd0' (the destination's old value), 'k' (the K literal / SIMM16),
  'lane', 'vcc' (the lane's VCC bit, read implicitly: V_DIV_FMAS). carry: fn also returns 'CO', the lane's carry-out bit (VCC
  for e32, SDST for VOP3SD). src_bits: the width every source is read at where the op reads more than the operand table's width
  (S_CVT_HI_F32_F16 reads bits 31:16), else 0."""
  kind: str
  width: int
  fn: Callable[..., dict]|None = None
  fsrc: tuple[int, ...] = ()
  fout: int = 0
  clamp: str = ""
  reads: tuple[str, ...] = ()
  carry: bool = False
  lane_op: Op|None = None
  src_bits: int = 0

def modified(v:int, w:int, n:int, a:int) -> int:
  """A source with abs then neg applied at float width w (w = 0: unchanged)."""
  if not w: return v
  if a: v &= ~(1 << (w - 1))
  return v ^ (1 << (w - 1)) if n else v

def clamp01(bits:int, w:int) -> dict:
  """Float clamp to [0, 1] (DX10: NaN -> +0); -0 stays -0 or becomes +0 (the ISA does not say)."""
  v = to_float(bits, w)
  if math.isnan(v) or v < 0: return {"D0": 0}
  if v > 1: return {"D0": round_to(Fraction(1), w)}
  return {"D0": bits, "ok": lambda g: g in (0, bits)} if bits == 1 << (w - 1) else {"D0": bits}

def evaluate(op:Op, vals:list[int], neg:int=0, abs_:int=0, clamp:bool=False, opsel:int=0, opsel_hi:int=0, neg_hi:int=0, **inputs) -> dict:
  """The op's outputs for raw source values `vals` under the instruction's modifiers (bit i of neg/abs/opsel* for source i)."""
  if op.kind == "pk": return _packed(op, vals, opsel, opsel_hi, neg, neg_hi, clamp)
  if op.kind == "mix": return op.fn(vals, opsel, opsel_hi, neg, neg_hi, **{k: inputs[k] for k in op.reads})
  vals = [modified(v, op.fsrc[i] if i < len(op.fsrc) else 0, neg >> i & 1, abs_ >> i & 1) for i, v in enumerate(vals)]
  out = op.fn(*vals, **{k: inputs[k] for k in op.reads}, **({"clamp": True} if clamp and op.clamp == "int" else {}))
  if clamp and op.clamp == "float": out = {**out, **clamp01(out["D0"], op.fout)}
  return out

def accepts(op:Op, out:dict, got:int) -> bool:
  """Whether destination bits `got` are a correct result (`out` from `evaluate`)."""
  if "ok" in out: return out["ok"](got)
  return out["D0"] == got or (op.fout > 0 and is_nan(out["D0"], op.fout) and is_nan(got, op.fout))

def _packed(op:Op, vals:list[int], opsel:int, opsel_hi:int, neg:int, neg_hi:int, clamp:bool) -> dict:
  h, lane = op.width // 2, op.lane_op
  m = (1 << h) - 1
  res = [evaluate(lane, [v >> (h * (sel >> i & 1)) & m for i, v in enumerate(vals)], neg=ng, clamp=clamp)
         for sel, ng in ((opsel, neg), (opsel_hi, neg_hi))]
  return {"D0": res[0]["D0"] | res[1]["D0"] << h, "ok": lambda g: accepts(lane, res[0], g & m) and accepts(lane, res[1], g >> h & m)}

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

def _fop(group:str, name:str, w:int, f:Callable, n:int, clamp:str="float"):
  """A float op of n sources of width w with a width-w result: neg/abs on every source, float clamp."""
  _add(group, name, Op("valu", w, lambda *s: {"D0": f(*s)}, fsrc=(w,) * n, fout=w, clamp=clamp))

_FW = ((16, "F16"), (32, "F32"), (64, "F64"))
for _w, _t in _FW:
  _fop("float arithmetic", f"V_ADD_{_t}", _w, lambda a, b, w=_w: add(a, b, w), 2)
  _fop("float arithmetic", f"V_MUL_{_t}", _w, lambda a, b, w=_w: mul(a, b, w), 2)
  _fop("float arithmetic", f"V_FMA_{_t}", _w, lambda a, b, c, w=_w: fma(a, b, c, w), 3)
  _add("float arithmetic", f"V_FMAC_{_t}", Op("valu", _w, lambda a, b, d0, w=_w: {"D0": fma(a, b, d0, w)}, fsrc=(_w, _w), fout=_w,
                                               clamp="float", reads=("d0",)))
  for _p, _f in (("MIN", minmax), ("MAX", minmax), ("MIN_NUM", minmax_num), ("MAX_NUM", minmax_num), ("MINIMUM", minimum), ("MAXIMUM", minimum)):
    _fop("float min/max", f"V_{_p}_{_t}", _w, lambda a, b, w=_w, f=_f, lo=_p.startswith("MIN"): f(a, b, w, lo), 2)
  if _w != 64:
    _fop("float arithmetic", f"V_SUB_{_t}", _w, lambda a, b, w=_w: add(a, neg(b, w), w), 2)
    _fop("float arithmetic", f"V_SUBREV_{_t}", _w, lambda a, b, w=_w: add(b, neg(a, w), w), 2)
    _add("float arithmetic", f"V_FMAMK_{_t}", Op("valu", _w, lambda a, b, k, w=_w: {"D0": fma(a, k & ((1 << w) - 1), b, w)}, fsrc=(_w, _w),
                                                  fout=_w, clamp="float", reads=("k",)))
    _add("float arithmetic", f"V_FMAAK_{_t}", Op("valu", _w, lambda a, b, k, w=_w: {"D0": fma(a, b, k & ((1 << w) - 1), w)}, fsrc=(_w, _w),
                                                  fout=_w, clamp="float", reads=("k",)))
    for _p, _f, _lo in (("MIN3", minmax, True), ("MAX3", minmax, False), ("MIN3_NUM", minmax_num, True), ("MAX3_NUM", minmax_num, False),
                        ("MINIMUM3", minimum, True), ("MAXIMUM3", minimum, False)):
      _fop("float min/max", f"V_{_p}_{_t}", _w, lambda a, b, c, w=_w, f=_f, lo=_lo: f(f(a, b, w, lo), c, w, lo), 3)
    for _p, _f in (("", minmax), ("_NUM", minmax_num)):       # V_MINMAX = max(min(a, b), c), V_MAXMIN = min(max(a, b), c)
      _fop("float min/max", f"V_MINMAX{_p}_{_t}", _w, lambda a, b, c, w=_w, f=_f: f(f(a, b, w, True), c, w, False), 3)
      _fop("float min/max", f"V_MAXMIN{_p}_{_t}", _w, lambda a, b, c, w=_w, f=_f: f(f(a, b, w, False), c, w, True), 3)
    _fop("float min/max", f"V_MINIMUMMAXIMUM_{_t}", _w, lambda a, b, c, w=_w: minimum(minimum(a, b, w, True), c, w, False), 3)
    _fop("float min/max", f"V_MAXIMUMMINIMUM_{_t}", _w, lambda a, b, c, w=_w: minimum(minimum(a, b, w, False), c, w, True), 3)
  for _c, _f in FLOAT_CMP.items():
    _add("float compares", f"V_CMP_{_c}_{_t}", Op("cmp", 1, lambda a, b, w=_w, f=_f: {"D0": int(f(to_float(a, w), to_float(b, w)))},
                                                  fsrc=(_w, _w)))
  _add("float compares", f"V_CMP_CLASS_{_t}", Op("cmp", 1, lambda a, b, w=_w: {"D0": b >> fclass(a, w) & 1}, fsrc=(_w, 0)))
  for _p, _f in (("TRUNC", math.trunc), ("FLOOR", math.floor), ("CEIL", math.ceil), ("RNDNE", round)):   # round(): ties to even
    _fop("float rounding", f"V_{_p}_{_t}", _w, lambda a, w=_w, f=_f: round_int(a, w, f), 1)
  _add("float rounding", f"V_LDEXP_{_t}", Op("valu", _w, lambda a, b, w=_w: {"D0": ldexp(a, sx(b, 16 if w == 16 else 32), w)}, fsrc=(_w, 0),
                                              fout=_w, clamp="float"))
  _fop("float rounding", f"V_FREXP_MANT_{_t}", _w, lambda a, w=_w: frexp(a, w)[0], 1)
  _ew = 16 if _w == 16 else 32
  _add("float rounding", f"V_FREXP_EXP_I{_ew}_{_t}", Op("valu", _ew, lambda a, w=_w, ew=_ew: {"D0": frexp(a, w)[1] & ((1 << ew) - 1)}, fsrc=(_w,)))
for _w, _t in ((16, "16"), (32, "32"), (64, "64")):
  for _c, _f in INT_CMP.items():
    _add("integer compares", f"V_CMP_{_c}_U{_t}", Op("cmp", 1, lambda a, b, f=_f: {"D0": int(f(a, b))}))
    _add("integer compares", f"V_CMP_{_c}_I{_t}", Op("cmp", 1, lambda a, b, w=_w, f=_f: {"D0": int(f(sx(a, w), sx(b, w)))}))

# transcendentals: ISA accuracy (f32 1 ULP, f64 2**29 ULP); f16 1 ULP
for _w, _t in ((16, "F16"), (32, "F32")):
  for _p, _f in (("RCP", _rcp), ("RSQ", _rsq), ("SQRT", _sqrt), ("LOG", _log2), ("EXP", _exp2)):
    _add("transcendentals", f"V_{_p}_{_t}", Op("valu", _w, approx(_f, _w, 1), fsrc=(_w,), fout=_w))
  _add("transcendentals", f"V_SIN_{_t}", Op("valu", _w, trig(math.sin, _w), fsrc=(_w,), fout=_w))
  _add("transcendentals", f"V_COS_{_t}", Op("valu", _w, trig(math.cos, _w), fsrc=(_w,), fout=_w))
_add("transcendentals", "V_RCP_IFLAG_F32", Op("valu", 32, approx(_rcp, 32, 1), fsrc=(32,), fout=32))
for _p, _f in (("RCP", _rcp), ("RSQ", _rsq), ("SQRT", _sqrt)):
  _add("transcendentals", f"V_{_p}_F64", Op("valu", 64, approx(_f, 64, 1 << 29), fsrc=(64,), fout=64))

_CVT = {"V_CVT_F32_F16": (16, 32), "V_CVT_F16_F32": (32, 16), "V_CVT_F64_F32": (32, 64), "V_CVT_F32_F64": (64, 32)}
for _n, (_a, _b) in _CVT.items():
  _add("conversions", _n, Op("valu", _b, lambda x, a=_a, b=_b: {"D0": round_to(_exact(x, a), b)}, fsrc=(_a,), fout=_b, clamp="float"))
for _n, _w, _s, _o in (("V_CVT_I32_F32", 32, True, 32), ("V_CVT_U32_F32", 32, False, 32), ("V_CVT_I32_F64", 64, True, 32),
                       ("V_CVT_U32_F64", 64, False, 32), ("V_CVT_I16_F16", 16, True, 16), ("V_CVT_U16_F16", 16, False, 16)):
  _add("conversions", _n, Op("valu", _o, lambda x, w=_w, s=_s, o=_o: {"D0": f_to_int(x, w, s, o)}, fsrc=(_w,)))
_add("conversions", "V_CVT_FLOOR_I32_F32", Op("valu", 32, lambda x: {"D0": f_to_int(round_int(x, 32, math.floor), 32, True)}, fsrc=(32,)))
for _n, _w, _s, _i in (("V_CVT_F32_I32", 32, True, 32), ("V_CVT_F32_U32", 32, False, 32), ("V_CVT_F64_I32", 64, True, 32),
                       ("V_CVT_F64_U32", 64, False, 32), ("V_CVT_F16_I16", 16, True, 16), ("V_CVT_F16_U16", 16, False, 16)):
  _add("conversions", _n, Op("valu", _w, lambda x, w=_w, s=_s, i=_i: {"D0": round_to(Fraction(sx(x, i) if s else x), w)}, fout=_w, clamp="float"))
for _k in range(4):
  _add("conversions", f"V_CVT_F32_UBYTE{_k}", Op("valu", 32, lambda x, k=_k: {"D0": round_to(Fraction(x >> (8 * k) & 0xff), 32)}, fout=32,
                                                  clamp="float"))
def pack16(lo:int, hi:int) -> dict:
  """Two f16 results in one register: equal bits or a NaN where a NaN is due, per half."""
  same = lambda want, got: want == got or (is_nan(want, 16) and is_nan(got, 16))
  return {"D0": lo | hi << 16, "ok": lambda g: same(lo, g & 0xffff) and same(hi, g >> 16)}
_rtz16 = lambda x: round_to(_exact(x, 32), 16, rtz=True)
_add("conversions", "V_CVT_PK_RTZ_F16_F32", Op("valu", 32, lambda a, b: pack16(_rtz16(a), _rtz16(b)), fsrc=(32, 32)))
_add("conversions", "V_PACK_B32_F16", Op("valu", 32, lambda a, b: pack16(a, b), fsrc=(16, 16)))
_add("conversions", "V_CVT_I32_I16", Op("valu", 32, lambda a: {"D0": sx(a & 0xffff, 16) & M32}))
_add("conversions", "V_CVT_U32_U16", Op("valu", 32, lambda a: {"D0": a & 0xffff}))
_sat = lambda v, lo, hi: max(lo, min(hi, v))
_add("conversions", "V_CVT_PK_I16_I32", Op("valu", 32, lambda a, b: {"D0": _sat(sx(a, 32), -32768, 32767) & 0xffff | (_sat(sx(b, 32), -32768, 32767)
                                                                                                               & 0xffff) << 16}))
_add("conversions", "V_CVT_PK_U16_U32", Op("valu", 32, lambda a, b: {"D0": min(a, 0xffff) | min(b, 0xffff) << 16}))
_add("conversions", "V_SAT_PK_U8_I16", Op("valu", 16, lambda a: {"D0": _sat(sx(a & 0xffff, 16), 0, 255) | _sat(sx(a >> 16, 16), 0, 255) << 8}))

def _int(bits:int, signed:bool, f:Callable) -> Callable:
  """fn of an integer op: the exact result of f, wrapped to `bits` or, with clamp, saturated to the (un)signed range."""
  lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
  def fn(*s, clamp=False):
    r = f(*(sx(v, bits) if signed else v for v in s))
    return {"D0": (_sat(r, lo, hi) if clamp else r) & ((1 << bits) - 1)}
  return fn

# integer ops whose ISA defines clamp (saturation): (bits, signed, f)
_VINT_SAT = {"V_ADD_NC_U32": (32, False, lambda a, b: a + b), "V_SUB_NC_U32": (32, False, lambda a, b: a - b),
             "V_SUBREV_NC_U32": (32, False, lambda a, b: b - a), "V_ADD_NC_I32": (32, True, lambda a, b: a + b),
             "V_SUB_NC_I32": (32, True, lambda a, b: a - b), "V_ADD_NC_U16": (16, False, lambda a, b: a + b),
             "V_SUB_NC_U16": (16, False, lambda a, b: a - b), "V_SUBREV_NC_U16": (16, False, lambda a, b: b - a),
             "V_ADD_NC_I16": (16, True, lambda a, b: a + b), "V_SUB_NC_I16": (16, True, lambda a, b: a - b),
             "V_MAD_U16": (16, False, lambda a, b, c: a * b + c), "V_MAD_I16": (16, True, lambda a, b, c: a * b + c)}
for _n, (_b, _s, _f) in _VINT_SAT.items():
  _add(f"integer VALU ({_b}-bit)", _n, Op("valu", _b, _int(_b, _s, _f), clamp="int"))
_u24, _i24 = (lambda x: x & 0xffffff), (lambda x: sx(x & 0xffffff, 24))
_add("integer VALU (32-bit)", "V_MAD_U32_U24", Op("valu", 32, _int(32, False, lambda a, b, c: _u24(a) * _u24(b) + c), clamp="int"))
_add("integer VALU (32-bit)", "V_MAD_I32_I24", Op("valu", 32, _int(32, True, lambda a, b, c: _i24(a) * _i24(b) + c), clamp="int"))

def _bytes(x:int, n:int=4, size:int=8) -> list[int]: return [x >> (size * i) & ((1 << size) - 1) for i in range(n)]
def _perm(a:int, b:int, s:int) -> int:
  """V_PERM_B32: each selector byte of s picks a byte of {a, b} (b low), a sign fill (8-11), 0x00 (12) or 0xff (13+)."""
  data, out = _bytes(b) + _bytes(a), 0
  for i, sel in enumerate(_bytes(s)):
    byte = 0xff if sel >= 13 else 0 if sel == 12 else 0xff * (data[2 * (sel - 8) + 1] >> 7) if sel >= 8 else data[sel]
    out |= byte << (8 * i)
  return out
def _clz(x:int, n:int) -> int: return n - x.bit_length() if x else -1
def _ctz(x:int) -> int: return (x & -x).bit_length() - 1 if x else -1
def _cls(x:int, n:int) -> int:
  """Leading bits equal to the sign bit, after the sign bit (-1 when all bits are equal)."""
  y = (x ^ (x >> 1)) & ((1 << (n - 1)) - 1)                 # bit i set where bits i and i+1 differ
  return n - y.bit_length() if y else -1
def _med3(a:int, b:int, c:int) -> int: return sorted((a, b, c))[1]

_VINT = {
  "V_MUL_LO_U32": lambda a, b: a * b, "V_MUL_HI_U32": lambda a, b: a * b >> 32, "V_MUL_HI_I32": lambda a, b: sx(a, 32) * sx(b, 32) >> 32,
  "V_MUL_I32_I24": lambda a, b: _i24(a) * _i24(b), "V_MUL_U32_U24": lambda a, b: _u24(a) * _u24(b),
  "V_MUL_HI_I32_I24": lambda a, b: _i24(a) * _i24(b) >> 32, "V_MUL_HI_U32_U24": lambda a, b: _u24(a) * _u24(b) >> 32,
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
  "V_BFM_B32": lambda a, b: ((1 << (a & 31)) - 1) << (b & 31), "V_XAD_U32": lambda a, b, c: (a ^ b) + c,
  "V_ALIGNBIT_B32": lambda a, b, c: (a << 32 | b) >> (c & 31), "V_ALIGNBYTE_B32": lambda a, b, c: (a << 32 | b) >> (8 * (c & 3)),
  "V_MAD_U32_U16": lambda a, b, c: (a & 0xffff) * (b & 0xffff) + c, "V_MAD_I32_I16": lambda a, b, c: sx(a & 0xffff, 16) * sx(b & 0xffff, 16) + c,
  "V_LERP_U8": lambda a, b, c: sum(((x + y + (z & 1)) >> 1) << (8 * i) for i, (x, y, z) in enumerate(zip(_bytes(a), _bytes(b), _bytes(c)))),
  "V_SAD_U8": lambda a, b, c: sum(abs(x - y) for x, y in zip(_bytes(a), _bytes(b))) + c,
  "V_SAD_HI_U8": lambda a, b, c: (sum(abs(x - y) for x, y in zip(_bytes(a), _bytes(b))) << 16) + c,
  "V_SAD_U16": lambda a, b, c: sum(abs(x - y) for x, y in zip(_bytes(a, 2, 16), _bytes(b, 2, 16))) + c,
  "V_SAD_U32": lambda a, b, c: abs(a - b) + c, "V_MSAD_U8": lambda a, b, c: sum(abs(x - y) for x, y in zip(_bytes(a), _bytes(b)) if y) + c,
  "V_PERM_B32": _perm, "V_CLZ_I32_U32": lambda a: _clz(a, 32), "V_CTZ_I32_B32": _ctz, "V_CLS_I32": lambda a: _cls(a, 32),
  "V_MIN3_I32": lambda a, b, c: min(sx(a, 32), sx(b, 32), sx(c, 32)), "V_MAX3_I32": lambda a, b, c: max(sx(a, 32), sx(b, 32), sx(c, 32)),
  "V_MED3_I32": lambda a, b, c: _med3(sx(a, 32), sx(b, 32), sx(c, 32)), "V_MIN3_U32": min, "V_MAX3_U32": max, "V_MED3_U32": _med3,
  "V_MINMAX_I32": lambda a, b, c: max(min(sx(a, 32), sx(b, 32)), sx(c, 32)),
  "V_MAXMIN_I32": lambda a, b, c: min(max(sx(a, 32), sx(b, 32)), sx(c, 32)),
  "V_MINMAX_U32": lambda a, b, c: max(min(a, b), c), "V_MAXMIN_U32": lambda a, b, c: min(max(a, b), c),
}
for _n, _f in _VINT.items():
  _add("integer VALU (32-bit)", _n, Op("valu", 32, lambda *s, f=_f: {"D0": f(*s) & M32}))
_mbcnt = lambda a, b, below: {"D0": (bin(a & ((1 << below) - 1)).count("1") + b) & M32}   # set bits of a in the lanes below this one
_add("integer VALU (32-bit)", "V_MBCNT_LO_U32_B32", Op("valu", 32, lambda a, b, lane: _mbcnt(a, b, min(lane, 32)), reads=("lane",)))
_add("integer VALU (32-bit)", "V_MBCNT_HI_U32_B32", Op("valu", 32, lambda a, b, lane: _mbcnt(a, b, max(lane - 32, 0)), reads=("lane",)))
_VINT64 = {"V_LSHLREV_B64": lambda a, b: b << (a & 63), "V_LSHRREV_B64": lambda a, b: b >> (a & 63),
           "V_ASHRREV_I64": lambda a, b: sx(b, 64) >> (a & 63)}
for _n, _f in _VINT64.items():
  _add("integer VALU (64-bit)", _n, Op("valu", 64, lambda *s, f=_f: {"D0": f(*s) & M64}))
_VINT16 = {"V_MUL_LO_U16": lambda a, b: a * b, "V_LSHLREV_B16": lambda a, b: b << (a & 15), "V_LSHRREV_B16": lambda a, b: b >> (a & 15),
           "V_ASHRREV_I16": lambda a, b: sx(b, 16) >> (a & 15),
           "V_MIN_I16": lambda a, b: min(sx(a, 16), sx(b, 16)), "V_MAX_I16": lambda a, b: max(sx(a, 16), sx(b, 16)),
           "V_MIN_U16": lambda a, b: min(a, b), "V_MAX_U16": lambda a, b: max(a, b), "V_AND_B16": lambda a, b: a & b,
           "V_OR_B16": lambda a, b: a | b, "V_XOR_B16": lambda a, b: a ^ b, "V_NOT_B16": lambda a: ~a, "V_MOV_B16": lambda a: a,
           "V_MIN3_I16": lambda a, b, c: min(sx(a, 16), sx(b, 16), sx(c, 16)), "V_MAX3_I16": lambda a, b, c: max(sx(a, 16), sx(b, 16), sx(c, 16)),
           "V_MED3_I16": lambda a, b, c: _med3(sx(a, 16), sx(b, 16), sx(c, 16)), "V_MIN3_U16": min, "V_MAX3_U16": max, "V_MED3_U16": _med3}
for _n, _f in _VINT16.items(): _add("integer VALU (16-bit)", _n, Op("valu", 16, lambda *s, f=_f: {"D0": f(*s) & 0xffff}))
# selects: the ISA and LLVM give them float input modifiers (the sign bit at the operand's width)
_add("integer VALU (32-bit)", "V_CNDMASK_B32", Op("valu", 32, lambda a, b, mask: {"D0": b if mask else a}, fsrc=(32, 32), reads=("mask",)))
_add("integer VALU (16-bit)", "V_CNDMASK_B16", Op("valu", 16, lambda a, b, mask: {"D0": b if mask else a}, fsrc=(16, 16), reads=("mask",)))

# carry ops: 'CO' is the lane's carry/borrow-out bit (VCC in VOP2, SDST in VOP3SD); the carry-in is the lane's mask bit. VOP3 clamp
# saturates the unsigned result of all of them, the carry-in forms included (the carry-out still reports the overflow)
def _carry(f:Callable, co:Callable, ci:bool) -> Op:
  def fn(a, b, mask=0, clamp=False):
    r = f(a, b, mask)
    return {"D0": _sat(r, 0, M32) if clamp else r & M32, "CO": int(co(a, b, mask))}
  return Op("valu", 32, fn, clamp="int", reads=("mask",) if ci else (), carry=True)
_add("carry", "V_ADD_CO_U32", _carry(lambda a, b, c: a + b, lambda a, b, c: a + b > M32, False))
_add("carry", "V_SUB_CO_U32", _carry(lambda a, b, c: a - b, lambda a, b, c: b > a, False))
_add("carry", "V_SUBREV_CO_U32", _carry(lambda a, b, c: b - a, lambda a, b, c: a > b, False))
_add("carry", "V_ADD_CO_CI_U32", _carry(lambda a, b, c: a + b + c, lambda a, b, c: a + b + c > M32, True))
_add("carry", "V_SUB_CO_CI_U32", _carry(lambda a, b, c: a - b - c, lambda a, b, c: b + c > a, True))
_add("carry", "V_SUBREV_CO_CI_U32", _carry(lambda a, b, c: b - a - c, lambda a, b, c: a + c > b, True))
# { D1, D0 } = the 65-bit result (the ISA's pcode): D1 is bit 64, the carry-out (unsigned) or the sign of the 65-bit result (signed)
_add("carry", "V_MAD_U64_U32", Op("valu", 64, lambda a, b, c: {"D0": (r:=a * b + c) & M64, "CO": r >> 64 & 1}, carry=True))
_add("carry", "V_MAD_I64_I32", Op("valu", 64, lambda a, b, c: {"D0": (r:=sx(a, 32) * sx(b, 32) + sx(c, 64)) & M64, "CO": r >> 64 & 1}, carry=True))

# V_DIV_SCALE (VOP3SD; S0 the value to scale, S1 the denominator, S2 the numerator), the rule docs/emulator.md gives: scale so that
# the division's Newton steps see neither denormals nor overflow; 'CO' (VCC / SDST) is set when numerator and denominator are not
# scaled alike, and for the NaN a zero operand gives. Special operands (NaN, inf) are left to V_DIV_FIXUP: any D0 and CO pass
def _div_scale(w:int) -> Op:
  e, m = FMT[w]
  bias, far, tiny, scale = (1 << (e - 1)) - 1, (96, 768)[w == 64], (23, 53)[w == 64], (64, 128)[w == 64]
  field = lambda b: b >> m & ((1 << e) - 1)  # noqa: E731
  def fn(s0, d, n):
    vd, vn = to_float(d, w), to_float(n, w)
    if math.isnan(vd) or math.isnan(vn) or math.isinf(vd) or math.isinf(vn): return {"D0": s0, "ok": lambda g: True, "CO": None}
    if vd == 0 or vn == 0: return {"D0": round_to(math.nan, w), "CO": 1}
    up, down, min_normal = ldexp(s0, scale, w), ldexp(s0, -scale, w), Fraction(2) ** (1 - bias)
    q_below_normal = abs(Fraction(vn) / Fraction(vd)) < min_normal
    if field(n) - field(d) >= far: return {"D0": up if s0 == d else s0, "CO": 1}        # quotient near overflow: denominator up
    if field(d) == 0: return {"D0": up, "CO": 0}                                         # denormal denominator: both up
    if 1 / abs(Fraction(vd)) < min_normal:                                               # 1/d below the normal range
      return {"D0": down if s0 == d else s0, "CO": 1} if q_below_normal else {"D0": down, "CO": 0}
    if q_below_normal or field(n) <= tiny: return {"D0": up if s0 == n else s0, "CO": 1}  # small quotient or tiny n: numerator up
    return {"D0": s0, "CO": 0}
  return Op("valu", w, fn, fsrc=(w, w, w), fout=w, carry=True)
_add("division helpers", "V_DIV_SCALE_F32", _div_scale(32))
_add("division helpers", "V_DIV_SCALE_F64", _div_scale(64))

# V_DIV_FMAS: S0 * S1 + S2 rounded once. With the lane's VCC bit set the result is also scaled by 2**+-64 (f64: 2**+-128), in a
# direction the ISA text does not give (docs/emulator.md's inferred rule is checked by the whole-division tests): any D0 passes there
def _div_fmas(w:int) -> Op:
  def fn(a, b, c, vcc):
    r = fma(a, b, c, w)
    return {"D0": r, "ok": lambda g: True} if vcc else {"D0": r}
  return Op("valu", w, fn, fsrc=(w, w, w), fout=w, reads=("vcc",))
_add("division helpers", "V_DIV_FMAS_F32", _div_fmas(32))
_add("division helpers", "V_DIV_FMAS_F64", _div_fmas(64))

# packed (VOP3P): the op on each half
def _pk(name:str, half:Op, width:int=32):
  _add("packed (VOP3P)", name, Op("pk", width, lane_op=half))
_h16 = {"V_PK_ADD_F16": "V_ADD_F16", "V_PK_MUL_F16": "V_MUL_F16", "V_PK_FMA_F16": "V_FMA_F16", "V_PK_MIN_F16": "V_MIN_F16",
        "V_PK_MAX_F16": "V_MAX_F16", "V_PK_MIN_NUM_F16": "V_MIN_NUM_F16", "V_PK_MAX_NUM_F16": "V_MAX_NUM_F16",
        "V_PK_MINIMUM_F16": "V_MINIMUM_F16", "V_PK_MAXIMUM_F16": "V_MAXIMUM_F16", "V_PK_MINIMUM3_F16": "V_MINIMUM3_F16",
        "V_PK_MAXIMUM3_F16": "V_MAXIMUM3_F16", "V_PK_MUL_LO_U16": "V_MUL_LO_U16", "V_PK_LSHLREV_B16": "V_LSHLREV_B16",
        "V_PK_LSHRREV_B16": "V_LSHRREV_B16", "V_PK_ASHRREV_I16": "V_ASHRREV_I16", "V_PK_MIN_I16": "V_MIN_I16", "V_PK_MAX_I16": "V_MAX_I16",
        "V_PK_MIN_U16": "V_MIN_U16", "V_PK_MAX_U16": "V_MAX_U16", "V_PK_ADD_U16": "V_ADD_NC_U16", "V_PK_ADD_I16": "V_ADD_NC_I16",
        "V_PK_SUB_U16": "V_SUB_NC_U16", "V_PK_SUB_I16": "V_SUB_NC_I16"}
for _n, _h in _h16.items(): _pk(_n, ORACLE[_h])
_pk("V_PK_MAD_U16", Op("valu", 16, _int(16, False, lambda a, b, c: a * b + c)))   # no clamp defined for the packed mads
_pk("V_PK_MAD_I16", Op("valu", 16, _int(16, True, lambda a, b, c: a * b + c)))
for _n, _h in (("V_PK_ADD_F32", "V_ADD_F32"), ("V_PK_MUL_F32", "V_MUL_F32"), ("V_PK_FMA_F32", "V_FMA_F32")): _pk(_n, ORACLE[_h], 64)

# mixed-precision FMA (VOP3P V_FMA_MIX*, RDNA): source i is an f32 (OPSEL_HI[i] = 0) or the f16 half OPSEL[i] names, widened exactly;
# then |x| where NEG_HI[i] and -x where NEG[i] (the ISA's input modifiers: LLVM encodes abs in neg_hi for these ops); one fused
# a*b+c rounded to f32; MIXLO/MIXHI convert that to f16 into their half of the destination and keep the other half
def _mix(half:int|None) -> Callable:
  def fn(vals, opsel, opsel_hi, neg, neg_hi, d0=0):
    ins = [modified(v & M32 if not opsel_hi >> i & 1 else round_to(_exact(v >> (16 * (opsel >> i & 1)) & 0xffff, 16), 32), 32,
                    neg >> i & 1, neg_hi >> i & 1) for i, v in enumerate(vals)]
    r = fma(*ins, 32)
    if half is None: return {"D0": r}
    h, sh = round_to(_exact(r, 32), 16), 16 * half
    keep = (d0 >> (16 - sh)) & 0xffff
    ok = lambda g: (g >> (16 - sh)) & 0xffff == keep and ((g >> sh) & 0xffff == h or (is_nan(h, 16) and is_nan((g >> sh) & 0xffff, 16)))
    return {"D0": (keep << (16 - sh)) | (h << sh), "ok": ok}
  return fn
for _n, _half, _w in (("V_FMA_MIX_F32", None, 32), ("V_FMA_MIXLO_F16", 0, 16), ("V_FMA_MIXHI_F16", 1, 16)):
  _add("packed (VOP3P)", _n, Op("mix", 32, _mix(_half), fsrc=(32, 32, 32), fout=32 if _half is None else 0, reads=() if _half is None else ("d0",)))

def _salu(w:int, f:Callable, scc_mode:str="nz") -> Callable:
  """A SALU op whose SCC is 'nz' (result != 0), 'none' (unchanged) or computed by f itself ('fn': f returns (d, scc), taking scc
  as its last argument)."""
  def fn(*s, scc=0, **kw):
    r = f(*s, scc, **kw) if scc_mode == "fn" else f(*s, **kw)
    d, c = (r[0] & ((1 << w) - 1), r[1]) if scc_mode == "fn" else (r & ((1 << w) - 1), None)
    return {"D0": d, "SCC": int(d != 0) if scc_mode == "nz" else c}
  return fn

def _s(group:str, name:str, w:int, f:Callable, scc:str="nz", reads:tuple[str, ...]=(), fout:int=0):
  _add(group, name, Op("salu", w, _salu(w, f, scc), reads=("scc",) * (scc == "fn") + reads, fout=fout))

def _bfe(a:int, b:int, bits:int, signed:bool) -> int:
  """S_BFE: offset b[4:0] (b[5:0] for 64 bits), width b[22:16]; signed results sign-extend from the field's top bit."""
  off, width = b & (bits - 1), b >> 16 & 0x7f
  v = (sx(a, bits) if signed else a) >> off & ((1 << width) - 1)
  return sx(v, width) if signed and width else v

_SALU32 = {"S_AND_B32": lambda a, b: a & b, "S_OR_B32": lambda a, b: a | b, "S_XOR_B32": lambda a, b: a ^ b, "S_NAND_B32": lambda a, b: ~(a & b),
           "S_NOR_B32": lambda a, b: ~(a | b), "S_XNOR_B32": lambda a, b: ~(a ^ b), "S_AND_NOT1_B32": lambda a, b: a & ~b,
           "S_OR_NOT1_B32": lambda a, b: a | ~b, "S_LSHL_B32": lambda a, b: a << (b & 31), "S_LSHR_B32": lambda a, b: a >> (b & 31),
           "S_ASHR_I32": lambda a, b: sx(a, 32) >> (b & 31), "S_NOT_B32": lambda a: ~a, "S_ABS_I32": lambda a: abs(sx(a, 32)),
           "S_BCNT1_I32_B32": lambda a: bin(a).count("1"), "S_BCNT0_I32_B32": lambda a: 32 - bin(a).count("1"),
           "S_BCNT1_I32_B64": lambda a: bin(a).count("1"), "S_BCNT0_I32_B64": lambda a: 64 - bin(a).count("1"),
           "S_BFE_U32": lambda a, b: _bfe(a, b, 32, False), "S_BFE_I32": lambda a, b: _bfe(a, b, 32, True),
           "S_ABSDIFF_I32": lambda a, b: abs(sx((a - b) & M32, 32)),       # the ISA subtracts in 32 bits, then negates a negative
           "S_QUADMASK_B32": lambda a: sum(int(a >> (4 * i) & 15 != 0) << i for i in range(8)),
           "S_WQM_B32": lambda a: sum(0xf << (4 * i) for i in range(8) if a >> (4 * i) & 15)}
for _n, _f in _SALU32.items(): _s("SALU (32-bit)", _n, 32, _f)
for _n in ("S_AND", "S_OR", "S_XOR", "S_NAND", "S_NOR", "S_XNOR", "S_AND_NOT1", "S_OR_NOT1", "S_NOT"):
  _s("SALU (64-bit)", f"{_n}_B64", 64, _SALU32[f"{_n}_B32"])
_SALU64 = {"S_LSHL_B64": lambda a, b: a << (b & 63), "S_LSHR_B64": lambda a, b: a >> (b & 63), "S_ASHR_I64": lambda a, b: sx(a, 64) >> (b & 63),
           "S_BFE_U64": lambda a, b: _bfe(a, b, 64, False), "S_BFE_I64": lambda a, b: _bfe(a, b, 64, True),
           "S_QUADMASK_B64": lambda a: sum(int(a >> (4 * i) & 15 != 0) << i for i in range(16)),
           "S_WQM_B64": lambda a: sum(0xf << (4 * i) for i in range(16) if a >> (4 * i) & 15)}
for _n, _f in _SALU64.items(): _s("SALU (64-bit)", _n, 64, _f)
_SALU_NOSCC = {"S_MOV_B32": lambda a: a, "S_BREV_B32": lambda a: int(f"{a:032b}"[::-1], 2), "S_MUL_I32": lambda a, b: sx(a, 32) * sx(b, 32),
               "S_MUL_HI_U32": lambda a, b: a * b >> 32, "S_MUL_HI_I32": lambda a, b: sx(a, 32) * sx(b, 32) >> 32,
               "S_SEXT_I32_I8": lambda a: sx(a & 0xff, 8), "S_SEXT_I32_I16": lambda a: sx(a & 0xffff, 16),
               "S_BFM_B32": lambda a, b: ((1 << (a & 31)) - 1) << (b & 31), "S_CLZ_I32_U32": lambda a: _clz(a, 32),
               "S_CLZ_I32_U64": lambda a: _clz(a, 64), "S_CTZ_I32_B32": _ctz, "S_CTZ_I32_B64": _ctz, "S_CLS_I32": lambda a: _cls(a, 32),
               "S_CLS_I32_I64": lambda a: _cls(a, 64), "S_FF0_I32_B32": lambda a: _ctz(~a & M32), "S_FF0_I32_B64": lambda a: _ctz(~a & M64),
               "S_PACK_LL_B32_B16": lambda a, b: a & 0xffff | (b & 0xffff) << 16, "S_PACK_LH_B32_B16": lambda a, b: a & 0xffff | (b >> 16) << 16,
               "S_PACK_HL_B32_B16": lambda a, b: a >> 16 | (b & 0xffff) << 16, "S_PACK_HH_B32_B16": lambda a, b: a >> 16 | (b >> 16) << 16,
               "S_MOVK_I32": lambda k: sx(k & 0xffff, 16), "S_MULK_I32": lambda d0, k: sx(d0, 32) * sx(k & 0xffff, 16)}
for _n, _f in _SALU_NOSCC.items():
  _s("SALU (32-bit)", _n, 32, _f, scc="none", reads=("d0", "k") if _n == "S_MULK_I32" else ("k",) if _n == "S_MOVK_I32" else ())
_SALU64_NOSCC = {"S_MOV_B64": lambda a: a, "S_BREV_B64": lambda a: int(f"{a:064b}"[::-1], 2),
                 "S_BFM_B64": lambda a, b: ((1 << (a & 63)) - 1) << (b & 63),
                 "S_BITREPLICATE_B64_B32": lambda a: sum(3 << (2 * i) for i in range(32) if a >> i & 1),
                 "S_MUL_U64": lambda a, b: a * b, "S_ADD_NC_U64": lambda a, b: a + b, "S_SUB_NC_U64": lambda a, b: a - b}
for _n, _f in _SALU64_NOSCC.items(): _s("SALU (64-bit)", _n, 64, _f, scc="none")
for _w in (32, 64):
  _add(f"SALU ({_w}-bit)", f"S_CMOV_B{_w}", Op("salu", _w, lambda a, scc, d0: {"D0": a if scc else d0, "SCC": None}, reads=("scc", "d0")))
  _s(f"SALU ({_w}-bit)", f"S_BITSET0_B{_w}", _w, lambda a, d0, w=_w: d0 & ~(1 << (a & (w - 1))), scc="none", reads=("d0",))
  _s(f"SALU ({_w}-bit)", f"S_BITSET1_B{_w}", _w, lambda a, d0, w=_w: d0 | 1 << (a & (w - 1)), scc="none", reads=("d0",))
_add("SALU (32-bit)", "S_CMOVK_I32", Op("salu", 32, lambda scc, d0, k: {"D0": sx(k & 0xffff, 16) & M32 if scc else d0, "SCC": None},
                                        reads=("scc", "d0", "k")))
_ovf = lambda r: int(not -(1 << 31) <= r < 1 << 31)
_SALU_SCC = {
  "S_ADD_U32": lambda a, b, c: (a + b, int(a + b > M32)), "S_SUB_U32": lambda a, b, c: (a - b, int(b > a)),
  "S_ADDC_U32": lambda a, b, c: (a + b + c, int(a + b + c > M32)), "S_SUBB_U32": lambda a, b, c: (a - b - c, int(b + c > a)),
  "S_ADD_I32": lambda a, b, c: (r:=sx(a, 32) + sx(b, 32), _ovf(r)), "S_SUB_I32": lambda a, b, c: (r:=sx(a, 32) - sx(b, 32), _ovf(r)),
  "S_MIN_I32": lambda a, b, c: (min(sx(a, 32), sx(b, 32)), int(sx(a, 32) < sx(b, 32))),
  "S_MAX_I32": lambda a, b, c: (max(sx(a, 32), sx(b, 32)), int(sx(a, 32) >= sx(b, 32))),
  "S_MIN_U32": lambda a, b, c: (min(a, b), int(a < b)), "S_MAX_U32": lambda a, b, c: (max(a, b), int(a >= b)),  # ISA: max sets SCC on >=, min on <
  "S_CSELECT_B32": lambda a, b, c: (a if c else b, c),
  **{f"S_LSHL{_i}_ADD_U32": lambda a, b, c, i=_i: ((r:=(a << i) + b), int(r > M32)) for _i in range(1, 5)},
}
for _n, _f in _SALU_SCC.items(): _s("SALU (32-bit)", _n, 32, _f, scc="fn")
_s("SALU (64-bit)", "S_CSELECT_B64", 64, _SALU_SCC["S_CSELECT_B32"], scc="fn")
_add("SALU (32-bit)", "S_ADDK_I32", Op("salu", 32, lambda d0, k: {"D0": (r:=sx(d0, 32) + sx(k & 0xffff, 16)) & M32, "SCC": _ovf(r)},
                                       reads=("d0", "k")))
for _c, _f in (("EQ", INT_CMP["EQ"]), ("LG", INT_CMP["NE"]), *((c, INT_CMP[c]) for c in ("GT", "GE", "LT", "LE"))):
  _add("SALU compares", f"S_CMP_{_c}_U32", Op("salu", 0, lambda a, b, f=_f: {"SCC": int(f(a, b))}))
  _add("SALU compares", f"S_CMP_{_c}_I32", Op("salu", 0, lambda a, b, f=_f: {"SCC": int(f(sx(a, 32), sx(b, 32)))}))
  _add("SALU compares", f"S_CMPK_{_c}_U32", Op("salu", 0, lambda d0, k, f=_f: {"SCC": int(f(d0, k & 0xffff))}, reads=("d0", "k")))
  _add("SALU compares", f"S_CMPK_{_c}_I32", Op("salu", 0, lambda d0, k, f=_f: {"SCC": int(f(sx(d0, 32), sx(k & 0xffff, 16)))}, reads=("d0", "k")))
  if _c in ("EQ", "LG"): _add("SALU compares", f"S_CMP_{_c}_U64", Op("salu", 0, lambda a, b, f=_f: {"SCC": int(f(a, b))}))
for _w in (32, 64):
  _add("SALU compares", f"S_BITCMP0_B{_w}", Op("salu", 0, lambda a, b, w=_w: {"SCC": int(not a >> (b & (w - 1)) & 1)}))
  _add("SALU compares", f"S_BITCMP1_B{_w}", Op("salu", 0, lambda a, b, w=_w: {"SCC": int(a >> (b & (w - 1)) & 1)}))

# SALU float (RDNA3+): the VALU semantics on SGPRs (SCC unchanged), float compares set SCC
for _w, _t in ((16, "F16"), (32, "F32")):
  for _p, _v in (("ADD", "V_ADD"), ("SUB", "V_SUB"), ("MUL", "V_MUL"), ("MIN", "V_MIN"), ("MAX", "V_MAX"), ("MIN_NUM", "V_MIN_NUM"),
                 ("MAX_NUM", "V_MAX_NUM"), ("MINIMUM", "V_MINIMUM"), ("MAXIMUM", "V_MAXIMUM"), ("TRUNC", "V_TRUNC"), ("FLOOR", "V_FLOOR"),
                 ("CEIL", "V_CEIL"), ("RNDNE", "V_RNDNE")):
    _add("SALU float", f"S_{_p}_{_t}", Op("salu", _w, lambda *s, v=ORACLE[f"{_v}_{_t}"]: {"D0": v.fn(*s)["D0"], "SCC": None}, fout=_w))
  _add("SALU float", f"S_FMAC_{_t}", Op("salu", _w, lambda a, b, d0, w=_w: {"D0": fma(a, b, d0 & ((1 << w) - 1), w), "SCC": None}, reads=("d0",),
                                         fout=_w))
  for _c, _f in FLOAT_CMP.items():
    if _c not in ("F", "T"):
      _add("SALU float", f"S_CMP_{_c}_{_t}", Op("salu", 0, lambda a, b, w=_w, f=_f: {"SCC": int(f(to_float(a, w), to_float(b, w)))}))
_add("SALU float", "S_FMAAK_F32", Op("salu", 32, lambda a, b, k: {"D0": fma(a, b, k, 32), "SCC": None}, reads=("k",), fout=32))
_add("SALU float", "S_FMAMK_F32", Op("salu", 32, lambda a, b, k: {"D0": fma(a, k, b, 32), "SCC": None}, reads=("k",), fout=32))
for _n, _v in (("S_CVT_F32_I32", "V_CVT_F32_I32"), ("S_CVT_F32_U32", "V_CVT_F32_U32"), ("S_CVT_I32_F32", "V_CVT_I32_F32"),
               ("S_CVT_U32_F32", "V_CVT_U32_F32"), ("S_CVT_F16_F32", "V_CVT_F16_F32"), ("S_CVT_F32_F16", "V_CVT_F32_F16"),
               ("S_CVT_PK_RTZ_F16_F32", "V_CVT_PK_RTZ_F16_F32")):
  _add("SALU float", _n, Op("salu", ORACLE[_v].width, lambda *s, v=ORACLE[_v]: {**v.fn(*s), "SCC": None}, fout=ORACLE[_v].fout))
_add("SALU float", "S_CVT_HI_F32_F16", Op("salu", 32, lambda a: {"D0": round_to(_exact(a >> 16, 16), 32), "SCC": None}, fout=32, src_bits=32))

def f32_bits(x:float) -> int:
  """IEEE single bits of a Python float (for tests and docs)."""
  return struct.unpack("<I", struct.pack("<f", x))[0]
