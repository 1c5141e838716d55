"""The register file of a PCI board: the MMIO BAR the host maps, the registers beyond it, and who reacts to a write.

Registers below the BAR's size live in the BAR's host memory itself (the host reads them with plain loads, so the value in
memory is the register's value; the device updates it with `regs[addr] = v`). Registers above it are reached, as on the
hardware, through the RSMU index/data pair: a write of a byte address to the index loads the data register with that
register's value, and a write to the data register stores into it. Every host store to the BAR (seen through
`mockgpu.devwrite`) runs the handler registered for that register, synchronously on the storing thread: the blocks answer
handshakes at once, and a write that breaks a protocol raises `PCIDeviceError` into the driver call that made it.

Register names, addresses and fields come from tinygrad's own register modules for the IP versions the board publishes
(the same data the driver uses), with each block's bases from the discovery table.
"""
from __future__ import annotations
import ctypes, functools, struct, time
from typing import Callable
import numpy as np
from mockgpu import devwrite
from mockgpu.pci.boards import GC, HDP, MMHUB, MP0, MP1, NBIF, OSSSYS, PCIBoard
from mockgpu.pci.discovery import register_bases

class PCIDeviceError(RuntimeError):
  """A register write the emulated hardware refuses (a protocol violation); the message names the device, block and register."""

def register_modules(board:PCIBoard) -> dict:
  """name -> tinygrad AMDReg for every register of the blocks the AM driver programs, addressed with the board's bases."""
  from tinygrad.runtime.support.amd import AMDReg, import_asic_regs
  v = board.ip_versions
  mods = [("mp", MP0, v[MP0]), ("hdp", HDP, v[HDP]), ("gc", GC, v[GC]), ("mmhub", MMHUB, v[MMHUB]), ("osssys", OSSSYS, v[OSSSYS]),
          ("nbio" if v[GC] < (12, 0, 0) else "nbif", NBIF, v[NBIF]), ("mp", MP1, (11, 0, 0))]   # MP1's mailboxes: the mp 11 module
  out: dict = {}
  for prefix, hwid, ver in mods:
    out.update(import_asic_regs(prefix, ver, cls=functools.partial(AMDReg, bases={0: register_bases(hwid)})))
  ring0 = out["regCP_INT_CNTL_RING0"]
  for pipe in range(MEC_PIPES[v[GC][0]]):   # the same interrupt-enable layout as CP_INT_CNTL_RING0's
    out[f"regCP_ME1_PIPE{pipe}_INT_CNTL"] = AMDReg(f"regCP_ME1_PIPE{pipe}_INT_CNTL", ME1_PIPE0_INT_CNTL + pipe, 0, dict(ring0.fields),
                                                   bases={0: register_bases(GC)})
  return out

# Registers the hardware has and tinygrad's register modules leave out: each MEC pipe's interrupt control, which gates the
# pipe's end-of-pipe (RELEASE_MEM INT_SEL) interrupts (TIME_STAMP_INT_ENABLE; amdgpu enables it per pipe, the AM driver never
# does). Offset (GC segment 0) from Linux's gc_11_0_0_offset.h and gc_12_0_0_offset.h; GC 11 has four such pipes, GC 12 two.
ME1_PIPE0_INT_CNTL = 0x1e25
MEC_PIPES = {11: 4, 12: 2}

class RegisterFile:
  """See the module docstring. `name` prefixes error messages (e.g. 'mockpci 0000:81:00.0')."""
  def __init__(self, name:str, board:PCIBoard):
    self.name, self.bar_bytes = name, board.mmio_bar
    self.defs = register_modules(board)
    self.bar_addr = devwrite.register_page(self.bar_bytes, self._host_write)
    self.bar = np.ctypeslib.as_array((ctypes.c_uint32 * (self.bar_bytes // 4)).from_address(self.bar_addr))
    self.far: dict[int, int] = {}
    self.handlers: dict[int, Callable[[int], None]] = {}
    self.index, self.data = self.addr("regBIF_BX_PF0_RSMU_INDEX"), self.addr("regBIF_BX_PF0_RSMU_DATA")
    self.read_only = {self.addr(n) for n in READ_ONLY if n in self.defs}
    self.shadow = self.bar.copy()   # the BAR as the device knows it: a difference is a store the bench did not see
    self._checked = 0.0

  def reg(self, name:str):
    """The register definition (tinygrad AMDReg) called `name`."""
    if name not in self.defs: raise KeyError(f"{self.name}: no register {name} in the board's register modules")
    return self.defs[name]

  def addr(self, name:str) -> int: return self.reg(name).addr[0]

  def __getitem__(self, addr:int) -> int: return int(self.bar[addr]) if addr < len(self.bar) else self.far.get(addr, 0)

  def __setitem__(self, addr:int, value:int):
    """The device sets a register (no handler runs)."""
    value &= 0xffffffff
    if addr < len(self.bar): self.bar[addr] = self.shadow[addr] = value
    else:
      self.far[addr] = value
      if int(self.bar[self.index]) // 4 == addr: self.bar[self.data] = self.shadow[self.data] = value

  def get(self, name:str) -> int: return self[self.addr(name)]
  def set(self, name:str, value:int=0, **fields):
    r = self.reg(name)
    self[r.addr[0]] = value | r.encode(**fields)
  def fields(self, name:str) -> dict[str, int]: return self.reg(name).decode(self.get(name))

  def on_write(self, name:str, fn:Callable[[int], None]):
    """Run `fn(value)` after each host store to register `name`."""
    self.handlers[self.addr(name)] = fn

  def _host_write(self, offset:int, fmt:str, value:int):
    """A host store through a to_mv view (it has already reached the BAR's memory). Refused, and undone as the hardware drops
    it: a store that is not an aligned 32-bit one, a store to a read-only register, and (checked at most every UNSEEN_CHECK_S)
    any change to the BAR the bench did not see (a store by native code or through a raw mmap)."""
    first, last = offset // 4, (offset + struct.calcsize(fmt) - 1) // 4
    if fmt not in ("I", "i", "L", "l") or offset % 4:
      self.bar[first:last + 1] = self.shadow[first:last + 1]
      raise PCIDeviceError(f"{self.name}: {struct_name(fmt)} store at MMIO offset {offset:#x}: registers take aligned 32-bit stores")
    addr = first
    if addr in self.read_only:
      self.bar[addr] = self.shadow[addr]
      raise PCIDeviceError(f"{self.name}: store of {value & 0xffffffff:#x} to read-only register {self.name_of(addr)}: the hardware drops it")
    self.shadow[addr] = self.bar[addr]
    self._unseen_stores()
    if addr == self.index: self.bar[self.data] = self.shadow[self.data] = self[(value & 0xffffffff) // 4]
    elif addr == self.data:
      addr = int(self.bar[self.index]) // 4
      self[addr] = value
    self.store(addr, value)

  def _unseen_stores(self):
    if (now := time.monotonic()) - self._checked < UNSEEN_CHECK_S: return
    self._checked = now
    if (changed := np.nonzero(self.bar != self.shadow)[0]).size:
      addr, got = int(changed[0]), int(self.bar[changed[0]])
      self.bar[changed] = self.shadow[changed]
      raise PCIDeviceError(f"{self.name}: register {self.name_of(addr)} (MMIO offset {addr * 4:#x}) changed to {got:#x} by a store the bench did "
                           "not see (native code or a raw mmap; registers take aligned 32-bit stores through tinygrad's to_mv views); undone")

  def name_of(self, addr:int) -> str:
    """The name of the register at dword `addr` (or the address)."""
    if not hasattr(self, "_names"): self._names = {r.addr[0]: n for n, r in self.defs.items()}
    return self._names.get(addr, f"{addr:#x}")

  def store(self, addr:int, value:int):
    """A host write reached register `addr` (directly or through the index/data pair): run its handler."""
    if (fn:=self.handlers.get(addr)) is not None: fn(value & 0xffffffff)

# registers only the device writes (status the blocks report); a host store to one is dropped by the hardware
READ_ONLY = ("regCP_STAT", "regRLC_RLCS_BOOTLOAD_STATUS", "regGCVM_L2_PROTECTION_FAULT_STATUS", "regGCVM_L2_PROTECTION_FAULT_STATUS_LO32",
             "regGCVM_L2_PROTECTION_FAULT_ADDR_LO32", "regGCVM_L2_PROTECTION_FAULT_ADDR_HI32", "regGCVM_INVALIDATE_ENG17_ACK",
             "regMMVM_INVALIDATE_ENG17_ACK")
UNSEEN_CHECK_S = 0.001   # how often host stores look for BAR changes the bench did not see (a 1 MB compare costs ~40 us)

def struct_name(fmt:str) -> str: return {"B": "8-bit", "b": "8-bit", "H": "16-bit", "h": "16-bit", "Q": "64-bit", "q": "64-bit"}.get(fmt, fmt)
