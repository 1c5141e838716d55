"""A core set of tinygrad programs on every emulated AMD GPU (gfx1100, gfx1201, gfx942, gfx950) in the default test run: elementwise,
reductions (argmin/argmax; sum and softmax over long rows, grouped through LDS), matmul, a half matmul on the tensor cores
(WMMA/MFMA), conv2d, a dtype sweep (int8/int16 division, 64-bit ints, half, float64 trunc, bfloat16, bool) and an MMU fault. The
whole integration suite runs on one arch (EMU_TEST_ARCH, default gfx1100). Expected values come from numpy."""
import pytest
from tinygrad_run import ARCHS, assert_mmu_fault_and_survival, emulator_available, failed_checks, llvm_missing, run_json

pytestmark = pytest.mark.skipif(not emulator_available(), reason="emu.amd.gpu (the AMD emulator) is not available")

CORE = """
import json, numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from tinygrad import Tensor, dtypes
rng, res = np.random.default_rng(11), {}
def check(key, got, exp, tol=0.0):
  res[key] = bool(got.shape == exp.shape and np.allclose(got.astype(np.float64), exp.astype(np.float64), rtol=tol, atol=tol))
def T(x): return Tensor(x, device="AMD")
a, b = rng.standard_normal((33, 48)).astype(np.float32), rng.standard_normal((48, 20)).astype(np.float32)
check("add mul", (T(a) * 2 + 1).numpy(), a * 2 + 1, 1e-6)
check("exp", T(a).exp().numpy(), np.exp(a), 1e-5)
check("sum 1", T(a).sum(1).numpy(), a.sum(1), 1e-4); check("max 0", T(a).max(0).numpy(), a.max(0))
c = rng.standard_normal((8, 2048)).astype(np.float32)   # few long rows: grouped reductions, partial results through LDS
check("sum 1 grouped", T(c).sum(1).numpy(), c.sum(1), 1e-4)
e = np.exp(c - c.max(1, keepdims=True))
check("softmax 1 grouped", T(c).softmax(1).numpy(), e / e.sum(1, keepdims=True), 1e-5)
check("argmin 1", T(a).argmin(1).numpy(), a.argmin(1)); check("argmax 0", T(a).argmax(0).numpy(), a.argmax(0))
check("matmul", (T(a) @ T(b)).numpy(), a @ b, 1e-4)
x, w = rng.standard_normal((2, 3, 10, 9)).astype(np.float32), rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
check("conv2d stride 2 padding 1", T(x).conv2d(T(w), stride=2, padding=1).numpy(),
      np.einsum("bchwij,ocij->bohw", sliding_window_view(np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1))), (3, 3), axis=(2, 3))[:, :, ::2, ::2], w), 1e-4)
for np_dt, dt in [(np.int8, dtypes.int8), (np.int16, dtypes.int16), (np.uint8, dtypes.uint8)]:
  n, d = rng.integers(0, 100, 45).astype(np_dt), rng.integers(1, 13, 45).astype(np_dt)
  check(f"{dt.name} idiv", (T(n) // T(d)).numpy(), n // d)
i64 = rng.integers(-2**40, 2**40, 45)
check("int64 add mul", (T(i64) * 3 + T(i64)).numpy(), i64 * 3 + i64)
h = rng.standard_normal(45).astype(np.float16)
check("half mul", (T(h) * T(h)).numpy(), h * h, 1e-2)
hm, hn = rng.standard_normal((32, 32)).astype(np.float16), rng.standard_normal((32, 32)).astype(np.float16)
check("half matmul (tensor cores)", (T(hm) @ T(hn)).numpy(), hm.astype(np.float32) @ hn.astype(np.float32), 2e-2)
f64 = rng.standard_normal(45) * 4
check("float64 trunc", T(f64).trunc().numpy(), np.trunc(f64)); check("float64 div", (T(f64) / 3).numpy(), f64 / 3, 1e-12)
bf = T(a[0]).cast(dtypes.bfloat16)
check("bfloat16 add", (bf + bf).float().numpy(), a[0] * 2, 2 ** -6)
p, q = rng.random(45) > 0.5, rng.random(45) > 0.5
check("bool and", (T(p) & T(q)).numpy(), p & q); check("bool or", (T(p) | T(q)).numpy(), p | q); check("bool xor", (T(p) ^ T(q)).numpy(), p ^ q)
print(json.dumps(res))
"""

def needs_llvm(arch:str):
  if (why := llvm_missing(arch)) is not None: pytest.skip(why)

@pytest.mark.parametrize("arch", ARCHS)
def test_core_programs(arch):
  needs_llvm(arch)
  out = run_json(CORE, dev=f"MOCKKFD+AMD:LLVM:{arch}")
  assert out and not failed_checks(out, arch), failed_checks(out, arch)

@pytest.mark.parametrize("arch", ARCHS)
def test_out_of_bounds_store_is_an_mmu_fault(arch):
  needs_llvm(arch)
  assert_mmu_fault_and_survival(arch)

@pytest.mark.parametrize("arch", ARCHS)
def test_core_programs_with_every_native_region_checked(arch):
  """EMU_REGIONS=check: every straight-line VALU run is native from its first batch and each batch also runs on the numpy path;
  any difference fails the dispatch, so the results below can only be right if both agree everywhere."""
  needs_llvm(arch)
  code = CORE.replace("print(json.dumps(res))", "from emu.amd import regions\n"
                      "res['native regions ran'] = any(r is not None and r.fn is not None for r in regions._built.values())\n"
                      "print(json.dumps(res))")
  out = run_json(code, dev=f"MOCKKFD+AMD:LLVM:{arch}", env={"EMU_REGIONS": "check"})
  assert out and out.pop("native regions ran") and not failed_checks(out, arch), failed_checks(out, arch)
