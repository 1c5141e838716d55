"""`run_program`: run a short instruction list on one workgroup with a given register state; the basis of instruction tests."""
from __future__ import annotations
import numpy as np
from emu.amd.api import DispatchStats
from emu.amd.arch import get_spec
from emu.amd.dispatcher import Dispatcher, MAX_VGPRS
from emu.common.watchdog import Watchdog
from emu.common.memory import MemoryMap
from emu.amd.step import Machine
from emu.amd.steps import Program
from emu.amd.trace import Tracer
from emu.amd.wave import WaveState

CODE_ADDR_ALIGN = 256

def assemble(insts:list, arch:str="gfx1100") -> bytes:
  """Encode DSL instructions (or raw bytes) and append s_endpgm."""
  spec = get_spec(arch)
  code = b"".join(i if isinstance(i, (bytes, bytearray)) else i.to_bytes() for i in insts)
  return code + spec.ins.s_endpgm().to_bytes()

def run_program(insts:list, arch:str="gfx1100", lanes:int=32, waves:int=1, sgprs:dict|None=None, vgprs:dict|None=None,
                exec_mask:int|None=None, scc:int=0, memory:MemoryMap|None=None, lds_bytes:int=0, scratch_bytes:int=0,
                watchdog:int|None=None, trace:bool=False, watchdog_s:float|None=None, watch:tuple=()) -> WaveState:
  """Run `insts` (DSL objects or raw bytes; s_endpgm is appended) on `waves` waves of one workgroup.

  sgprs: {operand number: value, or a list of one value per wave} (values wider than 32 bits fill consecutive registers; VCC is
  106, M0 125, EXEC 126).
  vgprs: {register: scalar or per-lane sequence} (uint32 bits; floats are stored as f32 bits). exec_mask defaults to all
  lanes. Every wave starts with the same registers (but per-wave SGPR values). Returns the final WaveState; `.lds` holds the workgroup's LDS bytes and
  `.stats` the DispatchStats. Waves read and write global memory only through `memory`. watchdog / watchdog_s: the
  wave-instruction and wall-clock budgets (emu.common.watchdog). watch: observers of the run (emu.amd.observe).
  """
  spec = get_spec(arch)
  mem = memory if memory is not None else MemoryMap()
  code = np.frombuffer(assemble(insts, arch) + b"\0" * 16, dtype=np.uint8).copy()
  m_code = mem.map(code.ctypes.data, code.size, name="run_program code", writable=False, backing=code)
  try:
    st = WaveState(spec, waves, lanes, MAX_VGPRS + spec.n_agprs, scratch_bytes)
    st.pc[:] = m_code.addr
    for reg, val in (sgprs or {}).items():
      for w, x in enumerate(val if isinstance(val, (list, tuple)) else [val] * waves):
        for i in range(max(1, (int(x).bit_length() + 31) // 32)): st.sgpr[w, reg + i] = (int(x) >> (32 * i)) & 0xffffffff
    for reg, val in (vgprs or {}).items():
      arr = np.asarray(val)
      st.vgpr[:, :, reg] = arr.astype(np.float32).view(np.uint32) if arr.dtype.kind == "f" else arr.astype(np.int64).astype(np.uint32)
    st.scc[:] = scc
    full = (1 << lanes) - 1 if exec_mask is None else exec_mask
    for w in range(waves): st.set_mask(w, spec.exec_lo, full)
    st.wave_id = [(0, 0, 0, w) for w in range(waves)]
    stats = DispatchStats(workgroups=1, waves=waves, lds_bytes=lds_bytes)
    m = Machine(spec, st, mem, stats, lds_bytes, 1)
    dog = Watchdog(watchdog, watchdog_s)
    dog.arm()
    Dispatcher(spec, mem, dog, ([Tracer()] if trace else []) + list(watch)).schedule(m, Program(spec, mem), waves, stats)
    st.lds, st.stats = m.lds.store[:lds_bytes], stats
    return st
  finally: mem.unmap(m_code.addr)
