"""Instruction text for traces: LLVM's MC disassembler (libLLVM via tinygrad's ctypes bindings) when it is available, else
the wheel's DSL repr. The library is tinygrad's (env LLVM_PATH); any failure to load it falls back silently."""
from __future__ import annotations
import ctypes, functools

@functools.cache
def _context(cpu:str):
  """An LLVM disassembler context for amdgcn `cpu`, or None when libLLVM (or its AMDGPU target) is not there."""
  try:
    from tinygrad.runtime.autogen import llvm
    for f in ("LLVMInitializeAMDGPUTargetInfo", "LLVMInitializeAMDGPUTargetMC", "LLVMInitializeAMDGPUDisassembler"): getattr(llvm, f)()
    ctx = llvm.LLVMCreateDisasmCPU(b"amdgcn-amd-amdhsa", cpu.encode(), None, 0, ctypes.cast(None, llvm.LLVMOpInfoCallback),
                                   ctypes.cast(None, llvm.LLVMSymbolLookupCallback))
  except Exception: return None   # no libLLVM, or bindings that do not match it: traces use the DSL repr
  return (llvm, ctx) if ctx else None

@functools.cache
def disassemble(raw:bytes, cpu:str="gfx1100") -> str | None:
  """LLVM's text for the instruction in `raw` (its exact bytes), or None when LLVM is unavailable or rejects them."""
  if (c := _context(cpu)) is None: return None
  llvm, ctx = c
  data, out = (ctypes.c_ubyte * (len(raw) + 16)).from_buffer_copy(raw + bytes(16)), ctypes.create_string_buffer(256)
  n = llvm.LLVMDisasmInstruction(ctx, data, len(raw) + 16, 0, out, len(out))
  return out.value.decode().strip() if n == len(raw) else None

def instruction_text(instr, cpu:str="gfx1100") -> str:
  """Assembly text of a decoded `Instr`: LLVM's disassembly when possible, the DSL repr otherwise."""
  return disassemble(instr.raw, cpu) or repr(instr)
