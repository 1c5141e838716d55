"""Instruction fetch and compilation: PC -> `Step`, decoded once per PC per dispatch and compiled once per instruction bytes (per
process; emu.amd.step_cache keeps them on disk for the next process). `ProgramCache` lets a later dispatch of unchanged code reuse
what an earlier one fetched."""
from __future__ import annotations
import time
from collections import OrderedDict
from emu.amd import step_build, regions
from emu.amd.api import GPUFault, GPUMemoryFault
from emu.amd.arch import ArchSpec
from emu.common.memory import Mapping, MemoryMap
from emu.amd.step import Step
from emu.amd.step_cache import STEP_CACHE

MAX_REGION = 256   # instructions in one native region (bounds its IR and compile time)
TAIL = 16          # code bytes after a region's candidate run that decided where it ends (its last window, the next instruction's)

class Program:
  """The code one dispatch runs: steps by PC, fetched from mapped memory on first use; native regions by their first PC."""
  def __init__(self, spec:ArchSpec, mem:MemoryMap):
    self.spec, self.mem, self.steps = spec, mem, {}
    self.regions: dict[int, regions.Region | None] = {}
    self.chain = None   # emu.amd.chain.Chain: its native regions as the chain driver's table, made on first use
    self.load_s = 0.0   # host seconds spent fetching, decoding and building steps
    self.fetched: dict[int, bytes] = {}   # PC -> the code bytes its step was decoded from
    self.snapshot: tuple[Mapping, int, bytes] | None = None   # seal(): (the mapping, first PC, its bytes up to the last fetched)
    self.sealed = 0   # len(fetched) when the snapshot was taken

  def seal(self) -> bool:
    """After a dispatch: keep a snapshot of the code bytes it fetched, for `unchanged`; False when they do not lie in one mapping,
    or changed while the dispatch ran (a step was decoded from bytes that are no longer there)."""
    if not self.fetched: return False
    if self.snapshot is not None and self.sealed == len(self.fetched): return True
    lo, hi = min(self.fetched), max(pc + len(data) for pc, data in self.fetched.items())
    if (m := self.mem.find(lo, hi - lo)) is None: return False
    code = m.view[lo - m.addr:hi - m.addr].tobytes()
    if any(code[pc - lo:pc - lo + len(data)] != data for pc, data in self.fetched.items()): return False
    self.snapshot, self.sealed = (m, lo, code), len(self.fetched)
    return True

  def unchanged(self) -> bool:
    """Whether the code the sealed snapshot holds is still mapped by the same mapping with the same bytes."""
    if self.snapshot is None: return False
    m, lo, code = self.snapshot
    return self.mem.find(lo, len(code)) is m and not m.gone() and m.view[lo - m.addr:lo - m.addr + len(code)].tobytes() == code

  def region(self, pc:int, lanes:int, mode:int) -> regions.Region | None:
    """The native region (emu.amd.regions) of the straight-line VALU and load run starting at pc, None when there is none; found once per
    dispatch (the first batch's lanes and MODE), built once per code bytes; one an earlier process compiled is recognised by its
    bytes, without loading its steps (`_compiled_region`)."""
    if pc in self.regions: return self.regions[pc]
    t, before, run, at = time.perf_counter(), self.load_s, [], pc
    try:
      if (r := self._compiled_region(pc, lanes, mode)) is not None:
        self.regions[pc] = r
        return r
      while len(run) < MAX_REGION:
        try: s = self.at(at)
        except GPUFault: break   # past the end of the code, or an instruction that faults when (if ever) a wave reaches it
        if not regions.joins(s): break
        run.append(s)
        at += s.size
        if regions.ends(s): break
      r = self.regions[pc] = regions.build(run, lanes, self.spec, mode, self._tail(pc, at)) if run else None
    finally: self.load_s = before + time.perf_counter() - t   # (the steps' own loading, inside, is part of it once)
    return r

  def _tail(self, pc:int, end:int) -> bytes | None:
    """The TAIL code bytes at `end` when the mapping of `pc` holds them, else None."""
    if (m := self.mem.find(pc, end + TAIL - pc)) is None: return None
    return bytes(m.view[end - m.addr:end - m.addr + TAIL])

  def _compiled_region(self, pc:int, lanes:int, mode:int) -> regions.Region | None:
    """The native region an earlier process compiled from the code at `pc`, found by its bytes and the TAIL after them (the same
    bytes make the same steps and the same candidate run), its steps not loaded; None when there is none or it cannot load."""
    if regions.CHECK or (m := self.mem.find(pc, TAIL)) is None: return None
    if (hit := STEP_CACHE.compiled_at(self.spec, lanes, mode, m.as_bytes()[pc - m.addr:])) is None: return None
    key, record = hit
    code = key[2] + record[4]
    lazy = [regions.LazyStep(code[off:off + TAIL], self.spec, size) for off, size in zip(regions.offsets(record[5]), record[5])]
    if (r := regions.restored(key, record, lazy, self.spec)) is not None: self.fetched[pc] = code   # (what seal() checks)
    return r

  def at(self, pc:int) -> Step:
    if (s := self.steps.get(pc)) is None:
      t = time.perf_counter()
      try: s = self.steps[pc] = self._load(pc)
      finally: self.load_s += time.perf_counter() - t
    return s

  def _load(self, pc:int) -> Step:
    if (m := self.mem.find(pc, 4)) is None: raise GPUMemoryFault(pc, False, pc=pc, detail="instruction fetch")
    data = self.fetched[pc] = bytes(m.view[pc - m.addr: min(pc - m.addr + 16, m.size)])
    return step_build.load_step(data, self.spec, pc)

class ProgramCache:
  """The Programs of recent dispatches on one memory map, by (entry PC, wave size, RSRC1): a dispatch of code whose bytes are
  unchanged since the last one (`Program.unchanged`: one comparison of the bytes fetched before) reuses its steps and regions
  instead of fetching every PC again (~10-70 us each). The MAX most recently used are kept."""
  MAX = 256
  def __init__(self, spec:ArchSpec, mem:MemoryMap):
    self.spec, self.mem, self.programs = spec, mem, OrderedDict()

  def get(self, key:tuple) -> Program:
    """The Program for a dispatch: the one kept under `key` when its code is unchanged, else a fresh one."""
    if (p := self.programs.get(key)) is not None and p.unchanged():
      self.programs.move_to_end(key)
      p.load_s = 0.0
      return p
    p = self.programs[key] = Program(self.spec, self.mem)
    self.programs.move_to_end(key)
    while len(self.programs) > self.MAX: self.programs.popitem(last=False)
    return p

  def done(self, key:tuple, p:Program):
    """After the dispatch ran `p`: keep it for the next dispatch under `key` if its code can be checked (`Program.seal`)."""
    if not p.seal() and self.programs.get(key) is p: del self.programs[key]
