"""/dev/nvidia-uvm: the UVM commands tinygrad issues, one entry each (command -> parameter struct, handler).

UVM owns the GPU side of the shared address space (GPU VA == CPU VA): CREATE_EXTERNAL_RANGE reserves [base, base+length),
MAP_EXTERNAL_ALLOCATION maps an RM memory object there on each GPU listed in its per-GPU attributes (a peer GPU maps another
GPU's VRAM the same way), FREE unmaps a range from every GPU. Status codes are those UVM returns for bad input: an fd that was
not initialised (NV_ERR_ILLEGAL_ACTION), an unknown GPU (NV_ERR_GPU_UUID_NOT_FOUND), a range that overlaps another
(NV_ERR_UVM_ADDRESS_IN_USE) or is not there (NV_ERR_INVALID_ADDRESS), misaligned addresses or a range past the GPU's virtual
address space (NV_ERR_INVALID_ADDRESS).
"""
from __future__ import annotations
import bisect
from typing import Callable
from tinygrad.runtime.autogen import nv_570 as nv
from mockgpu.hostmem import PAGE
from mockgpu.nv.gpu import NVGPU
from mockgpu.nv.memory import ExternalRange
from mockgpu.nv.rm import GPFIFO_CLASSES, ResourceManager, RMError

GPU_VA_LIMIT = 1 << 49   # the virtual address space of the GPU MMU of every board modelled (Pascal and later: 49 bits)

class UVM:
  """The process's UVM state: initialised fds, registered GPUs and the external ranges (sorted by base)."""
  def __init__(self, rm:ResourceManager, open_file:Callable[[int], object|None]):
    self.rm, self.open_file = rm, open_file     # open_file(fd): what an fd number refers to (MM_INITIALIZE names one)
    self.initialized: set = set()               # open UVM files
    self.registered: set[bytes] = set()         # GPU uuids
    self.ranges: list[ExternalRange] = []
    self.commands: dict[int, tuple[type, Callable]] = {
      nv.UVM_INITIALIZE: (nv.UVM_INITIALIZE_PARAMS, self._initialize), nv.UVM_MM_INITIALIZE: (nv.UVM_MM_INITIALIZE_PARAMS, self._mm_initialize),
      nv.UVM_REGISTER_GPU: (nv.UVM_REGISTER_GPU_PARAMS, self._register_gpu),
      nv.UVM_REGISTER_GPU_VASPACE: (nv.UVM_REGISTER_GPU_VASPACE_PARAMS, self._register_vaspace),
      nv.UVM_CREATE_EXTERNAL_RANGE: (nv.UVM_CREATE_EXTERNAL_RANGE_PARAMS, self._create_range),
      nv.UVM_MAP_EXTERNAL_ALLOCATION: (nv.UVM_MAP_EXTERNAL_ALLOCATION_PARAMS, self._map),
      nv.UVM_REGISTER_CHANNEL: (nv.UVM_REGISTER_CHANNEL_PARAMS, self._register_channel),
      nv.UVM_FREE: (nv.UVM_FREE_PARAMS, self._free), nv.UVM_ENABLE_PEER_ACCESS: (nv.UVM_ENABLE_PEER_ACCESS_PARAMS, self._peer)}

  def run(self, file, cmd:int, params):
    """Run UVM command `cmd` issued on the open UVM `file` with `params` (the caller's struct, written in place); RMError on failure."""
    if cmd not in (nv.UVM_INITIALIZE, nv.UVM_MM_INITIALIZE) and file not in self.initialized:
      raise RMError(nv.NV_ERR_ILLEGAL_ACTION, "the UVM fd was not initialised (UVM_INITIALIZE)")
    self.commands[cmd][1](file, params)

  def gpu(self, uuid) -> NVGPU:
    raw = bytes(uuid.uuid)
    if (g := next((g for g in self.rm.gpus if g.uuid == raw), None)) is None: raise RMError(nv.NV_ERR_GPU_UUID_NOT_FOUND, f"GPU uuid {raw.hex()}")
    return g

  def registered_gpu(self, uuid) -> NVGPU:
    g = self.gpu(uuid)
    if g.uuid not in self.registered: raise RMError(nv.NV_ERR_INVALID_DEVICE, f"GPU {g.index} is not registered with UVM (UVM_REGISTER_GPU)")
    return g

  def find(self, base:int, length:int) -> ExternalRange:
    """The range holding all of [base, base+length)."""
    i = bisect.bisect_right([r.base for r in self.ranges], base) - 1
    if i < 0 or base + length > (r := self.ranges[i]).base + r.length:
      raise RMError(nv.NV_ERR_INVALID_ADDRESS, f"{base:#x}+{length:#x} is not inside an external range (UVM_CREATE_EXTERNAL_RANGE)")
    return r

  # ---- commands ----
  def _initialize(self, file, p): self.initialized.add(file)

  def _mm_initialize(self, file, p):
    if self.open_file(p.uvmFd) not in self.initialized: raise RMError(nv.NV_ERR_INVALID_ARGUMENT, f"uvmFd {p.uvmFd} is not an initialised UVM fd")

  def _register_gpu(self, file, p): self.registered.add(self.gpu(p.gpu_uuid).uuid)

  def _register_vaspace(self, file, p):
    self.registered_gpu(p.gpuUuid)
    self.rm.get(p.hClient, p.hVaSpace, (nv.FERMI_VASPACE_A,), "VA space")

  def _register_channel(self, file, p):
    self.registered_gpu(p.gpuUuid)
    self.rm.get(p.hClient, p.hChannel, GPFIFO_CLASSES, "channel")

  def _create_range(self, file, p):
    base, length = int(p.base), int(p.length)
    if base % PAGE or length % PAGE or not length: raise RMError(nv.NV_ERR_INVALID_ADDRESS, f"range {base:#x}+{length:#x} is not page-aligned")
    if base + length > GPU_VA_LIMIT:
      raise RMError(nv.NV_ERR_INVALID_ADDRESS, f"range {base:#x}+{length:#x} ends past the GPU's {GPU_VA_LIMIT.bit_length() - 1}-bit address space")
    i = bisect.bisect_right([r.base for r in self.ranges], base)
    if (i > 0 and self.ranges[i - 1].base + self.ranges[i - 1].length > base) or (i < len(self.ranges) and self.ranges[i].base < base + length):
      raise RMError(nv.NV_ERR_UVM_ADDRESS_IN_USE, f"range {base:#x}+{length:#x} overlaps an existing external range")
    self.ranges.insert(i, ExternalRange(base, length))

  def _map(self, file, p):
    base, length, offset = int(p.base), int(p.length), int(p.offset)
    rng, mem = self.find(base, length), self.rm.memory(p.hClient, p.hMemory)
    if offset + length > mem.size: raise RMError(nv.NV_ERR_INVALID_LIMIT, f"{offset:#x}+{length:#x} is past the {mem.size:#x}-byte object")
    if not 0 < p.gpuAttributesCount <= len(p.perGpuAttributes): raise RMError(nv.NV_ERR_INVALID_ARGUMENT, f"{p.gpuAttributesCount} GPU attributes")
    for attr in p.perGpuAttributes[:p.gpuAttributesCount]:
      g = self.registered_gpu(attr.gpuUuid)
      rng.map(g.memory, base, length, mem, offset, f"{mem.kind} {p.hMemory:#x}")

  def _free(self, file, p):
    rng = self.find(int(p.base), 1)
    if rng.base != p.base: raise RMError(nv.NV_ERR_INVALID_ADDRESS, f"{int(p.base):#x} is not the start of an external range")
    rng.clear()
    self.ranges.remove(rng)

  def _peer(self, file, p):
    self.registered_gpu(p.gpuUuidA), self.registered_gpu(p.gpuUuidB)
