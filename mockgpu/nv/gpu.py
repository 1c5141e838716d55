"""One emulated NVIDIA GPU: its VRAM, its view of memory, clock, usermode (doorbell) page, channels and their faults.

The usermode page is a host page the process maps through RM; a store of a channel's work-submit token at +0x90 is the
doorbell (seen through mockgpu.devwrite), which makes that channel read its GPPut. Channels run on the shared scheduler
thread once their channel group is scheduled. A channel that stops on a fault keeps the fault for the NV83DE debugger
controls, and every semaphore its unfinished work would have released becomes a read trap (`mockgpu.devwrite.trap`): the
host's next read of such a semaphore (tinygrad's signal wait) raises at once, so tinygrad goes to its device-hang report
(NV83DE) without waiting out HCQDEV_WAIT_TIMEOUT_MS.
"""
from __future__ import annotations
import ctypes, hashlib, sys
from emu.common.memory import MemoryMap
from emu.common.watchdog import Watchdog
from emu.nv.boards import Board
from emu.nv.simt import LaunchStats
from emu.nv.timing import launch_seconds
from mockgpu import devwrite
from mockgpu.clock import DeviceClock
from mockgpu.engine import SCHEDULER, Engine, GPUContext
from mockgpu.hostmem import Heap
from mockgpu.nv.compute import ProgramCache
from mockgpu.nv.gpfifo import GpFifoEngine
from mockgpu.nv.methods import Channel, pending_releases
from mockgpu.stats import record_dispatch

USERMODE_BYTES = 0x10000
DOORBELL = 0x90          # NVC361_NOTIFY_CHANNEL_PENDING: the work-submit token is written here
NS_PER_SECOND = 1_000_000_000

class NVGPU(GPUContext):
  """GPU `index` of the process: `board` is its model, `programs` the process's parsed-kernel cache."""
  def __init__(self, index:int, board:Board, vram_bytes:int, programs:ProgramCache):
    self.index, self.board, self.programs = index, board, programs
    self.minor = index
    self.gpu_id = 0x100 * (index + 1)      # RM's gpuId (CARD_INFO, GET_ID_INFO_V2)
    self.uuid = b"GPU-" + hashlib.sha256(f"mockgpu-nv-{index}".encode()).digest()[:12]
    self.vram = Heap(f"nv-vram{index}", vram_bytes)
    self.memory = MemoryMap()
    self.clock = DeviceClock(NS_PER_SECOND)
    self.watchdog = Watchdog()
    self.channels: dict[int, GpFifoEngine] = {}   # work-submit token -> channel
    self.faults: dict[GpFifoEngine, Exception] = {}
    self._usermode: int | None = None

  # ---- GPUContext ----
  def interrupt(self, engine:Engine, source:str, ctxid:int): pass   # NON_STALL_INTERRUPT: tinygrad polls its semaphores instead
  def cancel(self, reason:str): self.watchdog.cancel(reason)

  def on_fault(self, engine:Engine, err:Exception):
    assert isinstance(engine, GpFifoEngine)
    self.faults[engine] = err
    self._trap_releases(engine, err)

  def _trap_releases(self, engine:GpFifoEngine, err:Exception):
    """Trap the host's views of each semaphore `engine` will now never release: what its unfinished entries would have released
    (as far as they decode), and a value past the last one of every signal this GPU's channels released before (tinygrad's
    timeline signal, which its compute and copy queues share, even when the stream that would have released it cannot be
    decoded). While one is owed (`never_released`), a view of it raises, naming `err`. The traps go with the channel."""
    def check(addr:int):
      if (why := never_released(addr)) is not None: raise RuntimeError(f"mockgpu: {why}")
    owed: dict[int, int] = {}
    for e in self.channels.values():
      for addr, payload in e.channel.signals.items(): owed[addr] = max(payload + 1, owed.get(addr, 0))
    for i in range(engine.rptr, engine.wptr):
      for addr, payload in pending_releases(self.memory, engine.entry_words(i)).items(): owed[addr] = max(payload, owed.get(addr, 0))
    for addr, payload in owed.items():
      engine.trapped[addr] = max(payload, engine.trapped.get(addr, 0))
      if (self, engine) not in (owners := OWED.setdefault(addr, [])): owners.append((self, engine))
      devwrite.trap(addr, check)

  def channel(self, name:str, ring_va:int, entries:int, userd_va:int) -> GpFifoEngine:
    """A new channel (not yet scheduled); its work-submit token is `len(channels)`."""
    ch = Channel(self.memory, self.clock.now, self.programs, self.watchdog, self._kernel_done, self.clock.advance_copy, self.board,
                 never_released)
    engine = GpFifoEngine(self, name, ring_va, entries, userd_va, ch, token=len(self.channels))
    self.channels[engine.token] = engine
    return engine

  def schedule(self, engine:GpFifoEngine):
    """The channel's group was scheduled: it runs from now on (work submitted before is picked up)."""
    SCHEDULER.add(engine)
    SCHEDULER.kick(engine)

  def remove_channel(self, engine:GpFifoEngine):
    for addr in engine.trapped:
      OWED[addr] = [(g, e) for g, e in OWED.get(addr, []) if e is not engine]
      if not OWED[addr]:
        del OWED[addr]
        devwrite.untrap(addr)
    self.channels = {t: e for t, e in self.channels.items() if e is not engine}
    self.faults.pop(engine, None)
    SCHEDULER.remove(engine)

  def _kernel_done(self, stats:LaunchStats):
    seconds = launch_seconds(stats.cycles, self.board)
    self.clock.advance_seconds(seconds)
    record_dispatch(_DispatchRecord(stats.warps, stats.warp_instructions, stats.cycles, seconds))

  # ---- usermode page ----
  def usermode_page(self) -> int:
    """The host address of the usermode page (created and watched on first use)."""
    if self._usermode is None: self._usermode = devwrite.register_page(USERMODE_BYTES, self._usermode_write)
    return self._usermode

  def _usermode_write(self, offset:int, fmt:str, value:int):
    if offset != DOORBELL: return   # the rest of the page is registers nothing here models; stores to them are dropped
    if (engine := self.channels.get(value)) is None:
      print(f"mockgpu: GPU {self.index}: doorbell with work-submit token {value}, which no channel has; ignored", file=sys.stderr)
      return
    with SCHEDULER.lock:
      engine.doorbell()
      if engine.dead is not None: self._trap_releases(engine, engine.dead)   # work submitted to a stopped channel never runs
    SCHEDULER.kick(engine)

# every semaphore a stopped channel of this process owes: address -> (its GPU, the channel); a GPU's channels see each other's
# memory at the same addresses (system memory, peer mappings), so one GPU's channel may wait on another's semaphore
OWED: dict[int, list[tuple[NVGPU, GpFifoEngine]]] = {}

def never_released(addr:int, waiter:Channel|None=None) -> str | None:
  """Why the semaphore at `addr` will never reach the value a stopped channel owed it, or None: it is still below that value
  and no live channel of the stopped channel's GPU has work left that could release it (`waiter`, a channel asking because it
  waits for the semaphore, does not count)."""
  for gpu, engine in OWED.get(addr, []):
    busy = any(e.pending() and e.channel is not waiter for e in gpu.channels.values())
    if int.from_bytes(ctypes.string_at(addr, 8), "little") < engine.trapped.get(addr, 0) and not busy:
      return f"GPU {gpu.index} will never release the semaphore at {addr:#x}: {engine.name} stopped: {engine.dead}"
  return None

class _DispatchRecord:
  """What mockgpu.stats counts for one kernel (the AMD field names: warps are its waves)."""
  def __init__(self, warps:int, warp_instructions:int, cycles:int, seconds:float):
    self.waves, self.wave_instructions, self.cycles, self.seconds = warps, warp_instructions, cycles, seconds
