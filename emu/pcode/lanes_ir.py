"""An op over the lanes of one wave as LLVM IR vector code, read off the op's generated default-mode code (the front end of the
native VALU regions, emu/amd/regions.py).

The generated Python (emu.pcode.codegen) stays the one implementation of an op's semantics: this module re-reads it statement by
statement as code over one wave's lanes. Each numpy array becomes one SSA vector (a lane per element) of the array's dtype, numpy's own type promotion
(`np.result_type`, with Python scalars weak as in NEP 50) decides every result type, and each runtime helper the generated code
calls maps to the LLVM instructions that compute its per-element result (the table below; each entry is checked against the
helper by tests/unit/pcode/test_lanes_ir.py over every op it lowers). Mode and field inputs are constants: branches on them are
taken at lowering time, as the Python would take them. Anything that cannot be read exactly this way (loops, Python ints past 64
bits, per-lane Python control flow, float -> int casts whose out-of-range result numpy leaves to the C compiler, a helper
without an entry) raises NotLowerable and the op keeps running on the numpy path.

A whole-wave op's code (kind 'wave': v_readfirstlane, v_readlane) computes with Python ints, one value per wave: lowered with
`python_ints` on a one-element builder, each int is a signed or unsigned 64-bit value and only operations whose exact result stays
in 64 bits lower (bitwise ops, right shifts, comparisons of one signedness, sext, find-first-one); an `if` or conditional
expression on a wave's value runs both arms (they only assign) and selects each name's value; `VGPR[lane, reg]` is the input
object's `lane_value(lane, reg)`.

Float results whose bits the CPU chooses (a NaN out of arithmetic: which operand's payload survives depends on operand order,
which LLVM may commute) are reported, not trusted: `Builder.float_results` lists every value made by float arithmetic, for the
caller to test for NaN and to run such lanes through the numpy path instead.
"""
from __future__ import annotations
import ast, functools, struct
from dataclasses import dataclass
import numpy as np
from emu.pcode import numerics, runtime

class NotLowerable(Exception):
  """The op's generated code uses something this module does not lower; the message says what."""

U64, I64, F16, F32, F64, BOOL = (np.dtype(t) for t in ("uint64", "int64", "float16", "float32", "float64", "bool"))
LLVM_TYPE = {U64: "i64", I64: "i64", F16: "half", F32: "float", F64: "double", BOOL: "i1"}
FLOAT_BITS = {F16: 16, F32: 32, F64: 64}
MANTISSA_BITS = {16: 10, 32: 23, 64: 52}
INT_OF_BITS = {16: "i16", 32: "i32", 64: "i64"}
NP_TYPES = {"uint64": U64, "int64": I64, "float16": F16, "float32": F32, "float64": F64, "bool": BOOL, "bool_": BOOL}

@dataclass(frozen=True)
class Val:
  """One wave's lanes of a value: an SSA name (or LLVM constant) of a vector of numpy dtype `dt`."""
  ref: str
  dt: np.dtype

@dataclass(frozen=True)
class Words:
  """One wave's lanes of an (n, k) uint32 array (a B96/B128 load's VDATA): column j as a uint64 Val holding dword j."""
  columns: tuple

class Bits:
  """A uint64 Val under the bit operators (+ modulo 2**64, &, |, ^ with a Bits or a Python int, << and >> by a Python int), each emitting its LLVM
  instruction into the builder: a bit rule written once over numpy's operators (emu.amd.operands) lowers through it."""
  def __init__(self, b:"Builder", val:Val): self.b, self.val = b, val
  def _op(self, name:str, other) -> "Bits":
    ref = other.val.ref if isinstance(other, Bits) else self.b.const(int(other) & ((1 << 64) - 1), U64).ref
    return Bits(self.b, self.b.emit(f"{name} {self.b.t('i64')} {self.val.ref}, {ref}", U64))
  def __add__(self, other) -> "Bits": return self._op("add", other)
  def __and__(self, other) -> "Bits": return self._op("and", other)
  def __or__(self, other) -> "Bits": return self._op("or", other)
  def __xor__(self, other) -> "Bits": return self._op("xor", other)
  def __lshift__(self, n:int) -> "Bits": return self if n == 0 else self._op("shl", n)
  def __rshift__(self, n:int) -> "Bits": return self if n == 0 else self._op("lshr", n)

class Lanes:
  """The sentinel for the batch size `n` (meaningless inside one wave: only np.full/np.zeros may take it)."""

N_SENTINEL = Lanes()

def literal(value, dt:np.dtype) -> str:
  """An LLVM scalar constant of numpy dtype dt (value already representable: checked by `Builder.weak`)."""
  if dt == BOOL: return "true" if value else "false"
  if dt.kind == "f":   # LLVM writes float and double constants as the double's bits in hex
    return f"0x{struct.unpack('<Q', struct.pack('<d', float(dt.type(value))))[0]:016X}"
  return str(int(value) - (1 << 64) if int(value) >= 1 << 63 else int(value))

class Builder:
  """The instructions of one wave's lanes (`width` of them, one vector element each), appended in order: fresh SSA names, the
  intrinsics used (`declarations`), the float results to test for NaN."""
  def __init__(self, prefix:str, width:int):
    self.prefix, self.width, self.lines, self.count, self.float_results, self.intrinsics = prefix, width, [], 0, [], {}
    self.libm_used: set[str] = set()   # C library functions called (`libm_call`): the caller defines their pointers

  def libm_call(self, name:str, x:Val) -> Val:
    """The C library's double function `name` of each lane of double x, called through the pointer `%libm.<name>`, which the
    caller loads before the code (so that the object holds no address outside itself: emu.native.LIBM)."""
    self.libm_used.add(name)
    r = "poison"
    for i in range(self.width):
      lane = self.emit(f"extractelement {self.t('double')} {x.ref}, i64 {i}", F64)
      y = self.emit(f"call double %libm.{name}(double {lane.ref})", F64)
      r = self.emit(f"insertelement {self.t('double')} {r}, double {y.ref}, i64 {i}", F64).ref
    return Val(r, F64)

  def t(self, scalar:str) -> str: return f"<{self.width} x {scalar}>"
  def c(self, scalar:str, lit:str) -> str:
    """A constant vector of `lit` in every lane."""
    if lit in ("0", "false", "0x0000000000000000"): return "zeroinitializer"
    return "<" + ", ".join([f"{scalar} {lit}"] * self.width) + ">"
  def const(self, value, dt:np.dtype) -> Val: return Val(self.c(LLVM_TYPE[dt], literal(value, dt)), dt)
  def lane_ids(self) -> str: return "<" + ", ".join(f"i64 {i}" for i in range(self.width)) + ">"

  def emit(self, rhs:str, dt:np.dtype, arith:bool=False) -> Val:
    name = f"%{self.prefix}{self.count}"
    self.count += 1
    self.lines.append(f"  {name} = {rhs}")
    v = Val(name, dt)
    if arith and dt.kind == "f": self.float_results.append(v)
    return v

  def call(self, name:str, ret:str, args:list[tuple[str, str]], dt:np.dtype, arith:bool=False) -> Val:
    """A call of intrinsic `name` (overload suffixes included) on vectors of the given element types."""
    self.intrinsics[name] = f"declare {self.t(ret)} @{name}({', '.join(self.t(a) for a, _ in args)})"
    return self.emit(f"call {self.t(ret)} @{name}({', '.join(f'{self.t(a)} {r}' for a, r in args)})", dt, arith)

  def splat(self, scalar:str, ref:str, dt:np.dtype) -> Val:
    """A scalar SSA value in every lane."""
    one = self.emit(f"insertelement {self.t(scalar)} poison, {scalar} {ref}, i64 0", dt)
    return self.emit(f"shufflevector {self.t(scalar)} {one.ref}, {self.t(scalar)} poison, <{self.width} x i32> zeroinitializer", dt)

  def declarations(self) -> str: return "\n".join(sorted(self.intrinsics.values()))

  def cast(self, x, dt:np.dtype) -> Val:
    """numpy's astype(dt) of a lane value or weak Python scalar (float -> int is refused: see the module docstring)."""
    if not isinstance(x, Val): return self.const(self.weak(x, dt), dt)
    src = x.dt
    if src == dt: return x
    if src.kind in "iu" and dt.kind in "iu": return Val(x.ref, dt)   # both 64-bit: the same bits
    ts, td = self.t(LLVM_TYPE[src]), self.t(LLVM_TYPE[dt])
    if dt == BOOL:
      return self.emit(f"icmp ne {ts} {x.ref}, zeroinitializer" if src.kind in "iu" else f"fcmp une {ts} {x.ref}, zeroinitializer", BOOL)
    if src == BOOL: return self.emit(f"zext {ts} {x.ref} to {td}" if dt.kind in "iu" else f"uitofp {ts} {x.ref} to {td}", dt)
    if src.kind in "iu" and dt in (F32, F64): return self.emit(f"{'sitofp' if src == I64 else 'uitofp'} {ts} {x.ref} to {td}", dt)
    if (src, dt) == (F64, F16): return self._double_to_half(x)
    if src.kind == "f" and dt.kind == "f":
      return self.emit(f"{'fpext' if FLOAT_BITS[dt] > FLOAT_BITS[src] else 'fptrunc'} {ts} {x.ref} to {td}", dt, arith=True)
    raise NotLowerable(f"cast {src} -> {dt}")   # (an integer to float16: numpy's rounding path is not checked here)

  def _double_to_half(self, x:Val) -> Val:
    """numpy's float64 -> float16 cast (one rounding to nearest even) without a call into the C runtime (x86 converts half only
    from float): x rounded to odd at float's 24 bits (nearest, then one unit towards x where that was inexact and even), which
    then rounds to half's 11 bits exactly as x would (24 >= 2 * 11 + 2)."""
    vf, vi, vd = self.t("float"), self.t("i32"), self.t("double")
    f = self.emit(f"fptrunc {vd} {x.ref} to {vf}", F32)
    back = self.emit(f"fpext {vf} {f.ref} to {vd}", F64)
    inexact = self.emit(f"fcmp one {vd} {back.ref}, {x.ref}", BOOL)
    bits = self.emit(f"bitcast {vf} {f.ref} to {vi}", U64)
    low = self.emit(f"and {vi} {bits.ref}, {self.c('i32', '1')}", U64)
    even = self.emit(f"icmp eq {vi} {low.ref}, zeroinitializer", BOOL)
    fix = self.emit(f"and {self.t('i1')} {inexact.ref}, {even.ref}", BOOL)
    fabs = f"llvm.fabs.v{self.width}f64"
    self.intrinsics[fabs] = f"declare {vd} @{fabs}({vd})"
    mag_f, mag_x = (self.emit(f"call {vd} @{fabs}({vd} {v.ref})", F64) for v in (back, x))
    over = self.emit(f"fcmp ogt {vd} {mag_f.ref}, {mag_x.ref}", BOOL)   # rounded away from zero: one unit back towards it
    step = self.emit(f"select {self.t('i1')} {over.ref}, {vi} {self.c('i32', '-1')}, {vi} {self.c('i32', '1')}", U64)
    moved = self.emit(f"add {vi} {bits.ref}, {step.ref}", U64)
    odd = self.emit(f"select {self.t('i1')} {fix.ref}, {vi} {moved.ref}, {vi} {bits.ref}", U64)
    f_odd = self.emit(f"bitcast {vi} {odd.ref} to {vf}", F32)
    return self.emit(f"fptrunc {vf} {f_odd.ref} to {self.t('half')}", F16, arith=True)

  @staticmethod
  def weak(x, dt:np.dtype):
    """A Python scalar converted to dt as numpy converts a weak scalar (ints must fit; floats round to dt)."""
    if not isinstance(x, (bool, int, float)): raise NotLowerable(f"{type(x).__name__} as a scalar")   # Words, shapes, memories
    if dt == BOOL: return bool(x)
    if dt.kind == "f": return float(dt.type(x))
    if isinstance(x, float) or not (np.iinfo(dt).min <= int(x) <= np.iinfo(dt).max): raise NotLowerable(f"{x!r} as {dt}")
    return int(x) & ((1 << 64) - 1)

def promote(*xs) -> np.dtype:
  """numpy's result dtype for operands that are lane values (their dtypes) or weak Python scalars (the values themselves)."""
  if not all(isinstance(x, (Val, bool, int, float)) for x in xs): raise NotLowerable("arithmetic on an array of columns or a memory")
  dt = np.result_type(*(x.dt if isinstance(x, Val) else x for x in xs))
  if dt not in LLVM_TYPE: raise NotLowerable(f"values of dtype {dt}")
  return dt

INT_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.BitAnd: "and", ast.BitOr: "or", ast.BitXor: "xor"}
FLOAT_BINOPS = {ast.Add: "fadd", ast.Sub: "fsub", ast.Mult: "fmul", ast.Div: "fdiv"}
BOOL_BINOPS = {ast.BitAnd: "and", ast.BitOr: "or", ast.BitXor: "xor"}
PY_BINOPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b, ast.BitAnd: lambda a, b: a & b,
             ast.BitOr: lambda a, b: a | b, ast.BitXor: lambda a, b: a ^ b, ast.LShift: lambda a, b: a << b, ast.RShift: lambda a, b: a >> b}
INT_CMP = {ast.Eq: "eq", ast.NotEq: "ne", ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge"}
FLOAT_CMP = {ast.Eq: "oeq", ast.NotEq: "une", ast.Lt: "olt", ast.LtE: "ole", ast.Gt: "ogt", ast.GtE: "oge"}
PY_CMP = {ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b, ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b,
          ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b}
# conversion helpers of the generated namespace: (from integer signed?, float dtype) and (float dtype, to integer bits, signed?)
INT_TO_FLOAT = {"u32_to_f32": (False, F32), "i32_to_f32": (True, F32), "u32_to_f64": (False, F64), "i32_to_f64": (True, F64),
                "u16_to_f16": (False, F16), "i16_to_f16": (True, F16)}
FLOAT_TO_INT = {"f32_to_i32": (F32, 32, True), "f32_to_u32": (F32, 32, False), "f64_to_i32": (F64, 32, True), "f64_to_u32": (F64, 32, False),
                "f16_to_i16": (F16, 16, True), "f16_to_u16": (F16, 16, False)}
FLOAT_CASTS = {"f32_to_f64": (F32, F64), "f64_to_f32": (F64, F32), "f16_to_f32": (F16, F32), "f32_to_f16": (F32, F16), "f64_to_f16": (F64, F16)}
ROUNDINGS = {"trunc_": "trunc", "floor_": "floor", "ceil_": "ceil", "rint_": "rint"}
INT_EXTREMES = {f"i{w}_{s}": (w, s) for w in ("max", "min") for s in (True, False)}   # helpers' imax_True ...: (which, signed)
FLOAT_EXTREMES = {"fmax": (True, 2), "fmin": (False, 2), "fmax3": (True, 3), "fmin3": (False, 3)}   # helpers.fmax ...: (max?, operands)
VIA_F64 = {"log2_": "log2", "rsq_": "rsq"}   # helpers computed in double by numerics._via_f64 (and pow_f(2, x): exp2)
LDEXP_F32_REACH = 300   # |e| past which x * 2**e of every finite nonzero f32 x is inf or 0 (f32 spans 2**-149 .. 2**128)

def _vsuffix(b:Builder, dt:np.dtype) -> str:
  """The overload suffix of a float intrinsic on b's vectors of dt: v32f32 ..."""
  if dt not in FLOAT_BITS: raise NotLowerable(f"float helper on {dt}")
  return f"v{b.width}f{FLOAT_BITS[dt]}"

class _Return(Exception):
  """`return op_mode(st)` taken at lowering time: the mode variant's outputs."""
  def __init__(self, outputs:dict): self.outputs = outputs

@functools.lru_cache(maxsize=256)   # bounded: parsed trees are many objects for the garbage collector to walk
def _functions(source:str) -> dict[str, ast.FunctionDef] | None:
  """The functions of a generated module by name (parsed once per source); None for a source that is not Python."""
  try: tree = ast.parse(source)
  except SyntaxError: return None
  return {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}

def _whole(index) -> bool:
  """Whether a subscript's index is `:` (every lane)."""
  return isinstance(index, ast.Slice) and index.lower is None and index.upper is None and index.step is None

PY_EXACT_BINOPS = (ast.BitAnd, ast.BitOr, ast.BitXor, ast.RShift)   # Python int ops whose exact result 64 bits always hold

class Lowering:
  """Lowers the functions of one generated module (source text) for given inputs; see `lower`."""
  def __init__(self, source:str, b:Builder, python_ints:bool=False):
    if (fns := _functions(source)) is None: raise NotLowerable("no generated source")
    self.fns, self.b, self.python_ints = fns, b, python_ints

  def run(self, name:str, inputs:dict) -> dict:
    if name not in self.fns: raise NotLowerable(f"no function {name}")
    self.inputs, env, outputs = inputs, {}, {}
    try: self._block(self.fns[name].body, env, outputs)
    except _Return as r: return r.outputs
    return outputs

  # ---- statements ----
  def _block(self, body:list, env:dict, outputs:dict):
    for s in body: self._stmt(s, env, outputs)

  def _stmt(self, s, env:dict, outputs:dict):
    if isinstance(s, ast.Assign) and len(s.targets) == 1:
      t, v = s.targets[0], self._expr(s.value, env)
      if isinstance(t, ast.Name): env[t.id] = v
      elif isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "st": outputs[t.attr] = v
      elif isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name): env[t.value.id] = self._set_columns(env.get(t.value.id), t.slice, v)
      else: raise NotLowerable(f"assignment to {ast.unparse(t)}")
    elif isinstance(s, ast.With): self._block(s.body, env, outputs)   # np.errstate: numpy's warnings, nothing computed
    elif isinstance(s, ast.If):
      if self._is_guard(s.test) and not s.orelse: self._block(s.body, env, outputs)   # `if m.any():` a masked arm, exact without it
      else:
        c = self._expr(s.test, env)
        if isinstance(c, Val): self._both_arms(c, s, env, outputs)
        else: self._block(s.body if c else s.orelse, env, outputs)
    elif isinstance(s, ast.Return) and isinstance(s.value, ast.Call) and isinstance(s.value.func, ast.Name) and s.value.func.id in self.fns:
      raise _Return(self.run(s.value.func.id, self.inputs))
    elif isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant): pass
    elif isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) and isinstance(s.value.func, ast.Name) and s.value.func.id == "mwrite":
      self._expr(s.value, env)   # a store: MEM's `write` emits it
    else: raise NotLowerable(f"statement {type(s).__name__}")

  def _both_arms(self, c:Val, s:ast.If, env:dict, outputs:dict):
    """An `if` on a wave's value (Python ints only): both arms run, each name (and output) either assigns takes the taken arm's
    value by a select; a name only one arm assigns is left undefined (a later read does not lower)."""
    if not self.python_ints: raise NotLowerable("per-lane Python branch")
    if any(isinstance(x, (ast.Return, ast.Expr)) for arm in (s.body, s.orelse) for stmt in arm for x in ast.walk(stmt)):
      raise NotLowerable("a return or a call statement under a per-wave branch")   # (a store must not run on both paths)
    arms = []
    for body in (s.body, s.orelse):
      e, o = dict(env), dict(outputs)
      self._block(body, e, o)
      arms.append((e, o))
    (et, ot), (ef, of) = arms
    for merged, t, f in ((env, et, ef), (outputs, ot, of)):
      for name in [*t, *(n for n in f if n not in t)]:   # (in order: the IR text is the native code's cache key)
        if name in t and name in f: merged[name] = t[name] if t[name] is f[name] else self._select(c, t[name], f[name])
        else: merged.pop(name, None)

  def _select(self, c:Val, x, y):
    """x where c, else y (runtime.where), for lane values and scalars."""
    if not isinstance(x, Val) and not isinstance(y, Val) and type(x) is type(y) and x == y: return x
    return self._helper("where", [c, x, y], {})

  def _set_columns(self, array, index, v) -> Words:
    """`X[:, a:b] = v` on an (n, k) uint32 array: columns a..b-1 replaced by v's (a Words of b - a columns)."""
    if not (isinstance(array, Words) and isinstance(index, ast.Tuple) and len(index.elts) == 2 and _whole(index.elts[0])
            and isinstance(sl := index.elts[1], ast.Slice) and sl.step is None):
      raise NotLowerable("subscript assignment")
    a, b = (self._expr(x, {}) for x in (sl.lower, sl.upper))
    if not (isinstance(v, Words) and isinstance(a, int) and isinstance(b, int) and 0 <= a <= b <= len(array.columns) and len(v.columns) == b - a):
      raise NotLowerable("column assignment of these shapes")
    return Words(array.columns[:a] + v.columns + array.columns[b:])

  def _column(self, e, env:dict) -> Val | None:
    """Column j of an (n, k) uint32 array (a Words) for `X[:, j]` with a constant j, else None (uint32 arithmetic on it would
    not lower exactly: only its widening to uint64 reads it)."""
    if not (isinstance(e, ast.Subscript) and isinstance(e.value, ast.Name) and isinstance(e.slice, ast.Tuple) and len(e.slice.elts) == 2):
      return None
    lanes, j = e.slice.elts
    if not _whole(lanes): return None
    array, j = self._expr(e.value, env), self._expr(j, env)
    if not isinstance(array, Words) or not isinstance(j, int) or not 0 <= j < len(array.columns): return None
    return array.columns[j]

  @staticmethod
  def _is_guard(e) -> bool:
    return isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr == "any" and not e.args and \
      isinstance(e.func.value, ast.Name)

  # ---- expressions ----
  def _expr(self, e, env:dict):
    if isinstance(e, ast.Constant):
      if isinstance(e.value, (bool, int, float)): return e.value
      raise NotLowerable(f"constant {e.value!r}")
    if isinstance(e, ast.Name):
      if e.id in env: return env[e.id]
      raise NotLowerable(f"name {e.id}")
    if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name) and e.value.id == "st": return self._input(e.attr)
    if isinstance(e, ast.BinOp): return self._binop(type(e.op), self._expr(e.left, env), self._expr(e.right, env))
    if isinstance(e, ast.UnaryOp): return self._unary(type(e.op), self._expr(e.operand, env))
    if isinstance(e, ast.Compare) and len(e.ops) == 1:
      return self._compare(type(e.ops[0]), self._expr(e.left, env), self._expr(e.comparators[0], env))
    if isinstance(e, ast.BoolOp):
      vals = [self._expr(v, env) for v in e.values]
      if any(isinstance(v, Val) for v in vals): raise NotLowerable("per-lane and/or")
      return all(vals) if isinstance(e.op, ast.And) else any(vals)
    if isinstance(e, ast.IfExp):
      c = self._expr(e.test, env)
      if not isinstance(c, Val): return self._expr(e.body if c else e.orelse, env)
      if not self.python_ints: raise NotLowerable("per-lane conditional expression")
      return self._select(c, self._expr(e.body, env), self._expr(e.orelse, env))   # (expressions: both sides are pure)
    if isinstance(e, ast.Subscript) and isinstance(e.slice, ast.Tuple) and len(e.slice.elts) == 2:   # VGPR[lane, reg]
      base = self._expr(e.value, env)
      if not hasattr(base, "lane_value"): raise NotLowerable(f"subscript of {type(base).__name__}")
      return base.lane_value(*(self._expr(x, env) for x in e.slice.elts))
    if isinstance(e, ast.Call): return self._call(e, env)
    if isinstance(e, ast.Tuple): return tuple(self._expr(x, env) for x in e.elts)   # an array shape
    raise NotLowerable(f"expression {type(e).__name__}")

  def _input(self, name:str):
    if name not in self.inputs: raise NotLowerable(f"input {name}")
    return self.inputs[name]

  def _binop(self, op, a, b):
    if not isinstance(a, Val) and not isinstance(b, Val):
      if op not in PY_BINOPS: raise NotLowerable(f"Python {op.__name__}")
      return PY_BINOPS[op](a, b)
    if self.python_ints and op not in PY_EXACT_BINOPS: raise NotLowerable(f"{op.__name__} of Python ints (unbounded)")
    if op in (ast.LShift, ast.RShift): return self._shift(op is ast.LShift, a, b)
    dt = self._promote(a, b)
    if op is ast.Div and dt.kind != "f": dt = F64   # true division of integers is float64
    x, y = self.b.cast(a, dt), self.b.cast(b, dt)
    table = FLOAT_BINOPS if dt.kind == "f" else BOOL_BINOPS if dt == BOOL else INT_BINOPS
    if op not in table: raise NotLowerable(f"{op.__name__} on {dt}")
    return self.b.emit(f"{table[op]} {self.b.t(LLVM_TYPE[dt])} {x.ref}, {y.ref}", dt, arith=dt.kind == "f")

  def _promote(self, *xs) -> np.dtype:
    """`promote`; with Python ints, a type that holds every operand exactly (numpy's float64 for int64 with uint64 does not)."""
    dt = promote(*xs)
    if self.python_ints and dt.kind not in "iub": raise NotLowerable(f"Python values as {dt}")
    return dt

  def _shift(self, left:bool, a, b, signed_fill:bool|None=None) -> Val:
    """numpy's << and >> on 64-bit integers: a shift of 64 or more (or negative) gives 0, or the sign for a signed >>."""
    dt = self._promote(a, b)
    if dt.kind not in "iu": raise NotLowerable(f"shift of {dt}")
    bd = self.b
    x, s = bd.cast(a, dt), bd.cast(b, dt)
    signed = dt == I64 if signed_fill is None else signed_fill
    opname, v = "shl" if left else "ashr" if signed else "lshr", bd.t("i64")
    if not isinstance(b, Val) and 0 <= int(b) < 64: return bd.emit(f"{opname} {v} {x.ref}, {s.ref}", dt)
    inside = bd.emit(f"icmp ult {v} {s.ref}, {bd.c('i64', '64')}", BOOL)
    safe = bd.emit(f"and {v} {s.ref}, {bd.c('i64', '63')}", dt)
    r = bd.emit(f"{opname} {v} {x.ref}, {safe.ref}", dt)
    fill = bd.emit(f"ashr {v} {x.ref}, {bd.c('i64', '63')}", dt).ref if signed and not left else "zeroinitializer"
    return bd.emit(f"select {bd.t('i1')} {inside.ref}, {v} {r.ref}, {v} {fill}", dt)

  def _unary(self, op, a):
    if not isinstance(a, Val):
      return {ast.USub: lambda v: -v, ast.UAdd: lambda v: +v, ast.Invert: lambda v: ~v, ast.Not: lambda v: not v}[op](a)
    if op is ast.UAdd: return a
    if self.python_ints: raise NotLowerable(f"{op.__name__} of a Python int (unbounded)")
    t = self.b.t(LLVM_TYPE[a.dt])
    if op is ast.USub: return self.b.emit(f"fneg {t} {a.ref}", a.dt) if a.dt.kind == "f" else self.b.emit(f"sub {t} zeroinitializer, {a.ref}", a.dt)
    if op is ast.Invert and a.dt.kind in "iub":
      return self.b.emit(f"xor {t} {a.ref}, {self.b.c(LLVM_TYPE[a.dt], 'true' if a.dt == BOOL else '-1')}", a.dt)
    raise NotLowerable(f"{op.__name__} on {a.dt}")

  def _compare(self, op, a, b):
    if not isinstance(a, Val) and not isinstance(b, Val): return PY_CMP[op](a, b)
    dt = self._promote(a, b)
    x, y = self.b.cast(a, dt), self.b.cast(b, dt)
    if dt.kind == "f": return self.b.emit(f"fcmp {FLOAT_CMP[op]} {self.b.t(LLVM_TYPE[dt])} {x.ref}, {y.ref}", BOOL)
    pred = INT_CMP[op]
    if pred not in ("eq", "ne"): pred = ("s" if dt == I64 else "u") + pred
    return self.b.emit(f"icmp {pred} {self.b.t(LLVM_TYPE[dt])} {x.ref}, {y.ref}", BOOL)

  def _numpy_type(self, e) -> np.dtype | None:
    """np.uint64 / np.float32 ... written as an attribute of `np` (or a dtype= keyword's value)."""
    if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name) and e.value.id == "np" and e.attr in NP_TYPES: return NP_TYPES[e.attr]
    return None

  def _dtype(self, e) -> np.dtype:
    """A dtype argument the lowering knows, else NotLowerable (np.uint32 & co.: no vector type here)."""
    if (dt := self._numpy_type(e)) is None: raise NotLowerable(f"dtype {ast.unparse(e)}")
    return dt

  def _call(self, e:ast.Call, env:dict):
    f, b = e.func, self.b
    kw = {k.arg: k.value for k in e.keywords}
    if isinstance(f, ast.Attribute) and f.attr == "astype" and len(e.args) == 1 and (dt := self._numpy_type(e.args[0])) is not None:
      if dt == U64 and (col := self._column(f.value, env)) is not None: return col   # X[:, j].astype(np.uint64): dword j, widened
      return b.cast(self._expr(f.value, env), dt)
    if (dt := self._numpy_type(f)) is not None and len(e.args) == 1 and not kw:   # np.uint64(1): a typed scalar
      v = self._expr(e.args[0], env)
      return b.cast(v, dt)
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "np":
      if f.attr == "asarray" and len(e.args) == 1:
        v = self._expr(e.args[0], env)
        return b.cast(v, self._dtype(kw["dtype"])) if "dtype" in kw else v
      if f.attr == "zeros" and len(e.args) == 2 and not kw and isinstance(shape := self._expr(e.args[0], env), tuple):
        if not (len(shape) == 2 and shape[0] is N_SENTINEL and isinstance(shape[1], int) and ast.unparse(e.args[1]) == "np.uint32"):
          raise NotLowerable(f"np.zeros of shape {shape}")
        return Words((b.const(0, U64),) * shape[1])   # an (n, k) uint32 array of dwords
      if f.attr in ("full", "zeros") and len(e.args) >= 1 and self._expr(e.args[0], env) is N_SENTINEL:
        full = f.attr == "full"
        v = self._expr(e.args[1], env) if full else 0
        dt_node = kw.get("dtype", e.args[2 if full else 1] if len(e.args) > (2 if full else 1) else None)
        if dt_node is not None: dt = self._dtype(dt_node)
        else: dt = (v.dt if isinstance(v, Val) else np.result_type(np.asarray(v).dtype)) if full else F64   # numpy's defaults
        return b.cast(v, dt)
      raise NotLowerable(f"np.{f.attr}")
    if not isinstance(f, ast.Name): raise NotLowerable(f"call of {ast.unparse(f)}")
    if f.id == "getattr" and len(e.args) == 3 and isinstance(e.args[0], ast.Name) and e.args[0].id == "st" and isinstance(e.args[1], ast.Constant):
      return self.inputs.get(e.args[1].value, self._expr(e.args[2], env))   # a mode input with its default
    args = [self._expr(a, env) for a in e.args]
    kws = {k: self._expr(v, env) for k, v in kw.items()}
    return self._helper(f.id, args, kws)

  def _helper(self, name:str, args:list, kws:dict):
    """A call of a runtime/helpers/numerics helper: its rule in HELPER_RULES (below the class), which lowers it or raises
    NotLowerable. Only the rules in SCALAR_RULES take calls whose arguments are all Python values (fields, constants); the numpy
    path computes the others' Python-int forms, which have no lane value to lower."""
    if (rule := HELPER_RULES.get(name)) is None: raise NotLowerable(f"helper {name}")
    if name not in SCALAR_RULES and not any(isinstance(a, Val) for a in args): raise NotLowerable(f"{name} of Python scalars")
    return getattr(self, rule)(name, args, kws)

  # --- one rule per helper family (HELPER_RULES maps each helper name to one) ---
  def _h_mread(self, name:str, args:list, kws:dict):   # runtime.mread(MEM, addr, nbytes, n) / mread_words(MEM, addr, k, n)
    if len(args) != 4 or kws or not isinstance(args[1], Val) or not isinstance(args[2], int): raise NotLowerable(f"{name} of these operands")
    mem, addr, size = args[0], self.b.cast(args[1], U64), args[2]
    if not hasattr(mem, "read"): raise NotLowerable(f"{name} of {type(mem).__name__}")
    return mem.read(addr, size) if name == "mread" else mem.read_words(addr, size)

  def _h_mwrite(self, name:str, args:list, kws:dict):   # runtime.mwrite(MEM, addr, value, nbytes, n)
    if len(args) != 5 or kws or not isinstance(args[3], int): raise NotLowerable(f"{name} of these operands")
    mem, addr, value, size = args[0], self.b.cast(args[1], U64), self.b.cast(args[2], U64), args[3]
    if not hasattr(mem, "write"): raise NotLowerable(f"{name} of {type(mem).__name__}")
    return mem.write(addr, value, size)

  def _h_signext(self, name:str, args:list, kws:dict):   # helpers.signext: marks a value signed, changes nothing
    if len(args) != 1: raise NotLowerable(f"{name} of these operands")
    return args[0]

  def _h_bits(self, name:str, args:list, kws:dict):   # runtime.bits2f(bits, w) / f2bits(x, w)
    b = self.b
    if len(args) != 2 or isinstance(args[1], Val): raise NotLowerable(f"{name} of these operands")
    x, w = args
    if w not in INT_OF_BITS: raise NotLowerable(f"{name} of width {w}")
    fdt, it = {16: F16, 32: F32, 64: F64}[w], b.t(INT_OF_BITS[w])
    if name == "bits2f":
      x = b.cast(x, U64)
      lo = b.emit(f"trunc {b.t('i64')} {x.ref} to {it}", U64).ref if w < 64 else x.ref
      return b.emit(f"bitcast {it} {lo} to {b.t(LLVM_TYPE[fdt])}", fdt)
    if not isinstance(x, Val) or x.dt.kind != "f": raise NotLowerable("f2bits of a non-float")
    if w == 16 and x.dt == F32: raise NotLowerable("f2bits of a float32 at 16 bits")   # (runtime.f2bits: bf16 bits need bf16_bits)
    v = b.cast(x, fdt)
    bits = b.emit(f"bitcast {b.t(LLVM_TYPE[fdt])} {v.ref} to {it}", U64)
    return b.emit(f"zext {it} {bits.ref} to {b.t('i64')}", U64) if w < 64 else bits

  def _h_where(self, name:str, args:list, kws:dict):
    b = self.b
    if len(args) != 3: raise NotLowerable(f"{name} of these operands")
    c, x, y = args
    if not isinstance(c, Val): return x if c else y
    dt = self._promote(x, y) if isinstance(x, Val) or isinstance(y, Val) else np.result_type(x, y)
    c = b.cast(c, BOOL)
    xv, yv = b.cast(x, dt), b.cast(y, dt)
    return b.emit(f"select {b.t('i1')} {c.ref}, {b.t(LLVM_TYPE[dt])} {xv.ref}, {b.t(LLVM_TYPE[dt])} {yv.ref}", dt)

  def _h_python_cast(self, name:str, args:list, kws:dict):   # int() / float() / bool() of a Python value; a whole-wave op's int()
    if len(args) == 1 and not isinstance(args[0], Val): return {"int": int, "float": float, "bool": bool}[name](args[0])
    if name == "int" and len(args) == 1 and self.python_ints and args[0].dt.kind in "iu": return args[0]   # (a Python int's value)
    raise NotLowerable(f"{name} of these operands")

  def _h_int64(self, name:str, args:list, kws:dict):   # runtime.u64 / i64: 64-bit views of an integer
    if len(args) != 1: raise NotLowerable(f"{name} of these operands")
    x = args[0]
    if isinstance(x, int): return x & ((1 << 64) - 1) if name == "u64" else x
    if not isinstance(x, Val): raise NotLowerable(f"{name} of Python scalars")
    if name == "i64": return x if self.python_ints and x.dt.kind in "iu" or x.dt != U64 else Val(x.ref, I64)
    if x.dt.kind == "f": raise NotLowerable("u64 of a float")
    return self.b.cast(x, U64)

  def _h_sext(self, name:str, args:list, kws:dict):   # runtime.sext(x, w)
    b = self.b
    if not any(isinstance(a, Val) for a in args):
      if kws or not all(isinstance(a, int) for a in args): raise NotLowerable(f"{name} of Python scalars")
      return runtime.sext(*args)   # (a field: sext(SIMM16, 16), computed at lowering)
    if len(args) != 2 or isinstance(args[1], Val): raise NotLowerable(f"{name} of these operands")
    x, w = args   # (numpy's runtime.sext keeps uint64 bits; a Python int's is the signed value)
    if x.dt not in (U64, I64) or not 0 < w <= 64: raise NotLowerable(f"sext of {x.dt}")
    dt = I64 if self.python_ints else x.dt
    if w == 64: return Val(x.ref, dt)
    hi = b.emit(f"shl {b.t('i64')} {x.ref}, {b.c('i64', str(64 - w))}", x.dt)
    return b.emit(f"ashr {b.t('i64')} {hi.ref}, {b.c('i64', str(64 - w))}", dt)

  def _h_first_one(self, name:str, args:list, kws:dict):   # a whole-wave op's ff1_32 / ff1_64
    if len(args) != 1 or not self.python_ints or args[0].dt.kind not in "iu": raise NotLowerable(f"{name} of these operands")
    return self._first_one(args[0], int(name[-2:]))

  def _h_shift(self, name:str, args:list, kws:dict):   # runtime.shl / runtime.shr(x, s, signed=False)
    if len(args) not in (2, 3) or kws: raise NotLowerable(f"{name} of these operands")
    x, s, signed = args[0], args[1], args[2] if len(args) == 3 else False
    if isinstance(signed, Val) or isinstance(s, Val) and s.dt.kind not in "iu": raise NotLowerable(f"{name} of these operands")
    b = self.b
    return self._shift(name == "shl", b.cast(x, U64), b.cast(s, U64) if isinstance(s, Val) else s, signed_fill=bool(signed) and name == "shr")

  def _h_fma(self, name:str, args:list, kws:dict):
    if len(args) != 3 or kws: raise NotLowerable(f"{name} of these operands")
    b, dt = self.b, promote(*args)
    if F16 in {a.dt for a in args if isinstance(a, Val)} and dt != F16: raise NotLowerable("fma of float16 with wider floats")
    vs = [b.cast(a, dt) for a in args]
    if dt == F16: return self._fma_half(vs)
    return b.call(f"llvm.fma.{_vsuffix(b, dt)}", LLVM_TYPE[dt], [(LLVM_TYPE[dt], v.ref) for v in vs], dt, arith=True)

  def _h_unary_intrinsic(self, name:str, args:list, kws:dict):   # popcount, fabs, the roundings and sqrt: one LLVM intrinsic each
    b, x = self.b, args[0]
    if len(args) != 1 or kws: raise NotLowerable(f"{name} of these operands")
    if name == "popcount":
      if x.dt.kind not in "iu": raise NotLowerable(f"{name} of {x.dt}")
      return b.call(f"llvm.ctpop.v{b.width}i64", "i64", [("i64", x.ref)], U64)
    if x.dt.kind != "f": raise NotLowerable(f"{name} of an integer")
    intrinsic = "fabs" if name == "fabs" else "sqrt" if name == "sqrt_" else ROUNDINGS[name]
    return b.call(f"llvm.{intrinsic}.{_vsuffix(b, x.dt)}", LLVM_TYPE[x.dt], [(LLVM_TYPE[x.dt], x.ref)], x.dt, arith=name != "fabs")

  def _h_float_bits(self, name:str, args:list, kws:dict):
    if len(args) != 1 or kws: raise NotLowerable(f"{name} of these operands")
    return self._float_bits(name, args[0])

  def _h_ldexp(self, name:str, args:list, kws:dict):
    if len(args) != 2: raise NotLowerable(f"{name} of these operands")
    return self._ldexp(args[0], args[1], kws)

  def _h_int_to_float(self, name:str, args:list, kws:dict):
    if len(args) != 1 or kws: raise NotLowerable(f"{name} of these operands")
    signed, fdt = INT_TO_FLOAT[name]
    x, b = args[0], self.b
    if x.dt.kind not in "iu": raise NotLowerable(f"{name} of {x.dt}")
    v = Val(x.ref, I64 if signed else U64)
    # (to half through double: exact below 2**53, and any value past 65520 is infinite as a half either way)
    return b.cast(b.cast(v, F64), F16) if fdt == F16 else b.cast(v, fdt)

  def _h_float_to_int(self, name:str, args:list, kws:dict):
    if len(args) != 1: raise NotLowerable(f"{name} of these operands")
    fdt, bits, signed = FLOAT_TO_INT[name]
    x, b = args[0], self.b
    if x.dt != fdt: raise NotLowerable(f"{name} of {x.dt}")   # (numerics.float_to_int converts the value in its own type)
    v = b.cast(x, F32) if fdt == F16 else x   # (exact: the saturating conversion from float gives the half's result)
    it = f"i{bits}"
    r = b.call(f"llvm.fpto{'s' if signed else 'u'}i.sat.v{b.width}{it}.{_vsuffix(b, v.dt)}", it, [(LLVM_TYPE[v.dt], v.ref)], U64)
    return b.emit(f"{'sext' if signed else 'zext'} {b.t(it)} {r.ref} to {b.t('i64')}", U64)

  def _h_float_cast(self, name:str, args:list, kws:dict):   # (nearest-even; a NaN is reported as float arithmetic's are)
    if len(args) != 1 or kws: raise NotLowerable(f"{name} of these operands")
    src, dst = FLOAT_CASTS[name]
    if args[0].dt != src: raise NotLowerable(f"{name} of {args[0].dt}")
    return self.b.cast(args[0], dst)

  def _h_int_extreme(self, name:str, args:list, kws:dict):
    if kws: raise NotLowerable(f"{name} of these operands")
    return self._int_extreme(*INT_EXTREMES[name], args)

  def _h_float_extreme(self, name:str, args:list, kws:dict):   # helpers.fmax(a, b, ieee) ... fmin3(a, b, c, ieee)
    want_max, count = FLOAT_EXTREMES[name]
    if kws or len(args) != count + 1 or isinstance(args[-1], Val): raise NotLowerable(f"{name} of these operands")
    r = args[0]
    for y in args[1:count]: r = self._float_extreme(want_max, r, y, bool(args[-1]))
    return r

  def _h_reverse_bits(self, name:str, args:list, kws:dict):
    b, x = self.b, args[0]
    w = 32 if name == "reverse_bits32" else args[1] if len(args) == 2 else None
    if kws or len(args) != (1 if name == "reverse_bits32" else 2) or x.dt != U64 or not isinstance(w, int) or not 0 < w <= 64:
      raise NotLowerable(f"{name} of these operands")
    r = b.call(f"llvm.bitreverse.v{b.width}i64", "i64", [("i64", x.ref)], U64)   # all 64 reversed, then the low w's bits brought down
    return r if w == 64 else b.emit(f"lshr {b.t('i64')} {r.ref}, {b.c('i64', str(64 - w))}", U64)

  def _h_pow(self, name:str, args:list, kws:dict):   # helpers.pow_f(2, x): exp2
    if len(args) != 2 or kws or not self._is_two(args[0]): raise NotLowerable(f"{name} of these operands")
    return self._via_f64("exp2", args[1])

  def _h_via_f64(self, name:str, args:list, kws:dict):
    if len(args) != 1 or kws: raise NotLowerable(f"{name} of these operands")
    return self._via_f64(VIA_F64[name], args[0])

  def _fma_half(self, vs:list[Val]) -> Val:
    """helpers.fma on float16 (numerics.fma_f16: one rounding of a*b+c): the product of two halves (22 bits) is exact in double;
    its sum with the addend (11 bits) rounds only where one term is below 2**-31 of the other: if the larger is the addend, the
    half result is the addend both ways (the other term is far below its half unit); if it is the product, the product is past
    2**29 (an addend is at least 2**-24) and the half result infinite both ways. The double then rounds to half once."""
    b, vd = self.b, self.b.t("double")
    x, y, z = (b.cast(v, F64) for v in vs)
    p = b.emit(f"fmul {vd} {x.ref}, {y.ref}", F64, arith=True)
    return b.cast(b.emit(f"fadd {vd} {p.ref}, {z.ref}", F64, arith=True), F16)

  def _first_one(self, x:Val, w:int) -> Val:
    """helpers.ff1(w): the index of the lowest set bit of x's low w bits, -1 when there is none."""
    b, v64 = self.b, self.b.t("i64")
    low = b.emit(f"and {v64} {x.ref}, {b.const((1 << w) - 1, U64).ref}", U64)
    name = f"llvm.cttz.v{b.width}i64"   # (its flag: a zero input gives 64, not poison)
    b.intrinsics[name] = f"declare {v64} @{name}({v64}, i1 immarg)"
    tz = b.emit(f"call {v64} @{name}({v64} {low.ref}, i1 false)", I64)
    none = b.emit(f"icmp eq {v64} {low.ref}, zeroinitializer", BOOL)
    return b.emit(f"select {b.t('i1')} {none.ref}, {v64} {b.c('i64', '-1')}, {v64} {tz.ref}", I64)

  def _int_extreme(self, which:str, signed:bool, args:list) -> Val:
    """helpers' imax_/imin_: the largest or smallest of integer lane values, compared as int64 when signed (runtime.i64's view of the
    bits) or as uint64."""
    b = self.b
    if not all(isinstance(a, Val) and a.dt in (U64, I64) for a in args) or (not signed and len({a.dt for a in args}) > 1):
      raise NotLowerable(f"integer {which} of these operands")   # (unsigned numpy mixes int64 and uint64 into float64)
    pred = {("max", True): "sgt", ("max", False): "ugt", ("min", True): "slt", ("min", False): "ult"}
    def pick(kind, x, y):
      c = b.emit(f"icmp {pred[(kind, signed)]} {b.t('i64')} {x.ref}, {y.ref}", BOOL)
      return b.emit(f"select {b.t('i1')} {c.ref}, {b.t('i64')} {x.ref}, {b.t('i64')} {y.ref}", U64 if signed else args[0].dt)
    r = args[0]
    for y in args[1:]: r = pick(which, r, y)
    return r if len(args) > 1 else (Val(r.ref, U64) if signed else r)

  def _float_extreme(self, want_max:bool, a, b, ieee:bool) -> Val:
    """numerics.max_f / min_f of two floats of one dtype: the larger (smaller) by value, of equal ones the bits and-ed (or-ed: +0
    beats -0 for max), a NaN operand yields the other, and with `ieee` a signalling NaN operand (a first) yields it quieted. Every
    result is an operand's bits (or a quieted NaN's): nothing for the NaN report."""
    bd = self.b
    if not (isinstance(a, Val) and isinstance(b, Val) and a.dt == b.dt and a.dt in FLOAT_BITS):
      raise NotLowerable("float min/max of these operands")
    t, it = bd.t(LLVM_TYPE[a.dt]), bd.t(INT_OF_BITS[FLOAT_BITS[a.dt]])
    def pick(c:Val, x:Val, y:Val) -> Val: return bd.emit(f"select {bd.t('i1')} {c.ref}, {t} {x.ref}, {t} {y.ref}", a.dt)
    r = pick(bd.emit(f"fcmp {'ogt' if want_max else 'olt'} {t} {a.ref}, {b.ref}", BOOL), a, b)
    ab, bb = (bd.emit(f"bitcast {t} {v.ref} to {it}", U64) for v in (a, b))
    both = bd.emit(f"{'and' if want_max else 'or'} {it} {ab.ref}, {bb.ref}", U64)
    r = pick(bd.emit(f"fcmp oeq {t} {a.ref}, {b.ref}", BOOL), bd.emit(f"bitcast {it} {both.ref} to {t}", a.dt), r)
    r = pick(self._float_bits("isnan", a), b, pick(self._float_bits("isnan", b), a, r))
    if ieee:
      r = pick(self._float_bits("is_snan", b), self._float_bits("quiet", b), r)
      r = pick(self._float_bits("is_snan", a), self._float_bits("quiet", a), r)
    return r

  def _via_f64(self, fn:str, x) -> Val:
    """numerics' _via_f64: `fn` of the float value widened to double (exactly), rounded back to its own type (nearest-even, as numpy's
    cast; a NaN result is reported as float arithmetic's are): exp2 and log2 are the C library's (`libm_call`), the same functions
    numerics calls through emu.native, sqrt and the division IEEE's."""
    b = self.b
    if not isinstance(x, Val) or x.dt not in FLOAT_BITS: raise NotLowerable(f"{fn} of {x.dt if isinstance(x, Val) else type(x).__name__}")
    v = b.cast(x, F64)
    if fn == "rsq":
      root = b.call(f"llvm.sqrt.v{b.width}f64", "double", [("double", v.ref)], F64)
      r = b.emit(f"fdiv {b.t('double')} {b.c('double', literal(1.0, F64))}, {root.ref}", F64, arith=True)
    else:
      r = b.libm_call(fn, v)
      b.float_results.append(r)
    return b.cast(r, x.dt)

  def _ldexp(self, x, e, kws:dict) -> Val:
    """helpers.ldexp(x, e): x * 2**e rounded once (numerics.ldexp), for an f32 x rounded to nearest even. With e clamped to
    +-LDEXP_F32_REACH (past it every finite nonzero f32 overflows, or rounds to zero, either way) the product in double is exact
    (2**-449 .. 2**428), and its cast back to f32 is the one rounding; a NaN is reported as float arithmetic's are."""
    b = self.b
    if not isinstance(x, Val) or x.dt != F32 or not isinstance(e, Val) or e.dt.kind not in "iu" or set(kws) - {"rm"} \
       or kws.get("rm", numerics.RM_NE) != numerics.RM_NE:
      raise NotLowerable("ldexp of these operands")
    v64, lim = b.t("i64"), LDEXP_F32_REACH
    e = b.cast(e, U64)   # (the bits of a signed exponent, as runtime.i64 reads them)
    low = b.emit(f"icmp slt {v64} {e.ref}, {b.c('i64', str(-lim))}", BOOL)
    e = b.emit(f"select {b.t('i1')} {low.ref}, {v64} {b.c('i64', str(-lim))}, {v64} {e.ref}", U64)
    high = b.emit(f"icmp sgt {v64} {e.ref}, {b.c('i64', str(lim))}", BOOL)
    e = b.emit(f"select {b.t('i1')} {high.ref}, {v64} {b.c('i64', str(lim))}, {v64} {e.ref}", U64)
    biased = b.emit(f"add {v64} {e.ref}, {b.c('i64', '1023')}", U64)
    power = b.emit(f"shl {v64} {biased.ref}, {b.c('i64', '52')}", U64)   # 2**e's bits
    scale = b.emit(f"bitcast {v64} {power.ref} to {b.t('double')}", F64)
    product = b.emit(f"fmul {b.t('double')} {b.cast(x, F64).ref}, {scale.ref}", F64, arith=True)
    return b.cast(product, F32)

  def _is_two(self, a) -> bool:
    """Whether `a` is 2.0: a Python float or a float constant in every lane (np.float32(2.0) lowers to one)."""
    if isinstance(a, Val): return a.dt.kind == "f" and a.ref == self.b.const(2.0, a.dt).ref
    return isinstance(a, (int, float)) and not isinstance(a, bool) and a == 2.0

  def _float_bits(self, name:str, x:Val) -> Val:
    """NaN tests, quieting, the sign bit and the exponent and mantissa fields, on the float's bits (numerics.is_nan /
    is_signal_nan / quiet_nan / sign_bit / exponent_field / mantissa_field)."""
    b = self.b
    if x.dt not in FLOAT_BITS: raise NotLowerable(f"{name} of {x.dt}")
    w, t = FLOAT_BITS[x.dt], b.t(LLVM_TYPE[x.dt])
    m = MANTISSA_BITS[w]
    it, qbit = b.t(INT_OF_BITS[w]), b.c(INT_OF_BITS[w], str(1 << (m - 1)))
    if name in ("exponent", "mantissa"):   # (the biased exponent: 0 for zeros and denormals, all ones for inf and NaN)
      bits = b.emit(f"bitcast {t} {x.ref} to {it}", U64)
      if name == "exponent": bits = b.emit(f"lshr {it} {bits.ref}, {b.c(INT_OF_BITS[w], str(m))}", U64)
      field = b.emit(f"and {it} {bits.ref}, {b.c(INT_OF_BITS[w], str((1 << (w - 1 - m)) - 1 if name == 'exponent' else (1 << m) - 1))}", U64)
      return b.emit(f"zext {it} {field.ref} to {b.t('i64')}", U64) if w < 64 else field
    nan = b.emit(f"fcmp uno {t} {x.ref}, {x.ref}", BOOL)
    if name == "isnan": return nan
    bits = b.emit(f"bitcast {t} {x.ref} to {it}", U64)
    if name == "sign":
      s = b.emit(f"lshr {it} {bits.ref}, {b.c(INT_OF_BITS[w], str(w - 1))}", U64)
      return b.emit(f"zext {it} {s.ref} to {b.t('i64')}", U64) if w < 64 else s
    q = b.emit(f"and {it} {bits.ref}, {qbit}", U64)
    has_q = b.emit(f"icmp ne {it} {q.ref}, zeroinitializer", BOOL)
    if name == "quiet":
      qb = b.emit(f"or {it} {bits.ref}, {qbit}", U64)
      sel = b.emit(f"select {b.t('i1')} {nan.ref}, {it} {qb.ref}, {it} {bits.ref}", U64)
      return b.emit(f"bitcast {it} {sel.ref} to {t}", x.dt)
    want = has_q if name == "is_qnan" else b.emit(f"xor {b.t('i1')} {has_q.ref}, {b.c('i1', 'true')}", BOOL)
    return b.emit(f"and {b.t('i1')} {nan.ref}, {want.ref}", BOOL)

# helper name -> the Lowering method that lowers its calls (one rule per family)
HELPER_RULES = {"mread": "_h_mread", "mread_words": "_h_mread", "mwrite": "_h_mwrite", "signext": "_h_signext", "bits2f": "_h_bits",
                "f2bits": "_h_bits", "where": "_h_where", **dict.fromkeys(("int", "float", "bool"), "_h_python_cast"),
                "u64": "_h_int64", "i64": "_h_int64", "sext": "_h_sext", "ff1_32": "_h_first_one", "ff1_64": "_h_first_one",
                "shl": "_h_shift", "shr": "_h_shift", "fma": "_h_fma",
                **dict.fromkeys(("popcount", "fabs", "sqrt_", *ROUNDINGS), "_h_unary_intrinsic"),
                **dict.fromkeys(("isnan", "is_snan", "is_qnan", "quiet", "sign", "exponent", "mantissa"), "_h_float_bits"),
                "ldexp": "_h_ldexp", **dict.fromkeys(INT_TO_FLOAT, "_h_int_to_float"), **dict.fromkeys(FLOAT_TO_INT, "_h_float_to_int"),
                **dict.fromkeys(FLOAT_CASTS, "_h_float_cast"), **dict.fromkeys(INT_EXTREMES, "_h_int_extreme"),
                **dict.fromkeys(FLOAT_EXTREMES, "_h_float_extreme"), "reverse_bits": "_h_reverse_bits", "reverse_bits32": "_h_reverse_bits",
                "pow_f": "_h_pow", **dict.fromkeys(VIA_F64, "_h_via_f64")}
SCALAR_RULES = {"mread", "mread_words", "mwrite", "signext", "bits2f", "f2bits", "where", "int", "float", "bool", "u64", "i64", "sext"}

def lower(source:str, inputs:dict, b:Builder, python_ints:bool=False) -> dict:
  """The outputs (`st.NAME = ...` of the generated `op` function) as lane vectors or Python scalars, emitting the wave's IR into b.
  `inputs`: the op state's attributes: Val for per-lane operands (uint64 bits, lane masks as uint64 0/1), Python values for
  fields and mode inputs, N_SENTINEL for `n`, and for MEM an object whose `read(addr, nbytes)` emits a load of `nbytes` (1, 2, 4)
  at each lane's uint64 address Val (a uint64 Val) and `read_words(addr, k)` one of k dwords (Words), and a store's MEM one whose
  `write(addr, value, nbytes)` emits the write of each lane's low `nbytes` of value (uint64 Vals), in the op's order. Raises
  NotLowerable (see the module docstring). `python_ints`: the source is a whole-wave op's Python-int code (see the module docstring);
  a `VGPR` input is then an object whose `lane_value(lane, reg)` gives lane `lane` (a Val or int) of VGPR `reg` as a uint64 Val."""
  return Lowering(source, b, python_ints).run("op", inputs)
