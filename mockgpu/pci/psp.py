"""The platform security processor (MP0): the bootloader mailbox, the sOS ring, and the firmware it loads.

Mailbox C2PMSG registers, as tinygrad's AM driver uses them:
  35  bootloader command (bit 31 reads 1 while the bootloader is ready); 36 the message buffer's MC address >> 20
  81  nonzero once the sOS runs
  64  ring control (create: ring type << 16, destroy: GFX_CTRL_CMD_ID_DESTROY_RINGS); bit 31 reads 1 when the sOS is ready,
      bits 0-15 the status of the last control command
  69/70/71  ring MC address lo/hi and size; 67 the ring's write pointer in dwords (a store submits the new frames)
Each frame (struct psp_gfx_rb_frame) names a command buffer and a fence; the sOS executes the command, writes its response
into the buffer and the frame's fence value to the fence address. Commands: LOAD_TOC (answers the TMR size), SETUP_TMR,
LOAD_IP_FW (the bytes must be exactly the segment of that firmware type in the board's synthetic images), AUTOLOAD_RLC (needs
the RLC and CP images loaded; completes the RLC bootload the GFX block waits for). A command the sOS does not know answers a
nonzero status. A bootloader component or IP image whose bytes do not match the images is refused with `PCIDeviceError`.
"""
from __future__ import annotations
import ctypes, sys
from typing import TYPE_CHECKING
from mockgpu.pci.registers import PCIDeviceError
if TYPE_CHECKING: from mockgpu.pci.device import PCIGPU

READY = 0x80000000
TMR_SIZE = 0x1000000      # what LOAD_TOC answers (bytes); the driver allocates at most 0x1300000
STATUS_UNKNOWN_COMMAND, STATUS_BAD_FIRMWARE = 0xffff0001, 0xffff0002

class PSP:
  """See the module docstring."""
  def __init__(self, gpu:PCIGPU):
    from tinygrad.runtime.autogen.am import am
    from mockgpu.pci.boards import MP0
    self.gpu, self.am, self.regs = gpu, am, gpu.regs
    self.pref = "regMP0_SMN_C2PMSG" if gpu.pci_board.ip_versions[MP0] < (14, 0, 0) else "regMPASP_SMN_C2PMSG"
    self.loaded_components: list[int] = []   # PSP_BL__* commands the bootloader executed, in order
    self.loaded_ip: list[int] = []           # GFX_FW_TYPE_* of every LOAD_IP_FW that succeeded
    self.rptr = 0
    self._set(35, READY)
    for n, fn in ((35, self._bootloader), (64, self._ring_control), (67, self._submit)): self.regs.on_write(f"{self.pref}_{n}", fn)

  def _get(self, n:int) -> int: return self.regs.get(f"{self.pref}_{n}")
  def _set(self, n:int, v:int): self.regs.set(f"{self.pref}_{n}", v)
  def _err(self, what:str) -> PCIDeviceError: return PCIDeviceError(f"{self.gpu.name}: PSP {what}")
  @property
  def sos_alive(self) -> bool: return self._get(81) != 0

  # ---- bootloader ----
  def _bootloader(self, cmd:int):
    if self.sos_alive: raise self._err(f"C2PMSG_35 = {cmd:#x}: the bootloader is gone once the sOS runs")
    names = {v: k for k, v in vars(self.am).items() if k.startswith("PSP_BL__") and isinstance(v, int)}
    if cmd not in names: raise self._err(f"C2PMSG_35 = {cmd:#x}: not a bootloader command")
    msg, fw = self._get(36) << 20, self.gpu.firmware.sos_components
    want = fw[self.am.PSP_FW_TYPE_PSP_SOS] if cmd == self.am.PSP_BL__LOAD_SOSDRV else None
    data = self.gpu.mc_bytes(msg, max(len(v) for v in fw.values()), "PSP bootloader message (C2PMSG_36)")
    if not any(data[:len(v)] == v for v in ([want] if want is not None else fw.values())):
      raise self._err(f"bootloader {names[cmd]}: the message buffer at MC {msg:#x} holds no component of the sOS image"
                      f"{' (LOAD_SOSDRV takes the sOS itself)' if want is not None else ''}")
    self.loaded_components.append(cmd)
    if cmd == self.am.PSP_BL__LOAD_SOSDRV:
      if self.am.PSP_BL__LOAD_SYSDRV not in self.loaded_components: raise self._err("bootloader LOAD_SOSDRV before LOAD_SYSDRV")
      self._set(81, 1)
      self._set(64, READY)
    self._set(35, READY)

  # ---- ring ----
  def _ring_control(self, value:int):
    if not self.sos_alive: raise self._err(f"C2PMSG_64 = {value:#x} before the sOS runs (C2PMSG_81 is 0)")
    if value == self.am.GFX_CTRL_CMD_ID_DESTROY_RINGS: self._set(71, 0)
    elif value >> 16 == self.am.PSP_RING_TYPE__KM:
      self.ring = self.gpu.mc_to_vram(self._get(69) | (self._get(70) << 32), self._get(71), "PSP ring (C2PMSG_69/70)")
      self.size, self.rptr = self._get(71), 0
    else: raise self._err(f"C2PMSG_64 = {value:#x}: neither a ring create nor GFX_CTRL_CMD_ID_DESTROY_RINGS")
    self._set(64, READY)

  def _submit(self, wptr:int):
    frame_t, cmd_t = self.am.struct_psp_gfx_rb_frame, self.am.struct_psp_gfx_cmd_resp
    if self._get(71) == 0: raise self._err(f"C2PMSG_67 = {wptr:#x}: no ring was created")
    while self.rptr != wptr:
      frame = frame_t.from_buffer_copy(self.gpu.vram_bytes(self.ring + (self.rptr * 4) % self.size, ctypes.sizeof(frame_t)))
      self.rptr += ctypes.sizeof(frame_t) // 4
      buf = self.gpu.mc_to_vram(frame.cmd_buf_addr_lo | (frame.cmd_buf_addr_hi << 32), ctypes.sizeof(cmd_t), "PSP command buffer")
      cmd = cmd_t.from_buffer_copy(self.gpu.vram_bytes(buf, ctypes.sizeof(cmd_t)))
      cmd.resp.status = self._execute(cmd)
      self.gpu.vram_write(buf, bytes(cmd))
      fence = self.gpu.mc_to_vram(frame.fence_addr_lo | (frame.fence_addr_hi << 32), 4, "PSP fence")
      self.gpu.vram_write(fence, frame.fence_value.to_bytes(4, "little"))

  def _execute(self, cmd) -> int:
    am = self.am
    if cmd.cmd_id == am.GFX_CMD_ID_LOAD_TOC:
      c = cmd.cmd.cmd_load_toc
      if not self._matches(c.toc_phy_addr_lo | (c.toc_phy_addr_hi << 32), c.toc_size, self.gpu.firmware.sos_components.get(am.PSP_FW_TYPE_PSP_TOC)):
        return self._refuse("LOAD_TOC: the buffer does not hold the sOS image's TOC")
      cmd.resp.tmr_size = TMR_SIZE
    elif cmd.cmd_id == am.GFX_CMD_ID_SETUP_TMR: pass   # the TMR holds firmware the emulated blocks never run
    elif cmd.cmd_id == am.GFX_CMD_ID_LOAD_IP_FW:
      c = cmd.cmd.cmd_load_ip_fw
      name = am.enum_psp_gfx_fw_type.get(c.fw_type, str(c.fw_type))
      if not self._matches(c.fw_phy_addr_lo | (c.fw_phy_addr_hi << 32), c.fw_size, self.gpu.firmware.ip_segments.get(c.fw_type)):
        return self._refuse(f"LOAD_IP_FW {name} ({c.fw_size:#x} bytes): not the {name} segment of the board's firmware images")
      self.loaded_ip.append(c.fw_type)
    elif cmd.cmd_id == am.GFX_CMD_ID_AUTOLOAD_RLC:
      missing = [am.enum_psp_gfx_fw_type[t] for t in self.gpu.firmware.ip_segments if t not in self.loaded_ip]
      if missing: return self._refuse(f"AUTOLOAD_RLC before these images were loaded: {', '.join(missing)}")
      self.gpu.gfx.rlc_autoload_done()
    else: return self._refuse(f"command {cmd.cmd_id:#x} is not emulated", STATUS_UNKNOWN_COMMAND)
    return 0

  def _matches(self, mc:int, size:int, want:bytes|None) -> bool:
    if want is None or size != len(want): return False
    return self.gpu.mc_bytes(mc, size, "PSP firmware buffer") == want

  def _refuse(self, why:str, status:int=STATUS_BAD_FIRMWARE) -> int:
    print(f"mockgpu: {self.gpu.name}: PSP refused {why} (status {status:#x})", file=sys.stderr)
    return status
