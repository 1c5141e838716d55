"""What every executor shares: the `Machine` a batch of waves runs against, and the `Step` base class.

A Step is one decoded instruction compiled for execution, independent of its address; `run(m, ws)` executes it for the
waves `ws` (all at the same PC) and advances their PCs. Steps are cached on the instruction bytes.
"""
from __future__ import annotations
import numpy as np
from emu.amd.api import DispatchStats, GPUMemoryFault
from emu.amd.arch import ArchSpec
from emu.amd.decode import Instr, describe
from emu.amd.mem_access import GlobalMemory, LocalMemory, ScalarMemory
from emu.common.memory import MemoryMap
from emu.amd.wave import WaveState

class Lanes:
  """The active (wave, lane) pairs of one batch, flat: `wi` index into ws, `wv` wave numbers, `ln` lane numbers, `lane_id` ln as
  uint64 (the pcode's laneId); `dense` is the slice of waves when the batch is every lane of consecutive waves (vector
  operands are then read and written by slicing). Shared between calls: never modify the arrays."""
  __slots__ = ("wi", "ln", "wv", "lane_id", "dense")
  def __init__(self, ws:np.ndarray, act:np.ndarray, dense:slice|None):
    self.wi, self.ln = np.nonzero(act)
    self.wv, self.lane_id, self.dense = ws[self.wi], self.ln.astype(np.uint64), dense
  def __len__(self) -> int: return len(self.wv)

class Machine:
  """One batch of workgroups in flight: wave state, memories (global, per-workgroup LDS, per-lane scratch) and stats."""
  def __init__(self, spec:ArchSpec, st:WaveState, mem:MemoryMap, stats:DispatchStats, lds_bytes:int, n_wg:int):
    self.spec, self.st, self.mem, self.stats, self.lds_bytes = spec, st, mem, stats, lds_bytes
    self.gmem, self.smem = GlobalMemory(mem, stats), ScalarMemory(mem, stats)
    self.lds = LocalMemory(np.zeros(max(1, n_wg * lds_bytes), dtype=np.uint8), lds_bytes, fault_oob=False)
    self.scratch = LocalMemory(st.scratch.reshape(-1), st.scratch.shape[2], fault_oob=True)
    self._dense: dict[tuple[int, int], Lanes] = {}
    self._last: tuple[tuple[bytes, bytes], Lanes] | None = None

  def active(self, ws:np.ndarray, act:np.ndarray|None=None) -> Lanes:
    """The lanes of waves ws that `act` (default: EXEC) enables. Consecutive waves with every lane on are cached per range; the
    EXEC lanes of the last batch asked for are kept (the next instructions of a batch mostly run under the same EXEC)."""
    st, e = self.st, self.spec.exec_lo
    if act is None:
      key = (ws.tobytes(), st.sgpr[ws, e:e + st.mask_regs].tobytes())
      if self._last is not None and self._last[0] == key: return self._last[1]
    w0 = int(ws[0])   # ws is sorted and unique: consecutive iff the span matches its length (then a slice reads its EXECs)
    if int(ws[-1]) - w0 + 1 == len(ws) and (act.all() if act is not None else (st.sgpr[w0:w0 + len(ws), e:e + st.mask_regs] == 0xffffffff).all()):
      if (hit := self._dense.get(dkey := (w0, len(ws)))) is None:
        hit = self._dense[dkey] = Lanes(ws, np.ones((len(ws), st.lanes), dtype=bool), slice(dkey[0], dkey[0] + dkey[1]))
    else: hit = Lanes(ws, act if act is not None else st.exec_bits(ws), None)
    if act is None: self._last = (key, hit)
    return hit

  def lds_base(self, wv:np.ndarray) -> np.ndarray: return self.st.wg[wv] * self.lds_bytes
  def scratch_base(self, wv:np.ndarray, ln:np.ndarray) -> np.ndarray:
    return (wv.astype(np.int64) * self.st.lanes + ln.astype(np.int64)) * self.st.scratch.shape[2]

class Step:
  """A compiled instruction. Subclasses implement `execute`; `run` adds PC advance and fault context."""
  writes_pc = False
  mode_dep = False   # the op reads the wave's MODE: `execute` gets waves with equal MODE registers only
  def __init__(self, instr:Instr, spec:ArchSpec):
    self.instr, self.spec, self.size = instr, spec, instr.size

  def run(self, m:Machine, ws:np.ndarray):
    """Execute for waves ws (same PC); memory faults are re-raised with this instruction's PC and the first wave's id."""
    try:
      for g in (m.st.mode_groups(ws) if self.mode_dep else (ws,)): self.execute(m, g)
    except GPUMemoryFault as e:
      if e.pc is not None: raise
      w = int(ws[0])
      raise GPUMemoryFault(e.addr, e.write, pc=int(m.st.pc[w]), inst=describe(self.instr), wave=m.st.wave_id[w],
                           detail=str(e).split(": ", 1)[-1] if ": " in str(e) else "") from None
    if not self.writes_pc: m.st.pc[ws] += self.size

  def execute(self, m:Machine, ws:np.ndarray): raise NotImplementedError
