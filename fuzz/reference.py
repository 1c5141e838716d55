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

  def run(self) -> tuple[np.ndarray, np.ndarray]:
    x, dt = self.wide(self.inputs[0]), self.case["inputs"][0]["dtype"]
    undef = np.zeros(x.shape, bool)
    inexact = False   # a step came before whose float result backends may round differently (approximations, reduction order)
    for k, st in enumerate(self.case["steps"]):
      operands = [x]
      match st:
        case ["unary", op]:
          x, inexact = self.unary(op, x), inexact or (op in INEXACT and x.dtype.kind == "f")
        case ["binary", op, "const", v]: x = self.binary(op, x, self.wide(np.asarray(_cast_value(np.asarray(v), dt))))
        case ["binary", op, "input", j]:
          operands.append(self.wide(self.inputs[j]))
          if k == 0 and j == 0: undef = undef | _nonfinite(x)   # x op x: tinygrad folds it (x - x is 0 even for inf and NaN)
          x = self.binary(op, x, operands[1])
        case ["binary", op, "flip", ax]:
          operands.append(np.flip(x, ax))
          if x.shape[ax] == 1: undef = undef | _nonfinite(x)    # flipping one element is x itself: folded as above
          x, undef = self.binary(op, x, operands[1]), undef | np.flip(undef, ax)
        case ["where", j]: x = np.where(x > 0, x, self.wide(self.inputs[j]))
        case ["reduce", "sum", ax]: x, undef, inexact = np.sum(x, ax, dtype=x.dtype), undef.any(ax), inexact or x.dtype.kind == "f"
        case ["reduce", "max", ax]: x, undef = np.max(x, ax), undef.any(ax) | _nan(x).any(ax)
        case ["permute", perm]: x, undef = np.transpose(x, perm), np.transpose(undef, perm)
        case ["reshape", shape]: x, undef = x.reshape(shape), undef.reshape(shape)
        case ["expand", ax, n]:
          grow = lambda a: np.repeat(np.expand_dims(a, ax), n, ax)  # noqa: E731
          x, undef = grow(x), grow(undef)
        case ["pad", ax, a, b]:
          width = [(a, b) if i == ax else (0, 0) for i in range(x.ndim)]
          x, undef = np.pad(x, width), np.pad(undef, width)
        case ["shrink", ax, a, b]:
          sl = tuple(slice(a, b) if i == ax else slice(None) for i in range(x.ndim))
          x, undef = x[sl], undef[sl]
        case ["flip", ax]: x, undef = np.flip(x, ax), np.flip(undef, ax)
        case ["cast", to]:
          if x.dtype.kind == "f" and np.dtype(to).kind in "iu":   # build's clamp before a float -> int cast
            x = self.minimum(self.maximum(np.where(np.isnan(x), x.dtype.type(0), x), x.dtype.type(-100)), x.dtype.type(100))
            if to.startswith("uint"): x = np.abs(x)
            if inexact: undef = undef | _near_integer(x)   # rounding differences may cross an integer boundary: trunc differs by one
          x, dt = self.wide(_cast_value(x, to)), to
        case ["softmax", ax]:
          undef = np.broadcast_to(undef.any(ax, keepdims=True) | _nan(x).any(ax, keepdims=True), x.shape).copy()
          if x.shape[ax] == 1: undef = undef | _nonfinite(x)   # x - max(x) over one element folds to 0
          with np.errstate(all="ignore"):
            m = x - np.max(x, ax, keepdims=True)
            e = np.exp2(m * x.dtype.type(1 / np.log(2)))
            x, inexact = e * np.reciprocal(_acc_sum(e, ax)), True
        case ["argmax", ax]: x, undef, dt = np.argmax(x, ax).astype(np.int32), undef.any(ax) | _nan(x).any(ax), "int32"
        case ["cumsum", ax]:
          acc, out = tiny_program.cumsum_dtypes(dt)
          with np.errstate(all="ignore"): x = np.cumsum(x.astype(acc), ax, dtype=acc).astype(out)
          undef, dt, inexact = np.cumsum(undef, ax) > 0, out, inexact or x.dtype.kind == "f"
        case _: raise ValueError(f"no reference for step {st}")
      if st[0] in ("unary", "binary") and x.dtype.kind == "f":   # tinygrad folds x*0, x-x, x/x: a NaN born of infinities is not defined
        undef = undef | (np.isnan(x) & ~np.any([_nan(o) for o in operands], axis=0))
    x, undef = np.asarray(x), np.asarray(undef)   # a full reduction gives a numpy scalar
    return _cast_value(x, dt) if x.dtype.name != dt else x, undef

INEXACT = ("sqrt", "exp2", "log2", "recip")   # unary steps backends compute approximately (and division, fast-math)

def _nan(x:np.ndarray) -> np.ndarray: return np.isnan(x) if x.dtype.kind == "f" else np.zeros(x.shape, bool)
def _nonfinite(x:np.ndarray) -> np.ndarray: return ~np.isfinite(x) if x.dtype.kind == "f" else np.zeros(x.shape, bool)

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
  with np.errstate(all="ignore"): return _Eval(case, model).run()

def values(case:dict) -> np.ndarray:
  """The reference result alone, for the checks that re-run variants of a program (tiny_program.undefined_on_llvm)."""
  return evaluate(case)[0]
