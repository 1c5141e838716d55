"""What can watch a dispatch run: the instruction trace, the timing model, and any tool (coverage, SQTT) that needs every
instruction batch. The dispatcher calls each observer in order; an observer never changes what the waves compute."""
from __future__ import annotations
from dataclasses import dataclass
import numpy as np
from emu.amd.api import DispatchStats
from emu.amd.step import Step
from emu.amd.wave import WaveState

@dataclass(frozen=True)
class Launch:
  """The shape of a dispatch: waves in all, lanes per wave, waves per workgroup, VGPRs allocated per wave, LDS bytes per workgroup."""
  waves: int
  lanes: int
  waves_per_wg: int
  vgprs: int
  lds_bytes: int

class DispatchObserver:
  """Hooks of one dispatch (each a no-op here): `launch` once, `before`/`after` around every batch of waves `ws` executing `step` at
  `pc` (`first_wave`: the dispatch-wide number of the chunk's wave 0), `done` once with the dispatch's statistics.
  `reads_registers`: whether before/after look at the wave state; when no observer does, a native region (emu.amd.regions) may
  run a whole straight-line run of instructions at once and call before/after for each of them afterwards."""
  reads_registers = True
  def launch(self, launch:Launch) -> None: pass
  def before(self, st:WaveState, ws:np.ndarray, step:Step, pc:int, first_wave:int) -> None: pass
  def after(self, st:WaveState, ws:np.ndarray, step:Step) -> None: pass
  def ran(self, st:WaveState, ws:np.ndarray, steps:list[tuple[int, Step]], pc:int, first_wave:int, times:int=1) -> None:
    """Waves ws ran `steps` ([(byte offset from pc, Step)]) at once (a native region; only when no observer reads registers),
    `times` times over (a region that loops back to its own start): before/after for each, in order, unless the observer has a
    faster way to take them all."""
    for _ in range(times):
      for off, step in steps:
        self.before(st, ws, step, pc + off, first_wave)
        self.after(st, ws, step)
  def ran_chain(self, st:WaveState, ws:np.ndarray, rows:list, calls:np.ndarray, first_wave:int) -> None:
    """Waves ws ran native regions one after another (a native chain, emu.amd.chain): `calls` ((region, runs) per call, an int
    array) names each by its row of `rows` [(pc, Region)]: `ran` for each call, unless the observer has a faster way to take
    them all (`calls` is the chain's buffer: copy what is kept)."""
    for row, times in calls.tolist(): self.ran(st, ws, rows[row][1].steps, rows[row][0], first_wave, times)
  def done(self, stats:DispatchStats) -> None: pass
