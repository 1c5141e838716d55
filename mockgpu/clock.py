"""The emulated GPU's timestamp counter.

AMD GPUs expose a 100 MHz "GPU clock counter" (RELEASE_MEM DATA_SEL=3, SDMA TIMESTAMP, tinygrad's timestamp_divider=100).
Here it is a pure function of the emulated work: it starts at 0 when the GPU is created and advances only when the GPU does
something (a dispatch by its timing model's cycles at its shader clock, a copy by its bytes at the modelled DMA bandwidth,
each executed packet by a small fixed cost). Wall time never leaks in, so runs are deterministic; device time and wall time
are unrelated except that both are monotonic.
"""
from __future__ import annotations
import threading

TICKS_PER_SECOND = 100_000_000  # 100 MHz
PACKET_TICKS = 1                # 10 ns of command-processor time per packet
DMA_BYTES_PER_SECOND = 50e9     # SDMA copy bandwidth model

PENDING_TIDY = 4096             # deferred dispatches kept before those already replayed are counted

class DeviceClock:
  """A monotonic 64-bit tick counter at `ticks_per_second` (AMD's 100 MHz by default; NVIDIA's semaphore timestamps count
  nanoseconds), advanced by the engines. A dispatch whose cycle count is still deferred (DispatchStats.pending) is added when the
  counter is next read: each advance is a whole number of ticks on its own, so their sum does not depend on when it is taken."""
  def __init__(self, ticks_per_second:int=TICKS_PER_SECOND):
    self.ticks, self.ticks_per_second = 0, ticks_per_second
    self.packet_ticks = max(1, PACKET_TICKS * ticks_per_second // TICKS_PER_SECOND)
    self._pending: list = []   # (DispatchStats, default clock MHz) not yet counted
    self._lock = threading.Lock()

  def now(self) -> int:
    """The current counter value."""
    self._count(replay=True)
    return self.ticks

  def _count(self, replay:bool):
    """Add the deferred dispatches' durations: all (running their replays), or (`replay` False) those whose replay has run."""
    ready, keep = [], []
    with self._lock:
      for p in self._pending: (keep if p[0].pending and not replay else ready).append(p)   # (one look each: a replay may finish meanwhile)
      self._pending = keep
    for stats, mhz in ready: self.advance_seconds(stats.cycles / ((stats.clock_mhz or mhz) * 1e6))

  def advance_seconds(self, seconds:float):
    """Advance by `seconds` of device time (at least one tick, so ordered events get distinct timestamps)."""
    with self._lock: self.ticks += max(1, round(seconds * self.ticks_per_second))

  def advance_dispatch(self, stats, clock_mhz:float):
    """Advance by a dispatch's emulated duration (its DispatchStats; `clock_mhz` when it names no shader clock), counted now or,
    while its replay is deferred, at the next read."""
    if stats.pending:
      with self._lock:
        self._pending.append((stats, clock_mhz))
        tidy = len(self._pending) >= PENDING_TIDY
      if tidy: self._count(replay=False)   # a run that never reads the clock: keep only the ones still waiting (few: DeferredReplays)
    else: self.advance_seconds(stats.cycles / ((stats.clock_mhz or clock_mhz) * 1e6))

  def advance_packet(self):
    with self._lock: self.ticks += self.packet_ticks
  def advance_copy(self, nbytes:int): self.advance_seconds(nbytes / DMA_BYTES_PER_SECOND)
