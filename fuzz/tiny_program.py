"""Random small tinygrad programs as JSON data: inputs (dtype, shape, values) and a list of steps applied to the first input.

`generate(rng)` draws one, tracking shapes and dtypes so every step is valid; `build(case, inputs)` turns it into a Tensor.
"""
from __future__ import annotations
import math, random, re
from typing import Callable
import numpy as np
from tinygrad import Tensor, dtypes

FLOATS, INTS = ("float32", "float64", "float16"), ("int32", "int64", "int16", "int8", "uint8", "uint16", "uint32", "uint64")
EDGE = {"f": [0.0, -0.0, 1.0, -1.0, 0.5, 3.0, -7.25, 1e-3, 65504.0, 1e30, float("inf"), float("-inf"), float("nan")],
        "i": [0, 1, -1, 2, 7, 100, -128, 127, 255, 2**31-1, -2**31]}
UNARY_F = ("neg", "abs", "relu", "sqrt", "exp2", "log2", "square", "trunc", "recip")
UNARY_I = ("neg", "abs", "relu", "square")
BINARY_F, BINARY_I = ("add", "sub", "mul", "max", "min", "div", "lt"), ("add", "sub", "mul", "max", "min", "lt", "and", "xor", "idiv")

def _values(rng:random.Random, dtype:str, n:int) -> list:
  info = np.iinfo(dtype) if dtype not in FLOATS else None
  out = []
  for _ in range(n):
    if dtype in FLOATS: out.append(rng.choice(EDGE["f"]) if rng.random() < 0.3 else round(rng.uniform(-10, 10), 3))
    else: out.append(int(np.clip(rng.choice(EDGE["i"]) if rng.random() < 0.3 else rng.randint(-20, 20), info.min, info.max)))
  return out

# tensor-core-sized matmuls: M and N multiples of the tiles' 16 and 8, K every multiple of 8 up to 64, so every residue of K
# modulo the NVIDIA fragment depths (k8, k16, k32) and AMD's WMMA/MFMA depth (16) is drawn
MATMUL_M, MATMUL_K, MATMUL_N = (16, 32), tuple(range(8, 72, 8)), (8, 16)   # up to 32 x 64 x 16: the PYTHON reference takes ~1 s
# tf32: float32 inputs with tinygrad's ALLOW_TF32 on while the program runs (NVIDIA's tf32 tensor cores); float32 without it
MATMUL_DTYPES = ("float16", "bfloat16", "float32", "tf32")
MATMUL_SHARE = 0.15   # of generated programs

def matmul_case(rng:random.Random) -> dict:
  """A matmul of two float32 inputs (values in [-4, 4], two decimals) cast to a tensor-core input dtype, sometimes followed by
  a unary step; bfloat16 results are cast back to float32 (numpy has no bfloat16)."""
  m, k, n, dt = rng.choice(MATMUL_M), rng.choice(MATMUL_K), rng.choice(MATMUL_N), rng.choice(MATMUL_DTYPES)
  data = lambda count: [round(rng.uniform(-4, 4), 2) for _ in range(count)]  # noqa: E731
  inputs = [{"dtype": "float32", "shape": [m, k], "data": data(m * k)}, {"dtype": "float32", "shape": [k, n], "data": data(k * n)}]
  steps = ([] if dt in ("float32", "tf32") else [["cast", dt]]) + [["matmul", 1]]
  if rng.random() < 0.3: steps.append(["unary", rng.choice(MATMUL_AFTER)])
  if dt == "bfloat16": steps.append(["cast", "float32"])
  return {"inputs": inputs, "steps": steps, **({"allow_tf32": True} if dt == "tf32" else {})}

MATMUL_AFTER = ("neg", "abs", "relu")   # steps after a matmul that do not widen the reference's error bound (Lipschitz 1)
# tf32 keeps 10 mantissa bits and the tensor cores truncate (emu.nv.mma): up to 2^-10 relative per input
UNIT_ROUNDOFF = {"float16": 2.0 ** -11, "bfloat16": 2.0 ** -8, "float32": 2.0 ** -24, "tf32": 2.0 ** -10}

def is_matmul(case:dict) -> bool:
  """Whether the program is a `matmul_case`."""
  return any(s[0] == "matmul" for s in case["steps"])

def _rounded(x:np.ndarray, dt:str) -> np.ndarray:
  """float32 values rounded to nearest even in dt, as float64 (bfloat16: the upper half of the float32 bits, rounded)."""
  if dt == "float16": return x.astype(np.float16).astype(np.float64)
  if dt == "bfloat16":
    bits = x.astype(np.float32).view(np.uint32)
    return ((bits + np.uint32(0x7fff) + ((bits >> np.uint32(16)) & np.uint32(1))) & np.uint32(0xffff0000)).view(np.float32).astype(np.float64)
  return x.astype(np.float64)

def compare_matmul(got:np.ndarray, case:dict) -> tuple[str, tuple]|None:
  """A matmul program's result against numpy: the inputs rounded to the input dtype, the exact product, then the steps after it.
  tinygrad leaves the rounding of products and the order of the float32 accumulation to the backend (a tensor core multiplies
  exactly, the LLVM and clang renderers may round each product to the input dtype or keep it wider), so an element may be off by
  (|A| @ |B|) * (2 u_in + K u_f32) plus the output's own rounding, and no more: a misplaced fragment element is off by a whole
  product. None when it matches, else (detail, dedupe key)."""
  a, b = (np.array(i["data"], np.float32).reshape(i["shape"]) for i in case["inputs"])
  dt = case["steps"][0][1] if case["steps"][0][0] == "cast" else "tf32" if case.get("allow_tf32") else "float32"
  a64, b64 = _rounded(a, dt), _rounded(b, dt)
  exp, bound = a64 @ b64, np.abs(a64) @ np.abs(b64) * (2 * UNIT_ROUNDOFF[dt] + a.shape[1] * UNIT_ROUNDOFF["float32"])
  for st in case["steps"]:
    if st[0] == "unary": exp = {"neg": np.negative, "abs": np.abs, "relu": lambda v: np.maximum(v, 0)}[st[1]](exp)
  out = "bfloat16" if dt == "bfloat16" else got.dtype.name   # a bfloat16 result is cast to float32 at the end
  bound = bound + np.abs(exp) * UNIT_ROUNDOFF.get(out, 2.0 ** -24) * 2
  g = got.astype(np.float64)
  if got.shape != exp.shape: return f"shape {got.shape} != {exp.shape}", ("shape",)
  bad = ~(np.abs(g - exp) <= bound)
  if not bad.any(): return None
  i = tuple(int(k) for k in np.argwhere(bad)[0])
  return (f"{bad.sum()} of {bad.size} values off by more than the rounding bound, first at {i}: {g[i]!r} vs {exp[i]!r} (bound "
          f"{bound[i]:.3g}); {dt} {a.shape[0]}x{a.shape[1]}x{b.shape[1]}, steps {case['steps']}", (dt, "matmul", a.shape[1] % 32))

def generate(rng:random.Random, max_steps:int=6) -> dict:
  """A random program: 1-2 inputs of one shape (1-3 dims of 1-6), then up to `max_steps` steps; or (MATMUL_SHARE of them) a
  tensor-core-sized matmul (`matmul_case`)."""
  if rng.random() < MATMUL_SHARE: return matmul_case(rng)
  shape = [rng.randint(1, 6) for _ in range(rng.randint(1, 3))]
  dtype = rng.choice(FLOATS + INTS)
  inputs = [{"dtype": dtype, "shape": shape, "data": _values(rng, dtype, math.prod(shape))} for _ in range(rng.randint(1, 2))]
  steps, shp, dt = [], list(shape), dtype
  for _ in range(rng.randint(1, max_steps)):
    kind = rng.choice(["unary", "binary", "binary", "reduce", "permute", "reshape", "expand", "pad", "shrink", "flip", "cast", "where",
                       "multi"])
    ax = rng.randrange(len(shp))
    if kind == "unary": steps.append(["unary", rng.choice(UNARY_F if dt in FLOATS else UNARY_I)])
    elif kind == "binary":
      op = rng.choice(BINARY_F if dt in FLOATS else BINARY_I)
      if op == "idiv": steps.append(["binary", op, "const", rng.choice([1, 2, 3, 7] + ([-5] if dt[0] == "i" else []))])
      elif rng.random() < 0.4: steps.append(["binary", op, "const", _values(rng, dt, 1)[0]])
      elif shp == shape and dt == dtype and rng.random() < 0.5: steps.append(["binary", op, "input", rng.randrange(len(inputs))])
      else: steps.append(["binary", op, "flip", ax])
    elif kind == "where" and shp == shape and dt == dtype: steps.append(["where", rng.randrange(len(inputs))])
    elif kind == "reduce" and len(shp) > 1:
      steps.append(["reduce", rng.choice(["sum", "max"]), ax]); shp.pop(ax)
    elif kind == "permute":
      perm = list(range(len(shp))); rng.shuffle(perm); steps.append(["permute", perm]); shp = [shp[p] for p in perm]
    elif kind == "reshape":
      n = math.prod(shp); shp = [n] if len(shp) > 1 or n == 1 else [d:=next(k for k in range(2, n + 1) if n % k == 0), n // d]
      steps.append(["reshape", list(shp)])   # a copy: later steps change shp in place
    elif kind == "expand" and len(shp) < 4:
      n = rng.randint(2, 4); steps.append(["expand", ax, n]); shp.insert(ax, n)
    elif kind == "pad": steps.append(["pad", ax, rng.randint(0, 2), rng.randint(0, 2)]); shp[ax] += steps[-1][2] + steps[-1][3]
    elif kind == "shrink" and shp[ax] > 1:
      a = rng.randrange(shp[ax]); b = rng.randint(a + 1, shp[ax]); steps.append(["shrink", ax, a, b]); shp[ax] = b - a
    elif kind == "flip": steps.append(["flip", ax])
    elif kind == "cast": dt = rng.choice([d for d in FLOATS + INTS if d != dt]); steps.append(["cast", dt])
    elif kind == "multi":   # tinygrad ops of several kernels
      op = rng.choice(["softmax", "argmax", "cumsum"] if dt in FLOATS else ["argmax", "cumsum"])
      steps.append([op, ax])
      if op == "argmax": dt = "int32"; shp.pop(ax)
      if op == "cumsum": dt = cumsum_dtypes(dt)[1]
      if not shp: shp.append(1); steps.append(["reshape", [1]])   # argmax of a vector is a scalar: keep one axis
  return {"inputs": inputs, "steps": steps}

def cumsum_dtypes(dt:str) -> tuple[str, str]:
  """(accumulation dtype, result dtype) of tinygrad's cumsum (a sum without a dtype: sum_acc_dtype; half is cast back)."""
  if dt == "float16": return "float32", "float16"
  if dt in FLOATS: return dt, dt
  acc = "int64" if dt == "int64" else "uint64" if dt == "uint64" else "uint32" if dt.startswith("uint") else "int32"
  return acc, acc

def _binary(x:Tensor, op:str, y) -> Tensor:
  match op:
    case "add": return x + y
    case "sub": return x - y
    case "mul": return x * y
    case "max": return x.maximum(y)
    case "min": return x.minimum(y)
    case "div": return x / y
    case "idiv": return x // y
    case "and": return x & y
    case "xor": return x ^ y
    case "lt": return (x < y).where(x, y)  # keeps the dtype: bool outputs are not what we want to compare
  raise ValueError(f"unknown binary op {op}")

def _unary(x:Tensor, op:str) -> Tensor:
  match op:
    case "neg": return -x
    case "abs": return x.abs()
    case "relu": return x.relu()
    case "sqrt": return x.abs().sqrt()
    case "exp2": return x.clip(-60, 60).exp2()
    case "log2": return (x.abs() + 1).log2()
    case "square": return x * x
    case "trunc": return x.trunc()
    case "recip": return x.reciprocal()
  raise ValueError(f"unknown unary op {op}")

TOL = {"float16": 2e-3, "bfloat16": 1e-2, "float32": 1e-5, "float64": 1e-9}
# tinygrad's LLVM renderer emits `fdiv nsz arcp contract afn`: LLVM may compute x/y as x * rcp(y) with Newton fma steps, which
# gives NaN where IEEE division gives +-inf or +-0 (x/0, x/inf). Such results are not defined by the program, see docs/fuzzing.md.
FAST_MATH_DIV = ("div", "recip")
REDUCING = ("reduce", "softmax", "cumsum")   # steps whose float results depend on an order tinygrad leaves to the backend

def fast_math_div(case:dict) -> bool:
  """Whether the program divides or takes a reciprocal of floats (only float programs draw these ops)."""
  return any(s[0] in ("unary", "binary") and s[1] in FAST_MATH_DIV for s in case["steps"])

def float_dtypes(case:dict) -> set[str]:
  """The float dtypes a program computes in: its inputs' and every cast's target."""
  return {d for d in [i["dtype"] for i in case.get("inputs", [])] + [s[1] for s in case["steps"] if s[0] == "cast"] if d in FLOATS + ("bfloat16",)}

def tolerance(case:dict, out_dtype:str) -> float:
  """Relative and absolute tolerance for a float output: that of the least precise float dtype the program computes in (a float32
  result cast to float64 carries float32 rounding)."""
  return max(TOL.get(d, 1e-5) for d in float_dtypes(case) | {out_dtype})

def differs(got:np.ndarray, ref:np.ndarray, case:dict, fast_math:bool=False, undefined:np.ndarray|None=None) -> np.ndarray:
  """The elements of `got` that do not match `ref` (same shapes) by `compare`'s rules."""
  if got.dtype.kind == "f":
    tol, g, r = tolerance(case, got.dtype.name), got.astype(np.float64), ref.astype(np.float64)
    atol = tol
    if any(s[0] in REDUCING for s in case["steps"]):
      vals = np.concatenate([np.asarray(i["data"], dtype=np.float64).ravel() for i in case.get("inputs", [])] + [r.ravel()])
      atol = tol * max(1.0, float(np.abs(vals[np.isfinite(vals)]).max(initial=0.0)))
    with np.errstate(all="ignore"): ok = np.isclose(g, r, rtol=tol, atol=atol, equal_nan=True)
    if fast_math and fast_math_div(case): ok |= ~np.isfinite(ref) | ((ref == 0) & np.isnan(got))  # x/0, x/inf: undefined under arcp
  else: ok = got == ref
  if undefined is not None: ok |= undefined
  return ~ok

def compare(got:np.ndarray, ref:np.ndarray, case:dict, fast_math:bool=False, undefined:np.ndarray|None=None) -> tuple[str, tuple]|None:
  """None when `got` matches the reference (floats within the program's tolerance, NaN equal to NaN; ints exact), else (detail,
  dedupe key). `undefined`: elements the reference leaves undefined (fuzz.reference), never compared.

  A program with a reduction (sum, max, softmax, cumsum: REDUCING) may round in any order: its absolute tolerance scales with the
  largest finite magnitude among the inputs and the reference.
  fast_math (the device was compiled with tinygrad's LLVM flags): in programs with a float division or reciprocal (`fast_math_div`),
  elements whose reference is inf or NaN are not compared, and NaN is accepted for a reference of +-0 (x/inf)."""
  if got.shape != ref.shape: return f"shape {got.shape} != {ref.shape}", ("shape",)
  ok = ~differs(got, ref, case, fast_math, undefined)
  if ok.all(): return None
  i = tuple(int(k) for k in np.argwhere(~ok)[0])
  ops = sorted({s[0] if s[0] not in ("unary", "binary") else s[1] for s in case["steps"]})
  return f"{(~ok).sum()} of {ok.size} values differ, first at {i}: {got[i]!r} vs {ref[i]!r}; steps {case['steps']}", (got.dtype.name, *ops)

WIDER = {"int8": "int64", "int16": "int64", "int32": "int64"}   # signed dtypes a program can be re-run in to see its exact integer results

WRAPPING_STEPS = (("binary", "add"), ("binary", "sub"), ("binary", "mul"), ("reduce", "sum"), ("unary", "neg"), ("unary", "abs"),
                  ("unary", "square"))   # integer steps that can leave their dtype's range

def _prefix(case:dict, steps:list, reference:Callable[[dict], np.ndarray]) -> np.ndarray|None:
  """The reference's result of the program with `steps` instead of its own; None when the reference cannot run it (PYTHON backend
  bugs: the step it was asked about stays unjudged rather than hiding the mismatch behind a reference error)."""
  try:
    with np.errstate(all="ignore"): return reference({**case, "steps": steps})
  except Exception: return None

def signed_overflow(case:dict, plain:np.ndarray, reference:Callable[[dict], np.ndarray]) -> bool:
  """Whether the program's signed integer arithmetic wraps, seen two ways by `reference`: (1) with its int8/int32 inputs as int64
  (its steps, casts included, unchanged) some result differs from `plain`, the reference's result of the program as it is; (2) a
  step of WRAPPING_STEPS on a signed int8/int32 value gives another result when its input is first cast to int64 (this sees a
  wrap after a cast inside the program, which (1) does not). tinygrad's LLVM renderer emits `add nsw` for signed adds (subtractions
  and sum reductions included), and its CUDA renderer writes C++, where every signed overflow is undefined, so on such a program
  the device's result is undefined (the compiler may assume nothing wraps). A wrapping multiply (defined in LLVM IR) counts too.
  (2) runs the reference up to twice per such step, so callers ask only after a mismatch."""
  if all(i["dtype"] in WIDER for i in case["inputs"]):
    exact = reference({**case, "inputs": [{**i, "dtype": WIDER[i["dtype"]]} for i in case["inputs"]]})
    if plain.shape == exact.shape:
      if plain.dtype.kind in "iu" and exact.dtype.kind in "iu":
        if (plain.astype(object) != exact.astype(object)).any(): return True
      elif not np.array_equal(plain.astype(np.float64), exact.astype(np.float64), equal_nan=True): return True
  runs: dict[int, np.ndarray|None] = {}   # the first n steps' result (a step's result is the next step's input)
  def upto(n:int) -> np.ndarray|None:
    if n not in runs: runs[n] = _prefix(case, case["steps"][:n], reference)
    return runs[n]
  for k, st in enumerate(case["steps"]):
    if tuple(st[:2]) not in WRAPPING_STEPS or (before := upto(k)) is None: continue
    if before.dtype.name not in WIDER: continue
    narrow, wide = upto(k + 1), _prefix(case, case["steps"][:k] + [["cast", "int64"], st], reference)
    if narrow is not None and wide is not None and narrow.shape == wide.shape and (narrow.astype(object) != wide.astype(object)).any():
      return True
  return False

def ill_defined_quotient(case:dict, reference:Callable[[dict], np.ndarray]) -> bool:
  """Whether a float division or reciprocal step of the program (FAST_MATH_DIV) gives inf or NaN anywhere, or a zero from an
  infinite divisor (1/inf, x/inf), by `reference` on the program up to that step. Under the LLVM renderer's `arcp afn` such a
  quotient is undefined (x * rcp(y) with Newton steps gives NaN for x/0 and x/inf), and later steps can hide it from the output
  (min, where, argmax), so compare's fast-math rule on the output misses it."""
  for k, st in enumerate(case["steps"]):
    if st[0] not in ("unary", "binary") or st[1] not in FAST_MATH_DIV: continue
    if (part := _prefix(case, case["steps"][:k + 1], reference)) is None or part.dtype.kind != "f": continue
    q = part.astype(np.float64)
    if not np.isfinite(q).all(): return True
    if (before := _prefix(case, case["steps"][:k], reference)) is not None and before.shape == q.shape:
      x = before.astype(np.float64)
      if st[1] == "recip" and np.isinf(x).any(): return True
      if st[1] == "div" and ((q == 0) & np.isfinite(x) & (x != 0)).any(): return True   # x / inf (or an underflow: as ill-defined)
  return False

def undefined_on_llvm(case:dict, plain:np.ndarray, reference:Callable[[dict], np.ndarray]) -> bool:
  """Whether the LLVM renderer's flags leave the program's result undefined: a signed step wraps under `add nsw` (signed_overflow)
  or a float quotient is inf, NaN or a zero from an infinite divisor under `arcp afn` (ill_defined_quotient). Such a program is
  not judged against the reference."""
  return signed_overflow(case, plain, reference) or fast_math_div(case) and ill_defined_quotient(case, reference)

def error_shape(message:str) -> str:
  """A compile error's dedupe key part: the first line that names the error (LLVM's `error: ...`), numbers and value names
  replaced, so one renderer bug is one finding and two bugs with the same exception type are two."""
  line = next((ln for ln in message.splitlines() if "error:" in ln), message.splitlines()[0] if message else "")
  return re.sub(r"%[\w.]+|\d+(\.\d+)?(e[+-]?\d+)?", "N", line.split("error:", 1)[-1]).strip()

def input_array(spec:dict) -> np.ndarray:
  """The numpy array of one input spec (edge values such as 1e38 saturate to inf in narrow float dtypes, on purpose)."""
  with np.errstate(over="ignore"): return np.array(spec["data"], dtype=spec["dtype"]).reshape(spec["shape"])

def build(case:dict, inputs:list[Tensor]) -> Tensor:
  """Apply the case's steps to `inputs[0]` (other inputs serve as operands); the result is made contiguous."""
  x = inputs[0]
  for st in case["steps"]:
    match st:
      case ["unary", op]: x = _unary(x, op)
      case ["binary", op, "const", v]: x = _binary(x, op, Tensor(v, dtype=x.dtype, device=x.device))
      case ["binary", op, "input", j]: x = _binary(x, op, inputs[j])
      case ["binary", op, "flip", ax]: x = _binary(x, op, x.flip(ax))
      case ["where", j]: x = (x > 0).where(x, inputs[j])
      case ["matmul", j]: x = x.matmul(inputs[j].cast(x.dtype))
      case ["softmax", ax]: x = x.softmax(ax)
      case ["argmax", ax]: x = x.argmax(ax)
      case ["cumsum", ax]: x = x.cumsum(ax)
      case ["reduce", "sum", ax]: x = x.sum(ax, dtype=x.dtype)
      case ["reduce", "max", ax]: x = x.max(ax)
      case ["permute", perm]: x = x.permute(*perm)
      case ["reshape", shape]: x = x.reshape(*shape)
      case ["expand", ax, n]: x = x.unsqueeze(ax).expand(*[n if i == ax else -1 for i in range(x.ndim + 1)])
      case ["pad", ax, a, b]: x = x.pad(tuple((a, b) if i == ax else (0, 0) for i in range(x.ndim)))
      case ["shrink", ax, a, b]: x = x.shrink(tuple((a, b) if i == ax else None for i in range(x.ndim)))
      case ["flip", ax]: x = x.flip(ax)
      case ["cast", dt]:
        if dtypes.is_float(x.dtype) and dt in INTS:   # out-of-range float->int is UB, negative values to an unsigned type included
          # maximum/minimum, not clip: with clip tinygrad's rewrites leave the PYTHON backend converting an unselected inf
          # (tests/fuzz/test_tiny_program.py); both keep the cast fused with the arithmetic, as programs usually are
          x = x.isnan().where(0, x).maximum(-100).minimum(100)
          if dt.startswith("uint"): x = x.abs()
        x = x.cast(getattr(dtypes, dt))
      case _: raise ValueError(f"bad step {st}")
  return x.contiguous()
