"""`MockFileIOInterface`: tinygrad's FileIOInterface (hcq.py) served by the virtual file system instead of the host kernel.

tinygrad imports this module (as `test.mockgpu.mockgpu`) while hcq.py is still initialising, so nothing here imports tinygrad
at import time. Paths are answered by providers mounted on first use (`PROVIDERS`: a path prefix → a function that mounts
that driver's tree into the VFS); a driver for another vendor plugs in by adding an entry. Paths no provider owns fall back
to the host (tinygrad also reads ordinary files through this class). Importing it also points LLVM_PATH at a newer libLLVM
when DEV's AMD arch needs one (`mockgpu.llvm_path`), and NVRTC_PATH / CUDA_PATH at PyPI's NVRTC and CUDA headers for a mock NV
target (`mockgpu.nvrtc_path`).
"""
from __future__ import annotations
import os
from typing import Callable
from mockgpu import devwrite, llvm_path, nvrtc_path
from mockgpu.hostmem import host_mmap, host_munmap
from mockgpu.vfs import VFS

VFS_ROOT = VFS()
llvm_path.select()   # before tinygrad loads libLLVM: a newer one when DEV's arch needs it (gfx950)
nvrtc_path.select()  # before tinygrad builds its CUDA compiler: PyPI's NVRTC and CUDA headers for DEV=MOCK+NV

def _mount_kfd(vfs:VFS):
  from mockgpu import config
  from mockgpu.kfd import driver
  driver.install(vfs, config.amd_gpu_count(), config.amd_arch())

def _mount_nv(vfs:VFS):
  from mockgpu import config
  from mockgpu.nv import driver
  driver.install(vfs, config.nv_gpu_count(), config.nv_arch())

def _mount_pci(vfs:VFS):
  from mockgpu import config
  from mockgpu.pci import driver
  from mockgpu.pci.boards import board
  arch = config.amd_arch()
  driver.install(vfs, config.amd_gpu_count(), arch, config.amd_vram_bytes(board(arch).kfd.vram_bytes))

# path prefix -> mount function; each provider is mounted once, the first time a path under any of its prefixes is used
PROVIDERS: dict[tuple[str, ...], Callable[[VFS], None]] = {
  ("/dev/kfd", "/sys/devices/virtual/kfd", "/sys/class/drm", "/dev/dri"): _mount_kfd,
  ("/dev/nvidiactl", "/dev/nvidia-uvm", *(f"/dev/nvidia{i}" for i in range(16))): _mount_nv,
  ("/sys/bus/pci", "/proc/self/pagemap", "/proc/sys/vm/compact_unevictable_allowed", "/sys/module/vfio", "/dev/vfio"): _mount_pci,
}
_mounted: set = set()

def start_engines():
  """What every mock device needs before its first use (idempotent): device-write notification, the engines' progress hook on
  tinygrad's memory views, and the process-lifecycle handlers."""
  devwrite.install()
  from mockgpu import lifecycle
  from mockgpu.engine import SCHEDULER
  devwrite.add_touch_hook(SCHEDULER.poll)
  lifecycle.install()

def _route(path:str) -> bool:
  """Mount the provider owning `path` if needed; True when the VFS answers for `path`."""
  for prefixes, mount in PROVIDERS.items():
    if any(path == p or path.startswith(p + "/") for p in prefixes):
      if prefixes not in _mounted:
        _mounted.add(prefixes)
        start_engines()
        mount(VFS_ROOT)
      return True
  return False

class MockFileIOInterface:
  """The FileIOInterface contract (hcq.py) over the virtual file system; host paths outside the mocks pass through."""
  def __init__(self, path:str="", flags:int=os.O_RDONLY, fd:int|None=None):
    self.path = path
    self._virtual = fd is None and _route(path)
    self.fd: int = VFS_ROOT.open(path, flags) if self._virtual else (fd if fd is not None else os.open(path, flags))
    self._host_fd = not self._virtual

  def __del__(self):
    if getattr(self, "_virtual", False): VFS_ROOT.close(self.fd)
    elif getattr(self, "_host_fd", False) and hasattr(self, "fd"): os.close(self.fd)

  def _dev(self):
    if not self._virtual or (dev:=VFS_ROOT.file(self.fd).dev) is None: raise OSError(25, f"{self.path}: not a mock device")  # ENOTTY
    return dev

  def ioctl(self, request, arg):
    """Run an ioctl on the mock device; OSError(errno) on failure, like fcntl.ioctl."""
    return self._dev().ioctl(request, arg)

  def mmap(self, start, sz, prot, flags, offset):
    """mmap the mock device; returns the host address."""
    return self._dev().mmap(start, sz, prot, flags, offset)

  def read(self, size=None, binary=False, offset=None):
    if offset is not None: self.seek(offset)
    if not self._virtual:
      with open(self.fd, "rb" if binary else "r", closefd=False) as f: return f.read(size)
    data = VFS_ROOT.read(self.fd, size)
    return data if binary else data.decode()

  def write(self, content, binary=False, offset=None):
    if offset is not None: self.seek(offset)
    if not self._virtual:
      with open(self.fd, "wb" if binary else "w", closefd=False) as f: f.write(content)
      return
    VFS_ROOT.write(self.fd, content if binary else content.encode())

  def listdir(self): return VFS_ROOT.listdir(self.path) if self._virtual else os.listdir(self.path)

  def seek(self, offset):
    if self._virtual: VFS_ROOT.file(self.fd).pos = offset
    else: os.lseek(self.fd, offset, os.SEEK_SET)

  @staticmethod
  def anon_mmap(start, sz, prot, flags, offset):
    """Anonymous host memory; MAP_LOCKED|MAP_POPULATE|MAP_HUGETLB are dropped (nothing here needs pinned memory)."""
    return host_mmap(start, sz, prot, flags & ~0x4a000, -1, offset)

  @staticmethod
  def munmap(buf, sz): return host_munmap(buf, sz)

  @staticmethod
  def exists(path): return VFS_ROOT.owns(path) if _route(path) else os.path.exists(path)

  @staticmethod
  def readlink(path): return VFS_ROOT.readlink(path) if _route(path) else os.readlink(path)

  @staticmethod
  def eventfd(initval, flags=None): return MockFileIOInterface(fd=os.eventfd(initval, flags or 0))
