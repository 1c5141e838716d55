"""Each block's handshake, and each way of breaking it: a clear PCIDeviceError at the offending store, never a hang."""
import ctypes
import pytest
from pci_util import make_gpu, mc, mmio, rreg, wreg
from mockgpu.pci.registers import PCIDeviceError

def _bl(gpu, cmd:int, data:bytes, at:int=0x100000):
  gpu.vram_write(at, data)
  wreg(gpu, f"{gpu.psp.pref}_36", mc(at) >> 20)
  wreg(gpu, f"{gpu.psp.pref}_35", cmd)

def test_the_psp_bootloader_starts_the_sos_only_from_the_images_components():
  from tinygrad.runtime.autogen.am import am
  gpu, comp = make_gpu(), None
  comp = gpu.firmware.sos_components
  assert rreg(gpu, f"{gpu.psp.pref}_35") & 0x80000000 and rreg(gpu, f"{gpu.psp.pref}_81") == 0   # ready, no sOS yet
  with pytest.raises(PCIDeviceError, match="LOAD_SYSDRV: the message buffer .* holds no component"):
    _bl(gpu, am.PSP_BL__LOAD_SYSDRV, b"not firmware" * 100)
  with pytest.raises(PCIDeviceError, match="LOAD_SOSDRV before LOAD_SYSDRV"): _bl(gpu, am.PSP_BL__LOAD_SOSDRV, comp[am.PSP_FW_TYPE_PSP_SOS])
  _bl(gpu, am.PSP_BL__LOAD_SYSDRV, comp[am.PSP_FW_TYPE_PSP_SYS_DRV])
  assert rreg(gpu, f"{gpu.psp.pref}_81") == 0
  _bl(gpu, am.PSP_BL__LOAD_SOSDRV, comp[am.PSP_FW_TYPE_PSP_SOS])
  assert rreg(gpu, f"{gpu.psp.pref}_81") != 0 and rreg(gpu, f"{gpu.psp.pref}_64") & 0x80000000
  with pytest.raises(PCIDeviceError, match="the bootloader is gone once the sOS runs"): _bl(gpu, am.PSP_BL__LOAD_SYSDRV, b"")

def test_the_sos_ring_answers_commands_and_refuses_bytes_that_are_not_the_named_image(capsys):
  from tinygrad.runtime.autogen.am import am
  gpu = make_gpu()
  with pytest.raises(PCIDeviceError, match="before the sOS runs"): wreg(gpu, f"{gpu.psp.pref}_64", am.PSP_RING_TYPE__KM << 16)
  comp = gpu.firmware.sos_components
  _bl(gpu, am.PSP_BL__LOAD_SYSDRV, comp[am.PSP_FW_TYPE_PSP_SYS_DRV])
  _bl(gpu, am.PSP_BL__LOAD_SOSDRV, comp[am.PSP_FW_TYPE_PSP_SOS])
  ring, cmd_buf, fence, fw = 0x200000, 0x210000, 0x211000, 0x300000
  wreg(gpu, f"{gpu.psp.pref}_69", mc(ring) & 0xffffffff)
  wreg(gpu, f"{gpu.psp.pref}_70", mc(ring) >> 32)
  wreg(gpu, f"{gpu.psp.pref}_71", 0x10000)
  wreg(gpu, f"{gpu.psp.pref}_64", am.PSP_RING_TYPE__KM << 16)
  assert rreg(gpu, f"{gpu.psp.pref}_64") & 0x8000ffff == 0x80000000
  def submit(cmd, n):
    gpu.vram_write(cmd_buf, bytes(cmd))
    frame = am.struct_psp_gfx_rb_frame(cmd_buf_addr_lo=mc(cmd_buf) & 0xffffffff, cmd_buf_addr_hi=mc(cmd_buf) >> 32, fence_value=n,
                                        fence_addr_lo=mc(fence) & 0xffffffff, fence_addr_hi=mc(fence) >> 32)
    wptr = rreg(gpu, f"{gpu.psp.pref}_67")
    gpu.vram_write(ring + wptr * 4, bytes(frame))
    wreg(gpu, f"{gpu.psp.pref}_67", wptr + ctypes.sizeof(frame) // 4)
    assert int.from_bytes(gpu.vram_bytes(fence, 4), "little") == n
    return am.struct_psp_gfx_cmd_resp.from_buffer_copy(gpu.vram_bytes(cmd_buf, ctypes.sizeof(am.struct_psp_gfx_cmd_resp)))
  smu = gpu.firmware.ip_segments[am.GFX_FW_TYPE_SMU]
  gpu.vram_write(fw, smu)
  cmd = am.struct_psp_gfx_cmd_resp(cmd_id=am.GFX_CMD_ID_LOAD_IP_FW)
  c = cmd.cmd.cmd_load_ip_fw
  c.fw_phy_addr_lo, c.fw_phy_addr_hi, c.fw_size, c.fw_type = mc(fw) & 0xffffffff, mc(fw) >> 32, len(smu), am.GFX_FW_TYPE_SMU
  assert submit(cmd, 1).resp.status == 0
  c.fw_type = am.GFX_FW_TYPE_RLC_G   # the SMU's bytes are not the RLC's
  assert submit(cmd, 2).resp.status != 0 and "PSP refused LOAD_IP_FW GFX_FW_TYPE_RLC_G" in capsys.readouterr().err
  assert submit(am.struct_psp_gfx_cmd_resp(cmd_id=am.GFX_CMD_ID_AUTOLOAD_RLC), 3).resp.status != 0   # most images are missing
  assert "AUTOLOAD_RLC before these images were loaded" in capsys.readouterr().err
  assert submit(am.struct_psp_gfx_cmd_resp(cmd_id=0x7777), 4).resp.status != 0

def test_the_smu_answers_versions_and_dpm_levels_and_refuses_messages_it_does_not_model():
  gpu = make_gpu()
  mod = gpu.smu.mod
  def send(msg, arg=0):
    wreg(gpu, "mmMP1_SMN_C2PMSG_90", 0)
    wreg(gpu, "mmMP1_SMN_C2PMSG_82", arg)
    wreg(gpu, "mmMP1_SMN_C2PMSG_66", msg)
    assert rreg(gpu, "mmMP1_SMN_C2PMSG_90") == 1
    return rreg(gpu, "mmMP1_SMN_C2PMSG_82")
  assert send(mod.PPSMC_MSG_GetSmuVersion) != 0
  levels = dict(gpu.pci_board.dpm_mhz)[mod.PPCLK_GFXCLK]
  assert send(mod.PPSMC_MSG_GetDpmFreqByIndex, (mod.PPCLK_GFXCLK << 16) | 0xff) == len(levels)
  assert send(mod.PPSMC_MSG_GetDpmFreqByIndex, (mod.PPCLK_GFXCLK << 16) | (len(levels) - 1)) == levels[-1]
  with pytest.raises(PCIDeviceError, match="SMU message PPSMC_MSG_.* is not emulated"): send(mod.PPSMC_MSG_TransferTableSmu2Dram)

def test_a_compute_queue_cannot_start_before_the_rlc_autoload():
  gpu = make_gpu()
  wreg(gpu, "regGRBM_GFX_CNTL", meid=1)
  with pytest.raises(PCIDeviceError, match="CP_HQD_ACTIVE=1 before the PSP's AUTOLOAD_RLC"): wreg(gpu, "regCP_HQD_ACTIVE", 1)

def test_hqd_registers_are_banked_per_queue():
  gpu = make_gpu()
  wreg(gpu, "regGRBM_GFX_CNTL", meid=1, queueid=0)
  wreg(gpu, "regCP_HQD_PQ_BASE", 0x1234)
  wreg(gpu, "regGRBM_GFX_CNTL", meid=1, queueid=1)
  assert rreg(gpu, "regCP_HQD_PQ_BASE") == 0
  wreg(gpu, "regGRBM_GFX_CNTL", meid=1, queueid=0)
  assert rreg(gpu, "regCP_HQD_PQ_BASE") == 0x1234

def test_an_sdma_queue_without_its_doorbell_is_refused():
  gpu = make_gpu()
  with pytest.raises(PCIDeviceError, match="SDMA0_QUEUE0_RB_CNTL.rb_enable=1 with SDMA0_QUEUE0_DOORBELL.enable clear"):
    wreg(gpu, "regSDMA0_QUEUE0_RB_CNTL", rb_enable=1, rb_size=10)

def test_registers_take_32_bit_stores_only_and_far_registers_go_through_the_index_window():
  from tinygrad.helpers import to_mv
  gpu = make_gpu()
  scratch = gpu.regs.addr("regSCRATCH_REG6")
  wreg(gpu, "regSCRATCH_REG6", 0x11223344)
  bar = to_mv(gpu.regs.bar_addr, 1 << 20)
  with pytest.raises(PCIDeviceError, match=f"8-bit store at MMIO offset {scratch * 4 + 1:#x}"): bar[scratch * 4 + 1] = 0xff
  with pytest.raises(PCIDeviceError, match="16-bit store"): bar.cast("H")[scratch * 2] = 0xffff
  assert rreg(gpu, "regSCRATCH_REG6") == 0x11223344   # refused stores are dropped: the register keeps its value
  far = next(n for n, r in gpu.regs.defs.items() if r.addr[0] >= len(mmio(gpu)) and r.addr[0] not in gpu.regs.handlers)
  wreg(gpu, far, 0xabcd)
  assert gpu.regs.get(far) == 0xabcd and rreg(gpu, far) == 0xabcd

def test_stores_the_bench_does_not_see_and_stores_to_read_only_registers_are_refused_and_undone(monkeypatch):
  import ctypes
  import mockgpu.pci.registers as registers
  monkeypatch.setattr(registers, "UNSEEN_CHECK_S", 0.0)   # look at every store (by default at most every millisecond)
  gpu = make_gpu()
  wreg(gpu, "regSCRATCH_REG6", 7)
  ctypes.c_uint8.from_address(gpu.regs.bar_addr + gpu.regs.addr("regSCRATCH_REG6") * 4).value = 0x55   # native code, not a to_mv view
  with pytest.raises(PCIDeviceError, match="register regSCRATCH_REG6 .* changed to 0x55 by a store the bench did not see"):
    wreg(gpu, "regSCRATCH_REG7", 1)
  assert rreg(gpu, "regSCRATCH_REG6") == 7 and rreg(gpu, "regSCRATCH_REG7") == 1
  gpu.hubs["GC"].record_fault(0x123456000, True, False)   # the device latches a fault's status
  name = "regGCVM_L2_PROTECTION_FAULT_STATUS_LO32" if gpu.gc_version >= (12, 0, 0) else "regGCVM_L2_PROTECTION_FAULT_STATUS"
  status = rreg(gpu, name)
  with pytest.raises(PCIDeviceError, match=f"to read-only register {name}: the hardware drops it"): wreg(gpu, name, 0)
  assert status != 0 and rreg(gpu, name) == status

def test_an_interrupt_with_the_ih_ring_disabled_is_reported_lost_with_the_overflow_flag(capsys):
  gpu = make_gpu()
  gpu.ih.post(10, 0)
  assert "IH ring disabled: interrupt client 10 source 0 lost" in capsys.readouterr().err
  assert gpu.regs.reg("regIH_RB_WPTR").decode(rreg(gpu, "regIH_RB_WPTR"))["rb_overflow"] == 1

def test_shader_and_packet_faults_post_the_ih_sources_tinygrads_handler_decodes():
  from tinygrad.helpers import getbits
  from tinygrad.runtime.autogen.am import am
  from emu.amd.api import GPUIllegalInstruction
  from mockgpu.engine import PacketError
  import numpy as np
  gpu = make_gpu()
  ring = 0x600000
  wreg(gpu, "regIH_RB_BASE", mc(ring) >> 8)
  wreg(gpu, "regIH_RB_CNTL", rb_enable=1, rb_size=14)
  gpu.on_fault(None, GPUIllegalInstruction(0x1000, 0xffffffff, "no such opcode"))
  gpu.on_fault(None, PacketError("PM4: unsupported opcode"))
  e = [[int(x) for x in gpu.vram[ring + 32 * i:ring + 32 * (i + 1)].view(np.uint32)] for i in range(2)]
  assert am.SOC15_SOURCE_ID_FROM_IH_ENTRY(e[0]) == am.GFX_11_0_0__SRCID__SQ_INTERRUPT_ID
  ctx0, ctx1 = am.SOC15_CONTEXT_ID0_FROM_IH_ENTRY(e[0]), am.SOC15_CONTEXT_ID1_FROM_IH_ENTRY(e[0])
  assert getbits(ctx1, 6, 7) == 2 and getbits(ctx0, 21, 24) == 1   # SOC21 layout: encoding "error", error type ILLEGAL_INST
  assert am.SOC15_SOURCE_ID_FROM_IH_ENTRY(e[1]) == am.GFX_11_0_0__SRCID__CP_BAD_OPCODE_ERROR
  assert am.SOC15_CLIENT_ID_FROM_IH_ENTRY(e[1]) == am.SOC21_IH_CLIENTID_GRBM_CP
