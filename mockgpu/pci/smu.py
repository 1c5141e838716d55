"""The system management unit (MP1): its message mailboxes and the answers a booted SMU gives.

C2PMSG_66 takes a message, 82 its argument (and the reply), 90 the response (1 = OK); the debug mailbox is 75/53/54. Messages
are tinygrad's SMU message tables for the board's MP1 version. Answers: the firmware version, DPM levels per clock
(GetDpmFreqByIndex with index 0xff answers the level count), and acknowledgements of everything that only changes settings.
A message this SMU does not model raises `PCIDeviceError` (a real SMU would answer "unknown command" and the driver would wait
out its 10 s timeout).
"""
from __future__ import annotations
from typing import TYPE_CHECKING
from mockgpu.pci.registers import PCIDeviceError
if TYPE_CHECKING: from mockgpu.pci.device import PCIGPU

SMU_VERSION = 0x004e_2a00
MODE1_RESET = 2   # the debug mailbox's mode-1 reset message

class SMU:
  """See the module docstring."""
  def __init__(self, gpu:PCIGPU):
    from tinygrad.runtime.support.amd import import_module
    from mockgpu.pci.boards import MP1
    self.gpu, self.regs = gpu, gpu.regs
    self.mod = import_module("smu", gpu.pci_board.ip_versions[MP1])
    self.names = {v: k for k, v in vars(self.mod).items() if k.startswith("PPSMC_MSG_") and isinstance(v, int)}
    self.dpm = dict(gpu.pci_board.dpm_mhz)
    self.soft_limits: dict[int, tuple[int, int]] = {}
    self.features_enabled = False
    self.regs.on_write("mmMP1_SMN_C2PMSG_66", lambda msg: self._message(msg, 82, 90))
    self.regs.on_write("mmMP1_SMN_C2PMSG_75", lambda msg: self._message(msg, 53, 54, debug=True))

  def _message(self, msg:int, arg_reg:int, resp_reg:int, debug:bool=False):
    arg = self.regs.get(f"mmMP1_SMN_C2PMSG_{arg_reg}")
    reply = self._debug(msg) if debug else self._answer(msg, arg)
    if reply is not None: self.regs.set(f"mmMP1_SMN_C2PMSG_{arg_reg}", reply)
    self.regs.set(f"mmMP1_SMN_C2PMSG_{resp_reg}", 1)

  def _debug(self, msg:int) -> None:
    if msg != MODE1_RESET: raise PCIDeviceError(f"{self.gpu.name}: SMU debug message {msg:#x} is not emulated (only mode-1 reset, {MODE1_RESET})")
    self.gpu.mode1_reset()

  def _answer(self, msg:int, arg:int) -> int | None:
    m, name = self.mod, self.names.get(msg, f"{msg:#x}")
    if msg == m.PPSMC_MSG_GetSmuVersion: return SMU_VERSION
    if msg in (m.PPSMC_MSG_SetDriverDramAddrHigh, m.PPSMC_MSG_SetDriverDramAddrLow): pass   # no table transfer is emulated
    elif msg == m.PPSMC_MSG_EnableAllSmuFeatures: self.features_enabled = True
    elif msg == m.PPSMC_MSG_GetDpmFreqByIndex:
      clk, idx = arg >> 16, arg & 0xffff
      levels = self.dpm.get(clk, ())
      if idx == 0xff: return len(levels)
      if idx >= len(levels): raise PCIDeviceError(f"{self.gpu.name}: SMU GetDpmFreqByIndex clock {clk} level {idx}: it has {len(levels)} levels")
      return levels[idx]
    elif msg in (m.PPSMC_MSG_SetSoftMinByFreq, m.PPSMC_MSG_SetSoftMaxByFreq):
      lo, hi = self.soft_limits.get(arg >> 16, (0, 0xffff))
      self.soft_limits[arg >> 16] = (arg & 0xffff, hi) if msg == m.PPSMC_MSG_SetSoftMinByFreq else (lo, arg & 0xffff)
    elif msg == getattr(m, "PPSMC_MSG_SetPptLimit", None): pass
    else: raise PCIDeviceError(f"{self.gpu.name}: SMU message {name} (argument {arg:#x}) is not emulated")
    return None
