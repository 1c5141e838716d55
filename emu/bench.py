"""The emulator's performance benchmark: `python -m emu.bench`.

Measures, on emulated gfx1100, in CPU seconds of this process (time.process_time: steadier than wall time on a shared machine,
and the emulator is single-threaded):
  valu      steady-state wave-instructions/s of a hand-built VALU-bound loop (8 x v_fma_f32 + s_add/s_cmp/s_cbranch per trip)
  matmul    steady-state wave-instructions/s of tinygrad's fp32 --size^3 matmul kernel (AMD LLVM renderer, loaded from its ELF)
  memory    steady-state wave-instructions/s of a memory-bound elementwise kernel (a * b + c over --floats floats)
  boxmuller steady-state wave-instructions/s of tinygrad's Box-Muller kernel (cos(2 pi u) * sqrt(-2 log(1 - w)), the body of
            Tensor.randn) over 64K uniform floats: its waves take different branches (cos's range reduction), so its CUs run
            different instruction streams
  cold      ms per first-seen instruction (decode + step build + pcode op), with the pcode disk cache warm and cold
  timing    extra CPU time of the timing model (timing on vs off) on the valu, matmul and boxmuller workloads: repeated
            (a dispatch whose CU workloads an earlier one replayed takes their cycles from the replay memo) and `_new` (the
            memo's streams and end cycles emptied before each run: every CU workload replayed); the three are timed in turn
            for max(7, --repeat) rounds and their medians compared (single runs of a few ms swing too much on a shared machine);
            and the CU replay's own rate on boxmuller's CU workloads, compiled (emu/amd/cu_native.py) and in Python
            (cu_model.py), in replayed wave-instructions/s
  nv        the PTX emulator (emu/nv), timing model on (sm_89): warp-instructions/s of tinygrad's fp32 (2 x --size)^3 matmul
            (PTX renderer) and of an FMA loop (--waves warps x --iters trips of 8 dependent-free fma.rn.f32), the timing model's
            extra wall time on the matmul, and ms per new program (parse + validate)
  e2e       tinygrad programs end to end (mockgpu.bench's: fp32 and fp16 matmul, a*b+c, an MLP and a conv training step, 32 tiny
            dispatches) under DEV=MOCKKFD+AMD against the same programs on
            DEV=CPU:LLVM, each in its own child process: s/step, the ratio, wave-instructions/s, each child's peak RSS. It is
            the harness's benchmark (`python -m mockgpu.bench`), run as a child process: nothing in emu imports mockgpu
Each throughput figure first runs the workload until no round compiles anything or runs a region on the numpy path while it
gathers heat (`settle`: native regions in place as many earlier runs leave them), then times the best of --repeat runs.

  --workloads valu,matmul,...   only these (default: all)
  --size N                      matmul is N x N x N (default 256: 128 waves); nv's matmul is --nv-size (default 256)
  --floats N                    memory's a * b + c length (default 2M)
  --waves N                     waves in the valu loop (default 256)
  --iters N                     loop trips of the valu kernel (default 64)
  --repeat N                    timed runs per figure, best kept (default 2)
  --json                        print one JSON object at the end instead of the summary table
"""
from __future__ import annotations
import argparse, contextlib, gc, json, math, os, statistics, subprocess, sys, tempfile, time
import numpy as np

def _log(msg:str): print(f"[bench] {msg}", file=sys.stderr, flush=True)

def _timed(fn, repeat:int, before=None):
  """(best CPU seconds, last result) over `repeat` calls, each after an untimed call of `before` (if given)."""
  best, res = float("inf"), None
  for _ in range(repeat):
    if before is not None: before()
    gc.collect()   # the garbage of what ran before (a replay's streams) is not this run's to collect
    t = time.process_time()
    res = fn()
    best = min(best, time.process_time() - t)
  return best, res

# ---- workloads: each returns a zero-argument callable that runs one dispatch and returns DispatchStats ----
def valu_loop(waves:int, iters:int, timing:bool=True):
  """A VALU-bound loop: `iters` trips of 8 independent v_fma_f32 plus the scalar loop counter and branch."""
  from tinygrad.runtime.autogen.amd.rdna3.ins import s, v, s_mov_b32, s_add_u32, s_cmp_lg_u32, s_cbranch_scc1, v_fma_f32, s_endpgm
  from emu.amd.api import Dispatch
  from emu.amd.gpu import AMDGPU
  from emu.amd.kernel import Buffers
  body = [v_fma_f32(v[1 + i], v[1 + i], v[0], 1.0) for i in range(8)] + [s_add_u32(s[2], s[2], -1), s_cmp_lg_u32(s[2], 0)]
  back = -(sum(len(i.to_bytes()) for i in body) + 4) // 4   # simm16 counts dwords from the next instruction
  code = b"".join(i.to_bytes() for i in [s_mov_b32(s[2], iters), *body, s_cbranch_scc1(simm16=back & 0xffff), s_endpgm()])
  bufs = Buffers()
  addr = bufs.add(np.frombuffer(code + b"\0" * 64, dtype=np.uint8).copy(), "code", writable=False)
  wg = 256
  d = Dispatch(code_addr=addr, grid=(max(1, waves * 32 // wg), 1, 1), workgroup=(wg, 1, 1), user_sgprs=[], rsrc2=0, wave32=True)
  gpu = AMDGPU("gfx1100", bufs.mem, timing=timing)
  return lambda: gpu.dispatch(d)

def tinygrad_kernel(fn, shapes:list[tuple], out_numel:int, timing:bool=True, uniform:bool=False):
  """A tinygrad-rendered kernel on random inputs, standard normal or (`uniform`) in [0, 1); the output buffer is reused between runs."""
  from emu.amd.gpu import AMDGPU
  from emu.amd.kernel import Buffers, compile_kernel, kernel_dispatch
  k = compile_kernel(fn, *shapes)
  rng = np.random.default_rng(0)
  inputs = [(rng.random(s) if uniform else rng.standard_normal(s)).astype(np.float32) for s in shapes]
  out = np.zeros(out_numel, dtype=np.float32)
  bufs = Buffers()
  d = kernel_dispatch(k, inputs, out, bufs)
  gpu = AMDGPU("gfx1100", bufs.mem, timing=timing)
  return lambda: gpu.dispatch(d)

def matmul(n:int, timing:bool=True): return tinygrad_kernel(lambda a, b: a @ b, [(n, n), (n, n)], n * n, timing)
def memory(n:int, timing:bool=True): return tinygrad_kernel(lambda a, b, c: a * b + c, [(n,)] * 3, n, timing)
def boxmuller(n:int, timing:bool=True):
  return tinygrad_kernel(lambda u, w: (u * (2 * math.pi)).cos() * ((1 - w).log() * -2).sqrt(), [(n,)] * 2, n, timing, uniform=True)

def nv_matmul(n:int, timing:bool=True):
  """tinygrad's fp32 n x n matmul as the PTX renderer writes it, run by emu.nv.simt on an sm_89 board, with or without the
  timing model (returns its LaunchStats)."""
  from emu.common.memory import MemoryMap
  from emu.nv import isa, simt
  from emu.nv.kernel import render
  rk = render(lambda a, b: a @ b, (n, n), (n, n))
  kernel = isa.parse(rk.ptx).kernels[rk.name]
  rng = np.random.default_rng(0)
  arrays, out, mem = [rng.standard_normal((n, n)).astype(np.float32) for _ in range(2)], np.zeros(n * n, np.float32), MemoryMap()
  for arr in (*arrays, out): mem.map(arr.ctypes.data, arr.nbytes, backing=arr.view(np.uint8).reshape(-1))
  args = [(out if i == -1 else arrays[i]).ctypes.data for i in rk.order]
  from emu.nv.boards import board
  return lambda: simt.run(kernel, rk.grid, rk.block, args, mem, board=board("sm_89") if timing else None)

def nv_fma_loop(warps:int, iters:int):
  """A hand-written PTX FMA loop: each of warps x 32 threads runs `iters` trips of 8 independent fma.rn.f32 and a loop branch."""
  from emu.common.memory import MemoryMap
  from emu.nv import isa, simt
  from emu.nv.boards import board
  body = "".join(f"fma.rn.f32 %f{i}, %f{i}, %x, %y;\n" for i in range(8))
  text = (".version 7.8\n.target sm_89\n.address_size 64\n.visible .entry fma_loop(.param .u64 out)\n{\n.reg .f32 %f<8>, %x, %y;\n"
          ".reg .u32 %i;\n.reg .pred %p;\nmov.f32 %x, 0f3f800001;\nmov.f32 %y, 0f3c23d70a;\nmov.u32 %i, 0;\n"
          + "".join(f"mov.f32 %f{i}, 0f3f800000;\n" for i in range(8)) +
          f"LOOP:\n{body}add.u32 %i, %i, 1;\nsetp.lt.u32 %p, %i, {iters};\n@%p bra LOOP;\nret;\n}}\n")
  kernel = isa.parse(text).kernels["fma_loop"]
  return lambda: simt.run(kernel, (warps,), (32,), [0], MemoryMap(), board=board("sm_89"))

def nv(n:int, repeat:int, warps:int, iters:int) -> dict:
  """The nv workload: matmul throughput and the cost of parsing a new program."""
  from emu.nv import isa
  from emu.nv.kernel import render
  run, untimed = nv_matmul(n), nv_matmul(n, timing=False)
  run(), untimed()
  secs, stats = _timed(run, repeat)
  off_s, _ = _timed(untimed, repeat)
  fma = nv_fma_loop(warps, iters)
  fma()
  fma_s, fma_stats = _timed(fma, repeat)
  text = render(lambda a, b: a @ b, (n, n), (n, n)).ptx
  parse_s, _ = _timed(lambda: isa.parse(text), repeat)
  return {"warp_instructions": stats.warp_instructions, "threads": stats.threads, "seconds": secs, "cycles": stats.cycles,
          "warp_inst_per_s": stats.warp_instructions / secs, "timing_overhead": secs / off_s - 1, "ms_per_parse": parse_s * 1e3,
          "fma_warp_inst_per_s": fma_stats.warp_instructions / fma_s,
          "ptx_lines": text.count("\n")}

def settle(*runs, quiet:int=3, most:int=40) -> bool:
  """Run each of `runs` (untimed) until `quiet` rounds in a row queue no background compile and run no region on the numpy path
  while it gathers heat, and every compile is done: native regions made hot (code a dispatch runs only a few batches of gathers
  its heat over several rounds), and QUICK ones promoted to FULL (emu.amd.regions), are then in place, so that neither a compile
  nor a region still warming lands in a timed run. At most `most` rounds: False (and a line on stderr) when they did not settle."""
  from emu import native
  from emu.amd.regions import Region
  calm = 0
  for _ in range(most):
    queued, warming = native.NATIVE.submitted, Region.warming
    for run in runs: run()
    native.NATIVE.wait_idle()
    calm = calm + 1 if native.NATIVE.submitted == queued and Region.warming == warming else 0
    if calm == quiet: return True
  _log(f"warm-up: still compiling or warming regions after {most} rounds; the timed runs include that")
  return False

def throughput(make, repeat:int, before=None) -> dict:
  """Steady state of the dispatch `make()` returns: untimed runs until nothing more compiles (`settle`), then the best of `repeat`
  (each after `before`)."""
  run = make()
  settle(run)
  secs, stats = _timed(run, repeat, before)
  return {"wave_instructions": stats.wave_instructions, "waves": stats.waves, "seconds": secs, "winst_per_s": stats.wave_instructions / secs}

def timing_overhead(make, rounds:int) -> dict:
  """CPU seconds (medians over `rounds`) of the dispatch make(timing): off, on (repeated) and new (every CU workload replayed), timed
  in turn so that the machine's drift touches all three alike. Replays stay in this process (EMU_REPLAY_JOBS=0): a worker's
  CPU time is not this process's."""
  from emu.amd.timing import REPLAY_MEMO
  off, on = make(False), make(True)
  with _env(EMU_REPLAY_JOBS="0"):
    settle(off, on)
    times: dict[str, list[float]] = {"off": [], "on": [], "new": []}
    for _ in range(rounds):
      for key, run, before in (("off", off, None), ("on", on, None), ("new", on, REPLAY_MEMO.forget_results)):
        times[key].append(_timed(run, 1, before)[0])
  return {key: statistics.median(v) for key, v in times.items()}

def replay_rates(make, repeat:int) -> dict:
  """The CU replay's own speed on the CU workloads of the dispatch `make()` returns (timing on, every workload replayed):
  replayed wave-instructions per second of the compiled replay (best of `repeat`) and of the Python one (once; None without the
  compiled replay), and whether both gave the same end cycles."""
  from emu.amd import cu_model, cu_native, timing
  jobs: list[tuple] = []
  real = timing.TimingModel._job
  def capture(self, streams, ids):
    jobs.append(job := real(self, streams, ids))
    return job
  run = make()
  timing.TimingModel._job = capture
  try:
    timing.REPLAY_MEMO.forget_results()
    with _env(EMU_REPLAY_JOBS="0"): run()
  finally: timing.TimingModel._job = real
  n = sum(len(s) for job in jobs for s in job[0])
  python_s, python = _timed(lambda: [cu_model.simulate_end(*job) for job in jobs], 1)
  compiled = cu_native.LIBRARY.get(wait=True) is not None
  native_s, native = _timed(lambda: [cu_native.simulate_end(*job) for job in jobs], repeat) if compiled else (None, None)
  return {"wave_instructions": n, "workloads": len(jobs), "python_winst_per_s": n / python_s,
          "compiled_winst_per_s": n / native_s if compiled else None, "same": native == python if compiled else None}

def _clear_caches():
  from emu.amd import step_build, decode, semantics
  from emu.amd.step_cache import STEP_CACHE
  from emu.pcode import compiler
  decode._cache.clear(); step_build._steps.clear(); semantics._compile.cache_clear(); compiler.compile_op.cache_clear(); STEP_CACHE.forget()

@contextlib.contextmanager
def _env(**values):
  """os.environ with `values` set for the block, restored after it."""
  old = {k: os.environ.get(k) for k in values}
  os.environ.update(values)
  try: yield
  finally:
    for k, v in old.items():
      if v is None: os.environ.pop(k, None)
      else: os.environ[k] = v

COLD_REPS = 3   # a kernel's distinct instructions take ~10 ms to build: one reading is mostly noise, the best of a few is not

def cold_cost(make) -> dict:
  """ms per distinct instruction of a kernel (decode + step build + pcode op, as a dispatch meets it): with the pcode disk cache warm
  and cold and no step cache, as a first process pays; and from a warm step cache (emu.amd.step_cache), as every later one does.
  Each the best of COLD_REPS readings, each from empty in-process caches (and an empty disk cache where that is measured)."""
  from emu.amd import step_build
  from emu.amd.arch import get_spec
  from emu.amd.step_cache import STEP_CACHE, source_digest
  with _env(EMU_STEP_CACHE="0"):
    _clear_caches()   # only this kernel's instructions (not those of workloads that ran before in this process)
    make()()
  spec = get_spec("gfx1100")
  source_digest(spec.family)   # once per process (~7 ms), not per instruction
  code = [raw.ljust(16, b"\0") for (_, raw) in step_build._steps]   # each instruction as code followed by zeros
  def timed(**env) -> float:
    with _env(**env):
      _clear_caches()
      t = time.process_time()
      for data in code: step_build.load_step(data, spec, 0)
      return (time.process_time() - t) * 1e3 / max(1, len(code))
  res: dict = {"distinct_instructions": len(code)}
  for _ in range(COLD_REPS):
    with tempfile.TemporaryDirectory() as pcode, tempfile.TemporaryDirectory() as kept:
      got = {"ms_per_inst_warm_disk": timed(EMU_STEP_CACHE="0"), "ms_per_inst_cold_disk": timed(EMU_STEP_CACHE="0", EMU_PCODE_CACHE=pcode),
             "ms_per_inst_first_kept": timed(EMU_STEP_CACHE=kept)}   # built and pickled into the step cache
      with _env(EMU_STEP_CACHE=kept): STEP_CACHE.write()
      got["ms_per_inst_step_cache"] = timed(EMU_STEP_CACHE=kept)
    res.update({k: min(v, res.get(k, v)) for k, v in got.items()})
  _clear_caches()
  return res

WORKLOADS = ("valu", "matmul", "memory", "boxmuller", "cold", "timing", "nv", "e2e")   # timing includes the CU replay rates

def main(argv=None):
  p = argparse.ArgumentParser(prog="python -m emu.bench", description=__doc__.split("\n")[0])
  p.add_argument("--workloads", default=",".join(WORKLOADS), help=f"comma-separated, of {','.join(WORKLOADS)} (default: all)")
  p.add_argument("--size", type=int, default=256)
  p.add_argument("--floats", type=int, default=2 << 20)
  p.add_argument("--nv-size", type=int, default=256)
  p.add_argument("--waves", type=int, default=256)
  p.add_argument("--iters", type=int, default=64)
  p.add_argument("--repeat", type=int, default=2)
  p.add_argument("--json", action="store_true")
  a = p.parse_args(argv)
  os.environ.setdefault("LLVM_PATH", "/usr/lib/x86_64-linux-gnu/libLLVM-19.so")
  wl, out = a.workloads.split(","), {}
  if unknown := set(wl) - set(WORKLOADS): p.error(f"unknown workload {', '.join(sorted(unknown))} (choose from {','.join(WORKLOADS)})")
  makers = {"valu": lambda t=True: valu_loop(a.waves, a.iters, t), "matmul": lambda t=True: matmul(a.size, t),
            "memory": lambda t=True: memory(a.floats, t), "boxmuller": lambda t=True: boxmuller(1 << 16, t)}
  for name in ("valu", "matmul", "memory", "boxmuller"):
    if name in wl:
      _log(f"{name}: running")
      out[name] = r = throughput(makers[name], a.repeat)
      _log(f"{name}: {r['wave_instructions']} wave-instructions in {r['seconds']:.3f}s = {r['winst_per_s'] / 1e6:.3f} M/s")
  if "cold" in wl:
    _log("cold: first-seen instruction cost (matmul kernel)")
    out["cold"] = r = cold_cost(lambda: matmul(32))
    _log(f"cold: {r['distinct_instructions']} instructions, {r['ms_per_inst_warm_disk']:.3f} ms each (warm pcode disk cache), "
         f"{r['ms_per_inst_cold_disk']:.3f} ms (cold); {r['ms_per_inst_first_kept']:.3f} ms built and kept in the step cache, "
         f"{r['ms_per_inst_step_cache']:.3f} ms loaded from it")
  if "timing" in wl:
    from emu.amd import cu_native
    compiled = cu_native.LIBRARY.get(wait=True) is not None   # (built in the background otherwise: the first replays in Python)
    _log("timing: CU replays " + ("compiled (emu/amd/cu_native.py)" if compiled else
                                  f"in Python: {cu_native.LIBRARY.disabled() or cu_native.LIBRARY.failure}"))
    out["timing"] = {}
    for name in ("valu", "matmul", "boxmuller"):
      _log(f"timing: {name} with and without the timing model")
      t = timing_overhead(makers[name], max(7, a.repeat))
      off, on, new = t["off"], t["on"], t["new"]
      out["timing"][name] = {"on_s": on, "off_s": off, "overhead": on / off - 1}
      out["timing"][f"{name}_new"] = {"on_s": new, "off_s": off, "overhead": new / off - 1}
      _log(f"timing: {name} {(on / off - 1) * 100:+.1f}% repeated, {(new / off - 1) * 100:+.1f}% replaying every CU workload")
    out["replay"] = r = replay_rates(makers["boxmuller"], max(3, a.repeat))
    _log(f"timing: CU replay of boxmuller's {r['workloads']} CU workloads ({r['wave_instructions']:,} wave-instructions): "
         + (f"compiled {r['compiled_winst_per_s'] / 1e6:.1f} M/s, " if r["compiled_winst_per_s"] else "")
         + f"Python {r['python_winst_per_s'] / 1e6:.2f} M/s" + ("" if r["same"] is None else f", same end cycles: {r['same']}"))
  if "nv" in wl:
    _log(f"nv: tinygrad's fp32 {a.nv_size}^3 matmul on the PTX emulator")
    out["nv"] = r = nv(a.nv_size, a.repeat, a.waves, a.iters)
    _log(f"nv: FMA loop {r['fma_warp_inst_per_s'] / 1e6:.3f} M warp-inst/s; "
         f"matmul {r['warp_instructions']} warp-instructions in {r['seconds']:.3f}s = {r['warp_inst_per_s'] / 1e6:.3f} M/s; "
         f"timing model +{r['timing_overhead'] * 100:.0f}% ({r['cycles']} cycles); parse {r['ms_per_parse']:.1f} ms for {r['ptx_lines']} lines")
  if "e2e" in wl:
    _log("e2e: tinygrad programs under MOCKKFD+AMD and CPU:LLVM (python -m mockgpu.bench)")
    res = subprocess.run([sys.executable, "-m", "mockgpu.bench", "--json", "--repeat", str(max(2, a.repeat))], capture_output=True, text=True)
    if res.returncode != 0: raise SystemExit(f"e2e: python -m mockgpu.bench failed: {res.stderr.strip()[-2000:]}")
    out["e2e"] = {name: {"ratio": r["ratio"], "winst_per_s": r["winst_per_s"], "emu_s": r["emulated"]["seconds"], "cpu_s": r["reference"]["seconds"],
                         "emu_rss_mib": r["emulated"]["peak_rss_mib"], "cpu_rss_mib": r["reference"]["peak_rss_mib"]}
                  for name, r in json.loads(res.stdout).items()}
    for name, r in out["e2e"].items():
      _log(f"e2e: {name} {r['emu_s']:.4f} s/step vs {r['cpu_s']:.4f} on CPU:LLVM = {r['ratio']:.0f}x; {r['winst_per_s'] / 1e6:.3f} M winst/s; "
           f"peak RSS {r['emu_rss_mib']:.0f} / {r['cpu_rss_mib']:.0f} MiB")
  if a.json: print(json.dumps(out, indent=1))
  else:
    for name, r in out.items():
      key = {"timing": "overhead", "e2e": "ratio"}.get(name)   # the figure of each sub-workload that the summary shows
      items = ((k, v[key]) for k, v in r.items()) if key else r.items()
      print(f"{name:8s} " + " ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in items))

if __name__ == "__main__": main()
