"""Kernels through tinygrad's AMD runtime on the mock KFD and the emulated GPU; expected values come from numpy."""
import pytest
from tinygrad_run import emulator_available, run, run_json

pytestmark = pytest.mark.skipif(not emulator_available(), reason="emu.amd.gpu (the AMD emulator) is not available")

def test_elementwise_over_dtypes():
  out = run_json("""
    import json, numpy as np
    from tinygrad import Tensor, dtypes
    rng, res = np.random.default_rng(1), {}
    for name, npdt in [("float32", np.float32), ("float16", np.float16), ("int32", np.int32), ("uint8", np.uint8)]:
      a = (rng.random(67) * 50).astype(npdt); b = (rng.random(67) * 50 + 1).astype(npdt)
      got = (Tensor(a, device="AMD") * Tensor(b, device="AMD") + Tensor(a, device="AMD")).numpy()
      res[name] = bool(np.allclose(got.astype(np.float64), (a * b + a).astype(np.float64), rtol=1e-2 if npdt == np.float16 else 1e-6))
    print(json.dumps(res))
  """)
  assert out == {"float32": True, "float16": True, "int32": True, "uint8": True}

def test_reduction_matmul_softmax():
  out = run_json("""
    import json, numpy as np
    from tinygrad import Tensor
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((33, 48)).astype(np.float32), rng.standard_normal((48, 20)).astype(np.float32)
    ta, tb = Tensor(a, device="AMD"), Tensor(b, device="AMD")
    e = np.exp(a - a.max(1, keepdims=True))
    print(json.dumps([bool(np.allclose(ta.sum(1).numpy(), a.sum(1), atol=1e-4)), bool(np.allclose(ta.max().numpy(), a.max())),
                      bool(np.allclose((ta @ tb).numpy(), a @ b, atol=1e-4)),
                      bool(np.allclose(ta.softmax(1).numpy(), e / e.sum(1, keepdims=True), atol=1e-6))]))
  """)
  assert out == [True, True, True, True]

def test_tinyjit_graph_replay():
  out = run_json("""
    import json, numpy as np
    from tinygrad import Tensor, TinyJit
    @TinyJit
    def f(x, y): return (x * 2 + y).sum(0).realize()
    ok = []
    for i in range(4):
      a, b = np.full((8, 16), i, np.float32), np.arange(128, dtype=np.float32).reshape(8, 16)
      ok.append(bool(np.allclose(f(Tensor(a, device="AMD"), Tensor(b, device="AMD")).numpy(), (a * 2 + b).sum(0))))
    print(json.dumps(ok))
  """)
  assert out == [True] * 4

def test_profiler_timestamps_are_emulated_and_monotonic():
  out = run_json("""
    import json
    from tinygrad import Tensor, Device
    from tinygrad.helpers import Context
    dev = Device["AMD"]
    times = []
    for n in (64, 4096):
      x = Tensor.ones(n, device="AMD").contiguous().realize()
      st, en = dev.new_signal(), dev.new_signal()
      dev.hw_compute_queue_t().timestamp(st).submit(dev)
      (x + 1).realize()
      dev.hw_compute_queue_t().timestamp(en).signal(dev.timeline_signal, dev.next_timeline()).submit(dev)
      dev.synchronize()
      times.append((float(st.timestamp), float(en.timestamp)))
    print(json.dumps(times))
  """)
  (s0, e0), (s1, e1) = out
  assert 0 <= s0 < e0 <= s1 < e1   # device time only moves forward, and only with work

def test_out_of_bounds_kernel_is_tinygrads_mmu_fault_and_process_survives():
  p = run("""
    from tinygrad import Device, Tensor
    from tinygrad.device import TinyELF
    dev = Device["AMD"]
    src = '''define amdgpu_kernel void @oob(ptr addrspace(1) %p) {
      %q = getelementptr i8, ptr addrspace(1) %p, i64 1099511627776
      store i32 7, ptr addrspace(1) %q
      ret void
    }'''
    prg = dev.runtime(TinyELF(dev.compiler.compile(src), "oob", None, ()))
    buf = Tensor.zeros(16, device="AMD").contiguous().realize()
    try: prg(buf.uop.buffer._buf, global_size=(1, 1, 1), local_size=(1, 1, 1), wait=True)
    except RuntimeError as e: print("FAULT", e)
    print("AFTER", (Tensor([1.0, 2.0], device="AMD:1") * 3).tolist())
  """, dev="MOCKKFD:0,1+AMD:LLVM:gfx1100")
  addr = [ln for ln in p.stdout.splitlines() if ln.startswith("FAULT")]
  assert addr and "MMU fault: 0x" in addr[0] and "NotPresent=1" in addr[0], p.stdout + p.stderr[-2000:]
  assert "AFTER [3.0, 6.0]" in p.stdout
  assert "GPU memory fault: write of unmapped address" in p.stderr

def test_runaway_kernel_is_a_hang_fault():
  p = run("""
    from tinygrad import Device, Tensor
    from tinygrad.device import TinyELF
    dev = Device["AMD"]
    src = '''define amdgpu_kernel void @spin(ptr addrspace(1) %p) {
    entry:
      br label %loop
    loop:
      %v = load volatile i32, ptr addrspace(1) %p
      %c = icmp eq i32 %v, 12345
      br i1 %c, label %exit, label %loop
    exit:
      ret void
    }'''
    prg = dev.runtime(TinyELF(dev.compiler.compile(src), "spin", None, ()))
    buf = Tensor.zeros(16, device="AMD").contiguous().realize()
    try: prg(buf.uop.buffer._buf, global_size=(1, 1, 1), local_size=(1, 1, 1), wait=True)
    except RuntimeError as e: print("FAULT", e)
  """, env={"EMU_WATCHDOG": "20000"})
  assert "FAULT HW fault:" in p.stdout, p.stdout + p.stderr[-2000:]
  assert "GPU hang" in p.stderr
