"""The GFX block's command processor side: RLC status, MEC control, and compute queues programmed through HQD registers.

The HQD registers (CP_MQD_BASE_ADDR .. CP_HQD_PQ_WPTR_HI) are banked: GRBM_GFX_CNTL selects which (ME, pipe, queue) the window
shows, and each queue keeps its own values. A store of 1 to CP_HQD_ACTIVE starts that queue: the ring, read-pointer report
and write-pointer poll addresses, size and doorbell are read from its registers and become a PM4 engine (mockgpu.amd.pm4, the
engine the KFD path uses) on the GPU's doorbell. CP_HQD_DEQUEUE_REQUEST, a store of 0 to CP_HQD_ACTIVE, or a CP soft reset
stops it. A queue cannot start before the PSP's RLC autoload gave the CP its firmware, while the MEC is halted, with the
MEC's program counter elsewhere than the firmware's start, as an AQL queue or for another VMID than 0: each is a
`PCIDeviceError` naming the register.
"""
from __future__ import annotations
import sys
from typing import TYPE_CHECKING
from mockgpu.amd.pm4 import PM4Engine
from mockgpu.pci.firmware import RS64_UCODE_START
from mockgpu.pci.registers import PCIDeviceError
if TYPE_CHECKING: from mockgpu.pci.device import PCIGPU

class CommandProcessor:
  """See the module docstring."""
  def __init__(self, gpu:PCIGPU):
    self.gpu, self.regs = gpu, gpu.regs
    self.window = range(self.regs.addr("regCP_MQD_BASE_ADDR"), self.regs.addr("regCP_HQD_PQ_WPTR_HI") + 1)
    self.banks: dict[tuple[int, int, int], list[int]] = {}
    self.selected = (0, 0, 0)
    self.queues: dict[tuple[int, int, int], PM4Engine] = {}
    self.autoloaded = False
    self.regs.set("regCP_STAT", 0)
    self.regs.set("regCP_MEC_RS64_CNTL", mec_halt=1)
    for name, fn in (("regGRBM_GFX_CNTL", self._select), ("regCP_HQD_ACTIVE", self._active), ("regCP_HQD_DEQUEUE_REQUEST", self._dequeue),
                     ("regRLC_SAFE_MODE", self._safe_mode), ("regGRBM_SOFT_RESET", self._soft_reset)):
      self.regs.on_write(name, fn)

  def _err(self, what:str) -> PCIDeviceError: return PCIDeviceError(f"{self.gpu.name}: GC {what}")

  def rlc_autoload_done(self):
    """The PSP finished AUTOLOAD_RLC: the RLC reports its bootload complete."""
    self.autoloaded = True
    self.regs.set("regRLC_RLCS_BOOTLOAD_STATUS", bootload_complete=1)

  def _safe_mode(self, value:int):
    # the RLC acknowledges a safe-mode enter/exit request by clearing the cmd bit
    self.regs.set("regRLC_SAFE_MODE", value & ~1)

  def _select(self, value:int):
    f = self.regs.reg("regGRBM_GFX_CNTL").decode(value)
    new = (f["meid"], f["pipeid"], f["queueid"])
    if new == self.selected: return
    self.banks[self.selected] = [self.regs[a] for a in self.window]
    for a, v in zip(self.window, self.banks.get(new, [0] * len(self.window))): self.regs[a] = v
    self.selected = new

  def _hqd(self, name:str) -> int: return self.regs.get(f"regCP_HQD_{name}")

  def _active(self, value:int):
    if not value & 1: return self._stop(self.selected)
    me, pipe, queue = self.selected
    if me != 1: raise self._err(f"CP_HQD_ACTIVE=1 with GRBM_GFX_CNTL selecting ME {me}: compute queues live on ME 1 (the MEC)")
    if not self.autoloaded: raise self._err("CP_HQD_ACTIVE=1 before the PSP's AUTOLOAD_RLC: the MEC has no firmware")
    if self.regs.fields("regCP_MEC_RS64_CNTL")["mec_halt"]: raise self._err("CP_HQD_ACTIVE=1 while CP_MEC_RS64_CNTL.mec_halt is set")
    pc = (self.regs.get("regCP_MEC_RS64_PRGRM_CNTR_START") | (self.regs.get("regCP_MEC_RS64_PRGRM_CNTR_START_HI") << 32)) << 2
    if pc != RS64_UCODE_START:
      raise self._err(f"CP_HQD_ACTIVE=1 with CP_MEC_RS64_PRGRM_CNTR_START at {pc:#x}: the MEC firmware starts at {RS64_UCODE_START:#x}")
    if self._hqd("AQL_CONTROL") & 1: raise self._err("CP_HQD_AQL_CONTROL=1: AQL queues are not emulated (tinygrad uses them on multi-XCC parts)")
    if self._hqd("VMID") & 0xf: raise self._err(f"CP_HQD_VMID={self._hqd('VMID') & 0xf}: only VMID 0 is emulated")
    db = self.regs.reg("regCP_HQD_PQ_DOORBELL_CONTROL").decode(self._hqd("PQ_DOORBELL_CONTROL"))
    if not db["doorbell_en"]: raise self._err("CP_HQD_ACTIVE=1 with CP_HQD_PQ_DOORBELL_CONTROL.doorbell_en clear: the queue could never be rung")
    ring = ((self._hqd("PQ_BASE_HI") << 32) | self._hqd("PQ_BASE")) << 8
    size = 4 << (self.regs.reg("regCP_HQD_PQ_CONTROL").decode(self._hqd("PQ_CONTROL"))["queue_size"] + 1)
    rptr = (self._hqd("PQ_RPTR_REPORT_ADDR_HI") << 32) | self._hqd("PQ_RPTR_REPORT_ADDR")
    wptr = (self._hqd("PQ_WPTR_POLL_ADDR_HI") << 32) | self._hqd("PQ_WPTR_POLL_ADDR")
    self._stop(self.selected)
    engine = PM4Engine(self.gpu, ring, size, rptr, wptr, regs=self.gpu.compute_regs, dispatch=self.gpu.dispatch, sqtt=self.gpu.thread_trace,
                       pmc=self.gpu.perf_counters)
    engine.name = f"PM4 (MEC pipe {pipe} queue {queue})"
    if f"regCP_ME1_PIPE{pipe}_INT_CNTL" not in self.regs.defs: raise self._err(f"CP_HQD_ACTIVE=1 on MEC pipe {pipe}: the MEC has no such pipe")
    self.gpu.add_queue(engine, db["doorbell_offset"] * 4, what=f"compute queue {pipe}.{queue} (CP_HQD_PQ_BASE {ring:#x})",
                       interrupts_enabled=lambda: bool(self.regs.fields(f"regCP_ME1_PIPE{pipe}_INT_CNTL")["time_stamp_int_enable"]))
    self.queues[self.selected] = engine

  def _dequeue(self, value:int):
    if value & 0xf: self._stop(self.selected)

  def _stop(self, key:tuple[int, int, int]):
    if (engine:=self.queues.pop(key, None)) is not None:
      if engine.pending():   # the driver gave up on work the queue still had (tinygrad's hang recovery): say what it was doing
        state = f"stalled waiting for {engine.stall_reason}" if engine.stalled else "busy"
        print(f"mockgpu: {self.gpu.name}: {engine.name} dequeued with work left, {state} in {engine.packet}", file=sys.stderr)
      self.gpu.remove_queue(engine)
    if key == self.selected: self.regs.set("regCP_HQD_ACTIVE", 0)
    elif key in self.banks: self.banks[key][self.regs.addr("regCP_HQD_ACTIVE") - self.window.start] = 0

  def _soft_reset(self, value:int):
    f = self.regs.reg("regGRBM_SOFT_RESET").decode(value)
    if f["soft_reset_cp"] or f["soft_reset_cpc"]:
      for key in list(self.queues): self._stop(key)
    if f["soft_reset_sdma0"]: self.gpu.sdma.reset()
