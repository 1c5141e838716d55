"""Point tinygrad at PyPI's NVRTC and CUDA headers for DEV=MOCK+NV, before tinygrad creates its CUDA compiler.

tinygrad's NV device prefers its CUDA renderer, whose compiler (NVRTC) it looks for as NVRTC_PATH or a CUDA toolkit under
/usr/local or /opt, with headers from CUDA_PATH/include (else /usr/local/cuda/include); half and bfloat16 kernels include
cuda_fp16.h / cuda_bf16.h, which NVRTC does not ship. The bench installs both from PyPI (`nvidia-cuda-nvrtc-cu12`:
nvidia/cuda_nvrtc/lib/libnvrtc.so.12; `nvidia-cuda-runtime-cu12`: nvidia/cuda_runtime/include). When DEV names a mock NV
target, `select()` sets NVRTC_PATH and CUDA_PATH to those unless the user set them; without the packages it says on stderr
that tinygrad falls back to its PTX renderer. mockgpu.py runs it at import (hcq.py imports it before ops_nv builds a renderer).
"""
from __future__ import annotations
import importlib.util, os, sys

def _package_dir(name:str) -> str | None:
  if importlib.util.find_spec("nvidia") is None or (spec := importlib.util.find_spec(f"nvidia.{name}")) is None: return None
  return next(iter(spec.submodule_search_locations or []), None)

def pypi_nvrtc() -> str | None:
  """libnvrtc from the nvidia-cuda-nvrtc-cu12 wheel, when installed."""
  d = _package_dir("cuda_nvrtc")
  return p if d and os.path.isfile(p := os.path.join(d, "lib", "libnvrtc.so.12")) else None

def pypi_cuda_headers() -> str | None:
  """The folder whose include/ holds cuda_fp16.h (the nvidia-cuda-runtime-cu12 wheel), when installed."""
  d = _package_dir("cuda_runtime")
  return d if d and os.path.isfile(os.path.join(d, "include", "cuda_fp16.h")) else None

def pypi_ptxas() -> str | None:
  """ptxas from the nvidia-cuda-nvcc-cu12 wheel, when installed (tests and the ptxas.agree fuzzer only; nothing runs it otherwise)."""
  d = _package_dir("cuda_nvcc")
  return p if d and os.access(p := os.path.join(d, "bin", "ptxas"), os.X_OK) else None

def select(env:dict|None=None, out=sys.stderr) -> dict[str, str]:
  """Set env's NVRTC_PATH / CUDA_PATH for a mock NV target where unset; returns what it set."""
  from mockgpu.config import parse_dev
  env = os.environ if env is None else env
  tgt = next((t for t in parse_dev(env.get("DEV", "")) if t.device == "NV"), None)
  if tgt is None or not tgt.interface.startswith("MOCK"): return {}
  found = {"NVRTC_PATH": pypi_nvrtc(), "CUDA_PATH": pypi_cuda_headers()}
  done = {k: v for k, v in found.items() if v and k not in env}
  env.update(done)
  if tgt.renderer in ("", "CUDA") and not env.get("NVRTC_PATH"):
    print("mockgpu: NVRTC not found (pip install nvidia-cuda-nvrtc-cu12 nvidia-cuda-runtime-cu12, or set NVRTC_PATH): tinygrad's NV "
          "device falls back to its PTX renderer", file=out)
  return done
