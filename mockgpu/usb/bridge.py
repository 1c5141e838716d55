"""A mock ASMedia ASM24xx USB3-to-PCIe bridge running tinygrad's custom firmware, as `tinygrad.runtime.support.usb` drives it.

What the host reaches, over vendor control requests and the two bulk endpoints (0x02 OUT, 0x81 IN):
- XDATA, the bridge controller's 64 KiB data space: 0xE4 reads (wValue address, wLength bytes), 0xE5 writes one byte (wValue
  address, wIndex value). XDATA_LTSSM reads LTSSM_L0 once the PCIe link is powered (0xF3, wValue 1). Two XDATA windows are
  also PCIe memory the GPU can write: XDATA 0xA000 is bus 0x820000 and XDATA 0xB800 bus 0x822000 (`WINDOWS`).
- the TLP engine, 0xF0: an OUT with wValue = Fmt/Type | byte enables << 8, wIndex = mode and 12 bytes (address low, high, data)
  sends one TLP (mode 0; a read or configuration request leaves a completion that the next 0xF0 IN returns: data dword, Cpl
  Status in byte 4 bits 5-7, an engine status in byte 7), or arms a streaming memory write (mode 1: the next bulk OUT, data =
  dword count) or read (mode 2: the next bulk IN).
- SRAM, 512 KiB of buffer memory that is bus 0x200000 for the GPU: 0xF2 with wValue = 512-byte sectors and wIndex = 16 KiB slot
  | 16 KiB count << 8 arms a bulk OUT into SRAM from that slot; with wValue bit 15 set it arms a bulk IN of SRAM from the slot,
  sent once the GPU has written the completion entry (dword 3 of the entry at bus 0x822000; the bridge marks it pending when
  armed, the GPU's write releases the data, as the bridge's NVMe completion-queue monitor does).

A transfer the bridge cannot make sense of (a bulk transfer nobody armed or of the wrong length, an address outside XDATA or
SRAM, a streaming TLP no device decodes) fails with `USBTransferError` naming the request and address; the host never hangs.
"""
from __future__ import annotations
import ctypes, mmap, struct, time
import numpy as np
from mockgpu.engine import SCHEDULER
from mockgpu.hostmem import host_mmap
from mockgpu.usb.pcie import CPL_OK, CPL_UR, BarHit, Hierarchy

XDATA_BYTES, SRAM_BYTES, SECTOR, SLOT = 0x10000, 0x80000, 512, 0x4000
XDATA_LTSSM, LTSSM_L0, LTSSM_OFF = 0xB450, 0x78, 0x00
SRAM_BUS = 0x200000
WINDOWS = ((0xA000, 0x820000, 0x1000), (0xB800, 0x822000, 0x1000))   # (XDATA address, bus address, bytes)
COMPLETION = 0x82200c            # the dword the GPU writes to complete an armed SRAM read (dword 3 of the first queue entry)
PENDING = 0xffffffff
POLL_S = 0.0002
# TLP Fmt/Type bytes (PCIe base spec): memory read/write with 32/64-bit addresses, configuration type 0/1, messages (0b0011_0rrr)
MRD, MWR, CFGRD, CFGWR = (0x00, 0x20), (0x40, 0x60), (0x04, 0x05), (0x44, 0x45)
REQ_XDATA_READ, REQ_XDATA_WRITE, REQ_TLP, REQ_SRAM, REQ_POWER = 0xE4, 0xE5, 0xF0, 0xF2, 0xF3

class USBTransferError(RuntimeError):
  """A USB transfer the bridge refuses (what libusb reports as a stall); the message names the request and the address."""

class ASM24Bridge:
  """The bridge chip of one USB GPU: XDATA, SRAM, the TLP engine and what the next bulk transfer is armed for. `gpu` is the
  mock PCI GPU behind it (mockgpu.pci.device.PCIGPU), `hierarchy` the PCIe links to it."""
  def __init__(self, name:str, gpu, hierarchy:Hierarchy, bars:dict[int, tuple[int, int]]):
    self.name, self.gpu, self.links = name, gpu, hierarchy
    self.bars = bars   # BAR -> (host address, bytes) of the GPU's memory behind it
    self.xdata_addr = _host_zeroed(XDATA_BYTES)
    self.sram_addr = _host_zeroed(SRAM_BYTES)
    self.xdata = np.ctypeslib.as_array((ctypes.c_uint8 * XDATA_BYTES).from_address(self.xdata_addr))
    self.sram = np.ctypeslib.as_array((ctypes.c_uint8 * SRAM_BYTES).from_address(self.sram_addr))
    self._power_on()

  def _power_on(self):
    self.xdata[:], self.sram[:] = 0, 0
    self.xdata[XDATA_LTSSM] = LTSSM_OFF   # tinygrad's custom firmware boots with PCIe off
    self.completion: bytes | None = None
    self.armed_out: tuple | None = None   # ("tlp", address, bytes) or ("sram", offset, bytes)
    self.armed_in: tuple | None = None

  def replug(self):
    """Unplug and plug the device back in: the bridge, its links and the GPU behind it at power-on (the GPU's VRAM keeps its
    contents, as after the SMU's mode-1 reset)."""
    self._power_on()
    self.links.reset()
    self.gpu.mode1_reset()

  def bus_windows(self) -> list[tuple[int, int, int]]:
    """(bus address, bytes, host address) of the bridge memory the GPU reaches as system memory."""
    return [(SRAM_BUS, SRAM_BYTES, self.sram_addr)] + [(bus, size, self.xdata_addr + x) for x, bus, size in WINDOWS]

  def _fail(self, what:str) -> USBTransferError: return USBTransferError(f"mockusb {self.name}: {what}")

  # ---- control requests ----
  def control_out(self, request:int, value:int, index:int, data:bytes):
    what = f"control OUT {request:#04x} (wValue {value:#06x}, wIndex {index:#06x}, {len(data)} bytes)"
    if request == REQ_XDATA_WRITE: self._xdata_span(value, 1, what)[0] = index & 0xff
    elif request == REQ_POWER: self.xdata[XDATA_LTSSM] = LTSSM_L0 if value else LTSSM_OFF
    elif request == REQ_TLP: self._tlp(value & 0xff, value >> 8, index, data, what)
    elif request == REQ_SRAM: self._arm_sram(value, index, what)
    else: raise self._fail(f"{what}: not a request the firmware serves")

  def control_in(self, request:int, value:int, index:int, length:int) -> bytes:
    what = f"control IN {request:#04x} (wValue {value:#06x}, {length} bytes)"
    if request == REQ_XDATA_READ: return self._xdata_span(value, length, what).tobytes()
    if request == REQ_TLP:
      if length != 8: raise self._fail(f"{what}: a TLP completion is 8 bytes")
      if self.completion is None: raise self._fail(f"{what}: no non-posted TLP is waiting for its completion")
      out, self.completion = self.completion, None
      return out
    raise self._fail(f"{what}: not a request the firmware serves")

  def _xdata_span(self, addr:int, size:int, what:str) -> np.ndarray:
    if addr + size > XDATA_BYTES: raise self._fail(f"{what}: XDATA [{addr:#x}, {addr + size:#x}) runs past {XDATA_BYTES:#x}")
    return self.xdata[addr:addr + size]

  def _tlp(self, fmt:int, byte_en:int, mode:int, data:bytes, what:str):
    if len(data) != 12: raise self._fail(f"{what}: a TLP request carries 12 bytes (address low, high, data)")
    lo, hi, value = struct.unpack("<III", data)
    addr = lo | (hi << 32)
    if self.xdata[XDATA_LTSSM] != LTSSM_L0: raise self._fail(f"{what}: TLP to {addr:#x} with the PCIe link down (0xF3 powers it)")
    if mode in (1, 2):   # streaming: `value` dwords through the next bulk transfer
      if fmt not in (MWR if mode == 1 else MRD) or value == 0:
        raise self._fail(f"{what}: streaming mode {mode} takes a memory {'write' if mode == 1 else 'read'} of at least one dword")
      arm = ("tlp", addr, value * 4)
      if mode == 1: self.armed_out = arm
      else: self.armed_in = arm
      return
    if mode != 0: raise self._fail(f"{what}: TLP engine mode {mode} does not exist (0 single, 1 stream out, 2 stream in)")
    if fmt in CFGRD or fmt in CFGWR:
      status, out = self.links.config(fmt in CFGWR, addr, byte_en, value)
      self.completion = struct.pack("<IBBBB", out, status << 5, 0, 0, 0)
    elif fmt in MRD or fmt in MWR:
      if byte_en == 0 or byte_en & ~0xf: raise self._fail(f"{what}: byte enables {byte_en:#x} for a one-dword request")
      first = (byte_en & -byte_en).bit_length() - 1
      size = byte_en.bit_length() - first
      if fmt in MWR:
        if (hit := self.links.memory(addr + first, size)) is None:
          raise self._fail(f"{what}: memory write to {addr + first:#x}: no device decodes it")
        self._write(hit, (value >> (8 * first)).to_bytes(4, "little")[:size], what)
        return
      hit = self.links.memory(addr + first, size)
      word = 0 if hit is None else int.from_bytes(self._read(BarHit(hit.bar, hit.offset - first), 4), "little")
      self.completion = struct.pack("<IBBBB", word, (CPL_OK if hit is not None else CPL_UR) << 5, 0, 0, 0)
    elif fmt & 0b10111000 == 0b00110000: pass   # a message: the GPU has nothing to say to it
    else: raise self._fail(f"{what}: Fmt/Type {fmt:#04x} is not a TLP the engine sends")

  def _arm_sram(self, value:int, index:int, what:str):
    read, sectors, slot, chunks = bool(value & 0x8000), value & 0x7fff, index & 0xff, index >> 8
    size, off = sectors * SECTOR, slot * SLOT
    if not sectors or chunks != -(-size // SLOT) or off + size > SRAM_BYTES:
      raise self._fail(f"{what}: {sectors} sectors from slot {slot} in {chunks} chunks do not fit SRAM ({SRAM_BYTES:#x} bytes)")
    if read:
      self.armed_in = ("sram", off, size)
      self._store(COMPLETION, PENDING)
    else: self.armed_out = ("sram", off, size)

  def _window_dword(self, bus:int) -> np.ndarray:
    """The XDATA bytes of the dword at bus address `bus` (inside one of WINDOWS)."""
    x = next(x + bus - b for x, b, n in WINDOWS if b <= bus < b + n)
    return self.xdata[x:x + 4]

  def _store(self, bus:int, value:int): self._window_dword(bus)[:] = np.frombuffer(struct.pack("<I", value), np.uint8)

  # ---- bulk transfers ----
  def bulk_out(self, payload:bytes):
    if (arm := self.armed_out) is None: raise self._fail(f"bulk OUT of {len(payload)} bytes: no transfer is armed (0xF0 mode 1 or 0xF2)")
    kind, addr, size = arm
    self.armed_out = None
    where = f"bulk OUT of {len(payload)} bytes to {'PCIe ' if kind == 'tlp' else 'SRAM '}{addr:#x}"
    if len(payload) != size: raise self._fail(f"{where}: the armed transfer takes {size} bytes")
    if kind == "sram":
      with SCHEDULER.lock: self.sram[addr:addr + size] = np.frombuffer(payload, np.uint8)
      SCHEDULER.kick()   # engines polling SRAM (tinygrad's copy-in waits on each chunk's sentinel) look again now
      return
    if (hit := self.links.memory(addr, size)) is None: raise self._fail(f"{where}: no device decodes it")
    self._write(hit, payload, where)

  def bulk_in(self, length:int, timeout_s:float) -> bytes:
    if (arm := self.armed_in) is None: raise self._fail(f"bulk IN of {length} bytes: no transfer is armed (0xF0 mode 2 or 0xF2 read)")
    kind, addr, size = arm
    self.armed_in = None
    where = f"bulk IN of {length} bytes from {'PCIe ' if kind == 'tlp' else 'SRAM '}{addr:#x}"
    if length != size: raise self._fail(f"{where}: the armed transfer sends {size} bytes")
    if kind == "sram":
      self._await_completion(where, timeout_s)
      return self.sram[addr:addr + size].tobytes()
    if (hit := self.links.memory(addr, size)) is None: raise self._fail(f"{where}: no device decodes it")
    return self._read(hit, size)

  def _await_completion(self, where:str, timeout_s:float):
    entry, deadline = self._window_dword(COMPLETION), time.monotonic() + timeout_s
    while int.from_bytes(entry.tobytes(), "little") == PENDING:
      if time.monotonic() > deadline:
        raise self._fail(f"{where}: timed out after {timeout_s:g} s: the GPU never wrote the completion at bus {COMPLETION:#x}")
      SCHEDULER.poll()
      time.sleep(POLL_S)

  # ---- the GPU's memory ----
  def _span(self, hit:BarHit, size:int, what:str) -> int:
    host, limit = self.bars[hit.bar]
    if hit.offset + size > limit: raise self._fail(f"{what}: BAR{hit.bar} offset {hit.offset:#x} + {size:#x} is beyond its memory ({limit:#x})")
    return host + hit.offset

  def _write(self, hit:BarHit, data:bytes, what:str):
    """Bytes reaching BAR memory: VRAM takes them as they are; registers (BAR5) see aligned dwords and doorbells (BAR2) aligned
    quadwords, each running the device's handler as a host store would (mockgpu.devwrite)."""
    from mockgpu import devwrite
    host = self._span(hit, len(data), what)
    if hit.bar == 0:
      ctypes.memmove(host, data, len(data))
      return
    unit, fmt = (8, "Q") if hit.bar == 2 and hit.offset % 8 == 0 and len(data) % 8 == 0 else (4, "I")
    if hit.offset % 4 or len(data) % 4: raise self._fail(f"{what}: BAR{hit.bar} takes aligned 32-bit writes")
    for off in range(0, len(data), unit): devwrite.device_store(host + off, fmt, int.from_bytes(data[off:off + unit], "little"))

  def _read(self, hit:BarHit, size:int) -> bytes: return ctypes.string_at(self._span(hit, size, f"read of BAR{hit.bar}"), size)

def _host_zeroed(size:int) -> int:
  addr = host_mmap(0, size, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED | mmap.MAP_ANONYMOUS, -1, 0)
  ctypes.memset(addr, 0, size)
  return addr
