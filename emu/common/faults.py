"""The faults an emulated GPU raises (AMD and NVIDIA alike). The host process survives each; the dispatch it names is abandoned."""
from __future__ import annotations

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
