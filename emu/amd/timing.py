"""A deterministic cycle model of RDNA3/RDNA4/CDNA compute, calibrated against real gfx1100/gfx1200/gfx950 thread traces (docs/timing.md).

It only observes: the dispatcher reports every executed instruction batch (`issue`), the model records each wave's
instruction stream, and `finish` replays the streams on a model of the machine (per ISA family: `PARAMS`). Workgroups go
round-robin to CUs (RDNA two SIMDs each, CDNA four; waves of a workgroup alternating between them), limited by occupancy
(waves per SIMD from VGPR use, LDS per CU). Inside a CU an event loop issues, each cycle and per SIMD port (VALU,
transcendental, WMMA matrix unit, SALU, SMEM, VMEM, LDS), the ready instruction of the oldest wave. Readiness follows the
instruction cache, the wave's own order (one instruction per cycle), `s_delay_alu` dependencies, VGPR results needed by
memory instructions, wait counters (VMEM/LDS in order), barriers, `s_nop` / `s_sleep` and the store drain before a wave
ends. Results are cached per identical CU workload, so uniform kernels simulate one CU per distinct load. Costs and
latencies cite their trace evidence in docs/timing.md.
"""
from __future__ import annotations
import heapq, math
from dataclasses import dataclass
from typing import NamedTuple
import numpy as np
from emu.amd.arch import ArchSpec
from emu.amd.mnemonic import Mnemonic, parse
from emu.amd.observe import DispatchObserver, Launch
from emu.amd.semantics import get_op
from emu.amd.step import Step


@dataclass(frozen=True)
class Params:
  """Machine shape and calibrated costs (cycles) of one ISA family; each value cites its trace evidence in docs/timing.md."""
  simds_per_cu: int         # SIMDs a CU deals its waves over
  max_waves_per_simd: int   # wave slots per SIMD
  vgpr_file: int            # wave32 VGPRs a SIMD holds (occupancy: wave64 registers count twice)
  launch: int               # wave start -> first issue; also an instruction-cache line miss (both a cold fetch), code mapped by
                            # tinygrad's AM driver (its own GPU page tables)
  launch_kfd: int           # the same under the amdgpu kernel driver (KFD), whose mappings make a cold fetch slower
  valu_dep: int             # s_delay_alu VALU_DEP_n: producer issue -> dependent issue (wave32 pass)
  trans_dep: int            # s_delay_alu TRANS32_DEP_n: transcendental issue -> dependent issue
  vgpr_to_mem: int          # VALU issue -> a VMEM/LDS instruction of the same wave may issue (reads VGPRs)
  smem_lat: int             # scalar load (kernel arguments, cold) -> its counter released
  vmem_load_lat: int        # global load -> load counter released
  vmem_store_lat: int       # global store -> store counter released (a wave ends only after its stores drain)
  store_port: tuple[int, int]   # a SIMD's VMEM port is busy a + b * data dwords cycles per store (loads: 1 cycle)
  store_next: int           # store issue -> the same wave's next instruction (store data read out of the VGPRs)
  lds_lat: int              # DS instruction issue -> LDS counter released
  barrier_release: int      # last arrival at the barrier -> the waves' next instruction
  matrix_macs: tuple[int, int, int]  # WMMA: multiply-accumulates per cycle of a SIMD's matrix unit for 16-, 8- and 4-bit inputs
  matrix_start: int         # WMMA issue -> the matrix unit starts it (when idle)
  matrix_queue: int         # WMMAs a SIMD holds (queued or executing); with that many in flight the issuing wave stalls
  matrix_drain: int         # the wave's last WMMA completes -> its s_endpgm
  matrix_buffer: int        # VALU passes the wave owning every WMMA in flight may issue ahead of the next completion (drains 1/cycle)
  wide_via_trans: bool      # 64-bit integer VALU ops (shifts, multiply-adds) also issue through the transcendental port
  branch_dep: int           # SALU issue -> a conditional branch of the same wave (SCC/VCC/EXEC reach the branch unit)
  branch_taken: int         # taken branch issue -> the target instruction
  split_counters: bool      # RDNA4: separate DS (dscnt) and scalar-memory (kmcnt) counters instead of one lgkmcnt

PARAMS = {
  "rdna3": Params(simds_per_cu=2, max_waves_per_simd=16, vgpr_file=1536, launch=585, launch_kfd=585, valu_dep=5, trans_dep=9, vgpr_to_mem=18,
                  smem_lat=1205, vmem_load_lat=750, vmem_store_lat=326, store_port=(3, 4), store_next=1, lds_lat=32, barrier_release=14,
                  matrix_macs=(128, 128, 256), matrix_start=15, matrix_queue=8, matrix_drain=14, matrix_buffer=4,
                  wide_via_trans=False, branch_dep=10, branch_taken=9, split_counters=False),
  "rdna4": Params(simds_per_cu=2, max_waves_per_simd=16, vgpr_file=1536, launch=940, launch_kfd=1550, valu_dep=5, trans_dep=9, vgpr_to_mem=18,
                  smem_lat=1705, vmem_load_lat=1083, vmem_store_lat=360, store_port=(3, 4), store_next=8, lds_lat=32, barrier_release=14,
                  matrix_macs=(256, 512, 1024), matrix_start=15, matrix_queue=8, matrix_drain=14, matrix_buffer=4,
                  wide_via_trans=True, branch_dep=10, branch_taken=9, split_counters=True),
  # CDNA: only the empty kernel's launch is measured (gfx950); the rest is RDNA3's, uncalibrated (docs/timing.md)
  "cdna": Params(simds_per_cu=4, max_waves_per_simd=8, vgpr_file=1024, launch=1110, launch_kfd=1110, valu_dep=5, trans_dep=9, vgpr_to_mem=18,
                 smem_lat=1205, vmem_load_lat=750, vmem_store_lat=326, store_port=(3, 4), store_next=1, lds_lat=32, barrier_release=14,
                 matrix_macs=(128, 128, 256), matrix_start=15, matrix_queue=8, matrix_drain=14, matrix_buffer=4,
                 wide_via_trans=False, branch_dep=10, branch_taken=9, split_counters=False),
}

LAUNCH_GAP = 1            # consecutive wave starts of a dispatch
ISSUE = 1                 # a wave issues at most one instruction per cycle
LDS_BYTES_PER_CYCLE = 128 # LDS pipe throughput per CU (address + data bytes of a wave)
SLEEP_UNIT = 64           # s_sleep n: n * 64 cycles (ISA)
ISSUE_COST = {"trans": 4, "trans_scalar": 1, "valu_b64": 2, "valu_mad64": 4, "valu_f64": 16}   # port cycles per wave32 pass
ILINE = 64                # instruction cache line bytes; a fetch brings the 128-byte pair of lines (lines counted from the entry)
ILAUNCH_LINES = 4         # lines the launch fetch brings from the entry line on; entering line L requests line L + 1

# timing classes by mnemonic (emu.amd.mnemonic): SOPP instructions by name, VALU ops by operation word and data types
TRANSCENDENTAL = {"EXP", "LOG", "RCP", "RSQ", "SQRT", "SIN", "COS"}   # first operation word (V_EXP_LEGACY_F32, V_RCP_IFLAG_F32 too)
MATRIX_OPS = {"WMMA": 1, "SWMMAC": 2}     # RDNA matrix ops -> K divisor (SWMMAC is 2:4 sparse: half the multiply-accumulates)
BARRIERS = {"S_BARRIER", "S_BARRIER_SIGNAL"}   # RDNA4's arrive is s_barrier_signal (its s_barrier_wait is SKIPPED)
SKIPPED = {"S_DELAY_ALU", "S_WAIT_ALU", "S_BARRIER_WAIT"}   # consumed by the instruction buffer, never issued
# single-counter waits (SOPP on RDNA4, SOPK on RDNA3; simm16[5:0] = the count) -> the model's counters (loads, stores, LDS+scalar
# memory, RDNA4's separate DS and scalar-memory counters; None: a counter the model does not keep, the export counter and the
# dependency counters). s_waitcnt itself packs several counters (ArchSpec.waitcnt).
COUNTER_WAITS = {"S_WAITCNT_VSCNT": "vs", "S_WAITCNT_VMCNT": "vm", "S_WAITCNT_LGKMCNT": "lgkm", "S_WAIT_LOADCNT": "vm",
                 "S_WAIT_SAMPLECNT": "vm", "S_WAIT_BVHCNT": "vm", "S_WAIT_STORECNT": "vs", "S_WAIT_DSCNT": "ds", "S_WAIT_KMCNT": "km",
                 "S_WAITCNT_EXPCNT": None, "S_WAIT_EXPCNT": None, "S_WAITCNT_DEPCTR": None}
PAUSES = {"S_NOP": lambda simm: (simm & 0xf) + 1, "S_SLEEP": lambda simm: (simm & 0x7f) * SLEEP_UNIT}   # stall cycles
VMEM_FORMATS = ("GLOBAL", "FLAT", "SCRATCH", "MUBUF")
DATA_OPERANDS = ("DATA", "DATA2", "VDATA")   # the pcode's names of the data a memory op sends

@dataclass(frozen=True)
class OpInfo:
  """What the model needs of one instruction: comparison class, SIMD port and port cycles, counter it bumps, extras."""
  cls: str                  # salu valu trans smem vmem_load vmem_store lds branch waitcnt barrier delay nop other end
  port: str | None          # 'valu' 'trans' 'matrix' 'salu' 'smem' 'vmem' 'lds' or None (no port)
  cost: int = 1
  lds_cycles: int = 0
  waits: tuple[tuple[str, int], ...] = ()  # s_waitcnt: (counter, max outstanding)
  delay: int = 0            # s_delay_alu raw simm16, s_nop/s_sleep stall cycles
  counter: str = ""         # LDS / SMEM: the wait counter it bumps ('lgkm', or RDNA4's 'ds' / 'km')
  size: int = 4
  cond: bool = False        # a conditional branch (waits for the SALU result it tests)
  via_trans: bool = False   # a VALU op that also needs the transcendental port for its issue (Params.wide_via_trans)
  width: str = ""           # VALU data width class (`valu_width`): '', 'f64', 'b64', 'mad64'
  dwords: int = 0           # memory ops: dwords of data per lane it sends to memory (stores, atomics)

def valu_width(m:Mnemonic) -> str:
  """A VALU op's data-width class: 'f64' (double precision), 'mad64' (64-bit integer multiply-add), 'b64' (other 64-bit integer
  ops: shifts, adds, moves, compares) or '' (32 bits or less)."""
  if "F64" in m.types: return "f64"
  if not {"B64", "U64", "I64"} & set(m.types): return ""
  return "mad64" if m.words[:1] == ("MAD",) else "b64"

def data_bytes(op) -> int:
  """Bytes per lane a memory op's pcode sends to memory (its data operands; 0 for loads)."""
  return sum(op.widths.get(k, 0) for k in DATA_OPERANDS if k in op.reads) // 8 if "w" in op.mem else 0

def matrix_cycles(m:Mnemonic, p:Params) -> int:
  """Matrix-unit cycles of one wave32 WMMA/SWMMAC: its multiply-accumulates (M*N*K, less for the sparse SWMMAC) over the unit's
  rate for its input width (the type after the shape: V_WMMA_F32_16X16X16_F16 -> 16)."""
  if m.shape is None: raise ValueError(f"no matrix shape in {m.name}")
  macs = m.shape[0] * m.shape[1] * m.shape[2] // MATRIX_OPS[m.words[0]]
  return max(1, macs // p.matrix_macs[{16: 0, 8: 1, 4: 2}[m.type_bits()[1]]])

def classify(step:Step) -> OpInfo:
  """The timing view of a decoded instruction (mirrors the issue classes of tinygrad's SQTT decoder), from its format, its
  mnemonic's grammar and its compiled semantics."""
  instr, spec = step.instr, step.spec
  fmt, size, p, m = instr.fmt, instr.size, PARAMS[spec.family], parse(instr.op.name)
  if fmt in VMEM_FORMATS or fmt == "DS":
    op = get_op(spec.name, instr.op, raw=instr.raw)
    data = data_bytes(op)
    if fmt == "DS":
      return OpInfo("lds", "lds", lds_cycles=max(1, math.ceil(32 * (4 + data) / LDS_BYTES_PER_CYCLE)), counter="ds" if p.split_counters else "lgkm",
                    size=size, dwords=math.ceil(data / 4))
    # a store, or an atomic whose pre-op value is not returned, counts on the store counter (ISA: "vscnt: stores and atomics without return")
    store = "w" in op.mem and not (op.mem_rmw and step.returns)
    dwords = max(1, data // 4)
    return OpInfo("vmem_store" if store else "vmem_load", "vmem", p.store_port[0] + p.store_port[1] * dwords if store else 1, size=size,
                  dwords=dwords if data else 0)
  if fmt == "SMEM": return OpInfo("smem", "smem", counter="km" if p.split_counters else "lgkm", size=size)
  name = m.name
  if name in BARRIERS: return OpInfo("barrier", None, size=size)
  if fmt in ("SOPP", "SOPK") and (name == "S_WAITCNT" or name in COUNTER_WAITS):
    simm = instr.inst.simm16
    if name == "S_WAITCNT": waits = tuple((k, n) for k, n in spec.waitcnt_counts(simm).items() if k != "exp")
    else: waits = ((COUNTER_WAITS[name], simm & 0x3f),) if COUNTER_WAITS[name] else ()
    return OpInfo("waitcnt", None, waits=waits, size=size)
  if fmt == "SOPP":
    simm = instr.inst.simm16
    if name == "S_ENDPGM": return OpInfo("end", None, size=size)
    if name in SKIPPED: return OpInfo("delay", None, delay=simm, size=size)
    if name in PAUSES: return OpInfo("nop", None, delay=PAUSES[name](simm), size=size)
    if m.words[0] in ("BRANCH", "CBRANCH"): return OpInfo("branch", "salu", size=size, cond=m.words[0] == "CBRANCH")
    return OpInfo("other", None, size=size)
  if fmt.startswith("SOP"): return OpInfo("salu", "salu", size=size)
  if m.words[:1] and m.words[0] in MATRIX_OPS: return OpInfo("valu", "matrix", matrix_cycles(m, p), size=size)
  width = valu_width(m)
  if m.words[:1] and m.words[0] in TRANSCENDENTAL and width != "f64":
    return OpInfo("trans", "trans", ISSUE_COST["trans_scalar" if m.prefix == "V_S" else "trans"], size=size)
  if width == "f64": return OpInfo("valu", "valu", ISSUE_COST["valu_f64"], size=size, width=width)
  if width: return OpInfo("valu", "valu", ISSUE_COST[f"valu_{width}"], size=size, via_trans=p.wide_via_trans, width=width)
  return OpInfo("valu", "valu", size=size)

# replay codes: instruction classes and SIMD ports as small ints (the port order matters: VMEM and LDS last, ports that read VGPRs)
C_VALU, C_TRANS, C_SALU, C_BRANCH, C_SMEM, C_VMEM_LOAD, C_VMEM_STORE, C_LDS, C_DELAY, C_NOP, C_WAITCNT, C_BARRIER, C_END, C_OTHER = range(14)
CLS_CODE = {c: n for n, c in enumerate(("valu", "trans", "salu", "branch", "smem", "vmem_load", "vmem_store", "lds", "delay", "nop", "waitcnt",
                                        "barrier", "end", "other"))}
PORTS = ("valu", "trans", "matrix", "salu", "smem", "vmem", "lds")
P_VALU, P_TRANS, P_MATRIX, P_SALU, P_SMEM, P_VMEM, P_LDS = range(len(PORTS))
COUNTERS = ("vm", "vs", "lgkm", "ds", "km")
VM, VS = COUNTERS.index("vm"), COUNTERS.index("vs")

class _Op(NamedTuple):
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

def _op(info:OpInfo) -> _Op:
  port = PORTS.index(info.port) if info.port is not None else -1
  return _Op(CLS_CODE[info.cls], port, port in (P_SMEM, P_LDS), port in (P_VALU, P_TRANS, P_MATRIX), info.cost, info.lds_cycles,
             tuple((COUNTERS.index(k), n) for k, n in info.waits), info.delay, COUNTERS.index(info.counter) if info.counter else -1, info.size,
             info.cls, info.cond, info.via_trans)

def _lines(ops:list[_Op], pcs:list[int]) -> list[tuple[int, int, bool]]:
  """Per instruction of a stream: first and last instruction cache line (from the entry), whether it enters its first line."""
  offs = [pc - pcs[0] for pc in pcs]
  return [(off // ILINE, (off + op.size - 1) // ILINE, off % ILINE < op.size or k == 0) for k, (op, off) in enumerate(zip(ops, offs))]

class _Wave:
  """Replay state of one wave."""
  __slots__ = ("ops", "pcs", "lines", "i", "ready", "simd", "wg", "valu", "trans", "salu", "last_valu", "pending", "delay", "start", "times",
               "dram", "next_dram", "parked", "mx_end")
  def __init__(self, stream, start:int, simd:int, wg:int, launch:int):
    self.ops, self.pcs, self.lines = stream
    self.i, self.ready, self.simd, self.wg = 0, start + launch, simd, wg
    self.valu: list[int] = []; self.trans: list[int] = []; self.salu = -10**9; self.last_valu = -10**9
    self.pending: list[list[tuple[int, bool]]] = [[] for _ in COUNTERS]
    self.delay: list[tuple[int, int]] = []   # (instructions to skip, delay id) from s_delay_alu
    self.start, self.times, self.dram, self.next_dram, self.parked, self.mx_end = start, [], [], True, 0, -10**9

def _dep_ready(w:_Wave, dep:int, p:Params) -> int:
  if 1 <= dep <= 4: return w.valu[-dep] + p.valu_dep if len(w.valu) >= dep else 0
  if 5 <= dep <= 7: return w.trans[-(dep - 4)] + p.trans_dep if len(w.trans) >= dep - 4 else 0
  if 9 <= dep <= 11: return w.salu + dep - 8 + 1
  return 0

def _fetch(iline:dict[int, int], line:int, done:int) -> int:
  """Request an instruction cache line: it and the other line of its 128-byte pair arrive at cycle `done` (unless present)."""
  for ln in (line, line ^ 1): iline.setdefault(ln, done)
  return iline[line]

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

def simulate_cu(streams:list[tuple[list[_Op], list[int], list[tuple[int, int, bool]]]], wg_of:list[int], passes:int, wg_slots:int, p:Params,
                fetch:int):
  """Replay the waves of one CU with the costs `p` and the cold instruction-fetch latency `fetch` (launch and cache-line misses).
  streams[i]: (ops, pcs, lines) of the CU's i-th wave; wg_of[i]: its local workgroup.

  Returns per wave (start, end, issue times, dram flags)."""
  n_wg = max(wg_of) + 1 if wg_of else 0
  waves: list[_Wave | None] = [None] * len(streams)
  wg_waves: list[list[int]] = [[] for _ in range(n_wg)]   # one pass: linear in the CU's waves
  for i, g in enumerate(wg_of): wg_waves[g].append(i)
  n_simd = p.simds_per_cu
  port_free = [0] * ((n_simd + 1) * len(PORTS))   # per SIMD, then the CU's shared ports: cycle the port is free
  shared_base = n_simd * len(PORTS)
  lds_done, heap, launched, clock_launch = 0, [], 0, 0
  arrived: dict[int, list[int]] = {}
  iline: dict[int, int] = {}   # instruction cache: line (from the kernel entry) -> cycle its fetch completes
  lat, vgpr_to_mem, pass_issue = fetch, p.vgpr_to_mem, ISSUE * passes
  mx = any(op.port == P_MATRIX for st in streams for op in st[0])
  units = [_Matrix() for _ in range(n_simd)] if mx else []
  smem_lat, load_lat, store_lat, store_next, lds_lat = p.smem_lat, p.vmem_load_lat, p.vmem_store_lat, p.store_next, p.lds_lat
  matrix_start, matrix_queue, matrix_buffer = p.matrix_start, p.matrix_queue, p.matrix_buffer
  heappush, heappop, heappushpop = heapq.heappush, heapq.heappop, heapq.heappushpop
  def launch(wg:int, at:int):
    nonlocal clock_launch
    t = max(at, clock_launch)
    for k, i in enumerate(wg_waves[wg]):
      waves[i] = _Wave(streams[i], t + k * LAUNCH_GAP, k % n_simd, wg, lat)   # heap ties: lower index = older
      for line in range(ILAUNCH_LINES): iline.setdefault(line, waves[i].ready)
      heappush(heap, (waves[i].ready, i, False))
    clock_launch = t + len(wg_waves[wg]) * LAUNCH_GAP
  while launched < min(n_wg, max(1, wg_slots)): launch(launched, 0); launched += 1
  remaining = [len(g) for g in wg_waves]
  def release_barrier(wg:int, last:int):
    for j in arrived.pop(wg, []): heappush(heap, (max(last + p.barrier_release, waves[j].parked), j, False))
  # heap items: (cycle, wave, whether only its port is left to check); a wave is in the heap at most once, so ties never reach the flag
  item = heappop(heap) if heap else None
  while item is not None:
    ready, i, port_wait = item
    w = waves[i]
    wi, ops = w.i, w.ops
    cls, port, shared, vec, cost, lds_cycles, _, delay, counter, size, _, _, via_trans = ops[wi]
    if not port_wait:   # (a wave back from a busy port has fetched its instruction already: cache lines are never refilled)
      first, last, enter = w.lines[wi]
      if first == last:
        if (fetched := iline.get(first)) is None: fetched = _fetch(iline, first, ready + lat)
      else: fetched = max(iline.get(ln) or _fetch(iline, ln, ready + lat) for ln in range(first, last + 1))
      if fetched > ready:   # instruction cache miss: memory-bound like the launch
        w.next_dram = True; item = heappushpop(heap, (fetched, i, False)); continue
      if enter and first + 1 not in iline: _fetch(iline, first + 1, ready + lat)   # entering a line prefetches the next
    if port >= 0:
      simd_base = w.simd * len(PORTS)
      take = None
      if mx and vec:
        unit = units[w.simd]
        ends = unit.ends
        if ends: unit.advance(ready)
        if port == P_MATRIX:   # another wave's WMMAs in flight, or pending passes: wait for a completion
          if ends and (unit.others_in_flight(i, ready) or unit.held(i)) and (slot := unit.next_slot()) > ready:
            item = heappushpop(heap, (slot, i, True)); continue
        elif not ends or ends[-1] <= ready:   # idle unit: buffered work drains before more VALU work issues
          if unit.drain_end - 1 > ready: item = heappushpop(heap, (unit.drain_end - 1, i, True)); continue
        else:
          # while the matrix unit works, the wave owning all of its WMMAs issues VALU work into a small buffer; other VALU work
          # issues only as one of the WMMAs completes
          need = cost * passes   # passes: VALU port cycles (64-bit shift 2, mad 4), transcendental port cycles (4, scalar 1)
          room = unit.buffer_room(i, ready, need, matrix_buffer)
          at_slot = room is None or room > ready
          if at_slot and unit.waiting(i):   # its previous work still waits for completions: look again after the next one
            item = heappushpop(heap, (next((e for e in ends if e >= ready), ready) + 1, i, True)); continue
          follow = at_slot and unit.free_at.get(i) == ready   # right after its previous work's last pass
          if at_slot and not follow and (slot := unit.next_slot() if room is None else min(room, unit.next_slot())) > ready:
            item = heappushpop(heap, (slot, i, True)); continue
          take = (need, at_slot, follow and ready not in ends)   # (a completion it issues at counts as one)
      mult = passes if vec else 1
      if port == P_MATRIX:   # the issue takes one VALU pass; the op queues in order behind the SIMD's WMMAs in flight
        vk = simd_base + P_VALU
        if (busy := port_free[vk]) > ready: item = heappushpop(heap, (busy, i, True)); continue
        port_free[vk] = ready + mult
        ends.append(max(ready + matrix_start, ends[-1] if ends else 0) + cost * mult)
        unit.owners.append(i)
        w.mx_end = ends[-1]
        unit.used.add(ready)
      else:
        key = port + (shared_base if shared else simd_base)
        busy = port_free[key]
        if port == P_TRANS and port_free[simd_base + P_VALU] > busy: busy = port_free[simd_base + P_VALU]   # issued through the VALU
        if via_trans and port_free[simd_base + P_TRANS] > busy: busy = port_free[simd_base + P_TRANS]
        if busy > ready:
          item = heappushpop(heap, (busy, i, True)); continue
        port_free[key] = ready + cost * mult
        if port == P_TRANS: port_free[simd_base + P_VALU] = ready + mult
        elif via_trans: port_free[simd_base + P_TRANS] = ready + mult
        if take: unit.take(i, ready, *take)
    dram = False
    w.times.append(ready); w.dram.append(w.next_dram)
    nxt = ready + ISSUE
    if cls <= C_TRANS:   # C_VALU or C_TRANS
      w.valu.append(ready); w.last_valu = ready
      if cls == C_TRANS: w.trans.append(ready)
      nxt = ready + pass_issue
    elif cls == C_SALU or cls == C_BRANCH: w.salu = ready
    elif cls == C_SMEM: w.pending[counter].append((ready + smem_lat, True))
    elif cls == C_VMEM_LOAD: w.pending[VM].append((ready + load_lat, True))
    elif cls == C_VMEM_STORE:
      w.pending[VS].append((ready + store_lat, True))
      nxt = ready + store_next
    elif cls == C_LDS:
      lds_done = max(ready + lds_lat, lds_done + lds_cycles)
      w.pending[counter].append((lds_done, False))
    elif cls == C_DELAY:
      for skip, dep in ((0, delay & 0xf), ((delay >> 4) & 7, (delay >> 7) & 0xf)):
        if dep: w.delay.append((skip, dep))   # dependency id 0: none
      w.times[-1] = None; nxt = ready
    elif cls == C_NOP: nxt = ready + delay
    w.i = wi = wi + 1
    pcs = w.pcs
    if cls == C_BRANCH and wi < len(pcs) and pcs[wi] != pcs[wi - 1] + size: nxt = ready + p.branch_taken
    elif port == P_MATRIX and len(ends) >= matrix_queue:   # a full matrix queue holds the wave until its oldest WMMA completes
      if len(out := [e for e in ends if e > ready]) >= matrix_queue: nxt = max(nxt, out[len(out) - matrix_queue])
    if cls == C_END or wi >= len(ops):
      wg = w.wg
      remaining[wg] -= 1
      if wg in arrived and len(arrived[wg]) == remaining[wg]: release_barrier(wg, ready)
      if remaining[wg] == 0 and launched < n_wg:
        launch(launched, ready); launched += 1
      item = heappop(heap) if heap else None
      continue
    nop = ops[wi]
    ncls = nop.cls
    # readiness of the next instruction
    if ncls != C_DELAY and w.delay:
      keep = []
      for skip, dep in w.delay:
        if skip: keep.append((skip - 1, dep))
        elif (dep_t := _dep_ready(w, dep, p)) > nxt: nxt = dep_t
      w.delay = keep
    if nop.port >= P_VMEM: nxt = max(nxt, w.last_valu + vgpr_to_mem)
    elif nop.cond and w.salu + p.branch_dep > nxt: nxt = w.salu + p.branch_dep
    if ncls == C_WAITCNT:
      for q, limit in nop.waits:
        pend = w.pending[q]
        if len(pend) > limit:
          done, w.pending[q] = pend[:len(pend) - limit], pend[len(pend) - limit:]
          t_done = max(d for d, _ in done)
          if t_done > nxt: nxt, dram = t_done, dram or any(g for d, g in done if d == t_done)
    elif ncls == C_END:
      pend = w.pending[VS] + w.pending[VM]
      if pend and (t_done := max(d for d, _ in pend)) > nxt: nxt, dram = t_done, True
      if w.mx_end + p.matrix_drain > nxt: nxt = w.mx_end + p.matrix_drain
    w.next_dram = dram
    if cls == C_BARRIER:
      w.parked = nxt
      arrived.setdefault(w.wg, []).append(i)
      if len(arrived[w.wg]) == remaining[w.wg]: release_barrier(w.wg, ready)
      item = heappop(heap) if heap else None
      continue
    item = heappushpop(heap, (nxt, i, False))
  return [(w.start, w.times[-1] if w.times else w.start, w.times, w.dram) for w in waves]

DRIVERS = ("kfd", "am")   # the kernel driver that mapped the code: amdgpu's KFD (tinygrad's default AMD interface) or tinygrad's AM

class TimingModel(DispatchObserver):
  """Cycle counts for one dispatch; `timeline=True` also keeps per-wave (wave, pc, cycle, class, dram) issue records.

  pc -1 marks the wave's start; dram: the issue waited on a global-memory (VMEM/SMEM) completion or the launch. `driver` (DRIVERS)
  picks the cold instruction-fetch latency: `Params.launch_kfd` under KFD, `Params.launch` under AM."""
  def __init__(self, spec:ArchSpec, timeline:bool=False, driver:str="kfd"):
    if driver not in DRIVERS: raise ValueError(f"unknown driver {driver!r}: expected one of {DRIVERS}")
    self.spec, self.keep_timeline = spec, timeline
    self.clock_mhz, self.n_cus, self.params = spec.clock_mhz, spec.n_cus, PARAMS[spec.family]
    self.fetch = self.params.launch_kfd if driver == "kfd" else self.params.launch
    self.timeline: list[tuple[int, int, int, str, bool]] = []

  # ---- DispatchObserver ----
  def launch(self, launch:Launch): self.start(launch.waves, launch.lanes, launch.waves_per_wg, launch.vgprs, launch.lds_bytes)
  def before(self, st, ws:np.ndarray, step:Step, pc:int, first_wave:int): self.issue(step, ws + first_wave, pc)
  def done(self, stats): stats.cycles, stats.clock_mhz = self.finish()

  def start(self, n_waves:int, lanes:int, waves_per_wg:int=1, vgprs:int=0, lds_bytes:int=0):
    """Begin a dispatch of n_waves waves (workgroups of waves_per_wg), `vgprs` allocated per wave, `lds_bytes` per workgroup."""
    self.n_waves, self.passes, self.wpg = n_waves, lanes // self.spec.simd_lanes, waves_per_wg
    p = self.params
    per_simd = min(p.max_waves_per_simd, p.vgpr_file * 32 // (lanes * vgprs)) if vgprs else p.max_waves_per_simd
    by_waves = max(1, per_simd * p.simds_per_cu // waves_per_wg)
    self.wg_slots = min(by_waves, self.spec.lds_per_cu // lds_bytes) if lds_bytes else by_waves
    self.batches: list[tuple[int, int, np.ndarray]] = []
    self.steps: dict[int, _Op] = {}

  def issue(self, step:Step, ws:np.ndarray, pc:int=0):
    """Record that waves `ws` (dispatch-wide numbers) executed `step` at `pc`."""
    sid = id(step)
    if sid not in self.steps: self.steps[sid] = _op(classify(step))
    self.batches.append((sid, pc, np.asarray(ws)))

  def placement(self, wave:int) -> tuple[int, int]:
    """(CU, SIMD within the CU) the model runs a wave on."""
    return (wave // self.wpg) % self.n_cus, (wave % self.wpg) % self.params.simds_per_cu

  def _streams(self) -> list[tuple[list[_Op], list[int], list[tuple[int, int, bool]]]]:
    if not self.batches: return [([], [], []) for _ in range(self.n_waves)]
    waves = np.concatenate([b[2] for b in self.batches])
    counts = [len(b[2]) for b in self.batches]
    sids = np.repeat(np.array([b[0] for b in self.batches], dtype=np.int64), counts)
    pcs = np.repeat(np.array([b[1] for b in self.batches], dtype=np.int64), counts)
    order = np.argsort(waves, kind="stable")
    waves, sids, pcs = waves[order], sids[order], pcs[order]
    bounds = np.searchsorted(waves, np.arange(self.n_waves + 1))
    memo: dict[bytes, tuple[list[_Op], list[int], list[tuple[int, int, bool]]]] = {}
    out = []
    for w in range(self.n_waves):
      s, p = sids[bounds[w]:bounds[w + 1]], pcs[bounds[w]:bounds[w + 1]]
      key = s.tobytes() + p.tobytes()
      if key not in memo:
        ops, pcl = [self.steps[x] for x in s.tolist()], p.tolist()
        memo[key] = (ops, pcl, _lines(ops, pcl))
      out.append(memo[key])
    return out

  def finish(self) -> tuple[int, float]:
    """Replay the recorded streams; (cycles from the first wave start to the last wave's end, shader clock in MHz)."""
    streams = self._streams()
    n_wg = max(1, math.ceil(self.n_waves / self.wpg))
    cache: dict[tuple, list] = {}
    end = 0
    for cu in range(min(self.n_cus, n_wg)):
      wgs = list(range(cu, n_wg, self.n_cus))
      ids = [w for g in wgs for w in range(g * self.wpg, min((g + 1) * self.wpg, self.n_waves))]
      key = tuple(id(streams[w][0]) for w in ids)
      if key not in cache:
        cache[key] = simulate_cu([streams[w] for w in ids], [k // self.wpg for k in range(len(ids))], self.passes, self.wg_slots, self.params,
                                     self.fetch)
      res = cache[key]
      end = max([end] + [r[1] for r in res])
      if self.keep_timeline:
        for w, (start, _, times, dram) in zip(ids, res):
          self.timeline.append((w, -1, start, "start", False))
          ops, pcs, _ = streams[w]
          self.timeline.extend((w, pc, t, op.name, d) for op, pc, t, d in zip(ops, pcs, times, dram) if t is not None)
    return end, self.clock_mhz
