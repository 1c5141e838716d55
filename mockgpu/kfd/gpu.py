"""One emulated AMD GPU behind a KFD node: its VRAM, the GPU's view of memory, clock, doorbell page, queues and emulator."""
from __future__ import annotations
from typing import Callable
from emu.amd.api import Dispatch, DispatchStats, GPUMemoryFault
from emu.amd.gpu import AMDGPU
from emu.amd.memory import MemoryMap
from mockgpu import devwrite
from mockgpu.amd.clock import DeviceClock
from mockgpu.amd.engine import SCHEDULER, Engine, GPUContext
from mockgpu.amd.pm4 import ComputeRegs
from mockgpu.amd.sqtt import ThreadTrace
from mockgpu.hostmem import Heap
from mockgpu.stats import record_dispatch
from mockgpu.kfd.boards import GC_HWID, Board

DOORBELL_PAGE = 0x2000  # two pages of 64-bit doorbells per GPU, shared by all of its queues

class KFDGPU(GPUContext):
  """A GPU node. `on_fault(gpu, engine, err)` and `on_interrupt(gpu, ctxid)` are the process's (driver's) handlers."""
  def __init__(self, node:int, gpu_id:int, arch:str, board:Board, vram_bytes:int, on_interrupt:Callable, on_fault:Callable):
    self.node, self.gpu_id, self.arch, self.board = node, gpu_id, arch, board
    self.render_minor = 128 + node
    self.vram = Heap(f"vram{node}", vram_bytes)
    self.memory = MemoryMap()
    self.clock = DeviceClock()
    self.doorbells: dict[int, Engine] = {}      # doorbell slot (offset // 8) -> queue engine
    self.doorbell_addr: int | None = None
    self._on_interrupt, self._on_fault = on_interrupt, on_fault
    self._emulator = None
    self.compute_regs = ComputeRegs(self.gc_version)   # resolved once per GPU, shared by its compute queues and its trace unit
    self.thread_trace = ThreadTrace(arch, self.gc_version, board.shader_engines, board.arrays_per_engine, self.memory, self.clock,
                                    regs=self.compute_regs)

  @property
  def gc_version(self) -> tuple[int, int, int]: return self.board.ip_versions[GC_HWID]

  # ---- GPUContext ----
  def interrupt(self, source:str, ctxid:int): self._on_interrupt(self, ctxid)
  def on_fault(self, engine:Engine, err:Exception): self._on_fault(self, engine, err)
  def cancel(self, reason:str):
    if self._emulator is not None: self._emulator.cancel(reason)

  def dispatch(self, d:Dispatch, timing=None) -> DispatchStats:
    """Run one kernel on the emulator and advance the device clock by its emulated duration (`timing`: see AMDGPU.dispatch)."""
    if self._emulator is None: self._emulator = AMDGPU(arch=self.arch, memory=self.memory)
    stats = self._emulator.dispatch(d, timing)
    record_dispatch(stats)
    clock_mhz = stats.clock_mhz or self.board.engine_clock_mhz
    self.clock.advance_seconds(stats.cycles / (clock_mhz * 1e6))
    return stats

  # ---- doorbells ----
  def doorbell_page(self) -> int:
    """The host address of the doorbell window (created and watched on first use)."""
    if self.doorbell_addr is None: self.doorbell_addr = devwrite.register_page(DOORBELL_PAGE, self._doorbell_write)
    return self.doorbell_addr

  def _doorbell_write(self, offset:int, fmt:str, value:int):
    if (engine:=self.doorbells.get(offset // 8)) is None: return  # a doorbell no queue owns: the write is dropped, as on hardware
    engine.doorbell(value)
    SCHEDULER.kick(engine)

  def add_queue(self, engine:Engine) -> int:
    """Give `engine` the lowest free doorbell slot; returns the slot."""
    slot = next(i for i in range(DOORBELL_PAGE // 8) if i not in self.doorbells)
    self.doorbells[slot] = engine
    SCHEDULER.add(engine)
    return slot

  def remove_queue(self, engine:Engine):
    self.doorbells = {k: v for k, v in self.doorbells.items() if v is not engine}
    SCHEDULER.remove(engine)

  def fault_address(self, err:Exception) -> tuple[int, bool]:
    """(address, read_only) of a GPUMemoryFault: read_only when the page is mapped but the access was a write."""
    assert isinstance(err, GPUMemoryFault)
    return err.addr, err.write and self.memory.find(err.addr) is not None
