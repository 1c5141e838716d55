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

ARCHS = ("gfx1100", "gfx1201", "gfx942", "gfx950")

class GPUFault(Exception):
  """Base class of every fault the emulated GPU can raise. The host process survives it; the dispatch is abandoned."""

class GPUMemoryFault(GPUFault):
  """A lane touched memory no mapping covers (or wrote to a read-only one)."""
  def __init__(self, addr:int, write:bool, pc:int|None=None, inst:str|None=None, wave:tuple|None=None, detail:str=""):
    self.addr, self.write, self.pc, self.inst, self.wave, self.detail = addr, write, pc, inst, wave, detail
    where = f" at pc={pc:#x} ({inst})" if pc is not None else ""
    super().__init__(f"GPU memory fault: {'write' if write else 'read'} of unmapped address {addr:#x}{where}"
                     f"{f' wave={wave}' if wave else ''}{f': {detail}' if detail else ''}")

class GPUHangFault(GPUFault):
  """A dispatch was declared hung: it exceeded its watchdog budget (wall-clock seconds or wave-instructions), or its queue
  was reset while it ran. `reason` says which."""
  def __init__(self, reason:str, executed:int, pc:int|None=None, wave:tuple|None=None):
    self.reason, self.executed, self.pc, self.wave = reason, executed, pc, wave
    super().__init__(f"GPU hang: dispatch {reason} ({executed} wave-instructions executed)"
                     f"{f', last pc={pc:#x}' if pc is not None else ''}{f' wave={wave}' if wave else ''}")

class GPUTrapFault(GPUFault):
  """A wave executed a trap instruction (AMD s_trap, PTX trap). No trap handler is emulated, so the trap ends the dispatch as a
  fault naming the instruction (`what`: s_trap and its id by default)."""
  def __init__(self, pc:int, trap_id:int, wave:tuple|None=None, what:str|None=None):
    self.pc, self.trap_id, self.wave, self.what = pc, trap_id, wave, what or f"s_trap {trap_id:#x}"
    super().__init__(f"GPU trap: {self.what} at pc={pc:#x}{f' wave={wave}' if wave else ''} (no trap handler is emulated)")

class GPUIllegalInstruction(GPUFault):
  """The decoder met bytes that are no instruction of this arch, or an instruction the emulator does not implement."""
  def __init__(self, pc:int, word:int|bytes, reason:str, wave:tuple|None=None):
    self.pc, self.word, self.reason, self.wave = pc, word, reason, wave
    super().__init__(f"illegal instruction at pc={pc:#x} ({word.hex() if isinstance(word, bytes) else hex(word)}): {reason}"
                     f"{f' wave={wave}' if wave else ''}")

class IllegalOperand(Exception):
  """Raised by the operand layer when an operand turns out to be impossible only once the wave runs (a wave64 lane mask at
  EXEC_HI); the dispatcher reports it as GPUIllegalInstruction at the instruction's PC."""

class GPUMisalignedAccess(GPUFault):
  """A lane accessed memory at an address that is not a multiple of the access size (NVIDIA: PTX requires natural alignment,
  the hardware stops the warp with a misaligned-address error); nothing of the access was applied."""
  def __init__(self, addr:int, size:int, write:bool, space:str, pc:int|None=None, inst:str|None=None):
    self.addr, self.size, self.write, self.space, self.pc, self.inst = addr, size, write, space, pc, inst
    where = f" at pc={pc:#x} ({inst})" if pc is not None else ""
    super().__init__(f"GPU misaligned address: {size}-byte {'write' if write else 'read'} of {space} address {addr:#x}{where}")

class GPUInvalidDispatch(GPUFault):
  """The dispatch itself is impossible on this GPU (a workgroup, LDS or scratch size beyond the hardware's limits); no wave ran."""

class GPUEmulatorError(GPUFault):
  """The emulator failed on an instruction for a reason that is not a modelled fault: a bug in the emulator, reported as a
  fault (the dispatch is abandoned, the host survives) naming the instruction, its PC and the wave, with the original error."""
  def __init__(self, pc:int, inst:str, wave:tuple|None, err:BaseException):
    self.pc, self.inst, self.wave, self.error = pc, inst, wave, err
    super().__init__(f"emulator error at pc={pc:#x} ({inst}){f' wave={wave}' if wave else ''}: {type(err).__name__}: {err} "
                     "(not a modelled GPU fault: please report it)")

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
