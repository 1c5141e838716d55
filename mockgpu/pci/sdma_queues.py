"""SDMA ring registers: a queue starts when the driver sets RB_CNTL.rb_enable and stops when it clears it (or soft-resets SDMA).

Read from the queue's registers at enable: ring base (RB_BASE/RB_BASE_HI, 256-byte units), size (4 << rb_size bytes), the
read-pointer write-back and write-pointer poll addresses, and the doorbell (DOORBELL_OFFSET in dwords, DOORBELL.enable). The
queue is the SDMA engine the KFD path uses (mockgpu.amd.sdma). Only VMID 0 is emulated.
"""
from __future__ import annotations
from typing import TYPE_CHECKING
from mockgpu.amd.sdma import SDMAEngine, count_mask
from mockgpu.pci.boards import SDMA0
from mockgpu.pci.registers import PCIDeviceError
if TYPE_CHECKING: from mockgpu.pci.device import PCIGPU

class SDMAQueues:
  """The SDMA queues of both engines (register prefixes SDMA<e>_QUEUE<q>_ that exist in the board's GC module)."""
  def __init__(self, gpu:PCIGPU):
    self.gpu, self.regs = gpu, gpu.regs
    self.queues: dict[str, SDMAEngine] = {}
    for e in range(2):
      for q in range(8):
        if f"regSDMA{e}_QUEUE{q}_RB_CNTL" in self.regs.defs:
          self.regs.on_write(f"regSDMA{e}_QUEUE{q}_RB_CNTL", lambda v, p=f"regSDMA{e}_QUEUE{q}": self._rb_cntl(p, v))

  def _rb_cntl(self, prefix:str, value:int):
    f = self.regs.reg(f"{prefix}_RB_CNTL").decode(value)
    self._stop(prefix)
    if not f["rb_enable"]: return
    if f["rb_vmid"]: raise PCIDeviceError(f"{self.gpu.name}: {prefix[3:]}_RB_CNTL.rb_vmid={f['rb_vmid']}: only VMID 0 is emulated")
    get = lambda n: self.regs.get(f"{prefix}_{n}")
    if not self.regs.reg(f"{prefix}_DOORBELL").decode(get("DOORBELL"))["enable"]:
      raise PCIDeviceError(f"{self.gpu.name}: {prefix[3:]}_RB_CNTL.rb_enable=1 with {prefix[3:]}_DOORBELL.enable clear")
    ring, size = ((get("RB_BASE_HI") << 32) | get("RB_BASE")) << 8, 4 << f["rb_size"]
    rptr, wptr = (get("RB_RPTR_ADDR_HI") << 32) | get("RB_RPTR_ADDR_LO"), (get("RB_WPTR_POLL_ADDR_HI") << 32) | get("RB_WPTR_POLL_ADDR_LO")
    engine = SDMAEngine(self.gpu, ring, size, rptr, wptr, count_mask=count_mask(self.gpu.pci_board.ip_versions[SDMA0]))
    engine.name = f"SDMA ({prefix[3:]})"
    offset = self.regs.reg(f"{prefix}_DOORBELL_OFFSET").decode(get("DOORBELL_OFFSET"))["offset"]
    cntl = prefix.split("_QUEUE")[0] + "_CNTL"   # regSDMA<e>_CNTL: its TRAP_ENABLE gates the engine's trap interrupts
    self.gpu.add_queue(engine, offset * 4, what=f"{prefix[3:]} (RB_BASE {ring:#x})",
                       interrupts_enabled=lambda: bool(self.regs.fields(cntl)["trap_enable"]))
    self.queues[prefix] = engine

  def _stop(self, prefix:str):
    if (engine:=self.queues.pop(prefix, None)) is not None: self.gpu.remove_queue(engine)

  def reset(self):
    """GRBM_SOFT_RESET.soft_reset_sdma0: every queue stops."""
    for prefix in list(self.queues): self._stop(prefix)
