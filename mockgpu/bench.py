"""End-to-end benchmark: `python -m mockgpu.bench [--programs P,...] [--repeat N] [--dev DEV] [--ref DEV] [--json]
[--suite [ops|dtype] [--steady | --fresh] [--bare DEV] [--jobs N]]`.

Runs each tinygrad program, steady state (compiled and warmed up first), once on an emulated device (default
`MOCKKFD+AMD`, the whole stack: tinygrad's runtime, the KFD mock, PM4, the emulator with its timing model) and once on a
reference device (default `CPU:LLVM`, no emulation) in separate child processes started in the same run, and reports
per program: seconds per step on each, their ratio (absolute times drift between machines, the ratio much less), the
emulator's wave-instructions per second, and each child's peak RSS (its own rusage, which it reports with its result).

Programs:
  matmul     fp32 256 x 256 @ 256 x 256
  half_matmul  fp16 256 x 256 @ 256 x 256 (tinygrad's tensor-core kernel: WMMA on RDNA, MFMA on CDNA)
  axpy       a * b + c over 2M floats
  mlp_step   one SGD step of a 2-layer MLP (64 x 256 inputs, 512 hidden, 64 outputs, MSE loss)
  dispatch   32 kernels in a row, each `+ 1` over 64 floats realized on its own: the whole stack's cost per dispatch
  conv_step  the gradients of two 5x5 convolutions with bias (1 -> 8 -> 8 channels, relu, sum) on a 4 x 1 x 14 x 14 input:
             small-grid and single-workgroup kernels whose loops branch on guarded loads
  softmax    softmax over the rows of a 1024 x 1024 matrix: tinygrad's grouped reductions (max, sum) share partial results
             through LDS and a barrier
  copy       4 MiB from the host to the device and back (a fresh Tensor from numpy, realized, then .numpy()): the per-MB copy
             cost of an interface (`--dev MOCKUSB+AMD --ref MOCKPCI+AMD` compares the USB bridge's SRAM windows with PCI)

`--suite [ops|dtype]` instead times a test-suite-shaped workload (mockgpu/bench_suite.py) in a fresh process, as tinygrad's test
files run, with the mock's host time split by part and every result checked against the reference device's: `ops` (the default),
83 distinct small ops, each compiled and run once; `dtype`, 468 programs in the shape of tinygrad's dtype tests (casts between
every pair of 17 dtypes, bf16, fp8 and 64-bit integers included; each dtype's elementwise ops on drawn values, run twice; small
reductions). `--steady` makes its first run compile every native region, so the timed runs show what a suite run many times
settles to; `--fresh` starts the runs from empty caches of their own (the emulator's, and tinygrad's compile cache on both
devices), so the first run is what a new machine or a cacheless CI job pays and the next ones show how it converges; `--bare
NULL:AMDLLVM:gfx1100` also times tinygrad rendering and compiling the programs for the emulated target with no runtime at all,
which tells tinygrad's own work for that target from the runtime's (the mock's and tinygrad's queue code); `--jobs 2` deals the
programs over two processes run at once that share the caches, the shape of `pytest -n 2` (background compiles then compete
with the other process instead of using an idle core).
"""
from __future__ import annotations
import argparse, json, os, resource, subprocess, sys, time
import numpy as np
from mockgpu import bench_suite

def _matmul(T, rng):
  a, b = (T(rng.standard_normal((256, 256), dtype=np.float32)).realize() for _ in range(2))
  return lambda: (a @ b).realize()

def _half_matmul(T, rng):
  from tinygrad import dtypes
  a, b = (T(rng.standard_normal((256, 256), dtype=np.float32)).cast(dtypes.half).realize() for _ in range(2))
  return lambda: (a @ b).realize()

def _axpy(T, rng):
  a, b, c = (T(rng.standard_normal(2 << 20, dtype=np.float32)).realize() for _ in range(3))
  return lambda: (a * b + c).realize()

def _mlp_step(T, rng):
  x, y = T(rng.standard_normal((64, 256), dtype=np.float32)).realize(), T(rng.standard_normal((64, 64), dtype=np.float32)).realize()
  w1 = T(rng.standard_normal((256, 512), dtype=np.float32) * 0.05).realize()
  w2 = T(rng.standard_normal((512, 64), dtype=np.float32) * 0.05).realize()
  def step():
    loss = ((x @ w1).relu() @ w2 - y).square().mean()
    g1, g2 = loss.gradient(w1, w2)
    w1.assign(w1 - 0.01 * g1).realize(); w2.assign(w2 - 0.01 * g2).realize()
  return step

def _dispatch(T, rng):
  a = T(rng.standard_normal(64, dtype=np.float32)).realize()
  def step():
    x = a
    for _ in range(32): x = (x + 1).realize()
  return step

def _conv_step(T, rng):
  w1, w2 = (T(rng.standard_normal(shape, dtype=np.float32) * 0.2).realize() for shape in ((8, 1, 5, 5), (8, 8, 5, 5)))
  b1, b2 = (T(rng.standard_normal(8, dtype=np.float32) * 0.1).realize() for _ in range(2))
  x = T(rng.standard_normal((4, 1, 14, 14), dtype=np.float32)).realize()
  def step():
    out = x.conv2d(w1, b1).relu().conv2d(w2, b2).relu().sum()
    T.realize(*out.gradient(w1, b1, w2, b2))
  return step

def _softmax(T, rng):
  x = T(rng.standard_normal((1024, 1024), dtype=np.float32)).realize()
  return lambda: x.softmax(1).realize()

def _copy(T, rng):
  host = rng.standard_normal(1 << 20, dtype=np.float32)
  return lambda: T(host).realize().numpy()

PROGRAMS = {"matmul": _matmul, "half_matmul": _half_matmul, "axpy": _axpy, "mlp_step": _mlp_step, "dispatch": _dispatch, "conv_step": _conv_step,
            "softmax": _softmax, "copy": _copy}

def _child(name:str, repeat:int) -> int:
  """Inside a process started with DEV set: warm the program up, then time `repeat` steps; one JSON line."""
  from tinygrad import Device, Tensor
  step = PROGRAMS[name](Tensor, np.random.default_rng(0))
  dev = Device[Device.DEFAULT]
  from emu.bench import settle
  def synced():
    step()
    dev.synchronize()
  synced()   # compile, and fill every cache
  settle(synced)   # until the emulator's native code is in place (no background compile runs in the timed steps)
  counters = None
  if os.environ.get("DEV", "").startswith("MOCK"):
    from mockgpu import stats
    counters = stats.totals
  before, t = counters() if counters else {}, time.perf_counter()
  for _ in range(repeat): step()
  dev.synchronize()
  secs = (time.perf_counter() - t) / repeat
  winst = (counters()["wave_instructions"] - before["wave_instructions"]) / repeat if counters else None
  print(json.dumps({"seconds": secs, "wave_instructions": winst, "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}),
        flush=True)
  return 0

def measure(name:str, dev:str, repeat:int, timeout:float=1800) -> dict:
  """One program on one device in a child process: its JSON result, with the child's own peak RSS (`peak_rss_mib`)."""
  try:
    proc = subprocess.run([sys.executable, "-m", "mockgpu.bench", "--child", name, "--repeat", str(repeat)], env={**os.environ, "DEV": dev},
                          capture_output=True, text=True, timeout=timeout)
  except subprocess.TimeoutExpired: raise TimeoutError(f"{name} on {dev}: no result after {timeout:.0f}s") from None
  lines = [x for x in proc.stdout.splitlines() if x.startswith("{")]
  if proc.returncode != 0 or not lines:
    err = proc.stderr.strip()
    raise RuntimeError(f"{name} on {dev} failed (exit {proc.returncode}): {err.splitlines()[-1] if err else 'no output'}")
  return json.loads(lines[-1])

def run(programs:list[str], dev:str, ref:str, repeat:int, log=lambda msg: None) -> dict:
  """Every program on `dev` and on `ref`: {program: {dev: ..., ref: ..., ratio, winst_per_s}}."""
  out = {}
  for name in programs:
    log(f"{name}: {dev}")
    emu = measure(name, dev, repeat)
    log(f"{name}: {ref}")
    base = measure(name, ref, repeat)
    out[name] = {"emulated": emu, "reference": base, "ratio": emu["seconds"] / base["seconds"],
                 "winst_per_s": emu["wave_instructions"] / emu["seconds"] if emu.get("wave_instructions") else None}
  return out

def main(argv=None) -> int:
  p = argparse.ArgumentParser(prog="python -m mockgpu.bench", description=__doc__.split("\n\n")[0])
  p.add_argument("--programs", default=",".join(PROGRAMS))
  p.add_argument("--repeat", type=int, default=3, help="timed steps per program and device (default 3)")
  p.add_argument("--dev", default="MOCKKFD+AMD", help="the emulated device (default MOCKKFD+AMD)")
  p.add_argument("--ref", default="CPU:LLVM", help="the reference device (default CPU:LLVM)")
  p.add_argument("--json", action="store_true")
  p.add_argument("--suite", nargs="?", const="ops", choices=list(bench_suite.WORKLOADS),
                 help="time a test-suite-shaped workload instead of the programs: ops (the default) or dtype")
  p.add_argument("--steady", action="store_true", help="--suite: its first run compiles every native region (EMU_REGIONS=eager), "
                 "so the timed runs show the steady state of a suite run many times")
  p.add_argument("--fresh", action="store_true", help="--suite: the runs start from empty caches of their own, the emulator's and "
                 "tinygrad's compile cache (a first run on a new machine or a CI job without caches, then how the next runs converge)")
  p.add_argument("--jobs", type=int, default=1, help="--suite: deal the programs over this many processes run at once, sharing the "
                 "caches, as pytest-xdist's -n does (default 1)")
  p.add_argument("--bare", help="--suite: also time the ops on this device, tinygrad for the emulated target with no runtime (e.g. "
                 "NULL:AMDLLVM:gfx1100: rendered and compiled, nothing run), to tell tinygrad's own work from the runtime's")
  p.add_argument("--child", help=argparse.SUPPRESS)
  a = p.parse_args(argv)
  if a.child: return _child(a.child, a.repeat)
  if a.bare and not a.suite: p.error("--bare goes with --suite")
  log = lambda msg: print(f"[bench] {msg}", file=sys.stderr, flush=True)   # noqa: E731
  if a.suite:
    if a.steady and a.fresh: p.error("--steady and --fresh exclude each other")
    if a.jobs < 1: p.error("--jobs takes a positive count")
    res = bench_suite.run(a.dev, a.ref, a.repeat, log, steady=a.steady, fresh=a.fresh, bare=a.bare, workload=a.suite, jobs=a.jobs)
    print(json.dumps(res, indent=1) if a.json else bench_suite.report(res, a.dev, a.ref))
    return 0
  names = a.programs.split(",")
  if unknown := [n for n in names if n not in PROGRAMS]: p.error(f"unknown program(s) {', '.join(unknown)}; known: {', '.join(PROGRAMS)}")
  res = run(names, a.dev, a.ref, a.repeat, log)
  if a.json: print(json.dumps(res, indent=1))
  else:
    print(f"{'program':10s} {a.dev + ' s/step':>22s} {a.ref + ' s/step':>18s} {'ratio':>7s} {'M winst/s':>10s} {'peak RSS MiB (emu/ref)':>24s}")
    for n, r in res.items():
      w = f"{r['winst_per_s'] / 1e6:.3f}" if r["winst_per_s"] else "-"
      print(f"{n:10s} {r['emulated']['seconds']:22.4f} {r['reference']['seconds']:18.4f} {r['ratio']:7.1f} {w:>10s} "
            f"{r['emulated']['peak_rss_mib']:>11.0f} / {r['reference']['peak_rss_mib']:.0f}")
  return 0

if __name__ == "__main__": sys.exit(main())
