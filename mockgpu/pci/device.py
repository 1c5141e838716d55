"""One emulated AMD GPU behind the AM driver's PCI interface: VRAM, BARs, the register file and the blocks that answer it.

VRAM is a sparse memfd the size of the board's memory: BAR0 maps it for the host, the page tables and the IP-discovery table
live in it, and the GC hub's translation turns GPU VAs into views of it. The MemoryMap the engines and the shader emulator
use is rebuilt from the GC hub's page-table walk at every GC invalidation (under the scheduler's lock, so between packets):
VRAM runs become views of the memfd, system runs become the host pages their bus addresses resolve to (mockgpu.pci.bus).
The MC address space (PSP, IH, SMU buffers) is VRAM at the frame-buffer base (MMMC_VM_FB_LOCATION_BASE).

Faults reach the driver through the IH ring: a GPU memory fault latches the GC hub's fault status and address and posts a
UTCL2 fault (client GFX); an illegal shader instruction posts an SQ error interrupt; a bad packet, a hang (watchdog or a
queue reset) or an emulator error posts CP_BAD_OPCODE_ERROR or CP_GENERIC_INT from the command processor. tinygrad reads the
ring when it waits, prints the entry and raises "Device is in error state"; the mock's own stderr line says what happened.
"""
from __future__ import annotations
import ctypes, mmap, os
from typing import Callable
import numpy as np
from emu.amd.api import GPUIllegalInstruction, GPUMemoryFault
from mockgpu.engine import SCHEDULER, Engine, PacketError
from mockgpu.amd.gpu import EmulatedGPU
from mockgpu.hostmem import MAP_NORESERVE, host_mmap, is_mapped
from mockgpu.pci import bus as busmod, discovery
from mockgpu.pci.boards import PCIBoard
from mockgpu.pci.cp import CommandProcessor
from mockgpu.pci.firmware import firmware
from mockgpu.pci.gmc import Hub
from mockgpu.pci.ih import InterruptRing
from mockgpu.pci.psp import PSP
from mockgpu.pci.registers import PCIDeviceError, RegisterFile
from mockgpu.pci.sdma_queues import SDMAQueues
from mockgpu.pci.smu import SMU

FB_BASE = 0x80_0000_0000        # the frame buffer's MC address (FB_LOCATION_BASE << 24); amdgpu parts place it here
RCC_CONFIG_MEMSIZE = 0xde3      # fixed dword address: VRAM size in MB, readable before the discovery table is known
SQ_ERROR_ILLEGAL_INST = 1       # SQ interrupt error types: EDC_FUE, ILLEGAL_INST, MEMVIOL, EDC_FED

class PCIGPU(EmulatedGPU):
  """GPU `index` of the PCI bus; `name` is its bus address (e.g. '0000:c1:00.0')."""
  def __init__(self, index:int, name:str, board:PCIBoard, vram_bytes:int, bus:busmod.PhysicalBus):
    super().__init__(board.arch, board.kfd, board.doorbell_bar)
    self.index, self.name, self.pci_board = index, name, board
    self.vram_size = vram_bytes
    self.vram_fd = os.memfd_create(f"mockpci-vram{index}", 0)
    os.ftruncate(self.vram_fd, vram_bytes)
    self.vram_addr = host_mmap(0, vram_bytes, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED | MAP_NORESERVE, self.vram_fd, 0)
    self.vram = np.ctypeslib.as_array((ctypes.c_uint8 * vram_bytes).from_address(self.vram_addr))
    self.bar0_bus = busmod.BAR_BASE + index * busmod.BAR_STRIDE
    self.bus = bus
    bus.add_bar(self.bar0_bus, vram_bytes, lambda off, size: self.vram_addr + off)
    self.firmware = firmware(board)
    self.regs = RegisterFile(f"mockpci {name}", board)
    self.interrupt_enables: dict[Engine, Callable[[], bool]] = {}
    self._reset()
    self.doorbell_page()

  def _reset(self):
    """Power-on state: the discovery table in VRAM, the FB aperture, and every block's reset values and handlers."""
    table = discovery.build(self.pci_board)
    off = self.vram_size - discovery.TABLE_OFFSET_FROM_END
    self.vram[off:off + len(table)] = np.frombuffer(table, np.uint8)
    self.regs[RCC_CONFIG_MEMSIZE] = self.vram_size >> 20
    self.regs.set("regMMMC_VM_FB_LOCATION_BASE", FB_BASE >> 24)
    self.regs.set("regMMMC_VM_FB_LOCATION_TOP", (FB_BASE + self.vram_size - 1) >> 24)
    self.regs.set("regBIF_BX0_REMAP_HDP_MEM_FLUSH_CNTL", (self.pci_board.mmio_bar - 0x1000))   # the HDP flush register's remapped offset
    gfx12 = self.gc_version >= (12, 0, 0)
    self.vram_q = self.vram[: self.vram_size // 8 * 8].view(np.uint64)
    self.hubs = {p: Hub(self.regs, p, gfx12, self.vram_q, self._translation_changed) for p in ("GC", "MM")}
    self.psp, self.smu = PSP(self), SMU(self)
    self.gfx, self.sdma, self.ih = CommandProcessor(self), SDMAQueues(self), InterruptRing(self)
    status = "regGCVM_L2_PROTECTION_FAULT_CNTL"
    self.regs.on_write(status, lambda v: self.regs.reg(status).decode(v)["clear_protection_fault_status_addr"] and self._clear_fault_status())

  def mode1_reset(self):
    """The SMU's mode-1 reset: every queue stops and the blocks return to their power-on state (VRAM keeps its contents)."""
    for engine in list(self.doorbells.values()): self.remove_queue(engine)
    self.regs.handlers.clear()
    self.regs.bar[:] = self.regs.shadow[:] = 0
    self.regs.far.clear()
    self._reset()

  # ---- memory ----
  def mc_to_vram(self, mc:int, size:int, what:str) -> int:
    """The VRAM offset of MC address `mc` (a buffer of `size` bytes that `what` names); PCIDeviceError outside the frame buffer."""
    if not (FB_BASE <= mc and mc + size <= FB_BASE + self.vram_size):
      raise PCIDeviceError(f"{self.name}: {what} at MC address {mc:#x} is outside the frame buffer [{FB_BASE:#x}, {FB_BASE + self.vram_size:#x})")
    return mc - FB_BASE

  def mc_bytes(self, mc:int, size:int, what:str) -> bytes:
    """`size` bytes at MC address `mc` as a block behind the MM hub (the PSP) reads them: the frame buffer, else a page the MM
    hub maps (system memory: a USB GPU's bridge SRAM; a translation not cached is walked, as a TLB miss does); PCIDeviceError
    when neither holds the whole buffer `what` names."""
    if FB_BASE <= mc and mc + size <= FB_BASE + self.vram_size: return self.vram_bytes(mc - FB_BASE, size)
    hub = self.hubs["MM"]
    for runs in (lambda: hub.runs, hub.walk):   # what the hub cached at its last invalidation, else what a miss walks to
      for r in runs():
        if not (r.va <= mc and mc + size <= r.va + r.size): continue
        if not r.system: return self.vram_bytes(r.phys + mc - r.va, size)
        if len(parts := self.bus.resolve(r.phys + mc - r.va, size)) == 1 and parts[0][2] == size: return ctypes.string_at(parts[0][1], size)
    raise PCIDeviceError(f"{self.name}: {what} at MC address {mc:#x} ({size:#x} bytes) is neither in the frame buffer nor mapped by the MM hub")

  def vram_bytes(self, off:int, size:int) -> bytes: return self.vram[off:off + size].tobytes()
  def vram_write(self, off:int, data:bytes): self.vram[off:off + len(data)] = np.frombuffer(data, np.uint8)

  def _translation_changed(self, hub:Hub):
    if hub.prefix != "GC": return
    with SCHEDULER.lock:
      self.memory.clear()
      for r in hub.runs:
        name = f"{'bus' if r.system else 'VRAM'} {r.phys:#x}"
        if not r.system:
          if r.phys + r.size > self.vram_size: continue   # beyond VRAM: accesses fault
          self.memory.map(r.va, r.size, name, r.writable, backing=self.vram[r.phys:r.phys + r.size])
          continue
        for off, host, size in self.bus.resolve(r.phys, r.size):
          self.memory.map(r.va + off, size, name, r.writable, backing=np.ctypeslib.as_array((ctypes.c_uint8 * size).from_address(host)),
                          present=lambda h=host, s=size: is_mapped(h, s))

  # ---- queues ----
  def add_queue(self, engine:Engine, doorbell_offset:int, what:str, interrupts_enabled:Callable[[], bool]):
    """Start `engine`, rung by the 64-bit doorbell at byte `doorbell_offset` of BAR2; `interrupts_enabled()` says whether the
    interrupts it raises reach the IH ring now (the block's interrupt-enable register)."""
    if doorbell_offset % 8 or doorbell_offset >= self.doorbell_bytes:
      raise PCIDeviceError(f"{self.name}: {what}: doorbell offset {doorbell_offset:#x} is not a doorbell of the {self.doorbell_bytes:#x}-byte BAR")
    if (other:=self.doorbells.get(doorbell_offset // 8)) is not None:
      raise PCIDeviceError(f"{self.name}: {what}: doorbell {doorbell_offset:#x} already rings {other.name}")
    if not self.config.bus_master: raise PCIDeviceError(f"{self.name}: {what} started with PCI_COMMAND bus mastering off")
    self.interrupt_enables[engine] = interrupts_enabled
    self.bind_queue(doorbell_offset // 8, engine)
    with SCHEDULER.lock:   # the queue's first store goes through the GC hub: a broken translation is the queue's fault, not the host's
      try: engine.write64(engine.rptr_addr, 0)
      except GPUMemoryFault as e: engine.fail(e)

  def remove_queue(self, engine:Engine):
    super().remove_queue(engine)
    self.interrupt_enables.pop(engine, None)

  # ---- GPUContext ----
  def interrupt(self, engine:Engine, source:str, ctxid:int):
    """An end-of-pipe or SDMA trap interrupt reaches the IH ring only where the driver enabled it for that engine
    (`interrupt_enables`), as on the hardware."""
    from tinygrad.runtime.autogen.am import am
    if (enabled := self.interrupt_enables.get(engine)) is None or not enabled(): return
    gfx = {"CP": self._gfx_src("CP_EOP_INTERRUPT"), "SDMA": self._gfx_src("SDMA_TRAP")}[source]
    self.ih.post(am.SOC21_IH_CLIENTID_GRBM_CP if source == "CP" else am.SOC21_IH_CLIENTID_GFX, gfx, (ctxid, 0, 0, 0))

  def _gfx_src(self, name:str) -> int:
    from tinygrad.runtime.autogen.am import am
    return getattr(am, f"GFX_{self.gc_version[0]}_0_0__SRCID__{name}")

  def on_fault(self, engine:Engine, err:Exception):
    from tinygrad.runtime.autogen.am import am
    if isinstance(err, GPUMemoryFault):
      self.hubs["GC"].record_fault(err.addr, err.write, self.memory.find(err.addr) is not None)
      self.ih.post(am.SOC21_IH_CLIENTID_GFX, self._gfx_src("UTCL2_FAULT"))
    elif isinstance(err, GPUIllegalInstruction):
      self.ih.post(am.SOC21_IH_CLIENTID_GRBM_CP, self._gfx_src("SQ_INTERRUPT_ID"), (SQ_ERROR_ILLEGAL_INST << 21, 2 << 6, 0, 0))
    else:
      self.ih.post(am.SOC21_IH_CLIENTID_GRBM_CP, self._gfx_src("CP_BAD_OPCODE_ERROR" if isinstance(err, PacketError) else "CP_GENERIC_INT"))

  def _clear_fault_status(self):
    for name in ("regGCVM_L2_PROTECTION_FAULT_STATUS", "regGCVM_L2_PROTECTION_FAULT_STATUS_LO32"):
      if name in self.regs.defs: self.regs.set(name, 0)
