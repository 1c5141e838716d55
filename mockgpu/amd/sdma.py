"""The SDMA engine of a copy queue: linear copies, fences, traps, memory polls, timestamps and writes.

Pointers are in bytes (the SDMA convention). Every memory access goes through the GPU's MemoryMap, so a copy touching memory
not mapped to this GPU faults instead of touching the host. Opcodes are the ones in tinygrad's sdma register modules.
"""
from __future__ import annotations
from mockgpu.engine import Engine, PacketError, Stall
from mockgpu.amd.registers import CMP_NAMES, compare

OP_NOP, OP_COPY, OP_WRITE, OP_FENCE, OP_TRAP, OP_POLL_REGMEM, OP_TIMESTAMP = 0, 1, 2, 5, 6, 8, 13
SUBOP_COPY_LINEAR, SUBOP_TIMESTAMP_GET, SUBOP_TIMESTAMP_GET_GLOBAL = 0, 1, 2
NAMES = {OP_NOP: "NOP", OP_COPY: "COPY", OP_WRITE: "WRITE", OP_FENCE: "FENCE", OP_TRAP: "TRAP", OP_POLL_REGMEM: "POLL_REGMEM",
         OP_TIMESTAMP: "TIMESTAMP"}
# dwords of each fixed-size packet (op, sub-opcode) the engine executes; NOP and WRITE carry their length
SIZES = {(OP_COPY, SUBOP_COPY_LINEAR): 7, (OP_FENCE, 0): 4, (OP_TRAP, 0): 2, (OP_POLL_REGMEM, 0): 6, (OP_TIMESTAMP, SUBOP_TIMESTAMP_GET): 3,
         (OP_TIMESTAMP, SUBOP_TIMESTAMP_GET_GLOBAL): 3}
QUIET = (OP_NOP, OP_POLL_REGMEM)   # packets that write no memory and raise no interrupt: the host is not woken after one (Engine.quiet)
COPY_CHUNK = 64 << 20  # copies are moved in chunks so a huge copy does not need one huge temporary

def count_mask(sdma_version:tuple[int, int, int]) -> int:
  """The COPY_LINEAR byte-count field of an SDMA engine of `sdma_version` (30 bits from SDMA 5 on, 22 before)."""
  return 0x3fffffff if sdma_version[0] >= 5 else 0x3fffff

class SDMAEngine(Engine):
  """One SDMA queue. `count_mask` is the COPY_LINEAR byte-count field width of the engine version."""
  name = "SDMA"
  unit = 1

  def __init__(self, *args, count_mask:int=0x3fffffff):
    super().__init__(*args)
    self.count_mask = count_mask

  def step(self):
    where = self.ring_where()
    self.packet = f"packet header at {where}"
    self.need(4, "SDMA packet header")
    hdr = self.ring_dword(self.rptr // 4)
    op, sub = hdr & 0xff, (hdr >> 8) & 0xff
    name = NAMES.get(op, f"opcode {op}")
    self.packet = f"{name} at {where}"
    if op == OP_NOP: size = 1 + ((hdr >> 16) & 0x3fff)
    elif op == OP_WRITE:
      self.need(16, "SDMA WRITE")
      size = 4 + (self.ring_dword(self.rptr // 4 + 3) & 0xfffff) + 1
    elif (op, sub) in SIZES: size = SIZES[(op, sub)]
    else: raise PacketError(f"SDMA: unsupported opcode {op} sub-opcode {sub} (header {hdr:#010x}) at {where}")
    self.need(4 * size, f"SDMA {name} ({size} dwords)")   # the whole packet is published before any of it executes
    dw = self.ring_words(self.rptr // 4, size).__getitem__ if op != OP_NOP else None   # one read (a NOP's body is never read)
    if op == OP_COPY:
      nbytes, src, dst = (dw(1) & self.count_mask) + 1, dw(3) | (dw(4) << 32), dw(5) | (dw(6) << 32)
      for off in range(0, nbytes, COPY_CHUNK):
        n = min(COPY_CHUNK, nbytes - off)
        self.gpu.memory.write(dst + off, self.gpu.memory.read(src + off, n))
      self.gpu.clock.advance_copy(nbytes)
    elif op == OP_WRITE:
      addr = dw(1) | (dw(2) << 32)
      self.gpu.memory.write(addr, b"".join(dw(4 + i).to_bytes(4, "little") for i in range(size - 4)))
    elif op == OP_FENCE: self.write32(dw(1) | (dw(2) << 32), dw(3))
    elif op == OP_TRAP: self.gpu.interrupt(self, "SDMA", dw(1) & 0x0fffffff)
    elif op == OP_POLL_REGMEM:
      func, mem_poll, mask = (hdr >> 28) & 7, (hdr >> 31) & 1, dw(4)
      if mem_poll and not compare(func, (value := self.read32(addr := dw(1) | (dw(2) << 32))) & mask, dw(3) & mask):
        raise Stall(f"mem[{addr:#x}] & {mask:#x} {CMP_NAMES[func]} {dw(3) & mask:#x} (reads {value & mask:#x})")
      # a register poll is the HDP flush handshake, which completes at once
    elif op == OP_TIMESTAMP: self.write64(dw(1) | (dw(2) << 32), self.gpu.clock.now())
    self.rptr += size * 4
    self.quiet = op in QUIET
