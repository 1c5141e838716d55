"""What every queue engine shares: the GPU it runs on, its ring, its read pointer, stalling, and the scheduler that runs engines.

Execution model: there is no engine thread. A doorbell store (seen through `mockgpu.devwrite`) runs the queue's engine
synchronously on the storing thread until the ring is drained or a wait packet cannot be satisfied yet. A stalled engine keeps
its position; every later doorbell, every `to_mv` touch by the host and every KFD WAIT_EVENTS gives all stalled engines another
try, so a wait on memory the host (or another queue) writes later resumes as soon as that write is observable. A wait that is
never satisfied leaves the queue stalled forever without spinning the host; tinygrad then reports its own wait timeout.
A packet the engine cannot execute, or a GPU fault, kills the queue and is reported to the GPU's `on_fault`.
"""
from __future__ import annotations
import struct, sys, threading
from emu.amd.memory import MemoryMap
from mockgpu.amd.clock import DeviceClock

class PacketError(Exception):
  """A malformed or unsupported packet; the message names the engine, opcode and ring offset."""

class GPUContext:
  """What engines need from the GPU they belong to. The KFD (and PCI) mocks implement it."""
  memory: MemoryMap
  clock: DeviceClock
  def interrupt(self, source:str, ctxid:int):
    """An engine raised an interrupt (RELEASE_MEM INT_SEL, SDMA TRAP) carrying `ctxid`."""
    raise NotImplementedError
  def on_fault(self, engine:Engine, err:Exception):
    """`engine` died on `err` (a GPUFault or a PacketError)."""
    raise NotImplementedError

class Stall(Exception):
  """Raised inside packet execution when a wait is not satisfied yet; the packet is retried later."""

class Engine:
  """A ring-buffer queue engine. Subclasses implement `execute(read) -> None` for one packet at the current position."""
  name = "engine"
  unit = 4  # bytes per read/write-pointer unit

  def __init__(self, gpu:GPUContext, ring_addr:int, ring_size:int, rptr_addr:int, wptr_addr:int):
    self.gpu, self.ring_addr, self.ring_size, self.rptr_addr, self.wptr_addr = gpu, ring_addr, ring_size, rptr_addr, wptr_addr
    self.rptr = 0       # in pointer units, monotonic
    self.wptr = 0
    self.dead: Exception | None = None
    self.stalled = False

  # ---- memory helpers ----
  def read32(self, addr:int) -> int: return struct.unpack("<I", self.gpu.memory.read(addr, 4))[0]
  def read64(self, addr:int) -> int: return struct.unpack("<Q", self.gpu.memory.read(addr, 8))[0]
  def write32(self, addr:int, v:int): self.gpu.memory.write(addr, struct.pack("<I", v & 0xffffffff))
  def write64(self, addr:int, v:int): self.gpu.memory.write(addr, struct.pack("<Q", v & 0xffffffffffffffff))

  def ring_dword(self, index:int) -> int:
    """Dword `index` (in dwords from ring start, wrapping) of the ring."""
    return self.read32(self.ring_addr + (index * 4) % self.ring_size)

  def doorbell(self, value:int):
    """The host rang this queue's doorbell with a new write pointer."""
    self.wptr = value

  def pending(self) -> bool: return self.dead is None and self.rptr < self.wptr

  def run(self) -> bool:
    """Execute packets until drained, stalled or dead. Returns whether any progress was made."""
    progress = False
    while self.pending():
      try: self.step()
      except Stall:
        self.stalled = True
        return progress
      except Exception as e:  # a GPU fault or a bad packet kills the queue, never the host
        self.dead = e
        print(f"mockgpu: {self.name} queue stopped: {e}", file=sys.stderr)
        self.gpu.on_fault(self, e)
        return True
      self.stalled, progress = False, True
      self.write64(self.rptr_addr, self.rptr)
      self.gpu.clock.advance_packet()
    return progress

  def step(self):
    """Execute one packet at `rptr` and advance `rptr` past it (raise Stall to retry it later)."""
    raise NotImplementedError

class Scheduler:
  """Runs engines synchronously, re-entrancy safe: a kick while engines are running is queued and served by the running loop."""
  def __init__(self):
    self.engines: list[Engine] = []
    self._lock = threading.RLock()
    self._running = False
    self._again = False

  def add(self, engine:Engine): self.engines.append(engine)
  def remove(self, engine:Engine):
    if engine in self.engines: self.engines.remove(engine)

  def has_stalled(self) -> bool: return any(e.stalled and e.pending() for e in self.engines)

  def kick(self, engine:Engine|None=None):
    """Run `engine` (or only the stalled ones), then retry stalled engines until nothing makes progress."""
    with self._lock:
      if self._running:
        self._again = True
        return
      self._running = True
      try:
        progress = engine.run() if engine is not None else True  # no engine: one pass over the stalled ones
        while progress or self._again:
          self._again = False
          progress = any([e.run() for e in list(self.engines) if e.pending()])
      finally: self._running = False

  def poll(self):
    """Cheap hook for host activity: retry stalled engines only when there are some."""
    if self.engines and not self._running and self.has_stalled(): self.kick()

SCHEDULER = Scheduler()
