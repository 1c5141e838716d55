"""One emulated AMD GPU behind a KFD node: its VRAM, doorbell page and node identity on top of `mockgpu.amd.gpu.EmulatedGPU`."""
from __future__ import annotations
from typing import Callable
from mockgpu.engine import Engine
from mockgpu.amd.gpu import EmulatedGPU
from mockgpu.hostmem import Heap
from mockgpu.amd.boards import Board

DOORBELL_PAGE = 0x2000  # two pages of 64-bit doorbells per GPU, shared by all of its queues

class KFDGPU(EmulatedGPU):
  """A GPU node. `on_fault(gpu, engine, err)` and `on_interrupt(gpu, ctxid)` are the process's (driver's) handlers."""
  def __init__(self, node:int, gpu_id:int, arch:str, board:Board, vram_bytes:int, on_interrupt:Callable, on_fault:Callable):
    super().__init__(arch, board, DOORBELL_PAGE)
    self.node, self.gpu_id = node, gpu_id
    self.render_minor = 128 + node
    self.vram = Heap(f"vram{node}", vram_bytes)
    self._on_interrupt, self._on_fault = on_interrupt, on_fault

  # ---- GPUContext ----
  def interrupt(self, engine:Engine, source:str, ctxid:int): self._on_interrupt(self, ctxid)
  def on_fault(self, engine:Engine, err:Exception): self._on_fault(self, engine, err)

  def add_queue(self, engine:Engine) -> int:
    """Give `engine` the lowest free doorbell slot; returns the slot."""
    slot = next(i for i in range(DOORBELL_PAGE // 8) if i not in self.doorbells)
    self.bind_queue(slot, engine)
    return slot
