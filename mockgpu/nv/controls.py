"""NV_ESC_RM_CONTROL: the RM controls tinygrad issues, one entry each (command -> the classes it applies to, its parameter
struct, its handler).

A control's class is its command's top 16 bits (0x0000 client, 0x0080 device, 0x2080 subdevice, 0xa06c channel group, 0xc36f
and 0xa06f channel, 0x83de debugger). As in RM, a command sent to an object of another class, or one not listed, is
NV_ERR_NOT_SUPPORTED, and a paramsSize other than the struct's is NV_ERR_INVALID_PARAM_STRUCT.

Faults reach tinygrad here: after a failed signal wait it reads NV83DE READ_ALL_SM_ERROR_STATES for its compute channel and,
when `mmuFault.valid`, READ_MMU_FAULT_INFO. A memory fault is reported as an MMU fault (the page of the address, PTE or
read-only violation, read or write); any other stop (the watchdog, a queue reset, an emulator error) as an error on SM 0
whose global ESR is `ESR_MOCK_STOPPED` (no hardware ESR exists for these: the stderr line names the reason) and whose warp
PC is the PTX instruction index.
"""
from __future__ import annotations
import ctypes, sys
from typing import Callable
from tinygrad.runtime.autogen import nv_570 as nv
from emu.common.faults import GPUMemoryFault
from mockgpu.hostmem import is_mapped
from mockgpu.nv.boards import classes
from mockgpu.nv.rm import GPFIFO_CLASSES, ChannelGroup, ResourceManager, RMError, RMObject, client_of, params_of

DRIVER_VERSION = "570.133.20"   # below 580: tinygrad then keeps its nv_570 struct layouts, which the mock uses too
ESR_MOCK_STOPPED = 0x1
FAULT_PAGE = 0x1000

def _build_version(rm, obj, p):
  for name in ("driverVersionBuffer", "versionBuffer", "titleBuffer"): setattr(p, name, DRIVER_VERSION.encode())
  p.driverBranch = b"r570_00"
  p.changelistNumber = p.officialChangelistNumber = 0

def _gpu_id_info(rm:ResourceManager, obj, p):
  if (gpu := next((g for g in rm.gpus if g.gpu_id == p.gpuId), None)) is None:
    raise RMError(nv.NV_ERR_INVALID_ARGUMENT, f"unknown gpuId {p.gpuId:#x}")
  p.deviceInstance, p.subDeviceInstance, p.gpuInstance, p.gpuFlags, p.sliStatus, p.boardId, p.numaId = gpu.index, 0, gpu.index, 0, 0, gpu.index, -1

def _classlist(rm, obj:RMObject, p):
  offered = classes(obj.gpu.board)
  if p.classList:
    if p.numClasses < len(offered): raise RMError(nv.NV_ERR_INVALID_PARAM_STRUCT, f"numClasses {p.numClasses} < {len(offered)}")
    if not is_mapped(p.classList, 4 * len(offered)): raise RMError(nv.NV_ERR_INVALID_POINTER, "classList is not writable")
    (ctypes.c_uint32 * len(offered)).from_address(p.classList)[:] = offered
  p.numClasses = len(offered)

def _gid_info(rm, obj:RMObject, p):
  if p.flags != nv.NV2080_GPU_CMD_GPU_GET_GID_FLAGS_FORMAT_BINARY or p.length < 16:
    raise RMError(nv.NV_ERR_INVALID_ARGUMENT, f"GID in format flags {p.flags:#x} with length {p.length} (binary, 16 bytes is modelled)")
  p.data[:16] = list(obj.gpu.uuid)
  p.length = 16

def _gr_info(rm, obj:RMObject, p):
  b = obj.gpu.board
  values = {nv.NV2080_CTRL_GR_INFO_INDEX_LITTER_NUM_GPCS: b.gpcs, nv.NV2080_CTRL_GR_INFO_INDEX_LITTER_NUM_TPC_PER_GPC: b.tpc_per_gpc,
            nv.NV2080_CTRL_GR_INFO_INDEX_LITTER_NUM_SM_PER_TPC: b.sm_per_tpc, nv.NV2080_CTRL_GR_INFO_INDEX_MAX_WARPS_PER_SM: b.max_warps_per_sm,
            nv.NV2080_CTRL_GR_INFO_INDEX_SM_VERSION: b.sm_version, nv.NV2080_CTRL_GR_INFO_INDEX_MAX_THREADS_PER_WARP: 32}
  n = int(p.grInfoListSize)
  if not n or not is_mapped(p.grInfoList, n * ctypes.sizeof(nv.NV2080_CTRL_GR_INFO)):
    raise RMError(nv.NV_ERR_INVALID_ARGUMENT, f"grInfoList of {n} entries at {p.grInfoList:#x}")
  for info in (nv.NV2080_CTRL_GR_INFO * n).from_address(p.grInfoList):
    if info.index not in values: raise RMError(nv.NV_ERR_INVALID_ARGUMENT, f"GR info index {info.index:#x} is not modelled")
    info.data = values[info.index]

def _schedule_group(rm, obj:RMObject, p):
  group: ChannelGroup = obj.data
  if p.bEnable and not group.scheduled:
    group.scheduled = True
    for engine in group.channels: obj.gpu.schedule(engine)

def _work_submit_token(rm, obj:RMObject, p): p.workSubmitToken = obj.data.token

def _accept(rm, obj, p): pass

def _sm_errors(rm:ResourceManager, obj:RMObject, p):
  engine = rm.get(client_of(obj), p.hTargetChannel, GPFIFO_CLASSES, "channel").data
  err = obj.gpu.faults.get(engine)
  p.mmuFault.valid, p.mmuFault.faultInfo = int(isinstance(err, GPUMemoryFault)), 0
  for e in p.smErrorStateArray: e.hwwGlobalEsr = e.hwwWarpEsr = e.hwwWarpEsrPc64 = 0
  if err is not None and not isinstance(err, GPUMemoryFault):
    p.smErrorStateArray[0].hwwGlobalEsr = ESR_MOCK_STOPPED
    p.smErrorStateArray[0].hwwWarpEsrPc64 = getattr(err, "pc", None) or 0
  if err is None and engine.pending():
    print(f"mockgpu: GPU {obj.gpu.index}: {engine.name} has not faulted; it is "
          f"{f'stalled waiting for {engine.stall_reason}' if engine.stalled else 'still running'}", file=sys.stderr)

def _mmu_faults(rm:ResourceManager, obj:RMObject, p):
  faults = [e for e in obj.gpu.faults.values() if isinstance(e, GPUMemoryFault)][:len(p.mmuFaultInfoList)]
  for entry, err in zip(p.mmuFaultInfoList, faults):
    ro = err.write and obj.gpu.memory.find(err.addr) is not None
    entry.faultAddress = err.addr & ~(FAULT_PAGE - 1)
    entry.faultType = nv.NV_PFAULT_FAULT_TYPE_RO_VIOLATION if ro else nv.NV_PFAULT_FAULT_TYPE_PTE
    entry.accessType = nv.NV_PFAULT_ACCESS_TYPE_WRITE if err.write else nv.NV_PFAULT_ACCESS_TYPE_READ
  p.count = len(faults)

CLIENT, DEVICE, SUBDEVICE = (nv.NV01_ROOT_CLIENT,), (nv.NV01_DEVICE_0,), (nv.NV20_SUBDEVICE_0,)
GROUP, DEBUGGER = (nv.KEPLER_CHANNEL_GROUP_A,), (nv.GT200_DEBUGGER,)
CONTROLS: dict[int, tuple[tuple[int, ...], type, Callable]] = {
  nv.NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2: (CLIENT, nv.NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_V2_PARAMS, _build_version),
  nv.NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2: (CLIENT, nv.NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS, _gpu_id_info),
  nv.NV0080_CTRL_CMD_GPU_GET_CLASSLIST: (DEVICE, nv.NV0080_CTRL_GPU_GET_CLASSLIST_PARAMS, _classlist),
  nv.NV2080_CTRL_CMD_GPU_GET_GID_INFO: (SUBDEVICE, nv.NV2080_CTRL_GPU_GET_GID_INFO_PARAMS, _gid_info),
  nv.NV2080_CTRL_CMD_PERF_BOOST: (SUBDEVICE, nv.NV2080_CTRL_PERF_BOOST_PARAMS, _accept),
  nv.NV2080_CTRL_CMD_GR_GET_INFO: (SUBDEVICE, nv.NV2080_CTRL_GR_GET_INFO_PARAMS, _gr_info),
  nv.NV2080_CTRL_CMD_FB_FLUSH_GPU_CACHE: (SUBDEVICE, nv.NV2080_CTRL_FB_FLUSH_GPU_CACHE_PARAMS, _accept),   # memory is coherent here
  nv.NVA06C_CTRL_CMD_GPFIFO_SCHEDULE: (GROUP, nv.NVA06C_CTRL_GPFIFO_SCHEDULE_PARAMS, _schedule_group),
  nv.NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN: (GPFIFO_CLASSES, nv.NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN_PARAMS, _work_submit_token),
  nv.NVA06F_CTRL_CMD_BIND: (GPFIFO_CLASSES, nv.NVA06F_CTRL_BIND_PARAMS, _accept),
  nv.NVA06F_CTRL_CMD_GPFIFO_SCHEDULE: (GPFIFO_CLASSES, nv.NVA06F_CTRL_GPFIFO_SCHEDULE_PARAMS, _accept),
  nv.NV83DE_CTRL_CMD_DEBUG_READ_ALL_SM_ERROR_STATES: (DEBUGGER, nv.NV83DE_CTRL_DEBUG_READ_ALL_SM_ERROR_STATES_PARAMS, _sm_errors),
  nv.NV83DE_CTRL_CMD_DEBUG_READ_MMU_FAULT_INFO: (DEBUGGER, nv.NV83DE_CTRL_DEBUG_READ_MMU_FAULT_INFO_PARAMS, _mmu_faults),
}

def control(rm:ResourceManager, client:int, handle:int, cmd:int, params_ptr:int|None, size:int):
  """Run control `cmd` on object `handle`, reading and writing the caller's parameters in place."""
  obj = rm.get(client, handle)
  if (spec := CONTROLS.get(cmd)) is None: raise RMError(nv.NV_ERR_NOT_SUPPORTED, f"control {cmd:#x} is not emulated")
  classes, st_t, fn = spec
  if obj.cls not in classes: raise RMError(nv.NV_ERR_NOT_SUPPORTED, f"control {cmd:#x} does not apply to a class {obj.cls:#x} object")
  if size != ctypes.sizeof(st_t):
    raise RMError(nv.NV_ERR_INVALID_PARAM_STRUCT, f"control {cmd:#x}: paramsSize {size}, the struct is {ctypes.sizeof(st_t)}")
  fn(rm, obj, params_of(st_t, params_ptr, f"control {cmd:#x}"))
