"""The performance counters of an emulated GPU (tinygrad's PMC=1 path), as the PM4 command processor drives them.

tinygrad programs them with PM4 register writes (ops_amd.py, AMDComputeQueue.pmc_start / pmc_read): a `*_PERFCOUNTERn_SELECT`
per counter (perf_sel = the event; on gfx11+ SQ counter n is selected by SELECT register 2n), CP_PERFMON_CNTL (gfx12:
CP_PERFMON_CNTL_1) to reset (perfmon_state 0), start (1) and sample (perfmon_sample_enable), and after each kernel COPY_DATA
from each counter's `*_PERFCOUNTERn_LO/_HI` for every instance, selected through GRBM_GFX_INDEX (SQ: shader engine, array and
WGP on RDNA, shader engine on CDNA; GL2C/TCC: channel; GRBM: one). This unit keeps the selects, counts the events of every
dispatch while counting, latches them at a sample and answers those reads.

What each event counts is `EVENTS`: instruction counts by the timing model's classes of the executed stream (the rules the
real captures in data/sqtt confirm: tests/timing/test_sqtt_compare.py), waves, cycles from the timing model and LDS cycles from
the lanes' addresses (emu.amd.lds_banks), placed on the shader engine / array / WGP the model ran each wave on
(emu.amd.sqtt_encode.Shape); `CLOCK_EVENTS` the GPU clock; `L2_EVENTS` the L2 requests of the cache model (emu.amd.caches) the
unit keeps across dispatches and the command processor's cache actions empty. An event the bench cannot count (a stall, a
wait level) is refused by name at its select write, with the events it can count: a PacketError that stops the queue, never a
zero read back.
"""
from __future__ import annotations
from dataclasses import dataclass
from typing import Callable
import numpy as np
from emu.amd.api import Dispatch, DispatchStats
from emu.amd.arch import get_spec
from emu.amd.caches import CACHES, CacheTraffic, Hierarchy, L2Counts
from emu.amd.lds_banks import LdsBanks
from emu.amd.sqtt_encode import Shape
from emu.amd.timing import TimingModel, cu_of
from mockgpu.clock import TICKS_PER_SECOND, DeviceClock
from mockgpu.engine import PacketError
from mockgpu.amd.registers import ComputeRegs

@dataclass
class Counts:
  """What one dispatch did, as the events read it: per wave the counter instance of its unit (an index into a block's instances:
  channel, shader engine, array, WGP), issued instructions by timing class, start and end cycle (shader clock)."""
  where: np.ndarray                # (waves, 4) int
  classes: dict[str, np.ndarray]   # class -> (waves,) int
  start: np.ndarray
  end: np.ndarray
  lds_cycles: np.ndarray | None = None       # per wave (None: the LDS banks were not watched)
  lds_conflicts: np.ndarray | None = None

Event = Callable[[Counts, tuple], np.ndarray]   # (a dispatch's counts, the block's instance shape) -> per-instance counts

def _per_wave(values:Callable[[Counts], np.ndarray]) -> Event:
  """An SQ event that adds a value per wave to the counter of the wave's instance."""
  def count(c:Counts, shape:tuple) -> np.ndarray:
    out = np.zeros(shape, np.int64)
    if len(c.where): np.add.at(out, tuple(c.where.T), values(c))
    return out
  return count

def _busy(c:Counts, shape:tuple) -> np.ndarray:
  """Cycles each instance held waves: from its first wave's start to its last wave's end."""
  out = np.zeros(shape, np.int64)
  for at in {tuple(x) for x in c.where.tolist()}:
    mine = np.all(c.where == at, axis=1)
    out[at] = int(c.end[mine].max() - c.start[mine].min())
  return out

def _classes(*names:str) -> Callable[[Counts], np.ndarray]:
  return lambda c: sum((c.classes.get(n, 0) for n in names), np.zeros(len(c.where), np.int64))

# event name -> (its per-instance counts of one dispatch, what it counts). SQ_INSTS_VALU counts transcendental and WMMA/MFMA
# instructions too, SQ_INSTS_SALU scalar ALU instructions only (not branches, waits, s_nop): the classes the captures' counters match
EVENTS: dict[str, tuple[Event, str]] = {
  "SQ_WAVES": (_per_wave(lambda c: np.ones(len(c.where), np.int64)), "waves launched"),
  "SQ_INSTS_VALU": (_per_wave(_classes("valu", "trans")), "VALU instructions issued (transcendental and matrix ones included)"),
  "SQ_INSTS_SALU": (_per_wave(_classes("salu")), "SALU instructions issued (not branches, waits or s_nop)"),
  "SQ_INSTS_SMEM": (_per_wave(_classes("smem")), "scalar memory instructions issued"),
  "SQ_INSTS_LDS": (_per_wave(_classes("lds")), "LDS (DS) instructions issued"),
  "SQ_INSTS_BRANCH": (_per_wave(_classes("branch")), "branch instructions issued"),
  **{f"{p}_LDS_IDX_ACTIVE": (_per_wave(lambda c: c.lds_cycles), "cycles the LDS served DS instructions, bank conflicts included "
                              "(emu.amd.lds_banks)") for p in ("SQ", "SQC")},
  **{f"{p}_LDS_BANK_CONFLICT": (_per_wave(lambda c: c.lds_conflicts), "LDS cycles lost to bank conflicts (emu.amd.lds_banks)")
     for p in ("SQ", "SQC")},
  "SQ_BUSY_CYCLES": (_busy, "shader cycles a WGP (CDNA: shader engine) held waves, from the timing model"),
}
# clock events: GPU clock cycles from the start of counting to the sample (the emulated clock advances only with work: the
# dispatches' timing-model cycles and the copies' modelled time, so the GPU is busy the whole time)
CLOCK_EVENTS = {"GRBM_COUNT": "GPU clock cycles while counting", "GRBM_GUI_ACTIVE": "GPU clock cycles the GPU was busy while counting"}
# L2 events: requests the L2 took per channel (emu.amd.caches), from the cache model the counters keep across dispatches
L2_EVENTS = {"GL2C_HIT": "hits", "GL2C_MISS": "misses", "TCC_HIT": "hits", "TCC_MISS": "misses"}

class PerfCounters:
  """The counter blocks of one GPU. `write_reg`/`read_reg` see every PM4 register access; `dispatch` runs one, counting it."""
  def __init__(self, arch:str, gc_version:tuple[int, int, int], engines:int, arrays:int, cus:int, clock:DeviceClock, clock_mhz:float,
               regs:ComputeRegs|None=None):
    from tinygrad.runtime.support.amd import import_pmc
    self.arch, self.clock, self.clock_mhz = arch, clock, clock_mhz
    self.gfx9 = gc_version[0] == 9
    self.gc = gc = (regs or ComputeRegs(gc_version)).gc
    cus_per_wgp = 1 if self.gfx9 else 2
    self.shape = Shape(engines, arrays, cus_per_wgp)
    # each block's instances as tinygrad lays out its samples (AMDComputeQueue.pmc_start): (channel, shader engine, array, WGP)
    self.instances = {"SQ": (1, engines, 1, 1) if self.gfx9 else (1, engines, arrays, cus // cus_per_wgp // (engines * arrays)), "GRBM": (1, 1, 1, 1),
                      "TCC" if self.gfx9 else "GL2C": (16 if self.gfx9 else 32, 1, 1, 1)}
    self.cus, self.arrays = cus, engines * arrays
    self.caches = Hierarchy(CACHES[arch])
    target = (int(arch[3:-2]), int(arch[-2], 16), int(arch[-1], 16))   # tinygrad's target tuple: gfx942 -> (9, 4, 2)
    self.names = {v: k for k, v in import_pmc(target).items()}   # (block, perf_sel) -> event name
    self.selects: dict[int, tuple[str, int]] = {}   # SELECT register address -> (block, counter slot)
    self.samples: dict[int, tuple[str, int, bool]] = {}   # LO/HI register address -> (block, slot, high half)
    for name, r in gc.regs.items():
      if not name.endswith("_SELECT") or "_PERFCOUNTER" not in name: continue
      block, _, n = name[3:-len("_SELECT")].rpartition("_PERFCOUNTER")
      if not n.isdigit(): continue
      if block == "SQ" and not self.gfx9:   # gfx11+: SQ counter k is selected by SELECT 2k (the odd ones select nothing here)
        if int(n) % 2 == 0: self.selects[r.addr[0]] = (block, int(n) // 2)
      else: self.selects[r.addr[0]] = (block, int(n))
    for name, r in gc.regs.items():
      for half in ("_LO", "_HI"):
        if name.endswith(half) and "_PERFCOUNTER" in name:
          block, _, n = name[3:-3].rpartition("_PERFCOUNTER")
          if n.isdigit(): self.samples[r.addr[0]] = (block, int(n), half == "_HI")
    cntl = "regCP_PERFMON_CNTL" if gc_version[0] <= 11 else "regCP_PERFMON_CNTL_1"
    self.cntl = gc.regs[cntl]
    self.grbm = gc.regGRBM_GFX_INDEX
    # SQ counters count compute waves while SQ_PERFCOUNTER_CTRL.cs_en is set (COMPUTE_PERFCOUNT_ENABLE gates nothing here: tinygrad
    # zeroes it with every dispatch's register block, and the captures' counters count all the same)
    self.sq_ctrl = gc.regSQ_PERFCOUNTER_CTRL
    self.chosen: dict[tuple[str, int], str] = {}   # (block, slot) -> event
    self.counts: dict[tuple[str, int], np.ndarray] = {}
    self.sampled: dict[tuple[str, int], np.ndarray] = {}
    self.counting = self.sq_compute = False
    self.index = (None, None, None)   # GRBM_GFX_INDEX (instance, shader engine, array); None: broadcast
    self.started = 0

  # ---- registers ----
  def write_reg(self, addr:int, value:int):
    """A PM4 register write."""
    if addr == self.grbm.addr[0]:
      f = self.grbm.decode(value)
      sa = "sh" if self.gfx9 else "sa"
      self.index = tuple(None if f.get(f"{k}_broadcast_writes") else f.get(f"{k}_index", 0) for k in ("instance", "se", sa))
    elif addr == self.sq_ctrl.addr[0]: self.sq_compute = bool(self.sq_ctrl.decode(value)["cs_en"])
    elif addr == self.cntl.addr[0]: self._control(self.cntl.decode(value))
    elif (sel := self.selects.get(addr)) is not None: self._select(sel, value)

  def read_reg(self, addr:int) -> int | None:
    """A counter's sampled value (the GRBM-selected instance's low or high half), else None (not a counter register)."""
    if (s := self.samples.get(addr)) is None: return None
    block, slot, high = s
    if (v := self.sampled.get((block, slot))) is None: return 0   # (a counter nobody selected reads 0, as after reset)
    inst, se, sa = (x or 0 for x in self.index)
    idx = (inst, 0, 0, 0) if block != "SQ" else (0, se, 0, 0) if self.gfx9 else (0, se, sa, inst >> 2)
    value = int(v[tuple(min(i, n - 1) for i, n in zip(idx, v.shape))])
    return (value >> 32) & 0xffffffff if high else value & 0xffffffff

  def _select(self, sel:tuple[str, int], value:int):
    block, slot = sel
    reg = getattr(self.gc, f"reg{block}_PERFCOUNTER{slot * 2 if block == 'SQ' and not self.gfx9 else slot}_SELECT")
    event = reg.decode(value).get("perf_sel", value & 0x3ff)
    name = self.names.get((block, event), f"{block} event {event}")
    if (name not in EVENTS and name not in CLOCK_EVENTS and name not in L2_EVENTS) or block not in self.instances:
      raise PacketError(f"PMC: counter {name} ({block} select {event}) is not modelled: the bench has no model of that hardware event; it counts "
                        f"{', '.join(sorted(n for n in (*EVENTS, *CLOCK_EVENTS, *L2_EVENTS) if n in self.names.values()))} (PMC_COUNTERS=...)")
    self.chosen[sel] = name
    self.counts[sel] = np.zeros(self.instances[block], np.int64)

  def _control(self, f:dict):
    if f.get("perfmon_sample_enable"):
      elapsed = round((self.clock.now() - self.started) * self.clock_mhz * 1e6 / TICKS_PER_SECOND) if self.counting else 0
      for sel, name in self.chosen.items():
        if name in CLOCK_EVENTS: self.counts[sel][:] = elapsed
      self.sampled = {k: v.copy() for k, v in self.counts.items()}
    state = f.get("perfmon_state", 0)
    if state == 0:
      self.counting = False
      for v in self.counts.values(): v[:] = 0
    elif state == 1 and not self.counting: self.counting, self.started = True, self.clock.now()
    elif state == 2: self.counting = False

  # ---- dispatch ----
  def dispatch(self, run:Callable[..., DispatchStats], d:Dispatch, timing:TimingModel|None=None) -> DispatchStats:
    """Run `d` through `run(d, timing=...)`; while counting compute dispatches, add its events to the selected counters."""
    chosen = set(self.chosen.values())
    if not (self.counting and self.sq_compute and chosen & (set(EVENTS) | set(L2_EVENTS))):
      return run(d) if timing is None else run(d, timing=timing)
    tm = timing or TimingModel(get_spec(self.arch), timeline=True)
    # (the LDS bank model and the cache traffic read registers: native regions step aside while they watch)
    banks = LdsBanks() if any("_LDS_" in n for n in chosen) else None
    traffic = None
    if chosen & set(L2_EVENTS):
      l2 = L2Counts(np.zeros(self.caches.caches.channels, np.int64), np.zeros(self.caches.caches.channels, np.int64))
      traffic = CacheTraffic(self.caches, self._unit, l2)
    stats = run(d, timing=tm, watch=tuple(w for w in (banks, traffic) if w is not None))
    events = self.events(tm, banks)
    for sel, name in self.chosen.items():
      if name in events: self.counts[sel] += events[name]
      elif name in L2_EVENTS and traffic is not None: self.counts[sel][:len(l2.hits), 0, 0, 0] += getattr(l2, L2_EVENTS[name])
    return stats

  def _unit(self, wave:int, waves_per_wg:int) -> tuple[int, int, int]:
    """(CU, shader array, WGP) the timing model runs a wave on, as the cache traffic needs them (dispatch-wide numbers)."""
    cu = cu_of(wave, waves_per_wg, self.cus)
    u = self.shape.unit(cu, 0)
    array = u.se * self.shape.arrays + u.sa
    return cu, array, array * (self.cus // self.shape.cus_per_wgp // self.arrays) + u.wgp

  def invalidate(self, l2:bool, vector:bool, scalar:bool):
    """A cache action of the command processor (ACQUIRE_MEM, RELEASE_MEM): empty those levels of the counters' cache model."""
    self.caches.invalidate(l2, vector, scalar)

  def events(self, tm:TimingModel, banks:LdsBanks|None=None) -> dict[str, np.ndarray]:
    """The dispatch events (EVENTS) of the dispatch `tm` timed (a TimingModel that kept its timeline) and `banks` watched (None:
    no LDS events), per SQ instance."""
    if not tm.keep_timeline: raise ValueError("PerfCounters.events needs a TimingModel that keeps its timeline")
    counts = self._counts(tm, banks)
    return {name: count(counts, self.instances["SQ"]) for name, (count, _) in EVENTS.items() if banks is not None or "_LDS_" not in name}

  def _counts(self, tm:TimingModel, banks:LdsBanks|None) -> Counts:
    """The dispatch's counts from the timing model's timeline (each wave's SQ instance, classes, start and end) and the LDS banks."""
    waves: dict[int, list] = {}
    for w, pc, cyc, cls, _ in tm.timeline:
      rec = waves.setdefault(w, [cyc, cyc, {}])
      if pc < 0: rec[0] = cyc
      else: rec[1], rec[2][cls] = cyc, rec[2].get(cls, 0) + 1
    order, sq = sorted(waves), self.instances["SQ"]
    units = [self.shape.unit(*tm.placement(w)) for w in order]
    where = np.array([[0, min(u.se, sq[1] - 1), min(u.sa, sq[2] - 1), min(u.wgp, sq[3] - 1)] for u in units], np.int64).reshape(-1, 4)
    classes = {c: np.array([waves[w][2].get(c, 0) for w in order], np.int64) for c in {c for w in order for c in waves[w][2]}}
    lds = banks.of(order) if banks is not None else (None, None)
    return Counts(where, classes, np.array([waves[w][0] for w in order], np.int64), np.array([waves[w][1] for w in order], np.int64), *lds)
