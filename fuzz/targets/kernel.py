"""Targets `kernel.{gfx1100,gfx1201,gfx942,gfx950}`: random small tinygrad programs (fuzz.tiny_program) realised on the emulated AMD
GPU, one target per arch the emulator runs (emu.amd.api.ARCHS); `kernel.nv` and `kernel.cuda`: the same programs on the emulated
NVIDIA GPU through mockgpu's RM/UVM driver, with tinygrad's PTX renderer and with its CUDA renderer (NVRTC), `DEV=MOCK+NV:PTX` /
`MOCK+NV:CUDA`, each program on a board drawn from those emu.nv.boards models (`DEV=MOCK+NV:PTX:sm_90`).

The emulated device is tinygrad's own AMD runtime (LLVM renderer) over mockgpu's KFD (`DEV=MOCKKFD+AMD:LLVM:<arch>`; for gfx950
the mock picks libLLVM-22 itself when LLVM_PATH is unset, so LLVM_PATH is left alone); tinygrad reads DEV at import, so the
programs run in one long-lived child process per device (fuzz.kernel_worker) that takes case after case.

Each result is judged by fuzz.judge against numpy in the program's own dtypes, with known bugs labelled and CPU:LLVM as a second
opinion. Kinds: `kernel-mismatch`, `kernel-error` (the device raised, keyed by exception type and error message shape),
`worker-crash` (the child died: a host crash).
"""
from __future__ import annotations
import numpy as np
from fuzz import tiny_program
from fuzz.finding import Finding
from fuzz.judge import judge, run_device
from fuzz.registry import Target, register
from fuzz.targets.x86 import minimise
from emu.amd.api import ARCHS
from emu.nv.boards import BOARDS

DEVICES = {**{arch: f"MOCKKFD+AMD:LLVM:{arch}" for arch in ARCHS}, "nv": "MOCK+NV:PTX", "cuda": "MOCK+NV:CUDA"}

def generate_on_a_board(rng) -> dict:
  """A program (tiny_program.generate) and the emulated NVIDIA board it runs on, drawn from every board emu.nv.boards models
  (tinygrad renders per arch: tensor cores, fp8, the PTX target)."""
  case = tiny_program.generate(rng)
  return {**case, "board": rng.choice(sorted(BOARDS))}

def check(dev:str, case:dict) -> None:
  """Run the program on `dev` (on the case's NVIDIA board, when it names one) and judge it (a matmul program: against numpy with
  a product-rounding bound, compare_matmul)."""
  if "board" in case: dev = f"{dev}:{case['board']}"
  if tiny_program.is_matmul(case):
    if (diff:=tiny_program.compare_matmul(run_device(dev, case), case)) is not None:
      raise Finding("kernel-mismatch", f"{dev} vs numpy: {diff[0]}", key=(dev, *diff[1]))
    return
  try: got: np.ndarray|Finding = run_device(dev, case)
  except Finding as f:
    if f.kind != "kernel-error": raise
    got = f
  judge(dev, case, got, lambda d, llvm=None: run_device(d, case, llvm), "kernel")

for _name, _dev in DEVICES.items():
  _nv = _dev.startswith("MOCK+NV")
  register(Target(f"kernel.{_name}", generate_on_a_board if _nv else tiny_program.generate, lambda c, d=_dev: check(d, c), minimise,
                  doc=f"random tinygrad programs on {_dev}{':<every board>' if _nv else ''} (emulator via mockgpu) vs numpy in the "
                      "programs' dtypes"))
