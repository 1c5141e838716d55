"""Test-suite-shaped workloads for `python -m mockgpu.bench --suite [ops|dtype]`: many distinct small tinygrad programs, each
run once or twice.

tinygrad's own test files (test_ops, test_dtype) spend their time this way: every test builds a few small tensors, schedules and
compiles kernels it has not seen before, runs them once and reads the result back. Steady-state figures (`mockgpu.bench`'s
programs) say nothing about that cost, so this module times such a sequence in a fresh process: each program from its inputs to
`.numpy()`, tinygrad's compile (`Compiler.compile_cached`, the disk cache lookup included) and, on a mock device, the mock's own
parts from `mockgpu.profile` (the emulator per kernel and its one-off work by kind, PM4, SDMA, ioctls, the host's waits). What
is left of the wall time is tinygrad's own work (scheduling, codegen, its runtime). Each program's results on the emulated
device are checked against the reference device's (`agree`), so a fast wrong answer cannot pass for a speed-up.

Two workloads, both ours (tinygrad's test files are not in the wheel): `ops`, 83 ops in the style of test_ops' forward checks
(45 x 65 float32 operands, a few other shapes and dtypes); `dtype`, in the style of test_dtype: casts between every pair of 17
dtypes, each dtype's elementwise ops on a few drawn values, small reductions (`_dtype_programs`).
"""
from __future__ import annotations
import json, os, resource, subprocess, sys, tempfile, time
import numpy as np
from emu.common import hostparts

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
    "int_ops": ([m], lambda a: ((a * 100).cast(dtypes.int32) * 7 // 3) % 5),
    "uint8_add": ([m], lambda a: (a.abs() * 50).clip(0, 255).cast(dtypes.uint8) + 200),   # (in range: a float cast out of it is undefined)
    "bitwise": ([m], lambda a: ((a * 100).cast(dtypes.int32) & 0x5a) ^ 3), "isnan": ([m], lambda a: (a / (a * 0)).isnan()),
    "sort": ([(4, 64)], lambda a: a.sort(1)[0]), "topk": ([(4, 64)], lambda a: a.topk(5, dim=1)[0]),
    "cross_entropy": ([(16, 10)], lambda a: a.sparse_categorical_crossentropy(T(np.arange(16, dtype=np.int32) % 10))),
    "dropout_free_linear": ([(16, 32), (32, 8), (8,)], lambda x, w, b: x.linear(w, b).relu()),
  }

DTYPES = ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16", "bfloat16", "float32", "float64",
          "fp8e4m3", "fp8e5m2", "fp8e4m3fnuz", "fp8e5m2fnuz")
CAST_VALUES = {"bool": [True, False, True, True, False, True], "int": [0, 1, 2, 3, 100, 7], "float": [0.0, 1.0, 2.5, 3.0, 100.0, 0.25]}

def _dtype_programs(T, dtypes) -> dict:
  """name -> (runs, function of a numpy Generator giving the result, tolerance): the shape of tinygrad's dtype test files. A cast between every
  ordered pair of DTYPES (bf16, fp8 and 64-bit integers included: the renderer emulates them in integer code where the target has
  no such type) on six values every type holds exactly (none negative: a negative float cast to an unsigned type is undefined);
  per dtype its elementwise ops, each run twice on values drawn afresh (as a property-based test draws them), and two small
  reductions. The draws keep every integer op in range (no overflow, no division by zero). Tolerance (`agree`): a float dtype's
  machine epsilon, half's for the fp8 types (tinygrad computes fp8 arithmetic in half on AMD targets and in float on the CPU), 0
  for the rest."""
  dt = {n: getattr(dtypes, n) for n in DTYPES}
  def eps(name) -> float:
    if kind(name) != "float": return 0.0
    return 2.0 ** -{"float16": 10, "bfloat16": 7, "float32": 23, "float64": 52}.get(name, 10)
  def kind(name): return "bool" if name == "bool" else "int" if dtypes.is_int(dt[name]) else "float"
  def draw(name, rng, n=6, positive=False) -> list:
    if kind(name) == "bool": return [bool(x) for x in rng.integers(0, 2, n)]
    if kind(name) == "int":   # signed within +-11: |x * y| <= 121 fits int8
      unsigned = dtypes.is_unsigned(dt[name])
      return [int(x) for x in rng.integers(1 if positive else 0 if unsigned else -11, 16 if unsigned else 12, n)]
    x = rng.integers(1, 17, n) / 4   # quarters in (0, 4], signed unless `positive`
    return [float(v) for v in (x if positive else x * rng.choice([-1, 1], n))]
  progs = {f"cast_{a}_{b}": (1, lambda rng, a=a, b=b: T(CAST_VALUES[kind(a)], dtype=dt[a]).cast(dt[b]), 0.0)   # (exact: every value fits)
           for a in DTYPES for b in DTYPES if a != b}
  for a in DTYPES:
    k, unsigned = kind(a), dtypes.is_unsigned(dt[a])
    if k == "bool": ops = {"and": lambda x, y: x & y, "or": lambda x, y: x | y, "xor": lambda x, y: x ^ y, "where": lambda x, y: x.where(y, x)}
    else:
      ops = {"add": lambda x, y: x + y, "mul": lambda x, y: x * y, "max": lambda x, y: x.maximum(y), "cmplt": lambda x, y: x < y,
             "where": lambda x, y: (x < y).where(x, y), **({} if unsigned else {"sub": lambda x, y: x - y, "neg": lambda x, y: -x})}
      ops.update({"idiv": lambda x, y: x // y, "mod": lambda x, y: x % y, "and": lambda x, y: x & y, "xor": lambda x, y: x ^ y,
                  "shl": lambda x, y: x << 1} if k == "int" else
                 {"div": lambda x, y: x / y, "sqrt": lambda x, y: y.sqrt(), "exp2": lambda x, y: x.exp2(), "log2": lambda x, y: y.log2()})
    for op, fn in ops.items():   # (y > 0 where the op divides by it or takes its root or logarithm)
      positive = op in ("idiv", "mod", "div", "sqrt", "log2")
      progs[f"{op}_{a}"] = (2, lambda rng, a=a, fn=fn, positive=positive:
                                fn(T(draw(a, rng), dtype=dt[a]), T(draw(a, rng, positive=positive), dtype=dt[a])), eps(a))
    if k != "bool":
      progs[f"sum_{a}"] = (1, lambda rng, a=a: T(draw(a, rng, 16), dtype=dt[a]).sum(), eps(a))
      if a not in ("fp8e4m3", "fp8e5m2", "fp8e4m3fnuz", "fp8e5m2fnuz"):   # (tinygrad 0.14 fails to render an fp8 max on AMD targets)
        progs[f"max_{a}"] = (1, lambda rng, a=a: T(draw(a, rng, 16), dtype=dt[a]).max(), eps(a))
  return progs

OPS_TOLERANCE = 2.0 ** -14   # float32 programs of many operations whose transcendental steps are approximations on both devices

def _op_programs(T, dtypes) -> dict:
  """`_ops` as programs: name -> (1 run, function of a numpy Generator giving the result on standard-normal float32 inputs,
  tolerance None: OPS_TOLERANCE, or the result type's machine epsilon where coarser, e.g. half)."""
  return {name: (1, lambda rng, shapes=shapes, fn=fn: fn(*[T(rng.standard_normal(s, dtype=np.float32)) for s in shapes]), None)
          for name, (shapes, fn) in _ops(T, dtypes).items()}

WORKLOADS = {"ops": _op_programs, "dtype": _dtype_programs}

def child(workload:str="ops", names:list[str]|None=None, results:str|None=None) -> int:
  """Run every program of `workload` (or those named) in this process (DEV set by the parent), each its runs: one JSON line with the
  times; `results`: also save each run's result there (numpy .npz, keys `name#run`, and `name!tolerance`) for the parent to compare
  between devices."""
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
  rng, progs, per_op, out = np.random.default_rng(0), WORKLOADS[workload](Tensor, dtypes), {}, {}
  if names: progs = {n: progs[n] for n in names}
  compile_s[0], t0, cpu0 = 0.0, time.perf_counter(), time.process_time()
  for name, (runs, fn, tolerance) in progs.items():
    t = time.perf_counter()
    for k in range(runs): out[f"{name}#{k}"] = fn(rng).numpy()
    per_op[name] = time.perf_counter() - t
    if tolerance is None: tolerance = max([OPS_TOLERANCE] + [float(np.finfo(r.dtype).eps) for r in [out[f"{name}#0"]] if r.dtype.kind == "f"])
    out[f"{name}!tolerance"] = np.float64(tolerance)
  total, cpu = time.perf_counter() - t0, time.process_time() - cpu0
  Device[Device.DEFAULT].synchronize()
  mock = None
  if PROFILE.enabled:
    mock = {k: v - before.get(k, 0.0) for k, v in PROFILE.seconds().items()}
    mock["dispatches"], mock["deferred"] = PROFILE.counts()   # deferred: timing replays never needed (nothing read the clock)
  if results: np.savez(results, **out)
  print(json.dumps({"seconds": total, "cpu_s": cpu, "ops": per_op, "compile_s": compile_s[0], "mock": mock,
                    "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}), flush=True)
  return 0

def agree(got:np.ndarray, want:np.ndarray, tolerance:float) -> bool:
  """Whether a result matches the reference's: the same shape, equal where `tolerance` is 0 (integers, booleans, casts of values
  every type holds), else within two tolerances relative to each value or to the result's largest magnitude (a GPU's reciprocal,
  square root and logarithm instructions differ from a CPU's correctly rounded ones by about one unit in the last place; a sum's
  rounding follows its terms, not its value), NaN where NaN."""
  if got.shape != want.shape: return False
  if not tolerance: return bool(np.array_equal(got, want, equal_nan=got.dtype.kind == want.dtype.kind == "f"))
  g, w = got.astype(np.float64), want.astype(np.float64)
  finite = np.abs(w[np.isfinite(w)])
  scale = max(1.0, float(finite.max())) if finite.size else 1.0
  return bool(np.allclose(g, w, rtol=2 * tolerance, atol=2 * tolerance * scale, equal_nan=True))

def differing(got:str, want:str) -> list[str]:
  """The programs whose results (the .npz files two children saved) do not `agree`."""
  with np.load(got) as g, np.load(want) as w:
    runs = [k for k in w.files if "#" in k]
    return sorted({k.split("#")[0] for k in runs if k not in g.files or not agree(g[k], w[k], float(w[k.split("#")[0] + "!tolerance"]))})

def profile_env(dev:str, eager:bool=False, caches:str|None=None, tinygrad_cache:str|None=None) -> dict:
  """The child's environment: DEV, and the mock's host-time profile on mock devices (its hooks are all this workload costs);
  `eager`: every native region compiled at its first run (EMU_REGIONS=eager); `caches`: the emulator's disk caches (steps,
  generated pcode, native objects) in this folder instead of the user's; `tinygrad_cache`: tinygrad's compile cache (CACHEDB) in
  this file."""
  env = {**os.environ, "DEV": dev}
  if eager: env["EMU_REGIONS"] = "eager"
  if caches is not None: env["EMU_STEP_CACHE"], env["EMU_PCODE_CACHE"] = os.path.join(caches, "steps"), os.path.join(caches, "pcode")
  if tinygrad_cache is not None: env["CACHEDB"] = tinygrad_cache
  if dev.startswith("MOCK"): env["MOCKGPU_PROFILE"] = "1"
  else: env.pop("MOCKGPU_PROFILE", None)
  if dev.startswith("NULL"): env["NULL_ALLOW_COPYOUT"] = "1"   # (tinygrad's NULL device runs nothing; `.numpy()` reads zeros)
  return env

def program_names(workload:str) -> list[str]:
  """The workload's programs, in order (tinygrad is imported, no device opened)."""
  from tinygrad import Tensor, dtypes
  return list(WORKLOADS[workload](Tensor, dtypes))

def measure(dev:str, ops:list[str]|None=None, timeout:float=1800, eager:bool=False, caches:str|None=None, workload:str="ops",
            tinygrad_cache:str|None=None, results:str|None=None, jobs:int=1) -> dict:
  """One run of the workload's programs (all, or those named) on `dev` in fresh child processes (`eager`, `caches`,
  `tinygrad_cache`: profile_env; `results`: child's): its JSON result. `jobs` > 1: the programs dealt round-robin over that many
  children run at once, sharing the caches, as pytest-xdist's workers do; `seconds` is then the slowest child's, the CPU
  seconds, compile seconds and the mock's parts are summed, and the results are saved together."""
  if jobs > 1:
    names = ops or program_names(workload)
    parts = [f"{results}.{i}.npz" if results else None for i in range(jobs)]
    runs = _children(dev, [(names[i::jobs], parts[i]) for i in range(jobs) if names[i::jobs]], timeout, eager, caches, workload, tinygrad_cache)
    if results:
      saved = {}
      for path in parts:
        if path and os.path.exists(path):
          with np.load(path) as f: saved.update({k: f[k] for k in f.files})
      np.savez(results, **saved)
    mocks = [r["mock"] for r in runs if r.get("mock")]
    return {"seconds": max(r["seconds"] for r in runs), "cpu_s": sum(r.get("cpu_s", 0.0) for r in runs), "jobs": jobs,
            "ops": {k: v for r in runs for k, v in r["ops"].items()}, "compile_s": sum(r["compile_s"] for r in runs),
            "mock": {k: sum(m.get(k, 0) for m in mocks) for k in mocks[0]} if mocks else None,
            "peak_rss_mib": max(r["peak_rss_mib"] for r in runs)}
  return _children(dev, [(ops, results)], timeout, eager, caches, workload, tinygrad_cache)[0]

def _children(dev:str, parts:list[tuple[list[str]|None, str|None]], timeout:float, eager:bool, caches:str|None, workload:str,
              tinygrad_cache:str|None) -> list[dict]:
  """Run a child per (programs, results path) of `parts`, all at once: their JSON results."""
  env = profile_env(dev, eager, caches, tinygrad_cache)
  procs = [subprocess.Popen([sys.executable, "-m", "mockgpu.bench_suite", workload, *(["--results", res] if res else []), *(names or [])],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for names, res in parts]
  out = []
  try:
    for proc in procs:
      try: stdout, stderr = proc.communicate(timeout=timeout)
      except subprocess.TimeoutExpired: raise TimeoutError(f"suite on {dev}: no result after {timeout:.0f}s") from None
      lines = [x for x in stdout.splitlines() if x.startswith("{")]
      if proc.returncode != 0 or not lines:
        err = [x for x in stderr.strip().splitlines() if not x.startswith(" ")]
        raise RuntimeError(f"suite on {dev} failed (exit {proc.returncode}): {err[-1] if err else 'no output'}")
      out.append(json.loads(lines[-1]))
  finally:
    for proc in procs:
      if proc.poll() is None: proc.kill()
  return out

def run(dev:str, ref:str, repeat:int, log=lambda msg: None, ops:list[str]|None=None, steady:bool=False, fresh:bool=False,
        bare:str|None=None, workload:str="ops", jobs:int=1) -> dict:
  """The workload's programs on `dev` and on `ref`, a first run each (it fills tinygrad's compile cache and the emulator's disk caches,
  as a developer's earlier runs would), then `repeat` runs each, in turn: {dev: ..., ref: ..., ratio}; per device `first` (the first
  run's seconds) and the run of median seconds, whose `ops` and `mock` figures the report shows; `own`: the mock's own host
  seconds of each run, the first included; `differ`: the programs whose first-run results on `dev` do not `agree` with `ref`'s.
  `steady`: the first run on `dev` compiles every native region (EMU_REGIONS=eager), so the timed runs see the state many earlier
  runs would have left (each region restored native from its first batch) instead of regions still gathering heat. `fresh`: the
  runs start from empty caches of their own (a temporary folder, removed after): the emulator's on `dev` and tinygrad's compile
  cache on both devices, i.e. what a first run on a new machine, or a CI job without caches, pays (`first`), and how the next runs
  converge. `bare`: a third device timed the same way, tinygrad rendering and compiling for the emulated target with no runtime
  at all (e.g. NULL:AMDLLVM:gfx1100): what tinygrad's own work for that target costs (`bare` in the result). `jobs`: each run in
  that many processes at once (`measure`), on every device."""
  if steady and fresh: raise ValueError("steady and fresh exclude each other")
  if workload not in WORKLOADS: raise ValueError(f"unknown workload {workload!r}; known: {', '.join(WORKLOADS)}")
  devs = (dev, ref) + ((bare,) if bare else ())
  runs: dict[str, list] = {d: [] for d in devs}
  first, own = {}, []
  with tempfile.TemporaryDirectory(prefix="emu-bench-caches-") as tmp:
    results = {d: os.path.join(tmp, f"results-{i}.npz") for i, d in enumerate(devs)}
    for k in range(repeat + 1):
      for i, d in enumerate(devs):
        eager = steady and k == 0 and d == dev
        log(f"suite: {d} run {k + 1} of {repeat + 1}" + (" (compiling every region)" if eager else ""))
        r = measure(d, ops, eager=eager, caches=tmp if fresh and d == dev else None, workload=workload,
                    tinygrad_cache=os.path.join(tmp, f"tinygrad-{i}.db") if fresh else None, results=results[d] if k == 0 else None, jobs=jobs)
        if d == dev: own.append(own_seconds(r.get("mock") or {}))
        if k == 0: first[d] = r["seconds"]
        else: runs[d].append(r)
    differ = differing(results[dev], results[ref]) if all(os.path.exists(results[d]) for d in (dev, ref)) else None
  med = {d: sorted(rs, key=lambda r: r["seconds"])[len(rs) // 2] | {"first": first[d]} for d, rs in runs.items()}
  return {"emulated": med[dev], "reference": med[ref], "ratio": med[dev]["seconds"] / med[ref]["seconds"],
          "first_ratio": first[dev] / first[ref], "ops": len(med[dev]["ops"]), "workload": workload, "jobs": jobs, "steady": steady, "fresh": fresh,
          "own": own, "differ": differ, **({"bare": med[bare] | {"dev": bare}} if bare else {})}

def own_seconds(mock:dict) -> float:
  """The mock's own host seconds in a run's profile: the emulator, PM4, SDMA and ioctls."""
  return sum(mock.get(k, 0.0) for k in ("emulated_s", "PM4_s", "SDMA_s", "ioctl_s"))

def report(res:dict, dev:str, ref:str) -> str:
  """The text `python -m mockgpu.bench --suite` prints."""
  emu, base, mock = res["emulated"], res["reference"], res["emulated"]["mock"] or {}
  own = own_seconds(mock)
  first = "first run, which compiled every native region," if res.get("steady") else \
    "first run, from empty emulator caches," if res.get("fresh") else "first run"
  kinds = {"ops": "small distinct ops", "dtype": "dtype programs (casts between every pair, elementwise ops, reductions)"}
  parts = ", ".join(f"{k} {mock.get(f'{k}_s', 0):.2f}" for k in hostparts.PARTS)
  differ = res.get("differ")
  where = "a fresh process" if res.get("jobs", 1) == 1 else f"{res['jobs']} fresh processes at once (the slowest one's time)"
  out = [f"suite: {res['ops']} {kinds[res.get('workload', 'ops')]} in {where} (median run; {first} in brackets)",
         f"  {dev}: {emu['seconds']:.2f} s ({emu['first']:.2f})   {ref}: {base['seconds']:.2f} s ({base['first']:.2f})   ratio {res['ratio']:.2f}"
         f" ({res.get('first_ratio', emu['first'] / base['first']):.2f})",
         f"  compile (tinygrad, disk cache included): {emu['compile_s']:.2f} s / {base['compile_s']:.2f} s",
         f"  the mock's own host time {own:.2f} s: emulator {mock.get('emulated_s', 0):.2f} (decode {mock.get('decode_s', 0):.2f}, execute "
         f"{mock.get('execute_s', 0):.2f}, timing replay {mock.get('timing_s', 0):.2f}), PM4 {mock.get('PM4_s', 0):.2f}, SDMA "
         f"{mock.get('SDMA_s', 0):.2f}, ioctl {mock.get('ioctl_s', 0):.2f}; " + (
           f"the rest, {emu['seconds'] - own:.2f} s, is tinygrad's ({base['seconds']:.2f} s on {ref})" if res.get("jobs", 1) == 1 else
           f"summed over the {res['jobs']} processes (their CPU seconds: {emu.get('cpu_s', 0):.2f}, {base.get('cpu_s', 0):.2f} on {ref})"),
         *([f"  tinygrad alone for the target, no runtime ({b['dev']}): {b['seconds']:.2f} s ({b['first']:.2f}); the emulated run's "
            f"{emu['seconds'] - b['seconds']:.2f} s more is the runtime's: the mock's own {own:.2f} s, the rest tinygrad's runtime code "
            "(its queues, signals, copies) and waits"] if (b := res.get("bare")) else []),
         f"  the emulator's one-off work (inside decode and execute; region compile on the background thread too): {parts}",
         f"  the mock's own host time in each run, the first included: {', '.join(f'{x:.2f}' for x in res.get('own', []))} s",
         f"  timing replays never run (nothing read the GPU clock): {mock.get('deferred', 0)} of {mock.get('dispatches', 0)} dispatches",
         "  ops with the largest excess (s on each): " + ", ".join(
           f"{n} {emu['ops'][n]:.3f}/{base['ops'][n]:.3f}" for n in sorted(emu["ops"], key=lambda n: base["ops"][n] - emu["ops"][n])[:8]),
         "  results: " + ("not compared" if differ is None else f"every program agrees with {ref}" if not differ else
                          f"{len(differ)} of {res['ops']} programs differ from {ref}: {', '.join(differ)}")]
  return "\n".join(out)

def _main(argv:list[str]) -> int:
  workload, rest = argv[0] if argv else "ops", argv[1:]
  results = rest[rest.index("--results") + 1] if "--results" in rest else None
  names = [a for i, a in enumerate(rest) if a != "--results" and (i == 0 or rest[i - 1] != "--results")]
  return child(workload, names, results)

if __name__ == "__main__": sys.exit(_main(sys.argv[1:]))
