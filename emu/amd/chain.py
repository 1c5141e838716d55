"""Native chains: a wave runs from one native region (emu.amd.regions) into the next inside one native call.

A region ends at a branch, or before an instruction it cannot hold; a kernel's loop body is often several short regions joined by
branches (a guarded load's `s_cbranch_execz`, a `vccnz` test), and calling each region from Python costs ~15 us where its code
runs in well under one. The chain driver (`DRIVER_IR`, one function compiled once per machine) takes a batch of waves and, wave
by wave, looks the wave's PC up in a table of the program's native regions (`Chain.table`: sorted by PC), calls that region's
function for the one wave, and goes on at the PC it left, until the wave reaches a PC without a native region (an instruction
the numpy path runs, a region not compiled yet, the end). It leaves a trace of (table row, runs) per call for each wave, which
the dispatcher hands to the observers and the counts (`Chain.run`).

Waves of a batch run one after another, each as far as its native code goes, where the numpy path keeps them in lockstep: the
same results for every kernel whose waves do not race on memory (a barrier, an LDS access or an atomic is never in a region, so a
chain stops before each). Each wave's own instruction stream, which is all the timing model reads, is the same.

A call stops early (`STOP_*`): when a wave fell back to the numpy path inside a region (its trace's last entry; the caller runs
that region's rest on the numpy path, `Region.settle`), once the batch has run past the instruction watchdog's remainder (after
the region run that passed it, as one region a call would), after about PAUSE wave-instructions (the wall-clock watchdog and
Ctrl-C are seen between calls), when the trace is full, or when the thread's MXCSR is not IEEE's default (nothing is run then).
"""
from __future__ import annotations
import ctypes, os
import numpy as np
from emu import native
from emu.amd import regions

# the context array the driver reads its inputs from and writes its results to (int64 slots; numpy arrays by object address)
(C_TABLE, C_ROWS, C_WAVES, C_NWAVES, C_TRACE, C_CAP, C_STARTS, C_BUDGET, C_PAUSE, C_ONE, C_OUT, C_VGPR, C_SGPR, C_STRIDE, C_OFF,
 C_RTAB, C_NRTAB, C_SCC, C_PC, C_LIBM, C_WTAB, C_NWTAB, C_READ, C_WRITTEN, C_RAN, C_WAVE, C_USED) = range(27)
CONTEXT_SLOTS = 27
ROW = 4   # a table row: pc, function address, instructions, size | writes_pc << 32
STOP_DONE, STOP_FELL, STOP_BUDGET, STOP_PAUSE, STOP_FULL, STOP_BAD = range(6)
TRACE_ENTRIES = 1 << 16   # (row, runs) pairs one call may leave
SIGNATURE = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p)

def _slot(name:str, index:int, ty:str="i64") -> str:
  return f"  %{name}.p = getelementptr inbounds i64, ptr %ctx, i64 {index}\n  %{name} = load {ty}, ptr %{name}.p"

def _data(name:str, index:int) -> str:
  """IR loading the data pointer of the numpy array whose object address is in context slot `index`."""
  return f"{_slot(name + '.o', index, 'ptr')}\n  %{name}.d = getelementptr i8, ptr %{name}.o, i64 %off\n  %{name} = load ptr, ptr %{name}.d"

DRIVER_IR = "\n".join([
  "define i32 @chain(ptr %ctx) {",
  "entry:",
  _slot("off", C_OFF), _slot("tab", C_TABLE, "ptr"), _slot("nrows", C_ROWS), _data("waves", C_WAVES), _slot("nws", C_NWAVES),
  _data("trace", C_TRACE), _slot("cap", C_CAP), _data("starts", C_STARTS), _slot("budget", C_BUDGET), _slot("pause", C_PAUSE),
  _data("one", C_ONE), _data("out", C_OUT), _data("pcs", C_PC),
  _slot("vo", C_VGPR, "ptr"), _slot("so", C_SGPR, "ptr"), _slot("stride", C_STRIDE), _slot("to", C_RTAB, "ptr"),
  _slot("ntab", C_NRTAB), _slot("scco", C_SCC, "ptr"), _slot("pco", C_PC, "ptr"), _slot("lm", C_LIBM, "ptr"),
  _slot("wto", C_WTAB, "ptr"), _slot("nwtab", C_NWTAB), _slot("oneo", C_ONE, "ptr"), _slot("outo", C_OUT, "ptr"),
  "  %limited = icmp sge i64 %budget, 0",
  "  br label %wave",
  # one wave: its PC looked up, its region called, again at the PC it left
  "wave:",
  "  %k = phi i64 [0, %entry], [%k.next, %wave.next]",
  "  %nt.w = phi i64 [0, %entry], [%nt.n, %wave.next]",
  "  %rd.w = phi i64 [0, %entry], [%rd.n, %wave.next]",
  "  %wr.w = phi i64 [0, %entry], [%wr.n, %wave.next]",
  "  %ran.w = phi i64 [0, %entry], [%ran.n, %wave.next]",
  "  %more = icmp ult i64 %k, %nws",
  "  br i1 %more, label %wave.start, label %all.done",
  "wave.start:",
  "  %wp = getelementptr inbounds i64, ptr %waves, i64 %k\n  %w = load i64, ptr %wp\n  store i64 %w, ptr %one",
  "  %sp = getelementptr inbounds i64, ptr %starts, i64 %k\n  store i64 %nt.w, ptr %sp\n  %k1 = add i64 %k, 1",
  "  %pcp = getelementptr inbounds i64, ptr %pcs, i64 %w",
  "  br label %look",
  "look:",
  "  %nt = phi i64 [%nt.w, %wave.start], [%nt.1, %again]",
  "  %rd = phi i64 [%rd.w, %wave.start], [%rd.1, %again]",
  "  %wr = phi i64 [%wr.w, %wave.start], [%wr.1, %again]",
  "  %ran = phi i64 [%ran.w, %wave.start], [%ran.1, %again]",
  "  %pc = load i64, ptr %pcp",
  "  br label %search",
  "search:",   # the first row whose pc is not below the wave's
  "  %l = phi i64 [0, %look], [%l.n, %halve]\n  %r = phi i64 [%nrows, %look], [%r.n, %halve]",
  "  %open = icmp ult i64 %l, %r\n  br i1 %open, label %halve, label %searched",
  "halve:",
  "  %sum = add i64 %l, %r\n  %mid = lshr i64 %sum, 1\n  %mrow = mul i64 %mid, 4",
  "  %mpp = getelementptr inbounds i64, ptr %tab, i64 %mrow\n  %mpc = load i64, ptr %mpp",
  "  %below = icmp ult i64 %mpc, %pc\n  %mid1 = add i64 %mid, 1",
  "  %l.n = select i1 %below, i64 %mid1, i64 %l\n  %r.n = select i1 %below, i64 %r, i64 %mid",
  "  br label %search",
  "searched:",
  "  %inside = icmp ult i64 %l, %nrows\n  br i1 %inside, label %compare, label %wave.next",
  "compare:",
  "  %row = mul i64 %l, 4\n  %rp = getelementptr inbounds i64, ptr %tab, i64 %row\n  %rpc = load i64, ptr %rp",
  "  %hit = icmp eq i64 %rpc, %pc\n  br i1 %hit, label %room, label %wave.next",
  "room:",
  "  %full = icmp uge i64 %nt, %cap\n  br i1 %full, label %stop.full, label %call",
  "call:",
  "  %fnp = getelementptr inbounds i64, ptr %rp, i64 1\n  %fni = load i64, ptr %fnp\n  %fn = inttoptr i64 %fni to ptr",
  "  %cntp = getelementptr inbounds i64, ptr %rp, i64 2\n  %count = load i64, ptr %cntp",
  "  %flp = getelementptr inbounds i64, ptr %rp, i64 3\n  %flags = load i64, ptr %flp",
  # a looping region's limit: about LOOP_BUDGET a call, never past the run in which the budget's remainder is passed
  "  %lim.loop = udiv i64 %pause, %count",
  "  %left = sub i64 %budget, %ran\n  %left1 = add i64 %left, %count\n  %lim.dog = udiv i64 %left1, %count",
  "  %lim.both = call i64 @llvm.umin.i64(i64 %lim.loop, i64 %lim.dog)",
  "  %lim.any = select i1 %limited, i64 %lim.both, i64 %lim.loop",
  "  %limit = call i64 @llvm.umax.i64(i64 %lim.any, i64 1)",
  "  %res = call i32 %fn(ptr %vo, ptr %so, ptr %oneo, i64 1, i64 %stride, i64 %off, ptr %to, i64 %ntab, ptr %outo, ptr %scco, "
  "ptr %pco, i64 %pc, ptr %lm, ptr %wto, i64 %nwtab, i64 %limit)",
  f"  %bad = and i32 %res, {~regions.FELL}\n  %isbad = icmp ne i32 %bad, 0\n  br i1 %isbad, label %stop.bad, label %ran.it",
  "ran.it:",
  "  %o0 = load i64, ptr %out\n  %o1p = getelementptr inbounds i64, ptr %out, i64 1\n  %o1 = load i64, ptr %o1p",
  "  %o3p = getelementptr inbounds i64, ptr %out, i64 3\n  %o3 = load i64, ptr %o3p",
  "  %o4p = getelementptr inbounds i64, ptr %out, i64 4\n  %o4 = load i64, ptr %o4p",
  "  %rd.1 = add i64 %rd, %o0\n  %wr.1 = add i64 %wr, %o1\n  %did = mul i64 %o3, %count\n  %ran.1 = add i64 %ran, %did",
  "  %tp = mul i64 %nt, 2\n  %tr = getelementptr inbounds i32, ptr %trace, i64 %tp",
  "  %l32 = trunc i64 %l to i32\n  store i32 %l32, ptr %tr",
  "  %tr1 = getelementptr inbounds i32, ptr %tr, i64 1\n  %o4t = trunc i64 %o4 to i32\n  store i32 %o4t, ptr %tr1",
  "  %nt.1 = add i64 %nt, 1",
  f"  %fell = and i32 %res, {regions.FELL}\n  %isfell = icmp ne i32 %fell, 0\n  br i1 %isfell, label %stop.fell, label %moved",
  "moved:",   # a region without a branch at its end leaves the wave at the instruction after it
  "  %wpc = lshr i64 %flags, 32\n  %stay = icmp ne i64 %wpc, 0\n  br i1 %stay, label %check, label %step",
  "step:",
  "  %size = and i64 %flags, 4294967295\n  %pc.n = add i64 %pc, %size\n  store i64 %pc.n, ptr %pcp\n  br label %check",
  "check:",
  "  %over = icmp sgt i64 %ran.1, %budget\n  %dog = and i1 %limited, %over\n  br i1 %dog, label %stop.budget, label %paused",
  "paused:",
  "  %long = icmp sge i64 %ran.1, %pause\n  br i1 %long, label %stop.pause, label %again",
  "again:",
  "  br label %look",
  "wave.next:",
  "  %nt.n = phi i64 [%nt, %searched], [%nt, %compare]",
  "  %rd.n = phi i64 [%rd, %searched], [%rd, %compare]\n  %wr.n = phi i64 [%wr, %searched], [%wr, %compare]",
  "  %ran.n = phi i64 [%ran, %searched], [%ran, %compare]\n  %k.next = add i64 %k, 1",
  "  br label %wave",
  # every exit: the totals, the wave it stopped in (nws when all ran), the trace entries used and that wave's end in `starts`
  "all.done:\n  br label %finish",
  "stop.full:\n  br label %finish",
  "stop.bad:\n  br label %finish",
  "stop.fell:\n  br label %finish",
  "stop.budget:\n  br label %finish",
  "stop.pause:\n  br label %finish",
  "finish:",
  f"  %why = phi i32 [{STOP_DONE}, %all.done], [{STOP_FULL}, %stop.full], [{STOP_BAD}, %stop.bad], [{STOP_FELL}, %stop.fell], "
  f"[{STOP_BUDGET}, %stop.budget], [{STOP_PAUSE}, %stop.pause]",
  "  %k.f = phi i64 [%k, %all.done], [%k, %stop.full], [%k, %stop.bad], [%k, %stop.fell], [%k, %stop.budget], [%k, %stop.pause]",
  "  %e.f = phi i64 [%k, %all.done], [%k1, %stop.full], [%k1, %stop.bad], [%k1, %stop.fell], [%k1, %stop.budget], [%k1, %stop.pause]",
  "  %nt.f = phi i64 [%nt.w, %all.done], [%nt, %stop.full], [%nt, %stop.bad], [%nt.1, %stop.fell], [%nt.1, %stop.budget], "
  "[%nt.1, %stop.pause]",
  "  %rd.f = phi i64 [%rd.w, %all.done], [%rd, %stop.full], [%rd, %stop.bad], [%rd.1, %stop.fell], [%rd.1, %stop.budget], "
  "[%rd.1, %stop.pause]",
  "  %wr.f = phi i64 [%wr.w, %all.done], [%wr, %stop.full], [%wr, %stop.bad], [%wr.1, %stop.fell], [%wr.1, %stop.budget], "
  "[%wr.1, %stop.pause]",
  "  %ran.f = phi i64 [%ran.w, %all.done], [%ran, %stop.full], [%ran, %stop.bad], [%ran.1, %stop.fell], [%ran.1, %stop.budget], "
  "[%ran.1, %stop.pause]",
  "  %ep = getelementptr inbounds i64, ptr %starts, i64 %e.f\n  store i64 %nt.f, ptr %ep",
  *(f"  %res.{i}.p = getelementptr inbounds i64, ptr %ctx, i64 {i}\n  store i64 {v}, ptr %res.{i}.p"
    for i, v in ((C_READ, "%rd.f"), (C_WRITTEN, "%wr.f"), (C_RAN, "%ran.f"), (C_WAVE, "%k.f"), (C_USED, "%nt.f"))),
  "  ret i32 %why",
  "}",
  "declare i64 @llvm.umin.i64(i64, i64)",
  "declare i64 @llvm.umax.i64(i64, i64)",
])

_driver: list = []   # the driver function once loaded ([None] when it cannot be), or [] before

def driver():
  """The chain driver (compiled on the background thread when regions are, meanwhile None; from the disk cache at once when there)."""
  if not _driver:
    _driver.append(None)
    key = native.NATIVE.key(DRIVER_IR)
    if (fn := native.NATIVE.function_by_key(key, SIGNATURE)) is not None: _driver[0] = fn
    elif regions.BACKGROUND: native.NATIVE.function_later(DRIVER_IR, SIGNATURE, lambda fn: _driver.__setitem__(0, fn))
    else: _driver[0] = native.NATIVE.function(DRIVER_IR, SIGNATURE)
  return _driver[0]

class Chain:
  """The native regions of one Program (emu.amd.steps) as the driver's table, and the buffers of its calls."""
  def __init__(self):
    self.stamp: tuple | None = None
    self.rows: list[tuple[int, regions.Region]] = []   # the table's rows: (pc, region)
    self.table = np.zeros((0, ROW), dtype=np.int64)
    self.trace = np.empty(2 * TRACE_ENTRIES, dtype=np.int32)   # (row, runs) per region call
    self.one, self.out = np.zeros(1, dtype=np.int64), np.zeros(5, dtype=np.int64)   # a region call's wave and results
    self.ctx = np.zeros(CONTEXT_SLOTS, dtype=np.int64)
    self.ctx_addr = self.ctx.ctypes.data

  def refresh(self, found:dict, mode:int):
    """Make the table again when a region became native (or changed tier) since it was made, or the Program found more (`found`:
    its regions by PC), or the waves' MODE differs: every region of `found` with native code for that MODE."""
    if self.stamp == (stamp := (regions.Region.changes, len(found), mode)): return
    self.stamp = stamp
    self.rows = sorted((pc, r) for pc, r in found.items() if r is not None and r.fn is not None and r.mode in (None, mode))
    self.table = np.array([(pc, ctypes.cast(r.fn, ctypes.c_void_p).value, r.count, r.size | int(r.writes_pc) << 32)
                           for pc, r in self.rows], dtype=np.int64).reshape(-1, ROW)

  def run(self, m, found:dict, ws:np.ndarray, mode:int, budget:int|None) -> tuple[int, list[tuple[np.ndarray, np.ndarray]], int] | None:
    """Run waves ws (same PC, sorted, all in MODE `mode`) from region to region as far as their native code goes (`found`: the
    Program's regions by PC). (Why it stopped (STOP_*), the waves grouped by what they ran: (waves, (row, runs) per region call,
    in order), the wave-instructions run); None when nothing ran (no driver yet, or the MXCSR is not IEEE's default)."""
    if (fn := driver()) is None: return None
    self.refresh(found, mode)
    st, n = m.st, len(ws)
    ws, starts = np.ascontiguousarray(ws, dtype=np.int64), np.zeros(n + 1, dtype=np.int64)
    table, wtable = m.mem.native_table(), m.mem.native_table(write=True)
    self.ctx[:C_READ] = (self.table.ctypes.data, len(self.rows), id(ws), n, id(self.trace), TRACE_ENTRIES, id(starts),
                         -1 if budget is None else budget, regions.LOOP_BUDGET, id(self.one), id(self.out), id(st.vgpr_store), id(st.sgpr),
                         st.n * st.lanes, native.NATIVE.data_offset, id(table), len(table), id(st.scc), id(st.pc),
                         native.NATIVE.libm_table(), id(wtable), len(wtable))
    why = fn(self.ctx_addr)
    read, written, ran, k, used = self.ctx[C_READ:C_USED + 1].tolist()
    if why == STOP_BAD and not used: return None
    m.stats.bytes_read += read
    m.stats.bytes_written += written
    calls = self.trace[:2 * used].reshape(-1, 2)
    if why == STOP_FELL:   # the last call's wave fell back: the numpy path runs the rest of that region for it
      calls = calls.copy()
      row, runs = calls[-1].tolist()
      calls[-1, 1] = self.rows[row][1].settle(m, ws[k:k + 1], np.array([runs]))[0]
    totals = np.bincount(calls[:, 0], weights=calls[:, 1], minlength=len(self.rows))
    for row in np.flatnonzero(totals).tolist(): self.rows[row][1].ran_natively(int(totals[row]))
    groups: dict[bytes, tuple[list[int], np.ndarray]] = {}   # waves that ran the same calls, reported together
    bounds = starts[:min(k + 1, n) + 1].tolist()
    for i, (a, b) in enumerate(zip(bounds, bounds[1:])):
      if b > a: groups.setdefault(calls[a:b].tobytes(), ([], calls[a:b]))[0].append(i)
    return why, [(ws[idx], seq) for idx, seq in groups.values()], ran

def enabled() -> bool:
  """Whether batches run on through native chains: not with EMU_CHAINS=0, nor under EMU_REGIONS=check (which compares each region
  run with the numpy path's)."""
  return not regions.CHECK and os.environ.get("EMU_CHAINS", "1") != "0"
