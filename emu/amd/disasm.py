"""LLVM's MC disassembler through libLLVM's C API (ctypes): instruction text for traces and an independent oracle for the fuzzers'
encoding checks (fuzz/llvm_mc.py re-exports this module).

The library is picked per target, so several LLVM versions live in one process (each loaded RTLD_LOCAL): libLLVM-19 knows
gfx1100/gfx1151/gfx1201/gfx942, gfx950 needs LLVM >= 20 (the oldest installed one that is new enough is used, e.g. Debian's
libLLVM-22). Libraries are found by name in the system library directories (emu.llvm_libs: Debian and Ubuntu names).
`LLVM_PATH` (tinygrad's variable) replaces the LLVM-19 default. Any failure to load a library makes `disassemble` return None,
and traces fall back to the wheel's DSL repr.
"""
from __future__ import annotations
import ctypes, functools, os
from emu.amd.api import ARCHS
from emu.amd.arch import FAMILIES, SPECS
from emu.llvm_libs import multiarch, system_llvm

DEFAULT_LLVM = 19          # the LLVM whose disassembly the fuzzers' expectations were checked against
CPU_LLVM = {a: s.llvm_min for a, s in SPECS.items() if s.llvm_min > DEFAULT_LLVM}  # CPUs DEFAULT_LLVM does not know: the oldest major that does

def default_library(major:int=DEFAULT_LLVM) -> str:
  """Path of the installed libLLVM of `major` (or the newest newer one); the Debian name when none is installed (loading then fails
  with that name in the error)."""
  return system_llvm(major) or f"/usr/lib/{multiarch()}/libLLVM-{major}.so"
ARCH_CPU = {f: next(a for a in ARCHS if SPECS[a].family == f) for f in FAMILIES}  # the default CPU per table set: its first board

@functools.cache
def _lib(path:str) -> ctypes.CDLL:
  lib = ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL)  # local: LLVM 19 and 22 can live in one process
  for f in ("LLVMInitializeAMDGPUTargetInfo", "LLVMInitializeAMDGPUTargetMC", "LLVMInitializeAMDGPUDisassembler"): getattr(lib, f)()
  lib.LLVMCreateDisasmCPU.restype = ctypes.c_void_p
  lib.LLVMCreateDisasmCPU.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
  lib.LLVMDisasmInstruction.restype = ctypes.c_size_t
  lib.LLVMDisasmInstruction.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_char_p, ctypes.c_size_t]
  lib.LLVMDisasmDispose.argtypes = [ctypes.c_void_p]
  return lib

def library_for(cpu:str) -> str:
  """Path of the libLLVM used for `cpu`: an LLVM >= 20 for gfx950, else LLVM_PATH or LLVM 19."""
  if (ver := CPU_LLVM.get(cpu)) is not None: return default_library(ver)
  return os.environ.get("LLVM_PATH") or default_library()

def available(cpu:str) -> bool:
  """True when the libLLVM for `cpu` exists and knows the CPU."""
  try: Disassembler.get(cpu)
  except (OSError, RuntimeError, AttributeError): return False
  return True

class Disassembler:
  """One LLVM disassembler context for an amdgcn CPU name (gfx1100, gfx1201, gfx942, gfx950, ...)."""
  def __init__(self, cpu:str):
    self.cpu, self.lib = cpu, _lib(library_for(cpu))
    self.ctx = self.lib.LLVMCreateDisasmCPU(b"amdgcn-amd-amdhsa", cpu.encode(), None, 0, None, None)
    if not self.ctx: raise RuntimeError(f"LLVM ({library_for(cpu)}) has no disassembler for {cpu}")
    self.buf = ctypes.create_string_buffer(512)

  @staticmethod
  @functools.cache
  def get(cpu:str) -> Disassembler:
    """Shared, cached instance per CPU name."""
    return Disassembler(cpu)

  def disasm(self, data:bytes, pc:int=0) -> tuple[int, str]:
    """Disassemble the first instruction of `data`: (bytes consumed, text without leading tab); (0, "") if LLVM rejects it."""
    data = bytes(data) + bytes(16)  # LLVM may peek at a literal dword past the instruction
    n = self.lib.LLVMDisasmInstruction(self.ctx, data, len(data), pc, self.buf, len(self.buf))
    return (n, self.buf.value.decode().strip()) if n else (0, "")

def mnemonic(text:str) -> str:
  """The mnemonic of an LLVM disassembly line (lowercase, encoding suffix kept)."""
  return text.split(None, 1)[0].lower() if text else ""

@functools.cache
def disassemble(raw:bytes, cpu:str="gfx1100") -> str | None:
  """LLVM's text for the instruction in `raw` (its exact bytes), or None when LLVM is unavailable or rejects them."""
  if not available(cpu): return None
  n, text = Disassembler.get(cpu).disasm(raw)
  return text if n == len(raw) else None

def instruction_text(instr, cpu:str="gfx1100") -> str:
  """Assembly text of a decoded `Instr`: LLVM's disassembly when possible, the DSL repr otherwise."""
  return disassemble(instr.raw, cpu) or repr(instr)
