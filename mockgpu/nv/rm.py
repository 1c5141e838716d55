"""The resource manager (RM) of the mock NVIDIA driver: the object tree tinygrad builds with NV_ESC_RM_ALLOC / ALLOC_MEMORY /
FREE, and the CPU and DMA mappings of its memory objects.

Objects live under a client (NV01_ROOT_CLIENT); each has a parent, a class and, below a device, the GPU it belongs to.
Allocation parameters are read in place from the caller's struct (pAllocParms; tinygrad passes no size, so the struct is
the class's, as RM looks it up). Bad input fails with the status the real RM returns (`RMError`: unknown client, parent or
handle, a class the board does not offer, a duplicate handle, missing parameters, out of memory), never an exception.
"""
from __future__ import annotations
import ctypes
from dataclasses import dataclass, field
from typing import Any, Callable
from tinygrad.runtime.autogen import nv_570 as nv
from mockgpu.hostmem import PAGE, Heap, alias_shared, is_mapped, round_up
from mockgpu.nv.boards import classes
from mockgpu.nv.gpu import NVGPU
from mockgpu.nv.memory import MemObject

COMPUTE_CLASSES = (nv.AMPERE_COMPUTE_B, nv.ADA_COMPUTE_A, nv.HOPPER_COMPUTE_A)
COPY_CLASSES = (nv.AMPERE_DMA_COPY_B,)
USERMODE_CLASSES = (nv.TURING_USERMODE_A, nv.HOPPER_USERMODE_A)
GPFIFO_CLASSES = (nv.AMPERE_CHANNEL_GPFIFO_A,)
MEMORY_CLASSES = (nv.NV1_MEMORY_USER, nv.NV1_MEMORY_SYSTEM, nv.NV01_MEMORY_SYSTEM_OS_DESCRIPTOR)
NOT_EMULATED = {nv.MAXWELL_PROFILER_DEVICE: "PMA profiling is not emulated (tinygrad enables it with VIZ>=2 and PROFILE; set PMA=0)",
                nv.NVC9B0_VIDEO_DECODER: "the video decoder (NVDEC) is not emulated", nv.NVCFB0_VIDEO_DECODER: "the video decoder is not emulated"}
FIRST_HANDLE, FIRST_CLIENT = 0xcaf00000, 0xc1d00000   # RM-chosen handles are large (tinygrad tells its own host handles by that)

class RMError(Exception):
  """An RM call failed with `status` (an NV_ERR_* code); the message says why."""
  def __init__(self, status:int, message:str):
    self.status = status
    super().__init__(f"{nv.nv_status_codes.get(status, status)}: {message}")

@dataclass(eq=False)
class RMObject:
  """One RM object. `data` is what the object is: a MemObject, a channel engine, a channel group's state, ..."""
  handle: int
  cls: int
  parent: RMObject | None
  gpu: NVGPU | None = None
  data: Any = None
  children: list = field(default_factory=list)

@dataclass(eq=False)
class ChannelGroup:
  """A KEPLER_CHANNEL_GROUP_A: its channels run once the group is scheduled (NVA06C GPFIFO_SCHEDULE)."""
  channels: list = field(default_factory=list)
  scheduled: bool = False

def client_of(obj:RMObject) -> int:
  """The handle of the client an object belongs to (the root of its tree)."""
  while obj.parent is not None: obj = obj.parent
  return obj.handle

def params_of(st_t:type, ptr:int|None, what:str):
  """The caller's parameter struct at `ptr`, in place (RMError when it is missing or unreadable)."""
  if not ptr: raise RMError(nv.NV_ERR_INVALID_ARGUMENT, f"{what} needs its {st_t.__name__} parameters")
  if not is_mapped(ptr, ctypes.sizeof(st_t)): raise RMError(nv.NV_ERR_INVALID_POINTER, f"{what}: parameters at {ptr:#x} are not readable")
  return st_t.from_address(ptr)

class ResourceManager:
  """The objects of every client of this process, over `gpus` and the process's system-memory heap `sysmem`."""
  def __init__(self, gpus:list[NVGPU], sysmem:Heap):
    self.gpus, self.sysmem = gpus, sysmem
    self.objects: dict[tuple[int, int], RMObject] = {}   # (client, handle) -> object
    self._next_handle, self._next_client = FIRST_HANDLE, FIRST_CLIENT
    self.allocators: dict[int, tuple[tuple[int, ...], type | None, Callable]] = {   # class -> (parent classes, params struct, handler)
      nv.NV01_DEVICE_0: ((nv.NV01_ROOT_CLIENT,), nv.NV0080_ALLOC_PARAMETERS, self._device),
      nv.NV20_SUBDEVICE_0: ((nv.NV01_DEVICE_0,), None, self._plain),
      nv.NV01_MEMORY_VIRTUAL: ((nv.NV01_DEVICE_0,), nv.NV_MEMORY_VIRTUAL_ALLOCATION_PARAMS, self._virtual),
      nv.FERMI_VASPACE_A: ((nv.NV01_DEVICE_0,), nv.NV_VASPACE_ALLOCATION_PARAMETERS, self._plain),
      nv.KEPLER_CHANNEL_GROUP_A: ((nv.NV01_DEVICE_0,), nv.NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS, lambda o, p: ChannelGroup()),
      nv.FERMI_CONTEXT_SHARE_A: ((nv.KEPLER_CHANNEL_GROUP_A,), nv.NV_CTXSHARE_ALLOCATION_PARAMETERS, self._context_share),
      nv.NV1_MEMORY_USER: ((nv.NV01_DEVICE_0,), nv.NV_MEMORY_ALLOCATION_PARAMS, self._memory),
      nv.NV1_MEMORY_SYSTEM: ((nv.NV01_DEVICE_0,), nv.NV_MEMORY_ALLOCATION_PARAMS, self._memory),
      nv.GT200_DEBUGGER: ((nv.NV01_DEVICE_0,), nv.NV83DE_ALLOC_PARAMETERS, self._debugger),
      **{c: ((nv.NV20_SUBDEVICE_0,), None, self._plain) for c in USERMODE_CLASSES},
      **{c: ((nv.KEPLER_CHANNEL_GROUP_A, nv.NV01_DEVICE_0), nv.NV_CHANNELGPFIFO_ALLOCATION_PARAMETERS, self._gpfifo) for c in GPFIFO_CLASSES},
      **{c: (GPFIFO_CLASSES, None, self._engine_class) for c in COMPUTE_CLASSES + COPY_CLASSES}}

  # ---- lookup ----
  def get(self, client:int, handle:int, classes:tuple[int, ...]|None=None, what:str="object",
          missing:int=nv.NV_ERR_INVALID_OBJECT_HANDLE) -> RMObject:
    """The object `handle` of `client`, optionally required to be of one of `classes` (`missing`: the status when there is none)."""
    if (client, client) not in self.objects: raise RMError(nv.NV_ERR_INVALID_CLIENT, f"unknown client handle {client:#x}")
    if (obj := self.objects.get((client, handle))) is None: raise RMError(missing, f"unknown {what} handle {handle:#x}")
    if classes is not None and obj.cls not in classes:
      raise RMError(nv.NV_ERR_INVALID_OBJECT_HANDLE, f"handle {handle:#x} is a class {obj.cls:#x} object, not a {what}")
    return obj

  def memory(self, client:int, handle:int) -> MemObject:
    return self.get(client, handle, MEMORY_CLASSES, "memory").data

  def _new_handle(self, client:int, requested:int) -> int:
    if requested:
      if (client, requested) in self.objects: raise RMError(nv.NV_ERR_INSERT_DUPLICATE_NAME, f"handle {requested:#x} is already in use")
      return requested
    while (client, self._next_handle) in self.objects: self._next_handle += 1
    self._next_handle += 1
    return self._next_handle - 1

  # ---- NV_ESC_RM_ALLOC / ALLOC_MEMORY / FREE ----
  def alloc(self, client:int, parent:int, requested:int, cls:int, params_ptr:int|None) -> int:
    """Create an object of class `cls` under `parent`; returns its handle."""
    if cls == nv.NV01_ROOT_CLIENT:
      handle = requested or self._next_client
      if (handle, handle) in self.objects: raise RMError(nv.NV_ERR_INSERT_DUPLICATE_NAME, f"client {handle:#x} exists")
      self._next_client += 1
      self.objects[(handle, handle)] = RMObject(handle, cls, None)
      return handle
    owner = self.get(client, parent, what="parent", missing=nv.NV_ERR_INVALID_OBJECT_PARENT)
    if cls in NOT_EMULATED: raise RMError(nv.NV_ERR_INVALID_CLASS, f"class {cls:#x}: {NOT_EMULATED[cls]}")
    if (spec := self.allocators.get(cls)) is None or (owner.gpu is not None and cls not in classes(owner.gpu.board)):
      board = f"the {owner.gpu.board.arch} board" if owner.gpu is not None else "this driver"
      raise RMError(nv.NV_ERR_INVALID_CLASS, f"class {cls:#x} is not offered by {board}")
    parents, st_t, handler = spec
    if owner.cls not in parents:
      raise RMError(nv.NV_ERR_INVALID_OBJECT_PARENT, f"a class {cls:#x} object cannot be allocated under a class {owner.cls:#x} object")
    params = params_of(st_t, params_ptr, f"class {cls:#x}") if st_t is not None else None
    obj = RMObject(self._new_handle(client, requested), cls, owner, owner.gpu)
    obj.data = handler(obj, params)
    self.objects[(client, obj.handle)] = obj
    owner.children.append(obj)
    return obj.handle

  def alloc_os_descriptor(self, client:int, parent:int, requested:int, cls:int, address:int, limit:int) -> int:
    """NV_ESC_RM_ALLOC_MEMORY: describe host pages the process already has at [address, address+limit] as a memory object."""
    owner = self.get(client, parent, (nv.NV01_DEVICE_0,), "device")
    if cls != nv.NV01_MEMORY_SYSTEM_OS_DESCRIPTOR: raise RMError(nv.NV_ERR_INVALID_CLASS, f"ALLOC_MEMORY of class {cls:#x}")
    size = limit + 1
    if address % PAGE or size % PAGE: raise RMError(nv.NV_ERR_INVALID_ADDRESS, f"host memory {address:#x}+{size:#x} is not page-aligned")
    if not is_mapped(address, size): raise RMError(nv.NV_ERR_INVALID_ADDRESS, f"host memory {address:#x}+{size:#x} is not mapped")
    if not requested: raise RMError(nv.NV_ERR_INVALID_OBJECT_NEW, "ALLOC_MEMORY needs hObjectNew")
    obj = RMObject(self._new_handle(client, requested), cls, owner, owner.gpu)
    obj.data = MemObject(obj.handle, "host", size, cpu_addr=address, alias=alias_shared(address, size) or 0)
    self.objects[(client, obj.handle)] = obj
    owner.children.append(obj)
    return obj.handle

  def free(self, client:int, handle:int):
    """Free an object and everything below it (a client frees all of its objects)."""
    obj = self.get(client, handle)
    if obj.parent is not None: obj.parent.children.remove(obj)
    self._free_tree(client, obj)

  def _free_tree(self, client:int, obj:RMObject):
    for child in list(obj.children): self._free_tree(client, child)
    del self.objects[(client, obj.handle)]
    if isinstance(obj.data, MemObject):
      obj.data.freed = True
      obj.data.release_if_unused()
    elif obj.cls in GPFIFO_CLASSES:
      assert obj.gpu is not None
      obj.gpu.remove_channel(obj.data)

  # ---- per-class allocation ----
  def _plain(self, obj:RMObject, params) -> None: return None

  def _device(self, obj:RMObject, params) -> None:
    if params.deviceId >= len(self.gpus): raise RMError(nv.NV_ERR_INVALID_ARGUMENT, f"device {params.deviceId}: there are {len(self.gpus)} GPUs")
    obj.gpu = self.gpus[params.deviceId]

  def _virtual(self, obj:RMObject, params) -> int: return int(params.limit)

  def _context_share(self, obj:RMObject, params) -> None:
    client = client_of(obj)
    self.get(client, params.hVASpace, (nv.FERMI_VASPACE_A,), "VA space")

  def _memory(self, obj:RMObject, params) -> MemObject:
    if params.size == 0: raise RMError(nv.NV_ERR_INVALID_ARGUMENT, "a memory allocation of 0 bytes")
    assert obj.gpu is not None
    heap, kind = (obj.gpu.vram, "vram") if obj.cls == nv.NV1_MEMORY_USER else (self.sysmem, "sysmem")
    size = round_up(int(params.size), PAGE)
    try: off = heap.alloc(size)
    except OSError as e: raise RMError(nv.NV_ERR_NO_MEMORY, str(e)) from None
    return MemObject(obj.handle, kind, size, heap=heap, heap_off=off)

  def _gpfifo(self, obj:RMObject, params):
    assert obj.gpu is not None
    client, entries = client_of(obj), int(params.gpFifoEntries)
    if entries < 2 or entries & (entries - 1): raise RMError(nv.NV_ERR_INVALID_ARGUMENT, f"gpFifoEntries {entries} is not a power of 2")
    self.memory(client, params.hObjectError)
    userd = self.memory(client, params.hUserdMemory[0])
    if userd.gpu_va is None: raise RMError(nv.NV_ERR_INVALID_STATE, f"USERD memory {params.hUserdMemory[0]:#x} is not mapped on the GPU")
    ring = int(params.gpFifoOffset)
    if obj.gpu.memory.find(ring, entries * 8) is None:
      raise RMError(nv.NV_ERR_INVALID_ADDRESS, f"the GPFIFO ring {ring:#x}+{entries * 8:#x} is not mapped on the GPU")
    engine = obj.gpu.channel(f"GPU {obj.gpu.index} channel {len(obj.gpu.channels)}", ring, entries, userd.gpu_va + int(params.userdOffset[0]))
    if isinstance(group := obj.parent.data if obj.parent is not None else None, ChannelGroup):
      group.channels.append(engine)
      if group.scheduled: obj.gpu.schedule(engine)
    else: obj.gpu.schedule(engine)   # a channel without a group is scheduled on its own (NVA06F_CTRL_CMD_GPFIFO_SCHEDULE)
    return engine

  def _engine_class(self, obj:RMObject, params):
    assert obj.parent is not None
    engine = obj.parent.data
    engine.name = f"{engine.name} ({'compute' if obj.cls in COMPUTE_CLASSES else 'copy'})"
    return engine

  def _debugger(self, obj:RMObject, params):
    target = self.get(int(params.hAppClient), int(params.hClass3dObject), COMPUTE_CLASSES, "compute object")
    return target.data


  # ---- NV_ESC_RM_MAP_MEMORY_DMA ----
  def map_dma(self, client:int, h_dma:int, h_memory:int, offset:int, length:int, dma_offset:int) -> int:
    """Map memory into a virtual-memory object at the fixed `dma_offset` (GPU VA == CPU VA: the VA is the caller's); returns it.
    The GPU's page tables are written when UVM maps the external range."""
    limit = self.get(client, h_dma, (nv.NV01_MEMORY_VIRTUAL,), "virtual memory").data
    mem = self.memory(client, h_memory)
    if offset + length > mem.size: raise RMError(nv.NV_ERR_INVALID_LIMIT, f"{offset:#x}+{length:#x} is past the {mem.size:#x}-byte object")
    if dma_offset + length - 1 > limit: raise RMError(nv.NV_ERR_INVALID_OFFSET, f"VA {dma_offset:#x}+{length:#x} is past the limit {limit:#x}")
    return dma_offset
