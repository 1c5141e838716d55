"""The discovery table and the synthetic firmware, read back by tinygrad's own AM driver code (its parser is the oracle)."""
import types
import pytest
from pci_util import VRAM, make_gpu
from mockgpu.pci import firmware
from mockgpu.pci.boards import BOARDS, GC

@pytest.mark.parametrize("arch", sorted(BOARDS))
def test_tinygrads_discovery_parser_reads_the_boards_ip_versions_bases_and_shader_layout(arch):
  from tinygrad.runtime.autogen.am import am
  from tinygrad.runtime.support.am.amdev import AMDev
  from tinygrad.runtime.support.hcq import MMIOInterface
  import tinygrad.runtime.autogen.am.navi_offsets as offs
  gpu = make_gpu(arch)
  fake = types.SimpleNamespace(rreg=lambda r: gpu.regs[r], vram=MMIOInterface(gpu.vram_addr, VRAM))
  AMDev._run_discovery(fake)
  b = BOARDS[arch]
  assert fake.vram_size == VRAM and fake.large_bar
  assert fake.ip_ver[am.GC_HWIP] == b.ip_versions[GC] and fake.ip_ver[am.MP1_HWIP] == b.ip_versions[1]
  assert fake.regs_offset[am.GC_HWIP][0][:2] == (offs.GC_BASE__INST0_SEG0, offs.GC_BASE__INST0_SEG1)
  # tinygrad's own arithmetic (ops_amd PCIIface._compute_props) must give the board's CU count and waves
  cu_per_sa = 2 * (fake.gc_info.gc_num_wgp0_per_sa + fake.gc_info.gc_num_wgp1_per_sa)
  assert cu_per_sa * fake.gc_info.gc_num_sa_per_se * fake.gc_info.gc_num_se == b.kfd.cus
  assert (fake.gc_info.gc_max_waves_per_simd, fake.gc_info.gc_lds_size) == (b.kfd.max_waves_per_simd, b.kfd.lds_kb)

@pytest.mark.parametrize("arch", sorted(BOARDS))
def test_tinygrads_firmware_loader_parses_every_image_into_the_segments_the_psp_expects(arch, monkeypatch):
  from tinygrad.runtime.autogen.am import am
  from tinygrad.runtime.support.am import amdev
  fw = firmware.firmware(BOARDS[arch])
  firmware.install()
  v = BOARDS[arch].ip_versions
  adev = types.SimpleNamespace(devfmt="test", ip_ver={am.GC_HWIP: v[GC], am.MP0_HWIP: v[255], am.MP1_HWIP: v[1], am.SDMA0_HWIP: v[42]})
  loaded = amdev.AMFirmware(adev)
  got = {t: bytes(data) for types_, data in loaded.descs + [loaded.smu_psp_desc] for t in types_}
  assert got == fw.ip_segments   # every type the PSP accepts, with exactly its bytes
  assert {k: bytes(v_) for k, v_ in loaded.sos_fw.items()} == fw.sos_components
  assert all(start == firmware.RS64_UCODE_START for start in loaded.ucode_start.values())

def test_an_unknown_firmware_name_is_an_error_naming_the_images_there_are():
  firmware.firmware(BOARDS["gfx1100"])
  with pytest.raises(RuntimeError, match="no synthetic firmware amdgpu/gc_9_4_3_mec.bin .*psp_13_0_0_sos.bin"):
    firmware.fetch("amdgpu", "gc_9_4_3_mec.bin", "0" * 64)
