"""The AMD GPU emulator (RDNA3 gfx1100 first; RDNA4 and CDNA follow), usable without mockgpu or tinygrad's runtime.

Public API
----------
- `emu.amd.api`: `Dispatch`, `DispatchStats`, `ARCHS` and the faults `GPUFault`, `GPUMemoryFault`, `GPUHangFault`,
  `GPUTrapFault`, `GPUIllegalInstruction`.
- `emu.common.memory.MemoryMap`: the host address ranges the GPU may touch (`map(addr, size, name, writable, backing)`).
- `emu.amd.gpu.AMDGPU(arch="gfx1100", memory=None, watchdog=None, trace=None, timing=True)`:
  `.dispatch(Dispatch) -> DispatchStats` runs a raw code object at `Dispatch.code_addr` to completion.
- `emu.amd.run_program(insts, arch="gfx1100", lanes=32, waves=1, sgprs=None, vgprs=None, exec_mask=None, scc=0,
  memory=None, lds_bytes=0, scratch_bytes=0, watchdog=None, trace=False) -> WaveState`: runs a short list of the wheel's
  DSL instructions (`from tinygrad.runtime.autogen.amd.rdna3.ins import *`) on one workgroup and returns the registers
  (`.sgpr[wave, n]`, `.vgpr[wave, lane, n]`, `.scc[wave]`, `.lds`, `.stats`).

Environment: EMU_TRACE=1 prints an instruction trace (or selects dispatches: EMU_TRACE=@3,kernel_name_part); EMU_WATCHDOG=<n>
sets the per-dispatch wave-instruction budget.
See docs/emulator.md (design, coverage) and docs/timing.md (cycle model).
"""

def __getattr__(name:str):
  # imported on first use, so importing one module of the package does not load the whole emulator
  if name == "run_program":
    from emu.amd.runner import run_program
    return run_program
  raise AttributeError(f"module 'emu.amd' has no attribute {name!r}")

__all__ = ["run_program"]
