"""Pick a libLLVM new enough for DEV's AMD arch before tinygrad loads one.

tinygrad 0.14.0 searches libLLVM, then libLLVM-21 down to -14, and takes the first it finds; on Debian bookworm that is
libLLVM-19, which does not know gfx950 (LLVM >= 20). When DEV's AMD arch needs a newer LLVM than the one tinygrad would load
and LLVM_PATH is unset, `select()` sets LLVM_PATH to the newest libLLVM-N.so on the machine (if that one is new enough) and
says so on stderr. mockgpu.py runs it at import, which happens (hcq.py) before tinygrad creates its AMD compiler.
"""
from __future__ import annotations
import os, sys
from mockgpu.config import amd_target
from emu.llvm_libs import ensure_llvm, llvm_major, tinygrad_llvm  # noqa: F401  (llvm_major, tinygrad_llvm: re-exported)
from mockgpu.doctor import AMD_TARGETS

def select(env:dict|None=None, out=sys.stderr) -> str | None:
  """Set env's LLVM_PATH to a newer libLLVM when DEV's AMD arch needs one tinygrad would not load; returns the path it set."""
  env = os.environ if env is None else env
  tgt = amd_target(env)
  if not tgt.interface.startswith("MOCK") or (need := AMD_TARGETS.get(tgt.arch)) is None: return None
  return ensure_llvm(need, f"mockgpu: {tgt.arch}", env, out)
