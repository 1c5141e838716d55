"""A test-suite-shaped workload for `python -m mockgpu.bench --suite`: many distinct small tinygrad ops, each run once.

tinygrad's own test files (test_ops, test_dtype) spend their time this way: every test builds a few small tensors from
numpy, schedules and compiles kernels it has not seen before, runs them once and reads the result back. Steady-state
figures (`mockgpu.bench`'s programs) say nothing about that cost, so this module times such a sequence in a fresh
process: each op from numpy inputs to `.numpy()`, tinygrad's compile (`Compiler.compile_cached`, the disk cache
lookup included) and, on a mock device, the mock's own parts from `mockgpu.profile` (the emulator per kernel, PM4,
SDMA, ioctls, the host's waits). What is left of the wall time is tinygrad's own work (scheduling, codegen).

The ops are ours, written in the style of test_ops' forward checks (45 x 65 float32 operands, a few other shapes and
dtypes); they are not tinygrad's test files, which are not in the wheel.
"""
from __future__ import annotations
import json, os, resource, subprocess, sys, tempfile, time
import numpy as np

def _ops(T, dtypes) -> dict:
  """name -> (shapes of the float32 inputs, function of those tensors giving the result)."""
  m, sq, img = (45, 65), (32, 32), (2, 3, 16, 16)
  return {
    "add": ([m, m], lambda a, b: a + b), "sub": ([m, m], lambda a, b: a - b), "mul": ([m, m], lambda a, b: a * b),
    "div": ([m, m], lambda a, b: a / (b.abs() + 1)), "pow": ([m, m], lambda a, b: a.abs() ** b),
    "maximum": ([m, m], lambda a, b: a.maximum(b)), "minimum": ([m, m], lambda a, b: a.minimum(b)),
    "where": ([m, m], lambda a, b: (a > b).where(a, b)), "cmplt": ([m, m], lambda a, b: a < b), "eq": ([m, m], lambda a, b: a == b),
    "lerp": ([m, m], lambda a, b: a.lerp(b, 0.3)),
    "neg": ([m], lambda a: -a), "abs": ([m], lambda a: a.abs()), "sqrt": ([m], lambda a: a.abs().sqrt()),
    "rsqrt": ([m], lambda a: (a.abs() + 1).rsqrt()), "exp": ([m], lambda a: a.exp()), "exp2": ([m], lambda a: a.exp2()),
    "log": ([m], lambda a: (a.abs() + 1).log()), "log2": ([m], lambda a: (a.abs() + 1).log2()), "sin": ([m], lambda a: a.sin()),
    "cos": ([m], lambda a: a.cos()), "tan": ([m], lambda a: a.tan()), "relu": ([m], lambda a: a.relu()),
    "leaky_relu": ([m], lambda a: a.leaky_relu(0.1)), "sigmoid": ([m], lambda a: a.sigmoid()), "tanh": ([m], lambda a: a.tanh()),
    "gelu": ([m], lambda a: a.gelu()), "swish": ([m], lambda a: a.swish()), "softplus": ([m], lambda a: a.softplus()),
    "elu": ([m], lambda a: a.elu()), "erf": ([m], lambda a: a.erf()), "floor": ([m], lambda a: (a * 3).floor()),
    "ceil": ([m], lambda a: (a * 3).ceil()), "round": ([m], lambda a: (a * 3).round()), "clip": ([m], lambda a: a.clip(-0.5, 0.5)),
    "reciprocal": ([m], lambda a: (a.abs() + 1).reciprocal()), "square": ([m], lambda a: a.square()), "sign": ([m], lambda a: a.sign()),
    "sum": ([m], lambda a: a.sum()), "sum_axis0": ([m], lambda a: a.sum(0)), "sum_axis1": ([m], lambda a: a.sum(1)),
    "max_axis1": ([m], lambda a: a.max(1)), "min": ([m], lambda a: a.min()), "mean": ([m], lambda a: a.mean(1)),
    "std": ([m], lambda a: a.std(0)), "var": ([m], lambda a: a.var(1)), "argmax": ([m], lambda a: a.argmax(1)),
    "argmin": ([m], lambda a: a.argmin(0)), "cumsum": ([m], lambda a: a.cumsum(1)), "logsumexp": ([m], lambda a: a.logsumexp(1)),
    "softmax": ([m], lambda a: a.softmax(1)), "log_softmax": ([m], lambda a: a.log_softmax(1)),
    "layernorm": ([m], lambda a: a.layernorm(1)), "matmul": ([(45, 65), (65, 33)], lambda a, b: a @ b),
    "matmul_sq": ([sq, sq], lambda a, b: a @ b), "einsum": ([(8, 9, 10), (8, 10, 11)], lambda a, b: T.einsum("bij,bjk->bik", a, b)),
    "conv2d": ([img, (4, 3, 3, 3)], lambda a, w: a.conv2d(w)),
    "conv2d_pad_stride": ([img, (4, 3, 3, 3)], lambda a, w: a.conv2d(w, padding=1, stride=2)),
    "max_pool2d": ([img], lambda a: a.max_pool2d()), "avg_pool2d": ([img], lambda a: a.avg_pool2d()),
    "transpose": ([m], lambda a: a.T.contiguous()), "permute": ([img], lambda a: a.permute(3, 1, 0, 2).contiguous()),
    "pad": ([m], lambda a: a.pad(((1, 2), (3, 0)))), "shrink": ([m], lambda a: a[3:40, 5:60:2]), "flip": ([m], lambda a: a.flip(1)),
    "expand": ([(45, 1)], lambda a: a.expand(45, 65) + 1), "cat": ([m, m], lambda a, b: a.cat(b, dim=1)),
    "stack": ([m, m], lambda a, b: T.stack(a, b, dim=0)), "repeat": ([(5, 6)], lambda a: a.repeat(3, 2)),
    "gather": ([m], lambda a: a.gather(1, (a.abs() * 10).cast(dtypes.int32).clip(0, 64))),
    "triu": ([m], lambda a: a.triu(1)), "one_hot": ([(45,)], lambda a: (a.abs() * 5).cast(dtypes.int32).one_hot(8)),
    "cast_int32": ([m], lambda a: (a * 100).cast(dtypes.int32)), "cast_half": ([m], lambda a: a.cast(dtypes.half) * 2),
    "half_matmul": ([sq, sq], lambda a, b: a.cast(dtypes.half) @ b.cast(dtypes.half)),
    "int_ops": ([m], lambda a: ((a * 100).cast(dtypes.int32) * 7 // 3) % 5), "uint8_add": ([m], lambda a: (a * 50).cast(dtypes.uint8) + 200),
    "bitwise": ([m], lambda a: ((a * 100).cast(dtypes.int32) & 0x5a) ^ 3), "isnan": ([m], lambda a: (a / (a * 0)).isnan()),
    "sort": ([(4, 64)], lambda a: a.sort(1)[0]), "topk": ([(4, 64)], lambda a: a.topk(5, dim=1)[0]),
    "cross_entropy": ([(16, 10)], lambda a: a.sparse_categorical_crossentropy(T(np.arange(16, dtype=np.int32) % 10))),
    "dropout_free_linear": ([(16, 32), (32, 8), (8,)], lambda x, w, b: x.linear(w, b).relu()),
  }

def child(names:list[str]|None=None) -> int:
  """Run every op (or those named) once in this process (DEV set by the parent): one JSON line with the times."""
  from tinygrad import Device, Tensor, dtypes
  from tinygrad.device import Compiler
  compile_s, compile_cached = [0.0], Compiler.compile_cached
  def timed(self, src):
    t = time.perf_counter()
    try: return compile_cached(self, src)
    finally: compile_s[0] += time.perf_counter() - t
  Compiler.compile_cached = timed
  Tensor([1.0, 2.0]).add(1).numpy()   # open the device: a test suite does this once per process, not per test
  from mockgpu.profile import PROFILE
  before = PROFILE.seconds()
  rng, ops, per_op = np.random.default_rng(0), _ops(Tensor, dtypes), {}
  if names: ops = {n: ops[n] for n in names}
  compile_s[0], t0 = 0.0, time.perf_counter()
  for name, (shapes, fn) in ops.items():
    t = time.perf_counter()
    ins = [Tensor(rng.standard_normal(s, dtype=np.float32)) for s in shapes]
    fn(*ins).numpy()
    per_op[name] = time.perf_counter() - t
  total = time.perf_counter() - t0
  Device[Device.DEFAULT].synchronize()
  mock = None
  if PROFILE.enabled:
    mock = {k: v - before.get(k, 0.0) for k, v in PROFILE.seconds().items()}
    mock["dispatches"], mock["deferred"] = PROFILE.counts()   # deferred: timing replays never needed (nothing read the clock)
  print(json.dumps({"seconds": total, "ops": per_op, "compile_s": compile_s[0], "mock": mock,
                    "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}), flush=True)
  return 0

def profile_env(dev:str, eager:bool=False, caches:str|None=None) -> dict:
  """The child's environment: DEV, and the mock's host-time profile on mock devices (its hooks are all this workload costs);
  `eager`: every native region compiled at its first run (EMU_REGIONS=eager); `caches`: the emulator's disk caches (steps,
  generated pcode, native objects) in this folder instead of the user's."""
  env = {**os.environ, "DEV": dev}
  if eager: env["EMU_REGIONS"] = "eager"
  if caches is not None: env["EMU_STEP_CACHE"], env["EMU_PCODE_CACHE"] = os.path.join(caches, "steps"), os.path.join(caches, "pcode")
  if dev.startswith("MOCK"): env["MOCKGPU_PROFILE"] = "1"
  else: env.pop("MOCKGPU_PROFILE", None)
  if dev.startswith("NULL"): env["NULL_ALLOW_COPYOUT"] = "1"   # (tinygrad's NULL device runs nothing; `.numpy()` reads zeros)
  return env

def measure(dev:str, ops:list[str]|None=None, timeout:float=1800, eager:bool=False, caches:str|None=None) -> dict:
  """One run of the ops (all, or those named) on `dev` in a fresh child process (`eager`, `caches`: profile_env): its JSON result."""
  cmd = [sys.executable, "-m", "mockgpu.bench_suite", *(ops or [])]
  try: proc = subprocess.run(cmd, env=profile_env(dev, eager, caches), capture_output=True, text=True, timeout=timeout)
  except subprocess.TimeoutExpired: raise TimeoutError(f"suite on {dev}: no result after {timeout:.0f}s") from None
  lines = [x for x in proc.stdout.splitlines() if x.startswith("{")]
  if proc.returncode != 0 or not lines:
    err = [x for x in proc.stderr.strip().splitlines() if not x.startswith(" ")]
    raise RuntimeError(f"suite on {dev} failed (exit {proc.returncode}): {err[-1] if err else 'no output'}")
  return json.loads(lines[-1])

def run(dev:str, ref:str, repeat:int, log=lambda msg: None, ops:list[str]|None=None, steady:bool=False, fresh:bool=False,
        bare:str|None=None) -> dict:
  """The ops on `dev` and on `ref`, a first run each (it fills tinygrad's compile cache and the emulator's disk caches, as a
  developer's earlier runs would), then `repeat` runs each, in turn: {dev: ..., ref: ..., ratio}; per device `first` (the first
  run's seconds) and the run of median seconds, whose `ops` and `mock` figures the report shows; `own`: the mock's own host
  seconds of each run, the first included. `steady`: the first run on `dev` compiles every native region (EMU_REGIONS=eager), so
  the timed runs see the state many earlier runs would have left (each region restored native from its first batch) instead of
  regions still gathering heat. `fresh`: the runs on `dev` start from empty emulator caches of their own (a temporary folder,
  removed after; tinygrad's compile cache stays): what a first run on a new machine, or a CI job without caches, pays, and how
  the next runs converge. `bare`: a third device timed the same way, tinygrad rendering and compiling for the emulated target
  with no runtime at all (e.g. NULL:AMDLLVM:gfx1100): what tinygrad's own work for that target costs (`bare` in the result)."""
  if steady and fresh: raise ValueError("steady and fresh exclude each other")
  devs = (dev, ref) + ((bare,) if bare else ())
  runs: dict[str, list] = {d: [] for d in devs}
  first, own = {}, []
  with tempfile.TemporaryDirectory(prefix="emu-bench-caches-") as tmp:
    for k in range(repeat + 1):
      for d in devs:
        eager = steady and k == 0 and d == dev
        log(f"suite: {d} run {k + 1} of {repeat + 1}" + (" (compiling every region)" if eager else ""))
        r = measure(d, ops, eager=eager, caches=tmp if fresh and d == dev else None)
        if d == dev: own.append(own_seconds(r.get("mock") or {}))
        if k == 0: first[d] = r["seconds"]
        else: runs[d].append(r)
  med = {d: sorted(rs, key=lambda r: r["seconds"])[len(rs) // 2] | {"first": first[d]} for d, rs in runs.items()}
  return {"emulated": med[dev], "reference": med[ref], "ratio": med[dev]["seconds"] / med[ref]["seconds"], "ops": len(med[dev]["ops"]),
          "steady": steady, "fresh": fresh, "own": own, **({"bare": med[bare] | {"dev": bare}} if bare else {})}

def own_seconds(mock:dict) -> float:
  """The mock's own host seconds in a run's profile: the emulator, PM4, SDMA and ioctls."""
  return sum(mock.get(k, 0.0) for k in ("emulated_s", "PM4_s", "SDMA_s", "ioctl_s"))

def report(res:dict, dev:str, ref:str) -> str:
  """The text `python -m mockgpu.bench --suite` prints."""
  emu, base, mock = res["emulated"], res["reference"], res["emulated"]["mock"] or {}
  own = own_seconds(mock)
  first = "first run, which compiled every native region," if res.get("steady") else \
    "first run, from empty emulator caches," if res.get("fresh") else "first run"
  out = [f"suite: {res['ops']} small ops, each once in a fresh process (median run; {first} in brackets)",
         f"  {dev}: {emu['seconds']:.2f} s ({emu['first']:.2f})   {ref}: {base['seconds']:.2f} s ({base['first']:.2f})   ratio {res['ratio']:.2f}",
         f"  compile (tinygrad, disk cache included): {emu['compile_s']:.2f} s / {base['compile_s']:.2f} s",
         f"  the mock's own host time {own:.2f} s: emulator {mock.get('emulated_s', 0):.2f} (decode {mock.get('decode_s', 0):.2f}, execute "
         f"{mock.get('execute_s', 0):.2f}, timing replay {mock.get('timing_s', 0):.2f}), PM4 {mock.get('PM4_s', 0):.2f}, SDMA "
         f"{mock.get('SDMA_s', 0):.2f}, ioctl {mock.get('ioctl_s', 0):.2f}; the rest, {emu['seconds'] - own:.2f} s, is tinygrad's "
         f"({base['seconds']:.2f} s on {ref})",
         *([f"  tinygrad alone for the target, no runtime ({b['dev']}): {b['seconds']:.2f} s ({b['first']:.2f}); the emulated run's "
            f"{emu['seconds'] - b['seconds']:.2f} s more is the runtime's: the mock's own {own:.2f} s, the rest tinygrad's runtime code "
            "(its queues, signals, copies) and waits"] if (b := res.get("bare")) else []),
         f"  the mock's own host time in each run, the first included: {', '.join(f'{x:.2f}' for x in res.get('own', []))} s",
         f"  timing replays never run (nothing read the GPU clock): {mock.get('deferred', 0)} of {mock.get('dispatches', 0)} dispatches",
         "  ops with the largest excess (s on each): " + ", ".join(
           f"{n} {emu['ops'][n]:.3f}/{base['ops'][n]:.3f}" for n in sorted(emu["ops"], key=lambda n: base["ops"][n] - emu["ops"][n])[:8])]
  return "\n".join(out)

if __name__ == "__main__": sys.exit(child(sys.argv[1:]))
