"""tinygrad's PTX renderer output run by emu.nv (no device, no mock driver): each kernel's result against numpy on the same
inputs. The kernels are rendered for sm_89 by the same PTXRenderer DEV=MOCK+NV:PTX uses."""
import numpy as np
from emu.common.memory import MemoryMap
from emu.nv import isa, simt
from emu.nv.kernel import render

def run(fn, *inputs:np.ndarray, out_shape, out_dtype=np.float32, dtype:str="float32"):
  rk = render(fn, *[x.shape for x in inputs], dtype=dtype)
  assert rk.order.count(-1) == 1, "one kernel whose only non-input buffer is its output (multi-kernel functions are not run here)"
  kernel = isa.parse(rk.ptx).kernels[rk.name]
  out = np.zeros(out_shape, out_dtype)
  mem = MemoryMap()
  arrays = [np.ascontiguousarray(x) for x in inputs]
  for arr in (*arrays, out): mem.map(arr.ctypes.data, max(arr.nbytes, 1), backing=arr.view(np.uint8).reshape(-1))
  stats = simt.run(kernel, rk.grid, rk.block, [(out if i == -1 else arrays[i]).ctypes.data for i in rk.order], mem)
  assert stats.threads == int(np.prod(rk.grid)) * int(np.prod(rk.block)) and stats.warp_instructions > 0
  return out

rng = np.random.default_rng(0)
A, B = rng.standard_normal(256).astype(np.float32), rng.standard_normal(256).astype(np.float32)
M = rng.standard_normal((16, 16)).astype(np.float32)

def test_elementwise_fma_and_sqrt():
  np.testing.assert_array_equal(run(lambda a, b: (a * 2 + b).abs().sqrt(), A, B, out_shape=256), np.sqrt(np.abs(A * 2 + B)))

def test_where_max_and_compare():
  np.testing.assert_array_equal(run(lambda a, b: (a > b).where(a, b * 3).maximum(0.5), A, B, out_shape=256),
                                np.maximum(np.where(A > B, A, B * 3), np.float32(0.5)))

def test_sum_reduction_rows():
  got = run(lambda m: m.sum(axis=1), M, out_shape=16)
  np.testing.assert_allclose(got, M.sum(axis=1), rtol=1e-6, atol=1e-6)

def test_full_sum_and_max():
  np.testing.assert_allclose(run(lambda a: a.sum(), A, out_shape=1), [A.sum()], rtol=1e-5)
  np.testing.assert_array_equal(run(lambda a: a.max(), A, out_shape=1), [A.max()])

def test_small_matmul():
  got = run(lambda x, y: x @ y, M, M.T.copy(), out_shape=(16, 16))
  np.testing.assert_allclose(got, M @ M.T, rtol=1e-5, atol=1e-5)

def test_exp_log_recip():
  x = np.abs(A) + 0.5
  got = run(lambda a: a.exp() + a.log() + a.reciprocal(), x, out_shape=256)
  np.testing.assert_allclose(got, np.exp(x) + np.log(x) + 1 / x, rtol=1e-5)

def test_integer_arithmetic_and_casts():
  x = rng.integers(-1000, 1000, 256).astype(np.int32)
  got = run(lambda a: (a * 3 - 7) // 4 + (a % 5), x, out_shape=256, out_dtype=np.int32, dtype="int32")
  want = ((x * 3 - 7) // 4 + x % 5).astype(np.int32)   # tinygrad's // and % on ints: floor semantics (Python's)
  np.testing.assert_array_equal(got, want)

def test_half_arithmetic():
  x, y = A.astype(np.float16), B.astype(np.float16)
  got = run(lambda a, b: a * b + a, x, y, out_shape=256, out_dtype=np.float16, dtype="float16")
  # tinygrad computes half in f32 (cvt.f32.f16, a fused fma.rn.f32, cvt.rn.f16.f32): the f16 product is exact in f32, so the fma
  # is the f32 sum of the exact product, rounded to f16 after
  want = ((x.astype(np.float32) * y.astype(np.float32)) + x.astype(np.float32)).astype(np.float16)
  np.testing.assert_array_equal(got, want)

def test_conv2d():
  img, w = rng.standard_normal((1, 2, 8, 8)).astype(np.float32), rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
  want = np.zeros((1, 3, 6, 6), np.float32)
  for o in range(3):
    for i in range(6):
      for j in range(6): want[0, o, i, j] = (img[0, :, i:i + 3, j:j + 3] * w[o]).sum()
  np.testing.assert_allclose(run(lambda a, b: a.conv2d(b), img, w, out_shape=(1, 3, 6, 6)), want, rtol=1e-5, atol=1e-5)

def test_int64_and_uint8_wrap():
  x = rng.integers(-2**40, 2**40, 64).astype(np.int64)
  np.testing.assert_array_equal(run(lambda a: a * 3 + 1, x, out_shape=64, out_dtype=np.int64, dtype="int64"), x * 3 + 1)
  u = rng.integers(0, 256, 64).astype(np.uint8)
  np.testing.assert_array_equal(run(lambda a: a + 200, u, out_shape=64, out_dtype=np.uint8, dtype="uint8"), (u + 200).astype(np.uint8))

def test_half_tensor_core_matmul():
  # tinygrad's sm_89 PTX for a 16x16 half matmul uses mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 (two per 16x16 tile);
  # the f16 products are exact and the f32 accumulation of 16 of them rounds once here: the result is the f64 product rounded
  # to f32, then to f16 as tinygrad casts back
  x, y = (rng.integers(-4, 5, (16, 16)).astype(np.float16) for _ in range(2))
  rk = render(lambda a, b: a @ b, (16, 16), (16, 16), dtype="float16")
  assert "mma.sync.aligned.m16n8k16" in rk.ptx
  got = run(lambda a, b: a @ b, x, y, out_shape=(16, 16), out_dtype=np.float16, dtype="float16")
  np.testing.assert_array_equal(got, (x.astype(np.float64) @ y.astype(np.float64)).astype(np.float16))

def test_tf32_tensor_core_matmul():
  # ALLOW_TF32=1: fp32 matmul through mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32; integer inputs are exact in tf32
  from tinygrad.helpers import Context
  x, y = (rng.integers(-4, 5, (16, 16)).astype(np.float32) for _ in range(2))
  with Context(ALLOW_TF32=1):
    assert "m16n8k8.row.col.f32.tf32" in render(lambda a, b: a @ b, (16, 16), (16, 16)).ptx
    got = run(lambda a, b: a @ b, x, y, out_shape=(16, 16))
  np.testing.assert_array_equal(got, (x.astype(np.float64) @ y.astype(np.float64)).astype(np.float32))

def test_ctas_run_in_batches_with_the_same_result(monkeypatch, capsys):
  # a launch larger than one batch (BATCH_LANES, shrunk here) runs CTA batch by CTA batch; EMU_NV_TRACE prints each instruction
  from emu.nv import simt as simt_mod
  x = rng.standard_normal(4096).astype(np.float32)
  whole = run(lambda a: (a * 3).exp2(), x, out_shape=4096)
  monkeypatch.setattr(simt_mod, "BATCH_LANES", 64)
  monkeypatch.setattr(simt_mod, "TRACE", True)
  np.testing.assert_array_equal(run(lambda a: (a * 3).exp2(), x, out_shape=4096), whole)
  np.testing.assert_allclose(whole, np.exp2(x.astype(np.float64) * 3), rtol=1e-6)
  assert capsys.readouterr().err.count("[nv] ") > 10
