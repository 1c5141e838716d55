"""The files a KFD system publishes: /dev/kfd, the topology nodes, DRM render nodes and their ip_discovery trees."""
from __future__ import annotations
from mockgpu.vfs import VFS, CharDevice, File
from mockgpu.kfd.gpu import KFDGPU

TOPOLOGY = "/sys/devices/virtual/kfd/kfd/topology"

def _props(d:dict[str, int]) -> str: return "".join(f"{k} {v}\n" for k, v in d.items())

def mount(vfs:VFS, gpus:list[KFDGPU], kfd_opener, render_opener):
  """Publish the tree for `gpus`. Node 0 is the CPU (gpu_id 0, so tinygrad skips it); GPU n is node n+1."""
  vfs.mount("/dev/kfd", CharDevice(kfd_opener))
  vfs.mount(f"{TOPOLOGY}/generation_id", File("1\n"))
  vfs.mount(f"{TOPOLOGY}/system_properties", File("platform_oem 0\nplatform_id 0\nplatform_rev 0\n"))
  cpu = f"{TOPOLOGY}/nodes/0"
  vfs.mount(f"{cpu}/gpu_id", File("0\n"))
  vfs.mount(f"{cpu}/name", File("\n"))
  vfs.mount(f"{cpu}/properties", File(_props({"cpu_cores_count": 16, "simd_count": 0, "mem_banks_count": 1, "gfx_target_version": 0,
                                              "drm_render_minor": 0, "num_xcc": 0})))
  for gpu in gpus:
    node = f"{TOPOLOGY}/nodes/{gpu.node + 1}"
    vfs.mount(f"{node}/gpu_id", File(f"{gpu.gpu_id}\n"))
    vfs.mount(f"{node}/name", File(f"{gpu.arch}\n"))
    vfs.mount(f"{node}/properties", File(_props(gpu.board.properties(gpu.gpu_id, gpu.render_minor, gpu.node + 1))))
    vfs.mount(f"{node}/mem_banks/0/properties", File(_props({"heap_type": 1, "size_in_bytes": gpu.vram.size, "flags": 0, "width": 384,
                                                              "mem_clk_max": 2500})))
    vfs.mkdirs(f"{node}/caches")
    vfs.mkdirs(f"{node}/io_links")
    vfs.mount(f"/dev/dri/renderD{gpu.render_minor}", CharDevice(lambda path, flags, g=gpu: render_opener(g)))
    dev = f"/sys/class/drm/renderD{gpu.render_minor}/device"
    vfs.mount(f"{dev}/vendor", File("0x1002\n"))
    vfs.mount(f"{dev}/device", File(f"{gpu.board.device_id:#06x}\n"))
    # the emulated clocks are deterministic, i.e. always in the stable power state PMC/SQTT profiling requires
    vfs.mount(f"{dev}/power_dpm_force_performance_level", File("profile_standard\n"))
    for hwid, ver in gpu.board.ip_versions.items():
      for part, v in zip(("major", "minor", "revision"), ver): vfs.mount(f"{dev}/ip_discovery/die/0/{hwid}/0/{part}", File(f"{v}\n"))
