"""tinygrad operations on the emulated GPU (EMU_TEST_ARCH) through the mock KFD: reductions, matmul, conv2d, softmax, argmax, masking,
indexing/gather/scatter and random numbers. Expected values come from numpy; each test is one child process reporting a
verdict per check."""
import pytest
from tinygrad_run import emulator_available, failed_checks, run_json

pytestmark = pytest.mark.skipif(not emulator_available(), reason="emu.amd.gpu (the AMD emulator) is not available")

CHECKS = """
import json, numpy as np
from tinygrad import Tensor, dtypes
rng, res = np.random.default_rng(3), {}
def check(key, got, exp, tol=1e-5):
  res[key] = bool(got.shape == exp.shape and np.allclose(got.astype(np.float64), exp.astype(np.float64), rtol=tol, atol=tol))
def T(x): return Tensor(x, device="AMD")
"""

def test_reductions_over_axes():
  out = run_json(CHECKS + """
a = rng.standard_normal((5, 7, 9)).astype(np.float32)
for ax in [0, 1, 2, (0, 2), None]:
  check(f"sum {ax}", T(a).sum(ax).numpy(), np.asarray(a.sum(ax)), 1e-4)
  check(f"max {ax}", T(a).max(ax).numpy(), np.asarray(a.max(ax)))
  check(f"mean {ax}", T(a).mean(ax).numpy(), np.asarray(a.mean(ax)), 1e-5)
for ax in [0, 1, 2]: check(f"min {ax}", T(a).min(ax).numpy(), a.min(ax))   # multi-axis min: see test_amd_bugs.py
i = rng.integers(-1000, 1000, (6, 40)).astype(np.int32)
check("int32 sum 1", T(i).sum(1).numpy(), i.sum(1)); check("int32 max 0", T(i).max(0).numpy(), i.max(0))
check("int32 min 1", T(i).min(1).numpy(), i.min(1))
big = rng.random(70000).astype(np.float32)   # several workgroups and a grouped reduction
check("sum 70000", T(big).sum().numpy(), np.asarray(big.sum(dtype=np.float64)), 1e-3)
print(json.dumps(res))
""")
  assert out and not failed_checks(out), failed_checks(out)

def test_matmul_conv2d_softmax_argmax_where():
  out = run_json(CHECKS + """
from numpy.lib.stride_tricks import sliding_window_view
a, b = rng.standard_normal((33, 48)).astype(np.float32), rng.standard_normal((48, 20)).astype(np.float32)
check("matmul f32", (T(a) @ T(b)).numpy(), a @ b, 1e-4)
ia, ib = rng.integers(-50, 50, (9, 12)).astype(np.int32), rng.integers(-50, 50, (12, 5)).astype(np.int32)
check("matmul int32", (T(ia) @ T(ib)).numpy(), ia @ ib, 0)
x, w = rng.standard_normal((2, 3, 10, 9)).astype(np.float32), rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
check("conv2d", T(x).conv2d(T(w)).numpy(), np.einsum("bchwij,ocij->bohw", sliding_window_view(x, (3, 3), axis=(2, 3)), w), 1e-4)
check("conv2d stride 2 padding 1", T(x).conv2d(T(w), stride=2, padding=1).numpy(),
      np.einsum("bchwij,ocij->bohw", sliding_window_view(np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1))), (3, 3), axis=(2, 3))[:, :, ::2, ::2], w), 1e-4)
e = np.exp(a - a.max(1, keepdims=True))
check("softmax", T(a).softmax(1).numpy(), e / e.sum(1, keepdims=True), 1e-6)
check("log_softmax", T(a).log_softmax(1).numpy(), np.log(e / e.sum(1, keepdims=True)), 1e-5)
check("argmax 1", T(a).argmax(1).numpy(), a.argmax(1), 0); check("argmax 0", T(a).argmax(0).numpy(), a.argmax(0), 0)  # argmin: test_amd_bugs.py
check("where", (T(a) > 0).where(T(a), 0.0).numpy(), np.where(a > 0, a, 0))
check("masked_fill", T(a).masked_fill(T(a) < 0.5, -1.0).numpy(), np.where(a < 0.5, -1, a))
check("relu", T(a).relu().numpy(), np.maximum(a, 0))
print(json.dumps(res))
""")
  assert out and not failed_checks(out), failed_checks(out)

def test_indexing_gather_setitem_scatter():
  out = run_json(CHECKS + """
src = rng.standard_normal((4, 6)).astype(np.float32)
idx = rng.integers(0, 6, (4, 3)).astype(np.int32)
check("gather", T(src).gather(1, T(idx)).numpy(), np.take_along_axis(src, idx, 1))
check("tensor index", T(src)[T(np.array([3, 0, 2, 3], np.int32))].numpy(), src[[3, 0, 2, 3]])
check("two tensor indices", T(src)[T(np.array([1, 3], np.int32)), T(np.array([5, 0], np.int32))].numpy(), src[[1, 3], [5, 0]])
check("slice with step", T(src)[1:3, ::2].numpy(), src[1:3, ::2])
s = Tensor.zeros(4, 6, device="AMD").contiguous(); s[1:3, 2] = T(np.array([5.0, 7.0], np.float32)); s.realize()
exp = np.zeros((4, 6), np.float32); exp[1:3, 2] = [5, 7]; check("setitem slice", s.numpy(), exp)
s2 = T(src.copy()).contiguous(); s2[:, 0] = 9.0; s2.realize()
exp = src.copy(); exp[:, 0] = 9; check("setitem scalar", s2.numpy(), exp)
sidx, sv, base = np.array([[0, 1, 2], [2, 0, 1]], np.int32), np.array([[1, 2, 3], [4, 5, 6]], np.float32), np.zeros((2, 4), np.float32)
exp = base.copy(); np.put_along_axis(exp, sidx, sv, 1)
check("scatter", T(base).scatter(1, T(sidx), T(sv)).numpy(), exp)
ridx = np.array([[0, 0, 1], [3, 3, 3]], np.int32)
exp = base.copy(); np.add.at(exp, (np.arange(2)[:, None].repeat(3, 1), ridx), sv)
check("scatter_reduce sum", T(base).scatter_reduce(1, T(ridx), T(sv), reduce="sum").numpy(), exp)
exp = np.full((2, 4), -np.inf, np.float32); np.maximum.at(exp, (np.arange(2)[:, None].repeat(3, 1), ridx), sv); exp[np.isinf(exp)] = 0
check("scatter_reduce amax", T(base).scatter_reduce(1, T(ridx), T(sv), reduce="amax").numpy(), np.maximum(exp, 0))
oh = rng.integers(0, 10, 20).astype(np.int32)
check("one_hot", T(oh).one_hot(10).numpy(), np.eye(10, dtype=np.int32)[oh], 0)
print(json.dumps(res))
""")
  assert out and not failed_checks(out), failed_checks(out)

def test_rand_is_seeded_deterministic_and_uniform():
  out = run_json("""
import json, numpy as np
from tinygrad import Tensor
def draw(seed, fn=Tensor.rand):
  Tensor.manual_seed(seed)
  return fn(1 << 14, device="AMD").numpy()
r1, r2, r3 = draw(42), draw(42), draw(43)
n = draw(42, Tensor.randn)
hist = np.histogram(r1, 16, (0, 1))[0]
print(json.dumps({"same seed same values": bool((r1 == r2).all()), "other seed differs": float((r1 != r3).mean()),
                  "in [0, 1)": bool(r1.min() >= 0 and r1.max() < 1), "mean": float(r1.mean()), "var": float(r1.var()),
                  "chi2": float(((hist - len(r1) / 16) ** 2 / (len(r1) / 16)).sum()), "distinct": int(len(np.unique(r1))),
                  "randn mean": float(n.mean()), "randn std": float(n.std())}))
""")
  assert out["same seed same values"] and out["in [0, 1)"]
  assert out["other seed differs"] > 0.99 and out["distinct"] > 16000
  assert abs(out["mean"] - 0.5) < 0.01 and abs(out["var"] - 1 / 12) < 0.005   # 16384 samples: ~4 standard errors
  assert out["chi2"] < 50   # 15 degrees of freedom: p < 1e-5
  assert abs(out["randn mean"]) < 0.04 and abs(out["randn std"] - 1) < 0.03
