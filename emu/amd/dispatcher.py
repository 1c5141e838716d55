"""Grid -> workgroups -> waves: builds the launch state tinygrad kernels expect and schedules waves in lockstep batches.

Workgroups run in chunks (bounded memory: a chunk's workgroup ids are computed when it starts, so a grid of millions of
workgroups costs nothing per workgroup before it runs). Inside a chunk the scheduler repeatedly takes every running wave at the
lowest PC and executes that instruction for all of them at once; waves split only where their PCs diverge.
`s_barrier` parks a wave until every unfinished wave of its workgroup has reached the barrier.
"""
from __future__ import annotations
import math, time
import numpy as np
from emu.amd.api import Dispatch, DispatchStats, GPUEmulatorError, GPUFault, GPUIllegalInstruction, GPUInvalidDispatch, IllegalOperand
from emu.amd import chain, regions
from emu.amd.arch import ArchSpec
from emu.amd.decode import describe
from emu.common.memory import MemoryMap
from emu.amd.step import Machine
from emu.amd.steps import Program, ProgramCache
from emu.amd.step_cache import STEP_CACHE
from emu.amd.exec_salu import ControlStep
from emu.amd.wave import HWREG_MODE, WaveState, RUNNING, BARRIER, mode_from_rsrc1
from emu.amd.observe import DispatchObserver, Launch
from emu.common.watchdog import Watchdog

MAX_VGPRS = 256
TTMP7, TTMP9 = 115, 117   # scalar operand numbers of the trap temporaries (ttmp0 = 108)
CHUNK_WAVES = 512                 # waves per chunk at least (unless private memory or LDS bound them) ...
CHUNK_WAVES_MAX = 2048            # ... and at most: more while the VGPRs the kernel allocates (RSRC1) stay within
CHUNK_VGPR_BYTES = 16 << 20       # this much (a chunk costs ~0.5 ms of Python to set up: an elementwise kernel's 16K waves in 32
                                  # chunks spent ~25% of its time there)
CHUNK_SCRATCH_BYTES = 256 << 20   # a chunk's private memory is allocated at once: fewer waves per chunk when each needs much
CHUNK_LDS_BYTES = 64 << 20        # and its workgroups' LDS (above CHUNK_WAVES' worth only when they need little)
MAX_WORKGROUP_THREADS = 1024
MAX_SCRATCH_PER_LANE = 128 << 10   # about what the widest TMPRING_SIZE.WAVESIZE field encodes (gfx11: 15 bits of 256 B per wave64)

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
    self.vgprs = ((d.rsrc1 & 0x3f) + 1) * spec.vgpr_granule32 * 32 // self.lanes   # RSRC1.VGPRS: the registers a wave allocates

  def validate(self, spec:ArchSpec, d:Dispatch):
    """Raise GPUInvalidDispatch for a launch the hardware cannot run (before any memory is allocated for it)."""
    if min(d.grid) < 0 or min(d.workgroup) < 1: raise GPUInvalidDispatch(f"invalid dispatch: grid {d.grid}, workgroup {d.workgroup}")
    if self.threads > MAX_WORKGROUP_THREADS:
      raise GPUInvalidDispatch(f"invalid dispatch: a workgroup of {self.threads} threads {d.workgroup} exceeds {MAX_WORKGROUP_THREADS}")
    if self.lds_bytes > spec.max_lds:
      raise GPUInvalidDispatch(f"invalid dispatch: {self.lds_bytes} bytes of LDS per workgroup exceed {spec.name}'s {spec.max_lds}")
    if d.scratch_per_lane > MAX_SCRATCH_PER_LANE:
      raise GPUInvalidDispatch(f"invalid dispatch: {d.scratch_per_lane} bytes of scratch per lane exceed the hardware's {MAX_SCRATCH_PER_LANE}")
    if d.scratch_per_lane * self.lanes * self.waves_per_wg > CHUNK_SCRATCH_BYTES:
      raise GPUInvalidDispatch(f"invalid dispatch: {d.scratch_per_lane} bytes of scratch per lane for {self.threads} threads exceed "
                               f"the emulator's {CHUNK_SCRATCH_BYTES >> 20} MiB per workgroup")

  def chunk_workgroups(self, d:Dispatch) -> int:
    """Workgroups per chunk: CHUNK_WAVES waves, more (up to CHUNK_WAVES_MAX) while their allocated VGPRs fit CHUNK_VGPR_BYTES
    and their LDS CHUNK_LDS_BYTES; fewer when their private memory would pass CHUNK_SCRATCH_BYTES."""
    waves = min(CHUNK_WAVES_MAX, max(CHUNK_WAVES, CHUNK_VGPR_BYTES // (max(1, self.vgprs) * self.lanes * 4)))
    if self.lds_bytes: waves = min(waves, max(CHUNK_WAVES, CHUNK_LDS_BYTES // self.lds_bytes * self.waves_per_wg))
    if per_wave := d.scratch_per_lane * self.lanes: waves = min(waves, CHUNK_SCRATCH_BYTES // per_wave)
    return max(1, waves // self.waves_per_wg)

def workgroup_ids(grid:tuple[int, int, int], first:int, count:int) -> np.ndarray:
  """(count, 3) x/y/z ids of workgroups first..first+count-1 in dispatch order (x fastest)."""
  idx = np.arange(first, first + count, dtype=np.int64)
  return np.stack([idx % grid[0], (idx // grid[0]) % grid[1], idx // (grid[0] * grid[1])], axis=1)

def _init_waves(spec:ArchSpec, d:Dispatch, cfg:LaunchConfig, wgs:np.ndarray) -> WaveState:
  n_wg, wpg = len(wgs), cfg.waves_per_wg
  st = WaveState(spec, n_wg * wpg, cfg.lanes, MAX_VGPRS + spec.n_agprs, d.scratch_per_lane, cfg.vgprs)
  st.pc[:] = d.code_addr
  st.hwreg[:, HWREG_MODE] = mode_from_rsrc1(spec, d.rsrc1)
  user = (list(d.user_sgprs) + [0] * cfg.user_sgprs)[:cfg.user_sgprs]
  st.sgpr[:, :len(user)] = np.array(user, dtype=np.uint64).astype(np.uint32) if user else 0
  wx, wy, _ = d.workgroup
  t = np.arange(wpg * cfg.lanes)
  tid = (t % wx) | (((t // wx) % wy) << 10 if cfg.tidig_comps > 1 else 0) | ((t // (wx * wy)) << 20 if cfg.tidig_comps > 2 else 0)
  active = (t < cfg.threads).reshape(wpg, cfg.lanes)
  ids = (wgs + np.asarray(d.grid_offset, dtype=np.int64)).astype(np.uint32)   # what the waves see: offset by COMPUTE_START_*
  per_wave = np.repeat(ids, wpg, axis=0)                                        # (waves, 3)
  st.wg[:] = np.repeat(np.arange(n_wg), wpg)
  reg = cfg.user_sgprs
  for i in range(3):
    if cfg.tgid_en[i]: st.sgpr[:, reg], reg = per_wave[:, i], reg + 1
  if cfg.tg_size_en: st.sgpr[:, reg] = np.tile(np.arange(wpg) | (wpg << 6), n_wg)
  if spec.wg_ids_in_ttmp:   # gfx12: TTMP9 = workgroup id x, TTMP7 = y | z << 16 (whatever RSRC2 enables)
    st.sgpr[:, TTMP9], st.sgpr[:, TTMP7] = per_wave[:, 0], (per_wave[:, 1] & 0xffff) | ((per_wave[:, 2] & 0xffff) << 16)
  st.vgpr[:, :, 0] = np.tile(tid.reshape(wpg, cfg.lanes).astype(np.uint32), (n_wg, 1))
  st.store_mask_bits(np.arange(n_wg * wpg), spec.exec_lo, np.tile(active, (n_wg, 1)))
  st.wave_id = WaveIds(wgs, wpg)
  return st

class WaveIds:
  """(wg x, wg y, wg z, wave in wg) of each wave of a chunk, made when asked for (fault reports, traces): a list of them cost
  ~1 us per wave at every chunk's start."""
  def __init__(self, wgs:np.ndarray, wpg:int): self.wgs, self.wpg = wgs, wpg
  def __getitem__(self, w:int) -> tuple[int, int, int, int]:
    x, y, z = (int(c) for c in self.wgs[w // self.wpg])
    return x, y, z, w % self.wpg

def _together(pcs:np.ndarray, ws:np.ndarray) -> int | None:
  """The PC every wave of ws is at (after a branch none of them ended at), None when they are not all at one."""
  first = int(pcs[ws[0]])
  return first if len(ws) == 1 or (pcs[ws] == first).all() else None

def _passes(ws:np.ndarray, runs:np.ndarray|None, most:int, total:int) -> list[tuple[np.ndarray, int]]:
  """The batches a region's runs make, as the numpy path would have run them: (waves, how many times in a row), the waves that ran
  it an i-th time together; `most` and `total`: the most runs of a wave and all waves' runs."""
  if total == most * len(ws): return [(ws, most)]   # every wave as many times (one run each, or a loop in lockstep)
  out, done = [], 0
  for upto in np.unique(runs).tolist():
    out.append((ws[runs > done], upto - done))
    done = upto
  return out

def release_barriers(status:np.ndarray, groups:np.ndarray):
  """`status` is (workgroups, waves per workgroup): in each of `groups` where no wave runs any more and some wave waits at
  the barrier, the waiting waves run again (every unfinished wave has arrived)."""
  sub = status[groups]
  release = groups[~(sub == RUNNING).any(axis=1) & (sub == BARRIER).any(axis=1)]
  if len(release):
    rows = status[release]
    rows[rows == BARRIER] = RUNNING
    status[release] = rows

class Dispatcher:
  """Runs one Dispatch to completion against a MemoryMap, within `watchdog`'s budgets; `observers` (emu.amd.observe) see it run;
  `programs`: where the code of earlier dispatches on this memory map is kept (else every dispatch fetches its code afresh)."""
  def __init__(self, spec:ArchSpec, mem:MemoryMap, watchdog:Watchdog, observers:list[DispatchObserver]|tuple=(),
               programs:ProgramCache|None=None):
    self.spec, self.mem, self.watchdog, self.observers, self.programs = spec, mem, watchdog, list(observers), programs

  def run(self, d:Dispatch) -> DispatchStats:
    t0 = time.perf_counter()
    cfg = LaunchConfig(self.spec, d)
    cfg.validate(self.spec, d)
    stats = DispatchStats(workgroups=d.grid[0] * d.grid[1] * d.grid[2], lds_bytes=cfg.lds_bytes)
    stats.waves = stats.workgroups * cfg.waves_per_wg
    key = (d.code_addr, cfg.lanes, d.rsrc1)
    prog = self.programs.get(key) if self.programs is not None else Program(self.spec, self.mem)
    per_chunk = cfg.chunk_workgroups(d)
    self.watchdog.arm()
    if self.observers:   # the launch shape and occupancy inputs (VGPRs from RSRC1, LDS per workgroup)
      launch = Launch(stats.waves, cfg.lanes, cfg.waves_per_wg, cfg.vgprs, cfg.lds_bytes)
      for o in self.observers: o.launch(launch)
    try:
      for c in range(0, stats.workgroups, per_chunk):
        wgs = workgroup_ids(d.grid, c, min(per_chunk, stats.workgroups - c))
        st = _init_waves(self.spec, d, cfg, wgs)
        m = Machine(self.spec, st, self.mem, stats, cfg.lds_bytes, len(wgs))
        self.schedule(m, prog, cfg.waves_per_wg, stats, c * cfg.waves_per_wg)
    finally:   # (a fault included: what it fetched is checked before a later dispatch may reuse it)
      if self.programs is not None: self.programs.done(key, prog)
    t1 = time.perf_counter()
    for o in self.observers: o.done(stats)
    t2 = time.perf_counter()
    stats.host = {"total": t2 - t0, "decode": prog.load_s, "observe": t2 - t1}
    STEP_CACHE.dispatch_done()
    return stats

  def schedule(self, m:Machine, prog:Program, wpg:int, stats:DispatchStats, first_wave:int=0):
    """Run the waves of `m` (workgroups of `wpg` consecutive waves) until all have ended."""
    # inf/NaN results and integer wraps are the emulated IEEE/two's complement semantics, not something to warn about
    with np.errstate(all="ignore"): self._schedule(m, prog, wpg, stats, first_wave)

  def _schedule(self, m:Machine, prog:Program, wpg:int, stats:DispatchStats, first_wave:int):
    st, ws, every = m.st, None, False
    use_regions = regions.enabled() and not any(o.reads_registers for o in self.observers)
    while True:
      if ws is None:   # the next batch: every running wave at the lowest PC
        run = np.nonzero(st.status == RUNNING)[0]
        if len(run) == 0: break
        pcs = st.pc[run]
        pc = int(pcs.min())
        ws = run[pcs == pc]
        every = len(ws) == len(run)
      if use_regions and (region := prog.region(pc, st.lanes, int(st.hwreg[ws[0], HWREG_MODE]))) is not None:
        # straight-line code: every wave of the batch runs all of it (and, chained, on into the regions after it)
        if self._region(m, prog, region, pc, ws, stats, first_wave) or not every: ws = None
        elif not region.writes_pc: pc += region.size
        elif (pc := _together(st.pc, ws)) is None: ws = None
        continue
      step = self._step(m, prog, pc, ws, stats, first_wave)
      effect = isinstance(step, ControlStep) and step.effect is not None
      if effect:   # the batch's workgroups: ws is sorted and so are their groups (np.unique's first call imports numpy.ma: ~25 ms)
        wg = st.wg[ws]
        release_barriers(st.status.reshape(-1, wpg), wg[np.concatenate(([True], wg[1:] != wg[:-1]))])
      # a batch of every running wave that the step moved on to its next instruction, or that a branch left together, is the next
      if not every or effect: ws = None   # (an end or a barrier)
      elif not step.writes_pc: pc += step.size
      elif (pc := _together(st.pc, ws)) is None: ws = None

  def _region(self, m:Machine, prog:Program, region:regions.Region, pc:int, ws:np.ndarray, stats:DispatchStats, first_wave:int) -> bool:
    """Run the native region at `pc` for the batch ws, and on through the native regions after it where a chain can (True: each
    wave is then wherever its code took it), or its steps one by one on the numpy path when it is not compiled (yet) or cannot
    run for these waves; observers see every instruction either way, all of them at once (`ran`: no observer here reads
    registers, and a fault part way ends the dispatch)."""
    st = m.st
    ran = None   # (how many times each wave ran the region, the most, all: a region that loops back to its start may run many times)
    if region.ready():
      dog = self.watchdog.instructions
      budget = None if dog is None else dog - stats.wave_instructions
      try:
        if chain.enabled() and self._chain(m, prog, ws, stats, first_wave, budget): return True
        ran = region.run(m, ws, budget)
      except GPUFault: raise
      except Exception as e:   # as _execute: never anything but a GPUFault out of the emulator
        raise GPUEmulatorError(pc, describe(region.steps[0][1].instr), st.wave_id[int(ws[0])], e) from e
    if ran is None:
      for off, _ in region.steps: self._execute(m, prog, pc + off, ws, first_wave, observe=False)
    runs, passes, total = ran or (None, 1, len(ws))
    self._ran(st, ws, region, pc, first_wave, runs, passes, total)
    stats.wave_instructions += total * region.count
    self.watchdog.check(stats.wave_instructions, pc + region.steps[-1][0], st.wave_id, int(ws[0]), long=passes > 1)
    return False

  def _ran(self, st, ws:np.ndarray, region:regions.Region, pc:int, first_wave:int, runs:np.ndarray|None, most:int, total:int):
    """Tell the observers of one region call for waves ws (each wave's runs, the most, all) as the numpy path would have run it:
    every wave that ran it an i-th time, together."""
    if self.observers:
      for run, times in _passes(ws, runs, most, total):
        for o in self.observers: o.ran(st, run, region.steps, pc, first_wave, times)

  def _chain(self, m:Machine, prog:Program, ws:np.ndarray, stats:DispatchStats, first_wave:int, budget:int|None) -> bool:
    """Run waves ws through the native chain from their PC (emu.amd.chain); False when it ran nothing (no driver yet, the waves'
    MODEs differ, the MXCSR is not IEEE's default). Observers see each wave's region runs in its order, waves that ran the same
    ones together."""
    st = m.st
    mode = int(st.hwreg[ws[0], HWREG_MODE])
    if len(ws) > 1 and not (st.hwreg[ws, HWREG_MODE] == mode).all(): return False
    if prog.chain is None: prog.chain = chain.Chain()
    if (done := prog.chain.run(m, prog.regions, ws, mode, budget)) is None: return False
    _, groups, ran, split = done
    rows = prog.chain.rows
    for waves, calls in groups:
      for o in self.observers: o.ran_chain(st, waves, rows, calls, first_wave)
    if split is not None: self._ran(st, ws, split[1], split[0], first_wave, *split[2:])   # the batch's last call together
    stats.wave_instructions += ran
    at, region = split[:2] if split is not None else rows[int(groups[-1][1][-1, 0])]   # (the watchdog names the last instruction run)
    self.watchdog.check(stats.wave_instructions, at + region.steps[-1][0], st.wave_id, int(ws[0]), long=True)
    return True

  def _step(self, m:Machine, prog:Program, pc:int, ws:np.ndarray, stats:DispatchStats, first_wave:int):
    """Run the instruction at `pc` for waves ws on the numpy path, count it and let the watchdog see it; the Step."""
    step = self._execute(m, prog, pc, ws, first_wave)
    stats.wave_instructions += len(ws)
    self.watchdog.check(stats.wave_instructions, pc, m.st.wave_id, int(ws[0]))
    return step

  def _execute(self, m:Machine, prog:Program, pc:int, ws:np.ndarray, first_wave:int, observe:bool=True):
    """Decode (once per PC) and run the instruction at `pc` for waves `ws` (observers see it unless `observe` is off). Any failure
    that is not a modelled GPU fault becomes GPUEmulatorError naming the instruction, so the public API raises GPUFault subclasses
    only."""
    step = None
    observers = self.observers if observe else ()
    try:
      step = prog.at(pc)
      for o in observers: o.before(m.st, ws, step, pc, first_wave)
      step.run(m, ws)
      for o in observers: o.after(m.st, ws, step)
    except GPUIllegalInstruction as e:   # decoded or compiled without a wave in view: name the first wave that reached it
      if e.wave is not None: raise
      raise GPUIllegalInstruction(e.pc, e.word, e.reason, wave=m.st.wave_id[int(ws[0])]) from None
    except GPUFault: raise
    except IllegalOperand as e:
      assert step is not None
      raise GPUIllegalInstruction(pc, step.instr.raw, f"{step.instr.name}: {e}", wave=m.st.wave_id[int(ws[0])]) from None
    except Exception as e:   # MemoryError included: a fault report must never be the reason a fault is lost
      raise GPUEmulatorError(pc, describe(step.instr) if step is not None else "while decoding", m.st.wave_id[int(ws[0])], e) from e
    return step
