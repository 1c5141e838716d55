"""The mock ASM24xx bridge's protocol, request by request, as tinygrad's usb.py speaks it: the expected values are the
protocol's (PCIe configuration and BAR rules, the bridge's documented windows), worked by hand; and every malformed request is
a USBTransferError naming the request and address, never a hang or a silent drop."""
import ctypes, struct
import numpy as np
import pytest
from mockgpu import devwrite
from mockgpu.pci.boards import board
from mockgpu.pci.registers import PCIDeviceError
from mockgpu.usb import bridge as br
from mockgpu.usb.bridge import USBTransferError
from mockgpu.usb.transport import MockUSB3, attach

VRAM = 384 << 20          # not a power of two: BAR0 decodes 512 MiB, the last 128 MiB of which no memory backs
CFG_RD, CFG_WR, MRD64, MWR64 = 0x04, 0x44, 0x20, 0x60

@pytest.fixture
def usb():
  devwrite.install()
  return MockUSB3(attach(0, "usb:1-2", board("gfx1100"), VRAM))

def tlp(usb, fmt:int, addr:int, value:int=0, byte_en:int=0xf, mode:int=0):
  usb.control_write(br.REQ_TLP, fmt | byte_en << 8, mode, struct.pack("<III", addr & 0xffffffff, addr >> 32, value))

def completion(usb) -> tuple[int, int]:
  data = usb.control_read(br.REQ_TLP, 8)
  return struct.unpack_from("<I", data)[0], data[4] >> 5

def cfg(bus:int, reg:int) -> int: return bus << 24 | reg

def cfg_read(usb, bus:int, reg:int) -> tuple[int, int]:
  tlp(usb, CFG_RD | int(bus > 0), cfg(bus, reg))
  return completion(usb)

def cfg_write(usb, bus:int, reg:int, value:int, byte_en:int=0xf):
  tlp(usb, CFG_WR | int(bus > 0), cfg(bus, reg), value, byte_en)
  assert completion(usb)[1] == br.CPL_OK

def link_up(usb):
  """What tinygrad's pci_setup_usb_bars does, by hand: bus numbers, windows (32-bit at 0x10000000, prefetchable at 32 GiB) and
  memory decoding on bridges 0-3; then BAR0 at 32 GiB, BAR2 after it, BAR5 at 0x10000000, and the GPU's memory decoding."""
  usb.control_write(br.REQ_POWER, 1)
  for bus in range(4):
    cfg_write(usb, bus, 0x18, (bus + 1) << 8 | 4 << 16)
    cfg_write(usb, bus, 0x20, 0xffff1000)                  # memory base 0x10000000, limit 0xffffffff
    cfg_write(usb, bus, 0x24, 0xffff0001)                  # prefetchable base (low bits 0), limit (all ones)
    cfg_write(usb, bus, 0x28, 8)                           # prefetchable base upper: 32 GiB
    cfg_write(usb, bus, 0x2c, 0xffffffff)
    cfg_write(usb, bus, 0x04, 0x6, byte_en=0x1)
  for reg, value in ((0x10, 0), (0x14, 8), (0x18, 0), (0x1c, 8), (0x24, 0x10000000)): cfg_write(usb, 4, reg, value)
  cfg_write(usb, 4, 0x18, 0x20000000)                     # BAR2 (doorbells) at 32 GiB + 512 MiB
  cfg_write(usb, 4, 0x04, 0x6, byte_en=0x1)

def test_the_link_is_down_until_powered_and_then_reads_l0():
  devwrite.install()
  usb = MockUSB3(attach(0, "usb:1-2", board("gfx1100"), VRAM))
  assert usb.control_read(br.REQ_XDATA_READ, 1, value=br.XDATA_LTSSM)[0] != br.LTSSM_L0
  with pytest.raises(USBTransferError, match="PCIe link down"): cfg_read(usb, 0, 0)
  usb.control_write(br.REQ_POWER, 1)
  assert usb.control_read(br.REQ_XDATA_READ, 1, value=br.XDATA_LTSSM)[0] == 0x78

def test_configuration_requests_reach_a_bus_only_through_the_bridges_that_forward_it(usb):
  usb.control_write(br.REQ_POWER, 1)
  assert cfg_read(usb, 4, 0) == (0, br.CPL_UR)             # no bus numbers yet: nothing answers bus 4
  assert cfg_read(usb, 0, 0)[1] == br.CPL_OK               # the root port answers type-0 requests
  tlp(usb, CFG_RD, cfg(0, 0) | 1 << 19)                    # device 1 on a point-to-point link
  assert completion(usb)[1] == br.CPL_UR
  for bus in range(4): cfg_write(usb, bus, 0x18, (bus + 1) << 8 | 4 << 16)
  assert cfg_read(usb, 4, 0) == (0x1002 | 0x744c << 16, br.CPL_OK)   # AMD's vendor id, the RX 7900 XTX's device id
  assert cfg_read(usb, 5, 0)[1] == br.CPL_UR               # beyond the subordinate bus

def test_bars_read_back_their_size_masks_and_keep_only_decoded_address_bits(usb):
  usb.control_write(br.REQ_POWER, 1)
  for bus in range(4): cfg_write(usb, bus, 0x18, (bus + 1) << 8 | 4 << 16)
  for reg in (0x10, 0x14, 0x18, 0x1c, 0x20, 0x24): cfg_write(usb, 4, reg, 0xffffffff)
  # BAR0: 512 MiB (the power of two that holds 384 MiB), 64-bit prefetchable; BAR2: 2 MiB; BAR4 unimplemented; BAR5: 1 MiB, 32-bit
  assert [cfg_read(usb, 4, r)[0] for r in (0x10, 0x14, 0x18, 0x1c, 0x20, 0x24)] == [0xe000000c, 0xffffffff, 0xffe0000c, 0xffffffff, 0, 0xfff00000]
  cfg_write(usb, 4, 0x24, 0x10012345)
  assert cfg_read(usb, 4, 0x24)[0] == 0x10000000

def test_memory_requests_reach_the_gpu_only_through_open_windows_and_decoding_bars(usb):
  usb.control_write(br.REQ_POWER, 1)
  tlp(usb, MRD64, 0x10000000)
  assert completion(usb)[1] == br.CPL_UR
  link_up(usb)
  gpu = usb.bridge.gpu
  gpu.regs[0x40] = 0x12345678                              # a register the device set
  tlp(usb, MRD64, 0x10000000 + 0x100)
  assert completion(usb) == (0x12345678, br.CPL_OK)
  tlp(usb, MRD64, 0x10000000 + 0x100, byte_en=0b1100)      # the upper half: the dword is returned, the host shifts
  assert completion(usb) == (0x12345678, br.CPL_OK)
  tlp(usb, MRD64, 0x8_0000_0000 - 4)                       # just below the prefetchable window
  assert completion(usb)[1] == br.CPL_UR

def test_a_bridge_with_memory_decoding_off_or_a_window_that_misses_stops_the_request(usb):
  link_up(usb)
  def reads() -> int:
    tlp(usb, MRD64, 0x10000000)
    return completion(usb)[1]
  assert reads() == br.CPL_OK
  cfg_write(usb, 2, 0x04, 0x4, byte_en=0x1)                # bridge 2: bus master only, memory decoding off
  assert reads() == br.CPL_UR
  cfg_write(usb, 2, 0x04, 0x6, byte_en=0x1)
  cfg_write(usb, 1, 0x20, 0x0ff00000)                      # bridge 1's 32-bit window: [0, 0x0fffffff], below the registers
  assert reads() == br.CPL_UR
  cfg_write(usb, 1, 0x20, 0xffff1000)
  assert reads() == br.CPL_OK

def test_streaming_writes_and_reads_move_vram_bytes_and_stop_at_its_end(usb):
  link_up(usb)
  data = bytes(range(256)) * 4
  tlp(usb, MWR64, 0x8_0000_1000, len(data) // 4, mode=1)
  usb.bulk_write(data)
  assert usb.bridge.gpu.vram_bytes(0x1000, len(data)) == data
  tlp(usb, MRD64, 0x8_0000_1000, len(data) // 4, mode=2)
  assert bytes(usb.bulk_read(len(data))) == data
  tlp(usb, MWR64, 0x8_0000_0000 + (400 << 20), 1, mode=1)  # inside BAR0's 512 MiB, past the 384 MiB of VRAM
  with pytest.raises(USBTransferError, match=r"BAR0 offset 0x19000000 .* beyond its memory"): usb.bulk_write(bytes(4))

def test_register_writes_through_the_bridge_run_the_devices_handlers(usb):
  link_up(usb)
  regs = usb.bridge.gpu.regs
  tlp(usb, MWR64, 0x10000000 + regs.index * 4, 1, mode=1)   # RSMU index: the data register now holds that register's value
  regs[0x2000] = 0xabcd
  usb.bulk_write(struct.pack("<I", 0x2000 * 4))
  assert regs[regs.data] == 0xabcd
  read_only = regs.addr("regCP_STAT")
  tlp(usb, MWR64, 0x10000000 + read_only * 4, 1, mode=1)
  with pytest.raises(PCIDeviceError, match="read-only register regCP_STAT"): usb.bulk_write(struct.pack("<I", 1))

def test_sram_takes_armed_bulk_writes_and_is_the_gpus_system_memory_at_0x200000(usb):
  data = np.random.default_rng(0).integers(0, 256, 1024, dtype=np.uint8).tobytes()
  usb.control_write(br.REQ_SRAM, 2, 16 | 1 << 8)            # 2 sectors into slot 16 (SRAM 0x40000), one 16 KiB chunk
  usb.bulk_write(data)
  (off, host, n), = usb.bridge.gpu.bus.resolve(0x240000, 1024)
  assert (off, n) == (0, 1024) and ctypes.string_at(host, n) == data

def test_an_armed_sram_read_waits_for_the_gpus_completion_write(usb):
  usb.bridge.sram[:512] = 7
  usb.control_write(br.REQ_SRAM, 1 | 0x8000, 1 << 8)
  with pytest.raises(USBTransferError, match="never wrote the completion at bus 0x82200c"): usb.bulk_read(512, timeout=20)
  usb.control_write(br.REQ_SRAM, 1 | 0x8000, 1 << 8)
  (_, host, _), = usb.bridge.gpu.bus.resolve(br.COMPLETION, 4)
  ctypes.memmove(host, bytes(4), 4)                        # the GPU writes the completion entry's dword 3
  assert bytes(usb.bulk_read(512)) == bytes([7]) * 512

def test_the_xdata_windows_are_pcie_memory_the_gpu_writes(usb):
  (_, host, _), = usb.bridge.gpu.bus.resolve(0x820800, 8)
  ctypes.memmove(host, struct.pack("<Q", 0x1122334455667788), 8)
  assert bytes(usb.control_read(br.REQ_XDATA_READ, 8, value=0xa800)) == struct.pack("<Q", 0x1122334455667788)
  usb.control_write(br.REQ_XDATA_WRITE, 0xb804, 0x5a)
  (_, host, _), = usb.bridge.gpu.bus.resolve(0x822004, 1)
  assert ctypes.string_at(host, 1) == b"\x5a"
  assert usb.bridge.gpu.bus.resolve(0x821000, 4) == []     # between the windows: no memory, a GPU access there faults

@pytest.mark.parametrize("request_, match", [
  (lambda u: u.bulk_write(bytes(512)), "bulk OUT of 512 bytes: no transfer is armed"),
  (lambda u: u.bulk_read(512), "bulk IN of 512 bytes: no transfer is armed"),
  (lambda u: (u.control_write(br.REQ_SRAM, 1, 1 << 8), u.bulk_write(bytes(1024))),
   "bulk OUT of 1024 bytes to SRAM 0x0: the armed transfer takes 512"),
  (lambda u: u.control_write(br.REQ_SRAM, 64, 0 | 1 << 8), "64 sectors from slot 0 in 1 chunks do not fit"),
  (lambda u: u.control_write(br.REQ_SRAM, 1, 32 | 1 << 8), "1 sectors from slot 32 in 1 chunks do not fit SRAM"),
  (lambda u: u.control_read(br.REQ_XDATA_READ, 2, value=0xffff), r"XDATA \[0xffff, 0x10001\) runs past 0x10000"),
  (lambda u: u.control_read(br.REQ_TLP, 8), "no non-posted TLP is waiting for its completion"),
  (lambda u: u.control_write(0x99, 0, 0), "control OUT 0x99 .* not a request the firmware serves"),
  (lambda u: u.control_write(br.REQ_XDATA_WRITE, 0x10000, 0), "not a control transfer"),
  (lambda u: (u.control_write(br.REQ_POWER, 1), tlp(u, 0x7f, 0)), "Fmt/Type 0x7f is not a TLP"),
  (lambda u: (u.control_write(br.REQ_POWER, 1), tlp(u, MWR64, 0x12340000, 1, mode=1), u.bulk_write(bytes(4))),
   "bulk OUT of 4 bytes to PCIe 0x12340000: no device decodes it"),
  (lambda u: (u.control_write(br.REQ_POWER, 1), tlp(u, MRD64, 0, 0, mode=2)), "streaming mode 2 takes a memory read of at least one dword"),
  (lambda u: (u.control_write(br.REQ_POWER, 1), tlp(u, MRD64, 0, 1, mode=3)), "TLP engine mode 3 does not exist"),
  (lambda u: u.send_batch([b"\x28" + bytes(15)]), "SCSI command blocks .* not emulated"),
])
def test_malformed_requests_fail_naming_the_request_and_address(usb, request_, match):
  with pytest.raises(USBTransferError, match=match): request_(usb)
