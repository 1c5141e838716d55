"""Mounts the PCI GPUs into the VFS the way Linux shows them: /sys/bus/pci/devices/<bus>/..., and the procfs files the AM
driver reads.

Per device: vendor, device, class, enable (written 1), config (ConfigSpace), resource (one `start end flags` line per BAR),
resource0 (VRAM), resource2 (64-bit doorbells), resource5 (MMIO registers), resource0_resize. No `driver` link: no kernel
driver is bound. Bus names are `<domain>:<bus>:00.0` with a domain derived from the process id (always >= 0x1000), so they
never name a real device and two test processes never contend for tinygrad's per-device lock file in /tmp; the lock files of this
process's bus names are deleted when it exits.

/proc/self/pagemap answers the bus frame of each host page (mockgpu.pci.bus; bit 63 present); compact_unevictable_allowed reads
0, the value tinygrad would otherwise set through sudo. With VFIO=1 tinygrad looks for the vfio module (present here, so it
never runs `sudo modprobe`) and then /dev/vfio/vfio, which does not exist: it falls back to the sysfs path above.
"""
from __future__ import annotations
import atexit, errno, glob, mmap, os, struct, tempfile
from mockgpu.hostmem import host_mmap
from mockgpu.pci.boards import board as pci_board
from mockgpu.pci.bus import BUS
from mockgpu.pci.config_space import ConfigSpace
from mockgpu.pci.device import PCIGPU
from mockgpu.vfs import VFS, CharDevice, File, OpenDevice, RandomAccessFile

VENDOR_AMD = 0x1002
BAR_MEM64_PREFETCH, BAR_MEM32 = 0x14220c, 0x40200   # sysfs `resource` flags: 64-bit prefetchable memory / 32-bit memory

def bus_name(index:int, pid:int|None=None) -> str:
  """The bus address of GPU `index` in this process."""
  return f"{0x1000 + (os.getpid() if pid is None else pid) % 0xf000:04x}:{0xc1 + index:02x}:00.0"

class BarFile(OpenDevice):
  """An open resourceN file: mmap maps that BAR (VRAM shares the memfd; doorbells and registers are the device's watched pages)."""
  def __init__(self, gpu:PCIGPU, bar:int): self.gpu, self.bar = gpu, bar

  def mmap(self, start:int, size:int, prot:int, flags:int, offset:int) -> int:
    g = self.gpu
    limit = {0: g.vram_size, 2: g.doorbell_bytes, 5: g.regs.bar_bytes}[self.bar]
    if offset < 0 or offset + size > limit:
      raise OSError(errno.EINVAL, f"{g.name} resource{self.bar}: mmap of {size:#x} bytes at {offset:#x} exceeds the BAR ({limit:#x})")
    if self.bar == 0: return host_mmap(start, size, prot, flags | mmap.MAP_SHARED, g.vram_fd, offset)
    if start: raise OSError(errno.EINVAL, f"{g.name} resource{self.bar}: register BARs are mapped where the device put them, not at {start:#x}")
    return (g.doorbell_page() if self.bar == 2 else g.regs.bar_addr) + offset

PAGEMAP_MAX_READ = 8 << 20   # bytes one pagemap read may ask for (4 GiB of pages); a read of the whole file is refused, not attempted

def _pagemap(pos:int, size:int) -> bytes:
  if size > PAGEMAP_MAX_READ: raise OSError(errno.EINVAL, f"/proc/self/pagemap: a {size:#x}-byte read (at most {PAGEMAP_MAX_READ:#x} at once)")
  first, count = pos // 8, size // 8
  return struct.pack(f"<{count}Q", *((1 << 63) | f for f in BUS.frames(first, count)))

GPUS: list[PCIGPU] = []   # the GPUs `install` created in this process (tests and tools inspect them)

def remove_lock_files(names:list[str], folder:str|None=None):
  """Delete the per-device lock files tinygrad's AM driver leaves in the temporary folder (`<prefix>_<bus>.lock`) for the bus names
  `names`, which only this process uses: without this every test process would leave one per GPU behind."""
  for name in names:
    for path in glob.glob(os.path.join(glob.escape(folder or tempfile.gettempdir()), f"*_{glob.escape(name.lower())}.lock")):
      try: os.unlink(path)
      except OSError: pass

def install(vfs:VFS, gpu_count:int, arch:str, vram_bytes:int|None=None) -> list[PCIGPU]:
  """Create `gpu_count` PCI GPUs of `arch` and mount their files; `vram_bytes` defaults to the board's VRAM."""
  from mockgpu.pci import firmware
  b = pci_board(arch)
  gpus = [PCIGPU(i, bus_name(i), b, vram_bytes or b.kfd.vram_bytes, BUS) for i in range(gpu_count)]
  GPUS.extend(gpus)
  atexit.register(remove_lock_files, [g.name for g in gpus])
  firmware.install()
  vfs.mkdirs("/sys/bus/pci/devices")
  for g in gpus:
    root = f"/sys/bus/pci/devices/{g.name}"
    bars = {0: (g.bar0_bus, g.vram_size, True), 2: (g.doorbell_page(), g.doorbell_bytes, True), 5: (g.regs.bar_addr, g.regs.bar_bytes, False)}
    g.config = ConfigSpace(VENDOR_AMD, b.device_id, bars)
    lines = [f"0x{bars[i][0]:016x} 0x{bars[i][0] + bars[i][1] - 1:016x} 0x{BAR_MEM64_PREFETCH if bars[i][2] else BAR_MEM32:016x}"
             if i in bars else "0x0000000000000000 0x0000000000000000 0x0000000000000000" for i in range(13)]
    for name, content in (("vendor", f"0x{VENDOR_AMD:04x}\n"), ("device", f"0x{b.device_id:04x}\n"), ("class", "0x030000\n"),
                          ("resource", "\n".join(lines) + "\n"), ("resource0_resize", f"{g.vram_size >> 20:#x}\n")):
      vfs.mount(f"{root}/{name}", File(content, on_write=(lambda data: None) if name == "resource0_resize" else None))
    vfs.mount(f"{root}/enable", File("1\n", on_write=lambda data: None))
    vfs.mount(f"{root}/config", RandomAccessFile(g.config.read, g.config.write, size=4096))
    for bar in (0, 2, 5): vfs.mount(f"{root}/resource{bar}", CharDevice(lambda path, flags, g=g, bar=bar: BarFile(g, bar)))
  vfs.mount("/proc/self/pagemap", RandomAccessFile(_pagemap, size=1 << 60))
  vfs.mount("/proc/sys/vm/compact_unevictable_allowed", File("0\n", on_write=lambda data: None))
  vfs.mount("/sys/module/vfio/parameters/enable_unsafe_noiommu_mode", File("N\n", on_write=lambda data: None))
  return gpus
