"""The USB side of the mock bridge: the device list tinygrad enumerates and the handle whose transfers it makes.

`MockUSB3` stands in for tinygrad's `USB3` (a libusb device handle) with the same methods: synchronous vendor control and bulk
transfers, and the asynchronous ones the copy-in pipeline queues (each completes when it is submitted, in submission order, so
`bulk_wait` has nothing left to wait for). The GPUs are created the first time tinygrad lists devices: one bridge and one mock PCI GPU
(mockgpu.pci.device.PCIGPU) per GPU that DEV asks for, with the vendor/product id of tinygrad's custom firmware (0xADD1:0x0001).
Device names are `usb:<bus>-<address>` with a bus number derived from the process id, so two test processes never contend for
tinygrad's per-device lock file; the process deletes its own lock files at exit.
"""
from __future__ import annotations
import atexit, itertools, os
from dataclasses import dataclass
from mockgpu.engine import SCHEDULER
from mockgpu.usb.bridge import ASM24Bridge, USBTransferError

VENDOR, PRODUCT = 0xADD1, 0x0001      # tinygrad's custom ASM24xx firmware (USBIface also lists 0x3801:0x0001, which is not mocked)
PRODUCT_STRING = "custom firmware (tinygrad-emu mock ASM24xx)"
CONTROL_MAX = 0x1000                  # bytes of a control transfer's data stage (USB3's control buffer)

@dataclass
class USBDevice:
  """One mock USB GPU: its bus name and the bridge in front of its GPU."""
  name: str
  bridge: ASM24Bridge

DEVICES: list[USBDevice] = []

def bus_name(index:int, pid:int|None=None) -> str:
  """The USB name (`usb:<bus>-<address>`) of GPU `index` in this process."""
  return f"usb:{100 + (os.getpid() if pid is None else pid) % 900}-{index + 2}"

class BridgeBus:
  """The bus addresses a USB GPU reaches as system memory: its bridge's SRAM and XDATA windows (the interface of
  mockgpu.pci.bus.PhysicalBus). A GPU behind a USB bridge reaches no peer: its BAR is published nowhere."""
  def __init__(self): self.windows: list[tuple[int, int, int]] = []
  def add_bar(self, start:int, size:int, host):
    """(PhysicalBus publishes a GPU's VRAM BAR to its peers here; behind a USB bridge there are none.)"""
  def resolve(self, addr:int, size:int) -> list[tuple[int, int, int]]:
    """The parts of [addr, addr+size) that bridge memory backs: (offset into the range, host address, bytes)."""
    out = []
    for bus, n, host in self.windows:
      lo, hi = max(addr, bus), min(addr + size, bus + n)
      if lo < hi: out.append((lo - addr, host + lo - bus, hi - lo))
    return sorted(out)

def attach(index:int, name:str, board, vram_bytes:int) -> USBDevice:
  """A mock PCI GPU of `board` (mockgpu.pci.boards.PCIBoard) behind a fresh bridge, as USB device `name`: its BARs unassigned
  (the host sizes and places them through the bridge), BAR0 the power of two that holds its VRAM."""
  from mockgpu.pci import driver
  from mockgpu.pci.config_space import ConfigSpace
  from mockgpu.pci.device import PCIGPU
  from mockgpu.usb.pcie import Hierarchy
  bus = BridgeBus()
  gpu = PCIGPU(index, name, board, vram_bytes, bus)   # type: ignore[arg-type]  # (BridgeBus: the PhysicalBus interface)
  sizes = {0: 1 << (gpu.vram_size - 1).bit_length(), 2: gpu.doorbell_bytes, 5: gpu.regs.bar_bytes}
  gpu.config = ConfigSpace(driver.VENDOR_AMD, board.device_id, {0: (0, sizes[0], True), 2: (0, sizes[2], True), 5: (0, sizes[5], False)})
  memory = {0: (gpu.vram_addr, gpu.vram_size), 2: (gpu.doorbell_page(), gpu.doorbell_bytes), 5: (gpu.regs.bar_addr, gpu.regs.bar_bytes)}
  bridge = ASM24Bridge(name, gpu, Hierarchy(gpu.config, sizes), memory)
  bus.windows = bridge.bus_windows()
  return USBDevice(name, bridge)

def devices() -> list[USBDevice]:
  """The mock USB GPUs of this process (created on first use: DEV's arch, MOCKGPU_AMD_GPUS or DEV's indices, MOCKGPU_AMD_VRAM)."""
  if DEVICES: return DEVICES
  from mockgpu import config, mockgpu
  from mockgpu.pci import driver, firmware
  from mockgpu.pci.boards import board as pci_board
  mockgpu.start_engines()
  b = pci_board(config.amd_arch(), "MOCKUSB")
  firmware.install()
  DEVICES.extend(attach(i, bus_name(i), b, config.amd_vram_bytes(b.kfd.vram_bytes)) for i in range(config.amd_gpu_count()))
  driver.GPUS.extend(d.bridge.gpu for d in DEVICES)
  atexit.register(driver.remove_lock_files, [d.name for d in DEVICES])
  return DEVICES

class MockUSB3:
  """tinygrad's USB3 handle over a mock USB device (`list_devices` yields them)."""
  @classmethod
  def list_devices(cls, vendor:int, dev:int) -> list[tuple[USBDevice, str]]:
    return [(d, d.name) for d in devices()] if (vendor, dev) == (VENDOR, PRODUCT) else []

  def __init__(self, dev:USBDevice, *args, **kwargs):
    if not isinstance(dev, USBDevice): raise TypeError(f"mockusb: {dev!r} is not a device MockUSB3.list_devices listed")
    self.dev, self.bridge, self.product = dev, dev.bridge, PRODUCT_STRING
    self._tags = itertools.count(1)

  def _setup(self, direction:str, request:int, value:int, index:int, length:int):
    """A control transfer's setup stage: bRequest a byte, wValue/wIndex/wLength 16-bit fields, the data stage at most CONTROL_MAX."""
    if not (0 <= request < 0x100 and 0 <= value < 0x10000 and 0 <= index < 0x10000 and 0 <= length <= CONTROL_MAX):
      raise USBTransferError(f"mockusb {self.dev.name}: control {direction} request {request:#x} (wValue {value:#x}, wIndex {index:#x}, "
                             f"{length} bytes): not a control transfer (8-bit request, 16-bit fields, at most {CONTROL_MAX} bytes)")

  def control_write(self, request:int, value:int=0, index:int=0, data:bytes=b'', timeout:int=1000):
    self._setup("OUT", request, value, index, len(data))
    self.bridge.control_out(request, value, index, bytes(data))

  def control_read(self, request:int, length:int, value:int=0, index:int=0, timeout:int=1000) -> memoryview:
    self._setup("IN", request, value, index, length)
    SCHEDULER.poll()   # a host reading device state (tinygrad spins on the drain fence): let busy engines run, as a to_mv touch does
    return memoryview(bytearray(self.bridge.control_in(request, value, index, length)))

  def bulk_write(self, payload, timeout:int=1000): self.bridge.bulk_out(bytes(payload))
  def bulk_read(self, length:int, timeout:int=1000) -> memoryview: return memoryview(bytearray(self.bridge.bulk_in(length, timeout / 1000)))

  def _done(self) -> int: return next(self._tags)

  def bulk_write_async(self, payload, timeout:int=10000) -> int:
    """A queued bulk OUT: the mock completes it at once (its effects in submission order); `bulk_wait` takes the tag."""
    self.bulk_write(payload, timeout)
    return self._done()

  def control_write_async(self, request:int, value:int=0, index:int=0, data:bytes=b"", timeout:int=1000) -> int:
    self.control_write(request, value, index, data, timeout)
    return self._done()

  def control_read_async(self, request:int, length:int, value:int=0, index:int=0, timeout:int=1000) -> tuple[int, memoryview]:
    data = self.control_read(request, length, value, index, timeout)
    return self._done(), data

  def bulk_wait(self, tag:int|None):
    """Wait for a queued transfer: every one completed when it was submitted (USB3 too returns at once for a tag not pending)."""

  def send_batch(self, cdbs:list[bytes], odata=None):
    """SCSI command blocks over the mass-storage protocol (tinygrad's flash tool, not its runtime): not emulated."""
    raise USBTransferError(f"mockusb {self.dev.name}: SCSI command blocks (opcode {cdbs[0][0]:#04x}, the flash tool's path) are not emulated")
