"""The public face of the AMD emulator: what a command processor (mockgpu's PM4 engine, or a test) hands it, and what comes back.

A `Dispatch` carries exactly what a PM4 DISPATCH_DIRECT carries on real hardware (the COMPUTE_* registers plus the workgroup
counts); `AMDGPU.dispatch()` runs it to completion and returns `DispatchStats`. Memory is the host's own address space
(GPU VA == CPU VA on the KFD path), guarded by a `MemoryMap` that knows which ranges are mapped to the GPU: any access
outside them raises `GPUMemoryFault` instead of touching host memory.
"""
from __future__ import annotations
import threading, time
from collections.abc import Callable
from dataclasses import dataclass, field
from emu.common.faults import (GPUEmulatorError, GPUFault, GPUHangFault, GPUIllegalInstruction, GPUInvalidDispatch, GPUMemoryFault,
                               GPUMisalignedAccess, GPUTrapFault)

# the faults are emu.common.faults' (NVIDIA raises them too), named here as part of this API
__all__ = ["ARCHS", "Dispatch", "DispatchStats", "IllegalOperand", "GPUFault", "GPUMemoryFault", "GPUHangFault", "GPUTrapFault",
           "GPUIllegalInstruction", "GPUMisalignedAccess", "GPUInvalidDispatch", "GPUEmulatorError"]

ARCHS = ("gfx1100", "gfx1201", "gfx942", "gfx950")

class IllegalOperand(Exception):
  """Raised by the operand layer when an operand turns out to be impossible only once the wave runs (a wave64 lane mask at
  EXEC_HI); the dispatcher reports it as GPUIllegalInstruction at the instruction's PC."""

@dataclass
class Dispatch:
  """One compute dispatch as the command processor sees it. Register values are raw COMPUTE_* register contents."""
  code_addr: int                        # byte address of the first instruction (COMPUTE_PGM_LO/HI << 8)
  grid: tuple[int, int, int]            # workgroup counts x, y, z (DISPATCH_DIRECT dims)
  workgroup: tuple[int, int, int]       # threads per workgroup x, y, z (COMPUTE_NUM_THREAD_X/Y/Z)
  user_sgprs: list[int]                 # COMPUTE_USER_DATA_0.. (count = RSRC2.USER_SGPR)
  rsrc1: int = 0xaf0000                 # default: RSRC1 mode fields of an LLVM compute kernel (denormals kept, DX10 clamp, IEEE)
  rsrc2: int = 0
  rsrc3: int = 0
  wave32: bool = True                   # DISPATCH_INITIATOR bit 15 on RDNA; always False on CDNA
  lds_bytes: int | None = None          # None: derive from RSRC2.LDS_SIZE
  scratch_base: int = 0                 # COMPUTE_DISPATCH_SCRATCH_BASE (byte address), 0 = no scratch
  scratch_per_lane: int = 0             # bytes of private memory per lane (from TMPRING_SIZE.WAVESIZE)
  grid_offset: tuple[int, int, int] = (0, 0, 0)  # COMPUTE_START_X/Y/Z
  name: str = ""                        # kernel name if the submitter knows it (not a register: selects traces, EMU_TRACE=name)

@dataclass
class DispatchStats:
  """What one dispatch cost. `cycles` is the timing model's shader-clock count from first wave launch to last wave end.

  The replay that counts them may be deferred (`replay`, set by a deferred emu.amd.timing.TimingModel): reading `cycles` runs it
  then, once, and adds its host seconds to `host` ('observe' and 'total'); `pending` says whether it has yet to run."""
  workgroups: int = 0
  waves: int = 0
  wave_instructions: int = 0
  cycles: int = 0
  clock_mhz: float = 0.0
  bytes_read: int = 0
  bytes_written: int = 0
  lds_bytes: int = 0
  timeline: list = field(default_factory=list)   # optional per-wave (wave, pc, issue_cycle) records when requested
  # host (wall) seconds the emulator spent: 'total', of which 'decode' (fetching, decoding and building the steps of
  # instructions this dispatch saw first; the pcode compile of a first-seen op included) and 'observe' (the observers' end of
  # dispatch work: the timing model's replay); the rest is execution
  host: dict[str, float] = field(default_factory=dict)
  replay: Callable[[], int] | None = field(default=None, repr=False, compare=False)   # a deferred replay: its cycles

  @property
  def seconds(self) -> float: return self.cycles / (self.clock_mhz * 1e6) if self.clock_mhz else 0.0
  @property
  def pending(self) -> bool: return self.replay is not None

  def resolve(self):
    """Run the deferred replay now, if there is one (reading `cycles` does this)."""
    with _RESOLVE:   # (host is complete once pending reads False)
      if (fn := self.replay) is None: return
      t = time.perf_counter()
      self._cycles = fn()
      dt = time.perf_counter() - t
      self.host["observe"], self.host["total"] = self.host.get("observe", 0.0) + dt, self.host.get("total", 0.0) + dt
      self.replay = None

# `cycles` is a field (an init argument, compared and printed) read through a property that first runs a deferred replay
_RESOLVE = threading.RLock()
def _get_cycles(self) -> int:
  if self.replay is not None: self.resolve()
  return self._cycles
def _set_cycles(self, value:int): self._cycles = value
DispatchStats.cycles = property(_get_cycles, _set_cycles)   # type: ignore[assignment]
