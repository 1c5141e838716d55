"""The memory accessors handed to pcode ops (the `VectorMemory` / `ScalarMemory` protocols of emu.pcode.abi).

Global memory goes through the checked `MemoryMap` (faults before any byte moves). LDS and scratch are emulator-owned
byte arrays; each accessor carries a per-lane base so one flat array serves every workgroup (LDS) or lane (scratch).
LDS follows the hardware: out-of-range reads return 0 and out-of-range writes are dropped. Scratch out of the lane's
private size is a `GPUMemoryFault` (the address reported is the lane's private offset). `InRange` is global memory behind a
buffer's range check (MUBUF: lanes out of range read 0, their writes are dropped). `Located` is global memory for a multi-dword
load or store whose lanes' spans were found once (`locate`).

A faulting instruction must not write anything, but the pcode moves a multi-dword store one dword per call: `footprint` finds
the bytes an op touches around its ADDR (and how many writes it makes) by running it once against a recording stand-in, so an
executor can `check` every lane's whole span before the first write.
"""
from __future__ import annotations
import numpy as np
from emu.amd.api import GPUMemoryFault, DispatchStats
from emu.common.memory import MemoryMap, rows_to_values, values_to_rows
from emu.pcode.abi import CompiledOp, OpState

U64 = np.uint64
ORIGIN = 1 << 40   # the ADDR a footprint probe runs at (far from 0: offsets below ADDR stay positive)

class GlobalMemory:
  """Vector access to mapped host memory, counting traffic into `stats`."""
  def __init__(self, mem:MemoryMap, stats:DispatchStats):
    self.mem, self.stats = mem, stats
  def read(self, addrs:np.ndarray, nbytes:int) -> np.ndarray:
    self.stats.bytes_read += len(addrs) * nbytes
    return self.mem.load(addrs, nbytes)
  def write(self, addrs:np.ndarray, values:np.ndarray, nbytes:int) -> None:
    self.stats.bytes_written += len(addrs) * nbytes
    self.mem.store(addrs, values, nbytes)
  def check(self, addrs:np.ndarray, nbytes:int, write:bool) -> None:
    """Fault now if an access of `nbytes` at any of `addrs` would (nothing moves)."""
    self.mem.check(np.asarray(addrs, dtype=U64), nbytes, write)

class Located:
  """Global memory for a load or store whose pcode moves several dwords at fixed offsets from each lane's address (B64/B96/B128):
  every lane's whole span is found (one mapping, dword aligned, else a fault) once, and each of the op's accesses at one offset for
  all lanes then indexes that mapping's dwords directly (a write in lane order, the last lane winning, as MemoryMap.store writes).
  Traffic is counted per access, as GlobalMemory counts it; any other access goes to the memory itself."""
  def __init__(self, mem:GlobalMemory, start:np.ndarray, size:int, words:np.ndarray, index:np.ndarray):
    self.mem, self.start, self.size, self.words, self.index = mem, start, size, words, index
  def _at(self, addrs:np.ndarray, nbytes:int) -> np.ndarray | None:
    """Each lane's dword index for an access of `nbytes` at `addrs`, when they are one dword offset into every lane's span."""
    d = np.asarray(addrs, dtype=U64) - self.start
    off = int(d[0]) if len(d) else 0
    if nbytes % 4 or off % 4 or off + nbytes > self.size or not (d == d[0]).all(): return None
    return self.index + off // 4
  def read(self, addrs:np.ndarray, nbytes:int) -> np.ndarray:
    if nbytes not in (4, 8) or (at := self._at(addrs, nbytes)) is None: return self.mem.read(addrs, nbytes)
    self.mem.stats.bytes_read += len(at) * nbytes
    lo = self.words[at].astype(U64)
    return lo | (self.words[at + 1].astype(U64) << U64(32)) if nbytes == 8 else lo
  def read_words(self, addrs:np.ndarray, k:int) -> np.ndarray | None:
    """k consecutive dwords from each lane's address, (lanes, k) uint32, counted as k dword reads (runtime.mread_words); None when
    they are not all inside every lane's span at one offset (the caller then reads them a dword at a time)."""
    if (at := self._at(addrs, 4 * k)) is None: return None
    self.mem.stats.bytes_read += len(at) * 4 * k
    return self.words[at[:, None] + np.arange(k)]
  def write(self, addrs:np.ndarray, values:np.ndarray, nbytes:int) -> None:
    if nbytes not in (4, 8) or (at := self._at(addrs, nbytes)) is None: return self.mem.write(addrs, values, nbytes)
    self.mem.stats.bytes_written += len(at) * nbytes
    v = np.asarray(values, dtype=U64)
    if nbytes == 8: self.words[np.stack([at, at + 1], axis=1).reshape(-1)] = np.stack([v, v >> U64(32)], axis=1).reshape(-1).astype(np.uint32)
    else: self.words[at] = v.astype(np.uint32)
  def select(self, mask:np.ndarray) -> Located:
    """The lanes `mask` selects (pcode's conditional accesses pass only their addresses)."""
    return Located(self.mem, self.start[mask], self.size, self.words, self.index[mask])

def locate(mem:GlobalMemory, addrs:np.ndarray, lo:int, size:int, write:bool) -> GlobalMemory | Located:
  """A Located view of the bytes [addr + lo, addr + lo + size) of each lane (for writing when `write`); `mem` itself when some lane's
  span faults (the op's own accesses then raise the fault they would), reaches several mappings or is not dword aligned."""
  start = np.asarray(addrs, dtype=U64) + U64(lo & 0xffffffffffffffff)
  try: hit = mem.mem.dword_index(start, size, write)
  except GPUMemoryFault: return mem
  return mem if hit is None else Located(mem, start, size, *hit)

class InRange:
  """Global memory for lanes of which only those `ok` selects passed a buffer's range check: the others read 0 and write nothing."""
  def __init__(self, mem:GlobalMemory, ok:np.ndarray):
    self.mem, self.ok = mem, ok
  def select(self, mask:np.ndarray) -> InRange: return InRange(self.mem, self.ok[mask])
  def read(self, addrs:np.ndarray, nbytes:int) -> np.ndarray:
    out = np.zeros(len(self.ok), dtype=U64)
    if self.ok.any(): out[self.ok] = self.mem.read(np.asarray(addrs, dtype=U64)[self.ok], nbytes)
    return out
  def write(self, addrs:np.ndarray, values:np.ndarray, nbytes:int) -> None:
    if self.ok.any(): self.mem.write(np.asarray(addrs, dtype=U64)[self.ok], np.asarray(values)[self.ok], nbytes)

class LocalMemory:
  """Per-lane view of a flat byte array: lane i's address a means array[base[i] + a] when a + nbytes <= limit."""
  def __init__(self, store:np.ndarray, limit:int, fault_oob:bool):
    self.store, self.limit, self.fault_oob = store, limit, fault_oob
    self.base = np.zeros(0, dtype=np.int64)
  def at(self, base:np.ndarray) -> LocalMemory:
    """The same memory with lane i's addresses starting at byte `base[i]` of the store (its workgroup's LDS, its scratch slot)."""
    view = LocalMemory(self.store, self.limit, self.fault_oob)
    view.base = base
    return view
  def select(self, mask:np.ndarray) -> LocalMemory:
    """The same memory seen by the lanes `mask` selects (pcode's conditional accesses pass only those lanes' addresses)."""
    return self.at(self.base[mask])
  def check(self, addrs:np.ndarray, nbytes:int, write:bool) -> np.ndarray:
    """Which lanes' accesses are in range; out of range faults (scratch) instead when the memory says so."""
    a = np.asarray(addrs, dtype=U64) & U64(0xffffffff)
    ok = a + U64(nbytes) <= U64(self.limit)
    if self.fault_oob and not ok.all():
      lane = int(np.nonzero(~ok)[0][0])
      raise GPUMemoryFault(int(a[lane]), write, detail=f"private (scratch) offset beyond {self.limit} bytes per lane, lane {lane}")
    return ok
  def _index(self, addrs:np.ndarray, nbytes:int, write:bool) -> tuple[np.ndarray, np.ndarray]:
    ok = self.check(addrs, nbytes, write)
    a = np.asarray(addrs, dtype=U64) & U64(0xffffffff)
    return ok, (self.base + np.where(ok, a, 0).astype(np.int64))[:, None] + np.arange(nbytes)
  def read(self, addrs:np.ndarray, nbytes:int) -> np.ndarray:
    ok, idx = self._index(addrs, nbytes, False)
    return np.where(ok, rows_to_values(self.store[idx]), U64(0)) if self.limit else np.zeros(len(ok), dtype=U64)
  def write(self, addrs:np.ndarray, values:np.ndarray, nbytes:int) -> None:
    ok, idx = self._index(addrs, nbytes, True)
    self.store[idx[ok]] = values_to_rows(values, nbytes)[ok]

class ScalarMemory:
  """SMEM access: one address, Python ints."""
  def __init__(self, mem:MemoryMap, stats:DispatchStats):
    self.mem, self.stats = mem, stats
  def read(self, addr:int, nbytes:int) -> int:
    self.stats.bytes_read += nbytes
    return int.from_bytes(self.mem.read(addr, nbytes), "little")
  def read_dwords(self, addr:int, k:int) -> int | None:
    """k dwords from addr as one int, counted as k dword reads (runtime.sread_words); None unless they lie in one mapping that is
    still there, without wrapping past 2**64 (the caller then reads them a dword at a time, faulting where that faults)."""
    if addr + 4 * k > 1 << 64 or (m := self.mem.find(addr, 4 * k)) is None or m.gone(): return None
    self.stats.bytes_read += 4 * k
    return int.from_bytes(m.view[addr - m.addr:addr - m.addr + 4 * k].tobytes(), "little")
  def write(self, addr:int, value:int, nbytes:int) -> None:
    self.stats.bytes_written += nbytes
    self.mem.write(addr, (value & ((1 << (8 * nbytes)) - 1)).to_bytes(nbytes, "little"))
  def check(self, addr:int, nbytes:int, write:bool) -> None:
    """Fault now if an access of `nbytes` at `addr` would (nothing moves)."""
    if (m := self.mem.find(addr, nbytes)) is None or (write and not m.writable): raise GPUMemoryFault(addr, write, detail=f"{nbytes} bytes")

class Footprint:
  """A stand-in memory that records what an op touches: the bytes [lo, hi) relative to ADDR (= ORIGIN), each access as (offset,
  bytes) in call order, and the number of read and write calls. Reads return 0, writes go nowhere. Scalar ops call it with
  Python ints, vector ops with one-lane arrays."""
  def __init__(self):
    self.lo, self.hi, self.reads, self.writes = None, None, 0, 0
    self.accesses: list[tuple[int, int]] = []
  @property
  def size(self) -> int: return 0 if self.lo is None else self.hi - self.lo
  def _note(self, addr, nbytes:int):
    a = int(np.asarray(addr).reshape(-1)[0]) - ORIGIN
    self.accesses.append((a, nbytes))
    self.lo, self.hi = (a, a + nbytes) if self.lo is None else (min(self.lo, a), max(self.hi, a + nbytes))
  def read(self, addr, nbytes:int):
    self.reads += 1
    self._note(addr, nbytes)
    return np.zeros(len(addr), dtype=U64) if isinstance(addr, np.ndarray) else 0
  def write(self, addr, value, nbytes:int) -> None:
    self.writes += 1
    self._note(addr, nbytes)

def footprint(op:CompiledOp, scalar:bool, **fields) -> Footprint:
  """Run `op` once on zero data at ADDR = ORIGIN against a `Footprint` (encoding `fields` as the instruction has them). Every
  SMEM/FLAT/GLOBAL/SCRATCH/MUBUF op of the pcode accesses fixed offsets from ADDR, so this is where any lane's accesses lie."""
  fp = Footprint()
  zero = lambda w: 0 if scalar else np.zeros((1, w // 32), dtype=np.uint32) if w > 64 else np.zeros(1, dtype=U64)
  vals = {name: zero(op.widths.get(name, 32)) for name in op.reads - set(fields) - {"n", "MEM", "ADDR"}}
  op.fn(OpState(**vals | fields, n=1, MEM=fp, ADDR=ORIGIN if scalar else np.array([ORIGIN], dtype=U64)))
  return fp
