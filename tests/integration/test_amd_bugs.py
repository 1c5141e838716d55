"""Regression tests for emulator bugs first seen through tinygrad (wrong signs from V_CNDMASK's float modifiers, WMMA tensor
cores, MFMA with a constant accumulator). A bug found this way is first recorded here as a strict xfail naming it, and the
marker is removed when the fix lands."""
import pytest
from tinygrad_run import emulator_available, run_json

pytestmark = pytest.mark.skipif(not emulator_available(), reason="emu.amd.gpu (the AMD emulator) is not available")

def test_sign_selects_sin_min_argmin():
  out = run_json("""
import json, numpy as np
from tinygrad import Tensor
rng = np.random.default_rng(3)
x = np.array([1.6, 2.0, 3.0, -2.0, 4.0, 10.0], np.float32)
a = rng.standard_normal((5, 7, 9)).astype(np.float32)
b = rng.standard_normal((33, 48)).astype(np.float32)
q, f = np.array([0, 1, 2, 3, -1], np.int32), np.full(5, 0.5, np.float32)
sel = (Tensor(f, device="AMD") * ((Tensor(q, device="AMD") & 1) != 0).where(-1.0, 1.0)).numpy()
print(json.dumps({"sign select": bool((sel == np.where(q & 1, -f, f)).all()),
                  "sin": bool(np.allclose(Tensor(x, device="AMD").sin().numpy(), np.sin(x), atol=1e-5)),
                  "min (0, 2)": bool(np.allclose(Tensor(a, device="AMD").min((0, 2)).numpy(), a.min((0, 2)))),
                  "argmin": bool((Tensor(b, device="AMD").argmin(1).numpy() == b.argmin(1)).all())}))
""")
  assert all(out.values()), out

def test_half_matmul_tensor_cores():
  out = run_json("""
import json, numpy as np
from tinygrad import Tensor, dtypes
rng = np.random.default_rng(5)
a, b = (rng.standard_normal((64, 64)).astype(np.float16) for _ in range(2))
got = (Tensor(a, device="AMD") @ Tensor(b, device="AMD")).numpy()
print(json.dumps(bool(np.allclose(got.astype(np.float32), a.astype(np.float32) @ b.astype(np.float32), rtol=2e-2, atol=5e-2))))
""")
  assert out is True
