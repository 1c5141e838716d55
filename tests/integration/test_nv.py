"""tinygrad's NV runtime, unmodified, on the mock NVIDIA driver with the PTX renderer (DEV=MOCK+NV:PTX): dtypes, reductions,
matmuls (a half one on tensor cores), conv2d, softmax, argmax, masking, gather/scatter, rand, TinyJit and graph replay,
copies, a tensor sharded over two GPUs, profiler timestamps, and the fault and hang paths. Expected values come from numpy
(rand: from tinygrad's PYTHON reference backend); each test is one child process reporting a verdict per check."""
import re, time
import pytest
from tinygrad_run import SIGINT_AS_AT_A_TERMINAL, failed_checks, last_json, run, run_json
from mockgpu.nvrtc_path import pypi_nvrtc

NV2 = "MOCK:0,1+NV:PTX"
# value checks run with both of tinygrad's NV renderers: its PTX renderer, and its CUDA renderer compiled by NVRTC (PyPI)
RENDERERS = ["PTX", pytest.param("CUDA", marks=pytest.mark.skipif(pypi_nvrtc() is None, reason="NVRTC (nvidia-cuda-nvrtc-cu12) is not installed"))]
CHECKS = """
import json, numpy as np
from tinygrad import Tensor, dtypes
rng, res = np.random.default_rng(5), {}
def check(key, got, exp, tol=1e-5):
  res[key] = bool(got.shape == exp.shape and np.allclose(got.astype(np.float64), exp.astype(np.float64), rtol=tol, atol=tol))
def T(x, d="NV"): return Tensor(x, device=d)
"""

def test_device_reports_the_board_of_devs_arch():
  code = ("import json\nfrom tinygrad import Device\nd = Device['NV']\n"
          "print(json.dumps([d.arch, type(d.renderer).__name__, d.num_gpcs, d.max_warps_per_sm]))")
  assert run_json(code, dev="MOCK+NV:PTX") == ["sm_89", "PTXRenderer", 11, 48]
  assert run_json(code, dev="MOCK+NV:PTX:sm_86")[0] == "sm_86"
  assert run_json(code, dev="MOCK+NV:PTX:sm_90")[::3] == ["sm_90", 64]
  if pypi_nvrtc() is not None: assert run_json(code, dev="MOCK+NV")[:2] == ["sm_89", "CUDARenderer"]   # the default: NVRTC from PyPI
  p = run(code, dev="MOCK+NV:PTX:sm_70")
  assert p.returncode != 0 and "no emulated NVIDIA board for arch 'sm_70'" in p.stderr

@pytest.mark.parametrize("renderer", RENDERERS)
def test_dtypes_elementwise_and_casts(renderer):
  out = run_json(CHECKS + """
a = rng.integers(-100, 100, 64)
for dt, nt in [(dtypes.float32, np.float32), (dtypes.float16, np.float16), (dtypes.int8, np.int8), (dtypes.uint8, np.uint8),
               (dtypes.int16, np.int16), (dtypes.int32, np.int32), (dtypes.uint32, np.uint32), (dtypes.int64, np.int64)]:
  x, y = a.astype(nt), (a[::-1] // 3).astype(nt)
  check(f"{dt} add mul", (T(x) + T(y) * T(x)).numpy(), (x + y * x).astype(nt), 1e-2)
  check(f"{dt} where min", (T(x) < T(y)).where(T(x), T(y)).numpy(), np.minimum(x, y))
  check(f"{dt} to float32", T(x).cast(dtypes.float32).numpy(), x.astype(np.float32))
f = (rng.standard_normal(64) * 50).astype(np.float32)
check("float32 to int32 truncates", T(f).cast(dtypes.int32).numpy(), f.astype(np.int32), 0)
check("int64 big", (T(np.array([2**40, -3, 7], np.int64)) * 3).numpy(), np.array([3 * 2**40, -9, 21], np.int64), 0)
b = T(a > 0)
check("bool and/not", (b & ~T(a > 50)).numpy(), (a > 0) & ~(a > 50), 0)
bf = np.array([1.5, -2.25, 3.0, 1e10], np.float32)
check("bfloat16 roundtrip", T(bf).cast(dtypes.bfloat16).cast(dtypes.float32).numpy(), bf, 1e-2)
check("bfloat16 arithmetic", (T(bf).cast(dtypes.bfloat16) * 2 + 1).cast(dtypes.float32).numpy(), bf * 2 + 1, 1e-2)
check("half exp", T(f[:8].astype(np.float16) / 50).exp().numpy(), np.exp(f[:8].astype(np.float16) / 50), 2e-3)
check("sqrt log recip", (T(np.abs(f) + 1).sqrt() + T(np.abs(f) + 1).log() + T(np.abs(f) + 1).reciprocal()).numpy(),
      np.sqrt(np.abs(f) + 1) + np.log(np.abs(f) + 1) + 1 / (np.abs(f) + 1), 1e-5)
print(json.dumps(res))
""", dev=f"MOCK+NV:{renderer}")
  assert out and not failed_checks(out), failed_checks(out)

@pytest.mark.parametrize("renderer", RENDERERS)
def test_reductions_matmul_conv_softmax_argmax_where(renderer):
  out = run_json(CHECKS + """
from numpy.lib.stride_tricks import sliding_window_view
x = rng.standard_normal((5, 7, 9)).astype(np.float32)
for ax in [0, 1, 2, None]:
  check(f"sum {ax}", T(x).sum(ax).numpy(), np.asarray(x.sum(ax)), 1e-4); check(f"max {ax}", T(x).max(ax).numpy(), np.asarray(x.max(ax)))
big = rng.random(70000).astype(np.float32)
check("sum 70000", T(big).sum().numpy(), np.asarray(big.sum(dtype=np.float64)), 1e-3)
a, b = rng.standard_normal((33, 48)).astype(np.float32), rng.standard_normal((48, 20)).astype(np.float32)
check("matmul f32", (T(a) @ T(b)).numpy(), a @ b, 1e-4)
ia, ib = rng.integers(-50, 50, (9, 12)).astype(np.int32), rng.integers(-50, 50, (12, 5)).astype(np.int32)
check("matmul int32", (T(ia) @ T(ib)).numpy(), ia @ ib, 0)
im, w = rng.standard_normal((2, 3, 10, 9)).astype(np.float32), rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
check("conv2d", T(im).conv2d(T(w)).numpy(), np.einsum("bchwij,ocij->bohw", sliding_window_view(im, (3, 3), axis=(2, 3)), w), 1e-4)
e = np.exp(a - a.max(1, keepdims=True))
check("softmax", T(a).softmax(1).numpy(), e / e.sum(1, keepdims=True), 1e-6)
check("argmax", T(a).argmax(1).numpy(), a.argmax(1), 0)
check("where", (T(a) > 0).where(T(a), 0.0).numpy(), np.where(a > 0, a, 0))
check("masked_fill", T(a).masked_fill(T(a) < 0.5, -1.0).numpy(), np.where(a < 0.5, -1, a))
src, idx = rng.standard_normal((4, 6)).astype(np.float32), rng.integers(0, 6, (4, 3)).astype(np.int32)
check("gather", T(src).gather(1, T(idx)).numpy(), np.take_along_axis(src, idx, 1))
sidx, sv, base = np.array([[0, 1, 2], [2, 0, 1]], np.int32), np.array([[1, 2, 3], [4, 5, 6]], np.float32), np.zeros((2, 4), np.float32)
exp = base.copy(); np.put_along_axis(exp, sidx, sv, 1)
check("scatter", T(base).scatter(1, T(sidx), T(sv)).numpy(), exp)
print(json.dumps(res))
""", dev=f"MOCK+NV:{renderer}")
  assert out and not failed_checks(out), failed_checks(out)

TC_MATMULS = """
from tinygrad import Context
cases = [("half", dtypes.half, dtypes.float), ("half acc half", dtypes.half, dtypes.half), ("bf16", dtypes.bfloat16, dtypes.float),
         ("tf32", dtypes.float, dtypes.float)] + ([("fp8e4m3", dtypes.fp8e4m3, dtypes.float), ("fp8e5m2", dtypes.fp8e5m2, dtypes.float)]
                                                  if FP8 else [])
for name, din, dout in cases:
  # every K residue of the m16n8k8 and m16n8k16 shapes (fp8: k32 tiles, K a multiple of 32 or no tensor cores at all)
  for m, k, n in ([(16, 32, 8), (32, 64, 24)] if name.startswith("fp8") else [(16, 8, 8), (16, 24, 16), (32, 40, 24), (16, 16, 8), (48, 56, 16)]):
    # quarter steps in [-2, 2): exact in every input type, and every product and sum exact in the accumulator
    a, b = (rng.integers(-8, 8, (m, k)) / 4).astype(np.float32), (rng.integers(-8, 8, (k, n)) / 4).astype(np.float32)
    with Context(ALLOW_TF32=1): got = T(a).cast(din).matmul(T(b).cast(din), dtype=dout).float().numpy()
    check(f"{name} {m}x{k}x{n}", got, a.astype(np.float64) @ b.astype(np.float64), 0)
print(json.dumps(res))
"""

@pytest.mark.parametrize("renderer", RENDERERS)
def test_matmuls_on_tensor_cores_every_shape_and_k_residue(renderer):
  # tinygrad's TC list for sm_89: m16n8k16 (f16 -> f32/f16, bf16 -> f32; the PTX renderer leaves bf16 to plain FMAs),
  # m16n8k8 (f16, and tf32 under ALLOW_TF32), m16n8k32 fp8 (CUDA renderer only); DEBUG=4 prints each kernel's source
  p = run(CHECKS + f"FP8 = {renderer == 'CUDA'}\n" + TC_MATMULS, dev=f"MOCK+NV:{renderer}", env={"DEBUG": "4"})
  assert p.returncode == 0, p.stderr[-3000:]
  forms = set(re.findall(r"mma\.sync\.aligned\.(m\d+n\d+k\d+\.row\.col\.\w+\.\w+\.\w+\.\w+)", p.stdout + p.stderr))
  want = {"m16n8k16.row.col.f32.f16.f16.f32", "m16n8k16.row.col.f16.f16.f16.f16", "m16n8k8.row.col.f32.f16.f16.f32",
          "m16n8k8.row.col.f16.f16.f16.f16", "m16n8k8.row.col.f32.tf32.tf32.f32"}
  if renderer == "CUDA": want |= {"m16n8k16.row.col.f32.bf16.bf16.f32", "m16n8k32.row.col.f32.e4m3.e4m3.f32", "m16n8k32.row.col.f32.e5m2.e5m2.f32"}
  assert forms == want, forms ^ want
  out = last_json(p.stdout)
  assert len(out) == (24 if renderer == "CUDA" else 20) and not failed_checks(out), failed_checks(out)

@pytest.mark.parametrize("renderer", RENDERERS)
def test_rand_matches_tinygrads_python_backend(renderer):
  out = run_json("""
import json, numpy as np
from tinygrad import Tensor
def draw(dev):
  Tensor.manual_seed(7)
  return Tensor.rand(300, device=dev).numpy()
nv, py = draw("NV"), draw("PYTHON")
print(json.dumps({"same as PYTHON": bool(np.array_equal(nv, py)), "in [0, 1)": bool(nv.min() >= 0 and nv.max() < 1)}))
""", dev=f"MOCK+NV:{renderer}")
  assert out == {"same as PYTHON": True, "in [0, 1)": True}

@pytest.mark.parametrize("renderer", RENDERERS)
def test_tinyjit_and_graph_replay(renderer):
  out = run_json(CHECKS + """
from tinygrad import TinyJit
from tinygrad.engine.realize import graph_cache
from tinygrad.runtime.graph.hcq import HCQGraph
@TinyJit
def f(x, y):
  s = (x * 2 + y).contiguous()
  return (s - s.max(1, keepdim=True).contiguous()).exp().sum(1).realize()
for i in range(5):
  x, y = rng.standard_normal((8, 16)).astype(np.float32), rng.standard_normal((8, 16)).astype(np.float32)
  s = x * 2 + y
  check(f"call {i}", f(T(x).realize(), T(y).realize()).numpy(), np.exp(s - s.max(1, keepdims=True)).sum(1), 1e-5)
res["graph used"] = any(isinstance(g, HCQGraph) for g in graph_cache.values())
print(json.dumps(res))
""", dev=f"MOCK+NV:{renderer}")
  assert out and not failed_checks(out) and out["graph used"], out

@pytest.mark.parametrize("renderer", RENDERERS)
def test_copies_peer_copy_and_a_tensor_sharded_over_two_gpus(renderer):
  out = run_json(CHECKS + """
big = rng.standard_normal(3 << 20).astype(np.float32)   # 12 MB: several copy chunks and huge-page VRAM buffers
check("roundtrip 12 MB", T(big).numpy(), big, 0)
small = np.arange(7, dtype=np.float32)
check("NV:0 -> NV:1", (T(small).to("NV:1") * 2).numpy(), small * 2, 0)
check("NV:1 -> NV:0", T(small, "NV:1").to("NV:0").numpy(), small, 0)
c = Tensor(small, device="CPU").realize()   # a CPU buffer the NV device maps (the host's pages at their own VA, never replaced)
check("CPU -> NV -> CPU", (c.to("NV") * 3).to("CPU").numpy(), small * 3, 0)
check("CPU data kept", c.numpy(), small, 0)
x = rng.standard_normal((8, 6)).astype(np.float32)
s = T(x).shard(("NV:0", "NV:1"), axis=0)
check("sharded x*3+1", (s * 3 + 1).numpy(), x * 3 + 1)
check("sharded sum", s.sum(0).numpy(), x.sum(0), 1e-5)
print(json.dumps(res))
""", dev=f"MOCK:0,1+NV:{renderer}")
  assert out and not failed_checks(out), failed_checks(out)

@pytest.mark.parametrize("renderer", RENDERERS)
def test_profiler_timestamps_are_monotonic_device_time(renderer):
  out = run_json("""
import json, numpy as np
from tinygrad import Tensor, Device
from tinygrad.device import Compiled
from tinygrad.helpers import ProfileRangeEvent
x = Tensor(np.ones((64, 64), np.float32), device="NV")
for _ in range(3): x = (x @ x / 64).realize()
Device["NV"].synchronize()
evs = [e for e in Compiled.profile_events if isinstance(e, ProfileRangeEvent) and str(e.device).startswith("NV")]
print(json.dumps({"n": len(evs), "ordered": all(float(e.en) > float(e.st) for e in evs),
                  "monotonic": all(float(b.st) >= float(a.en) for a, b in zip(evs, evs[1:]))}))
""", dev=f"MOCK+NV:{renderer}", env={"PROFILE": "1", "VIZ": "0"})
  assert out["n"] >= 3 and out["ordered"] and out["monotonic"], out

RAW = """
import time
from tinygrad import Device, Tensor
from tinygrad.device import TinyELF
HEAD = ".version VERSION\\n.target TARGET\\n.address_size 64\\n"
dev = Device["NV"]
prg = dev.runtime(TinyELF(dev.compiler.compile(HEAD + %r), %r, None, ()))
buf = Tensor.zeros(16, device="NV").contiguous().realize()
t0 = time.monotonic()
try: prg(buf.uop.buffer._buf, global_size=(1, 1, 1), local_size=(1, 1, 1), wait=True)
except RuntimeError as e: print("FAULT", str(e).splitlines()[0], f"after {time.monotonic() - t0:.1f} s")
print("AFTER", (Tensor([1.0, 2.0], device="NV:1") * 3).tolist())
"""
OOB = (".visible .entry oob(.param .u64 data0)\n{\n.reg .u64 %a;\nld.param.u64 %a, [data0+0];\nadd.u64 %a, %a, 1099511627776;\n"
       "st.global.u32 [%a+0], 7;\nret;\n}\n")
SPIN = ".visible .entry spin(.param .u64 data0)\n{\nL:\nbra L;\n}\n"

def test_out_of_bounds_kernel_is_tinygrads_mmu_fault_at_once_and_another_gpu_works():
  p = run(RAW % (OOB, "oob"), dev=NV2)
  fault = [ln for ln in p.stdout.splitlines() if ln.startswith("FAULT")]
  assert fault and "MMU fault: 0x" in fault[0] and "NV_PFAULT_FAULT_TYPE_PTE | WRITE" in fault[0], p.stdout + p.stderr[-2000:]
  assert float(fault[0].split("after ")[1].split()[0]) < 5   # not tinygrad's 30 s wait timeout
  assert "AFTER [3.0, 6.0]" in p.stdout
  assert "GPU memory fault: write of unmapped address" in p.stderr and "oob: st.global.u32" in p.stderr

def test_runaway_kernel_is_a_hang_error_after_the_watchdog():
  start = time.monotonic()
  p = run(RAW % (SPIN, "spin"), dev=NV2, env={"EMU_WATCHDOG_S": "2"})
  fault = [ln for ln in p.stdout.splitlines() if ln.startswith("FAULT")]
  assert fault and "SM 0 fault: esr=1" in fault[0], p.stdout + p.stderr[-2000:]
  assert "exceeded its watchdog budget of 2 s wall clock" in p.stderr
  assert "AFTER [3.0, 6.0]" in p.stdout and time.monotonic() - start < 60

@pytest.mark.parametrize("renderer", RENDERERS)
def test_ctrl_c_during_a_kernel_is_prompt_and_the_kernel_runs_exactly_once(renderer):
  # the channel runs on the engine thread: the interrupt lands in tinygrad's wait, the kernel completes once (ones + 2 = threes)
  out = run_json(SIGINT_AS_AT_A_TERMINAL + """
import json, os, signal, threading, time
from tinygrad import Tensor, Device
from mockgpu.engine import SCHEDULER
dev = Device["NV"]
p = Tensor.ones(8 << 20, device="NV").contiguous().realize()
p.assign(p + 1).realize(); dev.synchronize()
p.assign(p + 1).realize()
sent = []
threading.Timer(0.1, lambda: (sent.append(time.perf_counter()), os.kill(os.getpid(), signal.SIGINT))).start()
try: dev.synchronize(); caught = None
except KeyboardInterrupt: caught = time.perf_counter() - sent[0]
busy = any(e.pending() for e in SCHEDULER.engines)
v = p.numpy()
print(json.dumps([caught, busy, {str(k): int((v == k).sum()) for k in (1.0, 2.0, 3.0, 4.0)}]))
""", dev=f"MOCK+NV:{renderer}", env={"DEBUG": "0"})   # DEBUG >= 2 waits for each kernel: none would be in flight
  caught, busy, counts = out
  assert caught is not None and caught < 1.0, out
  assert busy, "the kernel finished before the interrupt: the test did not interrupt anything"
  assert counts == {"1.0": 0, "2.0": 0, "3.0": 8 << 20, "4.0": 0}, counts

BAD_STREAM = """
import json, time
from tinygrad import Device, Tensor
dev = Device["NV"]
(Tensor([1.0]) + 1).realize(); dev.synchronize()
q = dev.hw_compute_queue_t()
q.q(1 << 16 | 0xff << 4)   # a GRP0 tertiary header (SET_SUB_DEV_MASK): the mock does not model it
q.signal(dev.timeline_signal, dev.next_timeline()).submit(dev)
t0 = time.monotonic()
try: dev.synchronize(); err = None
except RuntimeError as e: err = str(e).splitlines()[0]
print(json.dumps([err, time.monotonic() - t0]))
"""

def test_a_stream_the_mock_cannot_decode_fails_the_wait_at_once_naming_it():
  # the timeline release after the bad header cannot be decoded; the channel's earlier signals say which semaphore it owed
  p = run(BAD_STREAM, dev="MOCK+NV:PTX")
  err, took = last_json(p.stdout)
  assert err is not None and took < 5, (err, took, p.stderr[-2000:])
  assert "subdevice-mask (GRP0 tertiary) header is not modelled" in p.stderr

def test_a_copy_from_a_faulted_gpu_fails_at_once_naming_the_fault():
  # NV:1's queue waits on NV:0's timeline, which NV:0's stopped channel will never release: the wait fails with that reason
  before, after = (RAW % (OOB, "oob")).split("t0 = time.monotonic()")
  p = run(before + 'x = (Tensor([1.0, 2.0], device="NV") * 2).realize()\n' + "t0 = time.monotonic()" + after.split('print("AFTER"')[0] + """
t0 = time.monotonic()
try: x.to("NV:1").numpy(); print("COPIED")
except RuntimeError as e: print("COPYFAULT", repr(str(e).splitlines()[0]), f"after {time.monotonic() - t0:.1f} s")
""", dev=NV2)
  fault = [ln for ln in p.stdout.splitlines() if ln.startswith("COPYFAULT")]
  assert fault and float(fault[0].split("after ")[1].split()[0]) < 5 and "''" not in fault[0], p.stdout + p.stderr[-2000:]
  assert "waits forever: GPU 0 will never release the semaphore" in p.stderr

def test_exit_after_ctrl_c_in_a_grid_of_many_short_blocks_is_prompt():
  # 2^31 - 1 blocks of one instruction each, far past a generous watchdog: the interrupt ends the script, and tinygrad's
  # teardown resets the queue, which the emulator sees at its next batch of blocks
  code = SIGINT_AS_AT_A_TERMINAL + RAW.split("buf = ")[0] % (".visible .entry k(.param .u64 data0)\n{\nret;\n}\n", "k") + """
import os, signal, threading
buf = Tensor.zeros(16, device="NV").contiguous().realize()
prg(buf.uop.buffer._buf, global_size=(2**31 - 1, 1, 1), local_size=(1, 1, 1))
threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
dev.synchronize()
"""
  t = time.monotonic()
  p = run(code, dev="MOCK+NV:PTX", env={"EMU_WATCHDOG_S": "300"}, timeout=120)
  assert "KeyboardInterrupt" in p.stderr and time.monotonic() - t < 30, p.stderr[-3000:]
