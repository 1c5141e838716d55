"""What every emulated AMD GPU behind a mock driver has, whichever driver (KFD or the AM driver over PCI) reaches it: the GPU's
view of memory, clock, compute-register layout, thread-trace unit, the emulator that runs its dispatches, and doorbells that
wake its queue engines."""
from __future__ import annotations
import os, sys
from emu.amd.api import Dispatch, DispatchStats, GPUMemoryFault
from emu.amd.arch import get_spec
from emu.amd.gpu import AMDGPU
from emu import native
from emu.common.memory import MemoryMap
from emu.timing import accuracy
from mockgpu import devwrite
from mockgpu.clock import DeviceClock
from mockgpu.gcguard import COLLECTOR
from mockgpu.engine import SCHEDULER, Engine, GPUContext
from mockgpu.amd.registers import ComputeRegs
from mockgpu.amd.pmc import PerfCounters
from mockgpu.amd.sqtt import ThreadTrace
from mockgpu.amd.boards import GC_HWID, Board
from mockgpu.profile import PROFILE
from mockgpu.stats import record_dispatch

_noticed: set[str] = set()

def trust_notice(arch:str):
  """Under DEBUG>=2 (tinygrad prints kernel times), say once per process and arch how far the emulated times held on real
  captures (emu.timing.accuracy), on stderr."""
  try: debug = int(os.environ.get("DEBUG", "0") or 0)
  except ValueError: debug = 0
  if debug < 2 or arch in _noticed: return
  _noticed.add(arch)
  print(f"tinygrad-emu: {arch} kernel times are emulated by a cycle model; {accuracy.band(get_spec(arch).family)} "
        f"({accuracy.provenance()})", file=sys.stderr)

class EmulatedGPU(GPUContext):
  """One emulated AMD GPU of `board` (a `mockgpu.amd.boards.Board`); the driver mocks subclass it and add their memory model,
  faults and interrupts. `doorbell_bytes`: the size of its doorbell window (64-bit doorbells)."""
  def __init__(self, arch:str, board:Board, doorbell_bytes:int):
    self.arch, self.board, self.doorbell_bytes = arch, board, doorbell_bytes
    self.memory = MemoryMap()
    self.clock = DeviceClock()
    self.doorbells: dict[int, Engine] = {}      # doorbell slot (byte offset // 8) -> queue engine
    self.doorbell_addr: int | None = None
    self._emulator: AMDGPU | None = None
    self.compute_regs = ComputeRegs(self.gc_version)   # resolved once per GPU, shared by its compute queues and its trace unit
    self.thread_trace = ThreadTrace(arch, self.gc_version, board.shader_engines, board.arrays_per_engine, self.memory, self.clock,
                                    regs=self.compute_regs)
    self.perf_counters = PerfCounters(arch, self.gc_version, board.shader_engines, board.arrays_per_engine, board.cus, self.clock,
                                      board.engine_clock_mhz, regs=self.compute_regs)
    # load (on first use: compile) the native kernels here, on the host's thread inside the driver call that creates the GPU, not
    # later on the engine worker while tinygrad may be compiling with the same libLLVM
    native.available()
    trust_notice(arch)

  @property
  def gc_version(self) -> tuple[int, int, int]: return self.board.ip_versions[GC_HWID]

  def cancel(self, reason:str):
    if self._emulator is not None: self._emulator.cancel(reason)

  def dispatch(self, d:Dispatch, timing=None, watch:tuple=()) -> DispatchStats:
    """Run one kernel on the emulator and advance the device clock by its emulated duration (`timing`, `watch`: see
    AMDGPU.dispatch; the returned DispatchStats' cycles may still be pending, counted when read)."""
    COLLECTOR.enforce()   # no garbage collection during the dispatch (mockgpu/gcguard.py)
    # the timing replay waits until the clock, the stats or the profile read the cycles: a run that never looks never pays for it
    if self._emulator is None: self._emulator = AMDGPU(arch=self.arch, memory=self.memory, defer_timing=True)
    stats = self._emulator.dispatch(d, timing, watch)
    record_dispatch(stats)
    if PROFILE.enabled: PROFILE.dispatch(self.memory, d, stats)
    self.clock.advance_dispatch(stats, self.board.engine_clock_mhz)
    return stats

  # ---- doorbells ----
  def doorbell_page(self) -> int:
    """The host address of the doorbell window (created and watched on first use)."""
    if self.doorbell_addr is None: self.doorbell_addr = devwrite.register_page(self.doorbell_bytes, self._doorbell_write)
    return self.doorbell_addr

  def _doorbell_write(self, offset:int, fmt:str, value:int):
    if (engine:=self.doorbells.get(offset // 8)) is None: return  # a doorbell no queue owns: the write is dropped, as on hardware
    engine.doorbell(value)
    SCHEDULER.kick(engine)

  def bind_queue(self, slot:int, engine:Engine):
    """Ring `engine` through doorbell `slot` and let the scheduler run it."""
    self.doorbells[slot] = engine
    SCHEDULER.add(engine)

  def remove_queue(self, engine:Engine):
    self.doorbells = {k: v for k, v in self.doorbells.items() if v is not engine}
    SCHEDULER.remove(engine)

  def fault_address(self, err:Exception) -> tuple[int, bool]:
    """(address, read_only) of a GPUMemoryFault: read_only when the page is mapped but the access was a write."""
    assert isinstance(err, GPUMemoryFault)
    return err.addr, err.write and self.memory.find(err.addr) is not None
