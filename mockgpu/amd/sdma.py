"""The SDMA engine of a copy queue: linear copies, fences, traps, memory polls, timestamps and writes.

Pointers are in bytes (the SDMA convention). Every memory access goes through the GPU's MemoryMap, so a copy touching memory
not mapped to this GPU faults instead of touching the host. Opcodes are the ones in tinygrad's sdma register modules.
"""
from __future__ import annotations
from mockgpu.amd.engine import Engine, PacketError, Stall
from mockgpu.amd.pm4 import compare

OP_NOP, OP_COPY, OP_WRITE, OP_FENCE, OP_TRAP, OP_POLL_REGMEM, OP_TIMESTAMP = 0, 1, 2, 5, 6, 8, 13
SUBOP_COPY_LINEAR, SUBOP_TIMESTAMP_GET, SUBOP_TIMESTAMP_GET_GLOBAL = 0, 1, 2
COPY_CHUNK = 64 << 20  # copies are moved in chunks so a huge copy does not need one huge temporary

class SDMAEngine(Engine):
  """One SDMA queue. `count_mask` is the COPY_LINEAR byte-count field width of the engine version."""
  name = "SDMA"
  unit = 1

  def __init__(self, *args, count_mask:int=0x3fffffff):
    super().__init__(*args)
    self.count_mask = count_mask

  def step(self):
    dw = lambda i: self.ring_dword(self.rptr // 4 + i)
    hdr = dw(0)
    op, sub = hdr & 0xff, (hdr >> 8) & 0xff
    where = f"ring offset {self.rptr % self.ring_size:#x}"
    if op == OP_NOP: size = 1 + ((hdr >> 16) & 0x3fff)
    elif op == OP_COPY and sub == SUBOP_COPY_LINEAR:
      nbytes, src, dst = (dw(1) & self.count_mask) + 1, dw(3) | (dw(4) << 32), dw(5) | (dw(6) << 32)
      for off in range(0, nbytes, COPY_CHUNK):
        n = min(COPY_CHUNK, nbytes - off)
        self.gpu.memory.write(dst + off, self.gpu.memory.read(src + off, n))
      self.gpu.clock.advance_copy(nbytes)
      size = 7
    elif op == OP_WRITE:
      addr, count = dw(1) | (dw(2) << 32), (dw(3) & 0xfffff) + 1
      for i in range(count): self.write32(addr + i * 4, dw(4 + i))
      size = 4 + count
    elif op == OP_FENCE:
      self.write32(dw(1) | (dw(2) << 32), dw(3))
      size = 4
    elif op == OP_TRAP:
      self.gpu.interrupt("SDMA", dw(1) & 0x0fffffff)
      size = 2
    elif op == OP_POLL_REGMEM:
      func, mem_poll = (hdr >> 28) & 7, (hdr >> 31) & 1
      if mem_poll and not compare(func, self.read32(dw(1) | (dw(2) << 32)) & dw(4), dw(3) & dw(4)): raise Stall()
      size = 6  # a register poll is the HDP flush handshake, which completes at once
    elif op == OP_TIMESTAMP and sub in (SUBOP_TIMESTAMP_GET, SUBOP_TIMESTAMP_GET_GLOBAL):
      self.write64(dw(1) | (dw(2) << 32), self.gpu.clock.now())
      size = 3
    else: raise PacketError(f"SDMA: unsupported opcode {op} sub-opcode {sub} (header {hdr:#010x}) at {where}")
    self.rptr += size * 4
