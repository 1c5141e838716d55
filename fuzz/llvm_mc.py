"""LLVM's MC disassembler for the fuzzers: the one implementation lives in emu/amd/disasm.py (see its docstring)."""
from emu.amd.disasm import ARCH_CPU, CPU_LLVM, Disassembler, available, default_library, library_for, mnemonic

__all__ = ["ARCH_CPU", "CPU_LLVM", "Disassembler", "available", "default_library", "library_for", "mnemonic"]
