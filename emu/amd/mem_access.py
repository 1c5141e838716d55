"""The memory accessors handed to pcode ops (the `VectorMemory` / `ScalarMemory` protocols of emu.pcode.abi).

Global memory goes through the checked `MemoryMap` (faults before any byte moves). LDS and scratch are emulator-owned
byte arrays; each accessor carries a per-lane base so one flat array serves every workgroup (LDS) or lane (scratch).
LDS follows the hardware: out-of-range reads return 0 and out-of-range writes are dropped. Scratch out of the lane's
private size is a `GPUMemoryFault` (the address reported is the lane's private offset).
"""
from __future__ import annotations
import numpy as np
from emu.amd.api import GPUMemoryFault, DispatchStats
from emu.amd.memory import MemoryMap

U64 = np.uint64

def _to_u64(rows:np.ndarray) -> np.ndarray:
  """(n, nbytes<=8) little-endian uint8 rows -> uint64 (n,)."""
  out = np.zeros((len(rows), 8), dtype=np.uint8)
  out[:, :rows.shape[1]] = rows
  return out.view("<u8").reshape(-1).astype(U64)

def _to_rows(values:np.ndarray, nbytes:int) -> np.ndarray:
  return np.ascontiguousarray(np.asarray(values, dtype=U64).astype("<u8")).view(np.uint8).reshape(-1, 8)[:, :nbytes]

class GlobalMemory:
  """Vector access to mapped host memory, counting traffic into `stats`."""
  def __init__(self, mem:MemoryMap, stats:DispatchStats):
    self.mem, self.stats = mem, stats
  def read(self, addrs:np.ndarray, nbytes:int) -> np.ndarray:
    self.stats.bytes_read += len(addrs) * nbytes
    return _to_u64(self.mem.gather(np.asarray(addrs, dtype=U64), nbytes))
  def write(self, addrs:np.ndarray, values:np.ndarray, nbytes:int) -> None:
    self.stats.bytes_written += len(addrs) * nbytes
    self.mem.scatter(np.asarray(addrs, dtype=U64), _to_rows(values, nbytes))

class LocalMemory:
  """Per-lane view of a flat byte array: lane i's address a means array[base[i] + a] when a + nbytes <= limit."""
  def __init__(self, store:np.ndarray, limit:int, fault_oob:bool):
    self.store, self.limit, self.fault_oob = store, limit, fault_oob
    self.base = np.zeros(0, dtype=np.int64)
  def select(self, mask:np.ndarray) -> LocalMemory:
    """The same memory seen by the lanes `mask` selects (pcode's conditional accesses pass only those lanes' addresses)."""
    sub = LocalMemory(self.store, self.limit, self.fault_oob)
    sub.base = self.base[mask]
    return sub
  def _index(self, addrs:np.ndarray, nbytes:int, write:bool) -> tuple[np.ndarray, np.ndarray]:
    a = np.asarray(addrs, dtype=U64) & U64(0xffffffff)
    ok = a + U64(nbytes) <= U64(self.limit)
    if self.fault_oob and not ok.all():
      lane = int(np.nonzero(~ok)[0][0])
      raise GPUMemoryFault(int(a[lane]), write, detail=f"private (scratch) offset beyond {self.limit} bytes per lane, lane {lane}")
    return ok, (self.base + np.where(ok, a, 0).astype(np.int64))[:, None] + np.arange(nbytes)
  def read(self, addrs:np.ndarray, nbytes:int) -> np.ndarray:
    ok, idx = self._index(addrs, nbytes, False)
    return np.where(ok, _to_u64(self.store[idx]), U64(0)) if self.limit else np.zeros(len(ok), dtype=U64)
  def write(self, addrs:np.ndarray, values:np.ndarray, nbytes:int) -> None:
    ok, idx = self._index(addrs, nbytes, True)
    self.store[idx[ok]] = _to_rows(values, nbytes)[ok]

class ScalarMemory:
  """SMEM access: one address, Python ints."""
  def __init__(self, mem:MemoryMap, stats:DispatchStats):
    self.mem, self.stats = mem, stats
  def read(self, addr:int, nbytes:int) -> int:
    self.stats.bytes_read += nbytes
    return int.from_bytes(self.mem.read(addr, nbytes), "little")
  def write(self, addr:int, value:int, nbytes:int) -> None:
    self.stats.bytes_written += nbytes
    self.mem.write(addr, (value & ((1 << (8 * nbytes)) - 1)).to_bytes(nbytes, "little"))
