"""LLVM's MC disassembler through libLLVM's C API (ctypes): an independent oracle for AMD instruction encodings.

`Disassembler("gfx1100").disasm(data)` returns `(size, text)` for the first instruction in `data`, `(0, "")` when LLVM rejects it.
The library is picked per target: libLLVM-19 knows gfx1100/gfx1151/gfx1201/gfx942, gfx950 needs libLLVM-22.
`LLVM_PATH` overrides the library for every target.
"""
from __future__ import annotations
import ctypes, functools, os

LIBS = {19: "/usr/lib/x86_64-linux-gnu/libLLVM-19.so", 22: "/usr/lib/x86_64-linux-gnu/libLLVM-22.so"}
CPU_LLVM = {"gfx950": 22}  # everything else is covered by LLVM 19
ARCH_CPU = {"rdna3": "gfx1100", "rdna4": "gfx1201", "cdna": "gfx942"}  # the emulator's default CPU per table set

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
  """Path of the libLLVM used for `cpu` (LLVM_PATH wins)."""
  return os.environ.get("LLVM_PATH") or LIBS[CPU_LLVM.get(cpu, 19)]

def available(cpu:str) -> bool:
  """True when the libLLVM for `cpu` exists and knows the CPU."""
  try: Disassembler.get(cpu)
  except (OSError, RuntimeError): return False
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
