"""Helpers for driving the KFD mock directly with tinygrad's UAPI structs (no tinygrad runtime involved)."""
from __future__ import annotations
import ctypes, mmap, os
from tinygrad.runtime.autogen import kfd
from mockgpu import hostmem
from mockgpu.kfd import driver
from mockgpu.vfs import VFS

RW = mmap.PROT_READ | mmap.PROT_WRITE
VRAM = kfd.KFD_IOC_ALLOC_MEM_FLAGS_VRAM | kfd.KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE
GTT = kfd.KFD_IOC_ALLOC_MEM_FLAGS_GTT | kfd.KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE | kfd.KFD_IOC_ALLOC_MEM_FLAGS_UNCACHED

def request(name:str, size:int|None=None) -> tuple[int, type]:
  """The ioctl request number tinygrad would send for AMDKFD_IOC_<name> (optionally with a different _IOC_SIZE)."""
  idir, base, nr, st_t = getattr(kfd, f"AMDKFD_IOC_{name}").args
  return (idir << 30) | ((ctypes.sizeof(st_t) if size is None else size) << 16) | (base << 8) | nr, st_t

def call(proc:driver.KFDProcess, name:str, **fields):
  """Issue AMDKFD_IOC_<name> with `fields`; returns the struct the driver wrote back."""
  req, st_t = request(name)
  st = st_t(**fields)
  proc.ioctl(req, st)
  return st

class Setup:
  """A KFD process with `gpus` GPUs of `arch`, VMs acquired on all of them."""
  def __init__(self, gpus:int=2, arch:str="gfx1100"):
    self.vfs = VFS()
    self.proc = driver.install(self.vfs, gpus, arch)
    self.gpu_ids = [g.gpu_id for g in self.proc.gpus]
    self.drm = [self.vfs.open(f"/dev/dri/renderD{g.render_minor}", os.O_RDWR) for g in self.proc.gpus]
    for gid, fd in zip(self.gpu_ids, self.drm): call(self.proc, "ACQUIRE_VM", drm_fd=fd, gpu_id=gid)

  def alloc(self, size:int, flags:int=VRAM, gpu:int=0, map_gpus:tuple[int, ...]=(0,)) -> tuple[object, int]:
    """Reserve VA, allocate, CPU-map the buffer at its VA through the render node and map it to `map_gpus`; returns (args, va)."""
    va = hostmem.host_mmap(0, size, 0, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | 0x4000, -1, 0)
    mem = call(self.proc, "ALLOC_MEMORY_OF_GPU", va_addr=va, size=size, gpu_id=self.gpu_ids[gpu], flags=flags)
    assert self.vfs.file(self.drm[gpu]).dev.mmap(va, size, RW, mmap.MAP_SHARED | 0x10, mem.mmap_offset) == va
    for g in map_gpus: self.map(mem.handle, g)
    return mem, va

  def map(self, handle:int, gpu:int, name:str="MAP_MEMORY_TO_GPU"):
    ids = (ctypes.c_uint32 * 1)(self.gpu_ids[gpu])
    return call(self.proc, name, handle=handle, device_ids_array_ptr=ctypes.addressof(ids), n_devices=1)
