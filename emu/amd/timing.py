"""A simple, deterministic cycle model wrapped around the functional core (it only counts; it never changes results).

Per wave: a clock. Per SIMD: the cycle its issue port is next free. Each instruction issues on the wave's SIMD at
max(wave clock, SIMD free) and occupies the port for its class cost (x2 passes for wave64 VALU on RDNA). Memory ops
complete after a fixed latency; `s_waitcnt` advances the wave's clock to the completion of the awaited ops (in-order
counters); `s_barrier` advances every wave of the workgroup to the latest arrival. Costs and latencies: docs/timing.md.
"""
from __future__ import annotations
import numpy as np
from emu.amd.arch import ArchSpec
from emu.amd.step import Step

CLOCK_MHZ = {"gfx1100": 2500.0, "gfx1151": 2900.0}
N_SIMDS = {"gfx1100": 192, "gfx1151": 80}           # 96 CUs x 2 SIMD32 (RX 7900 XTX); 40 CUs x 2 (Strix Halo)
TRANS = ("V_EXP_", "V_LOG_", "V_RCP_", "V_RSQ_", "V_SQRT_", "V_SIN_", "V_COS_")
LATENCY = {"vm": 500, "lgkm_smem": 30, "lgkm_lds": 40}

def cost_class(step:Step) -> tuple[int, str | None]:
  """(issue cycles for wave32, counter the op increments: 'vm' | 'smem' | 'lds' | None)."""
  instr, name = step.instr, step.instr.name.upper()
  if instr.fmt in ("GLOBAL", "FLAT", "SCRATCH"): return 1, "vm"
  if instr.fmt == "DS": return 1, "lds"
  if instr.fmt == "SMEM": return 1, "smem"
  if instr.fmt.startswith("SOP"): return 1, None
  if "WMMA" in name: return 32, None
  if name.startswith(TRANS): return 4, None
  if "F64" in name: return 16, None
  if "_B64" in name or "_U64" in name or "_I64" in name: return 2, None
  return 1, None

class TimingModel:
  """Cycle counts for one dispatch. Waves are numbered across the whole dispatch."""
  def __init__(self, spec:ArchSpec):
    self.clock_mhz, self.n_simds = CLOCK_MHZ.get(spec.name, 2500.0), N_SIMDS.get(spec.name, 192)
    self.classes: dict[int, tuple[int, str | None]] = {}

  def start(self, n_waves:int, lanes:int):
    self.passes = 1 if lanes == 32 else 2
    self.clock = np.zeros(n_waves, dtype=np.int64)
    self.simd = np.arange(n_waves) % self.n_simds
    self.simd_free = np.zeros(self.n_simds, dtype=np.int64)
    self.pending = {"vm": [[] for _ in range(n_waves)], "lgkm": [[] for _ in range(n_waves)]}

  def issue(self, step:Step, ws:np.ndarray, wgs:np.ndarray):
    if (c := self.classes.get(id(step))) is None: c = self.classes[id(step)] = cost_class(step)
    cost, counter = c
    name = step.instr.name
    if name.startswith("s_waitcnt"): self._wait(step, ws)
    valu = step.instr.fmt.startswith("VOP") or step.instr.fmt == "VINTERP"
    cost *= self.passes if valu else 1
    start = np.maximum(self.clock[ws], self.simd_free[self.simd[ws]])
    order = np.argsort(self.simd[ws], kind="stable")
    rank = np.empty(len(ws), dtype=np.int64)
    sorted_simd = self.simd[ws][order]
    first = np.r_[True, sorted_simd[1:] != sorted_simd[:-1]] if len(ws) else np.zeros(0, dtype=bool)
    rank[order] = np.arange(len(ws)) - np.maximum.accumulate(np.where(first, np.arange(len(ws)), 0))
    issue = start + rank * cost
    self.clock[ws] = issue + cost
    np.maximum.at(self.simd_free, self.simd[ws], issue + cost)
    if counter is not None:
      q, lat = ("vm", LATENCY["vm"]) if counter == "vm" else ("lgkm", LATENCY[f"lgkm_{counter}"])
      for w, t in zip(ws.tolist(), (issue + lat).tolist()): self.pending[q][w].append(t)

  def _wait(self, step:Step, ws:np.ndarray):
    simm = step.instr.inst.simm16
    name = step.instr.name
    if name == "s_waitcnt": limits = {"vm": (simm >> 10) & 0x3f, "lgkm": (simm >> 4) & 0x3f}
    elif name in ("s_waitcnt_vscnt", "s_waitcnt_vmcnt"): limits = {"vm": simm & 0x3f}
    elif name == "s_waitcnt_lgkmcnt": limits = {"lgkm": simm & 0x3f}
    else: return
    for q, limit in limits.items():
      for w in ws.tolist():
        p = self.pending[q][w]
        if len(p) > limit:
          done, self.pending[q][w] = p[:len(p) - limit], p[len(p) - limit:]
          self.clock[w] = max(self.clock[w], max(done))

  def barrier(self, ws:np.ndarray):
    self.clock[ws] = self.clock[ws].max()

  def finish(self) -> tuple[int, float]:
    """(cycles from first issue to the last wave's end, shader clock in MHz)."""
    ends = [max([int(self.clock[w])] + self.pending["vm"][w] + self.pending["lgkm"][w]) for w in range(len(self.clock))]
    return (max(ends) if ends else 0), self.clock_mhz
