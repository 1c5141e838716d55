"""The data caches of one GPU and the traffic a dispatch sends through them: which 128-byte lines each memory instruction of
each wave touches, and where they hit.

Per board (`CACHES`, sizes from AMD's published figures, cited there): a vector L0 per CU (CDNA: the CU's vector L1), a
graphics L1 per shader array (RDNA3), a scalar data cache per WGP (CDNA: per CU), and the L2 all CUs share, split into
channels by line address. Every level holds 128-byte lines in 16-way sets, least recently used out (the ways are not
published for these parts; 16 is assumed). Vector loads look up L0, then GL1, then L2, filling what missed; stores and atomics
write through L0/GL1 (they do not allocate there: AMD documents that writes always miss the GL1) into the write-back L2,
where they hit or allocate; scalar loads go through the scalar cache to L2. A wave's instruction touches each line once, however
many of its lanes share it (the lanes are coalesced). The state outlives the dispatch: the next kernel sees what the last one
left, until an invalidation (tinygrad's ACQUIRE_MEM / RELEASE_MEM cache actions) empties a level.

Not modelled: instruction fetches, the command processor's and DMA engines' own traffic, the Infinity Cache / MALL behind L2,
and the order of accesses within a batch of waves (the observer sees lockstep batches in execution order, not issue time).
"""
from __future__ import annotations
import collections
from dataclasses import dataclass, field
import numpy as np
from emu.amd.exec_salu import SmemStep
from emu.amd.exec_vmem import VmemStep
from emu.amd.observe import DispatchObserver, Launch

LINE = 128
WAYS = 16
KB, MB = 1 << 10, 1 << 20

@dataclass(frozen=True)
class Caches:
  """One board's data caches: bytes per vector L0 (per CU), graphics L1 (per shader array; 0: none), scalar cache (per WGP), L2,
  and the L2's channels."""
  l0: int
  gl1: int
  scalar: int
  l2: int
  channels: int

# RX 7900 XTX (gfx1100): L0 32 KB per CU, GL1 256 KB per array, scalar 16 KB per WGP (amdgpu's GFX 11 cache table, as reported in
# 2022 from its Linux patches), L2 6 MB (AMD's RDNA3 launch slides), 24 channels (assumed: the captures' GL2C samples fall in 0-22).
# RX 9070 XT (gfx1201): L2 8 MB (AMD's RX 9070 XT specifications) in 32 channels (the captures' samples reach channel 31); L0
# and scalar as RDNA3; no GL1 level in this model.
# MI300X / MI355X XCD (gfx942 / gfx950, one CPX partition = one XCD): 32 KB vector L1 per CU, 16 KB scalar cache per CU here,
# 4 MB L2 in 16 channels per XCD (AMD CDNA 3 and CDNA 4 white papers).
CACHES = {"gfx1100": Caches(32 * KB, 256 * KB, 16 * KB, 6 * MB, 24), "gfx1201": Caches(32 * KB, 0, 16 * KB, 8 * MB, 32),
          "gfx942": Caches(32 * KB, 0, 16 * KB, 4 * MB, 16), "gfx950": Caches(32 * KB, 0, 16 * KB, 4 * MB, 16)}

class LineCache:
  """A set-associative cache of `size` bytes of LINE-byte lines, WAYS ways, least recently used out."""
  def __init__(self, size:int):
    self.sets = max(1, size // (LINE * WAYS))
    self._sets: dict[int, collections.OrderedDict] = {}   # set index -> its lines, oldest first (a set is made when first used)
  def access(self, line:int, allocate:bool=True) -> bool:
    """Look `line` (a line number) up: True on a hit (it becomes the most recent); a miss fills it when `allocate`."""
    if (s := self._sets.get(key := line % self.sets)) is None: s = self._sets[key] = collections.OrderedDict()
    if line in s:
      s.move_to_end(line)
      return True
    if allocate:
      s[line] = None
      if len(s) > WAYS: s.popitem(last=False)
    return False
  def invalidate(self): self._sets.clear()

@dataclass
class L2Counts:
  """L2 requests per channel: hits and misses (what GL2C_HIT / GL2C_MISS, TCC_HIT / TCC_MISS count)."""
  hits: np.ndarray
  misses: np.ndarray

@dataclass
class Hierarchy:
  """The caches of one GPU: per-CU L0, per-array GL1, per-WGP scalar caches (each made when its unit is first used), the L2."""
  caches: Caches
  l2: LineCache = field(init=False)
  l0: dict[int, LineCache] = field(default_factory=dict)
  gl1: dict[int, LineCache] = field(default_factory=dict)
  scalar: dict[int, LineCache] = field(default_factory=dict)
  def __post_init__(self): self.l2 = LineCache(self.caches.l2)

  def _level(self, table:dict[int, LineCache], key:int, size:int) -> LineCache:
    if (c := table.get(key)) is None: c = table[key] = LineCache(size)
    return c

  def vector(self, cu:int, array:int, lines:np.ndarray, write:bool, counts:L2Counts):
    """One wave instruction's vector access of `lines` from CU `cu` in shader array `array`."""
    l0, c = self._level(self.l0, cu, self.caches.l0), self.caches
    gl1 = self._level(self.gl1, array, c.gl1) if c.gl1 else None
    for line in lines.tolist():
      if not write and (l0.access(line) or (gl1 is not None and gl1.access(line))): continue
      self._l2(line, counts)

  def scalar_load(self, wgp:int, lines:np.ndarray, counts:L2Counts):
    sc = self._level(self.scalar, wgp, self.caches.scalar)
    for line in lines.tolist():
      if not sc.access(line): self._l2(line, counts)

  def _l2(self, line:int, counts:L2Counts):
    (counts.hits if self.l2.access(line) else counts.misses)[line % self.caches.channels] += 1

  def invalidate(self, l2:bool, vector:bool, scalar:bool):
    """Empty the levels an invalidation names: the L2, the vector L0/GL1, the scalar caches."""
    if l2: self.l2.invalidate()
    for table, on in ((self.l0, vector), (self.gl1, vector), (self.scalar, scalar)):
      if on:
        for c in table.values(): c.invalidate()

def lines_of(addrs:np.ndarray, accesses:list[tuple[int, int]], groups:np.ndarray|None=None) -> tuple[np.ndarray, np.ndarray]:
  """The distinct LINE-byte lines lanes at byte addresses `addrs` touch making `accesses` ((offset, bytes) from the address, at
  most a line each), per group of lanes (`groups`: each lane's group number, small ints; None: one group): (groups, lines),
  sorted by group then line."""
  a = np.asarray(addrs, dtype=np.int64)
  g = np.zeros(len(a), np.int64) if groups is None else np.asarray(groups, dtype=np.int64)
  parts = [x for off, n in dict.fromkeys(accesses) for x in ((a + off) // LINE, (a + off + n - 1) // LINE)]
  if not parts or not len(a): return np.zeros(0, np.int64), np.zeros(0, np.int64)
  key = np.unique(np.concatenate([g << 44 | p for p in parts]))   # (lines are below 2**44: 51-bit addresses)
  return key >> 44, key & ((1 << 44) - 1)

class CacheTraffic(DispatchObserver):
  """Sends each global/scalar memory instruction of a dispatch through `hierarchy` from the unit its wave runs on (`unit(wave,
  waves_per_workgroup) -> (CU, shader array, WGP)`), counting the L2 requests in `counts`. Reads registers (native regions
  step aside while it watches)."""
  reads_registers = True
  def __init__(self, hierarchy:Hierarchy, unit, counts:L2Counts):
    self.hierarchy, self.unit, self.counts, self.wpg = hierarchy, unit, counts, 1

  def launch(self, launch:Launch): self.wpg = launch.waves_per_wg

  def before(self, st, ws:np.ndarray, step, pc:int, first_wave:int):
    scalar = isinstance(step, SmemStep) and step.op.mem == "r"
    # global memory: GLOBAL, FLAT (outside the LDS/scratch apertures, taken as global here) and scalar loads
    if not scalar and not (isinstance(step, VmemStep) and step.fmt in ("GLOBAL", "FLAT") and step.block is None and step.op.kind != "wave"):
      return
    write = not scalar and "w" in step.op.mem
    if scalar: wv, addrs = np.arange(len(ws)), step.lane_addresses(st, ws)   # one address per wave
    else: wv, _, addrs = step.active_addresses(st, ws)
    which, lines = lines_of(addrs, step.accesses, wv)   # every wave's lines at once, by wave
    bounds = np.searchsorted(which, np.arange(len(ws) + 1)).tolist()
    for i, w in enumerate(ws.tolist()):
      if bounds[i] == bounds[i + 1]: continue
      cu, array, wgp = self.unit(w + first_wave, self.wpg)
      mine = lines[bounds[i]:bounds[i + 1]]
      if scalar: self.hierarchy.scalar_load(wgp, mine, self.counts)
      else: self.hierarchy.vector(cu, array, mine, write, self.counts)
