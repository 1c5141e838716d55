"""The cycle replay of one CU (the timing model's machine; emu/amd/timing.py classifies instructions and feeds it).

`simulate_cu` replays the recorded instruction streams of the waves one CU runs, built from small units: `_Workgroups` launches
waves as slots free up and releases barriers; `_ICache` fetches instruction-cache lines; `_Ports` arbitrates each SIMD's ports
(VALU, transcendental, SALU, VMEM) and the CU's shared ones (SMEM, LDS); `_Matrix` is a SIMD's WMMA unit and the VALU work that
waits on it; each `_Wave` keeps its own issue history, wait counters and `s_delay_alu` dependencies; `_Periods` writes out a loop's
trips once the CU's state repeats. The loop issues, each cycle and per port, the ready instruction of the oldest wave (a heap of
(cycle, wave) items). Costs and latencies come from `timing.Params`; each rule cites its trace evidence in docs/timing.md.

This is the reference: emu/amd/cu_replay.c mirrors `_CU.run` rule for rule in C (emu/amd/cu_native.py builds and calls it; a rule
changed here changes there too, and tests/unit/amd/test_cu_native.py compares every issue time of both).
"""
from __future__ import annotations
import heapq
from dataclasses import dataclass, field
import numpy as np
from typing import TYPE_CHECKING
if TYPE_CHECKING: from emu.amd.timing import OpInfo, Params

LAUNCH_GAP = 1            # consecutive wave starts of a dispatch
ISSUE = 1                 # a wave issues at most one instruction per cycle
ILINE = 64                # instruction cache line bytes; a fetch brings the 128-byte pair of lines (lines counted from the entry)
ILAUNCH_LINES = 4         # lines the launch fetch brings from the entry line on; entering line L requests line L + 1
NEVER = -10**9            # "long ago": the cycle of an event that has not happened

# replay codes: instruction classes and SIMD ports as small ints (the port order matters: VMEM and LDS last, ports that read VGPRs)
CLASSES = ("valu", "trans", "salu", "branch", "smem", "vmem_load", "vmem_store", "lds", "delay", "nop", "waitcnt", "barrier", "end", "other")
(C_VALU, C_TRANS, C_SALU, C_BRANCH, C_SMEM, C_VMEM_LOAD, C_VMEM_STORE, C_LDS, C_DELAY, C_NOP, C_WAITCNT, C_BARRIER, C_END,
 C_OTHER) = range(len(CLASSES))
CLS_CODE = {c: n for n, c in enumerate(CLASSES)}
PORTS = ("valu", "trans", "matrix", "salu", "smem", "vmem", "lds")
P_VALU, P_TRANS, P_MATRIX, P_SALU, P_SMEM, P_VMEM, P_LDS = range(len(PORTS))
COUNTERS = ("vm", "vs", "lgkm", "ds", "km")
VM, VS = COUNTERS.index("vm"), COUNTERS.index("vs")

@dataclass(frozen=True, slots=True)
class ReplayOp:
  """An OpInfo as the replay loop reads it (built once per step): ints instead of strings, port flags resolved (slots: the loop
  reads several fields per instruction, faster than a named tuple's)."""
  cls: int
  port: int                 # PORTS index, -1: none
  shared: bool              # the port is the CU's (SMEM, LDS), not the wave's SIMD's
  vec: bool                 # port cycles scale with the wave's passes (VALU, transcendental, matrix)
  cost: int
  lds_cycles: int
  waits: tuple[tuple[int, int], ...]   # (COUNTERS index, max outstanding)
  delay: int
  counter: int              # COUNTERS index of an LDS / SMEM instruction
  size: int
  name: str                 # the OpInfo class (timeline records)
  cond: bool                # conditional branch
  via_trans: bool           # also needs the transcendental port
  gated: bool               # its readiness depends on more than the wave's s_delay_alu dependencies (`_CU.readiness`)
  own_port: bool            # its port is its SIMD's and gates no other (not the transcendental, matrix or shared ports, not via_trans)
  vreads: tuple[int, ...] = ()    # a VALU op's VGPRs read and written (_ValuPipe), an SALU op's SGPRs (SGPR_BASE + n)
  vwrites: tuple[int, ...] = ()
  drain: bool = False             # waits until the wave's VALU results are written back (_CU.readiness)
  lat: int = 0                    # result latency in its pipe when not the family's (0: valu_raw / trans_raw and trans_result)
  row: tuple | None = field(default=(), compare=False, repr=False)   # its fields of a stream table's row (ROW_PARTS), made once

def replay_op(info:OpInfo) -> ReplayOp:
  """The replay form of an OpInfo."""
  port, cls = PORTS.index(info.port) if info.port is not None else -1, CLS_CODE[info.cls]
  op = ReplayOp(cls, port, port in (P_SMEM, P_LDS), port in (P_VALU, P_TRANS, P_MATRIX), info.cost, info.lds_cycles,
                tuple((COUNTERS.index(k), n) for k, n in info.waits), info.delay, COUNTERS.index(info.counter) if info.counter else -1,
                info.size, info.cls, info.cond, info.via_trans, port >= P_VMEM or info.cond or cls in (C_WAITCNT, C_END, C_NOP),
                port in (P_VALU, P_SALU, P_VMEM) and not info.via_trans, info.vreads, info.vwrites, info.drain, info.lat)
  object.__setattr__(op, "row", _row_of(op))
  return op

def cache_spans(sizes:list[int], pcs:list[int], entry:int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """Per instruction of `sizes` bytes at `pcs`: first and last instruction cache line (counted from the line of `entry`), whether
  it enters its first line (starts inside its first ILINE bytes)."""
  off = np.asarray(pcs, dtype=np.int64) - entry
  size = np.asarray(sizes, dtype=np.int64)
  return off // ILINE, (off + size - 1) // ILINE, off % ILINE < size

VALU_DEP, TRANS_DEP = -1, -2   # alu_deps' codes for the latencies Params.valu_dep / trans_dep (other codes: that many cycles)

def alu_deps(cls:np.ndarray, delay:np.ndarray) -> tuple[np.ndarray, int, tuple[np.ndarray, np.ndarray, np.ndarray]]:
  """The s_delay_alu dependencies of a stream whose instructions have classes `cls` and delay fields `delay` (arrays). Each
  instruction waits for (k, code) pairs, each "until instruction k's issue plus a latency" (code VALU_DEP or TRANS_DEP, else that
  many cycles). They are static: an s_delay_alu names the n-th most recent VALU (VALU_DEP_1-4), transcendental (TRANS32_DEP_1-3)
  or SALU (SALU_CYCLE_1-3: 1-3 cycles after its issue + 1) instruction of the wave's own in-order stream before the instruction
  `skip` non-delay instructions on (instid1's; instid0's: the next one); ids without a model (0, FMA_ACCUM_CYCLE_1, an
  instruction that does not exist) wait for nothing. Returns per instruction a number for its pairs counted back from it ((j - k,
  code): 0 for none, equal numbers for equal pairs), the farthest back any pair reaches, and the pairs as CSR arrays (off, k,
  code: instruction j's pairs are k[off[j]:off[j + 1]], in the order their delays came). Computed over arrays (a stream is up to
  millions of instructions; Python runs once per instruction with several pairs)."""
  n = len(cls)
  delays = np.flatnonzero(cls == C_DELAY)
  target = k = code = np.zeros(0, dtype=np.int64)
  if len(delays):   # (CDNA has no s_delay_alu)
    simm = delay[delays].astype(np.int64)
    # each s_delay_alu's two (skip, id) slots, in the order they apply: by delay, instid0 first
    at = np.repeat(delays, 2)
    skip = np.stack([np.zeros_like(simm), (simm >> 4) & 7], axis=1).reshape(-1)
    dep = np.stack([simm & 0xf, (simm >> 7) & 0xf], axis=1).reshape(-1)
    plain = np.flatnonzero(cls != C_DELAY)   # the instructions dependencies attach to
    slot = np.searchsorted(plain, at) + skip
    keep = (dep != 0) & (slot < len(plain))
    target, dep = plain[slot[keep]], dep[keep]
    def before(mask:np.ndarray) -> tuple[np.ndarray, np.ndarray]:   # (positions of such instructions, how many precede each target)
      pos = np.flatnonzero(mask)
      return pos, np.searchsorted(pos, target)
    (valu, nv), (trans, nt), (salu, ns) = before(cls <= C_TRANS), before(cls == C_TRANS), before((cls == C_SALU) | (cls == C_BRANCH))
    # which earlier instruction of its kind each names (the n-th most recent; SALU_CYCLE_n: the most recent) and its latency code
    back = np.where(dep <= 4, dep, np.where(dep <= 7, dep - 4, 1))
    code = np.where(dep <= 4, VALU_DEP, np.where(dep <= 7, TRANS_DEP, dep - 8 + 1))
    k = np.full(len(target), -1, dtype=np.int64)   # (-1: no model for the id, or no such instruction)
    for lo, hi, pos, count in ((1, 4, valu, nv), (5, 7, trans, nt), (9, 11, salu, ns)):
      ok = (dep >= lo) & (dep <= hi) & (count >= back)
      k[ok] = pos[count[ok] - back[ok]]
    found = np.flatnonzero(k >= 0)
    found = found[np.argsort(target[found], kind="stable")]   # by instruction, each one's pairs in the order their delays came
    target, k, code = target[found], k[found], code[found]
  off = np.zeros(n + 1, dtype=np.int32)
  np.cumsum(np.bincount(target, minlength=n), out=off[1:])
  flat = (off, np.ascontiguousarray(k, dtype=np.int64), np.ascontiguousarray(code, dtype=np.int64))
  kind = np.zeros(n, dtype=np.int64)
  if not len(target): return kind, 0, flat
  # number each instruction's pairs: a single pair (most) as distance * 16 + code + 8 (>= 0), several as a negative number per
  # distinct tuple of them; np.unique numbers those numbers
  dist = target - k
  first = np.flatnonzero(np.r_[True, target[1:] != target[:-1]])
  count = np.diff(np.r_[first, len(target)])
  key = (dist * 16 + code + 8)[first]
  multi: dict[tuple, int] = {}
  for m in np.flatnonzero(count > 1).tolist():
    a, c = int(first[m]), int(count[m])
    key[m] = -1 - multi.setdefault(tuple(zip(dist[a:a + c].tolist(), code[a:a + c].tolist())), len(multi))
  kind[target[first]] = np.unique(key, return_inverse=True)[1].reshape(-1) + 1
  return kind, int(dist.max()), flat

# a Stream's table: per distinct instruction the ReplayOp's fields, its pc, cache span (first, last line, whether it enters the
# first), plain line and waits (up to MAX_WAITS (counter, limit) pairs). ROW is its layout, and cu_native.prelude writes it out as
# emu/amd/cu_replay.c's OpRow (a C struct: numpy's aligned layout is the C compiler's).
MAX_WAITS, MAX_VREADS, MAX_VWRITES = 8, 12, 4
N_VGPRS, MAX_PIPE = 256, 64   # (the compiled replay's room: a wave's VGPRs, a VALU pipe's depth)
SGPR_BASE = N_VGPRS           # an SALU op's SGPR n is register SGPR_BASE + n of its ReplayOp (VGPRs: 0..N_VGPRS-1)
N_REGS = SGPR_BASE + 128      # the registers a wave's ready table holds
ROW = np.dtype([("pc", np.int64), *((f, np.int32) for f in ("cost", "lds_cycles", "delay", "size", "first", "last", "plain")),
                *((f, np.int8) for f in ("cls", "port", "shared", "vec", "cond", "via_trans", "gated", "own_port", "enter", "counter", "n_waits",
                                         "n_vreads", "n_vwrites", "drain", "lat")),
                ("wait_counter", np.int8, (MAX_WAITS,)), ("wait_limit", np.int8, (MAX_WAITS,)), ("vreads", np.int16, (MAX_VREADS,)),
                ("vwrites", np.int16, (MAX_VWRITES,))], align=True)
OP_COLUMNS = ("cls", "port", "shared", "vec", "cost", "lds_cycles", "delay", "counter", "size", "cond", "via_trans", "gated", "own_port",
              "drain", "lat")

# a ReplayOp's part of a ROW, in this order: (field, width) (ReplayOp.row)
ROW_PARTS = (*((name, 1) for name in OP_COLUMNS), ("n_waits", 1), ("wait_counter", MAX_WAITS), ("wait_limit", MAX_WAITS),
             ("n_vreads", 1), ("vreads", MAX_VREADS), ("n_vwrites", 1), ("vwrites", MAX_VWRITES))

def _row_of(op:ReplayOp) -> tuple | None:
  """The op's ROW_PARTS as one tuple of ints; None when its waits or registers exceed the row's room (the Python replay's)."""
  if len(op.waits) > MAX_WAITS or len(op.vreads) > MAX_VREADS or len(op.vwrites) > MAX_VWRITES: return None
  def pad(xs:tuple, n:int) -> tuple: return (*xs, *(0,) * (n - len(xs)))
  return (*(int(getattr(op, name)) for name in OP_COLUMNS), len(op.waits), *pad(tuple(c for c, _ in op.waits), MAX_WAITS),
          *pad(tuple(n for _, n in op.waits), MAX_WAITS), len(op.vreads), *pad(op.vreads, MAX_VREADS), len(op.vwrites),
          *pad(op.vwrites, MAX_VWRITES))

def _table(ops:list[ReplayOp], columns:dict[str, np.ndarray]) -> np.ndarray | None:
  """A stream's table (ROW): per distinct instruction its ReplayOp (`ops`) and the other fields' `columns`; None when a value does
  not fit its field."""
  number: dict[int, int] = {}
  which = np.fromiter((number.setdefault(id(op), len(number)) for op in ops), np.int64, len(ops))
  distinct = list({id(op): op for op in ops}.values())
  if any(op.row is None for op in distinct): return None
  rows, values, at = np.array([op.row for op in distinct], dtype=np.int64).reshape(len(distinct), -1)[which], {}, 0
  for name, width in ROW_PARTS:
    values[name] = rows[:, at] if width == 1 else rows[:, at:at + width]
    at += width
  out = np.zeros(len(ops), dtype=ROW)
  for name, v in {**values, **columns}.items():
    info = np.iinfo(ROW.fields[name][0].base)
    if len(v) and (v.min() < info.min or v.max() > info.max): return None
    out[name] = v
  return out

class Stream:
  """A wave's replay input: its instructions as rows of its distinct (op, pc) pairs (stream_of_codes, make_stream). The arrays
  serve both replays; the per-instruction lists only the Python one reads (`ops` ... `deps`) are made on first use."""
  __slots__ = ("distinct", "at", "index", "codes", "keys", "reach", "table", "flat_deps", "spans", "_ops", "_pcs", "_lines", "_plain",
               "_deps")
  def __init__(self, distinct:list[ReplayOp], at:list[int], index:np.ndarray, codes:np.ndarray):
    self.distinct, self.at = distinct, at   # the distinct (op, pc) pairs, ascending by code
    self.index = index.astype(np.int32)     # per instruction its pair
    self.codes = np.asarray(codes, dtype=np.int64)   # per instruction an int, equal exactly where the (op, pc) pairs are
    self._ops = self._pcs = self._lines = self._plain = self._deps = None
    n = len(index)
    cls = np.array([op.cls for op in distinct], dtype=np.int8)[index]
    kind, self.reach, self.flat_deps = alu_deps(cls, np.array([op.delay for op in distinct], dtype=np.int64)[index])
    # keys: per instruction an int that is equal for two instructions exactly when both are the same instruction at the same pc
    # with the same dependencies counted back from it: where a stream repeats itself (_Periods); reach: the farthest back, in
    # instructions, any dependency reaches
    self.keys = self.codes * (int(kind.max(initial=0)) + 1) + kind
    empty = np.zeros(0, dtype=np.int64)
    self.spans, self.table = (empty, empty, empty.astype(bool), empty), np.zeros(0, dtype=ROW)
    if n:   # (each distinct instruction's span: the stream's first instruction is its pair's first occurrence, and enters its line)
      lo, hi, enter = cache_spans([op.size for op in distinct], at, at[int(index[0])])
      simple = np.where((lo == hi) & ~enter, lo, -1)
      self.spans = (lo, hi, enter, simple)   # per pair: first and last line, whether it enters the first, its plain line
      self.table = _table(distinct, {"pc": np.asarray(at, dtype=np.int64), "first": lo, "last": hi, "enter": enter, "plain": simple})

  def __len__(self) -> int: return len(self.index)

  @property
  def ops(self) -> list[ReplayOp]:
    if self._ops is None: self._ops = [self.distinct[k] for k in self.index.tolist()]
    return self._ops

  @property
  def pcs(self) -> list[int]:
    if self._pcs is None: self._pcs = [self.at[k] for k in self.index.tolist()]
    return self._pcs

  @property
  def lines(self) -> list[tuple[int, int, bool]]:
    """Per instruction its cache span: first and last line, whether it enters the first (cache_spans)."""
    if self._lines is None: self._lines = list(zip(*(a[self.index].tolist() for a in self.spans[:3])))
    return self._lines

  @property
  def plain(self) -> list[int]:
    """Per instruction its line when it lies in one and does not enter it (nothing to prefetch), else -1."""
    if self._plain is None: self._plain = self.spans[3][self.index].tolist()
    return self._plain

  @property
  def deps(self) -> list[tuple[tuple[int, int], ...]]:
    """Per instruction its s_delay_alu dependencies as (k, code) pairs (alu_deps)."""
    if self._deps is None:
      off, k, code = self.flat_deps
      out: list[tuple[tuple[int, int], ...]] = [()] * len(self)
      ks, cs, bounds = k.tolist(), code.tolist(), off.tolist()
      for j in np.flatnonzero(np.diff(off)).tolist(): out[j] = tuple(zip(ks[bounds[j]:bounds[j + 1]], cs[bounds[j]:bounds[j + 1]]))
      self._deps = out
    return self._deps

def stream_of_codes(codes:np.ndarray, pair) -> Stream:
  """A wave's replay input from an int per issued instruction, equal exactly where the (op, pc) pairs are; `pair(code)`: the
  (op, pc) of a code, asked once per distinct code."""
  uniq, inverse = np.unique(codes, return_inverse=True)
  pairs = [pair(c) for c in uniq.tolist()]
  return Stream([op for op, _ in pairs], [pc for _, pc in pairs], inverse.reshape(-1), codes)

def make_stream(ops:list[ReplayOp], pcs:list[int], codes:np.ndarray|None=None) -> Stream:
  """A wave's replay input from its issued instructions and their pcs; `codes`: an int per instruction, equal exactly where the
  (op, pc) pairs are (made here when not given)."""
  if codes is None:
    seen: dict[tuple[int, int], int] = {}
    codes = np.fromiter((seen.setdefault((id(op), pc), len(seen)) for op, pc in zip(ops, pcs)), np.int64, len(ops))
  _, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
  first = first.tolist()
  stream = Stream([ops[f] for f in first], [pcs[f] for f in first], inverse.reshape(-1), codes)
  stream._ops, stream._pcs = list(ops), list(pcs)
  return stream

class _Wave:
  """Replay state of one wave: position, issue times, the last VALU and SALU issues, wait counters."""
  __slots__ = ("stream", "ops", "pcs", "lines", "plain", "deps", "n", "i", "ready", "simd", "wg", "salu", "last_valu", "pending", "start",
               "times", "dram", "next_dram", "parked", "mx_end", "vready", "vdone", "sdone")
  def __init__(self, stream:Stream, start:int, simd:int, wg:int, launch:int):
    self.stream, self.ops, self.pcs, self.lines, self.plain, self.deps = stream, stream.ops, stream.pcs, stream.lines, stream.plain, stream.deps
    self.n = len(self.ops)
    self.i, self.ready, self.simd, self.wg = 0, start + launch, simd, wg
    self.salu = NEVER; self.last_valu = NEVER
    self.pending: list[list[tuple[int, bool]]] = [[] for _ in COUNTERS]   # per counter: (completion cycle, global memory) in order
    self.start, self.times, self.dram, self.next_dram, self.parked, self.mx_end = start, [], [], True, 0, NEVER
    self.vready: dict[int, int] = {}   # register -> the cycle its value is ready (VGPRs: _ValuPipe; SGPRs: SALU results)
    self.vdone = NEVER   # the cycle the pipes have the result of the wave's last VALU/transcendental instruction
    self.sdone = NEVER   # the cycle the wave's last SALU result is ready

  def wait(self, counter:int, limit:int) -> tuple[int, bool]:
    """Retire all but the newest `limit` outstanding operations of a counter: (cycle the last of them completes, whether one of
    those completing then was a global-memory access); (NEVER, False) when nothing must retire."""
    pend = self.pending[counter]
    if len(pend) <= limit: return NEVER, False
    done, self.pending[counter] = pend[:len(pend) - limit], pend[len(pend) - limit:]
    t = max(d for d, _ in done)
    return t, any(g for d, g in done if d == t)

class _ICache:
  """The CU's instruction cache: line (counted from the kernel entry) -> cycle its fetch completes; lines stay once fetched."""
  __slots__ = ("lines", "lat", "latest")
  def __init__(self, lat:int): self.lines, self.lat, self.latest = {}, lat, NEVER   # latest: no line arrives after it

  def request(self, line:int, done:int) -> int:
    """Request a line: it and the other line of its 128-byte pair arrive at cycle `done` (unless present)."""
    for ln in (line, line ^ 1): self.lines.setdefault(ln, done)
    self.latest = max(self.latest, done)
    return self.lines[line]

  def launch(self, ready:int):
    """A wave launch fetches the first ILAUNCH_LINES lines by `ready`."""
    for line in range(ILAUNCH_LINES): self.lines.setdefault(line, ready)
    self.latest = max(self.latest, ready)

  def fetched(self, span:tuple[int, int, bool], ready:int) -> int:
    """The cycle an instruction covering lines span[0]..span[1] is in the cache, requesting missing lines at `ready`; once it is
    there, entering its first line (span[2]) requests the next line."""
    first, last, enter = span
    lines = self.lines
    if first == last:
      if (t := lines.get(first)) is None: t = self.request(first, ready + self.lat)
    else:   # an instruction (at most 16 bytes) spans at most two lines
      t = max(lines.get(first) or self.request(first, ready + self.lat), lines.get(last) or self.request(last, ready + self.lat))
    if t <= ready and enter and first + 1 not in lines: self.request(first + 1, ready + self.lat)
    return t

def operands_ready(ready:dict[int, int], op:ReplayOp, start:int) -> int:
  """The cycle from `start` on at which every register `op` reads is ready (`ready`: register -> cycle; VGPRs and SGPRs)."""
  for r in op.vreads:
    if (t := ready.get(r, NEVER)) > start: start = t
  return start

PIPED = (P_VALU, P_TRANS)   # the ports whose instructions enter a pipe of their SIMD (_ValuPipe), in this order (0, 1)

class _ValuPipe:
  """A SIMD's VALU or transcendental pipe (RDNA): its instructions start executing in issue order, each once the previous one's
  port cycles are through; one reading a VGPR that an instruction still in flight (of either pipe) writes, no s_delay_alu having
  held its wave back, starts when the value is ready (its producer's start + the producer pipe's latency), and everything
  issued behind it waits. An instruction keeps its place in the pipe from its issue until `hold` cycles after its start; while
  `depth` (at least 1) instructions hold places the SIMD issues none into it. `leaves`: the cycles instructions leave that are
  still ahead, in order; `free`: the cycle the last started instruction's passes are through."""
  __slots__ = ("leaves", "free")
  def __init__(self): self.leaves, self.free = [], NEVER

  def room(self, now:int, depth:int) -> int:
    """The first cycle from `now` on at which the pipe has room for one more instruction."""
    leaves = self.leaves
    while leaves and leaves[0] <= now: leaves.pop(0)
    return now if len(leaves) < depth else leaves[len(leaves) - depth]

  def enter(self, ready:dict[int, int], op:ReplayOp, now:int, passes:int, lat:int, hold:int) -> int:
    """Issue `op` at `now` into the pipe (`ready`: the issuing wave's VGPR -> cycle its value is ready; `lat`: this pipe's result
    latency; `hold`: Params.pipe_hold); its start cycle."""
    start = operands_ready(ready, op, max(now, self.free))
    self.free = start + op.cost * passes
    if start + hold > now: self.leaves.append(start + hold)
    for r in op.vwrites: ready[r] = start + lat
    return start

  def signature(self, now:int) -> tuple:
    """The pipe's state relative to cycle `now` (_Periods); a `free` already past reads None."""
    return tuple(t - now for t in self.leaves), self.free - now if self.free > now else None

  def shift(self, by:int):
    """Every cycle of the pipe `by` later (_Periods.skip)."""
    self.leaves[:] = [t + by for t in self.leaves]
    self.free += by

class _Ports:
  """The cycle each SIMD's ports (PORTS, per SIMD) and the CU's shared ports are free again."""
  __slots__ = ("free", "shared_base")
  def __init__(self, n_simd:int):
    self.free = [0] * ((n_simd + 1) * len(PORTS))
    self.shared_base = n_simd * len(PORTS)

  def take(self, simd:int, op:ReplayOp, ready:int, mult:int) -> int:
    """Issue `op` (a non-matrix port) from `simd` at `ready` if its ports are free, taking them for cost * mult cycles (a
    transcendental also the VALU for one pass, an op issued via the transcendental port that one for a pass); returns `ready`
    when issued, else the cycle they are free."""
    free, base = self.free, simd * len(PORTS)
    port = op.port
    key = port + (self.shared_base if op.shared else base)
    busy = free[key]
    if port == P_TRANS and free[base + P_VALU] > busy: busy = free[base + P_VALU]   # issued through the VALU
    if op.via_trans and free[base + P_TRANS] > busy: busy = free[base + P_TRANS]
    if busy > ready: return busy
    free[key] = ready + op.cost * mult
    if port == P_TRANS: free[base + P_VALU] = ready + mult
    elif op.via_trans: free[base + P_TRANS] = ready + mult
    return ready

  def take_valu_pass(self, simd:int, ready:int, mult:int) -> int:
    """A WMMA's issue: the SIMD's VALU port for one pass (`mult` cycles) at `ready` if free; returns `ready` when taken, else the
    cycle it is free."""
    key = simd * len(PORTS) + P_VALU
    if (busy := self.free[key]) > ready: return busy
    self.free[key] = ready + mult
    return ready

class _Matrix:
  """A SIMD's matrix unit and the VALU work that waits on it.

  `ends`/`owners`: completion cycles of the WMMAs in flight (in order) and their waves; `used`: completions an instruction issued at.
  The owner (the wave whose WMMAs are all that is in flight) issues VALU work into a buffer between completions: `undrained` passes
  issued since the last completion, `drain_end` the cycle the passes already draining are gone (a completion starts draining
  everything buffered, one pass per cycle). Other VALU work issues at a completion and runs its first pass there; the rest of its
  passes (`pend`, in order) take the later completions nobody issues at, and its wave issues its next VALU instruction in the cycle
  after the last one (`free_at`). While such work is pending it holds the owner to completions too, and the owner's work then
  pends the same way."""
  __slots__ = ("ends", "owners", "used", "undrained", "drain_end", "seen", "pend", "free_at", "pass_seen")
  def __init__(self):
    self.ends, self.owners, self.used = [], [], set()
    self.undrained, self.drain_end, self.seen = 0, 0, -1
    self.pend: list[list[int]] = []
    self.free_at: dict[int, int] = {}
    self.pass_seen = -1

  def signature(self, now:int) -> tuple:
    """The unit's state relative to cycle `now` (_Periods): cycles no later rule can tell apart read None. With nothing in flight
    the last completion seen and the draining buffer matter only if still ahead (every later completion is after `now`); a
    completion taken or a wave's free cycle only as long as a completion or an issue can still meet it."""
    ends, busy = self.ends, bool(self.ends)
    def rel(t:int) -> int | None: return t - now if busy or t > now + 1 else None
    return (tuple(e - now for e in ends), tuple(self.owners), tuple(sorted(u - now for u in self.used if u >= now or u in ends)),
            self.undrained, rel(self.drain_end), rel(self.seen), rel(self.pass_seen), tuple(tuple(x) for x in self.pend),
            tuple(sorted((w, t - now) for w, t in self.free_at.items() if t >= now)))

  def shift(self, by:int):
    """Every cycle of the unit `by` later (_Periods.skip)."""
    self.ends[:] = [e + by for e in self.ends]
    self.used = {u + by for u in self.used}
    self.drain_end, self.seen, self.pass_seen = self.drain_end + by, self.seen + by, self.pass_seen + by
    self.free_at = {w: t + by for w, t in self.free_at.items()}

  def advance(self, now:int):
    """Drain the buffer from each completion up to `now`; give each completion before `now` that nobody issued at to the oldest
    pending work; then forget completions (and the issue slots taken at them) before `now`."""
    ends = self.ends
    for e in ends:
      if e > now: break
      if e > self.seen:
        self.drain_end, self.undrained, self.seen = max(self.drain_end, e) + self.undrained, 0, e
      if e < now and e > self.pass_seen:
        self.pass_seen = e
        if e not in self.used and self.pend:
          self.pend[0][1] -= 1
          if self.pend[0][1] == 0: self.free_at[self.pend.pop(0)[0]] = e + 1
    k = 0
    while k < len(ends) and ends[k] < now: k += 1
    if k:
      if k == len(ends):   # idle: what was buffered or pending (counted in `undrained` too) drains from the last completion
        self.pend = []
        self.drain_end, self.undrained = max(self.drain_end, self.seen) + self.undrained, 0
      del ends[:k], self.owners[:k]
      self.used.difference_update([u for u in self.used if u < now])

  def others_in_flight(self, wave:int, now:int) -> bool:
    """Whether a WMMA of another wave is still in flight at `now`."""
    return any(o != wave for e, o in zip(self.ends, self.owners) if e > now)

  def held(self, wave:int) -> bool:
    """Whether another wave's VALU work still has passes waiting for completions."""
    return any(w != wave for w, _ in self.pend)

  def waiting(self, wave:int) -> bool:
    """Whether the wave's last VALU work still has passes waiting for completions."""
    return any(w == wave for w, _ in self.pend)

  def next_slot(self) -> int:
    """The first completion no instruction has issued at yet (the cycle after the last one if all are taken)."""
    return next((e for e in self.ends if e not in self.used), self.ends[-1] + 1)

  def buffer_room(self, wave:int, now:int, need:int, cap:int) -> int | None:
    """First cycle >= `now` the buffer takes `need` more passes from `wave`, if that wave owns every WMMA in flight, no other wave's
    work holds the unit and the passes buffered since the last completion leave room; None otherwise."""
    if self.undrained + need > cap or self.others_in_flight(wave, now) or self.held(wave): return None
    return max(now, self.drain_end - 1 - (cap - need - self.undrained))

  def take(self, wave:int, now:int, need:int, at_slot:bool, follow:bool):
    """Record VALU work of `need` passes issued at `now`: into the owner's buffer, or (`at_slot`) at a completion, or (`follow`) in
    the cycle after the wave's previous work finished in one, which takes no completion."""
    if at_slot:
      if not follow: self.used.add(now)
      if (self.others_in_flight(wave, now) or self.held(wave)) and (rest := need if follow else need - 1) > 0: self.pend.append([wave, rest])
    self.undrained += need

  def gate(self, wave:int, op:ReplayOp, ready:int, passes:int, buffer:int) -> tuple[int, tuple | None]:
    """Whether a VALU/trans/WMMA instruction of `wave` may issue at `ready` with respect to this unit: (ready, what to record with
    `take` once the port is won, or None) when it may, else (the cycle to look again, None). While another wave's WMMAs are in
    flight, or pending passes hold the unit, WMMAs issue only at a completion; while the unit is idle, VALU work waits until the
    buffer drained; while it works, the owner of every WMMA in flight buffers up to `buffer` passes, other VALU work issues at a
    completion."""
    ends = self.ends
    if ends: self.advance(ready)
    if op.port == P_MATRIX:
      if ends and (self.others_in_flight(wave, ready) or self.held(wave)) and (slot := self.next_slot()) > ready: return slot, None
      return ready, None
    if not ends or ends[-1] <= ready:   # idle unit: buffered work drains before more VALU work issues
      return (self.drain_end - 1, None) if self.drain_end - 1 > ready else (ready, None)
    need = op.cost * passes   # passes: VALU port cycles (64-bit shift 2, mad 4), transcendental port cycles (4, scalar 1)
    room = self.buffer_room(wave, ready, need, buffer)
    at_slot = room is None or room > ready
    if at_slot and self.waiting(wave):   # its previous work still waits for completions: look again after the next one
      return next((e for e in ends if e >= ready), ready) + 1, None
    follow = at_slot and self.free_at.get(wave) == ready   # right after its previous work's last pass
    if at_slot and not follow and (slot := self.next_slot() if room is None else min(room, self.next_slot())) > ready: return slot, None
    return ready, (need, at_slot, follow and ready not in ends)   # (a completion it issues at counts as one)

  def queue(self, wave:int, ready:int, cycles:int, start:int) -> int:
    """A WMMA of `cycles` issued at `ready`: it starts `start` cycles later or when the one before it completes; its completion."""
    ends = self.ends
    ends.append(max(ready + start, ends[-1] if ends else 0) + cycles)
    self.owners.append(wave)
    self.used.add(ready)
    return ends[-1]

class _Workgroups:
  """Which workgroups of the CU run: launches as slots free up (waves of a workgroup alternate over the SIMDs), barrier arrivals."""
  __slots__ = ("waves_of", "remaining", "launched", "clock", "arrived")
  def __init__(self, wg_of:list[int]):
    n_wg = max(wg_of) + 1 if wg_of else 0
    self.waves_of: list[list[int]] = [[] for _ in range(n_wg)]   # one pass: linear in the CU's waves
    for i, g in enumerate(wg_of): self.waves_of[g].append(i)
    self.remaining = [len(g) for g in self.waves_of]
    self.launched, self.clock = 0, 0
    self.arrived: dict[int, list[int]] = {}

  def next_launch(self, at:int) -> tuple[int, int, list[int]] | None:
    """Start the next workgroup at `at` (or when the launcher is free): (the workgroup, its first wave's start, its waves); None
    when all have started."""
    if (wg := self.launched) >= len(self.waves_of): return None
    waves, t = self.waves_of[wg], max(at, self.clock)
    self.launched += 1
    self.clock = t + len(waves) * LAUNCH_GAP
    return wg, t, waves

  def _released(self, wg:int) -> list[int] | None:
    """The barrier waiters of `wg` when every wave of it still running has arrived (they leave the barrier), else None."""
    return self.arrived.pop(wg) if wg in self.arrived and len(self.arrived[wg]) == self.remaining[wg] else None

  def arrive(self, wg:int, wave:int) -> list[int] | None:
    """A wave reaches the barrier: the waves to release when it is the last of its workgroup's running waves, else None."""
    self.arrived.setdefault(wg, []).append(wave)
    return self._released(wg)

  def leave(self, wg:int) -> tuple[list[int] | None, bool]:
    """A wave ends: (the barrier waiters it releases, if it was the last wave they waited for; whether its workgroup is done)."""
    self.remaining[wg] -= 1
    return self._released(wg), self.remaining[wg] == 0

# a wait counter's outstanding operations that matter: no s_waitcnt allows more (their fields are at most 6 bits), so older ones
# that have completed change no wait (those it retires complete no later for them) nor the wave's end
KEEP_PENDING = 64

class _Periods:
  """Skips the repeats of a CU's steady state: a loop whose trips find the CU in the same state replays one trip and repeats it.

  At some of the taken backward branches of its lowest-numbered running wave (the pilot: each such branch starts a loop's next
  trip) the CU's state is summed up as `signature` does, every time relative to the branch's cycle. Two such moments with equal
  signatures, cycles t1 < t2, where every running wave's next instructions repeat what it ran between them (its stream's `keys`
  repeat with that period, far enough back for its dependencies and one instruction ahead) replay alike: the replay is
  deterministic and depends only on differences of cycles, so from t2 on it repeats what it did from t1, shifted by t2 - t1, for as
  many periods as every wave's stream keeps repeating. `skip` writes those periods out (issue times shifted, positions advanced,
  every recent cycle of the state moved on) instead of replaying them; the replay goes on from there as if it had run them.

  A past cycle that no later rule can tell from any other past cycle (`signature`) is summed up as None; such cycles stay as they
  are in a skip (`horizon` bounds how far back a cycle can still matter); the matrix units sum themselves up (`_Matrix.signature`)."""
  __slots__ = ("cu", "horizon", "waits", "seen", "taken", "stride")
  STRIDE_AFTER = 8    # signatures taken without a match before the stride between them doubles (up to MAX_STRIDE trips)
  MAX_STRIDE = 64
  KEEP = 256          # signatures kept (then forgotten: a state that recurs does so within a few dozen samples)
  def __init__(self, cu:_CU):
    self.cu = cu
    p = cu.p
    self.horizon = 2 * max(v for v in vars(p).values() if isinstance(v, int) and not isinstance(v, bool)) + 256
    # the most a rule adds to a past cycle of: an issue an s_delay_alu dependency names, the last SALU issue (a conditional
    # branch, SALU_CYCLE_n), the last VALU issue (a memory instruction's VGPR reads), the wave's last WMMA completion (its
    # s_endpgm), the wave's last SALU result (a memory instruction's SGPR reads); and of the LDS pipe's (a DS instruction's cycles,
    # bounded by the horizon)
    self.waits = (max(p.valu_dep, p.trans_dep, 4), max(p.branch_dep, 4), max(p.vgpr_to_mem, p.vgpr_to_lds), p.matrix_drain, p.sgpr_to_mem,
                  self.horizon)
    self.seen: dict[tuple, tuple[int, dict[int, int]]] = {}   # signature -> (its cycle, each running wave's position)
    self.taken, self.stride = 0, 1   # (trips seen at the pilot's loop heads, signatures taken only every `stride` of them)

  def signature(self, now:int, item:tuple[int, int, object]) -> tuple:
    """The CU's state at cycle `now` relative to it (`item`: the heap item the branching wave is about to push). A past cycle that
    can no longer matter reads None: its value plus the most any rule adds to it is not after `now` (every later rule compares
    with a cycle at or after `now`)."""
    cu, (valu_wait, salu_wait, mem_wait, matrix_wait, sgpr_wait, horizon) = self.cu, self.waits
    def rel(t:int, wait:int=0) -> int | None: return t - now if t + wait > now else None
    waves = []
    for j in sorted(cu.running):
      w = cu.waves[j]
      reach = w.stream.reach
      recent = tuple(None if t is None else rel(t, valu_wait) for t in w.times[max(0, len(w.times) - reach):]) if reach else ()
      for pend in w.pending:   # (stores nothing waits for pile up: beyond the newest KEEP_PENDING, those completed drop out)
        if len(pend) > KEEP_PENDING and all(d <= now for d, _ in pend[:-KEEP_PENDING]): del pend[:-KEEP_PENDING]
      waves.append((j, w.simd, w.wg, rel(w.salu, salu_wait), rel(w.last_valu, mem_wait), rel(w.parked), rel(w.mx_end, matrix_wait),
                    w.next_dram, recent, tuple(sorted((r, t - now) for r, t in w.vready.items() if t > now)), rel(w.vdone, mem_wait),
                    rel(w.sdone, sgpr_wait),
                    tuple(tuple((rel(d), g) for d, g in pend) for pend in w.pending)))
    icache = cu.icache
    lines = (len(icache.lines), tuple(sorted((ln, t - now) for ln, t in icache.lines.items() if t > now)) if icache.latest > now else ())
    heap = tuple(sorted((c - now, j, tag) for c, j, tag in (*cu.heap, item)))
    return (tuple(waves), lines, heap, tuple(rel(f) for f in cu.ports.free), rel(cu.lds_done, horizon), cu.groups.launched,
            rel(cu.groups.clock), tuple(sorted((g, tuple(ws)) for g, ws in cu.groups.arrived.items())),
            tuple(tuple(sorted(q)) for q in cu.parked), tuple(None if x is None else (x[0] - now, x[1]) for x in cu.wake),
            tuple(u.signature(now) for u in cu.units) if cu.units is not None else (),
            tuple(q.signature(now) for pair in cu.pipes for q in pair) if cu.pipes is not None else ())

  def at_loop_head(self, i:int, now:int, nxt:int) -> int:
    """Wave `i` took a backward branch at `now` and may issue again at `nxt`: take the state's signature if this is the pilot's
    trip to sample, and skip the periods a match shows; the cycle wave `i` may issue at (moved on by a skip)."""
    cu = self.cu
    if i != min(cu.running): return nxt
    self.taken += 1
    if self.taken % self.stride: return nxt
    sig = self.signature(now, (nxt, i, False))
    here = (now, {j: cu.waves[j].i for j in cu.running})
    if (hit := self.seen.get(sig)) is None:
      if len(self.seen) >= self.KEEP: self.seen.clear()
      self.seen[sig] = here
      if len(self.seen) % self.STRIDE_AFTER == 0: self.stride = min(self.stride * 2, self.MAX_STRIDE)
      return nxt
    then, pos = hit
    periods = min(self.repeats(cu.waves[j], pos[j]) for j in cu.running)
    if periods < 1:   # the streams do not repeat from the earlier moment (yet): compare with this one next time
      self.seen[sig] = here
      return nxt
    self.skip(now, now - then, periods, pos)
    self.seen.clear(); self.taken, self.stride = 0, 1
    return nxt + (now - then) * periods

  @staticmethod
  def repeats(w:_Wave, then:int) -> int:
    """How many more times wave `w` runs what it ran since position `then` (its stream repeats it, dependencies and lookahead
    included). Compared a window at a time, each twice the last: a stream that does not repeat costs little to find out."""
    step = w.i - then
    if step <= 0: return 1 << 62   # (it ran nothing: it waits, as it did)
    keys, lo = w.stream.keys, then - w.stream.reach
    if lo < 0: return 0
    end, width = lo + step, 2 * step + w.stream.reach + 2   # keys[lo:end] repeat with period `step`
    while end < len(keys):
      top = min(end + width, len(keys))
      if len(diff := np.flatnonzero(keys[end:top] != keys[end - step:top - step])):
        end += int(diff[0])
        break
      end, width = top, 2 * width
    return (end - 2 - w.i) // step   # (each period also reads the instruction after it)

  def skip(self, now:int, period:int, periods:int, pos:dict[int, int]):
    """Write out `periods` repeats of the `period` cycles up to `now` (each running wave ran from pos[wave] to its position in them)."""
    cu, shift, old = self.cu, period * periods, now - self.horizon
    def moved(t:int) -> int: return t + shift if t > old else t
    for j in cu.running:
      w = cu.waves[j]
      if (step := w.i - pos[j]) > 0:
        w.times += _repeated(w.times[pos[j]:], period, periods)
        w.dram += w.dram[pos[j]:] * periods
        w.i += step * periods
      w.salu, w.last_valu, w.parked, w.mx_end = moved(w.salu), moved(w.last_valu), moved(w.parked), moved(w.mx_end)
      w.pending = [[(moved(d), g) for d, g in pend] for pend in w.pending]
      w.vready, w.vdone, w.sdone = {r: moved(t) for r, t in w.vready.items()}, moved(w.vdone), moved(w.sdone)
    cu.heap[:] = [(c + shift, j, tag) for c, j, tag in cu.heap]   # (all at or after `now`)
    cu.wake[:] = [None if x is None else (x[0] + shift, x[1]) for x in cu.wake]
    cu.ports.free[:] = [moved(f) for f in cu.ports.free]
    lines = cu.icache.lines
    for ln, t in lines.items(): lines[ln] = moved(t)
    cu.icache.latest = moved(cu.icache.latest)
    cu.lds_done, cu.groups.clock = moved(cu.lds_done), moved(cu.groups.clock)
    for unit in (*(cu.units or ()), *(q for pair in cu.pipes or () for q in pair)): unit.shift(shift)

def _repeated(times:list[int | None], period:int, periods:int) -> list[int | None]:
  """`times` again `periods` times, the k-th copy `k * period` later (None stays None)."""
  gaps = [k for k, t in enumerate(times) if t is None]
  base = np.array([0 if t is None else t for t in times], dtype=np.int64) if gaps else np.array(times, dtype=np.int64)
  out = (np.arange(1, periods + 1, dtype=np.int64)[:, None] * period + base).reshape(-1).tolist()
  for first in range(0, len(out), len(times)):
    for k in gaps: out[first + k] = None
  return out

class _CU:
  """One CU's replay: the units above and the issue loop (`run`)."""
  def __init__(self, streams:list[Stream], wg_of:list[int], passes:int, wg_slots:int, p:Params, fetch:int, skip_periods:bool=True):
    self.streams, self.passes, self.p, self.fetch = streams, passes, p, fetch
    self.waves: list[_Wave | None] = [None] * len(streams)
    self.groups, self.icache, self.ports = _Workgroups(wg_of), _ICache(fetch), _Ports(p.simds_per_cu)
    distinct = {id(st): st for st in streams}.values()   # (waves with the same stream share it)
    self.units = [_Matrix() for _ in range(p.simds_per_cu)] if any(op.port == P_MATRIX for st in distinct for op in st.distinct) else None
    # each SIMD's VALU pipe and transcendental pipe (_ValuPipe), indexed by the port an instruction issues through (PIPED)
    if p.valu_queue and min(p.valu_queue, p.trans_queue) < 1:
      raise ValueError(f"the VALU and transcendental pipes' depths must be at least 1, not {p.valu_queue} and {p.trans_queue}")
    if p.valu_queue and p.pipe_hold < 0: raise ValueError(f"the pipes' hold must not be negative, not {p.pipe_hold}")
    self.pipes = [(_ValuPipe(), _ValuPipe()) for _ in range(p.simds_per_cu)] if p.valu_queue else None
    self.pass_issue = ISSUE * passes   # a VALU instruction's issue cycles (wave64: two passes)
    self.lds_done = NEVER   # the cycle the CU's LDS pipe has finished the last DS instruction
    self.back = False   # the last branch issued was taken backward
    self.heap: list[tuple[int, int, bool]] = []   # (cycle, wave, whether only its port is left to check); a wave is in it at most once
    self.running: set[int] = set()   # waves launched and not ended
    # waves that lost a port of their own SIMD (own_port) wait together for it: such a wave can next issue only once the port is
    # free, and the lowest-numbered of them gets it first, so one wake item (cycle, lowest wave, 2 + key) stands for all of them
    # instead of each retrying at every cycle the port frees (a busy wave64 VALU made that several retries per instruction)
    self.parked: list[list[int]] = [[] for _ in self.ports.free]   # per port: the waiting waves (a heap of wave numbers)
    self.wake: list[tuple[int, int] | None] = [None] * len(self.ports.free)   # per port: (cycle, wave) of its live wake item; others are stale
    self.periods = _Periods(self) if skip_periods else None
    for _ in range(min(len(self.groups.waves_of), max(1, wg_slots))): self.launch(0)

  def launch(self, at:int):
    if (nxt := self.groups.next_launch(at)) is None: return
    wg, t, ids = nxt
    for k, i in enumerate(ids):
      w = self.waves[i] = _Wave(self.streams[i], t + k * LAUNCH_GAP, k % self.p.simds_per_cu, wg, self.fetch)
      self.icache.launch(w.ready)
      self.running.add(i)
      heapq.heappush(self.heap, (w.ready, i, False))   # heap ties: lower index = older

  def release(self, waiters:list[int], last:int):
    """Barrier complete (its last arrival at `last`): the waiting waves continue."""
    for j in waiters: heapq.heappush(self.heap, (max(last + self.p.barrier_release, self.waves[j].parked), j, False))

  def issue_port(self, w:_Wave, i:int, op:ReplayOp, ready:int) -> int:
    """Win the instruction's port at `ready` (and the matrix unit's consent): `ready` when it issues, else the cycle to retry."""
    take, mult = None, (self.passes if op.vec else 1)
    if self.units is not None and op.vec:
      unit = self.units[w.simd]
      if (t := unit.gate(i, op, ready, self.passes, self.p.matrix_buffer))[0] > ready: return t[0]
      take = t[1]
      if op.port == P_MATRIX:   # the issue takes one VALU pass; the op queues in order behind the SIMD's WMMAs in flight
        if (busy := self.ports.take_valu_pass(w.simd, ready, mult)) > ready: return busy
        w.mx_end = unit.queue(i, ready, op.cost * mult, self.p.matrix_start)
        return ready
    if (busy := self.ports.take(w.simd, op, ready, mult)) > ready: return busy
    if take: self.units[w.simd].take(i, ready, *take)
    return ready

  def effects(self, w:_Wave, op:ReplayOp, ready:int) -> int:
    """The effects of an issue at `ready` of any class but the ALU ones (`run` records those): counters, the LDS pipe, s_delay_alu
    dependencies; the cycle the wave's next instruction could issue at the earliest (before its own readiness)."""
    cls, p, nxt = op.cls, self.p, ready + ISSUE
    if cls == C_BRANCH:
      w.salu, pcs = ready, w.pcs
      self.back = w.i < len(pcs) and pcs[w.i] < pcs[w.i - 1]   # taken backward: a loop's next trip
      if w.i < len(pcs) and pcs[w.i] != pcs[w.i - 1] + op.size: nxt = ready + p.branch_taken
    elif cls == C_SMEM: w.pending[op.counter].append((ready + p.smem_lat, True))
    elif cls == C_VMEM_LOAD: w.pending[VM].append((ready + p.vmem_load_lat, True))
    elif cls == C_VMEM_STORE:
      w.pending[VS].append((ready + p.vmem_store_lat, True))
      if w.i < w.n:   # the store's data leaves the VGPRs: the wave's next VMEM instruction follows at once, VALU work later
        nop = w.ops[w.i]
        nxt = ready + (ISSUE if nop.port == P_VMEM else p.store_valu if nop.cls <= C_TRANS else p.store_next)
    elif cls == C_LDS:
      self.lds_done = max(ready + p.lds_lat, self.lds_done + op.lds_cycles)
      w.pending[op.counter].append((self.lds_done, False))
    elif cls == C_DELAY:   # (its dependencies are the later instructions' alu_deps)
      w.times[-1] = None; nxt = ready
    return nxt

  def matrix_hold(self, w:_Wave, ready:int) -> int:
    """After a WMMA issued at `ready`: the wave's next instruction waits one pass, or, with the SIMD's matrix queue full, until the
    oldest WMMA in flight beyond the queue's size completes."""
    nxt, ends, q = ready + self.pass_issue, self.units[w.simd].ends, self.p.matrix_queue
    if len(ends) >= q and len(out := [e for e in ends if e > ready]) >= q: nxt = max(nxt, out[len(out) - q])
    return nxt

  def readiness(self, w:_Wave, nop:ReplayOp, nxt:int) -> tuple[int, bool]:
    """When the wave's next instruction `nop`, a gated one, may issue, from `nxt` on (its s_delay_alu dependencies counted in
    already, `run`): VGPR reads of memory instructions, the SALU result a conditional branch tests, wait counters, an s_nop's
    pause, the store and WMMA drain before s_endpgm; and whether it then waited on global memory."""
    p, dram, ncls = self.p, False, nop.cls
    # a VMEM/DS instruction (and a drain) waits until the wave's VALU results are written back (LLVM AMDGPUInsertDelayAlu: DS
    # waits for VA_VDST == 0): vgpr_to_mem (DS: vgpr_to_lds) after the last VALU start, i.e. that less valu_raw after its result
    # (with the pipes, the latest result of either pipe)
    if nop.port >= P_VMEM or nop.drain:
      to_mem = p.vgpr_to_lds if nop.port == P_LDS else p.vgpr_to_mem
      t = w.last_valu + to_mem if self.pipes is None else w.vdone + to_mem - p.valu_raw
      if t > nxt: nxt = t
    if nop.port >= P_VMEM and w.sdone + p.sgpr_to_mem > nxt: nxt = w.sdone + p.sgpr_to_mem   # (its SGPRs written)
    if nop.cond and w.salu + p.branch_dep > nxt: nxt = w.salu + p.branch_dep
    if ncls == C_WAITCNT:
      for q, limit in nop.waits:
        t, g = w.wait(q, limit)
        if t > nxt: nxt, dram = t, dram or g
    elif ncls == C_NOP: nxt += nop.delay - ISSUE   # an s_nop's trace time is the end of its pause
    elif ncls == C_END:
      pend = w.pending[VS] + w.pending[VM]
      if pend and (t_done := max(d for d, _ in pend)) > nxt: nxt, dram = t_done, True
      if w.mx_end + p.matrix_drain > nxt: nxt = w.mx_end + p.matrix_drain
    return nxt, dram

  def end_wave(self, i:int, w:_Wave, ready:int):
    """Wave `i` (`w`) ended at `ready`: it leaves its workgroup (releasing a barrier it was the last one missing), and a finished
    workgroup frees its slot for the next."""
    self.running.discard(i)
    release, done = self.groups.leave(w.wg)
    if release is not None: self.release(release, ready)
    if done: self.launch(ready)

  def run(self) -> list[tuple[int, int, list, list]]:
    """Replay until every wave ended: per wave (start, end, issue times (None: consumed without issue), dram flags).
    The commonest steps are inline (a cache line already requested, a port of the wave's own SIMD, the ALU classes' effects): the
    loop runs once per issue attempt of every instruction of every wave, so a call less there is a sizable share of a replay."""
    heap, waves, fetched, issue_port, effects, readiness = self.heap, self.waves, self.icache.fetched, self.issue_port, self.effects, self.readiness
    take, passes, plain = self.ports.take, self.passes, self.units is None   # plain: no matrix unit to consult
    lines_get, free, n_ports, pass_issue = self.icache.lines.get, self.ports.free, len(PORTS), self.pass_issue
    valu_dep, trans_dep = self.p.valu_dep, self.p.trans_dep
    heappop, heappush, heappushpop = heapq.heappop, heapq.heappush, heapq.heappushpop
    parked, wake, periods = self.parked, self.wake, self.periods
    pipes, depths, raws, hold = self.pipes, (self.p.valu_queue, self.p.trans_queue), (self.p.valu_raw, self.p.trans_raw), self.p.pipe_hold
    results = (self.p.valu_raw, self.p.trans_result)   # start -> the result written back for memory instructions, by pipe
    item = heappop(heap) if heap else None
    while item is not None:
      ready, i, tag = item
      if tag > 1:   # a port's wake item: its lowest-numbered waiting wave retries as its own port-wait item would
        if wake[key := tag - 2] != (ready, i):
          item = heappop(heap) if heap else None; continue
        wake[key] = None
        heappop(parked[key])
        port_wait = True
      else: port_wait = tag
      w = waves[i]
      wi = w.i
      op = w.ops[wi]
      # (a wave back from a busy port has fetched its instruction already: cache lines are never refilled)
      if not port_wait:
        # one line, not entered (nothing to prefetch) and requested already: its arrival is all fetched() says
        if (ln := w.plain[wi]) < 0 or (t := lines_get(ln)) is None: t = fetched(w.lines[wi], ready)
        if t > ready:   # a miss is memory-bound like the launch
          w.next_dram = True; item = heappushpop(heap, (t, i, False)); continue
      if (pipes is not None and op.port in PIPED and (pipe := pipes[w.simd][op.port]).leaves
          and (t := pipe.room(ready, depths[op.port])) > ready):
        item = heappushpop(heap, (t, i, True)); continue   # the pipe it enters (VALU or transcendental) is full
      if op.own_port and plain:   # Ports.take for a port only the wave's SIMD uses and no other port gates
        if (t := free[key := w.simd * n_ports + op.port]) > ready:
          heappush(q := parked[key], i)
          if wake[key] != (t, q[0]): wake[key] = (t, q[0]); heappush(heap, (t, q[0], 2 + key))
          item = heappop(heap); continue
        free[key] = t = ready + op.cost * (passes if op.vec else 1)
        if (q := parked[key]) and wake[key] != (t, q[0]): wake[key] = (t, q[0]); heappush(heap, (t, q[0], 2 + key))
      elif op.port >= 0 and (t := take(w.simd, op, ready, passes if op.vec else 1) if plain else issue_port(w, i, op, ready)) > ready:
        item = heappushpop(heap, (t, i, True)); continue
      # the issue: recorded, then what it does (the ALU classes here, the rest in effects()); nxt: the next instruction's earliest cycle
      w.times.append(ready); w.dram.append(w.next_dram)
      w.i = wi = wi + 1
      if (cls := op.cls) <= C_TRANS:   # C_VALU or C_TRANS
        if pipes is not None and op.port in PIPED:
          lat = op.lat or raws[op.port]
          w.last_valu = start = pipes[w.simd][op.port].enter(w.vready, op, ready, passes if op.vec else 1, lat, hold)
          if (done := start + (op.lat or results[op.port])) > w.vdone: w.vdone = done
        else: w.last_valu = ready
        nxt = self.matrix_hold(w, ready) if op.port == P_MATRIX else ready + pass_issue
      elif cls == C_SALU:   # it starts once the SGPRs it reads are ready (a dependent chain still issues back to back)
        w.salu, nxt = ready, ready + ISSUE
        done = operands_ready(w.vready, op, ready) + (op.lat or self.p.salu_lat)
        for r in op.vwrites: w.vready[r] = done
        if done > w.sdone: w.sdone = done
      else: nxt = effects(w, op, ready)
      if cls == C_END or wi >= w.n:
        self.end_wave(i, w, ready)
        item = heappop(heap) if heap else None
        continue
      nop = w.ops[wi]
      # an s_delay_alu next whose line is in the cache by nxt touches nothing but its wave: consumed here rather than at its turn
      while nop.cls == C_DELAY and wi + 1 < w.n and (ln := w.plain[wi]) >= 0 and (t := lines_get(ln)) is not None and t <= nxt:
        w.times.append(None); w.dram.append(False)
        w.i = wi = wi + 1
        nop = w.ops[wi]
      for k, code in w.deps[wi]:   # s_delay_alu dependencies
        if (t := w.times[k] + (valu_dep if code == VALU_DEP else trans_dep if code == TRANS_DEP else code)) > nxt: nxt = t
      if nop.gated: nxt, w.next_dram = readiness(w, nop, nxt)
      else: w.next_dram = False
      if cls == C_BARRIER:
        w.parked = nxt
        if (release := self.groups.arrive(w.wg, i)) is not None: self.release(release, ready)
        item = heappop(heap) if heap else None
        continue
      if cls == C_BRANCH and self.back and periods is not None: nxt = periods.at_loop_head(i, ready, nxt)
      item = heappushpop(heap, (nxt, i, False))
    return [(w.start, w.times[-1] if w.times else w.start, w.times, w.dram) for w in waves]

def simulate_end(streams:list[Stream], wg_of:list[int], passes:int, wg_slots:int, p:Params, fetch:int) -> int:
  """The last wave end of `simulate_cu` (what a timing replay without a timeline keeps of a CU workload)."""
  return max(r[1] for r in simulate_cu(streams, wg_of, passes, wg_slots, p, fetch))

def simulate_cu(streams:list[Stream], wg_of:list[int], passes:int, wg_slots:int, p:Params, fetch:int,
                skip_periods:bool=True) -> list[tuple[int, int, list, list]]:
  """Replay the waves of one CU with the costs `p` and the cold instruction-fetch latency `fetch` (launch and cache-line misses).
  streams[i]: the CU's i-th wave's (make_stream); wg_of[i]: its local workgroup. `skip_periods`: repeats of a steady state are
  written out rather than replayed (_Periods; the result is the same).

  Returns per wave (start, end, issue times, dram flags)."""
  return _CU(streams, wg_of, passes, wg_slots, p, fetch, skip_periods).run()
