"""Native chains: waves run from one native region (emu.amd.regions) into the next inside one native call.

A region ends at a branch, or before an instruction it cannot hold; a kernel's loop body is often several short regions joined by
branches (a guarded load's `s_cbranch_execz`, a `vccnz` test), and calling each region from Python costs ~15 us where its code
runs in well under one. The chain driver (`DRIVER_IR`, one function compiled once per machine) looks the PC up in a table of the
program's native regions (`Chain.table`, sorted by PC: the regions the dispatcher has met in this program, natively compiled for
the waves' MODE), calls that region's function, and goes on at the PC it left:
- first for the whole batch at once, while every wave runs each region alike (as many runs of a loop, none falling back) and goes
  on to the same PC: the numpy path's lockstep, one call of each region for all waves (a call whose waves' runs differ, or in
  which some wave fell back, ends it: the caller takes it as it takes a region call, `STOP_SPLIT`);
- then, once the waves' PCs differ, wave by wave, each as far as its native code goes.
Each stops at a PC without a native region (an instruction the numpy path runs, a region not compiled or not met yet, the end).
The driver leaves a trace of (table row, runs) per call, the batch's calls first, then each wave's own, which the dispatcher hands
to the observers and the counts (`Chain.run`); waves that made the same calls are reported together.

Waves on their own run one after another, where the numpy path keeps them in lockstep: the same results for every kernel whose
waves do not race on memory (global or LDS: a barrier or an atomic is never in a region, so a chain stops before each, and LDS
written by one wave and read by another without a barrier between is a race on the hardware too), and each wave's own instruction
stream, which is all the timing model reads, is the same.

A call stops early (`STOP_*`): when a wave on its own fell back to the numpy path inside a region (its trace's last entry; the
caller runs that region's rest on the numpy path, `Region.settle`), once the waves have run past the instruction watchdog's
remainder (after the region run that passed it, as one region a call would), after about LOOP_BUDGET wave-instructions (the
wall-clock watchdog and Ctrl-C are seen between calls), when the trace is full, or when the thread's MXCSR is not IEEE's default
(the call in which the driver met it ran nothing). EMU_CHAINS=0 turns chains off (one region a call).
"""
from __future__ import annotations
import ctypes, os
import numpy as np
from emu import native
from emu.amd import region_ir, regions

# the context array the driver reads its inputs from and writes its results to (int64 slots; numpy arrays by object address)
(C_TABLE, C_ROWS, C_WAVES, C_NWAVES, C_TRACE, C_CAP, C_STARTS, C_BUDGET, C_PAUSE, C_ONE, C_OUT, C_OUTB, C_VGPR, C_SGPR, C_STRIDE,
 C_OFF, C_RTAB, C_NRTAB, C_SCC, C_PC, C_LIBM, C_WTAB, C_NWTAB, C_LDS, C_LDSB, C_WG,   # inputs; results:
 C_READ, C_WRITTEN, C_RAN, C_WAVE, C_USED, C_BATCHED, C_PHASE, C_RES, C_SPLIT) = range(35)
CONTEXT_SLOTS = 35
ROW = 4   # a table row: pc, function address, instructions, size | writes_pc << 32
STOP_DONE, STOP_FELL, STOP_BUDGET, STOP_PAUSE, STOP_FULL, STOP_BAD, STOP_SPLIT = range(7)
TRACE_ENTRIES = 1 << 16   # (row, runs) pairs one call may leave
SIGNATURE = ctypes.PYFUNCTYPE(ctypes.c_int32, ctypes.c_void_p)   # (a call keeps the GIL: emu.native's _SIGNATURE says why)

def _slot(name:str, index:int, ty:str="i64") -> str:
  return f"  %{name}.p = getelementptr inbounds i64, ptr %ctx, i64 {index}\n  %{name} = load {ty}, ptr %{name}.p"

def _data(name:str, index:int) -> str:
  """IR loading the data pointer of the numpy array whose object address is in context slot `index`."""
  return f"{_slot(name + '.o', index, 'ptr')}\n  %{name}.d = getelementptr i8, ptr %{name}.o, i64 %off\n  %{name} = load ptr, ptr %{name}.d"

def _add(var:str, value:str, tag:str) -> str:
  """IR adding `value` to the i64 stack slot %var.s."""
  return f"  %{var}.{tag}.o = load i64, ptr %{var}.s\n  %{var}.{tag}.n = add i64 %{var}.{tag}.o, {value}\n  store i64 %{var}.{tag}.n, ptr %{var}.s"

def _call(t:str, pc:str, nws:str, waves:str, out:str, hit:str, miss:str, full:str, bad:str) -> list[str]:
  """IR looking `pc` up in the table (branching to `miss` when no row holds it), then calling the row's region for `nws` waves
  (array object `waves`, results into the array whose data pointer is `out`, its object `out`.o) at most the limit the budgets allow;
  `full`: where to go when the trace is full, `bad`: when the MXCSR is not IEEE's default. Goes on at %{t}ran with %{t}row,
  %{t}count, %{t}flags, %{t}res and the results' first words %{t}o0 .. %{t}o4 loaded. `t` prefixes every name."""
  return [
    f"  br label %{t}search", f"{t}search:",   # the first row whose pc is not below
    f"  %{t}l = phi i64 [0, %{hit}], [%{t}l.n, %{t}halve]\n  %{t}r = phi i64 [%nrows, %{hit}], [%{t}r.n, %{t}halve]",
    f"  %{t}open = icmp ult i64 %{t}l, %{t}r\n  br i1 %{t}open, label %{t}halve, label %{t}searched", f"{t}halve:",
    f"  %{t}sum = add i64 %{t}l, %{t}r\n  %{t}mid = lshr i64 %{t}sum, 1\n  %{t}mrow = mul i64 %{t}mid, {ROW}",
    f"  %{t}mpp = getelementptr inbounds i64, ptr %tab, i64 %{t}mrow\n  %{t}mpc = load i64, ptr %{t}mpp",
    f"  %{t}below = icmp ult i64 %{t}mpc, {pc}\n  %{t}mid1 = add i64 %{t}mid, 1",
    f"  %{t}l.n = select i1 %{t}below, i64 %{t}mid1, i64 %{t}l\n  %{t}r.n = select i1 %{t}below, i64 %{t}r, i64 %{t}mid",
    f"  br label %{t}search", f"{t}searched:",
    f"  %{t}inside = icmp ult i64 %{t}l, %nrows\n  br i1 %{t}inside, label %{t}compare, label %{miss}", f"{t}compare:",
    f"  %{t}row = mul i64 %{t}l, {ROW}\n  %{t}rp = getelementptr inbounds i64, ptr %tab, i64 %{t}row\n  %{t}rpc = load i64, ptr %{t}rp",
    f"  %{t}hit = icmp eq i64 %{t}rpc, {pc}\n  br i1 %{t}hit, label %{t}room, label %{miss}", f"{t}room:",
    f"  %{t}nt = load i64, ptr %nt.s\n  %{t}full = icmp uge i64 %{t}nt, %cap\n  br i1 %{t}full, label %{full}, label %{t}call", f"{t}call:",
    f"  %{t}fnp = getelementptr inbounds i64, ptr %{t}rp, i64 1\n  %{t}fni = load i64, ptr %{t}fnp\n  %{t}fn = inttoptr i64 %{t}fni to ptr",
    f"  %{t}cntp = getelementptr inbounds i64, ptr %{t}rp, i64 2\n  %{t}count = load i64, ptr %{t}cntp",
    f"  %{t}flp = getelementptr inbounds i64, ptr %{t}rp, i64 3\n  %{t}flags = load i64, ptr %{t}flp",
    # a looping region's limit: about PAUSE wave-instructions a call, never past the run in which the budget's remainder is passed
    f"  %{t}per = mul i64 %{t}count, {nws}\n  %{t}lim.loop = udiv i64 %pause, %{t}per\n  %{t}ran0 = load i64, ptr %ran.s",
    f"  %{t}left = sub i64 %budget, %{t}ran0\n  %{t}left1 = add i64 %{t}left, %{t}per\n  %{t}lim.dog = udiv i64 %{t}left1, %{t}per",
    f"  %{t}lim.both = call i64 @llvm.umin.i64(i64 %{t}lim.loop, i64 %{t}lim.dog)",
    f"  %{t}lim.any = select i1 %limited, i64 %{t}lim.both, i64 %{t}lim.loop",
    f"  %{t}limit = call i64 @llvm.umax.i64(i64 %{t}lim.any, i64 1)",
    f"  %{t}res = call i32 %{t}fn(ptr %vo, ptr %so, ptr {waves}, i64 {nws}, i64 %stride, i64 %off, ptr %to, i64 %ntab, ptr {out}.o, "
    f"ptr %scco, ptr %pco, i64 {pc}, ptr %lm, ptr %wto, i64 %nwtab, i64 %{t}limit, ptr %ldso, i64 %ldsb, ptr %wgo)",
    f"  %{t}res64 = zext i32 %{t}res to i64\n  store i64 %{t}res64, ptr %res.p",
    f"  %{t}bad = and i32 %{t}res, {~region_ir.FELL}\n  %{t}isbad = icmp ne i32 %{t}bad, 0\n  br i1 %{t}isbad, label %{bad}, label %{t}got",
    f"{t}got:",
    *(f"  %{t}o{i}p = getelementptr inbounds i64, ptr {out}, i64 {i}\n  %{t}o{i} = load i64, ptr %{t}o{i}p" for i in range(5)),
    _add("rd", f"%{t}o0", t[:-1]), _add("wr", f"%{t}o1", t[:-1]),
    f"  %{t}did = mul i64 %{t}o3, %{t}count", _add("ran", f"%{t}did", t[:-1]),
    f"  br label %{t}ran", f"{t}ran:"]

def _record(t:str, runs:str) -> str:
  """IR appending (%{t}l, runs) to the trace."""
  return (f"  %{t}tp = mul i64 %{t}nt, 2\n  %{t}tr = getelementptr inbounds i32, ptr %trace, i64 %{t}tp\n  %{t}l32 = trunc i64 %{t}l to i32\n"
          f"  store i32 %{t}l32, ptr %{t}tr\n  %{t}tr1 = getelementptr inbounds i32, ptr %{t}tr, i64 1\n  %{t}rt = trunc i64 {runs} to i32\n"
          f"  store i32 %{t}rt, ptr %{t}tr1\n  %{t}nt1 = add i64 %{t}nt, 1\n  store i64 %{t}nt1, ptr %nt.s")

def _checks(t:str, go:str, budget:str, pause:str) -> str:
  """IR branching to `budget` once the call's wave-instructions passed the budget, to `pause` once they reach PAUSE, else to `go`."""
  return (f"  %{t}ran1 = load i64, ptr %ran.s\n  %{t}over = icmp sgt i64 %{t}ran1, %budget\n  %{t}dog = and i1 %limited, %{t}over\n"
          f"  br i1 %{t}dog, label %{budget}, label %{t}paused\n{t}paused:\n  %{t}long = icmp sge i64 %{t}ran1, %pause\n"
          f"  br i1 %{t}long, label %{pause}, label %{go}")

# a stop: (block, why, phase: 1 when the waves went on one by one, closing wave k's calls in `starts` (all done: k is nws))
_STOPS = (("stop.b.done", STOP_DONE, 0), ("stop.b.full", STOP_FULL, 0), ("stop.b.bad", STOP_BAD, 0), ("stop.b.split", STOP_SPLIT, 0),
          ("stop.b.budget", STOP_BUDGET, 0),
          ("stop.b.pause", STOP_PAUSE, 0), ("stop.w.full", STOP_FULL, 1), ("stop.w.bad", STOP_BAD, 1), ("stop.w.fell", STOP_FELL, 1),
          ("stop.w.budget", STOP_BUDGET, 1), ("stop.w.pause", STOP_PAUSE, 1), ("all.done", STOP_DONE, 1))

DRIVER_IR = "\n".join([
  "define i32 @chain(ptr %ctx) {",
  "entry:",
  _slot("off", C_OFF), _slot("tab", C_TABLE, "ptr"), _slot("nrows", C_ROWS), _data("waves", C_WAVES), _slot("nws", C_NWAVES),
  _data("trace", C_TRACE), _slot("cap", C_CAP), _data("starts", C_STARTS), _slot("budget", C_BUDGET), _slot("pause", C_PAUSE),
  _data("one", C_ONE), _data("out", C_OUT), _data("outb", C_OUTB), _data("pcs", C_PC),
  _slot("vo", C_VGPR, "ptr"), _slot("so", C_SGPR, "ptr"), _slot("stride", C_STRIDE), _slot("to", C_RTAB, "ptr"),
  _slot("ntab", C_NRTAB), _slot("scco", C_SCC, "ptr"), _slot("pco", C_PC, "ptr"), _slot("lm", C_LIBM, "ptr"),
  _slot("wto", C_WTAB, "ptr"), _slot("nwtab", C_NWTAB), _slot("ldso", C_LDS, "ptr"), _slot("ldsb", C_LDSB), _slot("wgo", C_WG, "ptr"),
  f"  %res.p = getelementptr inbounds i64, ptr %ctx, i64 {C_RES}",
  *(f"  %{v}.s = alloca i64\n  store i64 0, ptr %{v}.s" for v in ("nt", "rd", "wr", "ran", "k", "bnt")),
  "  %limited = icmp sge i64 %budget, 0",
  "  %w0 = load i64, ptr %waves\n  %pcp0 = getelementptr inbounds i64, ptr %pcs, i64 %w0",
  "  br label %b.look",
  # the batch together: each region for every wave of it in one call, while all run it alike and go on to one PC
  "b.look:",
  "  %b.pc = load i64, ptr %pcp0",
  *_call("b.", "%b.pc", "%nws", "%waves.o", "%outb", "b.look", "stop.b.done", "stop.b.full", "stop.b.bad"),
  f"  %b.fell = and i32 %b.res, {region_ir.FELL}\n  %b.isfell = icmp ne i32 %b.fell, 0",
  "  %b.all = mul i64 %b.o2, %nws\n  %b.uneven = icmp ne i64 %b.all, %b.o3\n  %b.split = or i1 %b.isfell, %b.uneven",
  f"  %b.splitp = getelementptr inbounds i64, ptr %ctx, i64 {C_SPLIT}\n  store i64 %b.l, ptr %b.splitp",
  "  br i1 %b.split, label %stop.b.split, label %b.even",   # (some wave fell back, or the waves looped differently: the caller's)
  "b.even:",
  _record("b.", "%b.o2"), "  store i64 %b.nt1, ptr %bnt.s",
  "  %b.wpc = lshr i64 %b.flags, 32\n  %b.stay = icmp ne i64 %b.wpc, 0\n  br i1 %b.stay, label %b.moved, label %b.step",
  "b.step:",   # a region without a branch at its end leaves every wave at the instruction after it
  "  %b.size = and i64 %b.flags, 4294967295\n  br label %b.adv",
  "b.adv:\n  %b.i = phi i64 [0, %b.step], [%b.i1, %b.adv]",
  "  %b.ip = getelementptr inbounds i64, ptr %waves, i64 %b.i\n  %b.iw = load i64, ptr %b.ip",
  "  %b.ipc = getelementptr inbounds i64, ptr %pcs, i64 %b.iw",
  "  %b.old = load i64, ptr %b.ipc\n  %b.new = add i64 %b.old, %b.size\n  store i64 %b.new, ptr %b.ipc",
  "  %b.i1 = add i64 %b.i, 1\n  %b.idone = icmp eq i64 %b.i1, %nws\n  br i1 %b.idone, label %b.moved, label %b.adv",
  "b.moved:",
  _checks("b.", "b.same", "stop.b.budget", "stop.b.pause"),
  "b.same:\n  %b.next = load i64, ptr %pcp0\n  br label %b.eq",   # every wave at wave 0's PC: on together, else one by one
  "b.eq:\n  %b.j = phi i64 [1, %b.same], [%b.j1, %b.eqnext]\n  %b.jin = icmp ult i64 %b.j, %nws\n  br i1 %b.jin, label %b.eqtest, label %b.look",
  "b.eqtest:",
  "  %b.jp = getelementptr inbounds i64, ptr %waves, i64 %b.j\n  %b.jw = load i64, ptr %b.jp",
  "  %b.jpc = getelementptr inbounds i64, ptr %pcs, i64 %b.jw",
  "  %b.jv = load i64, ptr %b.jpc\n  %b.jsame = icmp eq i64 %b.jv, %b.next\n  %b.j1 = add i64 %b.j, 1",
  "  br i1 %b.jsame, label %b.eqnext, label %wave",
  "b.eqnext:\n  br label %b.eq",
  # one wave at a time: its PC looked up, its region called for it, again at the PC it left
  "wave:",
  "  %k = load i64, ptr %k.s\n  %more = icmp ult i64 %k, %nws\n  br i1 %more, label %w.start, label %all.done",
  "w.start:",
  "  %wp = getelementptr inbounds i64, ptr %waves, i64 %k\n  %w = load i64, ptr %wp\n  store i64 %w, ptr %one",
  "  %sp = getelementptr inbounds i64, ptr %starts, i64 %k\n  %nt.k = load i64, ptr %nt.s\n  store i64 %nt.k, ptr %sp",
  "  %pcp = getelementptr inbounds i64, ptr %pcs, i64 %w\n  br label %w.look",
  "w.look:",
  "  %w.pc = load i64, ptr %pcp",
  *_call("w.", "%w.pc", "1", "%one.o", "%out", "w.look", "w.next", "stop.w.full", "stop.w.bad"),
  _record("w.", "%w.o4"),
  f"  %w.fell = and i32 %w.res, {region_ir.FELL}\n  %w.isfell = icmp ne i32 %w.fell, 0\n  br i1 %w.isfell, label %stop.w.fell, label %w.kept",
  "w.kept:",
  "  %w.wpc = lshr i64 %w.flags, 32\n  %w.stay = icmp ne i64 %w.wpc, 0\n  br i1 %w.stay, label %w.moved, label %w.step",
  "w.step:",
  "  %w.size = and i64 %w.flags, 4294967295\n  %w.pcn = add i64 %w.pc, %w.size\n  store i64 %w.pcn, ptr %pcp\n  br label %w.moved",
  "w.moved:",
  _checks("w.", "w.look", "stop.w.budget", "stop.w.pause"),
  "w.next:",
  "  %k.n = add i64 %k, 1\n  store i64 %k.n, ptr %k.s\n  br label %wave",
  # every exit: why, the totals, the wave it stopped in (nws when all ran) and that wave's end in `starts`
  *(f"{block}:\n  %{block}.k = load i64, ptr %k.s\n  %{block}.e = add i64 %{block}.k, {0 if why == STOP_DONE else 1}\n"
    f"  %{block}.ep = getelementptr inbounds i64, ptr %starts, i64 %{block}.e\n  %{block}.nt = load i64, ptr %nt.s\n"
    f"  store i64 %{block}.nt, ptr %{block}.ep\n  br label %finish" if phase else f"{block}:\n  br label %finish"
    for block, why, phase in _STOPS),
  "finish:",
  "  %why = phi i32 " + ", ".join(f"[{why}, %{block}]" for block, why, _ in _STOPS),
  "  %phase = phi i64 " + ", ".join(f"[{phase}, %{block}]" for block, _, phase in _STOPS),
  f"  %ph.p = getelementptr inbounds i64, ptr %ctx, i64 {C_PHASE}\n  store i64 %phase, ptr %ph.p",
  *(f"  %f.{v} = load i64, ptr %{v}.s\n  %f.{v}.p = getelementptr inbounds i64, ptr %ctx, i64 {i}\n  store i64 %f.{v}, ptr %f.{v}.p"
    for v, i in (("rd", C_READ), ("wr", C_WRITTEN), ("ran", C_RAN), ("k", C_WAVE), ("nt", C_USED), ("bnt", C_BATCHED))),
  "  ret i32 %why",
  "}",
  "declare i64 @llvm.umin.i64(i64, i64)",
  "declare i64 @llvm.umax.i64(i64, i64)",
])

_driver = {"fn": None, "generation": -1}   # the driver once loaded, and the NATIVE.generation it was asked for in

def driver():
  """The chain driver: from the disk cache at once when there, else compiled on the background thread when regions are (None
  meanwhile, and for good where it cannot be compiled; asked again in a forked child, where a queued compile is lost)."""
  if _driver["fn"] is None and _driver["generation"] != native.NATIVE.generation:
    _driver["generation"] = native.NATIVE.generation
    native.NATIVE.function_soon(DRIVER_IR, SIGNATURE, lambda fn: _driver.__setitem__("fn", fn), background=regions.BACKGROUND)
  return _driver["fn"]

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

  def run(self, m, found:dict, ws:np.ndarray, mode:int, budget:int|None) -> tuple | None:
    """Run waves ws (same PC, sorted, all in MODE `mode`) from region to region as far as their native code goes (`found`: the
    Program's regions by PC): together while every wave runs each region alike and goes on to one PC, then each on its own.
    (Why it stopped (STOP_*), the waves grouped by what they ran: [(waves, (row, runs) per region call, in order)], the
    wave-instructions run, and for STOP_SPLIT the last region call of the batch together, in which the waves' runs differ or some
    wave fell back: (its pc, region, each wave's runs, the most, all)); None when nothing ran (no driver yet, the MXCSR is not
    IEEE's default, or the region at their PC is not native for this MODE)."""
    if (fn := driver()) is None: return None
    self.refresh(found, mode)
    st, n = m.st, len(ws)
    ws, starts, outb = np.ascontiguousarray(ws, dtype=np.int64), np.zeros(n + 1, dtype=np.int64), np.zeros(n + 4, dtype=np.int64)
    table, wtable = m.mem.native_table(), m.mem.native_table(write=True)
    self.ctx[:C_READ] = (self.table.ctypes.data, len(self.rows), id(ws), n, id(self.trace), TRACE_ENTRIES, id(starts),
                         -1 if budget is None else budget, regions.LOOP_BUDGET, id(self.one), id(self.out), id(outb), id(st.vgpr_store),
                         id(st.sgpr), st.n * st.lanes, native.NATIVE.data_offset, id(table), len(table), id(st.scc), id(st.pc),
                         native.NATIVE.libm_table(), id(wtable), len(wtable), id(m.lds.store), m.lds.limit, id(st.wg))
    why = fn(self.ctx_addr)
    read, written, ran, k, used, batched, phase, res, split_row = self.ctx[C_READ:C_SPLIT + 1].tolist()
    if not used and why != STOP_SPLIT: return None   # (the MXCSR is not IEEE's default, or the first region is not native here)
    m.stats.bytes_read += read
    m.stats.bytes_written += written
    calls = self.trace[:2 * used].reshape(-1, 2)
    split = None
    if why == STOP_SPLIT:   # as Region.run's caller takes a call: each wave's runs, a fallen wave's run on the numpy path
      at, region = self.rows[split_row]
      runs, most, total = outb[4:], int(outb[2]), int(outb[3])
      if res & region_ir.FELL: runs = region.settle(m, ws, runs)
      region.ran_natively(total)
      split = (at, region, runs, most, total)
    elif why == STOP_FELL:   # the last call's wave fell back: the numpy path runs the rest of that region for it
      calls = calls.copy()
      row, runs = calls[-1].tolist()
      calls[-1, 1] = self.rows[row][1].settle(m, ws[k:k + 1], np.array([runs]))[0]
    totals = np.bincount(calls[:, 0], weights=calls[:, 1], minlength=len(self.rows))
    for row in np.flatnonzero(totals).tolist(): self.rows[row][1].ran_natively(int(totals[row]))
    if not phase: return why, [(ws, calls)] if used else [], ran, split
    together, done = calls[:batched], min(k + 1, n)   # (the calls every wave made, then each wave's own)
    groups = _grouped(ws[:done], starts[:done + 1], calls, together)
    return why, groups + ([(ws[done:], together)] if done < n and batched else []), ran, split

def _grouped(ws:np.ndarray, bounds:np.ndarray, calls:np.ndarray, together:np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
  """The waves ws grouped by the calls they made, `together` (those every wave made) then each one's own (wave i's:
  calls[bounds[i]:bounds[i + 1]]), in the order of each group's first wave: [(waves, calls)]; waves that made none are left out.
  Waves in lockstep made the same calls: compared as rows at once."""
  def made(own:np.ndarray) -> np.ndarray: return np.concatenate([together, own]) if len(together) else own
  sizes = np.diff(bounds)
  if not len(ws): return []
  if (sizes == sizes[0]).all():
    if not sizes[0]: return [(ws, together)] if len(together) else []
    rows = calls[bounds[0]:bounds[-1]].reshape(len(ws), -1)
    if (rows == rows[0]).all(): return [(ws, made(calls[bounds[0]:bounds[1]]))]
    _, first, inverse = np.unique(np.ascontiguousarray(rows).view(np.dtype((np.void, rows.shape[1] * 4))).reshape(-1),
                                  return_index=True, return_inverse=True)
    return [(ws[inverse == j], made(rows[first[j]].reshape(-1, 2))) for j in np.argsort(first).tolist()]
  groups: dict[bytes, tuple[list[int], np.ndarray]] = {}
  for i, (a, b) in enumerate(zip(bounds.tolist(), bounds[1:].tolist())): groups.setdefault(calls[a:b].tobytes(), ([], calls[a:b]))[0].append(i)
  return [(ws[idx], made(own)) for idx, own in groups.values() if len(own) or len(together)]

def enabled() -> bool:
  """Whether batches run on through native chains: not with EMU_CHAINS=0, nor under EMU_REGIONS=check (which compares each region
  run with the numpy path's)."""
  return not regions.CHECK and os.environ.get("EMU_CHAINS", "1") != "0"
