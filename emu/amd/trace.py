"""The instruction trace (EMU_TRACE=1): PC, instruction and the registers each wave's instruction changed."""
from __future__ import annotations
import sys
import numpy as np
from emu.amd.step import Step
from emu.amd.wave import WaveState

class Tracer:
  """Snapshots the registers of the waves about to execute and prints what changed afterwards."""
  def __init__(self, out=None, max_lanes:int=8):
    self.out, self.max_lanes = out or sys.stdout, max_lanes

  def before(self, st:WaveState, ws:np.ndarray):
    self.snap = (st.sgpr[ws].copy(), st.vgpr[ws].copy(), st.scc[ws].copy(), st.pc[ws].copy())

  def after(self, st:WaveState, ws:np.ndarray, step:Step):
    sg, vg, scc, pcs = self.snap
    for i, w in enumerate(ws):
      changes = [f"s{r}={int(st.sgpr[w, r]):#x}" for r in np.nonzero(st.sgpr[w] != sg[i])[0]]
      if st.scc[w] != scc[i]: changes.append(f"scc={int(st.scc[w])}")
      for r in np.nonzero((st.vgpr[w] != vg[i]).any(axis=0))[0]:
        lanes = np.nonzero(st.vgpr[w, :, r] != vg[i][:, r])[0]
        vals = " ".join(f"{int(lane)}:{int(st.vgpr[w, lane, r]):#x}" for lane in lanes[:self.max_lanes])
        changes.append(f"v{r}[{vals}{' ...' if len(lanes) > self.max_lanes else ''}]")
      print(f"[emu.amd] wave={st.wave_id[w]} pc={int(pcs[i]):#x} {step.instr!r:<48} {' '.join(changes)}", file=self.out)
