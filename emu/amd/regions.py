"""Native regions: a run of straight-line plain VALU, VOPD, VOP3P, GLOBAL/DS/SMEM load and scalar ALU instructions (the SOPP
no-ops between them riding along), then plain GLOBAL/DS stores or a closing branch, compiled once per code bytes into one native
function that runs the whole run for every wave of a batch, each register value one SIMD vector. This module forms regions
(`joins`, `ends`, `build`), decides when one is hot enough to compile (REGION_HOT ..., PROMOTE), compiles and restores it and
calls it, falling back to the numpy path for any wave it cannot finish (a NaN made, a load outside the native table), so nothing
is half applied; emu.amd.region_ir writes the function's code. The rules, and why, are in docs/emulator.md ("Execution model",
"Native regions and chains"). EMU_REGIONS=0 turns regions off, `check` runs every batch both ways.
"""
from __future__ import annotations
import ctypes, itertools, os
import numpy as np
from emu import native
from emu.amd import step_build
from emu.amd.exec_salu import MASK64, ControlStep, SaluStep, SmemStep
from emu.amd.exec_valu import ValuStep, VopdStep
from emu.amd.exec_vmem import VmemStep
from emu.amd.operands import Src
from emu.amd.region_ir import FELL, lower_region
from emu.amd.step import Machine, Step
from emu.amd.step_cache import STEP_CACHE
from emu.common.hostparts import charged
from emu.amd.wave import HWREG_MODE, MODE_INPUTS

# A region is compiled once running it on the numpy path has cost about what compiling it would (ski rental: whether the code runs
# once more or a million times, never more than twice the better choice in hindsight). Both grow with its instructions (measured in
# docs/emulator.md "Native regions and chains": LLVM's QUICK tier ~10-27 ms + ~1 ms per instruction, the numpy path ~0.11-0.17 ms
# per instruction and batch), so a region of n instructions is hot once it has run
# REGION_HOT + REGION_HOT_PER_INSTR * n of them; but never later than REGION_HOT_MAX: its object then serves every later process
# from the disk cache, and a test suite runs the same code in process after process. (All 0 under EAGER: native at once.)
HOT = (90, 8, 400)          # instructions (per batch) that cost what compiling's fixed part does, per instruction, the most any waits
# A QUICK region is compiled again as FULL (emu.native) once it has run natively as many wave-instructions as that costs: FULL's
# compile ~6.4 ms + ~3 ms per instruction, and its code runs a wave-instruction ~0.036 us sooner (emu.bench matmul: ~21 against
# ~12 M wave-instructions/s); EAGER compiles FULL at once.
PROMOTE = 180_000          # wave-instructions run natively that pay for FULL's fixed part
PROMOTE_PER_INSTR = 80_000  # and per instruction of the region

def set_mode(mode:str):
  """Apply an EMU_REGIONS mode ('', 'eager', 'check'; read from the environment at import) to the regions built from now on.
  CHECK: every region native at once, each run compared with the numpy path; EAGER: every region native at once (compiled before
  its first run); BACKGROUND: compile on the background thread (off: the native code at once, as tests and EAGER want)."""
  global CHECK, EAGER, REGION_HOT, REGION_HOT_PER_INSTR, REGION_HOT_MAX, BACKGROUND
  CHECK = mode == "check"
  EAGER = CHECK or mode == "eager"
  REGION_HOT, REGION_HOT_PER_INSTR, REGION_HOT_MAX = (0, 0, 0) if EAGER else HOT
  BACKGROUND = not EAGER

set_mode(os.environ.get("EMU_REGIONS", ""))
VALU_READS = frozenset({"S0", "S1", "S2", "D0", "VCC", "EXEC", "n", "laneId", "WAVE32", "WAVE64"}) | MODE_INPUTS
LOAD_READS = frozenset({"ADDR", "MEM", "VDATA", "n", "laneId", "WAVE32", "WAVE64"})
STORE_READS = LOAD_READS
DS_READS = frozenset({"ADDR", "MEM", "OFFSET", "OFFSET0", "OFFSET1", "DATA", "DATA2", "n", "laneId", "WAVE32", "WAVE64"})
SALU_READS = frozenset({"S0", "S1", "D0", "SCC", "EXEC", "EXECZ", "VCC", "VCCZ", "n", "WAVE32", "WAVE64"})
BRANCH_READS = frozenset({"PC", "SCC", "EXEC", "EXECZ", "VCC", "VCCZ", "n"})
LANE_READ_READS = frozenset({"EXEC", "SRC0", "VGPR", "S1", "WAVE32", "WAVE64"})
# a VALU result's (bits, bits stored): 32 and 64 bits; 16 into the low half, the high half kept (RDNA) or zeroed (gfx9's 16-bit ops)
STORES = frozenset({(32, 32), (64, 64), (16, 16), (16, 32)})
# (PYFUNCTYPE: a call keeps the GIL; emu.native's _SIGNATURE says why)
SIGNATURE = ctypes.PYFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
                             ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p,
                             ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p)
# A region that ends with a branch back to its own start (a loop) runs again for the same wave inside its function, up to a limit
# per call that keeps each call to about LOOP_BUDGET wave-instructions (the watchdogs and Ctrl-C see the dispatch between calls).
LOOP_BUDGET = 1 << 20


def enabled() -> bool:
  """Whether regions may run in this process (EMU_REGIONS and EMU_NATIVE not 0, native code loadable)."""
  return os.environ.get("EMU_REGIONS", "1") != "0" and native.available()

def plain_valu(s:Step) -> bool:
  """A VALU step whose operands and result need nothing but reads, neg/abs and a 32/64-bit store (the structural half of the test)."""
  if isinstance(s, VopdStep):
    return all(src.kind in ("vgpr", "sgpr", "const") and src.bits == 32 and not src.hi for _, srcs, _, _ in s.halves for src in srcs.values()) \
      and not any(op.fn is None for op, _, _, _ in s.halves)
  if not isinstance(s, ValuStep) or s.op.kind != "vector" or s.op.fn is None: return False
  if s.dpp is not None or s.instr.variant not in ("", "LIT") or s.per_wave or s.scalar_dst or s.sdwa_dst is not None: return False
  op = s.op
  if s.omod or s.clamp or s.int_clamp is not None: return False
  if "D0" in op.writes and "D0" not in op.lane_masks and (s.d_hi or (s.d_bits, s.store_bits) not in STORES): return False
  if not op.reads <= VALU_READS | set(s.fields) or not op.writes <= {"D0"} | op.lane_masks: return False   # (v_cmpx: EXEC a lane mask)
  if "EXEC" in op.reads and "EXEC" not in op.lane_masks: return False
  for sp in s.srcs.values():
    src = sp.src
    if not isinstance(src, Src) or src.kind not in ("vgpr", "sgpr", "const"): return False
    if src.hi or src.bits not in (16, 32, 64): return False   # (a 16-bit source: the low half; true16/op_sel high halves stay out)
    if (sp.neg or sp.abs) and sp.fkind not in (16, 32, 64): return False
  return not any(name != "EXEC" and 128 <= s.mask_read[name] < 256 for name in op.lane_masks & op.reads)   # lane masks from SCC/VCCZ & co.

def lane_read(s:Step) -> bool:
  """v_readfirstlane / v_readlane: a whole-wave op that reads one lane of a VGPR (picked from EXEC, or by an SGPR or constant) into
  an SGPR, and nothing else."""
  if not isinstance(s, ValuStep) or s.op.kind != "wave" or s.op.fn is None or not s.instr.sdst_dest: return False
  if s.dpp is not None or s.instr.variant not in ("", "LIT") or s.op.writes != {"D0"} or not s.op.reads <= LANE_READ_READS | set(s.fields):
    return False
  return all(sp.src.kind in ("sgpr", "const") and sp.src.bits == 32 and not sp.src.hi for sp in s.srcs.values())

def _plain_access(s:Step, ds:bool, mem:str, reads:frozenset) -> bool:
  """A DS (`ds`) or GLOBAL instruction, no block or ADDTID form, whose op is per-lane code that only reads (`mem` "r") or only
  writes ("w") memory (no atomic), reading nothing but `reads` and its fields (the structural half of the tests below, as
  plain_valu)."""
  if not isinstance(s, VmemStep) or s.fmt != ("DS" if ds else "GLOBAL") or s.block is not None or s.addtid: return False
  op = s.op
  return op.kind == "vector" and op.fn is not None and op.mem == mem and not op.mem_rmw and op.reads <= reads | set(s.fields)

def plain_load(s:Step) -> bool:
  """A GLOBAL load into VGPRs: no atomic, block, ADDTID or LDS form."""
  return _plain_access(s, False, "r", LOAD_READS) and s.op.writes == {"VDATA"}

def _scalar_sources(s:SaluStep) -> list[Src]:
  """The register and constant operands a scalar op reads: its sources, and its destination when it reads it (s_cmovk, s_addk)."""
  return list(s.srcs.values()) + ([s.d0] if "D0" in s.op.reads else [])

def plain_store(s:Step) -> bool:
  """A GLOBAL store from VGPRs: no atomic, block or ADDTID form (a region holds stores only after all its other instructions)."""
  return _plain_access(s, False, "w", STORE_READS) and not s.op.writes and s.data["VDATA"].bits in (8, 16, 32, 64, 96, 128)

def plain_ds_load(s:Step) -> bool:
  """A DS load into VGPRs (B8..B128, the 2ADDR / READ2 forms, the D16 forms into either half): no atomic or ADDTID form (CDNA's
  AGPR forms do not lower)."""
  return _plain_access(s, True, "r", DS_READS | {"RETURN_DATA"}) and s.op.writes == {"RETURN_DATA"} and \
    ((bits := s.op.widths.get("RETURN_DATA", 32)) == 16 or bits % 32 == 0)

def plain_ds_store(s:Step) -> bool:
  """A DS store from VGPRs (B8..B128, the D16_HI and 2ADDR / WRITE2 forms): no atomic or ADDTID form (stores come last, as
  global ones)."""
  return _plain_access(s, True, "w", DS_READS) and not s.op.writes

def store_step(s:Step) -> bool:
  """A store a region holds (global or DS): once one has joined, only stores follow (they write once every wave has run)."""
  return plain_store(s) or plain_ds_store(s)

def plain_salu(s:Step) -> bool:
  """A scalar ALU op from registers, constants and EXEC into an SGPR below EXEC, or EXEC itself, and SCC (s_and_saveexec writes EXEC
  and an SGPR), with numpy code over waves (SaluStep.across)."""
  if type(s) is not SaluStep or not s.pure or s.across is None or s.mode_dep: return False
  op, spec = s.op, s.spec
  if not op.reads <= SALU_READS | set(s.fields) or not op.writes <= {"D0", "SCC", "EXEC"} or not op.writes: return False
  if "D0" in op.writes and (s.d_bits not in (32, 64) or s.sdst + s.d_bits // 32 > spec.exec_lo and s.sdst not in (spec.null_reg, spec.exec_lo)):
    return False
  return all(src.kind in ("sgpr", "const") and src.bits in (32, 64) and not src.hi for src in _scalar_sources(s))

def plain_smem(s:Step) -> bool:
  """A scalar memory load into SGPRs below EXEC, with numpy code over waves (SmemStep.across: it reads nothing but its address)."""
  if type(s) is not SmemStep or s.across is None or s.op.writes != {"SDATA"} or s.sdata_bits % 32: return False
  return s.sdata == s.spec.null_reg or s.sdata + s.sdata_bits // 32 <= s.spec.exec_lo

def plain_branch(s:Step) -> bool:
  """s_branch / s_cbranch_scc0/1 / execz/execnz / vccz/vccnz: the last step of a region, whose function then writes each wave's next PC."""
  return type(s) is SaluStep and s.pure and s.across is not None and s.op.writes == {"PC"} and s.op.reads <= BRANCH_READS | set(s.fields)

_joins: dict[int, tuple[Step, bool]] = {}   # joins() by step id, the step held so that its id is not reused

def joins(s:Step) -> bool:
  """Whether step s may be part of a region: a plain VALU step, a plain global or scalar load, a plain scalar ALU op, a branch
  (which ends it: `ends`), or a control step without effect (s_nop, s_delay_alu, s_waitcnt ...). Decided once per step (every
  dispatch's region search asks again for the steps it scans)."""
  if (hit := _joins.get(id(s))) is None:
    hit = _joins[id(s)] = (s, isinstance(s, ControlStep) and s.effect is None or plain_valu(s) or plain_load(s) or plain_store(s)
                           or plain_ds_load(s) or plain_ds_store(s) or plain_salu(s) or plain_smem(s) or plain_branch(s) or lane_read(s))
  return hit[1]

def ends(s:Step) -> bool:
  """Whether a region ends with step s (one that `joins`): a branch."""
  return isinstance(s, SaluStep) and "PC" in s.op.writes

class LazyStep:
  """Stands in for the Step of one instruction of a native region restored without loading its steps (emu.amd.steps.Program.region):
  its `size` is known, and the Step is loaded (from the step cache, else decoded and built) only when something reads more of it:
  a wave the native code hands back to the numpy path, a timing replay, lowering it again to promote it (Region)."""
  __slots__ = ("size", "window", "spec", "_step")
  def __init__(self, window:bytes, spec, size:int): self.window, self.spec, self.size, self._step = window, spec, size, None

  def step(self) -> Step:
    # (pc 0 would name a failure, but these bytes were decoded and built before: the same code cannot fail now)
    if self._step is None: self._step = step_build.load_step(self.window, self.spec, 0)
    return self._step

  def __getattr__(self, name:str): return getattr(self.step(), name)

class Region:
  """A run of straight-line steps that may become native: `steps` [(byte offset from the first, Step)], `size` bytes, `count`
  instructions; one object per code bytes (the same code at another address is the same region). It starts as the whole
  candidate run, executed on the numpy path; once it has run `hot_at` instructions (per batch; in this process, plus what
  earlier processes ran of the same code: the step cache keeps that heat) it is lowered (cut to the prefix that lowers; a region
  whose first step does not lower keeps just that step, on the numpy path for good) and its native function is loaded from the
  disk cache or compiled (in the tier `_tier` picks): on the background compile thread, or at once when BACKGROUND is off. Code
  an earlier process compiled is native from its first run (`_restore`), and code whose first step an earlier process found does
  not lower is cut to that step at its first run. `mode`: the MODE register value the code is lowered for (None once lowered when
  no op of it reads the MODE)."""
  changes = 0   # native functions ever set (compiled, restored, promoted): emu.amd.chain's tables are made again after one
  warming = 0   # runs of regions on the numpy path while they gather heat (emu.bench's warm-up waits until a round adds none)
  def __init__(self, steps:list[Step], lanes:int, spec, mode:int, tail:bytes|None=None, key:tuple|None=None, writes_pc:bool|None=None):
    self.lanes, self.spec, self.mode, self.tail = lanes, spec, mode, tail
    self._set_steps(steps, writes_pc)
    self.fn, self.ir, self.queued, self.failed = None, None, -1, False
    # the native function's tier; the wave-instructions its QUICK code ran (earlier processes' included; None until it first runs)
    self.tier, self.native_work, self.promoting = None, None, False
    # what earlier processes ran of this code (step_cache) counts towards hot_at; what one compiled it into is restored
    self.key = key or (lanes, mode, b"".join(s.instr.raw for s in steps))
    self.pending = self.inherited = STEP_CACHE.heat(spec, self.key)
    self.hot_at = min(REGION_HOT_MAX, REGION_HOT + REGION_HOT_PER_INSTR * self.count)   # (the candidate's instructions: what it compiles)
    self.record = None if CHECK else STEP_CACHE.compiled_region(spec, self.key)

  def _set_steps(self, steps:list[Step], writes_pc:bool|None=None):
    self.steps = list(zip(offsets([s.size for s in steps]), steps))
    self.stores_at: int | None = None   # _stores_at, once asked
    self.size, self.count = sum(s.size for s in steps), len(steps)
    self.writes_pc = ends(steps[-1]) if writes_pc is None else writes_pc   # it ends with a branch: each wave's next PC is the branch's

  def ready(self) -> bool:
    """Whether the native function is there (see the class docstring for when it comes)."""
    if self.fn is None and not self.failed:
      if self.record is not None and (self._restore() or self.failed): return self.fn is not None
      if self.pending < self.hot_at: STEP_CACHE.warm(self.spec, self.key, self.count)
      self.pending += self.count
      if self.pending >= self.hot_at and self.queued != native.NATIVE.generation:
        self.queued = native.NATIVE.generation
        if self.ir is None: self._lower()
        if not self.failed: self._compile(self._tier())
      if self.fn is None and not self.failed and self.queued == -1: Region.warming += 1
    return self.fn is not None

  def _tier(self) -> str:
    """The tier a region is first compiled as: FULL when this process ran most of its heat (a kernel that runs long, or a loop:
    its code will likely run on) or EAGER wants the best code at once; QUICK when earlier processes did (code a test suite runs
    in short bursts, process after process: its compile is the cost that matters). A QUICK region that then runs long is
    promoted (`_promote`). EMU_REGIONS=check compiles QUICK first, so that it checks both tiers' code (FULL where promoted)."""
    if CHECK: return native.QUICK
    return native.FULL if EAGER or self.pending - self.inherited >= self.inherited else native.QUICK

  def _restore(self) -> bool:
    """Become what an earlier process compiled this code into (its step cache record: the prefix that lowered, the MODE it needs,
    its object), native at once without lowering; False (nothing changed) when that object is not there or
    was compiled for another CPU. A record of no prefix (its first step did not lower: that does not depend on the CPU) makes it
    that first step on the numpy path for good (`failed`) without lowering it again."""
    take, mode, key, cpu, _, _, writes_pc, tier, *image = self.record
    self.record = None
    if not take:
      self._set_steps([s for _, s in self.steps][:1])
      self.failed = True
      return False
    if cpu != native.NATIVE.cpu() or (fn := native.NATIVE.function_by_key(key, SIGNATURE, *image[:1])) is None: return False
    self._set_steps([s for _, s in self.steps][:take], writes_pc)
    self.mode, self.fn, self.tier = mode, fn, tier
    Region.changes += 1
    return True

  def _compile(self, tier:str):
    """The function compiled as `tier` (emu.native) from the disk cache, else compiled: in the background, or here when
    BACKGROUND is off."""
    key = native.NATIVE.key(self.ir, tier)
    native.NATIVE.function_soon(self.ir, SIGNATURE, lambda fn: self._compiled(fn, tier, key), tier, BACKGROUND, key)

  def _compiled(self, fn, tier:str, key:str):
    self.ir = None   # not needed again (a big region's IR is ~70 KB; a promotion lowers it again)
    if fn is None:   # LLVM rejected it or native code is unavailable: the numpy path for good (a promotion keeps the QUICK code)
      self.failed = self.fn is None
      return
    self.fn, self.tier = fn, tier
    Region.changes += 1
    sizes = tuple(s.size for _, s in self.steps)
    STEP_CACHE.keep_compiled(self.spec, self.key, (self.count, self.mode, key, native.NATIVE.cpu(), self.tail, sizes, self.writes_pc, tier,
                                                   native.NATIVE.kept_image(key)))   # (on the compile thread: its file read costs no wave)

  def _lower(self):
    """Lower the longest prefix of the steps that lowers into the region's IR, or give up (`failed`) when none does."""
    steps = [s for _, s in self.steps]
    with charged("region lower"): take, ir, reads_mode = lower_region(self.steps, self.lanes, self.spec, self.key[1], store_step)
    if not take:
      self._set_steps(steps[:1])
      self.failed = True
      if not CHECK:   # later processes skip lowering it
        STEP_CACHE.keep_compiled(self.spec, self.key, (0, self.mode, None, None, None, (), False, None))
      return
    self._set_steps(steps[:take])
    self.mode = self.mode if reads_mode else None
    self.ir = ir

  def _promote(self):
    """Compile the QUICK region again as FULL (in the background; its QUICK code runs meanwhile), lowering its steps again (the
    same steps lower the same)."""
    self.promoting = True
    steps = [(off, s.step() if isinstance(s, LazyStep) else s) for off, s in self.steps]
    with charged("region lower"): take, ir, _ = lower_region(steps, self.lanes, self.spec, self.key[1], store_step)
    if take != len(steps): return
    self.ir = ir
    self._compile(native.FULL)

  def run(self, m:Machine, ws:np.ndarray, budget:int|None=None) -> tuple[np.ndarray, int, int] | None:
    """Run the region for waves ws (same PC, sorted): (how many times each wave ran it, the most of a wave, the runs of all); a
    wave runs it more than once only where the region loops back to its start (`_function`), and never past the run in which the
    batch's wave-instructions pass `budget` (the instruction watchdog's remainder: it then fires where the numpy path's would). None
    (nothing done) when it cannot run natively for them."""
    if not CHECK: return self._run(m, ws, budget)
    st, read, written = m.st, m.stats.bytes_read, m.stats.bytes_written
    before = _registers(st)
    stores = [s for _, s in self.steps[self._stores_at():] if not isinstance(s, ControlStep)]
    memory = (self._written(m, ws) if stores else []) + \
      ([(None, m.lds.store)] if any(s.fmt == "DS" for s in stores) else [])   # (the chunk's LDS whole, named None, when DS stores write it)
    saved = [v.copy() for _, v in memory]
    if (ran := self._run(m, ws, budget)) is None: return None
    runs = ran[0]
    native_state = (*_registers(st), np.array([m.stats.bytes_read - read, m.stats.bytes_written - written]), [v.copy() for _, v in memory])
    _put_back(st, before)
    for (_, v), old in zip(memory, saved): v[...] = old
    m.stats.bytes_read, m.stats.bytes_written = read, written
    for i in range(ran[1]):   # each wave as many times as it ran natively
      for _, step in self.steps: step.run(m, ws[runs > i])
    numpy_state = (*_registers(st), np.array([m.stats.bytes_read - read, m.stats.bytes_written - written]), [v for _, v in memory])
    for what, got, want in zip(("VGPR", "SGPR", "PC", "SCC", "bytes read/written"), native_state, numpy_state):
      if not np.array_equal(got, want):
        at = tuple(int(i) for i in np.argwhere(got != want)[0])
        raise RuntimeError(f"EMU_REGIONS=check: the native region differs from the numpy path at {what}{list(at)}: "
                           f"{int(got[at]):#x}, numpy {int(want[at]):#x}")
    for (addr, _), got, want in zip(memory, native_state[5], numpy_state[5]):
      if not np.array_equal(got, want):
        i = int(np.argwhere(got != want)[0][0])
        where = f"LDS byte {i}" if addr is None else f"address {addr + i:#x}"
        raise RuntimeError(f"EMU_REGIONS=check: the native region's stores differ from the numpy path's at {where}: "
                           f"{int(got[i]):#x}, numpy {int(want[i]):#x}")
    return ran

  def _written(self, m:Machine, ws:np.ndarray) -> list[tuple[int, np.ndarray]]:
    """(address, view) of each run of writable memory the region's global stores reach for waves ws (their addresses from the registers
    the region's other steps leave, run here on the numpy path and undone): what EMU_REGIONS=check compares. Only those bytes:
    the host may write other memory meanwhile."""
    st, read = m.st, m.stats.bytes_read
    before = _registers(st)
    body = self._stores_at()
    for _, step in self.steps[:body]: step.run(m, ws)
    lanes, starts, ends = m.active(ws), [], []
    for _, step in self.steps[body:]:
      if isinstance(step, ControlStep) or step.fmt == "DS": continue   # (LDS is compared whole)
      lo, size = step.span
      a = step._addresses(st, lanes.wv, lanes.ln, lanes.dense) + np.uint64(lo & MASK64)
      starts.append(a)
      ends.append(a + np.uint64(size))
    _put_back(st, before)
    m.stats.bytes_read = read
    if not starts: return []
    order = np.argsort(start := np.concatenate(starts))
    if not len(order): return []
    start, end = start[order], np.maximum.accumulate(np.concatenate(ends)[order])
    new = np.concatenate(([True], start[1:] > end[:-1]))   # runs of overlapping or adjacent spans
    out = []
    for lo, hi in zip(start[new].tolist(), np.r_[end[:-1][new[1:]], end[-1:]].tolist()):
      if (mp := m.mem.find(lo, hi - lo)) is not None and mp.writable: out.append((lo, mp.view[lo - mp.addr:hi - mp.addr]))
    return out

  def _run(self, m:Machine, ws:np.ndarray, budget:int|None) -> tuple[np.ndarray, int, int] | None:
    st = m.st
    if self.mode is not None and not (st.hwreg[ws, HWREG_MODE] == self.mode).all(): return None
    n = len(ws)
    ws, out = np.ascontiguousarray(ws, dtype=np.int64), np.empty(n + 4, dtype=np.int64)
    table, wtable = m.mem.native_table(), m.mem.native_table(write=True)
    per_run = self.count * n
    limit = LOOP_BUDGET // per_run if budget is None else min(LOOP_BUDGET // per_run, -(-(budget + 1) // per_run))   # (a ceiling)
    r = self.fn(id(st.vgpr_store), id(st.sgpr), id(ws), n, st.n * st.lanes, native.NATIVE.data_offset, id(table), len(table), id(out),
                id(st.scc), id(st.pc), int(st.pc[ws[0]]), native.NATIVE.libm_table(), id(wtable), len(wtable), max(1, limit),
                id(m.lds.store), m.lds.limit, id(st.wg))
    if r & ~FELL: return None   # the thread's MXCSR is not IEEE's default: nothing was stored
    read, written, most, total = out[:4].tolist()
    m.stats.bytes_read += read
    m.stats.bytes_written += written
    runs = out[4:]
    if r: runs = self.settle(m, ws, runs)
    elif not self.writes_pc: st.pc[ws] += self.size   # (a branch at the end stored each wave's next PC)
    self.ran_natively(total)
    return runs, most, total

  def settle(self, m:Machine, ws:np.ndarray, runs:np.ndarray) -> np.ndarray:
    """After a call in which some wave of ws fell back (its runs -1 - the runs it committed): that wave's run on the numpy path,
    then every wave's stores, in order, after every wave's loads (none was written natively); each wave's runs (a fallen one's
    with the numpy path's)."""
    st, fell = m.st, runs < 0
    body = self._stores_at()   # the steps before the stores
    for _, step in self.steps[:body]: step.run(m, ws[fell])
    done = ws[~fell]
    if body < self.count:
      st.pc[done] += self.steps[body][0]
      for _, step in self.steps[body:]: step.run(m, ws)
    elif not self.writes_pc: st.pc[done] += self.size
    return np.where(fell, -runs, runs)   # (-1 - the runs it committed: with the numpy path's, as many runs as that)

  def ran_natively(self, runs:int):
    """Count `runs` native runs of a QUICK region towards compiling it as FULL (`_promote`), with what its QUICK code ran in earlier
    processes (kept in the step cache as its heat is): code a test suite runs in short bursts, process after process, pays FULL's
    compile once its QUICK runs together cost that, as one long-running process does."""
    if self.tier == native.QUICK and not self.promoting:
      key = ("native",) + self.key
      if self.native_work is None: self.native_work = STEP_CACHE.heat(self.spec, key)
      self.native_work += runs * self.count
      STEP_CACHE.warm(self.spec, key, runs * self.count)
      if self.native_work >= PROMOTE + PROMOTE_PER_INSTR * self.count: self._promote()

  def _stores_at(self) -> int:
    """The index of the region's first store step (its count when it has none). Stores are last: the scan goes back from the end,
    loading (of lazily restored steps) only the stores, the control steps between them and the step before them."""
    if self.stores_at is None:
      real = lambda i: self.steps[i][1].step() if isinstance(self.steps[i][1], LazyStep) else self.steps[i][1]
      i = self.count
      while i and (store_step(step := real(i - 1)) or isinstance(step, ControlStep)): i -= 1
      while i < self.count and isinstance(real(i), ControlStep): i += 1   # (no-ops before the first store belong to the rest)
      self.stores_at = i
    return self.stores_at

def _registers(st) -> tuple[np.ndarray, ...]:
  """Copies of what a region may change in a batch's wave state (EMU_REGIONS=check runs a batch twice): VGPRs, SGPRs, PC, SCC."""
  return st.vgpr_store.copy(), st.sgpr.copy(), st.pc.copy(), st.scc.copy()

def _put_back(st, saved:tuple[np.ndarray, ...]):
  """Restore the wave state `_registers` copied."""
  st.vgpr_store[...], st.sgpr[...], st.pc[...], st.scc[...] = saved

def offsets(sizes:list[int]|tuple[int, ...]) -> list[int]:
  """Each instruction's byte offset from the first, from the instructions' sizes."""
  return [0, *itertools.accumulate(sizes[:-1])]

_built: dict[tuple, Region | None] = {}   # by region key: (lanes, MODE, code bytes)

def build(steps:list[Step], lanes:int, spec, mode:int, tail:bytes|None=None) -> Region | None:
  """The region of `steps` (consecutive steps that `joins`, a branch only last, followed by the 16 code bytes `tail`, None when
  unknown) for waves of `lanes` in MODE `mode`, one per code bytes; None when all of them are control steps."""
  key = (lanes, mode, b"".join(s.instr.raw for s in steps))
  if key not in _built: _built[key] = Region(steps, lanes, spec, mode, tail, key) if any(not isinstance(s, ControlStep) for s in steps) else None
  return _built[key]

def restored(key:tuple, record:tuple, steps:list, spec) -> Region | None:
  """The native region that an earlier process compiled candidate `key` into (`record`: STEP_CACHE.compiled_at), with `steps` for
  the prefix it took (`LazyStep`s); None when its object cannot be loaded here."""
  if key in _built: return _built[key]
  r = Region(steps, key[0], spec, key[1], record[4], key, record[6])
  if r.record is None or not r._restore(): return None
  _built[key] = r
  return r
