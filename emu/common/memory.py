"""The GPU's view of host memory: a set of mapped address ranges, with checked, lane-vectorised reads and writes.

GPU VA == CPU VA (the KFD model), so a mapped range is read and written in place through numpy views of host memory.
Every access is checked against the map first; an access that any lane makes outside every range raises
`GPUMemoryFault` before any lane's data moves, so a faulting instruction never writes a byte anywhere.
"""
from __future__ import annotations
import bisect, ctypes
from typing import Callable
import numpy as np
from emu.common.faults import GPUMemoryFault

WORD_TYPES = {1: np.dtype("<u1"), 2: np.dtype("<u2"), 4: np.dtype("<u4"), 8: np.dtype("<u8")}
_NO_ROWS = np.zeros((0, 3), dtype=np.int64)

def _start(row:np.ndarray) -> int:
  """A native_table row's start address (stored as int64)."""
  return int(row[0]) & ((1 << 64) - 1)

def _row_at(table:np.ndarray, addr:int) -> int:
  """Where a row starting at `addr` is, or belongs, in a native table (rows sorted by unsigned start)."""
  return int(np.searchsorted(table[:, 0].view(np.uint64), np.uint64(addr)))

def rows_to_values(rows:np.ndarray) -> np.ndarray:
  """(n, nbytes<=8) little-endian uint8 rows -> uint64 (n,)."""
  out = np.zeros((len(rows), 8), dtype=np.uint8)
  out[:, :rows.shape[1]] = rows
  return out.view("<u8").reshape(-1).astype(np.uint64)

def values_to_rows(values:np.ndarray, nbytes:int) -> np.ndarray:
  """uint64 (n,) -> (n, nbytes) little-endian uint8 rows (the low bytes)."""
  return np.ascontiguousarray(np.asarray(values, dtype=np.uint64).astype("<u8")).view(np.uint8).reshape(-1, 8)[:, :nbytes]

class Mapping:
  """One mapped range [addr, addr+size), viewed as bytes in place. `present()`, when given, says whether the range can still be
  reached (host memory the process may unmap); every access to a range that is not faults."""
  __slots__ = ("addr", "size", "name", "writable", "view", "present", "_words", "native_row", "_bytes")
  def __init__(self, addr:int, size:int, name:str, writable:bool, backing:np.ndarray|None, present:Callable[[], bool]|None=None):
    self.addr, self.size, self.name, self.writable, self.present = addr, size, name, writable, present
    self.view = backing if backing is not None else np.ctypeslib.as_array((ctypes.c_uint8 * size).from_address(addr))
    self._words: dict[int, np.ndarray] = {}
    self._bytes: memoryview | None = None   # the range as a flat memoryview, once asked (`as_bytes`)
    # its row of MemoryMap.native_table, as int64 values (made once: the view's data address costs ~2 us to ask for)
    self.native_row = tuple(x - (1 << 64) if x >= 1 << 63 else x for x in (addr, size, self.view.ctypes.data - addr))
  def words(self, nbytes:int) -> np.ndarray | None:
    """The range as little-endian words of `nbytes` (1, 2, 4, 8) when it starts and ends on such a word, else None."""
    if (w := self._words.get(nbytes)) is None and self.addr % nbytes == 0 and self.size % nbytes == 0:
      w = self._words[nbytes] = self.view.view(WORD_TYPES[nbytes])
    return w
  def as_bytes(self) -> memoryview:
    """The range as a flat byte memoryview (slicing and assigning one costs a fraction of a numpy slice's overhead)."""
    if self._bytes is None: self._bytes = memoryview(self.view).cast("B")
    return self._bytes
  @property
  def end(self) -> int: return self.addr + self.size
  def gone(self) -> bool:
    """The range can no longer be reached (its `present()` says so)."""
    return self.present is not None and not self.present()
  def __repr__(self): return f"Mapping({self.addr:#x}+{self.size:#x} {self.name!r}{'' if self.writable else ' ro'})"

class MemoryMap:
  """The ranges mapped to one GPU. Not thread-safe by itself: the owner serialises dispatches and map changes."""
  def __init__(self):
    self._starts: list[int] = []
    self._maps: list[Mapping] = []
    self._tables: tuple[np.ndarray, np.ndarray] = (_NO_ROWS, _NO_ROWS)   # native_table() for reads and for writes, kept up to date

  def map(self, addr:int, size:int, name:str="", writable:bool=True, backing:np.ndarray|None=None,
          present:Callable[[], bool]|None=None) -> Mapping:
    """Map [addr, addr+size). `backing` (a uint8 array of `size`) stands in for host memory at addr, e.g. for a device-local
    aperture; by default the range is host memory at that address, which the caller must keep alive while mapped. `present`:
    see Mapping."""
    if size <= 0: raise ValueError(f"cannot map {size} bytes at {addr:#x}")
    i = bisect.bisect_right(self._starts, addr)
    if (i > 0 and self._maps[i-1].end > addr) or (i < len(self._maps) and self._maps[i].addr < addr + size):
      raise ValueError(f"mapping {addr:#x}+{size:#x} overlaps {self._maps[i-1] if i > 0 and self._maps[i-1].end > addr else self._maps[i]}")
    m = Mapping(addr, size, name, writable, backing, present)
    self._starts.insert(i, addr)
    self._maps.insert(i, m)
    if present is None:   # (a row in each table it belongs to, at its place by unsigned start)
      self._tables = tuple(np.insert(t, _row_at(t, addr), m.native_row, axis=0) if writable or not writes else t
                           for t, writes in zip(self._tables, (False, True)))
    return m

  def unmap(self, addr:int) -> Mapping:
    """Remove the range that starts at addr; later accesses to it fault."""
    i = bisect.bisect_left(self._starts, addr)
    if i == len(self._starts) or self._starts[i] != addr: raise KeyError(f"no mapping starts at {addr:#x}")
    self._starts.pop(i)
    self._tables = tuple(np.delete(t, k, axis=0) if (k := _row_at(t, addr)) < len(t) and _start(t[k]) == addr else t for t in self._tables)
    return self._maps.pop(i)

  def clear(self):
    """Remove every range (a translation that is rebuilt from scratch)."""
    self._starts.clear()
    self._maps.clear()
    self._tables = (_NO_ROWS, _NO_ROWS)

  def native_table(self, write:bool=False) -> np.ndarray:
    """(start, size, host address - start) int64 rows, sorted by start, of the ranges native code may read (`write`: and write) in
    place: every range whose reach cannot change under it (host memory the process may unmap, `present`, is left out: native code
    then takes the checked path); with `write`, only writable ones. Valid until the next map, unmap or clear; native code must find
    each access inside one row. (Kept up to date by map and unmap, row by row: tinygrad maps and unmaps a buffer around nearly
    every test, and rebuilding the tables from hundreds of mappings each time cost more than the small kernels between.)"""
    return self._tables[write]

  def find(self, addr:int, size:int=1) -> Mapping | None:
    """The mapping that holds all of [addr, addr+size), or None."""
    i = bisect.bisect_right(self._starts, addr) - 1
    if i >= 0 and addr + size <= (m:=self._maps[i]).end: return m
    return None

  def __iter__(self): return iter(list(self._maps))

  # ---- scalar (whole-buffer) access, used by command processors and DMA engines ----
  def _spans(self, addr:int, size:int, write:bool) -> list[np.ndarray]:
    """Views of [addr, addr+size) in the mappings that hold it end to end (a buffer whose pages map to separate runs of device
    memory is several adjacent mappings, as page tables make it); GPUMemoryFault, before any byte moves, at the first byte none
    holds (or that a write may not change)."""
    out, pos, end = [], addr, addr + size
    while True:
      if (m := self.find(pos)) is None or (write and not m.writable): raise GPUMemoryFault(pos, write, detail=f"{size} bytes from {addr:#x}")
      if m.gone(): raise GPUMemoryFault(pos, write, detail=f"{size} bytes from {addr:#x} in {m.name}, which the host unmapped")
      out.append(m.view[pos - m.addr : min(end, m.end) - m.addr])
      if (pos := m.end) >= end: return out

  def read(self, addr:int, size:int) -> bytes:
    """Read `size` bytes of mapped memory (one mapping or several adjacent ones)."""
    if (m := self.find(addr, size)) is not None and m.present is None: return bytes(m.as_bytes()[addr - m.addr:addr - m.addr + size])
    parts = self._spans(addr, size, False)
    return parts[0].tobytes() if len(parts) == 1 else b"".join(p.tobytes() for p in parts)

  def write(self, addr:int, data:bytes|bytearray|memoryview|np.ndarray):
    """Write bytes to mapped memory (one mapping or several adjacent ones; nothing is written when any byte faults)."""
    if isinstance(data, bytes) and (m := self.find(addr, len(data))) is not None and m.writable and m.present is None:
      m.as_bytes()[addr - m.addr:addr - m.addr + len(data)] = data   # (the common case: packets and pointers, one mapping)
      return
    src = np.frombuffer(data, dtype=np.uint8) if not isinstance(data, np.ndarray) else data.view(np.uint8).reshape(-1)
    at = 0
    for part in self._spans(addr, src.size, True):
      part[:] = src[at:at + part.size]
      at += part.size

  # ---- lane-vectorised access, used by the shader executors ----
  def _locate(self, addrs:np.ndarray, nbytes:int, write:bool) -> list[tuple[Mapping, np.ndarray]] | None:
    """Group lane addresses by mapping; fault on the first lane whose [addr, addr+nbytes) no (writable) mapping holds. None when
    some lane's access runs on from one mapping into the next adjacent one (a buffer whose pages map to separate runs): the
    caller then moves the access byte by byte."""
    addrs = np.asarray(addrs, dtype=np.uint64)
    if len(addrs) and (m := self.find(lo := int(addrs.min()), int(addrs.max()) + nbytes - lo)) is not None and (m.writable or not write):
      if m.gone(): raise GPUMemoryFault(lo, write, detail=f"{m.name}, which the host unmapped")
      return [(m, slice(None))]   # the common case: every lane inside one mapping
    idx = np.searchsorted(np.asarray(self._starts, dtype=np.uint64), addrs, side="right").astype(np.int64) - 1
    groups: list[tuple[Mapping, np.ndarray]] = []
    bad, split = idx < 0, False
    for i in np.unique(idx[~bad]):
      m, sel = self._maps[int(i)], np.nonzero(idx == i)[0]
      over = addrs[sel] > np.uint64(m.end - nbytes)   # not addr + nbytes > end: that sum wraps for addresses near 2**64
      if (write and not m.writable) or m.gone(): bad[sel] = True
      elif over.any():
        across = np.array([self._held(int(a), nbytes, write) for a in addrs[sel[over]]])   # (rare: a per-lane look)
        bad[sel[over][~across]], split = True, split or bool(across.any())
      else: groups.append((m, sel))
    if bad.any():
      lane = int(np.nonzero(bad)[0][0])
      raise GPUMemoryFault(int(addrs[lane]), write, detail=f"lane {lane}, {nbytes}-byte access")
    return None if split else groups

  def _held(self, addr:int, nbytes:int, write:bool) -> bool:
    """Whether adjacent mappings hold all of [addr, addr+nbytes) (writable ones, for a write)."""
    try: self._spans(addr, nbytes, write)
    except GPUMemoryFault: return False
    return True

  def _bytes(self, addrs:np.ndarray, nbytes:int) -> np.ndarray:
    """Each lane's byte addresses, lane by lane (lane-major: a scatter of them keeps the lane order)."""
    return (addrs[:, None] + np.arange(nbytes, dtype=np.uint64)[None, :]).reshape(-1)

  def check(self, addrs:np.ndarray, nbytes:int, write:bool) -> None:
    """Raise the GPUMemoryFault a `gather`/`scatter` of `nbytes` at `addrs` would raise, moving nothing (checks a whole
    multi-access instruction before its first write)."""
    self._locate(addrs, nbytes, write)

  def gather(self, addrs:np.ndarray, nbytes:int) -> np.ndarray:
    """Read `nbytes` (1, 2, 4, 8, 12 or 16) at each lane address; returns a (lanes, nbytes) uint8 array."""
    addrs = np.asarray(addrs, dtype=np.uint64)
    if (groups := self._locate(addrs, nbytes, False)) is None: return self.gather(self._bytes(addrs, nbytes), 1).reshape(len(addrs), nbytes)
    out = np.empty((len(addrs), nbytes), dtype=np.uint8)
    offs = np.arange(nbytes, dtype=np.int64)
    for m, sel in groups:
      out[sel] = m.view[(addrs[sel].astype(np.int64) - m.addr)[:, None] + offs]
    return out

  def dword_index(self, addrs:np.ndarray, nbytes:int, write:bool) -> tuple[np.ndarray, np.ndarray] | None:
    """(dwords of the one mapping that holds every lane's [addr, addr + nbytes), each lane's dword index) when every address is
    dword aligned; None when the lanes span several mappings or some address is unaligned. Faults as `gather` (`scatter` when
    `write`) does."""
    addrs = np.asarray(addrs, dtype=np.uint64)
    return self._aligned(self._locate(addrs, nbytes, write), addrs, 4)

  def _aligned(self, groups:list, addrs:np.ndarray, nbytes:int) -> tuple[np.ndarray, np.ndarray] | None:
    """(words of the one mapping every lane is in, each lane's word index) when every lane's access is one naturally aligned
    word of it; None otherwise (several mappings, odd sizes, unaligned lanes: the byte path)."""
    if groups is None or nbytes not in WORD_TYPES or len(groups) != 1 or (w := groups[0][0].words(nbytes)) is None: return None
    off = addrs.astype(np.int64) - groups[0][0].addr
    return None if (off & (nbytes - 1)).any() else (w, off // nbytes)

  def load(self, addrs:np.ndarray, nbytes:int) -> np.ndarray:
    """Read one little-endian value of `nbytes` (1 to 8) at each lane address; uint64 (lanes,)."""
    addrs = np.asarray(addrs, dtype=np.uint64)
    if (hit := self._aligned(self._locate(addrs, nbytes, False), addrs, nbytes)) is not None: return hit[0][hit[1]].astype(np.uint64)
    return rows_to_values(self.gather(addrs, nbytes))

  def store(self, addrs:np.ndarray, values:np.ndarray, nbytes:int):
    """Write the low `nbytes` (1 to 8) of each lane's value at its address, in lane order (the last lane wins)."""
    addrs = np.asarray(addrs, dtype=np.uint64)
    if (hit := self._aligned(self._locate(addrs, nbytes, True), addrs, nbytes)) is not None:
      hit[0][hit[1]] = np.asarray(values, dtype=np.uint64).astype(WORD_TYPES[nbytes])
    else: self.scatter(addrs, values_to_rows(values, nbytes))

  def scatter(self, addrs:np.ndarray, data:np.ndarray):
    """Write row i of `data` (a (lanes, nbytes) uint8 array) at addrs[i]. Lanes are written in order: the last lane wins."""
    data, addrs = np.asarray(data, dtype=np.uint8), np.asarray(addrs, dtype=np.uint64)
    nbytes, offs = data.shape[1], np.arange(data.shape[1], dtype=np.int64)
    if (groups := self._locate(addrs, nbytes, True)) is None: return self.scatter(self._bytes(addrs, nbytes), data.reshape(-1, 1))
    for m, sel in groups:
      m.view[(addrs[sel].astype(np.int64) - m.addr)[:, None] + offs] = data[sel]
