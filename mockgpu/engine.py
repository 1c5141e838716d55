"""What every queue engine shares: the GPU it runs on, its ring, its read pointer, stalling, and the scheduler that runs engines.

Execution model: the engines run on one worker thread (`Scheduler`), apart from the host, as a GPU runs apart from the CPU.
A doorbell store (seen through `mockgpu.devwrite`) records the queue's new write pointer and wakes the worker; the host goes
on at once. The worker runs each engine until its ring is drained, a wait packet cannot be satisfied yet, or it dies. A
stalled engine keeps its position and is retried when the host touches device memory and every few milliseconds, so a
wait on memory the host (or another queue) writes resumes as soon as that write is observable. A packet the engine cannot
execute, or a GPU fault, kills the queue and is reported to the GPU's `on_fault`.
"""
from __future__ import annotations
import itertools, os, struct, sys, threading, time, traceback
from typing import Callable
from emu.common.faults import GPUMemoryFault
from emu.common.memory import MemoryMap
from mockgpu.gcguard import COLLECTOR
from mockgpu.clock import DeviceClock
from mockgpu.profile import PROFILE

class PacketError(Exception):
  """A malformed or unsupported packet; the message names the engine, packet and ring (or indirect-buffer) offset."""

class GPUContext:
  """What engines need from the GPU they belong to. The KFD (and PCI) mocks implement it."""
  memory: MemoryMap
  clock: DeviceClock
  def interrupt(self, engine:Engine, source:str, ctxid:int):
    """`engine` raised an interrupt (RELEASE_MEM INT_SEL, SDMA TRAP) carrying `ctxid`."""
    raise NotImplementedError
  def on_fault(self, engine:Engine, err:Exception):
    """`engine` died on `err` (a GPUFault or a PacketError)."""
    raise NotImplementedError
  def cancel(self, reason:str):
    """Stop the dispatch this GPU is running (if any) at its next instruction batch, with a hang fault naming `reason`."""

_RINGS = itertools.count(1)   # doorbell order, across every engine of the process

class Stall(Exception):
  """Raised inside packet execution when a wait is not satisfied yet; the packet is retried later."""

class Engine:
  """A ring-buffer queue engine. Subclasses implement `step()`: execute one packet at the current position and advance past it.

  `packet` names the packet being executed and where it is (set by `step` before it executes anything) so that every error,
  including a memory fault inside a packet, says which packet of which ring at which offset caused it. `step` sets `quiet` for a
  packet that changes nothing a host waiter looks for besides the read pointer (register writes, NOPs, jumps, cache actions,
  flush events, a wait or poll that passed): waiters are then not woken for it, only for the next packet that is not quiet or when the worker's pass
  ends, so a host polling for a signal is not handed the GIL after every packet of a submission."""
  name = "engine"
  unit = 4  # bytes per read/write-pointer unit

  def __init__(self, gpu:GPUContext, ring_addr:int, ring_size:int, rptr_addr:int, wptr_addr:int):
    self.gpu, self.ring_addr, self.ring_size, self.rptr_addr, self.wptr_addr = gpu, ring_addr, ring_size, rptr_addr, wptr_addr
    self.rptr = 0       # in pointer units, monotonic
    self.wptr = 0
    self.dead: Exception | None = None
    self.stalled = False
    self.packet = ""                       # e.g. "RELEASE_MEM at ring offset 0x40", for error messages
    self.packet_since: float | None = None  # monotonic time the current packet was first tried (None: between packets)
    self.last_progress = time.monotonic()   # when a packet last completed
    self._abort: str | None = None
    self.stall_reason = ""                  # what the stalled packet waits for
    self.since = 0                          # when (doorbell order) the work it has pending was first rung in
    self.quiet = False                      # the packet just executed is one the host need not hear of (class docstring)

  # ---- memory helpers ----
  def read32(self, addr:int) -> int: return struct.unpack("<I", self.gpu.memory.read(addr, 4))[0]
  def read64(self, addr:int) -> int: return struct.unpack("<Q", self.gpu.memory.read(addr, 8))[0]
  def write32(self, addr:int, v:int): self.gpu.memory.write(addr, struct.pack("<I", v & 0xffffffff))
  def write64(self, addr:int, v:int): self.gpu.memory.write(addr, struct.pack("<Q", v & 0xffffffffffffffff))

  def ring_dword(self, index:int) -> int:
    """Dword `index` (in dwords from ring start, wrapping) of the ring."""
    return self.read32(self.ring_addr + (index * 4) % self.ring_size)

  def ring_words(self, index:int, n:int) -> list[int]:
    """Dwords index .. index + n - 1 of the ring (wrapping), read at most two spans at a time (a packet body costs ~7 us a dword
    read one by one)."""
    out, start = [], (index * 4) % self.ring_size
    while n:
      k = min(n, (self.ring_size - start) // 4)
      out += struct.unpack(f"<{k}I", self.gpu.memory.read(self.ring_addr + start, 4 * k))
      n, start = n - k, 0
    return out

  def ring_where(self) -> str: return f"ring offset {(self.rptr * self.unit) % self.ring_size:#x}"

  def need(self, units:int, what:str):
    """Raise PacketError unless `units` pointer units from rptr on are published (below the write pointer): a packet is
    never executed on ring contents the host has not handed over yet."""
    if self.rptr + units > self.wptr:
      raise PacketError(f"{self.name}: {what} at {self.ring_where()} needs {units * self.unit} bytes but the write pointer publishes only "
                        f"{(self.wptr - self.rptr) * self.unit} (rptr {self.rptr:#x}, wptr {self.wptr:#x}): a truncated packet")

  def publish(self):
    """Make the read pointer visible to the host after a packet (a 64-bit store at `rptr_addr`)."""
    self.write64(self.rptr_addr, self.rptr)

  def doorbell(self, value:int):
    """The host rang this queue's doorbell with a new write pointer."""
    if not self.pending(): self.since = next(_RINGS)
    self.wptr = value

  def pending(self) -> bool: return self.dead is None and self.rptr < self.wptr

  def abort(self, reason:str):
    """Reset the queue: a dispatch in flight is cancelled, and the queue dies before its next packet with `reason`."""
    self._abort = reason
    self.gpu.cancel(reason)

  def run(self, after_packet:Callable[[], None]|None=None) -> bool:
    """Execute packets until drained, stalled or dead; `after_packet` is called after each one that is not `quiet`. Returns
    whether any progress was made (a packet executed, or the queue died)."""
    progress = False
    while self.pending():
      if self.packet_since is None: self.packet_since = time.monotonic()
      try:
        if self._abort is not None: raise PacketError(f"{self.name} queue reset: {self._abort}")
        t = time.perf_counter()
        self.quiet = False
        try:
          self.step()
          self.publish()
        finally:
          if PROFILE.enabled: PROFILE.add(self.name.split(" ")[0], time.perf_counter() - t)   # PM4 / SDMA (PCI names carry the queue)
      except Stall as e:
        self.stalled, self.stall_reason = True, str(e)
        return progress
      except Exception as e:  # a GPU fault or a bad packet kills the queue, never the host
        self.fail(e)
        return True
      self.stalled, progress, self.packet_since = False, True, None
      self.last_progress = time.monotonic()
      self.gpu.clock.advance_packet()
      if after_packet is not None and not self.quiet: after_packet()
    return progress

  def fail(self, e:Exception):
    """Kill the queue with `e` and report it to the GPU (the caller holds the scheduler's lock or is the worker)."""
    if isinstance(e, GPUMemoryFault) and e.pc is None and self.packet:   # a packet's own access (not a shader's): name the packet
      e = GPUMemoryFault(e.addr, e.write, detail=f"{e.detail + ', ' if e.detail else ''}by {self.name} {self.packet}")
    self.dead, self.stalled = e, False
    print(f"mockgpu: {self.name} queue stopped{f' in {self.packet}' if self.packet else ''}: {e}", file=sys.stderr)
    self.gpu.on_fault(self, e)

  def step(self):
    """Execute one packet at `rptr` and advance `rptr` past it (raise Stall to retry it later)."""
    raise NotImplementedError

class Scheduler:
  """The GPU side of the process: one worker thread runs every queue engine, apart from the host's threads.

  A doorbell only records the new write pointer and wakes the worker (`kick`); the host goes on at once, as with a real GPU.
  The worker runs each engine with work until its ring is drained, it stalls on a wait packet or it dies, oldest work first
  (by the doorbell that made it pending: two queues that signal one timeline, e.g. a copy's profiling timestamp and the next
  compute submission, finish in the order the host submitted them), and repeats while any engine made progress; stalled
  engines are retried when the host touches device memory (`poll`) and every `STALL_POLL_S` otherwise, so a wait on memory
  the host writes resumes without a doorbell.

  `lock` is held by the worker while it runs engines; host-side driver calls that change what engines see (memory maps,
  queues) take it too, so they happen between packets, never inside one. While the worker is busy, a host thread that
  touches device memory (tinygrad polling a signal) waits for the next progress report instead of spinning on the GIL,
  so emulation runs at full speed while the host waits. Host interrupts (Ctrl-C) land in the host's own wait and never
  in an engine: a dispatch in flight is applied exactly once. `abort` resets every queue with work (process teardown).
  """
  STALL_POLL_S = (0.0005, 0.02)   # stalled engines are retried this often when nothing wakes the worker (backing off to the max)
  HOST_WAIT_S = 0.05     # longest a host memory touch waits for progress while the worker is busy

  def __init__(self):
    self.engines: list[Engine] = []
    self._generation = 0
    self._reset_thread()
    os.register_at_fork(after_in_child=self._reset_thread)   # a forked child has no worker, and may inherit held locks

  def _reset_thread(self):
    self.lock = threading.RLock()
    self._wake = threading.Event()
    self._progress = threading.Condition(threading.Lock())
    self.busy = False
    self._thread: threading.Thread | None = None
    self._worker_ident: int | None = None
    self._poll_s = self.STALL_POLL_S[0]

  def add(self, engine:Engine):
    with self.lock: self.engines.append(engine)
  def remove(self, engine:Engine):
    with self.lock:
      if engine in self.engines: self.engines.remove(engine)

  def has_stalled(self) -> bool: return any(e.stalled and e.pending() for e in self.engines)

  # ---- host side ----
  def kick(self, engine:Engine|None=None):
    """Something changed for `engine` (a doorbell) or for stalled engines (host memory): wake the worker. Never blocks."""
    if self._thread is None: self._start()
    COLLECTOR.enforce()
    self._poll_s = self.STALL_POLL_S[0]
    self._wake.set()

  def poll(self):
    """The host touched device memory (every tinygrad `to_mv`): retry stalled engines; while the worker is busy or has been
    woken, wait (GIL released) until it reports progress or HOST_WAIT_S passes, so a polling host does not compete with the
    emulation for the GIL (a spinning host would hold the worker off for a whole switch interval at every hand-over)."""
    if self._worker_ident == threading.get_ident() or not self.engines: return
    if self.has_stalled(): self.kick()
    # busy, or about to be (a doorbell the worker has not picked up yet): let it run now instead of after a GIL switch interval
    if self.busy or self._wake.is_set():
      t = time.perf_counter()
      self.wait_progress(self.HOST_WAIT_S)
      if PROFILE.enabled: PROFILE.add("host waits", time.perf_counter() - t)
    COLLECTOR.collect_due()   # the host's collections run here, on its thread, holding none of the mock's locks (mockgpu/gcguard.py)

  def wait_progress(self, timeout:float):
    """Block until the worker reports progress (a packet done, a pass over the engines) or `timeout` seconds pass.
    Interruptible by signals (Ctrl-C)."""
    with self._progress:
      gen = self._generation
      self._progress.wait_for(lambda: self._generation != gen, timeout)

  def wait_idle(self, timeout:float=60.0) -> bool:
    """Block until no engine has work it can run now (drained, stalled or dead). Returns False on timeout."""
    with self._progress:
      return self._progress.wait_for(lambda: not self.busy and not self._wake.is_set(), timeout)

  def abort(self, reason:str) -> list[Engine]:
    """Reset every queue that still has work: its dispatch in flight stops at its next instruction batch, and each such
    engine dies with a PacketError naming `reason` (its GPU reports the fault). Returns the engines reset."""
    hit = [e for e in list(self.engines) if e.pending()]
    for e in hit: e.abort(reason)
    self.kick()
    return hit

  # ---- worker side ----
  def _start(self):
    COLLECTOR.start()   # no garbage collection (and so no tinygrad finalizer) on the worker: mockgpu/gcguard.py
    with self.lock:
      if self._thread is None:
        self._thread = threading.Thread(target=self._loop, name="mockgpu-engines", daemon=True)
        self._thread.start()

  def _loop(self):
    self._worker_ident = threading.get_ident()
    while True:
      if not self._wake.wait(self._poll_s if self.has_stalled() else None): self._poll_s = min(self._poll_s * 2, self.STALL_POLL_S[1])
      with self._progress:
        self.busy = True
        self._wake.clear()
      try: self.run_pending()
      except Exception: traceback.print_exc()   # the scheduler itself must survive anything an engine lets through
      finally:
        self.busy = False
        self._notify()

  def run_pending(self):
    """Run every engine with work until none makes progress (the worker's pass); waiters hear of each packet that is not quiet
    (Engine), and of the pass's end (`_loop`)."""
    with self.lock:
      progress = True
      while progress:
        progress = False
        for e in sorted((e for e in self.engines if e.pending()), key=lambda e: e.since):
          if e.pending() and e.run(self._notify): progress = True

  def _notify(self):
    with self._progress:
      self._generation += 1
      self._progress.notify_all()

SCHEDULER = Scheduler()
