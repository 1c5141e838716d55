"""KFD buffer objects: VRAM, GTT (system memory, possibly uncached) and USERPTR allocations, and the GPUs each is mapped on."""
from __future__ import annotations
import ctypes
import numpy as np
from dataclasses import dataclass, field
from mockgpu.hostmem import Heap

FLAG_VRAM, FLAG_GTT, FLAG_USERPTR, FLAG_DOORBELL, FLAG_MMIO_REMAP = 1 << 0, 1 << 1, 1 << 2, 1 << 3, 1 << 4
FLAG_WRITABLE, FLAG_UNCACHED = 1 << 31, 1 << 25

@dataclass
class BO:
  """One allocation. `heap`/`heap_off` locate VRAM/GTT backing; USERPTR buffers live at `cpu_addr` in the host."""
  handle: int
  gpu_id: int
  va: int
  size: int
  flags: int
  mmap_offset: int
  heap: Heap | None = None
  heap_off: int = 0
  cpu_addr: int = 0
  mapped_on: set = field(default_factory=set)   # gpu_ids

  @property
  def kind(self) -> str: return "userptr" if self.flags & FLAG_USERPTR else "vram" if self.flags & FLAG_VRAM else "gtt"

  def backing(self) -> np.ndarray | None:
    """What the GPU's MemoryMap should view for this buffer (None: the host memory at `va` itself)."""
    if self.heap is not None: return self.heap.view(self.heap_off, self.size)
    if self.cpu_addr != self.va: return np.ctypeslib.as_array((ctypes.c_uint8 * self.size).from_address(self.cpu_addr))
    return None
