"""The mock NVIDIA driver's RM escapes, controls and UVM commands called directly with tinygrad's own nv_570 structs: the
objects tinygrad builds, and the status codes the real driver returns for bad input (unknown handles, parents and classes,
double frees, wrong parameter sizes, overlapping or unknown UVM ranges, out of memory), each named on stderr."""
import ctypes, errno, mmap
import pytest
from tinygrad.runtime.autogen import nv_570 as nv
from mockgpu.hostmem import host_mmap, host_munmap
from mockgpu.nv import driver
from mockgpu.vfs import VFS

class Session:
  """A driver over a fresh VFS, with tinygrad's call shapes (ops_nv.py NVKIface) as helpers."""
  def __init__(self, gpus:int=1, arch:str="sm_89"):
    self.vfs = VFS()
    self.drv = driver.install(self.vfs, gpus, arch)
    self.ctl_fd = self.vfs.open("/dev/nvidiactl", 0)
    self.ctl = self.vfs.file(self.ctl_fd).dev
    self.uvm_file = self.vfs.file(self.vfs.open("/dev/nvidia-uvm", 0)).dev
    self.root = self.alloc(0, nv.NV01_ROOT_CLIENT, root=0)

  def escape(self, nr:int, st, dev=None):
    (dev or self.ctl).ioctl((3 << 30) | (ctypes.sizeof(st) & 0x1fff) << 16 | ord("F") << 8 | nr, st)
    return st

  def alloc_status(self, parent:int, cls:int, params=None, root=None) -> nv.NVOS21_PARAMETERS:
    return self.escape(nv.NV_ESC_RM_ALLOC, nv.NVOS21_PARAMETERS(hRoot=self.root if root is None else root, hObjectParent=parent, hClass=cls,
      pAllocParms=ctypes.cast(ctypes.byref(params), ctypes.c_void_p) if params is not None else None))

  def alloc(self, parent:int, cls:int, params=None, root=None) -> int:
    made = self.alloc_status(parent, cls, params, root)
    assert made.status == 0, nv.nv_status_codes[made.status]
    return made.hObjectNew

  def control_status(self, obj:int, cmd:int, params, size:int|None=None) -> int:
    return self.escape(nv.NV_ESC_RM_CONTROL, nv.NVOS54_PARAMETERS(hClient=self.root, hObject=obj, cmd=cmd,
      paramsSize=ctypes.sizeof(params) if size is None else size, params=ctypes.cast(ctypes.byref(params), ctypes.c_void_p))).status

  def free_status(self, parent:int, handle:int) -> int:
    return self.escape(nv.NV_ESC_RM_FREE, nv.NVOS00_PARAMETERS(hRoot=self.root, hObjectParent=parent, hObjectOld=handle)).status

  def uvm(self, cmd:int, params) -> int:
    self.uvm_file.ioctl(cmd, params)
    return params.rmStatus

  def device(self) -> tuple[int, int]:
    dev = self.alloc(self.root, nv.NV01_DEVICE_0, nv.NV0080_ALLOC_PARAMETERS(deviceId=0, hClientShare=self.root))
    return dev, self.alloc(dev, nv.NV20_SUBDEVICE_0, nv.NV2080_ALLOC_PARAMETERS())

  def vram(self, dev:int, size:int) -> nv.NVOS21_PARAMETERS:
    params = nv.NV_MEMORY_ALLOCATION_PARAMS(owner=self.root, size=size, limit=size - 1, type=nv.NVOS32_TYPE_IMAGE)
    return self.alloc_status(dev, nv.NV1_MEMORY_USER, params)

def name(status:int) -> str: return nv.nv_status_codes[status]

def test_the_object_tree_and_its_controls():
  s = Session()
  dev, sub = s.device()
  ver = nv.NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_V2_PARAMS()
  assert s.control_status(s.root, nv.NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2, ver) == 0 and ver.driverVersionBuffer.decode().startswith("570.")
  count = nv.NV0080_CTRL_GPU_GET_CLASSLIST_PARAMS()
  assert s.control_status(dev, nv.NV0080_CTRL_CMD_GPU_GET_CLASSLIST, count) == 0
  classes = (ctypes.c_uint32 * count.numClasses)()
  lst = nv.NV0080_CTRL_GPU_GET_CLASSLIST_PARAMS(numClasses=count.numClasses, classList=ctypes.addressof(classes))
  assert s.control_status(dev, nv.NV0080_CTRL_CMD_GPU_GET_CLASSLIST, lst) == 0
  assert {nv.ADA_COMPUTE_A, nv.AMPERE_CHANNEL_GPFIFO_A, nv.AMPERE_DMA_COPY_B, nv.TURING_USERMODE_A} <= set(classes)
  infos = (nv.NV2080_CTRL_GR_INFO * 2)(nv.NV2080_CTRL_GR_INFO(index=nv.NV2080_CTRL_GR_INFO_INDEX_SM_VERSION),
                                       nv.NV2080_CTRL_GR_INFO(index=nv.NV2080_CTRL_GR_INFO_INDEX_MAX_WARPS_PER_SM))
  gr = nv.NV2080_CTRL_GR_GET_INFO_PARAMS(grInfoListSize=2, grInfoList=ctypes.addressof(infos))
  assert s.control_status(sub, nv.NV2080_CTRL_CMD_GR_GET_INFO, gr) == 0 and [i.data for i in infos] == [0x809, 48]   # Ada: 8.9, 48 warps/SM
  cards = (nv.nv_ioctl_card_info_t * 64)()
  s.escape(nv.NV_ESC_CARD_INFO, cards)
  assert [c.valid for c in cards[:2]] == [1, 0] and cards[0].pci_info.vendor_id == 0x10de and cards[0].pci_info.device_id == 0x2684

def test_bad_handles_classes_and_parents_fail_with_rm_status_codes(capfd):
  s = Session()
  dev, sub = s.device()
  assert name(s.alloc_status(0xdead, nv.NV20_SUBDEVICE_0).status) == "NV_ERR_INVALID_OBJECT_PARENT"
  assert name(s.alloc_status(dev, 0x1234).status) == "NV_ERR_INVALID_CLASS"
  assert name(s.alloc_status(sub, nv.HOPPER_COMPUTE_A).status) == "NV_ERR_INVALID_CLASS"   # not on an sm_89 board
  assert name(s.alloc_status(sub, nv.NV1_MEMORY_USER, nv.NV_MEMORY_ALLOCATION_PARAMS(size=4096)).status) == "NV_ERR_INVALID_OBJECT_PARENT"
  assert name(s.alloc_status(dev, nv.NV20_SUBDEVICE_0, root=0x777).status) == "NV_ERR_INVALID_CLIENT"
  assert name(s.alloc_status(dev, nv.NV1_MEMORY_USER).status) == "NV_ERR_INVALID_ARGUMENT"   # no parameters
  assert name(s.alloc_status(s.root, nv.NV01_DEVICE_0, nv.NV0080_ALLOC_PARAMETERS(deviceId=3)).status) == "NV_ERR_INVALID_ARGUMENT"
  prof = nv.NVB2CC_ALLOC_PARAMETERS(hClientTarget=s.root)
  assert name(s.alloc_status(sub, nv.MAXWELL_PROFILER_DEVICE, prof).status) == "NV_ERR_INVALID_CLASS"
  mem = s.vram(dev, 1 << 20).hObjectNew
  assert s.free_status(dev, mem) == 0
  assert name(s.free_status(dev, mem)) == "NV_ERR_INVALID_OBJECT_HANDLE"   # double free
  err = capfd.readouterr().err
  assert "NV_ESC_RM_ALLOC failed: NV_ERR_INVALID_CLASS: class 0x1234 is not offered by the sm_89 board" in err
  assert "PMA profiling is not emulated" in err and "NV_ESC_RM_FREE failed: NV_ERR_INVALID_OBJECT_HANDLE" in err

def test_controls_check_their_object_and_parameter_size():
  s = Session()
  dev, sub = s.device()
  gid = nv.NV2080_CTRL_GPU_GET_GID_INFO_PARAMS(flags=nv.NV2080_GPU_CMD_GPU_GET_GID_FLAGS_FORMAT_BINARY, length=16)
  assert name(s.control_status(sub, nv.NV2080_CTRL_CMD_GPU_GET_GID_INFO, gid, size=8)) == "NV_ERR_INVALID_PARAM_STRUCT"
  assert name(s.control_status(dev, nv.NV2080_CTRL_CMD_GPU_GET_GID_INFO, gid)) == "NV_ERR_NOT_SUPPORTED"   # a subdevice control on a device
  assert name(s.control_status(sub, 0x20801234, gid)) == "NV_ERR_NOT_SUPPORTED"
  assert name(s.control_status(0xbad, nv.NV2080_CTRL_CMD_GPU_GET_GID_INFO, gid)) == "NV_ERR_INVALID_OBJECT_HANDLE"
  assert s.control_status(sub, nv.NV2080_CTRL_CMD_GPU_GET_GID_INFO, gid) == 0 and bytes(gid.data[:4]) == b"GPU-"

def test_escapes_with_the_wrong_size_are_einval():
  s = Session()
  with pytest.raises(OSError) as e: s.ctl.ioctl((3 << 30) | 8 << 16 | ord("F") << 8 | nv.NV_ESC_RM_ALLOC, nv.NVOS21_PARAMETERS())
  assert e.value.errno == errno.EINVAL and "NVOS21_PARAMETERS is 32" in str(e.value)
  with pytest.raises(OSError) as e: s.uvm_file.ioctl(nv.UVM_FREE, nv.UVM_INITIALIZE_PARAMS())
  assert e.value.errno == errno.EINVAL

def test_vram_runs_out_as_the_driver_reports_it(monkeypatch):
  monkeypatch.setenv("MOCKGPU_NV_VRAM", "4M")
  s = Session()
  dev, _ = s.device()
  assert s.vram(dev, 3 << 20).status == 0
  assert name(s.vram(dev, 2 << 20).status) == "NV_ERR_NO_MEMORY"   # tinygrad turns this into MemoryError (its LRU frees and retries)

def test_uvm_ranges():
  s = Session()
  dev, sub = s.device()
  base = 0x2000_0000_0000
  assert name(s.uvm(nv.UVM_CREATE_EXTERNAL_RANGE, nv.UVM_CREATE_EXTERNAL_RANGE_PARAMS(base=base, length=0x10000))) == "NV_ERR_ILLEGAL_ACTION"
  assert s.uvm(nv.UVM_INITIALIZE, nv.UVM_INITIALIZE_PARAMS()) == 0
  gid = nv.NV2080_CTRL_GPU_GET_GID_INFO_PARAMS(flags=nv.NV2080_GPU_CMD_GPU_GET_GID_FLAGS_FORMAT_BINARY, length=16)
  s.control_status(sub, nv.NV2080_CTRL_CMD_GPU_GET_GID_INFO, gid)
  uuid = nv.struct_nv_uuid(uuid=(ctypes.c_ubyte * 16)(*gid.data[:16]))
  assert name(s.uvm(nv.UVM_REGISTER_GPU, nv.UVM_REGISTER_GPU_PARAMS(gpu_uuid=nv.struct_nv_uuid()))) == "NV_ERR_GPU_UUID_NOT_FOUND"
  assert s.uvm(nv.UVM_REGISTER_GPU, nv.UVM_REGISTER_GPU_PARAMS(gpu_uuid=uuid)) == 0
  def create(b, length): return s.uvm(nv.UVM_CREATE_EXTERNAL_RANGE, nv.UVM_CREATE_EXTERNAL_RANGE_PARAMS(base=b, length=length))
  assert create(base, 0x10000) == 0
  assert name(create(base + 0x8000, 0x10000)) == "NV_ERR_UVM_ADDRESS_IN_USE"
  assert name(create(base + 0x10100, 0x1000)) == "NV_ERR_INVALID_ADDRESS"
  assert name(create(base + 0x100000, 1 << 62)) == "NV_ERR_INVALID_ADDRESS"   # past the GPU MMU's 49-bit virtual address space
  assert name(create((1 << 49) - 0x1000, 0x2000)) == "NV_ERR_INVALID_ADDRESS" and create((1 << 49) - 0x1000, 0x1000) == 0
  mem = s.vram(dev, 0x10000).hObjectNew
  attrs = (nv.UvmGpuMappingAttributes * 256)(nv.UvmGpuMappingAttributes(gpuUuid=uuid, gpuMappingType=1))
  def map_at(b):
    return s.uvm(nv.UVM_MAP_EXTERNAL_ALLOCATION, nv.UVM_MAP_EXTERNAL_ALLOCATION_PARAMS(base=b, length=0x10000, hClient=s.root, hMemory=mem,
                                                                                    gpuAttributesCount=1, perGpuAttributes=attrs))
  assert name(map_at(base + 0x100000)) == "NV_ERR_INVALID_ADDRESS"   # outside every range
  assert map_at(base) == 0
  gpu = s.drv.gpus[0]
  gpu.memory.write(base + 8, b"\x2a")
  assert gpu.memory.read(base + 8, 1) == b"\x2a"
  assert s.free_status(dev, mem) == 0 and gpu.memory.read(base + 8, 1) == b"\x2a"   # UVM's mapping keeps the pages alive
  assert s.uvm(nv.UVM_FREE, nv.UVM_FREE_PARAMS(base=base, length=0x10000)) == 0
  assert gpu.memory.find(base) is None
  assert name(s.uvm(nv.UVM_FREE, nv.UVM_FREE_PARAMS(base=base, length=0x10000))) == "NV_ERR_INVALID_ADDRESS"

def test_host_memory_is_described_never_replaced():
  s = Session()
  dev, _ = s.device()
  page = host_mmap(0, 0x2000, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED | mmap.MAP_ANONYMOUS, -1, 0)
  try:
    ctypes.memmove(page, b"host data", 9)
    gpu_fd = s.vfs.open("/dev/nvidia0", 0)
    def os_descriptor(addr, limit, handle):
      made = nv.nv_ioctl_nvos02_parameters_with_fd(params=nv.NVOS02_PARAMETERS(hRoot=s.root, hObjectParent=dev, hObjectNew=handle,
        hClass=nv.NV01_MEMORY_SYSTEM_OS_DESCRIPTOR, pMemory=addr, limit=limit), fd=-1)
      return s.escape(nv.NV_ESC_RM_ALLOC_MEMORY, made, s.vfs.file(gpu_fd).dev).params.status
    assert name(os_descriptor(page + 8, 0xfff, 0x1001)) == "NV_ERR_INVALID_ADDRESS"   # not page-aligned
    assert os_descriptor(page, 0x1fff, 0x1002) == 0
    assert name(os_descriptor(page, 0x1fff, 0x1002)) == "NV_ERR_INSERT_DUPLICATE_NAME"
    assert ctypes.string_at(page, 9) == b"host data"
  finally: host_munmap(page, 0x2000)
