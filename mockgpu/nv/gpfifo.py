"""A GPFIFO channel as a queue engine on the scheduler thread: the entries tinygrad's `_submit_to_gpfifo` writes, consumed up
to GPPut.

Layout (ops_nv.py): `entries` 8-byte entries at the ring's VA; the channel's USERD block (given at allocation) holds GPGet at
+0x88 and GPPut at +0x8c (dwords; tinygrad places USERD right after the ring). An entry is `address | dwords << 42 | 1 << 41`
(the address of a method stream, 4-byte aligned, in bits 40:2). A doorbell (the work-submit token written to the usermode
page) makes the engine read GPPut; it then runs every entry from GPGet on through the channel, publishing GPGet past each
finished one. An acquire that cannot be satisfied yet stalls the engine at its entry, with the resume point inside it, and
the scheduler retries it.
"""
from __future__ import annotations
import numpy as np
from mockgpu.engine import Engine, GPUContext, PacketError, Stall
from mockgpu.nv.methods import Channel, MethodError

LEN_SHIFT = 42
ADDR_MASK = ((1 << 41) - 1) & ~3
GPGET, GPPUT = 0x88, 0x8c   # offsets in USERD (AmpereAControlGPFifo)

class GpFifoEngine(Engine):
  """One channel: a ring of `entries` entries at `ring_va`, USERD at `userd_va`, feeding `channel`. Pointer units are entries
  (`rptr`/`wptr` count entries monotonically; the ring index is their value modulo `entries`)."""
  unit = 8

  def __init__(self, gpu:GPUContext, name:str, ring_va:int, entries:int, userd_va:int, channel:Channel, token:int=0):
    super().__init__(gpu, ring_va, entries * 8, userd_va + GPGET, userd_va + GPPUT)
    self.name, self.entries, self.channel, self.token = name, entries, channel, token
    self.resume = (0, 0)   # where in the current entry to resume after a stall: (header, data dword)
    self.trapped: dict[int, int] = {}   # semaphore address -> payload this channel died owing (see NVGPU)

  def ring_where(self) -> str: return f"GPFIFO entry {self.rptr % self.entries}"

  def doorbell(self, value:int=0):
    """The host wrote this channel's work-submit token: GPPut says how far the ring is filled."""
    put = self.read32(self.wptr_addr)
    if put >= self.entries:
      self.fail(PacketError(f"{self.name}: GPPut {put} is past the ring's {self.entries} entries"))
      return
    self.wptr += (put - self.wptr) % self.entries

  def publish(self): self.write32(self.rptr_addr, self.rptr % self.entries)

  def entry(self, count:int) -> tuple[int, int]:
    """(address, dwords) of the method stream of the `count`-th entry (monotonic count)."""
    entry = self.read64(self.ring_addr + 8 * (count % self.entries))
    return entry & ADDR_MASK, entry >> LEN_SHIFT

  def entry_words(self, count:int) -> np.ndarray:
    """The method stream of the `count`-th entry."""
    return self._words(*self.entry(count))

  def _words(self, addr:int, n:int) -> np.ndarray: return np.frombuffer(self.gpu.memory.read(addr, 4 * n), np.uint32)

  def step(self):
    index = self.rptr % self.entries
    addr, n = self.entry(self.rptr)
    self.packet = f"GPFIFO entry {index} ({n} dwords at {addr:#x})"
    words = self._words(addr, n)
    try: stall = self.channel.run(words, self.resume)
    except MethodError as e: raise PacketError(f"{self.name} GPFIFO entry {index}: {e}") from None
    if stall is not None:
      self.resume = stall.pos
      raise Stall(stall.reason)
    self.rptr, self.resume = self.rptr + 1, (0, 0)
