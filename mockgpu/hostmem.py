"""Host memory primitives (libc mmap/munmap/mremap/fallocate via ctypes) and `Heap`: a sparse memfd standing in for a memory pool.

A Heap is what VRAM (per GPU) or GTT (system memory) is to the mock driver: a memfd of the pool's size (sparse: pages exist
only once touched) with a first-fit allocator handing out page-aligned ranges. Each allocation gets the device's own mapping
of its range when it is made and loses it when freed, so the mock's address space grows with what is allocated, not with
the pools' sizes (a 24 GiB board runs under `ulimit -v 8G`). A CPU mapping of a buffer maps the same memfd pages at the
address the caller asks for, so GPU and CPU views alias exactly like a BAR mapping does, and the process unmapping its CPU
view never takes the device's away. Freed ranges are hole-punched: their pages go back to the host and read as zero when reused.
"""
from __future__ import annotations
import bisect, ctypes, errno, mmap, os
import numpy as np

libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype, libc.mmap.argtypes = ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.munmap.restype, libc.munmap.argtypes = ctypes.c_int, [ctypes.c_void_p, ctypes.c_size_t]
libc.fallocate.restype, libc.fallocate.argtypes = ctypes.c_int, [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
libc.msync.restype, libc.msync.argtypes = ctypes.c_int, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
libc.mremap.restype, libc.mremap.argtypes = ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_int]

MAP_FAILED = ctypes.c_void_p(-1).value
MAP_FIXED, MAP_NORESERVE, MREMAP_MAYMOVE = 0x10, 0x4000, 1
FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE = 0x1, 0x2
PAGE = mmap.PAGESIZE

def host_mmap(start:int, size:int, prot:int, flags:int, fd:int, offset:int) -> int:
  """mmap(2); raises OSError with the host errno on failure."""
  addr = libc.mmap(start or None, size, prot, flags, fd, offset)
  if addr in (None, MAP_FAILED): raise OSError(ctypes.get_errno(), f"mmap of {size:#x} bytes at {start:#x} failed: {os.strerror(ctypes.get_errno())}")
  return addr

def host_munmap(addr:int, size:int) -> int:
  """munmap(2); returns libc's result."""
  return libc.munmap(addr, size)

def is_mapped(addr:int, size:int) -> bool:
  """Whether every page of [addr, addr+size) is mapped in this process (msync answers ENOMEM otherwise)."""
  start = addr & ~(PAGE - 1)
  return libc.msync(start, addr + size - start, 1) == 0  # MS_ASYNC

def alias_shared(addr:int, size:int) -> int|None:
  """A second mapping of the shared pages at [addr, addr+size) (mremap with old size 0), which stays valid when the process
  unmaps the original; None when the range is not one shared mapping (private memory cannot be aliased)."""
  new = libc.mremap(addr, 0, size, MREMAP_MAYMOVE)
  return None if new in (None, MAP_FAILED) else new

def round_up(x:int, a:int) -> int: return (x + a - 1) // a * a

class Heap:
  """A memory pool backed by a sparse memfd; see the module docstring."""
  def __init__(self, name:str, size:int):
    self.name, self.size = name, round_up(size, PAGE)
    self.fd = os.memfd_create(f"mockgpu-{name}", 0)
    os.ftruncate(self.fd, self.size)
    self._free: list[tuple[int, int]] = [(0, self.size)]  # sorted (offset, size) holes
    self._views: dict[int, int] = {}                       # offset of an allocation -> host address of the device's mapping
    self.used = 0

  def alloc(self, size:int) -> int:
    """Reserve `size` bytes (rounded to pages) and map them for the device; returns the offset. ENOMEM when no hole is large
    enough (or the host refuses the mapping)."""
    size = round_up(size, PAGE)
    for i, (off, hole) in enumerate(self._free):
      if hole >= size:
        self._views[off] = host_mmap(0, size, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED | MAP_NORESERVE, self.fd, off)
        if hole == size: self._free.pop(i)
        else: self._free[i] = (off + size, hole - size)
        self.used += size
        return off
    raise OSError(errno.ENOMEM, f"{self.name}: cannot allocate {size:#x} bytes ({self.used:#x} of {self.size:#x} in use)")

  def free(self, off:int, size:int):
    """Return a range: the device's mapping goes, its pages are released (read back as zero) and the hole merges with its
    neighbours."""
    size = round_up(size, PAGE)
    host_munmap(self._views.pop(off), size)
    libc.fallocate(self.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, size)
    self.used -= size
    i = bisect.bisect_left(self._free, (off, 0))
    self._free.insert(i, (off, size))
    if i + 1 < len(self._free) and off + size == self._free[i+1][0]: self._free[i:i+2] = [(off, size + self._free[i+1][1])]
    if i > 0 and self._free[i-1][0] + self._free[i-1][1] == off: self._free[i-1:i+1] = [(self._free[i-1][0], self._free[i-1][1] + self._free[i][1])]

  def address(self, off:int) -> int:
    """The host address of the device's mapping of the allocation at `off`."""
    return self._views[off]

  def view(self, off:int, size:int) -> np.ndarray:
    """The device's uint8 view of the allocation at `off` (its first `size` bytes)."""
    return np.ctypeslib.as_array((ctypes.c_uint8 * size).from_address(self._views[off]))
