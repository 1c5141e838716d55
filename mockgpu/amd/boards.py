"""Per-arch board data: what the KFD topology and the IP discovery tree publish for one real board of each supported arch.

Counts follow the boards' public specifications (shader engines/arrays, waves per SIMD; CUs, LDS and clock come from the
emulator's target table, emu.amd.arch); IP versions are the ones
amdgpu's IP discovery reports for them and name register modules that exist in tinygrad's wheel. The CDNA entries describe
one CPX-mode partition (a single XCC), which is how a KFD node of those boards looks when partitioned; tinygrad drives a
single-XCC node with PM4 queues.
"""
from __future__ import annotations
from dataclasses import dataclass
from emu.amd.arch import SPECS

# amdgpu hardware ids of the IP blocks tinygrad reads from ip_discovery (tinygrad.runtime.autogen.am.am *_HWID)
GC_HWID, SDMA0_HWID, NBIF_HWID = 11, 42, 108

@dataclass(frozen=True)
class Board:
  """One GPU model as its KFD node and IP discovery present it."""
  name: str
  gfx_target_version: int          # major*10000 + minor*100 + stepping
  device_id: int                   # PCI device id
  cus: int
  shader_engines: int
  arrays_per_engine: int
  simd_per_cu: int
  max_waves_per_simd: int
  wave_size: int
  lds_kb: int
  max_slots_scratch_cu: int
  vram_bytes: int
  engine_clock_mhz: int
  sdma_engines: int
  ip_versions: dict                # hwid -> (major, minor, revision)

  def properties(self, gpu_id:int, render_minor:int, node:int) -> dict[str, int]:
    """The `properties` file of the board's KFD node, key → int, in the order the driver prints them."""
    arrays = self.shader_engines * self.arrays_per_engine
    return {"cpu_cores_count": 0, "simd_count": self.cus * self.simd_per_cu, "mem_banks_count": 1, "caches_count": 0, "io_links_count": 0,
      "p2p_links_count": 0, "cpu_core_id_base": 0, "simd_id_base": 0x80000000 + node * 0x1000, "max_waves_per_simd": self.max_waves_per_simd,
      "lds_size_in_kb": self.lds_kb, "gds_size_in_kb": 0, "num_gws": 64, "wave_front_size": self.wave_size, "array_count": arrays,
      "simd_arrays_per_engine": self.arrays_per_engine, "cu_per_simd_array": self.cus // arrays, "simd_per_cu": self.simd_per_cu,
      "max_slots_scratch_cu": self.max_slots_scratch_cu, "gfx_target_version": self.gfx_target_version, "vendor_id": 0x1002,
      "device_id": self.device_id, "location_id": 0x300 + node * 0x100, "domain": 0, "drm_render_minor": render_minor, "hive_id": 0,
      "num_sdma_engines": self.sdma_engines, "num_sdma_xgmi_engines": 0, "num_sdma_queues_per_engine": 6, "num_cp_queues": 8,
      "max_engine_clk_fcompute": self.engine_clock_mhz, "local_mem_size": 0, "fw_version": 2040, "capability": 0x2800a080,
      "debug_prop": 0x427, "sdma_fw_version": 21, "unique_id": 0x5d1c0b0e00000000 + gpu_id, "num_xcc": 1,
      "max_engine_clk_ccompute": 3000}

def _board(arch:str, name:str, **facts) -> Board:
  """A board of `arch`: CUs, LDS per CU and the shader clock come from the emulator's target table (emu.amd.arch.SPECS)."""
  spec = SPECS[arch]
  return Board(name, cus=spec.n_cus, lds_kb=spec.lds_per_cu >> 10, engine_clock_mhz=int(spec.clock_mhz), **facts)

BOARDS: dict[str, Board] = {
  "gfx1100": _board("gfx1100", "AMD Radeon RX 7900 XTX", gfx_target_version=110000, device_id=0x744c, shader_engines=6, arrays_per_engine=2,
                    simd_per_cu=2, max_waves_per_simd=16, wave_size=32, max_slots_scratch_cu=32, vram_bytes=24 << 30, sdma_engines=2,
                    ip_versions={GC_HWID: (11, 0, 0), SDMA0_HWID: (6, 0, 0), NBIF_HWID: (4, 3, 0)}),
  "gfx1201": _board("gfx1201", "AMD Radeon RX 9070 XT", gfx_target_version=120001, device_id=0x7550, shader_engines=4, arrays_per_engine=2,
                    simd_per_cu=2, max_waves_per_simd=16, wave_size=32, max_slots_scratch_cu=32, vram_bytes=16 << 30, sdma_engines=2,
                    ip_versions={GC_HWID: (12, 0, 1), SDMA0_HWID: (7, 0, 1), NBIF_HWID: (6, 3, 1)}),
  "gfx942": _board("gfx942", "AMD Instinct MI300X (CPX partition)", gfx_target_version=90402, device_id=0x74a1, shader_engines=4,
                   arrays_per_engine=1, simd_per_cu=4, max_waves_per_simd=8, wave_size=64, max_slots_scratch_cu=32, vram_bytes=24 << 30,
                   sdma_engines=2, ip_versions={GC_HWID: (9, 4, 3), SDMA0_HWID: (4, 4, 2), NBIF_HWID: (7, 9, 0)}),
  "gfx950": _board("gfx950", "AMD Instinct MI355X (CPX partition)", gfx_target_version=90500, device_id=0x75a3, shader_engines=4,
                   arrays_per_engine=1, simd_per_cu=4, max_waves_per_simd=8, wave_size=64, max_slots_scratch_cu=32, vram_bytes=36 << 30,
                   sdma_engines=2, ip_versions={GC_HWID: (9, 5, 0), SDMA0_HWID: (4, 4, 5), NBIF_HWID: (7, 9, 0)}),
}

def board(arch:str) -> Board:
  """The board for `arch`; a clear error naming the supported archs otherwise."""
  if arch not in BOARDS: raise RuntimeError(f"mockgpu: arch {arch!r} is not emulated (supported: {', '.join(BOARDS)})")
  return BOARDS[arch]
