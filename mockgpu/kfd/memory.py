"""KFD buffer objects: VRAM, GTT (system memory, possibly uncached) and USERPTR allocations, and the GPUs each is mapped on."""
from __future__ import annotations
import ctypes
import numpy as np
from dataclasses import dataclass, field
from mockgpu.hostmem import Heap, is_mapped

FLAG_VRAM, FLAG_GTT, FLAG_USERPTR, FLAG_DOORBELL, FLAG_MMIO_REMAP = 1 << 0, 1 << 1, 1 << 2, 1 << 3, 1 << 4
FLAG_WRITABLE, FLAG_UNCACHED = 1 << 31, 1 << 25

@dataclass
class BO:
  """One allocation. `heap`/`heap_off` locate VRAM/GTT backing; USERPTR buffers live at `cpu_addr` in the host, and `alias` is
  the mock's own mapping of the same pages (0 when the memory is private and cannot be aliased), which the GPU uses: the
  process unmapping `cpu_addr` then turns the GPU's accesses into memory faults (`present`) instead of host crashes."""
  handle: int
  gpu_id: int
  va: int
  size: int
  flags: int
  mmap_offset: int
  heap: Heap | None = None
  heap_off: int = 0
  cpu_addr: int = 0
  alias: int = 0
  mapped_on: set = field(default_factory=set)   # gpu_ids

  @property
  def kind(self) -> str: return "userptr" if self.flags & FLAG_USERPTR else "vram" if self.flags & FLAG_VRAM else "gtt"

  def backing(self) -> np.ndarray | None:
    """What the GPU's MemoryMap should view for this buffer (None: the host memory at `va` itself)."""
    if self.heap is not None: return self.heap.view(self.heap_off, self.size)
    if (host := self.alias or self.cpu_addr) != self.va: return np.ctypeslib.as_array((ctypes.c_uint8 * self.size).from_address(host))
    return None

  def host_address(self) -> int:
    """Where the mock itself reads and writes the buffer (the device's view, or the USERPTR alias)."""
    return self.heap.address(self.heap_off) if self.heap is not None else self.alias or self.cpu_addr

  def present(self) -> bool:
    """Whether the GPU may still reach the buffer: a USERPTR range must still be mapped by the process (the real driver's MMU
    notifier invalidates it on munmap); pool memory always is."""
    return self.heap is not None or is_mapped(self.cpu_addr, self.size)
