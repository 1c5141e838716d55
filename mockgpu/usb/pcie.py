"""The PCIe hierarchy behind the mock USB bridge: a chain of type-1 bridges (the bridge chip's own ports and the card's switch)
ending at one GPU endpoint, and how a TLP finds its way down it.

tinygrad's AM driver over USB (`tinygrad.runtime.support.system.System.pci_setup_usb_bars`) numbers the buses itself: it writes
each bridge's primary/secondary/subordinate bus numbers and memory windows, enables memory decoding, then sizes the GPU's BARs
(write all ones, read the size mask back) and places them. Nothing is reachable before that: a configuration request reaches the
device on bus B only if every bridge above it forwards bus B (secondary <= B <= subordinate), and a memory request reaches a
GPU BAR only if every bridge on the way has memory decoding on and a window that holds the address, and the GPU's BAR and
PCI_COMMAND memory bit decode it. What no device claims completes with Unsupported Request, as on a PCIe fabric.

Level 0 sits on bus 0 (the bridge's root port, type-0 configuration requests); level k+1 sits on the secondary bus level k was
given. Only device 0, function 0 exists on each bus (PCIe point-to-point links).
"""
from __future__ import annotations
import struct
from dataclasses import dataclass
from mockgpu.pci.config_space import PCI_COMMAND, PCI_COMMAND_MEMORY, ConfigSpace

# completion status of a non-posted request (PCIe base spec, Cpl Status): successful, Unsupported Request
CPL_OK, CPL_UR = 0b000, 0b001
# type-1 header registers (PCI-to-PCI bridge architecture spec): bus numbers and the two memory windows
PRIMARY_BUS, MEMORY_BASE, MEMORY_LIMIT, PREF_BASE, PREF_LIMIT, PREF_BASE_UPPER, PREF_LIMIT_UPPER = 0x18, 0x20, 0x22, 0x24, 0x26, 0x28, 0x2c
BRIDGE_VENDOR, BRIDGE_DEVICE = 0x1b21, 0x2463   # an ASMedia PCIe port (vendor 0x1b21)
LINK_DEPTH = 4                                   # bridges above the GPU: tinygrad puts the GPU on bus 4 (gpu_bus=4)

class Bridge:
  """A PCI-to-PCI bridge's type-1 configuration space: bus numbers, the memory and prefetchable windows, the command register."""
  def __init__(self):
    self.data = bytearray(4096)
    struct.pack_into("<HHHH", self.data, 0, BRIDGE_VENDOR, BRIDGE_DEVICE, 0, 0x0010)
    struct.pack_into("<I", self.data, 0x08, 0x06040000)   # class: PCI-to-PCI bridge
    self.data[0x0e] = 0x01                                 # header type 1
    struct.pack_into("<HH", self.data, PREF_BASE, 0x1, 0x1)   # the prefetchable window decodes 64-bit addresses

  def read(self, pos:int, size:int) -> bytes: return bytes(self.data[pos:pos + size])
  def write(self, pos:int, data:bytes):
    if pos < 0x08 and pos != PCI_COMMAND: return   # vendor/device ids are read-only
    self.data[pos:pos + len(data)] = data

  def _u(self, fmt:str, pos:int) -> int: return struct.unpack_from(fmt, self.data, pos)[0]
  @property
  def secondary(self) -> int: return self.data[PRIMARY_BUS + 1]
  @property
  def subordinate(self) -> int: return self.data[PRIMARY_BUS + 2]
  def forwards_bus(self, bus:int) -> bool: return self.secondary != 0 and self.secondary <= bus <= self.subordinate

  def forwards_memory(self, addr:int, size:int) -> bool:
    """Whether a memory request for [addr, addr+size) goes through: memory decoding on and inside one of the two windows."""
    if not self._u("<H", PCI_COMMAND) & PCI_COMMAND_MEMORY: return False
    base, limit = (self._u("<H", MEMORY_BASE) & 0xfff0) << 16, ((self._u("<H", MEMORY_LIMIT) & 0xfff0) << 16) | 0xfffff
    pbase = ((self._u("<H", PREF_BASE) & 0xfff0) << 16) | (self._u("<I", PREF_BASE_UPPER) << 32)
    plimit = ((self._u("<H", PREF_LIMIT) & 0xfff0) << 16) | 0xfffff | (self._u("<I", PREF_LIMIT_UPPER) << 32)
    return any(lo <= addr and addr + size - 1 <= hi for lo, hi in ((base, limit), (pbase, plimit)) if lo <= hi)

@dataclass(frozen=True)
class BarHit:
  """A memory request's target: BAR `bar` of the GPU at byte `offset`."""
  bar: int
  offset: int

class Hierarchy:
  """LINK_DEPTH bridges and the GPU's configuration space `gpu` (whose BAR sizes `sizes` {bar: bytes} are decoded)."""
  def __init__(self, gpu:ConfigSpace, sizes:dict[int, int]):
    self.gpu, self.sizes, self._gpu_reset = gpu, sizes, bytes(gpu.data)
    self.reset()

  def reset(self):
    """Power-on state: bridges unnumbered with closed windows, the GPU's BARs unassigned and its decoding off."""
    self.bridges = [Bridge() for _ in range(LINK_DEPTH)]
    self.gpu.data[:] = self._gpu_reset

  def _device(self, bus:int, devfn:int) -> Bridge | ConfigSpace | None:
    """The configuration space a request for (bus, device/function) reaches, None when no device answers it."""
    if devfn != 0: return None
    at = 0   # the bus the current level sits on
    for level in [*self.bridges, self.gpu]:
      if bus == at: return level
      if not isinstance(level, Bridge) or not level.forwards_bus(bus): return None
      at = level.secondary
    return None

  def config(self, write:bool, address:int, byte_en:int, value:int) -> tuple[int, int]:
    """A configuration request (address: bus << 24 | device << 19 | function << 16 | register): (completion status, data)."""
    dev = self._device(address >> 24, (address >> 16) & 0xff)
    if dev is None: return CPL_UR, 0
    reg = address & 0xffc
    if write:
      for i in range(4):
        if byte_en >> i & 1: dev.write(reg + i, bytes([(value >> (8 * i)) & 0xff]))
      return CPL_OK, 0
    return CPL_OK, int.from_bytes(dev.read(reg, 4), "little")

  def memory(self, addr:int, size:int) -> BarHit | None:
    """The GPU BAR a memory request for [addr, addr+size) reaches (every bridge forwards it, the GPU decodes it), else None."""
    if not all(b.forwards_memory(addr, size) for b in self.bridges): return None
    if not self.gpu.word(PCI_COMMAND) & PCI_COMMAND_MEMORY: return None
    for bar, size_bar in self.sizes.items():
      lo = struct.unpack_from("<I", self.gpu.data, 0x10 + 4 * bar)[0]
      base = (lo & 0xfffffff0) | ((struct.unpack_from("<I", self.gpu.data, 0x14 + 4 * bar)[0] << 32) if lo & 0x4 else 0)
      if base and base <= addr and addr + size <= base + size_bar: return BarHit(bar, addr - base)
    return None
