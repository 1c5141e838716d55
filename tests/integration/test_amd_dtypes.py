"""Elementwise ops over every dtype tinygrad's AMD LLVM renderer supports, on the emulated GPU (EMU_TEST_ARCH); expected values from numpy.

All dtypes run in one child process (tinygrad parses DEV at import); the child reports a verdict per "dtype op" so a failure
names exactly what broke.
"""
import pytest
from tinygrad_run import emulator_available, failed_checks, run_json

pytestmark = pytest.mark.skipif(not emulator_available(), reason="emu.amd.gpu (the AMD emulator) is not available")

CHECKS = """
import json, numpy as np
from tinygrad import Tensor, dtypes
from tinygrad.dtype import _to_np_dtype
rng, res = np.random.default_rng(7), {}
def check(key, got, exp, tol=0.0):
  res[key] = bool(got.shape == exp.shape and np.allclose(got.astype(np.float64), exp.astype(np.float64), rtol=tol, atol=tol, equal_nan=True))
def T(x): return Tensor(x, device="AMD")
"""

def test_integer_dtypes_arithmetic_bitwise_shifts_casts():
  out = run_json(CHECKS + """
for dt in [dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.uint16, dtypes.int32, dtypes.uint32, dtypes.int64, dtypes.uint64]:
  npdt = _to_np_dtype(dt); info = np.iinfo(npdt)
  a, b = (rng.integers(info.min, info.max, 45, dtype=npdt, endpoint=True) for _ in range(2))
  nz = np.where(b == 0, 1, b).astype(npdt)
  with np.errstate(over="ignore"):
    for op, f in [("add", lambda x, y: x + y), ("sub", lambda x, y: x - y), ("mul", lambda x, y: x * y), ("and", lambda x, y: x & y),
                  ("or", lambda x, y: x | y), ("xor", lambda x, y: x ^ y), ("lt", lambda x, y: x < y), ("eq", lambda x, y: x == y)]:
      check(f"{dt.name} {op}", f(T(a), T(b)).numpy(), f(a, b))
    check(f"{dt.name} max", T(a).maximum(T(b)).numpy(), np.maximum(a, b))
    small = (a % 100).astype(npdt); d = (nz % 13).astype(npdt); d[d == 0] = 1
    check(f"{dt.name} idiv", (T(small) // T(d)).numpy(), np.trunc(small.astype(np.float64) / d).astype(npdt))
    check(f"{dt.name} shl", (T(a) << 3).numpy(), a << npdt(3))
    check(f"{dt.name} shr", (T(a) >> 2).numpy(), a >> npdt(2))
  check(f"{dt.name} to float32", T(a).cast(dtypes.float32).numpy(), a.astype(np.float32))
  f = (rng.standard_normal(45) * 60).astype(np.float32); f = np.abs(f) if dtypes.is_unsigned(dt) else f
  check(f"{dt.name} from float32", T(f).cast(dt).numpy(), f.astype(npdt))
print(json.dumps(res))
""")
  assert out and not failed_checks(out), failed_checks(out)

def test_float_dtypes_arithmetic_and_transcendentals():
  out = run_json(CHECKS + """
for dt, tol in [(dtypes.half, 1e-2), (dtypes.float32, 1e-5), (dtypes.float64, 1e-12)]:
  npdt = _to_np_dtype(dt)
  a, b = (rng.standard_normal(45) * 4).astype(npdt), (rng.random(45) * 3 + 0.5).astype(npdt)
  for op, f in [("add", lambda x, y: x + y), ("sub", lambda x, y: x - y), ("mul", lambda x, y: x * y), ("div", lambda x, y: x / y)]:
    check(f"{dt.name} {op}", f(T(a), T(b)).numpy(), f(a, b), tol)
  check(f"{dt.name} max", T(a).maximum(T(b)).numpy(), np.maximum(a, b))
  check(f"{dt.name} lt", (T(a) < T(b)).numpy(), a < b)
  for op, f, g in [("exp", Tensor.exp, np.exp), ("log", Tensor.log, np.log), ("sqrt", Tensor.sqrt, np.sqrt),
                   ("recip", Tensor.reciprocal, np.reciprocal), ("neg", Tensor.neg, np.negative),
                   ("abs", Tensor.abs, np.abs), ("trunc", Tensor.trunc, np.trunc)]:
    check(f"{dt.name} {op}", f(T(b)).numpy(), g(b), tol)
  small = (rng.random(45) * 1.5).astype(npdt)   # |x| < pi/2: the quadrant is 0, see test_amd_bugs.py for the other quadrants
  check(f"{dt.name} sin", T(small).sin().numpy(), np.sin(small), tol * 10)
  check(f"{dt.name} to int32", T(a * 10).cast(dtypes.int32).numpy(), (a * 10).astype(np.int32))
print(json.dumps(res))
""")
  assert out and not failed_checks(out), failed_checks(out)

def test_bfloat16_and_bool():
  out = run_json(CHECKS + """
a, b = rng.standard_normal(45).astype(np.float32), rng.standard_normal(45).astype(np.float32)
ba, bb = T(a).cast(dtypes.bfloat16), T(b).cast(dtypes.bfloat16)
check("bfloat16 roundtrip", ba.float().numpy(), a, 2 ** -7)
check("bfloat16 add", (ba + bb).float().numpy(), a + b, 2 ** -6)
check("bfloat16 mul", (ba * bb).float().numpy(), a * b, 2 ** -6)
check("bfloat16 max", ba.maximum(bb).float().numpy(), np.maximum(a, b), 2 ** -7)
x, y = rng.random(45) > 0.5, rng.random(45) > 0.5
check("bool and", (T(x) & T(y)).numpy(), x & y); check("bool or", (T(x) | T(y)).numpy(), x | y)
check("bool xor", (T(x) ^ T(y)).numpy(), x ^ y); check("bool not", T(x).logical_not().numpy(), ~x)
check("bool eq", (T(x) == T(y)).numpy(), x == y); check("bool to int32", T(x).cast(dtypes.int32).numpy(), x.astype(np.int32))
check("bool where", T(x).where(T(a), T(b)).numpy(), np.where(x, a, b))
print(json.dumps(res))
""")
  assert out and not failed_checks(out), failed_checks(out)
