"""The instruction trace (EMU_TRACE): PC, instruction (LLVM disassembly when libLLVM is there) and the registers each wave's
instruction changed, for the dispatches a `TraceFilter` selects."""
from __future__ import annotations
import sys
import numpy as np
from emu.amd.disasm import instruction_text
from emu.amd.observe import DispatchObserver
from emu.amd.step import Step
from emu.amd.wave import WaveState

class TraceFilter:
  """Which dispatches to trace, from EMU_TRACE's syntax: '1'/'all' every dispatch, '0'/'' none, otherwise comma-separated
  selectors: '@N' the N-th dispatch of this GPU (0-based), anything else a substring of the dispatch's kernel name."""
  def __init__(self, spec:str|bool):
    spec = {True: "1", False: "0"}.get(spec, spec) if isinstance(spec, bool) else spec.strip()
    self.all, self.none = spec.lower() in ("1", "all"), spec in ("0", "")
    sels = [x.strip() for x in spec.split(",") if x.strip()] if not (self.all or self.none) else []
    self.indices = {int(x[1:]) for x in sels if x.startswith("@") and x[1:].isdigit()}
    self.names = [x for x in sels if not (x.startswith("@") and x[1:].isdigit())]

  def wants(self, index:int, name:str="") -> bool:
    """Whether dispatch number `index` of kernel `name` is traced."""
    return self.all or index in self.indices or any(n in name for n in self.names if name)

class Tracer(DispatchObserver):
  """Snapshots the registers of the waves about to execute and prints what changed afterwards."""
  def __init__(self, out=None, max_lanes:int=8):
    self.out, self.max_lanes = out or sys.stdout, max_lanes

  def before(self, st:WaveState, ws:np.ndarray, step:Step, pc:int, first_wave:int):
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
      print(f"[emu.amd] wave={st.wave_id[w]} pc={int(pcs[i]):#x} {instruction_text(step.instr, st.spec.name):<48} {' '.join(changes)}", file=self.out)
