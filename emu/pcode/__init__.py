"""AMD vendor pseudocode -> executable, lane-vectorised Python. Public API: compile_op, ops_for (contract in emu.pcode.abi)."""
from emu.pcode.abi import CompiledOp, OpState, Unsupported
from emu.pcode.compiler import compile_op, ops_for, GENERATOR_VERSION

__all__ = ["CompiledOp", "OpState", "Unsupported", "compile_op", "ops_for", "GENERATOR_VERSION"]
