"""The interrupt handler ring (OSSSYS IH): how the AM driver learns of GPU faults.

The driver programs ring 0's base (IH_RB_BASE/_HI, MC address >> 8), size (IH_RB_CNTL.rb_size: 4 << rb_size bytes) and
enable, then reads IH_RB_WPTR (offset field: the write position in dwords) and consumes 32-byte entries up to it, storing its
read position to IH_RB_RPTR. `post` writes one SOC15 entry (dword 0: client, source, ring id, VMID; dword 3: PASID and node;
dwords 4-7: context) at the write position and advances it. An entry posted while the ring is disabled, or one that would
overrun the driver's read position, is not written: the ring reports an overflow (IH_RB_WPTR.rb_overflow) instead, as
the hardware does, and the mock says so on stderr.
"""
from __future__ import annotations
import struct, sys
from typing import TYPE_CHECKING
if TYPE_CHECKING: from mockgpu.pci.device import PCIGPU

ENTRY_BYTES = 32

class InterruptRing:
  """See the module docstring."""
  def __init__(self, gpu:PCIGPU):
    self.gpu, self.regs = gpu, gpu.regs
    self.wptr = 0       # dwords
    self.regs.on_write("regIH_RB_WPTR", self._host_wptr)

  def _host_wptr(self, value:int):
    # the driver resets the ring (writes 0) at init and clears the overflow flag keeping the offset
    self.wptr = self.regs.reg("regIH_RB_WPTR").decode(value)["offset"]

  def post(self, client:int, source:int, ctx:tuple[int, int, int, int]=(0, 0, 0, 0), ring_id:int=0):
    """Write one entry and advance the write pointer (see the module docstring)."""
    cntl = self.regs.fields("regIH_RB_CNTL")
    size = 4 << cntl["rb_size"]
    rptr = self.regs.get("regIH_RB_RPTR") % (size // 4)
    if not cntl["rb_enable"] or (self.wptr + ENTRY_BYTES // 4) % (size // 4) == rptr:
      print(f"mockgpu: {self.gpu.name}: IH ring {'disabled' if not cntl['rb_enable'] else 'full'}: interrupt client {client} source {source} lost",
            file=sys.stderr)
      self.regs.set("regIH_RB_WPTR", self.regs.get("regIH_RB_WPTR") | 1)
      return
    base = self.gpu.mc_to_vram(((self.regs.get("regIH_RB_BASE_HI") << 32) | self.regs.get("regIH_RB_BASE")) << 8, size, "IH ring (IH_RB_BASE)")
    entry = struct.pack("<8I", client | (source << 8) | (ring_id << 16), 0, 0, 0, *ctx)
    self.gpu.vram_write(base + self.wptr * 4, entry)
    self.wptr = (self.wptr + ENTRY_BYTES // 4) % (size // 4)
    self.regs.set("regIH_RB_WPTR", offset=self.wptr)
