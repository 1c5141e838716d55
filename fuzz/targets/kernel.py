"""Targets `kernel.{gfx1100,gfx1201,gfx942,gfx950}`: random small tinygrad programs (fuzz.tiny_program) realised on the emulated AMD
GPU vs the PYTHON backend, one target per arch the emulator runs (emu.amd.api.ARCHS); `kernel.nv` and `kernel.cuda`: the same
programs on the emulated NVIDIA GPU through mockgpu's RM/UVM driver, with tinygrad's PTX renderer and with its CUDA renderer
(NVRTC), `DEV=MOCK+NV:PTX` / `MOCK+NV:CUDA`.

The emulated device is tinygrad's own AMD runtime (LLVM renderer) over mockgpu's KFD (`DEV=MOCKKFD+AMD:LLVM:<arch>`; for gfx950
the mock picks libLLVM-22 itself when LLVM_PATH is unset, so LLVM_PATH is left alone);
tinygrad reads DEV at import, so the programs run in one long-lived child process (fuzz.kernel_worker) that takes case after
case; the reference runs in this process on Device["PYTHON"] (as the x86 target does). Kinds: `kernel-mismatch` (values
beyond the dtype tolerance of fuzz.tiny_program.compare), `kernel-error` (the emulated device raised; the reference did not, or raised another
exception type: a device failure is not hidden behind a reference bug; keyed by exception type and error message shape),
`worker-crash` (the child died: a host crash), `reference-error` (the PYTHON backend raised: not an emulator bug).
"""
from __future__ import annotations
import json, os, subprocess, sys
import numpy as np
from fuzz import tiny_program
from fuzz.finding import Finding
from fuzz.registry import Target, register
from fuzz.targets.x86 import run_reference, minimise
from tinygrad.helpers import Context
from emu.amd.api import ARCHS

DEVICES = {**{arch: f"MOCKKFD+AMD:LLVM:{arch}" for arch in ARCHS}, "nv": "MOCK+NV:PTX", "cuda": "MOCK+NV:CUDA"}
_workers: dict[str, subprocess.Popen] = {}

def worker(dev:str) -> subprocess.Popen:
  """The running child for DEV string `dev`, started on first use or after it died."""
  if (p:=_workers.get(dev)) is None or p.poll() is not None:
    env = {**os.environ, "DEV": dev}
    _workers[dev] = p = subprocess.Popen([sys.executable, "-m", "fuzz.kernel_worker"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.DEVNULL, env=env, text=True)
  return p

def run_device(dev:str, case:dict) -> np.ndarray:
  """Realise the case in the child for `dev`; the output array."""
  p = worker(dev)
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

def check(dev:str, case:dict) -> None:
  """Raise a Finding when the program's result on the emulated device differs from the PYTHON backend's (fast-math rule of
  tiny_program.compare: the LLVM renderer's `fdiv nsz arcp contract afn` leaves non-finite quotients undefined, and the NV
  renderers' `.approx` division and transcendentals likewise; a program that the renderer's flags leave undefined,
  tiny_program.undefined_on_llvm, is not judged). A matmul program is judged against numpy instead (tiny_program.compare_matmul:
  tensor cores multiply exactly, the PYTHON backend accumulates bfloat16 in bfloat16)."""
  if tiny_program.is_matmul(case):
    if (diff:=tiny_program.compare_matmul(run_device(dev, case), case)) is not None:
      raise Finding("kernel-mismatch", f"{dev} vs numpy: {diff[0]}", key=(dev, *diff[1]))
    return
  with Context(DEV="PYTHON"):
    try: ref = run_reference(case)
    except Finding as ref_error:   # the device may fail on its own too (a renderer CompileError behind a PYTHON-backend bug)
      try: run_device(dev, case)
      except Finding as dev_error:
        if dev_error.kind != "kernel-error" or dev_error.key[1] != ref_error.key[0]: raise dev_error from None
      raise ref_error
  got = run_device(dev, case)
  if (diff:=tiny_program.compare(got, ref, case, fast_math=True)) is not None:
    if dev.startswith("MOCK+NV") and tiny_program.half_feeds_integers(case, got): return
    with Context(DEV="PYTHON"):
      if tiny_program.undefined_on_llvm(case, ref, run_reference): return
    raise Finding("kernel-mismatch", f"{dev} vs PYTHON: {diff[0]}", key=(dev, *diff[1]))

for _name, _dev in DEVICES.items():
  register(Target(f"kernel.{_name}", tiny_program.generate, lambda c, d=_dev: check(d, c), minimise,
                  doc=f"random tinygrad programs on {_dev} (emulator via mockgpu) vs the PYTHON backend"))
