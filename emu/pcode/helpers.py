"""The pcode's helper functions (fma, isNAN, f32_to_f16, v_max3_u32, signext, CalcGlobalAddr ...) mapped onto Python.

Floating-point work is delegated to `emu.pcode.numerics`; integer and bit helpers live here. `HELPERS` maps a pcode name to a
`Helper` describing the Python function (its name in the generated module's namespace, see `namespace()`), the argument
types the generator converts to and the result type. A helper whose numerics function does not exist yet has `missing`
set, and ops that call it are reported as unsupported (missing helper).
"""
from __future__ import annotations
from dataclasses import dataclass
from functools import cache
import numpy as np
from emu.pcode import numerics as N
from emu.pcode import runtime as R
from emu.pcode.nodes import Binary, Num, Unary

class MissingHelper(Exception):
  """The pcode calls a helper that has no implementation."""

@dataclass(frozen=True)
class Helper:
  fn: str
  ret: object                    # a Type, or a function of the argument types
  args: tuple | None = None      # per argument: a Type, 'arg0' (the first argument's type), 'float' (any float) or None (as is)
  missing: str = ""
  needs_n: bool = False
  lanes: bool = False            # integer arguments must be uint64-compatible
  dirty: bool = False
  vary_result: bool = False
  rm: bool = False               # rounds: takes rm=ROUND_MODE when the op's pcode names ROUND_MODE, else the wave's mode in an op's
                                 # mode variant (else nearest-even)
  ieee_arg: bool = False         # the last argument is WAVE_MODE.IEEE, which the vendor's calls leave out: the generator supplies it

def arg_type(want, types:list) -> tuple:
  """The type an argument is converted to."""
  if want == "arg0": return types[0]
  if want == "float": return types[0] if types[0][0] in ("f", "bf") else ("f", 32)
  return want

def const_eval(e):
  """The value of a constant integer expression, else None."""
  if isinstance(e, Num) and isinstance(e.value, int): return e.value
  if isinstance(e, Unary) and e.op == "-" and (v := const_eval(e.expr)) is not None: return -v
  if isinstance(e, Binary):
    a, b = const_eval(e.a), const_eval(e.b)
    if a is None or b is None: return None
    return {"+": a + b, "-": a - b, "*": a * b, "<<": a << b if b < 256 else None, ">>": a >> b}.get(e.op)
  return None

def _same(types): return types[0]
F32, F64, F16, BF16 = ("f", 32), ("f", 64), ("f", 16), ("bf", 16)
U32, I32, U64, I64, U16, I16, U8, BOOL = ("u", 32), ("i", 32), ("u", 64), ("i", 64), ("u", 16), ("i", 16), ("u", 8), ("bool", 1)

# ---- implementations (vectorised; scalars come in as numpy scalars or Python ints) ----
def _dt(x): return np.asarray(x).dtype
def fma(a, b, c, rm=N.RM_NE): return {np.float32: N.fma_f32, np.float64: N.fma_f64, np.float16: N.fma_f16}[_dt(a).type](a, b, c, rm)
def _ret(x, like): return x if isinstance(like, np.ndarray) else x[()] if isinstance(x, np.ndarray) else x
def isnan(x): return _ret(N.is_nan(x), x)
def is_snan(x): return _ret(N.is_signal_nan(x), x)
def is_qnan(x): return _ret(N.is_quiet_nan(x), x)
def quiet(x): return _ret(N.quiet_nan(x), x)
def is_denorm(x): return _ret(np.asarray((N.exponent_field(x) == 0) & (x != 0)), x)
def exponent(x): return R.u64(np.asarray(N.exponent_field(x)).astype(np.int64)) if isinstance(x, np.ndarray) else int(N.exponent_field(x))
def mantissa(x): return _ret(np.asarray(N.mantissa_field(x), dtype=np.uint64), x) if isinstance(x, np.ndarray) else int(N.mantissa_field(x))
def sign(x):
  if np.asarray(x).dtype.kind == "f": return _ret(np.asarray(N.sign_bit(x)).astype(np.uint64), x) if isinstance(x, np.ndarray) else int(N.sign_bit(x))
  raise TypeError("sign() of an integer")
def fabs(x): return np.abs(x)
def arith(name:str):
  """Float `a <name> b` (add, sub, mul, div) of the operands' format (f16/f32/f64) rounded in mode rm: the generator's float
  arithmetic in an op's mode variant (see codegen `Gen.fpmode`)."""
  fns = {np.float16: getattr(N, f"{name}_f16"), np.float32: getattr(N, f"{name}_f32"), np.float64: getattr(N, f"{name}_f64")}
  return lambda a, b, rm: _ret(fns[_dt(a).type](a, b, rm), a)
_SQRT = {np.float16: N.sqrt_f16, np.float32: N.sqrt_f32, np.float64: N.sqrt_f64}
def sqrt_(x, rm=N.RM_NE):
  """sqrt, rounded in mode rm (the nearest-even path is numerics.sqrt)."""
  return _ret(N.sqrt(x) if rm == N.RM_NE else _SQRT[_dt(x).type](x, rm), x)
def daz(x, mode:int):
  """x with denormals flushed to zero of the same sign unless FP_DENORM field `mode` keeps input denormals (bit 0)."""
  return x if mode & 1 else _ret(N.flush_denorm(x), x)
def ftz(x, mode:int):
  """x with denormals flushed to zero of the same sign unless FP_DENORM field `mode` keeps result denormals (bit 1)."""
  return x if mode & 2 else _ret(N.flush_denorm(x), x)
_NARROW = {(32, 16): N.f32_to_f16, (64, 32): N.f64_to_f32, (64, 16): N.f64_to_f16}
def fround(x, w:int, rm):
  """A float narrowed to w bits (f32/f16), rounded in mode rm."""
  return _ret(_NARROW[(_dt(x).itemsize * 8, w)](x, rm), x)
def ldexp(x, e, rm=N.RM_NE):
  """x * 2**e rounded once in mode rm (numerics.ldexp: exact, whatever the size of e)."""
  e = R.i64(e) if isinstance(e, np.ndarray) else e
  return _ret(N.ldexp(x, e, rm), x)
def f1(name):
  fn = getattr(N, name)
  return lambda x: _ret(fn(x), x)
def pow_f(a, b):
  if np.all(np.asarray(a) == 2.0): return _ret(N.exp2(b), b)
  with np.errstate(all="ignore"): return np.power(a, b)
def cvt(fn):
  return lambda x, **rm: _ret(fn(x, **rm), x)
def to_int(kind):
  def f(x):
    r = np.asarray(N.float_to_int(x, kind))
    r = r.astype(np.int64).view(np.uint64) if r.dtype.kind == "i" else r.astype(np.uint64)
    return r if isinstance(x, np.ndarray) else int(R.sext(int(r), 64)) if kind[0] == "i" else int(r)
  return f
def from_int(fmt, signed):
  def f(x, rm=N.RM_NE):
    v = R.i64(x) if signed and isinstance(x, np.ndarray) else x
    return _ret(N.int_to_float(np.asarray(v), getattr(N, fmt.upper()), rm), x)
  return f
def bf16_round(x, rm=N.RM_NE):
  """A float32-held value rounded to bf16 (kept float32-held) in mode rm."""
  if rm == N.RM_NE: return R.bf16_from_bits(R.bf16_bits(x))
  return _ret(R.bf16_from_bits(np.asarray(N.f32_to_bf16(x, rm)).astype(np.uint64)), x)
def saturate(kind:str):
  """Integer narrowing with saturation (u32_to_u16, i32_to_i16: V_CVT_PK_U16_U32/I16_I32 clamp to the 16-bit range)."""
  lo, hi = N._INT_RANGE[kind]
  def f(x):
    if not isinstance(x, np.ndarray): return min(max(x, lo), hi)
    return np.clip(R.i64(x), lo, hi).view(np.uint64) if kind[0] == "i" else np.minimum(x, np.uint64(hi))
  return f
def signext(x): return x
def signext_from_bit(x, n):
  if isinstance(x, np.ndarray) or isinstance(n, np.ndarray):
    n = np.minimum(np.asarray(n, dtype=np.uint64), np.uint64(64))   # from bit 63 or above: the 64-bit value as it is
    sh = np.where(n == 0, np.uint64(0), np.uint64(64) - n)
    r = ((np.asarray(x, dtype=np.uint64) << sh).view(np.int64) >> sh.astype(np.int64)).view(np.uint64)
    return np.where(n == 0, np.uint64(0), r)
  return 0 if n == 0 else R.sext(x, n)
def _vmax(*a): return np.maximum.reduce(a) if any(isinstance(x, np.ndarray) for x in a) else max(a)
def _vmin(*a): return np.minimum.reduce(a) if any(isinstance(x, np.ndarray) for x in a) else min(a)
def _imax(signed):
  def f(*a):
    r = _vmax(*[R.i64(x) for x in a]) if signed else _vmax(*a)
    return r.view(np.uint64) if isinstance(r, np.ndarray) and r.dtype == np.int64 else r
  return f
def _imin(signed):
  def f(*a):
    r = _vmin(*[R.i64(x) for x in a]) if signed else _vmin(*a)
    return r.view(np.uint64) if isinstance(r, np.ndarray) and r.dtype == np.int64 else r
  return f
def _imed3(signed):
  def f(a, b, c):
    mx, mn = _imax(signed), _imin(signed)
    return mx(mn(a, b), mn(mx(a, b), c))
  return f
def fmax(a, b, ieee): return _ret(N.max_f(a, b, ieee), a)
def fmin(a, b, ieee): return _ret(N.min_f(a, b, ieee), a)
def fmax3(a, b, c, ieee): return fmax(fmax(a, b, ieee), c, ieee)
def fmin3(a, b, c, ieee): return fmin(fmin(a, b, ieee), c, ieee)
def frexp_exp(x):
  """The exponent of C's frexp (numerics.frexp_exp) as the generator's signed integer."""
  e = np.asarray(N.frexp_exp(x)).astype(np.int64)
  return R.u64(e) if isinstance(x, np.ndarray) else int(e)
def _fold(fn):
  def f(a, *rest):
    for b in rest: a = fn(a, b)
    return _ret(a, a if isinstance(a, np.ndarray) else None)
  return f
def _bits_out(r, like): return np.asarray(r).astype(np.uint64) if isinstance(like, np.ndarray) else int(np.asarray(r))
def small_to_f32(fn, fnuz:bool=False):
  """fp8/bf8 bits -> f32 (exact); fnuz: gfx942's E4M3FNUZ/E5M2FNUZ, else OCP."""
  return lambda bits: _ret(fn(bits, fnuz=fnuz), bits)
def f32_to_small(fn, fnuz:bool=False):
  """f32 -> fp8/bf8 bits (rounded in mode rm, non-saturating); fnuz: gfx942's formats, else OCP (RDNA4, gfx950)."""
  return lambda x, rm=N.RM_NE: _bits_out(fn(x, fnuz=fnuz, rm=rm), x)
def float32_(s, e, m):
  """float32(sign, biased exponent, mantissa field) -> the f32 with those fields."""
  return R.bits2f(((s & 1) << 31) | ((e & 0xff) << 23) | (m & 0x7fffff), 32)
def f16_sr(x, rnd): return _ret(N.f32_to_f16_sr(x, np.asarray(rnd).astype(np.uint32)), x)
def bf16_sr(x, rnd): return _ret(N.bf16_to_f32(N.f32_to_bf16_sr(x, np.asarray(rnd).astype(np.uint32))), x)
_SMALL = {"f32": F32, "f16": F16, "bf16": BF16, "fp8": ("u", 8), "bf8": ("u", 8), "fp6": ("u", 6), "bf6": ("u", 6), "fp4": ("u", 4)}
def scaled(name:str):
  """numerics.SCALED[name] with the generator's representations: bf16 values are float32-held (bits in and out), small-float
  bits are uint64, the E8M0 scale and random bits are integers."""
  fn, src, dst = N.SCALED[name], name.split("_")[0], name.split("_")[2]
  def f(x, *rest):
    xin = R.bf16_bits(x) if src == "bf16" else x
    r = fn(xin, *(np.asarray(v).astype(np.uint32) for v in rest))
    if dst == "bf16": return _ret(R.bf16_from_bits(np.asarray(r).astype(np.uint64)), x)
    return _ret(r, x) if dst in ("f32", "f16") else _bits_out(r, x)
  return f
def popcount(x):
  if isinstance(x, np.ndarray): return np.bitwise_count(x.astype(np.uint64)).astype(np.uint64)
  return int(x).bit_count()
def ff1(w):
  def f(x):
    x = int(x) & ((1 << w) - 1)
    return -1 if x == 0 else (x & -x).bit_length() - 1
  return f
def sad_u8(a, b, c):
  acc = c
  for i in range(4):
    x, y = (a >> (8 * i)) & 0xff, (b >> (8 * i)) & 0xff
    acc = acc + (np.where(x > y, x - y, y - x) if isinstance(x, np.ndarray) else abs(x - y))
  return acc
def msad_u8(a, b, c):
  acc = c
  for i in range(4):
    x, y = (a >> (8 * i)) & 0xff, (b >> (8 * i)) & 0xff
    d = np.where(x > y, x - y, y - x) if isinstance(x, np.ndarray) else abs(x - y)
    acc = acc + (np.where(y == 0, 0, d).astype(np.uint64) if isinstance(d, np.ndarray) else (0 if y == 0 else d))
  return acc
def prng_b32(x):
  """One step of V_PRNG_B32's LFSR (its cdna pcode): `(x << 1) ^ (x[31] ? 197 : 0)`, 32 bits."""
  if isinstance(x, np.ndarray):
    x = x.astype(np.uint64)
    return ((x << np.uint64(1)) & np.uint64(0xffffffff)) ^ np.where(x >> np.uint64(31) & np.uint64(1), np.uint64(197), np.uint64(0))
  return ((int(x) << 1) & 0xffffffff) ^ (197 if (int(x) >> 31) & 1 else 0)
def is_even(x): return _ret(np.asarray(np.fmod(x, 2.0) == 0), x)
def to_norm(signed:bool):
  """f16/f32 -> snorm/unorm 16: clamp to [-1, 1] / [0, 1], scale by 32767 / 65535, round to nearest even; NaN -> 0."""
  def f(x):
    v = np.nan_to_num(np.asarray(x, dtype=np.float64), nan=0.0)
    r = np.rint(np.clip(v, -1.0 if signed else 0.0, 1.0) * (32767.0 if signed else 65535.0)).astype(np.int64)
    return r.view(np.uint64) if isinstance(x, np.ndarray) else int(r)
  return f
def trig(fn):
  return lambda x: _ret(fn(x), x)

def _f(t): return lambda types: t
_CVT = {  # name: (numerics function, argument type, result type)
  "f32_to_f16": (N.f32_to_f16, F32, F16), "f16_to_f32": (N.f16_to_f32, F16, F32), "f32_to_f64": (N.f32_to_f64, F32, F64),
  "f64_to_f32": (N.f64_to_f32, F64, F32), "f64_to_f16": (N.f64_to_f16, F64, F16), "bf16_to_f32": (None, BF16, F32),
}
HELPERS: dict[str, Helper] = {
  "fma": Helper("fma", _same, ("float", "arg0", "arg0"), rm=True),
  "isNAN": Helper("isnan", BOOL, ("float",)), "isSignalNAN": Helper("is_snan", BOOL, ("float",)), "isQuietNAN": Helper("is_qnan", BOOL, ("float",)),
  "cvtToQuietNAN": Helper("quiet", _same, ("float",)), "abs": Helper("fabs", _same, (None,)),
  "exponent": Helper("exponent", I32, ("float",)), "mantissa": Helper("mantissa", U64, ("float",)), "sign": Helper("sign", U32, ("float",)),
  "ldexp": Helper("ldexp", _same, ("float", ("i", 32)), rm=True),
  # not vendor names: the corrected pcode of V_FREXP_*, V_RSQ_* and V_SIN/COS_* (emu.pcode.overrides) calls them
  "frexp_mant": Helper("frexp_mant_", _same, ("float",)), "frexp_exp": Helper("frexp_exp", I32, ("float",)),
  "rsq": Helper("rsq_", _same, ("float",)), "sin_rev": Helper("sin_rev_", _same, ("float",)), "cos_rev": Helper("cos_rev_", _same, ("float",)),
  "sqrt": Helper("sqrt_", _same, ("float",), rm=True), "trunc": Helper("trunc_", _same, ("float",)), "floor": Helper("floor_", _same, ("float",)),
  "ceil": Helper("ceil_", _same, ("float",)), "fract": Helper("fract_", _same, ("float",)), "log2": Helper("log2_", _same, ("float",)),
  "sin": Helper("sin_", _same, ("float",)), "cos": Helper("cos_", _same, ("float",)), "rint": Helper("rint_", _same, ("float",)),
  "pow": Helper("pow_f", lambda t: t[1] if t[1][0] == "f" else F32, (None, "float")),
  "signext": Helper("signext", lambda t: ("i", 64), (None,)),
  "signext_from_bit": Helper("signext_from_bit", lambda t: ("i", 64), (("u", 64), ("u", 32)), lanes=True),
  "count_ones": Helper("popcount", U32, (("u", 64),)), "countbits": Helper("popcount", U32, (("u", 64),)),
  "reverse_bits": Helper("reverse_bits32", U32, (U32,), lanes=True),
  "s_ff1_i32_b32": Helper("ff1_32", I32, (U32,)), "s_ff1_i32_b64": Helper("ff1_64", I32, (U64,)),
  "v_sad_u8": Helper("sad_u8", U32, (U32, U32, U32), lanes=True, dirty=True),
  "v_msad_u8": Helper("msad_u8", U32, (U32, U32, U32), lanes=True, dirty=True),
  "f32_to_f16": Helper("f32_to_f16", F16, (F32,), rm=True), "f16_to_f32": Helper("f16_to_f32", F32, (F16,)),
  "f32_to_f64": Helper("f32_to_f64", F64, (F32,)), "f64_to_f32": Helper("f64_to_f32", F32, (F64,), rm=True),
  "bf16_to_f32": Helper("bf16_to_f32_", F32, (BF16,)),
  "f32_to_i32": Helper("f32_to_i32", I32, (F32,)), "f32_to_u32": Helper("f32_to_u32", U32, (F32,)),
  "f64_to_i32": Helper("f64_to_i32", I32, (F64,)), "f64_to_u32": Helper("f64_to_u32", U32, (F64,)),
  "f16_to_i16": Helper("f16_to_i16", I16, (F16,)), "f16_to_u16": Helper("f16_to_u16", U16, (F16,)),
  "f32_to_u8": Helper("f32_to_u8", U8, (F32,)),
  "i32_to_f32": Helper("i32_to_f32", F32, (I32,), rm=True), "u32_to_f32": Helper("u32_to_f32", F32, (U32,), rm=True),
  "i32_to_f64": Helper("i32_to_f64", F64, (I32,)), "u32_to_f64": Helper("u32_to_f64", F64, (U32,)),
  "i16_to_f16": Helper("i16_to_f16", F16, (I16,), rm=True), "u16_to_f16": Helper("u16_to_f16", F16, (U16,), rm=True),
  "u8_to_u32": Helper("signext", U32, (U8,)), "u4_to_u32": Helper("signext", U32, (("u", 4),)),
  "i32_to_i16": Helper("sat_i16", I16, (I32,), lanes=True), "u32_to_u16": Helper("sat_u16", U16, (U32,), lanes=True),
  "isEven": Helper("is_even", BOOL, ("float",)),
  "f16_to_snorm": Helper("to_snorm", I16, (F16,)), "f32_to_snorm": Helper("to_snorm", I16, (F32,)),
  "f16_to_unorm": Helper("to_unorm", U16, (F16,)), "f32_to_unorm": Helper("to_unorm", U16, (F32,)),
  "v_cvt_i16_f32": Helper("f32_to_i16", I16, (F32,)), "v_cvt_u16_f32": Helper("f32_to_u16", U16, (F32,)),
  "writeableBitMask": Helper("writeable_mask", U32, (U32, None)),
  "v_prng_b32": Helper("prng_b32", U32, (U32,), lanes=True),
}
for _k, _s in (("u32", False), ("i32", True), ("u16", False), ("i16", True), ("u64", False), ("i64", True)):
  _t = ("i" if _s else "u", int(_k[1:]))
  HELPERS[f"v_max_{_k}"] = Helper(f"imax_{_s}", _t, (_t, _t), lanes=True)
  HELPERS[f"v_min_{_k}"] = Helper(f"imin_{_s}", _t, (_t, _t), lanes=True)
  HELPERS[f"v_max3_{_k}"] = Helper(f"imax_{_s}", _t, (_t, _t, _t), lanes=True)
  HELPERS[f"v_min3_{_k}"] = Helper(f"imin_{_s}", _t, (_t, _t, _t), lanes=True)
  HELPERS[f"v_med3_{_k}"] = Helper(f"imed3_{_s}", _t, (_t, _t, _t), lanes=True)
for _k in ("f16", "f32", "f64"):  # the V_MIN/V_MAX instructions: their NaN rule depends on MODE.IEEE, passed last (ieee_arg)
  _t = ("f", int(_k[1:]))
  HELPERS[f"v_max_{_k}"] = Helper("fmax", _t, (_t, _t, BOOL), ieee_arg=True)
  HELPERS[f"v_min_{_k}"] = Helper("fmin", _t, (_t, _t, BOOL), ieee_arg=True)
  HELPERS[f"v_max3_{_k}"] = Helper("fmax3", _t, (_t, _t, _t, BOOL), ieee_arg=True)
  HELPERS[f"v_min3_{_k}"] = Helper("fmin3", _t, (_t, _t, _t, BOOL), ieee_arg=True)
# address helpers (any arity): the generator resolves them to the effective address the executor passes as ADDR (see abi.py)
ADDR_HELPERS = {"CalcDsAddr", "CalcGlobalAddr", "CalcFlatAddr", "CalcScratchAddr", "CalcBufferAddr", "CalcScalarGlobalAddr", "CalcScalarBufferAddr",
                "CalcScalarScratchAddr", "CalcImageAddr"}

for _k in ("f16", "f32", "f64"):  # RDNA4/CDNA4 IEEE 754-2019 min/max
  _t = ("f", int(_k[1:]))
  for _n, _fn in (("min_num", "fmin_num"), ("max_num", "fmax_num"), ("minimum", "fminimum"), ("maximum", "fmaximum")):
    HELPERS[f"v_{_n}_{_k}"] = Helper(_fn, _t, (_t, _t))
    HELPERS[f"v_{_n.replace('_', '3_') if '_' in _n else _n + '3'}_{_k}"] = Helper(_fn, _t, (_t, _t, _t))
HELPERS.update({
  "HwRegWriteMask": HELPERS["writeableBitMask"], "bitCount": HELPERS["count_ones"],
  "fp8_to_f32": Helper("fp8_to_f32", F32, (U8,)), "bf8_to_f32": Helper("bf8_to_f32", F32, (U8,)),
  "f32_to_fp8": Helper("f32_to_fp8", U8, (F32,), rm=True), "f32_to_bf8": Helper("f32_to_bf8", U8, (F32,), rm=True),
  "float32": Helper("float32_", F32, (U32, U32, U32), lanes=True),
  "i16_to_i32": Helper("signext", I32, (I16,)), "i8_to_i32": Helper("signext", I32, (("i", 8),)),
  "i4_to_i32": Helper("signext", I32, (("i", 4),)), "u16_to_u32": Helper("signext", U32, (U16,)),
  "f32_to_bf16": Helper("bf16_round", BF16, (F32,), rm=True),
  "f32_to_f16_SR": Helper("f16_sr", F16, (F32, U32)), "f32_to_f16_sr": Helper("f16_sr", F16, (F32, U32)),
  "f32_to_bf16_SR": Helper("bf16_sr", BF16, (F32, U32)), "f32_to_bf16_sr": Helper("bf16_sr", BF16, (F32, U32)),
})
for _name in N.SCALED:  # f32_to_fp8_scale(x, scale) / f16_to_fp4_sr_scale(x, rnd, scale) / fp6_to_bf16_scale(bits, scale) ...
  _src, _dst = _name.split("_")[0], _name.split("_")[2]
  HELPERS[_name] = Helper(f"scaled_{_name}", _SMALL[_dst], (_SMALL[_src],) + ((U32,) if "_sr_" in _name else ()) + (U8,))

CONSTANTS = {"ROUND_NEAREST_EVEN": ("u", 32), "ROUND_TOWARD_ZERO": ("u", 32)}
NOOPS = {"nop", "s_nop"}

def namespace(fnuz:bool=False) -> dict:
  """The globals every generated op module runs with (a fresh copy: the module's own definitions land in it). fnuz: fp8/bf8 are
  gfx942's FNUZ formats (ROCm's FP8 table: gfx940-gfx942 have FNUZ only; gfx950 and RDNA4 OCP)."""
  ns = dict(_namespace())
  if fnuz:
    ns.update(fp8_to_f32=small_to_f32(N.fp8_to_f32, True), bf8_to_f32=small_to_f32(N.bf8_to_f32, True),
              f32_to_fp8=f32_to_small(N.f32_to_fp8, True), f32_to_bf8=f32_to_small(N.f32_to_bf8, True))
  return ns

@cache
def _namespace() -> dict:
  ns = {k: getattr(R, k) for k in ("sext", "i64", "u64", "wide", "words", "shl", "shr", "idiv", "imod", "f2bits", "bits2f", "bf16_from_bits",
                                   "bf16_bits", "tofloat", "toint", "where", "bitset", "mread", "mread_words", "sread_words", "mwrite",
                                   "vgpr_write", "pick", "reverse_bits")}
  ns.update(np=np, fma=fma, isnan=isnan, is_snan=is_snan, is_qnan=is_qnan, quiet=quiet, is_denorm=is_denorm, exponent=exponent, mantissa=mantissa,
            sign=sign, fabs=fabs, ldexp=ldexp, pow_f=pow_f, signext=signext, signext_from_bit=signext_from_bit, popcount=popcount,
            reverse_bits32=lambda x: R.reverse_bits(x, 32), ff1_32=ff1(32), ff1_64=ff1(64), sad_u8=sad_u8, msad_u8=msad_u8, bf16_round=bf16_round,
            is_even=is_even, frexp_exp=frexp_exp, to_snorm=to_norm(True), to_unorm=to_norm(False), writeable_mask=lambda reg, priv: 0xffffffff,
            fmax=fmax, fmin=fmin, fmax3=fmax3, fmin3=fmin3, ROUND_NEAREST_EVEN=N.RM_NE, ROUND_TOWARD_ZERO=N.RM_ZERO,
            sat_i16=saturate("i16"), sat_u16=saturate("u16"), prng_b32=prng_b32, sqrt_=sqrt_, daz=daz, ftz=ftz, fround=fround,
            fadd=arith("add"), fsub=arith("sub"), fmul=arith("mul"), fdiv=arith("div"))
  for n in ("trunc", "floor", "ceil", "fract", "log2", "rint", "frexp_mant", "rsq"): ns[n + "_"] = f1(n)
  ns["sin_"], ns["cos_"], ns["sin_rev_"], ns["cos_rev_"] = f1("sin"), f1("cos"), f1("sin_rev"), f1("cos_rev")
  for name, (fn, _a, _r) in _CVT.items():
    if fn is not None: ns[name] = cvt(fn)
  ns["bf16_to_f32_"] = lambda x: x
  for k in ("i32", "u32", "i16", "u16", "u8"):
    for src in ("f32", "f64", "f16"): ns[f"{src}_to_{k}"] = to_int(k)
  for fmt, w in (("f32", 32), ("f64", 64), ("f16", 16)):
    for k in ("i32", "u32", "i16", "u16"): ns[f"{k}_to_{fmt}"] = from_int(fmt, k[0] == "i")
  ns.update(fmin_num=_fold(N.min_num), fmax_num=_fold(N.max_num), fminimum=_fold(N.minimum_f),
            fmaximum=_fold(N.maximum_f), fp8_to_f32=small_to_f32(N.fp8_to_f32), bf8_to_f32=small_to_f32(N.bf8_to_f32),
            f32_to_fp8=f32_to_small(N.f32_to_fp8), f32_to_bf8=f32_to_small(N.f32_to_bf8), float32_=float32_, f16_sr=f16_sr, bf16_sr=bf16_sr)
  for name in N.SCALED: ns[f"scaled_{name}"] = scaled(name)
  for s in (False, True): ns[f"imax_{s}"], ns[f"imin_{s}"], ns[f"imed3_{s}"] = _imax(s), _imin(s), _imed3(s)
  return ns
