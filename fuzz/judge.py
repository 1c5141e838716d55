"""How the kernel-level targets run a program on a tinygrad device and judge its result.

`run_device(dev, case)` realises a tiny program (fuzz.tiny_program) in one long-lived child per DEV string (fuzz.kernel_worker:
tinygrad reads DEV at import); a device error is a `kernel-error` Finding, a dead child a `worker-crash`.

`judge` holds a result to fuzz.reference (numpy in the program's own dtypes, never a tinygrad backend). Where they differ: a
known bug of the system under test whose deviation reached every wrong element (fuzz.known) labels the case `known: <bug>`; a
program the renderer's code leaves undefined (a signed wrap under LLVM's `add nsw` or in the CUDA renderer's C++,
tiny_program.signed_overflow; a non-finite quotient under LLVM's `arcp` or NV's .approx division) is `unjudged`, and so is one whose integer
wraps tinygrad's front end rewrote away (front_end_rewrote_wraps: its PYTHON backend differs too); then tinygrad's `DEV=CPU:LLVM`
gives a second opinion, and a device that agrees with it is `unjudged: the device agrees with CPU:LLVM` (the difference is
tinygrad's own, on every backend: its front end's rewrites, such as `-x > 0` made `x < 0` for unsigned x); last, a known compiler
bug is matched by rebuilding the program with another LLVM (rebuilt_right). Only what is left is a finding, and its detail says
what CPU:LLVM gave. An error the device raises is a known bug's error, or unjudged when CPU:LLVM fails alike.
"""
from __future__ import annotations
import json, os, subprocess, sys
from typing import Callable
import numpy as np
from fuzz import known, reference, tiny_program
from fuzz.finding import Classified, Finding
from emu.llvm_libs import system_llvms

_workers: dict[tuple[str, int|None], subprocess.Popen] = {}

def worker(dev:str, llvm:int|None=None) -> subprocess.Popen:
  """The running child for DEV string `dev` (compiling with libLLVM major `llvm` instead of tinygrad's pick, with tinygrad's
  compile cache off, since its key does not name the LLVM), started on first use or after it died."""
  if (p:=_workers.get((dev, llvm))) is None or p.poll() is not None:
    env = {**os.environ, "DEV": dev}
    if llvm is not None:
      if (lib := system_llvms().get(llvm)) is None: raise LookupError(f"no libLLVM-{llvm} on this machine")
      env.update(LLVM_PATH=lib, CACHELEVEL="0")
    _workers[(dev, llvm)] = p = subprocess.Popen([sys.executable, "-m", "fuzz.kernel_worker"], stdin=subprocess.PIPE,
                                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)
  return p

def run_device(dev:str, case:dict, llvm:int|None=None) -> np.ndarray:
  """Realise the case in the child for `dev` (built by libLLVM major `llvm`, when given); the output array."""
  p = worker(dev, llvm)
  try:
    p.stdin.write(json.dumps(case) + "\n")
    p.stdin.flush()
    line = p.stdout.readline()
  except BrokenPipeError: line = ""
  if not line: raise Finding("worker-crash", f"{dev} child exited with {p.wait()}; steps {case['steps']}", key=(dev,))
  ans = json.loads(line)
  if "error" in ans and dev.startswith("MOCK+NV"):   # tinygrad keeps an NV device that faulted in its error state: start afresh
    p.kill()
    p.wait()
  if "error" in ans:
    raise Finding("kernel-error", f"{dev}: {ans['error']}; steps {case['steps']}",
                  key=(dev, ans["error"].split(":")[0], tiny_program.error_shape(ans["error"])))
  return np.frombuffer(bytes.fromhex(ans["data"]), dtype=np.dtype(ans["dtype"])).reshape(ans["shape"])

SECOND_OPINION, FRONT_END = "CPU:LLVM", "PYTHON"
CUDA_SOURCE = ":CUDA"   # tinygrad's CUDA renderer writes C++, where signed overflow is undefined
UNDEFINED_CODE = "unjudged: undefined in the renderer's code"   # LLVM IR's nsw/arcp flags, C++'s signed overflow, PTX's .approx

def front_end_rewrote_wraps(case:dict, ref:np.ndarray, undef:np.ndarray, run:Callable[[str], np.ndarray]) -> bool:
  """Whether the program's integer arithmetic wraps (reference.reached) and tinygrad's own PYTHON backend, which wraps every
  integer result at its dtype, still differs from the reference: then tinygrad's front end rewrote the program assuming no wrap
  (its value ranges ignore it: `(uint8(100) + 200) < 100` folds to False, `(int8(x) + 128) // 3` becomes a truncating
  division), and every renderer computes some other program, each its own way. Asked only after a mismatch."""
  if not reference.reached(case, "wraps").any(): return False
  try: py = run(FRONT_END)
  except Finding: return False
  if py.shape != ref.shape: return True
  return tiny_program.compare(py, ref.astype(py.dtype), case, True, undef) is not None

def rebuilt_right(dev:str, case:dict, ref:np.ndarray, undef:np.ndarray, fast:bool, run:Callable[..., np.ndarray]) -> known.KnownBug|None:
  """The known compiler bug whose rebuild (the program compiled by another LLVM, fuzz.known) gives the reference's result on
  `dev`; None when none does or the other LLVM is not installed."""
  for bug in known.rebuild_bugs(dev):
    try: again = run(dev, llvm=bug.rebuilt_with)
    except (Finding, LookupError): continue
    if again.shape == ref.shape and tiny_program.compare(again, ref.astype(again.dtype), case, fast, undef) is None: return bug
  return None

def judge(dev:str, case:dict, got:np.ndarray|Finding, run:Callable[..., np.ndarray], kind:str) -> None:
  """Classify the result `got` of a program on `dev` (or the error Finding it raised) against fuzz.reference (module docstring):
  return when it matches, raise Classified when a known bug or an undefined program explains it, else a `<kind>-mismatch` Finding
  (or `got` itself). `run(dev, llvm=None)` runs the program on a tinygrad device (CPU:LLVM, PYTHON, `dev` built by another LLVM;
  asked only when needed)."""
  second = lambda: run(SECOND_OPINION)  # noqa: E731
  if isinstance(got, Finding):
    if (bug := known.explains_error(dev, got.detail)) is not None: raise Classified(f"known: {bug.name}", got.detail[:200])
    try: second()
    except Finding as cpu:
      if cpu.key[1:] == got.key[1:]: raise Classified("unjudged: CPU:LLVM fails alike", got.detail[:200]) from None
    raise got
  fast = dev.startswith(("MOCKKFD", "MOCKPCI", "CPU:LLVM"))   # tinygrad's LLVM renderer: fast-math flags
  with np.errstate(all="ignore"): ref, undef = reference.evaluate(case)
  if (diff := tiny_program.compare(got, ref.astype(got.dtype) if ref.shape == got.shape else ref, case, fast, undef)) is None: return
  if (bug := known.explains_values(dev, case, got, fast)) is not None: raise Classified(f"known: {bug.name}", diff[0])
  # LLVM's `add nsw` and `arcp afn` leave signed wraps and non-finite quotients undefined; the NV renderers' .approx division the
  # latter, and the CUDA renderer's C++ the former (NVRTC assumes no signed overflow: a max of two squares became max.u32)
  undefined = (fast or CUDA_SOURCE in dev) and tiny_program.signed_overflow(case, ref, reference.values) or \
    tiny_program.fast_math_div(case) and tiny_program.ill_defined_quotient(case, reference.values)
  if undefined: raise Classified(UNDEFINED_CODE, diff[0])
  if front_end_rewrote_wraps(case, ref, undef, run): raise Classified("unjudged: tinygrad rewrote an integer wrap", diff[0])
  try: cpu = second()
  except Finding as e: opinion = f"CPU:LLVM failed ({e.detail[:120]})"
  else:
    if tiny_program.compare(got, cpu, case, fast_math=True, undefined=undef) is None:
      raise Classified("unjudged: the device agrees with CPU:LLVM", diff[0])
    agrees = tiny_program.compare(cpu, ref.astype(cpu.dtype) if ref.shape == cpu.shape else ref, case, True, undef) is None
    opinion = "CPU:LLVM agrees with the reference" if agrees else f"CPU:LLVM differs from both ({np.asarray(cpu).ravel()[:6].tolist()}...)"
  if (bug := rebuilt_right(dev, case, ref, undef, fast, run)) is not None: raise Classified(f"known: {bug.name}", diff[0])
  raise Finding(f"{kind}-mismatch", f"{dev} vs the dtype reference: {diff[0]}; {opinion}", key=(dev, *diff[1]))

