"""The cycle replay of one CU (the timing model's machine; emu/amd/timing.py classifies instructions and feeds it).

`simulate_cu` replays the recorded instruction streams of the waves one CU runs, built from small units: `_Workgroups` launches
waves as slots free up and releases barriers; `_ICache` fetches instruction-cache lines; `_Ports` arbitrates each SIMD's ports
(VALU, transcendental, SALU, VMEM) and the CU's shared ones (SMEM, LDS); `_Matrix` is a SIMD's WMMA unit and the VALU work that
waits on it; each `_Wave` keeps its own issue history, wait counters and `s_delay_alu` dependencies. The loop issues, each cycle
and per port, the ready instruction of the oldest wave (a heap of (cycle, wave) items). Costs and latencies come from
`timing.Params`; each rule cites its trace evidence in docs/timing.md.
"""
from __future__ import annotations
import heapq
import numpy as np
from typing import TYPE_CHECKING, NamedTuple
if TYPE_CHECKING: from emu.amd.timing import OpInfo, Params

LAUNCH_GAP = 1            # consecutive wave starts of a dispatch
ISSUE = 1                 # a wave issues at most one instruction per cycle
ILINE = 64                # instruction cache line bytes; a fetch brings the 128-byte pair of lines (lines counted from the entry)
ILAUNCH_LINES = 4         # lines the launch fetch brings from the entry line on; entering line L requests line L + 1
NEVER = -10**9            # "long ago": the cycle of an event that has not happened

# replay codes: instruction classes and SIMD ports as small ints (the port order matters: VMEM and LDS last, ports that read VGPRs)
C_VALU, C_TRANS, C_SALU, C_BRANCH, C_SMEM, C_VMEM_LOAD, C_VMEM_STORE, C_LDS, C_DELAY, C_NOP, C_WAITCNT, C_BARRIER, C_END, C_OTHER = range(14)
CLS_CODE = {c: n for n, c in enumerate(("valu", "trans", "salu", "branch", "smem", "vmem_load", "vmem_store", "lds", "delay", "nop", "waitcnt",
                                        "barrier", "end", "other"))}
PORTS = ("valu", "trans", "matrix", "salu", "smem", "vmem", "lds")
P_VALU, P_TRANS, P_MATRIX, P_SALU, P_SMEM, P_VMEM, P_LDS = range(len(PORTS))
COUNTERS = ("vm", "vs", "lgkm", "ds", "km")
VM, VS = COUNTERS.index("vm"), COUNTERS.index("vs")

class ReplayOp(NamedTuple):
  """An OpInfo as the replay loop reads it (built once per step): ints instead of strings, port flags resolved."""
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

def replay_op(info:OpInfo) -> ReplayOp:
  """The replay form of an OpInfo."""
  port, cls = PORTS.index(info.port) if info.port is not None else -1, CLS_CODE[info.cls]
  return ReplayOp(cls, port, port in (P_SMEM, P_LDS), port in (P_VALU, P_TRANS, P_MATRIX), info.cost, info.lds_cycles,
             tuple((COUNTERS.index(k), n) for k, n in info.waits), info.delay, COUNTERS.index(info.counter) if info.counter else -1, info.size,
             info.cls, info.cond, info.via_trans, port >= P_VMEM or info.cond or cls in (C_WAITCNT, C_END),
             port in (P_VALU, P_SALU, P_VMEM) and not info.via_trans)

def cache_spans(ops:list[ReplayOp], pcs:list[int]) -> list[tuple[int, int, bool]]:
  """Per instruction of a stream: first and last instruction cache line (from the entry), whether it enters its first line (the
  stream's first instruction always does). Computed over arrays: a stream is thousands of instructions, built once per dispatch."""
  if not pcs: return []
  off = np.asarray(pcs, dtype=np.int64) - pcs[0]
  size = np.fromiter((op.size for op in ops), np.int64, len(ops))
  enter = off % ILINE < size
  enter[0] = True
  return list(zip((off // ILINE).tolist(), ((off + size - 1) // ILINE).tolist(), enter.tolist()))

VALU_DEP, TRANS_DEP = -1, -2   # alu_deps' codes for the latencies Params.valu_dep / trans_dep (other codes: that many cycles)

def alu_deps(ops:list[ReplayOp]) -> list[tuple[tuple[int, int], ...]]:
  """Per instruction of a stream, what its s_delay_alu dependencies wait for: (k, code) pairs, each "until instruction k's issue
  plus a latency" (code VALU_DEP or TRANS_DEP, else that many cycles). They are static: an s_delay_alu names the n-th most recent
  VALU (VALU_DEP_1-4), transcendental (TRANS32_DEP_1-3) or SALU (SALU_CYCLE_1-3: 1-3 cycles after its issue + 1) instruction of
  the wave's own in-order stream, for the instruction `skip` non-delay instructions on; ids without a model (0, FMA_ACCUM_CYCLE_1,
  an instruction that does not exist) wait for nothing."""
  if all(op.cls != C_DELAY for op in ops): return [()] * len(ops)   # (CDNA has no s_delay_alu)
  pending: list[tuple[int, int]] = []   # (non-delay instructions to skip, dependency id)
  valu: list[int] = []; trans: list[int] = []; salu = -1
  out: list[tuple[tuple[int, int], ...]] = []
  for j, op in enumerate(ops):
    deps: list[tuple[int, int]] = []
    if op.cls != C_DELAY and pending:
      keep = []
      for skip, dep in pending:
        if skip: keep.append((skip - 1, dep))
        elif 1 <= dep <= 4 and len(valu) >= dep: deps.append((valu[-dep], VALU_DEP))
        elif 5 <= dep <= 7 and len(trans) >= dep - 4: deps.append((trans[-(dep - 4)], TRANS_DEP))
        elif 9 <= dep <= 11 and salu >= 0: deps.append((salu, dep - 8 + 1))
      pending = keep
    out.append(tuple(deps))
    if op.cls <= C_TRANS:   # (C_VALU, C_TRANS; WMMAs are C_VALU)
      valu.append(j)
      if op.cls == C_TRANS: trans.append(j)
    elif op.cls in (C_SALU, C_BRANCH): salu = j
    elif op.cls == C_DELAY:
      pending += [(skip, dep) for skip, dep in ((0, op.delay & 0xf), ((op.delay >> 4) & 7, (op.delay >> 7) & 0xf)) if dep]
  return out

# (ops, pcs, cache-line spans, s_delay_alu dependencies) of one wave
Stream = tuple[list[ReplayOp], list[int], list[tuple[int, int, bool]], list[tuple[tuple[int, int], ...]]]

def make_stream(ops:list[ReplayOp], pcs:list[int]) -> Stream:
  """A wave's replay input from its issued instructions and their pcs."""
  return ops, pcs, cache_spans(ops, pcs), alu_deps(ops)

class _Wave:
  """Replay state of one wave: position, issue times, the last VALU and SALU issues, wait counters."""
  __slots__ = ("ops", "pcs", "lines", "deps", "i", "ready", "simd", "wg", "salu", "last_valu", "pending", "start", "times",
               "dram", "next_dram", "parked", "mx_end")
  def __init__(self, stream:Stream, start:int, simd:int, wg:int, launch:int):
    self.ops, self.pcs, self.lines, self.deps = stream
    self.i, self.ready, self.simd, self.wg = 0, start + launch, simd, wg
    self.salu = NEVER; self.last_valu = NEVER
    self.pending: list[list[tuple[int, bool]]] = [[] for _ in COUNTERS]   # per counter: (completion cycle, global memory) in order
    self.start, self.times, self.dram, self.next_dram, self.parked, self.mx_end = start, [], [], True, 0, NEVER

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
  __slots__ = ("lines", "lat")
  def __init__(self, lat:int): self.lines, self.lat = {}, lat

  def request(self, line:int, done:int) -> int:
    """Request a line: it and the other line of its 128-byte pair arrive at cycle `done` (unless present)."""
    for ln in (line, line ^ 1): self.lines.setdefault(ln, done)
    return self.lines[line]

  def launch(self, ready:int):
    """A wave launch fetches the first ILAUNCH_LINES lines by `ready`."""
    for line in range(ILAUNCH_LINES): self.lines.setdefault(line, ready)

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

class _CU:
  """One CU's replay: the units above and the issue loop (`run`)."""
  def __init__(self, streams:list[Stream], wg_of:list[int], passes:int, wg_slots:int, p:Params, fetch:int):
    self.streams, self.passes, self.p, self.fetch = streams, passes, p, fetch
    self.waves: list[_Wave | None] = [None] * len(streams)
    self.groups, self.icache, self.ports = _Workgroups(wg_of), _ICache(fetch), _Ports(p.simds_per_cu)
    distinct = {id(st[0]): st[0] for st in streams}.values()   # waves with the same stream share its lists
    self.units = [_Matrix() for _ in range(p.simds_per_cu)] if any(P_MATRIX in [op.port for op in ops] for ops in distinct) else None
    self.pass_issue = ISSUE * passes   # a VALU instruction's issue cycles (wave64: two passes)
    self.lds_done = 0   # the cycle the CU's LDS pipe has finished the last DS instruction
    self.heap: list[tuple[int, int, bool]] = []   # (cycle, wave, whether only its port is left to check); a wave is in it at most once
    for _ in range(min(len(self.groups.waves_of), max(1, wg_slots))): self.launch(0)

  def launch(self, at:int):
    if (nxt := self.groups.next_launch(at)) is None: return
    wg, t, ids = nxt
    for k, i in enumerate(ids):
      w = self.waves[i] = _Wave(self.streams[i], t + k * LAUNCH_GAP, k % self.p.simds_per_cu, wg, self.fetch)
      self.icache.launch(w.ready)
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
      if w.i < len(pcs) and pcs[w.i] != pcs[w.i - 1] + op.size: nxt = ready + p.branch_taken
    elif cls == C_SMEM: w.pending[op.counter].append((ready + p.smem_lat, True))
    elif cls == C_VMEM_LOAD: w.pending[VM].append((ready + p.vmem_load_lat, True))
    elif cls == C_VMEM_STORE:
      w.pending[VS].append((ready + p.vmem_store_lat, True))
      nxt = ready + p.store_next
    elif cls == C_LDS:
      self.lds_done = max(ready + p.lds_lat, self.lds_done + op.lds_cycles)
      w.pending[op.counter].append((self.lds_done, False))
    elif cls == C_DELAY:   # (its dependencies are the later instructions' alu_deps)
      w.times[-1] = None; nxt = ready
    elif cls == C_NOP: nxt = ready + op.delay
    return nxt

  def matrix_hold(self, w:_Wave, ready:int) -> int:
    """After a WMMA issued at `ready`: the wave's next instruction waits one pass, or, with the SIMD's matrix queue full, until the
    oldest WMMA in flight beyond the queue's size completes."""
    nxt, ends, q = ready + self.pass_issue, self.units[w.simd].ends, self.p.matrix_queue
    if len(ends) >= q and len(out := [e for e in ends if e > ready]) >= q: nxt = max(nxt, out[len(out) - q])
    return nxt

  def readiness(self, w:_Wave, nop:ReplayOp, nxt:int) -> tuple[int, bool]:
    """When the wave's next instruction `nop` may issue, from `nxt` on: its s_delay_alu dependencies, VGPR reads of memory
    instructions, the SALU result a conditional branch tests, wait counters, the store and WMMA drain before s_endpgm; and whether
    it then waited on global memory."""
    p, dram, ncls = self.p, False, nop.cls
    for k, code in w.deps[w.i]:
      if (t := w.times[k] + (p.valu_dep if code == VALU_DEP else p.trans_dep if code == TRANS_DEP else code)) > nxt: nxt = t
    if nop.port >= P_VMEM: nxt = max(nxt, w.last_valu + p.vgpr_to_mem)
    elif nop.cond and w.salu + p.branch_dep > nxt: nxt = w.salu + p.branch_dep
    if ncls == C_WAITCNT:
      for q, limit in nop.waits:
        t, g = w.wait(q, limit)
        if t > nxt: nxt, dram = t, dram or g
    elif ncls == C_END:
      pend = w.pending[VS] + w.pending[VM]
      if pend and (t_done := max(d for d, _ in pend)) > nxt: nxt, dram = t_done, True
      if w.mx_end + p.matrix_drain > nxt: nxt = w.mx_end + p.matrix_drain
    return nxt, dram

  def end_wave(self, w:_Wave, ready:int):
    """The wave ended at `ready`: it leaves its workgroup (releasing a barrier it was the last one missing), and a finished
    workgroup frees its slot for the next."""
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
    heappop, heappush, heappushpop = heapq.heappop, heapq.heappush, heapq.heappushpop
    # waves that lost a port of their own SIMD (own_port) wait together for it: such a wave can next issue only once the port is
    # free, and the lowest-numbered of them gets it first, so one wake item (cycle, lowest wave, 2 + key) stands for all of them
    # instead of each retrying at every cycle the port frees (a busy wave64 VALU made that several retries per instruction)
    parked: list[list[int]] = [[] for _ in free]   # per port: the waiting waves (a heap of wave numbers)
    wake: list[tuple[int, int] | None] = [None] * len(free)   # per port: (cycle, wave) of its live wake item; others are stale
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
        span = w.lines[wi]   # one line, not entered (nothing to prefetch) and requested already: its arrival is all fetched() says
        if (t := lines_get(span[0]) if span[0] == span[1] and not span[2] else None) is None: t = fetched(span, ready)
        if t > ready:   # a miss is memory-bound like the launch
          w.next_dram = True; item = heappushpop(heap, (t, i, False)); continue
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
        w.last_valu = ready
        nxt = self.matrix_hold(w, ready) if op.port == P_MATRIX else ready + pass_issue
      elif cls == C_SALU: w.salu, nxt = ready, ready + ISSUE
      else: nxt = effects(w, op, ready)
      if cls == C_END or wi >= len(w.ops):
        self.end_wave(w, ready)
        item = heappop(heap) if heap else None
        continue
      nop = w.ops[wi]
      # an s_delay_alu next whose line is in the cache by nxt touches nothing but its wave: consumed here rather than at its turn
      while nop.cls == C_DELAY and wi + 1 < len(w.ops) and (span := w.lines[wi])[0] == span[1] and not span[2] and \
          (t := lines_get(span[0])) is not None and t <= nxt:
        w.times.append(None); w.dram.append(False)
        w.i = wi = wi + 1
        nop = w.ops[wi]
      if nop.gated or w.deps[wi]: nxt, w.next_dram = readiness(w, nop, nxt)
      else: w.next_dram = False
      if cls == C_BARRIER:
        w.parked = nxt
        if (release := self.groups.arrive(w.wg, i)) is not None: self.release(release, ready)
        item = heappop(heap) if heap else None
        continue
      item = heappushpop(heap, (nxt, i, False))
    return [(w.start, w.times[-1] if w.times else w.start, w.times, w.dram) for w in waves]

def simulate_cu(streams:list[Stream], wg_of:list[int], passes:int, wg_slots:int, p:Params, fetch:int) -> list[tuple[int, int, list, list]]:
  """Replay the waves of one CU with the costs `p` and the cold instruction-fetch latency `fetch` (launch and cache-line misses).
  streams[i]: the CU's i-th wave's (make_stream); wg_of[i]: its local workgroup.

  Returns per wave (start, end, issue times, dram flags)."""
  return _CU(streams, wg_of, passes, wg_slots, p, fetch).run()
