"""RM memory objects and UVM's external ranges.

A memory object is VRAM (NV1_MEMORY_USER, from its GPU's heap), uncached system memory (NV1_MEMORY_SYSTEM, from the
process's system heap) or host memory the process already has (NV01_MEMORY_SYSTEM_OS_DESCRIPTOR: its pages at `cpu_addr`,
never replaced). GPUs reach objects through UVM external ranges: `map` puts [base, base+length) of a range on a GPU's
MemoryMap viewing the object's bytes from `offset`. The object's pages live while its RM handle or any GPU mapping does, as
the real driver keeps a mapped allocation alive after its handle is freed; they go back to the heap when both are gone.
"""
from __future__ import annotations
import ctypes
from dataclasses import dataclass, field
import numpy as np
from emu.common.memory import MemoryMap
from mockgpu.hostmem import Heap, host_munmap, is_mapped

@dataclass(eq=False)
class MemObject:
  """One allocation. `heap`/`heap_off` locate pool memory; OS-descriptor memory lives at `cpu_addr`, seen by the GPU through
  `alias` (the mock's own mapping of the same shared pages, 0 when the pages are private)."""
  handle: int
  kind: str                 # "vram", "sysmem" or "host"
  size: int
  heap: Heap | None = None
  heap_off: int = 0
  cpu_addr: int = 0
  alias: int = 0
  freed: bool = False       # its RM handle is gone
  maps: int = 0             # GPU mappings through UVM ranges
  gpu_va: int | None = None # where its first GPU mapping put its byte 0

  def view(self, offset:int, length:int) -> np.ndarray | None:
    """What a GPU's MemoryMap views for [offset, offset+length) of the object (None: the host memory at the VA itself)."""
    if self.heap is not None: return self.heap.view(self.heap_off, self.size)[offset:offset + length]
    if self.alias: return np.ctypeslib.as_array((ctypes.c_uint8 * length).from_address(self.alias + offset))
    return None

  def present(self) -> bool:
    """Whether a GPU may still reach the object: host pages must still be mapped by the process; pool memory always is."""
    return self.heap is not None or is_mapped(self.cpu_addr, self.size)

  def release_if_unused(self):
    """Give the pages back once neither the handle nor any mapping holds them."""
    if not self.freed or self.maps: return
    if self.heap is not None:
      self.heap.free(self.heap_off, self.size)
      self.heap = None
    if self.alias:
      host_munmap(self.alias, self.size)
      self.alias = 0

@dataclass(eq=False)
class ExternalRange:
  """A UVM external range [base, base+length) and what is mapped in it: (GPU memory map, mapping base) -> object."""
  base: int
  length: int
  mapped: dict = field(default_factory=dict)

  def map(self, memory:MemoryMap, base:int, length:int, obj:MemObject, offset:int, name:str):
    """Map [base, base+length) of the range on `memory`, showing `obj` from `offset` (a second map of the same place on the same
    GPU replaces the first, as UVM's does)."""
    self.unmap(memory, base)
    memory.map(base, length, name, backing=obj.view(offset, length), present=None if obj.heap is not None else obj.present)
    self.mapped[(memory, base)] = obj
    obj.maps += 1
    if obj.gpu_va is None: obj.gpu_va = base - offset

  def unmap(self, memory:MemoryMap, base:int):
    if (obj := self.mapped.pop((memory, base), None)) is None: return
    memory.unmap(base)
    obj.maps -= 1
    obj.release_if_unused()

  def clear(self):
    """Unmap everything in the range from every GPU (UVM_FREE)."""
    for memory, base in list(self.mapped): self.unmap(memory, base)
