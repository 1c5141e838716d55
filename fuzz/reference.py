"""The kernel targets' reference: a tiny program (fuzz.tiny_program) evaluated with numpy in the program's own dtypes, every step
rounded to its dtype as tinygrad defines it, written from tinygrad's Tensor methods (the ops each one decomposes into: `a / b`
is `a * reciprocal(b)`, `abs` is `x * sign(x)`, `minimum` is `-maximum(-a, -b)`, `maximum` is Python's `max(a, b)`, the PYTHON
backend's definition, a float `sum` without a dtype accumulates in float32, ...), not from any backend's output.

`evaluate(case, model)` returns the result and a mask of the elements tinygrad leaves undefined (a max reduction over a NaN:
`max` is order-dependent there, and reductions have no order). `model` names a deviation to evaluate instead, one per known
renderer bug (fuzz/known.py): with it the same program gives what that renderer computes.
"""
from __future__ import annotations
from dataclasses import dataclass
import numpy as np
from fuzz import tiny_program

@dataclass(frozen=True)
class Model:
  """Deviations from tinygrad's semantics that known renderer bugs amount to (all off: the reference)."""
  minmax_drops_nan: bool = False      # maximum/minimum return the non-NaN operand (PTX max/min)
  eight_bit_in_16_bits: bool = False  # int8/uint8 arithmetic kept in 16 bits, wrapped only when stored (PTX's .s16/.u16 registers)
  small_ints_as_int: bool = False     # 8- and 16-bit integer arithmetic in C's int, wrapped only when stored (C's promotion)
REFERENCE = Model()

def _cast_value(x:np.ndarray, dt:str) -> np.ndarray:
  with np.errstate(all="ignore"):
    if np.dtype(dt).kind in "iu" and x.dtype.kind == "f": return np.trunc(x).astype(np.int64).astype(dt)   # build pre-clamps to +-100
    return x.astype(dt)

class _Eval:
  """One evaluation: the input arrays and the model."""
  def __init__(self, case:dict, model:Model):
    self.case, self.m = case, model
    self.inputs = [tiny_program.input_array(i) for i in case["inputs"]]

  def wide(self, x:np.ndarray) -> np.ndarray:
    """The value as the model computes it: 8-bit integers in 16 bits, or small integers in int32 (see Model)."""
    if self.m.small_ints_as_int and x.dtype.kind in "iu" and x.dtype.itemsize < 4: return x.astype(np.int32)
    if self.m.eight_bit_in_16_bits and x.dtype.kind in "iu" and x.dtype.itemsize == 1: return x.astype(np.int16 if x.dtype.kind == "i" else np.uint16)
    return x

  def maximum(self, a:np.ndarray, b:np.ndarray) -> np.ndarray:
    if self.m.minmax_drops_nan and a.dtype.kind == "f": return np.fmax(a, b)
    return np.where(b > a, b, a)   # Python's max(a, b): a unless b > a (NaN: whichever comes first)

  def minimum(self, a:np.ndarray, b:np.ndarray) -> np.ndarray:
    if a.dtype.kind == "f": return -self.maximum(-a, -b)
    return np.minimum(a, b)   # tinygrad's integer minimum (max of the values xor'ed with all ones) is the minimum

  def binary(self, op:str, a:np.ndarray, b:np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
      match op:
        case "add": return a + b
        case "sub": return a - b
        case "mul": return a * b
        case "max": return self.maximum(a, b)
        case "min": return self.minimum(a, b)
        case "div": return a * np.reciprocal(b)   # floats only; tinygrad's a / b is a * (1 / b), each rounded
        case "idiv": return np.floor_divide(a, b)
        case "and": return a & b
        case "xor": return a ^ b
        case "lt": return np.where(a < b, a, b)
    raise ValueError(f"unknown binary op {op}")

  def unary(self, op:str, x:np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
      match op:
        case "neg": return -x
        case "abs": return np.abs(x)
        case "relu": return np.where(x > 0, x, x.dtype.type(0))
        case "sqrt": return np.sqrt(np.abs(x))
        case "exp2": return np.exp2(self.minimum(self.maximum(x, x.dtype.type(-60)), x.dtype.type(60)))
        case "log2": return np.log2(np.abs(x) + x.dtype.type(1))
        case "square": return x * x
        case "trunc": return np.trunc(x)
        case "recip": return np.reciprocal(x)
    raise ValueError(f"unknown unary op {op}")

  def triggered_by(self, st:list, operands:list[np.ndarray], out:np.ndarray) -> np.ndarray:
    """The event flags (TRIGGER bits) step `st` sets on each element of its result: an integer result that wrapped (and which of
    the small-integer deviations that reaches), a NaN reaching a maximum or minimum (directly, or through exp2's clip)."""
    flags, op = np.zeros(np.shape(out), np.uint8), st[1]
    if out.dtype.kind in "iu" and op in WRAPPING:
      exact_in = [o.astype(object) for o in operands]   # Python integers: no width
      exact = np.sum(exact_in[0], st[2]) if st[0] == "reduce" else self.unary(op, exact_in[0]) if st[0] == "unary" else \
        self.binary(op, *exact_in)
      wrapped = (np.asarray(exact) != np.asarray(out).astype(object)).astype(bool)
      if op == "sub":   # tinygrad subtracts by adding the negation: x + (2^n - b) wraps for unsigned b != 0, -b for the signed minimum
        b = operands[1]
        wrapped |= np.broadcast_to(b != 0 if b.dtype.kind == "u" else b == np.iinfo(b.dtype).min, wrapped.shape)
      bits = TRIGGER["wraps"] | (TRIGGER["small_ints_as_int"] if out.dtype.itemsize < 4 else 0) | \
        (TRIGGER["eight_bit_in_16_bits"] if out.dtype.itemsize == 1 else 0)
      flags |= wrapped * np.uint8(bits)
    if op in ("max", "min", "exp2") and st[0] != "reduce":
      flags |= np.logical_or.reduce([np.broadcast_to(_nan(o), np.shape(out)) for o in operands]) * np.uint8(TRIGGER["minmax_drops_nan"])
    return flags

  def run(self) -> tuple[np.ndarray, np.ndarray]:
    """(result, flags): per element, UNDEFINED and the TRIGGER bits of the deviations its value went through."""
    x, dt = self.wide(self.inputs[0]), self.case["inputs"][0]["dtype"]
    fl = np.zeros(x.shape, np.uint8)
    inexact = False   # a step came before whose float result backends may round differently (approximations, reduction order)
    any_of = lambda f, ax, keepdims=False: np.bitwise_or.reduce(f, ax, keepdims=keepdims)  # noqa: E731
    for k, st in enumerate(self.case["steps"]):
      if (st[0] in STORED_BEFORE or k and self.case["steps"][k - 1][0] in STORED_AFTER) and x.dtype.name != dt:
        x = self.wide(_cast_value(x, dt))   # a kernel boundary: the value went through memory at its dtype's width
      operands = [x]
      match st:
        case ["unary", op]:
          x, inexact = self.unary(op, x), inexact or (op in INEXACT and x.dtype.kind == "f")
        case ["binary", op, "const", v]:
          operands.append(self.wide(np.asarray(_cast_value(np.asarray(v), dt))))
          x = self.binary(op, x, operands[1])
        case ["binary", op, "input", j]:
          operands.append(self.wide(self.inputs[j]))
          if k == 0 and j == 0: fl = fl | _undefined(_nonfinite(x))   # x op x: tinygrad folds it (x - x is 0 even for inf and NaN)
          x = self.binary(op, x, operands[1])
        case ["binary", op, "flip", ax]:
          operands.append(np.flip(x, ax))
          fl = fl | _undefined(_nonfinite(x) & _own_mirror(x.shape, ax))   # the middle element meets itself: x op x, folded as above
          x, fl = self.binary(op, x, operands[1]), fl | np.flip(fl, ax)
        case ["where", j]: x = np.where(x > 0, x, self.wide(self.inputs[j]))
        case ["reduce", "sum", ax]: x, fl, inexact = np.sum(x, ax, dtype=x.dtype), any_of(fl, ax), inexact or x.dtype.kind == "f"
        case ["reduce", "max", ax]: x, fl = np.max(x, ax), any_of(fl, ax) | _undefined(_nan(x).any(ax))
        case ["permute", perm]: x, fl = np.transpose(x, perm), np.transpose(fl, perm)
        case ["reshape", shape]: x, fl = x.reshape(shape), fl.reshape(shape)
        case ["expand", ax, n]:
          grow = lambda a: np.repeat(np.expand_dims(a, ax), n, ax)  # noqa: E731
          x, fl = grow(x), grow(fl)
        case ["pad", ax, a, b]:
          width = [(a, b) if i == ax else (0, 0) for i in range(x.ndim)]
          x, fl = np.pad(x, width), np.pad(fl, width)
        case ["shrink", ax, a, b]:
          sl = tuple(slice(a, b) if i == ax else slice(None) for i in range(x.ndim))
          x, fl = x[sl], fl[sl]
        case ["flip", ax]: x, fl = np.flip(x, ax), np.flip(fl, ax)
        case ["cast", to]:
          if x.dtype.kind == "f" and np.dtype(to).kind in "iu":   # build's clamp before a float -> int cast
            x = self.minimum(self.maximum(np.where(np.isnan(x), x.dtype.type(0), x), x.dtype.type(-100)), x.dtype.type(100))
            if to.startswith("uint"): x = np.abs(x)
            if inexact: fl = fl | _undefined(_near_integer(x))   # rounding differences may cross an integer boundary: trunc differs by one
          x, dt = self.wide(_cast_value(x, to)), to
        case ["softmax", ax]:
          fl = np.broadcast_to(any_of(fl, ax, True) | _undefined(_nan(x).any(ax, keepdims=True)), x.shape).copy()
          if x.shape[ax] == 1: fl = fl | _undefined(_nonfinite(x))   # x - max(x) over one element folds to 0
          if _contractible(self.case["steps"][:k]): fl = fl | _undefined(np.broadcast_to(_exp_ill_conditioned(x, ax), x.shape))
          m = x - np.max(x, ax, keepdims=True)
          e = np.exp2(m * x.dtype.type(1 / np.log(2)))
          x, inexact = e * np.reciprocal(_acc_sum(e, ax)), True
        case ["argmax", ax]: x, fl, dt = np.argmax(x, ax).astype(np.int32), any_of(fl, ax) | _undefined(_nan(x).any(ax)), "int32"
        case ["cumsum", ax]:
          acc, out = tiny_program.cumsum_dtypes(dt)
          x = np.cumsum(x.astype(acc), ax, dtype=acc).astype(out)
          fl, dt, inexact = np.bitwise_or.accumulate(fl, ax), out, inexact or x.dtype.kind == "f"
        case _: raise ValueError(f"no reference for step {st}")
      fl = fl | self.triggered_by(st, operands, x)
      if st[0] in ("unary", "binary") and x.dtype.kind == "f":   # tinygrad folds x*0, x-x, x/x: a NaN born of infinities is not defined
        born = np.isnan(x)
        for o in operands: born &= ~_nan(o)   # (broadcast: a constant operand is a scalar)
        fl = fl | _undefined(born)
    x, fl = np.asarray(x), np.asarray(fl)   # a full reduction gives a numpy scalar
    return _cast_value(x, dt) if x.dtype.name != dt else x, fl

# kernel boundaries tinygrad keeps: these ops' inputs and reductions' outputs go through memory in their dtype (what the renderer
# models above cannot carry across)
STORED_BEFORE, STORED_AFTER = ("cumsum", "softmax", "argmax"), ("reduce",)
INEXACT = ("sqrt", "exp2", "log2", "recip")   # unary steps backends compute approximately (and division, fast-math)
WRAPPING = ("neg", "abs", "square", "add", "sub", "mul", "idiv", "sum")   # integer steps whose exact result can leave the dtype
UNDEFINED = np.uint8(1)   # flag bits of an element: tinygrad leaves it undefined; the value went through a Model deviation or
TRIGGER = {"eight_bit_in_16_bits": 2, "small_ints_as_int": 4, "minmax_drops_nan": 8, "wraps": 16}   # an integer step wrapped

def _undefined(mask) -> np.ndarray: return np.asarray(mask).astype(np.uint8) * UNDEFINED
def _nan(x:np.ndarray) -> np.ndarray: return np.isnan(x) if x.dtype.kind == "f" else np.zeros(x.shape, bool)
def _nonfinite(x:np.ndarray) -> np.ndarray: return ~np.isfinite(x) if x.dtype.kind == "f" else np.zeros(x.shape, bool)

MOVEMENT = ("permute", "reshape", "expand", "pad", "shrink", "flip")

def _contractible(steps:list) -> bool:
  """Whether the last arithmetic step is a product a backend may fuse with the next subtraction (softmax's x - max(x)) into one
  fma (LLVM's `contract`, ptxas and NVRTC by default): x * x - max then keeps the product's rounding error, not 0."""
  last = next((st for st in reversed(steps) if st[0] not in MOVEMENT), None)
  return last is not None and (last[:2] == ["unary", "square"] or last[:2] == ["binary", "mul"])

def _exp_ill_conditioned(x:np.ndarray, ax:int) -> np.ndarray:
  """The softmax rows (keepdims) whose exponentials a one-ulp change of the input at the row's largest magnitude moves by more
  than the dtype's tolerance: there a fused product's rounding decides the result (x = 1e30 squared in float64: 1e60 - 1e60 is
  0, fma(1e30, 1e30, -1e60) about 1e44, and exp2 of that is inf)."""
  mag = np.max(np.abs(np.where(np.isfinite(x), x, 0)), ax, keepdims=True).astype(np.float64)
  return mag * np.finfo(x.dtype).eps / np.log(2) > tiny_program.TOL.get(x.dtype.name, 1e-5)

def _own_mirror(shape:tuple, ax:int) -> np.ndarray:
  """The elements that flipping axis `ax` leaves in place (the middle of an odd length): tinygrad may see `x op flip(x)` there as
  `x op x` once it unrolls the axis."""
  n = shape[ax]
  at = np.zeros(shape, bool)
  if n % 2: at[tuple(n // 2 if i == ax else slice(None) for i in range(len(shape)))] = True
  return at

def _near_integer(x:np.ndarray) -> np.ndarray:
  """Elements within the dtype's tolerance of an integer (an inexact value there may truncate either way)."""
  tol = tiny_program.TOL.get(x.dtype.name, 1e-5) * np.maximum(1.0, np.abs(x.astype(np.float64)))
  return np.abs(x - np.round(x)) <= tol

def _acc_sum(e:np.ndarray, ax:int) -> np.ndarray:
  """tinygrad's `sum` without a dtype: float16 accumulates in float32 and is cast back."""
  if e.dtype == np.float16: return np.sum(e.astype(np.float32), ax, keepdims=True).astype(np.float16)
  return np.sum(e, ax, keepdims=True)

def evaluate(case:dict, model:Model=REFERENCE) -> tuple[np.ndarray, np.ndarray]:
  """(result, undefined mask) of a tiny program under `model` (module docstring); IEEE exceptions are results, not warnings."""
  with np.errstate(all="ignore"): x, fl = _Eval(case, model).run()
  return x, (fl & UNDEFINED) != 0

def reached(case:dict, event:str) -> np.ndarray:
  """The result elements whose value went through `event` under tinygrad's semantics: a Model field's deviation (an 8-bit wrap, a
  NaN meeting a maximum: a renderer with that deviation may compute something else exactly there) or "wraps" (an integer step's
  exact result left its dtype)."""
  with np.errstate(all="ignore"): _, fl = _Eval(case, REFERENCE).run()
  return (fl & np.uint8(TRIGGER[event])) != 0

def values(case:dict) -> np.ndarray:
  """The reference result alone, for the checks that re-run variants of a program (tiny_program.undefined_on_llvm)."""
  return evaluate(case)[0]
