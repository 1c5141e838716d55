"""What every executor shares: the `Machine` a batch of waves runs against, and the `Step` base class.

A Step is one decoded instruction compiled for execution, independent of its address; `run(m, ws)` executes it for the
waves `ws` (all at the same PC) and advances their PCs. Steps are cached on the instruction bytes.
"""
from __future__ import annotations
import numpy as np
from emu.amd.api import DispatchStats, GPUMemoryFault
from emu.amd.arch import ArchSpec
from emu.amd.decode import Instr
from emu.amd.mem_access import GlobalMemory, LocalMemory, ScalarMemory
from emu.amd.memory import MemoryMap
from emu.amd.wave import WaveState

class Machine:
  """One batch of workgroups in flight: wave state, memories (global, per-workgroup LDS, per-lane scratch) and stats."""
  def __init__(self, spec:ArchSpec, st:WaveState, mem:MemoryMap, stats:DispatchStats, lds_bytes:int, n_wg:int):
    self.spec, self.st, self.mem, self.stats, self.lds_bytes = spec, st, mem, stats, lds_bytes
    self.gmem, self.smem = GlobalMemory(mem, stats), ScalarMemory(mem, stats)
    self.lds = LocalMemory(np.zeros(max(1, n_wg * lds_bytes), dtype=np.uint8), lds_bytes, fault_oob=False)
    self.scratch = LocalMemory(st.scratch.reshape(-1), st.scratch.shape[2], fault_oob=True)

  def lds_base(self, wv:np.ndarray) -> np.ndarray: return self.st.wg[wv] * self.lds_bytes
  def scratch_base(self, wv:np.ndarray, ln:np.ndarray) -> np.ndarray:
    return (wv.astype(np.int64) * self.st.lanes + ln.astype(np.int64)) * self.st.scratch.shape[2]

class Step:
  """A compiled instruction. Subclasses implement `execute`; `run` adds PC advance and fault context."""
  writes_pc = False
  def __init__(self, instr:Instr, spec:ArchSpec):
    self.instr, self.spec, self.size = instr, spec, instr.size

  def run(self, m:Machine, ws:np.ndarray):
    """Execute for waves ws (same PC); memory faults are re-raised with this instruction's PC and the first wave's id."""
    try: self.execute(m, ws)
    except GPUMemoryFault as e:
      if e.pc is not None: raise
      w = int(ws[0])
      raise GPUMemoryFault(e.addr, e.write, pc=int(m.st.pc[w]), inst=repr(self.instr), wave=m.st.wave_id[w],
                           detail=str(e).split(": ", 1)[-1] if ": " in str(e) else "") from None
    if not self.writes_pc: m.st.pc[ws] += self.size

  def execute(self, m:Machine, ws:np.ndarray): raise NotImplementedError
