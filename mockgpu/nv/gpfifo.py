"""A GPFIFO ring: the entries tinygrad's `_submit_to_gpfifo` writes, consumed up to GPPut.

Layout (ops_nv.py): `entries` 8-byte entries at the ring's VA, then GPGet at +entries*8+0x88 and GPPut at +0x8c (dwords). An
entry is `address | dwords << 42 | 1 << 41` (the address of a method stream, 4-byte aligned, in bits 40:2). `kick()` (the
doorbell) runs every entry from GPGet to GPPut through the channel, advancing GPGet past each finished one; an acquire that
cannot be satisfied yet leaves GPGet at its entry and the resume point inside it, so the next kick continues there.
"""
from __future__ import annotations
import numpy as np
from emu.amd.memory import MemoryMap
from mockgpu.nv.methods import Channel, MethodError, Stall

LEN_SHIFT = 42
ADDR_MASK = ((1 << 41) - 1) & ~3

class GpFifo:
  """One ring of `entries` entries at `ring_va`, feeding `channel`."""
  def __init__(self, memory:MemoryMap, ring_va:int, entries:int, channel:Channel):
    self.memory, self.ring_va, self.entries, self.channel = memory, ring_va, entries, channel
    self.get, self.resume = 0, 0   # next entry, and the dword inside it to resume at after a stall
    self.stall: Stall | None = None

  @property
  def gpget_va(self) -> int: return self.ring_va + self.entries * 8 + 0x88
  @property
  def gpput_va(self) -> int: return self.ring_va + self.entries * 8 + 0x8c

  def _u32(self, va:int) -> int: return int.from_bytes(self.memory.read(va, 4), "little")

  def kick(self) -> Stall | None:
    """Run the entries up to GPPut; the stall that stopped it, or None when the ring is drained."""
    put = self._u32(self.gpput_va)
    if put >= self.entries: raise MethodError(0, None, None, f"GPPut {put} is past the ring's {self.entries} entries")
    while self.get != put:
      entry = int.from_bytes(self.memory.read(self.ring_va + 8 * self.get, 8), "little")
      addr, n = entry & ADDR_MASK, entry >> LEN_SHIFT
      words = np.frombuffer(self.memory.read(addr, 4 * n), np.uint32)
      try: self.stall = self.channel.run(words, self.resume)
      except MethodError as e: raise MethodError(e.pos, e.subchannel, e.method, f"GPFIFO entry {self.get}: {e}") from None
      if self.stall is not None:
        self.resume = self.stall.pos
        return self.stall
      self.get, self.resume = (self.get + 1) % self.entries, 0
      self.memory.write(self.gpget_va, self.get.to_bytes(4, "little"))
    return None
