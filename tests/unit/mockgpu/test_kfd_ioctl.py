"""The KFD mock at the ioctl level: topology contents, memory placement, and the real driver's errnos for bad input."""
import ctypes, errno, mmap
import pytest
from kfd_util import GTT, VRAM, Setup, call, request
from mockgpu import hostmem
from mockgpu.kfd import driver
from mockgpu.vfs import VFS

TOPO = "/sys/devices/virtual/kfd/kfd/topology/nodes"

def props(vfs:VFS, node:str) -> dict[str, int]:
  fd = vfs.open(f"{TOPO}/{node}/properties", 0)
  return {(p:=line.split())[0]: int(p[1]) for line in vfs.read(fd).decode().splitlines()}

def read(vfs:VFS, path:str) -> str: return vfs.read(vfs.open(path, 0)).decode()

def errno_of(fn, *args, **kwargs) -> int:
  with pytest.raises(OSError) as e: fn(*args, **kwargs)
  return e.value.errno

def test_topology_gfx1100_is_a_7900xtx():
  s = Setup(gpus=2)
  assert sorted(s.vfs.listdir(TOPO)) == ["0", "1", "2"]
  assert int(read(s.vfs, f"{TOPO}/0/gpu_id")) == 0  # the CPU node: tinygrad skips it
  p = props(s.vfs, "1")
  # RX 7900 XTX: 96 CUs of 2 SIMDs, 6 shader engines x 2 arrays, 16 waves per SIMD, 64 KB LDS
  assert p["gfx_target_version"] == 110000 and p["simd_count"] == 192 and p["simd_per_cu"] == 2
  assert p["array_count"] == 12 and p["simd_arrays_per_engine"] == 2 and p["cu_per_simd_array"] == 8
  assert p["max_waves_per_simd"] == 16 and p["lds_size_in_kb"] == 64 and p["num_xcc"] == 1 and p["drm_render_minor"] == 128
  assert props(s.vfs, "2")["drm_render_minor"] == 129 and int(read(s.vfs, f"{TOPO}/2/gpu_id")) != int(read(s.vfs, f"{TOPO}/1/gpu_id"))
  ip = "/sys/class/drm/renderD128/device/ip_discovery/die/0"
  versions = {hw: tuple(int(read(s.vfs, f"{ip}/{hw}/0/{k}")) for k in ("major", "minor", "revision")) for hw in s.vfs.listdir(ip)}
  assert versions == {"11": (11, 0, 0), "42": (6, 0, 0), "108": (4, 3, 0)}

def test_topology_follows_arch_table():
  s = Setup(gpus=1, arch="gfx1201")
  assert props(s.vfs, "1")["gfx_target_version"] == 120001
  assert read(s.vfs, "/sys/class/drm/renderD128/device/ip_discovery/die/0/11/0/major").strip() == "12"
  with pytest.raises(RuntimeError, match="not emulated"): Setup(gpus=1, arch="gfx9999")

def test_version_and_unknown_ioctls():
  s = Setup(gpus=1)
  v = call(s.proc, "GET_VERSION")
  assert (v.major_version, v.minor_version) >= (1, 14)
  req, st_t = request("GET_VERSION")
  assert errno_of(s.proc.ioctl, (req & ~0xff) | 0x7f, st_t()) == errno.EINVAL            # no such command number
  assert errno_of(s.proc.ioctl, (req & ~0xff00) | (ord("X") << 8), st_t()) == errno.EINVAL  # not a KFD ioctl
  big, _ = request("GET_VERSION", size=ctypes.sizeof(st_t) + 64)
  assert errno_of(s.proc.ioctl, big, st_t()) == errno.EFAULT                                 # _IOC_SIZE beyond the argument

def test_the_render_node_answers_the_device_info_query_and_refuses_the_rest():
  # tinygrad's PMC counters (PMC=1, default with VIZ>=2) read the active-WGP bitmap with DRM_IOCTL_AMDGPU_INFO's DEV_INFO query
  from tinygrad.runtime.autogen import amdgpu_drm
  s = Setup(gpus=1)
  render = s.vfs.file(s.drm[0]).dev
  idir, base, nr, st_t = amdgpu_drm.DRM_IOCTL_AMDGPU_INFO.args
  request = (idir << 30) | (ctypes.sizeof(st_t) << 16) | (base << 8) | nr
  info = amdgpu_drm.struct_drm_amdgpu_info_device()
  arg = st_t(return_pointer=ctypes.addressof(info), return_size=ctypes.sizeof(info), query=amdgpu_drm.AMDGPU_INFO_DEV_INFO)
  assert render.ioctl(request, arg) == 0
  # the RX 7900 XTX: 6 engines x 2 arrays of 8 CUs, every CU active (amdgpu's layout: [se % 4][sa + (se // 4) * 2])
  assert (info.num_shader_engines, info.num_shader_arrays_per_engine, info.num_cu_per_sh, info.cu_active_number) == (6, 2, 8, 96)
  assert [[info.cu_bitmap[i][j] for j in range(4)] for i in range(4)] == [[0xff] * 4] * 2 + [[0xff, 0xff, 0, 0]] * 2
  with pytest.raises(OSError) as e: render.ioctl(request, st_t(return_pointer=ctypes.addressof(info), return_size=8, query=0x19))
  assert e.value.errno == errno.ENOSYS and "query 0x19" in str(e.value)
  with pytest.raises(OSError) as e: render.ioctl(request, st_t(return_pointer=1 << 47, return_size=16, query=amdgpu_drm.AMDGPU_INFO_DEV_INFO))
  assert e.value.errno == errno.EFAULT
  with pytest.raises(OSError) as e: render.ioctl((idir << 30) | (ctypes.sizeof(st_t) << 16) | (base << 8) | (nr + 1), st_t())
  assert e.value.errno == errno.ENOSYS and "DRM ioctl" in str(e.value)

def test_alloc_places_memory_at_the_requested_va_and_aliases_cpu_and_gpu_views():
  s = Setup(gpus=1)
  mem, va = s.alloc(0x3000)
  assert mem.va_addr == va and mem.handle != 0
  ctypes.memmove(va + 0x1000, b"hello", 5)
  assert s.proc.gpus[0].memory.read(va + 0x1000, 5) == b"hello"
  s.proc.gpus[0].memory.write(va + 0x2000, b"world")
  assert ctypes.string_at(va + 0x2000, 5) == b"world"

def test_memory_errnos():
  s = Setup(gpus=1)
  gid = s.gpu_ids[0]
  assert errno_of(call, s.proc, "ALLOC_MEMORY_OF_GPU", va_addr=0x10000000, size=0, gpu_id=gid, flags=VRAM) == errno.EINVAL
  assert errno_of(call, s.proc, "ALLOC_MEMORY_OF_GPU", va_addr=0x10000000, size=0x1000, gpu_id=0x4242, flags=VRAM) == errno.EINVAL
  assert errno_of(call, s.proc, "FREE_MEMORY_OF_GPU", handle=0xdead) == errno.EINVAL
  mem, _ = s.alloc(0x1000, GTT)
  assert errno_of(call, s.proc, "FREE_MEMORY_OF_GPU", handle=mem.handle) == errno.EBUSY       # still mapped to the GPU
  s.map(mem.handle, 0, "UNMAP_MEMORY_FROM_GPU")
  assert errno_of(s.map, mem.handle, 0, "UNMAP_MEMORY_FROM_GPU") == errno.EINVAL              # not mapped any more
  call(s.proc, "FREE_MEMORY_OF_GPU", handle=mem.handle)
  assert errno_of(call, s.proc, "FREE_MEMORY_OF_GPU", handle=mem.handle) == errno.EINVAL      # double free
  ids = (ctypes.c_uint32 * 1)(gid)
  assert errno_of(call, s.proc, "MAP_MEMORY_TO_GPU", handle=mem.handle, device_ids_array_ptr=ctypes.addressof(ids), n_devices=1) == errno.EINVAL

def test_alloc_without_acquire_vm_fails():
  vfs = VFS()
  proc = driver.install(vfs, 1, "gfx1100")
  assert errno_of(call, proc, "ALLOC_MEMORY_OF_GPU", va_addr=0x10000000, size=0x1000, gpu_id=proc.gpus[0].gpu_id, flags=VRAM) == errno.EINVAL
  assert errno_of(call, proc, "ACQUIRE_VM", drm_fd=12345, gpu_id=proc.gpus[0].gpu_id) == errno.EINVAL  # not a render node fd

def test_vram_exhaustion_is_enomem(monkeypatch):
  monkeypatch.setenv("MOCKGPU_AMD_VRAM", "1M")
  s = Setup(gpus=1)
  mem, _ = s.alloc(0x80000, map_gpus=())
  assert errno_of(call, s.proc, "ALLOC_MEMORY_OF_GPU", va_addr=0x10000000, size=0x100000, gpu_id=s.gpu_ids[0], flags=VRAM) == errno.ENOMEM
  call(s.proc, "FREE_MEMORY_OF_GPU", handle=mem.handle)
  s.alloc(0x100000, map_gpus=())  # the freed range is reusable

def test_userptr_must_be_mapped_host_memory():
  s = Setup(gpus=1)
  flags = 1 << 2 | 1 << 31  # USERPTR | WRITABLE
  buf = hostmem.host_mmap(0, 0x2000, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
  mem = call(s.proc, "ALLOC_MEMORY_OF_GPU", va_addr=buf, size=0x2000, gpu_id=s.gpu_ids[0], flags=flags, mmap_offset=buf)
  s.map(mem.handle, 0)
  ctypes.memmove(buf, b"abc", 3)
  assert s.proc.gpus[0].memory.read(buf, 3) == b"abc"
  hole = hostmem.host_mmap(0, 0x2000, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
  hostmem.host_munmap(hole + 0x1000, 0x1000)
  assert errno_of(call, s.proc, "ALLOC_MEMORY_OF_GPU", va_addr=hole, size=0x2000, gpu_id=s.gpu_ids[0], flags=flags, mmap_offset=hole) == errno.EFAULT
  assert errno_of(call, s.proc, "ALLOC_MEMORY_OF_GPU", va_addr=buf, size=0x1000, gpu_id=s.gpu_ids[0], flags=flags, mmap_offset=buf+8) == errno.EINVAL

def test_queue_and_event_errnos():
  s = Setup(gpus=1)
  ring, ring_va = s.alloc(0x1000, GTT)
  gart, gart_va = s.alloc(0x1000, GTT)
  q = dict(ring_base_address=ring_va, ring_size=0x1000, gpu_id=s.gpu_ids[0], queue_type=1, queue_percentage=100, queue_priority=7,
           write_pointer_address=gart_va + 56, read_pointer_address=gart_va + 128)
  assert errno_of(call, s.proc, "CREATE_QUEUE", **{**q, "ring_size": 0x1800}) == errno.EINVAL     # not a power of two
  assert errno_of(call, s.proc, "CREATE_QUEUE", **{**q, "ring_base_address": 0x1000}) == errno.EINVAL  # ring not GPU-mapped
  assert errno_of(call, s.proc, "CREATE_QUEUE", **{**q, "queue_priority": 16}) == errno.EINVAL
  assert errno_of(call, s.proc, "CREATE_QUEUE", **{**q, "queue_type": 9}) == driver.ENOTSUPP
  made = call(s.proc, "CREATE_QUEUE", **q)
  assert made.doorbell_offset >> 62 == 3 and made.doorbell_offset & 0x1fff == 0
  call(s.proc, "DESTROY_QUEUE", queue_id=made.queue_id)
  assert errno_of(call, s.proc, "DESTROY_QUEUE", queue_id=made.queue_id) == errno.EINVAL
  assert errno_of(call, s.proc, "DESTROY_EVENT", event_id=77) == errno.EINVAL
  assert errno_of(call, s.proc, "CREATE_EVENT", event_type=0) == errno.EINVAL  # a signal event needs the event page first

def test_signal_event_through_mailbox_and_wait():
  from tinygrad.runtime.autogen import kfd
  s = Setup(gpus=1)
  page, page_va = s.alloc(0x8000, GTT)
  ev = call(s.proc, "CREATE_EVENT", event_page_offset=page.handle, event_type=0, auto_reset=1)
  mem_ev = call(s.proc, "CREATE_EVENT", event_type=8)
  arr = (kfd.struct_kfd_event_data * 2)(kfd.struct_kfd_event_data(event_id=ev.event_id), kfd.struct_kfd_event_data(event_id=mem_ev.event_id))
  w = call(s.proc, "WAIT_EVENTS", events_ptr=ctypes.addressof(arr), num_events=2, wait_for_all=0, timeout=1)
  assert w.wait_result == 1  # timeout
  ctypes.c_uint64.from_address(page_va + ev.event_slot_index * 8).value = ev.event_id  # what RELEASE_MEM's mailbox write does
  s.proc.gpus[0].interrupt(None, "CP", ev.event_id)
  w = call(s.proc, "WAIT_EVENTS", events_ptr=ctypes.addressof(arr), num_events=2, wait_for_all=0, timeout=1000)
  assert w.wait_result == 0 and arr[1].memory_exception_data.gpu_id == 0
  bad = (kfd.struct_kfd_event_data * 1)(kfd.struct_kfd_event_data(event_id=4000))
  assert errno_of(call, s.proc, "WAIT_EVENTS", events_ptr=ctypes.addressof(bad), num_events=1, timeout=1) == errno.EINVAL

@pytest.mark.parametrize("flags", [VRAM, GTT])
def test_mmap_through_another_gpus_render_node_is_refused(flags):
  # mmap offsets belong to the render node of the GPU that allocated the buffer: GPU 1's node cannot map GPU 0's buffer
  s = Setup(gpus=2)
  va = hostmem.host_mmap(0, 4096, 0, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | 0x4000, -1, 0)
  mem = call(s.proc, "ALLOC_MEMORY_OF_GPU", va_addr=va, size=4096, gpu_id=s.gpu_ids[0], flags=flags)
  other = s.vfs.file(s.drm[1]).dev
  with pytest.raises(OSError) as e: other.mmap(va, 4096, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED | 0x10, mem.mmap_offset)
  assert e.value.errno == errno.EINVAL and "renderD128" in str(e.value) and "renderD129" in str(e.value)
  assert s.vfs.file(s.drm[0]).dev.mmap(va, 4096, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED | 0x10, mem.mmap_offset) == va
