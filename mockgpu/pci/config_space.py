"""PCI configuration space of a mock GPU: the type-0 header and a capability list (power management, PCI Express, MSI).

What the AM driver touches: the capability walk from 0x34 to the PCI Express capability, whose Link Control register
(capability + 0x10) it writes to turn ASPM off (bits 0-1; L1 is on at power-up, as on the real cards), and PCI_COMMAND's bus
master bit, which it clears around a reset and sets before the GPU reaches system memory. Behind the USB bridge the driver
also sizes and places the BARs itself: a BAR register keeps only the address bits its (power-of-two) size leaves, so writing all
ones reads back the size mask (PCI local bus spec, "Base Address Registers").
"""
from __future__ import annotations
import struct

PCI_COMMAND, PCI_COMMAND_MEMORY, PCI_COMMAND_MASTER = 0x04, 0x2, 0x4
CAP_PM, CAP_EXP, CAP_MSI = 0x50, 0x64, 0xa0
LNKCTL = CAP_EXP + 0x10
ASPM_L1 = 0x2
SIZE = 4096

class ConfigSpace:
  """4 KB of config space; `read(pos, size)` / `write(pos, data)` are the sysfs `config` file's."""
  def __init__(self, vendor:int, device:int, bars:dict[int, tuple[int, int, bool]]):
    b = bytearray(SIZE)
    struct.pack_into("<HHHH", b, 0, vendor, device, PCI_COMMAND_MEMORY, 0x0010)   # status: capability list present
    struct.pack_into("<I", b, 0x08, 0x030000c8)   # class: display controller (VGA), revision 0xc8
    for i, (addr, _, is64) in bars.items():
      struct.pack_into("<I", b, 0x10 + 4 * i, (addr & 0xfffffff0) | (0xc if is64 else 0))
      if is64: struct.pack_into("<I", b, 0x14 + 4 * i, addr >> 32)
    b[0x34] = CAP_PM
    b[CAP_PM:CAP_PM + 2] = bytes([0x01, CAP_EXP])              # power management -> PCI Express
    b[CAP_EXP:CAP_EXP + 2] = bytes([0x10, CAP_MSI])            # PCI Express -> MSI
    struct.pack_into("<H", b, CAP_EXP + 2, 0x0002)             # PCIe capability version 2, endpoint
    struct.pack_into("<H", b, LNKCTL, ASPM_L1)
    b[CAP_MSI:CAP_MSI + 2] = bytes([0x05, 0x00])               # MSI, end of the list
    self.data, self.bars = b, bars

  def read(self, pos:int, size:int) -> bytes: return bytes(self.data[pos:pos + size])

  def write(self, pos:int, data:bytes):
    if pos + len(data) > SIZE: raise OSError(22, f"config space write of {len(data)} bytes at {pos:#x} runs past {SIZE:#x}")
    if pos < 0x40 and not (pos == PCI_COMMAND and len(data) <= 2) and not 0x10 <= pos < 0x28: return   # read-only header fields
    self.data[pos:pos + len(data)] = data
    if pos < 0x28 and pos + len(data) > 0x10: self._decode_bars()

  def _decode_bars(self):
    """Clear the address bits each BAR's size does not decode (unimplemented BAR registers read 0)."""
    keep = bytearray(self.data[0x10:0x28])
    self.data[0x10:0x28] = bytes(0x18)
    for i, (_, size, is64) in self.bars.items():
      mask = ~((1 << (size - 1).bit_length()) - 1)
      value = struct.unpack_from("<Q" if is64 else "<I", keep, 4 * i)[0] & mask & (~0xf) | (0xc if is64 else 0)
      struct.pack_into("<Q" if is64 else "<I", self.data, 0x10 + 4 * i, value & ((1 << (64 if is64 else 32)) - 1))

  def word(self, pos:int) -> int: return struct.unpack_from("<H", self.data, pos)[0]
  @property
  def bus_master(self) -> bool: return bool(self.word(PCI_COMMAND) & PCI_COMMAND_MASTER)
