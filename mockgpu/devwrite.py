"""Seeing the host's stores to device registers (doorbells), which on real hardware land on the PCIe bus.

tinygrad writes doorbells through `tinygrad.helpers.to_mv`, i.e. `memoryview((c_uint8*n).from_address(addr)).cast(...)`.
`install()` shadows the name `memoryview` in the `tinygrad.helpers` module namespace only (builtins stay untouched): the
replacement returns a `WatchedView` proxy when the viewed memory lies in a registered range, and a real memoryview
otherwise. `isinstance(x, memoryview)` keeps working through a metaclass check, `.cast()` keeps the proxy, and every store
through the proxy first writes the host memory and then calls the range's callback synchronously on the storing thread.

Limits: only stores made through `to_mv` views are seen. Stores by native code (ctypes.memmove, C libraries) or through a
memoryview built some other way bypass the proxy; tinygrad writes doorbells only through `to_mv`, so that is enough.
Every `to_mv` call also gives the registered `on_touch` hook a chance to run (the engines use it to make progress on queues
stalled on memory the host writes directly), and a view of an address with a `trap` runs the trap first (a device that knows
the memory will never be written raises there).
"""
from __future__ import annotations
import builtins, ctypes, mmap, struct, threading
from typing import Callable
from mockgpu.hostmem import host_mmap

_real_memoryview = builtins.memoryview

class WatchedRange:
  """[start, start+size) with a callback `on_write(offset, fmt, value)` run after each store through a proxy."""
  def __init__(self, start:int, size:int, on_write:Callable[[int, str, int], None]):
    self.start, self.size, self.on_write = start, size, on_write

_ranges: list[WatchedRange] = []
_touch_hooks: list[Callable[[], None]] = []
_traps: dict[int, Callable[[int], None]] = {}   # address -> called (and may raise) when a view starting there is made
_lock = threading.Lock()

def watch(rng:WatchedRange) -> WatchedRange:
  """Register a range; stores into it through `to_mv` views call its callback."""
  with _lock: _ranges.append(rng)
  return rng

def register_page(size:int, on_write:Callable[[int, str, int], None]) -> int:
  """Fresh zeroed shared host memory of `size` bytes, watched with `on_write` (a device's register or doorbell window);
  returns its address."""
  addr = host_mmap(0, size, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED | mmap.MAP_ANONYMOUS, -1, 0)
  ctypes.memset(addr, 0, size)
  watch(WatchedRange(addr, size, on_write))
  return addr

def unwatch(rng:WatchedRange):
  """Forget a range registered with `watch`."""
  with _lock:
    if rng in _ranges: _ranges.remove(rng)

def add_touch_hook(fn:Callable[[], None]):
  """Run `fn()` on every `to_mv` call (cheap checks only: it is on tinygrad's hot path)."""
  with _lock:
    if fn not in _touch_hooks: _touch_hooks.append(fn)

def trap(addr:int, fn:Callable[[int], None]):
  """Call `fn(addr)` whenever a `to_mv` view starting at `addr` is made (before the caller can read it); `fn` may raise, and then
  the host's access fails with that error. A device uses this for memory it knows will never be written (a semaphore whose
  release died with its channel)."""
  with _lock: _traps[addr] = fn

def untrap(addr:int):
  """Forget the trap at `addr` (if any)."""
  with _lock: _traps.pop(addr, None)

def device_store(addr:int, fmt:str, value:int):
  """A store that reaches host memory by another path than a `to_mv` view (a write TLP the mock USB bridge forwards): write it
  and run the callback of the watched range holding it, as a store through a proxy would."""
  size = struct.calcsize(fmt)
  ctypes.memmove(addr, struct.pack(fmt, value), size)
  if (rng := _find(addr, size)) is not None: rng.on_write(addr - rng.start, fmt, value)

def _find(addr:int, size:int) -> WatchedRange | None:
  for r in _ranges:
    if r.start <= addr and addr + size <= r.start + r.size: return r
  return None

class WatchedView:
  """A memoryview stand-in over watched device memory: indexing reads/writes host memory, stores notify the range."""
  def __init__(self, rng:WatchedRange, addr:int, nbytes:int, fmt:str="B"):
    self._rng, self._addr, self.nbytes, self.format = rng, addr, nbytes, fmt
    self.itemsize = struct.calcsize(fmt)
    self.shape = (nbytes // self.itemsize,)
    self.readonly = False

  def cast(self, fmt:str, shape=None) -> WatchedView:
    """Reinterpret with another struct format (shape other than flat is not supported on device registers)."""
    if shape is not None and tuple(shape) != (self.nbytes // struct.calcsize(fmt),): raise TypeError("WatchedView supports flat casts only")
    return WatchedView(self._rng, self._addr, self.nbytes, fmt)

  def __len__(self) -> int: return self.shape[0]

  def _index(self, i:int) -> int:
    if i < 0: i += len(self)
    if not 0 <= i < len(self): raise IndexError("index out of bounds on device register view")
    return i

  def __getitem__(self, i):
    if isinstance(i, slice): return [self[j] for j in range(*i.indices(len(self)))]
    return struct.unpack(self.format, ctypes.string_at(self._addr + self._index(i) * self.itemsize, self.itemsize))[0]

  def __setitem__(self, i, value):
    if isinstance(i, slice):
      for j, v in zip(range(*i.indices(len(self))), value): self[j] = v
      return
    addr = self._addr + self._index(i) * self.itemsize
    ctypes.memmove(addr, struct.pack(self.format, value), self.itemsize)
    self._rng.on_write(addr - self._rng.start, self.format, value)

  def tolist(self) -> list: return self[:]
  def tobytes(self) -> bytes: return ctypes.string_at(self._addr, self.nbytes)

class _MemoryviewMeta(type):
  def __instancecheck__(cls, obj): return isinstance(obj, (_real_memoryview, WatchedView))
  def __subclasscheck__(cls, sub): return issubclass(sub, (_real_memoryview, WatchedView))

class memoryview(metaclass=_MemoryviewMeta):  # noqa: N801 - it stands in for the builtin of the same name
  """Factory installed as `tinygrad.helpers.memoryview`: a `WatchedView` for watched ctypes arrays, a real memoryview otherwise."""
  def __new__(cls, obj, *args, **kwargs):  # type: ignore[misc]
    for hook in _touch_hooks: hook()
    if _traps and isinstance(obj, ctypes.Array) and (fn:=_traps.get(ctypes.addressof(obj))) is not None: fn(ctypes.addressof(obj))
    if _ranges and isinstance(obj, ctypes.Array) and (rng:=_find(addr:=ctypes.addressof(obj), size:=ctypes.sizeof(obj))) is not None:
      return WatchedView(rng, addr, size)
    return _real_memoryview(obj, *args, **kwargs)

def install():
  """Shadow `memoryview` in tinygrad.helpers (idempotent)."""
  import tinygrad.helpers as helpers
  helpers.memoryview = memoryview  # type: ignore[attr-defined]
