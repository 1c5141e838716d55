"""Kernels through tinygrad's AMD runtime on the mock KFD and the emulated GPU; expected values come from numpy."""
import pytest
from tinygrad_run import ARCH, HANG_FAULT, SPIN, assert_mmu_fault_and_survival, emulator_available, raw_kernel_script, run, run_json

pytestmark = pytest.mark.skipif(not emulator_available(), reason="emu.amd.gpu (the AMD emulator) is not available")

def test_tinyjit_replays_through_the_hcq_graph():
  out = run_json("""
    import json, numpy as np
    from tinygrad import Tensor, TinyJit
    from tinygrad.engine.realize import graph_cache
    from tinygrad.runtime.graph.hcq import HCQGraph
    from mockgpu.engine import SCHEDULER
    def indirect_buffers(): return sum(e.executed["INDIRECT_BUFFER"] for e in SCHEDULER.engines if hasattr(e, "executed"))
    @TinyJit
    def f(x, y):
      s = (x * 2 + y).contiguous()
      return (s - s.max(1, keepdim=True).contiguous()).exp().sum(1).realize()
    ok, ibs = [], []
    for i in range(5):
      a, b = np.random.default_rng(i).standard_normal((8, 16)).astype(np.float32), np.arange(128, dtype=np.float32).reshape(8, 16) / 100
      ta, tb = Tensor(a, device="AMD").realize(), Tensor(b, device="AMD").realize()
      n0 = indirect_buffers()
      got = f(ta, tb).numpy()
      ibs.append(indirect_buffers() - n0)
      s = a * 2 + b
      ok.append(bool(np.allclose(got, np.exp(s - s.max(1, keepdims=True)).sum(1), atol=1e-5)))
    print(json.dumps([ok, ibs, sum(isinstance(g, HCQGraph) for g in graph_cache.values())]))
  """)
  ok, ibs, graphs = out
  assert ok == [True] * 5 and graphs == 1
  assert ibs[0] == 0 and all(n >= 1 for n in ibs[1:]), ibs   # the first call runs eagerly; later ones submit the graph's indirect buffer

def test_tensor_sharded_over_two_gpus():
  out = run_json("""
    import json, numpy as np
    from tinygrad import Tensor
    rng = np.random.default_rng(4)
    a, w = rng.standard_normal((8, 6)).astype(np.float32), rng.standard_normal((6, 3)).astype(np.float32)
    ts = Tensor(a, device="AMD").realize().shard(("AMD", "AMD:1"), axis=0)
    tw = Tensor(w, device="AMD").realize().shard(("AMD", "AMD:1"))
    ew = (ts * 2 + 1).sum(1)
    print(json.dumps([list(ew.device),
                      bool(np.allclose(ew.to("AMD").numpy(), (a * 2 + 1).sum(1), atol=1e-5)),
                      bool(np.allclose((ts @ tw).to("AMD").numpy(), a @ w, atol=1e-5)),
                      bool(np.allclose(ts.sum().to("AMD").numpy(), a.sum(), atol=1e-5))]))   # an all-reduce across both GPUs
  """, dev=f"MOCKKFD:0,1+AMD:LLVM:{ARCH}")
  assert out == [["AMD", "AMD:1"], True, True, True]

def test_vram_exhaustion_is_a_memory_error_and_the_device_keeps_working():
  out = run_json("""
    import json
    from tinygrad import Tensor, dtypes
    from tinygrad.device import Buffer
    try:
      Buffer("AMD", 512 << 20, dtypes.uint8).allocate()   # 512 MB on a 256 MB GPU
      oom = None
    except MemoryError as e: oom = str(e)
    for _ in range(3): Buffer("AMD", 128 << 20, dtypes.uint8).allocate().deallocate()   # fits again and again once freed
    print(json.dumps([oom, (Tensor([1, 2, 3], device="AMD") * 2).tolist()]))
  """, env={"MOCKGPU_AMD_VRAM": "256M"})
  assert out[0] and "Allocation of 512.00 MB failed on AMD" in out[0]
  assert out[1] == [2, 4, 6]

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
  assert_mmu_fault_and_survival(ARCH)

def test_runaway_kernel_is_a_hang_fault():
  p = run(raw_kernel_script("spin", SPIN), env={"EMU_WATCHDOG": "20000"})   # the deterministic budget: 20,000 wave-instructions
  assert f"FAULT {HANG_FAULT}" in p.stdout, p.stdout + p.stderr[-2000:]
  assert "GPU hang" in p.stderr

def test_profile_events_have_monotonic_device_timestamps():
  out = run_json("""
    import json
    from tinygrad import Tensor, Device
    from tinygrad.device import Compiled
    from tinygrad.helpers import ProfileRangeEvent
    x = Tensor.ones(4096, device="AMD").contiguous().realize()
    for i in range(3): x = (x * 2 + i).contiguous().realize()
    Device["AMD"].synchronize()
    evs = [e for e in Compiled.profile_events if isinstance(e, ProfileRangeEvent) and e.device.startswith("AMD")]
    print(json.dumps([[e.name if isinstance(e.name, str) else str(e.name), float(e.st), float(e.en)] for e in evs]))
  """, env={"PROFILE": "1", "VIZ": "0"})
  assert len(out) >= 4, out   # the copy-free kernels above, each with a start and an end stamp from the device
  assert all(st < en for _, st, en in out), out
  assert all(a[2] <= b[1] for a, b in zip(out, out[1:])), out   # one queue: each starts after the previous ended
