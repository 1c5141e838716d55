"""Grid -> workgroups -> waves: builds the launch state tinygrad kernels expect and schedules waves in lockstep batches.

Workgroups run in chunks (bounded memory). Inside a chunk the scheduler repeatedly takes every running wave at the
lowest PC and executes that instruction for all of them at once; waves split only where their PCs diverge.
`s_barrier` parks a wave until every unfinished wave of its workgroup has reached the barrier.
"""
from __future__ import annotations
import itertools, math
import numpy as np
from emu.amd.api import Dispatch, DispatchStats, GPUHangFault
from emu.amd.arch import ArchSpec
from emu.amd.memory import MemoryMap
from emu.amd.step import Machine
from emu.amd.steps import Program
from emu.amd.exec_salu import ControlStep
from emu.amd.wave import HWREG_MODE, WaveState, RUNNING, BARRIER, mode_from_rsrc1
from emu.amd.trace import Tracer

MAX_VGPRS = 256
TTMP7, TTMP9 = 115, 117   # scalar operand numbers of the trap temporaries (ttmp0 = 108)
CHUNK_WAVES = 512

class LaunchConfig:
  """What RSRC1/RSRC2 and the dispatch say about each wave's start state."""
  def __init__(self, spec:ArchSpec, d:Dispatch):
    self.lanes = 32 if d.wave32 else 64
    self.threads = d.workgroup[0] * d.workgroup[1] * d.workgroup[2]
    self.waves_per_wg = max(1, math.ceil(self.threads / self.lanes))
    self.user_sgprs = (d.rsrc2 >> 1) & 0x1f
    self.tgid_en = [(d.rsrc2 >> (7 + i)) & 1 for i in range(3)]
    self.tg_size_en = (d.rsrc2 >> 10) & 1
    self.tidig_comps = ((d.rsrc2 >> 11) & 3) + 1
    self.scratch_en = d.rsrc2 & 1
    self.lds_bytes = d.lds_bytes if d.lds_bytes is not None else ((d.rsrc2 >> 15) & 0x1ff) * spec.lds_granule

def _init_waves(spec:ArchSpec, d:Dispatch, cfg:LaunchConfig, wgs:list[tuple[int, int, int]]) -> WaveState:
  n = len(wgs) * cfg.waves_per_wg
  st = WaveState(spec, n, cfg.lanes, MAX_VGPRS + spec.n_agprs, d.scratch_per_lane)
  st.pc[:] = d.code_addr
  st.hwreg[:, HWREG_MODE] = mode_from_rsrc1(spec, d.rsrc1)
  user = (list(d.user_sgprs) + [0] * cfg.user_sgprs)[:cfg.user_sgprs]
  st.sgpr[:, :len(user)] = np.array(user, dtype=np.uint64).astype(np.uint32) if user else 0
  wx, wy, _ = d.workgroup
  t = np.arange(cfg.waves_per_wg * cfg.lanes)
  tid = (t % wx) | (((t // wx) % wy) << 10 if cfg.tidig_comps > 1 else 0) | ((t // (wx * wy)) << 20 if cfg.tidig_comps > 2 else 0)
  tid = tid.reshape(cfg.waves_per_wg, cfg.lanes).astype(np.uint32)
  active = (t < cfg.threads).reshape(cfg.waves_per_wg, cfg.lanes)
  for g, wg in enumerate(wgs):
    sl = slice(g * cfg.waves_per_wg, (g + 1) * cfg.waves_per_wg)
    st.wg[sl] = g
    reg = cfg.user_sgprs
    for i in range(3):
      if cfg.tgid_en[i]: st.sgpr[sl, reg], reg = wg[i] + d.grid_offset[i], reg + 1
    if cfg.tg_size_en: st.sgpr[sl, reg] = np.arange(cfg.waves_per_wg) | (cfg.waves_per_wg << 6)
    if spec.wg_ids_in_ttmp:   # gfx12: TTMP9 = workgroup id x, TTMP7 = y | z << 16 (whatever RSRC2 enables)
      x, y, z = (wg[i] + d.grid_offset[i] for i in range(3))
      st.sgpr[sl, TTMP9], st.sgpr[sl, TTMP7] = x, (y & 0xffff) | ((z & 0xffff) << 16)
    st.vgpr[sl, :, 0] = tid
    st.store_mask_bits(np.arange(sl.start, sl.stop), spec.exec_lo, active)
    for i in range(cfg.waves_per_wg): st.wave_id[sl.start + i] = (*wg, i)
  return st

class Dispatcher:
  """Runs one Dispatch to completion against a MemoryMap."""
  def __init__(self, spec:ArchSpec, mem:MemoryMap, watchdog:int, tracer:Tracer|None=None, timing=None):
    self.spec, self.mem, self.watchdog, self.tracer, self.timing = spec, mem, watchdog, tracer, timing

  def run(self, d:Dispatch) -> DispatchStats:
    cfg = LaunchConfig(self.spec, d)
    stats = DispatchStats(workgroups=d.grid[0] * d.grid[1] * d.grid[2], lds_bytes=cfg.lds_bytes)
    stats.waves = stats.workgroups * cfg.waves_per_wg
    prog = Program(self.spec, self.mem)
    all_wgs = [(x, y, z) for z, y, x in itertools.product(range(d.grid[2]), range(d.grid[1]), range(d.grid[0]))]
    per_chunk = max(1, CHUNK_WAVES // cfg.waves_per_wg)
    if self.timing is not None:   # timing model: launch shape and occupancy inputs (VGPRs from RSRC1, LDS per workgroup)
      vgprs = ((d.rsrc1 & 0x3f) + 1) * self.spec.vgpr_granule32 * 32 // cfg.lanes
      self.timing.start(stats.waves, cfg.lanes, cfg.waves_per_wg, vgprs, cfg.lds_bytes)
    for c in range(0, len(all_wgs), per_chunk):
      wgs = all_wgs[c:c + per_chunk]
      st = _init_waves(self.spec, d, cfg, wgs)
      m = Machine(self.spec, st, self.mem, stats, cfg.lds_bytes, len(wgs))
      self.schedule(m, prog, cfg.waves_per_wg, stats, c * cfg.waves_per_wg)
    if self.timing is not None: stats.cycles, stats.clock_mhz = self.timing.finish()
    return stats

  def schedule(self, m:Machine, prog:Program, wpg:int, stats:DispatchStats, first_wave:int=0):
    """Run the waves of `m` (workgroups of `wpg` consecutive waves) until all have ended."""
    # inf/NaN results and integer wraps are the emulated IEEE/two's complement semantics, not something to warn about
    with np.errstate(all="ignore"): self._schedule(m, prog, wpg, stats, first_wave)

  def _schedule(self, m:Machine, prog:Program, wpg:int, stats:DispatchStats, first_wave:int):
    st = m.st
    while True:
      run = np.nonzero(st.status == RUNNING)[0]
      if len(run) == 0: break
      pcs = st.pc[run]
      pc = int(pcs.min())
      ws = run[pcs == pc]
      step = prog.at(pc)
      if self.tracer is not None: self.tracer.before(st, ws)
      if self.timing is not None: self.timing.issue(step, ws + first_wave, pc)
      step.run(m, ws)
      if self.tracer is not None: self.tracer.after(st, ws, step)
      stats.wave_instructions += len(ws)
      if stats.wave_instructions > self.watchdog:
        raise GPUHangFault(self.watchdog, stats.wave_instructions, pc=pc, wave=st.wave_id[int(ws[0])])
      if isinstance(step, ControlStep) and step.effect is not None:
        for g in np.unique(st.wg[ws]):
          waves = slice(int(g) * wpg, (int(g) + 1) * wpg)
          if not (st.status[waves] == RUNNING).any() and (parked := st.status[waves] == BARRIER).any():
            st.status[waves][parked] = RUNNING
