"""A deterministic cycle model of RDNA3/RDNA4/CDNA compute, calibrated against real gfx1100/gfx1200/gfx950 thread traces (docs/timing.md).

It only observes: the dispatcher reports every executed instruction batch (`issue`), the model records each wave's
instruction stream, and `finish` replays the streams on a model of the machine (per ISA family: `PARAMS`). Workgroups go
round-robin to CUs (RDNA two SIMDs each, CDNA four; waves of a workgroup alternating between them), limited by occupancy
(waves per SIMD from VGPR use, LDS per CU). Inside a CU an event loop issues, each cycle and per SIMD port (VALU,
transcendental, WMMA matrix unit, SALU, SMEM, VMEM, LDS), the ready instruction of the oldest wave. Readiness follows the
instruction cache, the wave's own order (one instruction per cycle), `s_delay_alu` dependencies, VGPR results needed by
memory instructions, wait counters (VMEM/LDS in order), barriers, `s_nop` / `s_sleep` and the store drain before a wave
ends. Results are cached per identical CU workload (across dispatches: `REPLAY_MEMO`), so uniform kernels simulate one CU per
distinct load and a repeated dispatch none. Costs and
latencies cite their trace evidence in docs/timing.md. This module holds the per-family costs, the classification of an
instruction (from its mnemonic's grammar and its compiled semantics) and the observer; emu/amd/cu_model.py is the replay (run
compiled by emu/amd/cu_native.py where a C compiler is at hand).
"""
from __future__ import annotations
import hashlib, math, threading
from collections import OrderedDict
from dataclasses import dataclass
import numpy as np
from emu import amd_ops
from emu.amd import cu_native
from emu.amd.api import GPUIllegalInstruction
from emu.amd.arch import ArchSpec
from emu.amd.cu_model import SGPR_BASE, ReplayOp, Stream, make_stream, replay_op, simulate_cu, simulate_end, stream_of_codes
from emu.amd.mnemonic import Mnemonic, parse
from emu.amd.observe import DispatchObserver, Launch
from emu.amd.regions import LazyStep
from emu.amd.replay_pool import POOL
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
  vgpr_to_mem: int          # VALU issue -> a VMEM instruction of the same wave may issue (reads VGPRs)
  vgpr_to_lds: int          # VALU issue -> a DS instruction of the same wave may issue (the LDS unit's own VGPR read)
  smem_lat: int             # scalar load (kernel arguments, cold) -> its counter released
  vmem_load_lat: int        # global load -> load counter released
  vmem_store_lat: int       # global store -> store counter released (a wave ends only after its stores drain)
  store_port: tuple[int, int]   # a SIMD's VMEM port is busy a + b * data dwords cycles per store (loads: 1 cycle)
  store_next: int           # store issue -> the same wave's next instruction if not VMEM (store data read out of the VGPRs; VMEM: +1)
  store_valu: int           # store issue -> the same wave's next instruction if it is a VALU/transcendental one
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
  valu_queue: int = 0       # VALU instructions a SIMD's in-order VALU pipe holds, from issue until pipe_hold cycles after their
                            # start (0: no pipe model, CDNA)
  valu_raw: int = 5         # the pipe's VALU result latency: producer start -> a dependent VALU instruction may start
  trans_raw: int = 9        # the same for a transcendental producer (the SIMD's transcendental pipe, in order like the VALU's)
  trans_result: int = 9     # transcendental start -> its result, which memory instructions and s_waitcnt_depctr wait to see
                            # written back (vgpr_to_mem - valu_raw later)
  salu_lat: int = 2         # SALU start -> its result (a dependent SALU instruction starts then)
  sgpr_to_mem: int = 5      # the wave's last SALU result -> a VMEM/DS instruction of the wave may issue
  trans_queue: int = 13     # transcendental instructions that pipe holds (as valu_queue)
  pipe_hold: int = 12       # an instruction's start -> it leaves its pipe (VALU and transcendental)

PARAMS = {
  "rdna3": Params(simds_per_cu=2, max_waves_per_simd=16, vgpr_file=1536, launch=585, launch_kfd=585, valu_dep=5, trans_dep=9, vgpr_to_mem=18,
                  vgpr_to_lds=17, smem_lat=1205, vmem_load_lat=750, vmem_store_lat=326, store_port=(1, 0), store_next=3, store_valu=8, lds_lat=32,
                  barrier_release=14,
                  matrix_macs=(128, 128, 256), matrix_start=15, matrix_queue=8, matrix_drain=14, matrix_buffer=4,
                  wide_via_trans=False, branch_dep=10, branch_taken=9, split_counters=False, valu_queue=13,
                  trans_raw=12),
  "rdna4": Params(simds_per_cu=2, max_waves_per_simd=16, vgpr_file=1536, launch=940, launch_kfd=1550, valu_dep=5, trans_dep=9, vgpr_to_mem=18,
                  vgpr_to_lds=18, smem_lat=1705, vmem_load_lat=1083, vmem_store_lat=360, store_port=(3, 4), store_next=8, store_valu=8, lds_lat=32,
                  barrier_release=14,
                  matrix_macs=(256, 512, 1024), matrix_start=15, matrix_queue=8, matrix_drain=14, matrix_buffer=4,
                  wide_via_trans=True, branch_dep=10, branch_taken=9, split_counters=True, valu_queue=13),
  # CDNA: only the empty kernel's launch is measured (gfx950); the rest is RDNA3's, uncalibrated (docs/timing.md)
  "cdna": Params(simds_per_cu=4, max_waves_per_simd=8, vgpr_file=1024, launch=1110, launch_kfd=1110, valu_dep=5, trans_dep=9, vgpr_to_mem=18,
                 vgpr_to_lds=18, smem_lat=1205, vmem_load_lat=750, vmem_store_lat=326, store_port=(3, 4), store_next=1, store_valu=1, lds_lat=32,
                 barrier_release=14,
                 matrix_macs=(128, 128, 256), matrix_start=15, matrix_queue=8, matrix_drain=14, matrix_buffer=4,
                 wide_via_trans=False, branch_dep=10, branch_taken=9, split_counters=False),
}

LDS_BYTES_PER_CYCLE = 128 # LDS pipe throughput per CU (address + data bytes of a wave)
ISSUE_COST = {"trans": 4, "trans_scalar": 1, "valu_b64": 2, "valu_mad64": 4, "valu_f64": 16, "valu_mul32": 4}   # port cycles per wave32 pass
# result latencies (producer start -> a dependent VALU instruction may start) of the VALU ops whose latency is not the family's
# valu_raw, by latency class (`latency_class`): LLVM's GFX11SpeedModel and GFX12SpeedModel (SISchedule.td: Write64Bit 6, WriteIntMul
# 8, WriteDouble 38; their Write32Bit 5 is valu_raw, WriteTrans32 10/9 trans_raw), the same on both
VALU_LATENCY = {"b64": 6, "mad64": 8, "mul32": 8, "f64": 38}
SALU_MUL_LATENCY = 3   # s_mul_i32 / s_mul_hi: a dependent chain of them completes 3 cycles per link (2187nick mb_g4_s_mul_i32_n4)

# timing classes by mnemonic (emu.amd.mnemonic): SOPP instructions by name, VALU ops by operation word and data types
TRANSCENDENTAL = {"EXP", "LOG", "RCP", "RSQ", "SQRT", "SIN", "COS"}   # first operation word (V_EXP_LEGACY_F32, V_RCP_IFLAG_F32 too)
MATRIX_OPS = {"WMMA": 1, "SWMMAC": 2}     # RDNA matrix ops -> K divisor (SWMMAC is 2:4 sparse: half the multiply-accumulates)
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
  width: str = ""           # ALU data width class (`width_class`): '', 'f64', 'b64', 'mad64'
  dwords: int = 0           # memory ops: dwords of data per lane it sends to memory (stores, atomics)
  writes: bool = False      # memory ops: it writes memory (stores, atomics)
  vreads: tuple[int, ...] = ()   # the registers it reads, and writes: a VALU/transcendental op's VGPRs (the pipes' interlock,
  vwrites: tuple[int, ...] = ()  # cu_model._ValuPipe), an SALU op's SGPRs as cu_model.SGPR_BASE + n (its result latency)
  drain: bool = False       # a wait for every VALU result of the wave to be written back (s_waitcnt_depctr va_vdst=0)
  lat: int = 0              # ALU ops: result latency when not the family's valu_raw (VALU_LATENCY) / salu_lat (SALU_MUL_LATENCY)

ACCUMULATES = ("FMAC", "MAC", "DOT2ACC", "FMAMK", "FMAAK")   # VOPD lane ops that read their destination (VOPD has no pcode here)

def vgpr_use(instr, reads_dst:bool) -> tuple[tuple[int, ...], tuple[int, ...]]:
  """The VGPRs a VALU instruction reads and writes, from its encoding's register fields: destinations are the `vdst*` fields
  (also read when `reads_dst`: the op accumulates into D0; a VOPD lane when its op is an accumulating one), the rest are read."""
  reads, writes = [], []
  inst = instr.inst
  acc = {f"vdst{lane}" for lane in "xy" if any(a in getattr(inst, f"op{lane}").name for a in ACCUMULATES)} if instr.fmt == "VOPD" else set()
  for name, _ in inst._fields:
    if not hasattr(reg := getattr(inst, name), "offset") or not 256 <= reg.offset < 512: continue
    regs = range(reg.offset - 256, reg.offset - 256 + reg.sz)
    if name.startswith("vdst"):
      writes += regs
      if reads_dst or name in acc: reads += regs
    else: reads += regs
  return tuple(sorted(set(reads))), tuple(sorted(set(writes)))

def sgpr_use(instr) -> tuple[tuple[int, ...], tuple[int, ...]]:
  """The SGPRs (s0-s105, VCC, ...: scalar operand numbers below 128) an SALU instruction reads and writes, from its encoding's
  register fields: `sdst` is written, the rest are read. SCC, literals and inline constants are not registers here."""
  reads, writes = [], []
  for name, _ in instr.inst._fields:
    if not hasattr(reg := getattr(instr.inst, name), "offset") or not 0 <= reg.offset < 128: continue
    (writes if name == "sdst" else reads).extend(range(reg.offset, min(128, reg.offset + reg.sz)))
  return tuple(sorted(set(reads))), tuple(sorted(set(writes)))

def _reads_dst(spec:ArchSpec, instr) -> bool:
  """Whether the op's pcode reads its destination (an accumulating op); False for an op without pcode (it never runs)."""
  try: return "D0" in get_op(spec.name, instr.op, raw=instr.raw).reads
  except GPUIllegalInstruction: return False

def latency_class(m:Mnemonic, width:str) -> str:
  """A VALU op's latency class: its width class, or 'mul32' for a 32-bit integer multiply (V_MUL_LO/HI_U32/I32: LLVM WriteIntMul,
  quarter rate), '' for the rest (valu_raw)."""
  if not width and m.words[:2] in (("MUL", "LO"), ("MUL", "HI")) and {"U32", "I32"} & set(m.types): return "mul32"
  return width

def width_class(m:Mnemonic) -> str:
  """An ALU op's data-width class: 'f64' (double precision), 'mad64' (64-bit integer multiply-add), 'b64' (other 64-bit integer
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
  if fmt in VMEM_FORMATS or fmt in ("DS", "SMEM"):
    op = get_op(spec.name, instr.op, raw=instr.raw)
    data, writes = data_bytes(op), "w" in op.mem
    if fmt == "SMEM": return OpInfo("smem", "smem", counter="km" if p.split_counters else "lgkm", size=size, writes=writes)
    if fmt == "DS":
      return OpInfo("lds", "lds", lds_cycles=max(1, math.ceil(32 * (4 + data) / LDS_BYTES_PER_CYCLE)), counter="ds" if p.split_counters else "lgkm",
                    size=size, dwords=math.ceil(data / 4), writes=writes)
    # a store, or an atomic whose pre-op value is not returned, counts on the store counter (ISA: "vscnt: stores and atomics without return")
    store = writes and not (op.mem_rmw and step.returns)
    dwords = max(1, data // 4)
    return OpInfo("vmem_store" if store else "vmem_load", "vmem", p.store_port[0] + p.store_port[1] * dwords if store else 1, size=size,
                  dwords=dwords if data else 0, writes=writes)
  name, owned = m.name, amd_ops.effect(m.name)
  if owned == "barrier": return OpInfo("barrier", None, size=size)
  if owned == "end": return OpInfo("end", None, size=size)
  if fmt in ("SOPP", "SOPK") and (name == amd_ops.PACKED_WAIT or name in amd_ops.COUNTER_WAITS):
    simm = instr.inst.simm16
    if name == amd_ops.PACKED_WAIT: limits = tuple((k, n) for k, n in spec.waitcnt_counts(simm).items() if k != "exp")
    else: limits = amd_ops.counts(name, simm)
    # va: the model counts no VALU results in flight, only when the last is written back: it waits when none may be outstanding
    return OpInfo("waitcnt", None, waits=tuple(w for w in limits if w[0] != "va"), size=size, drain=("va", 0) in limits)
  if fmt == "SOPP":
    simm = instr.inst.simm16
    if name in amd_ops.UNISSUED: return OpInfo("delay", None, delay=simm, size=size)
    if name in amd_ops.PAUSES: return OpInfo("nop", None, delay=amd_ops.PAUSES[name](simm), size=size)
    if m.words[0] in ("BRANCH", "CBRANCH"): return OpInfo("branch", "salu", size=size, cond=m.words[0] == "CBRANCH")
    return OpInfo("other", None, size=size)
  width = width_class(m)
  if fmt.startswith("SOP"):
    sreads, swrites = sgpr_use(instr)
    return OpInfo("salu", "salu", size=size, width=width, vreads=tuple(SGPR_BASE + r for r in sreads),
                  vwrites=tuple(SGPR_BASE + r for r in swrites), lat=SALU_MUL_LATENCY if m.words[:1] == ("MUL",) else 0)
  if m.words[:1] and m.words[0] in MATRIX_OPS: return OpInfo("valu", "matrix", matrix_cycles(m, p), size=size)
  regs = dict(zip(("vreads", "vwrites"), vgpr_use(instr, fmt != "VOPD" and _reads_dst(spec, instr))))
  if m.words[:1] and m.words[0] in TRANSCENDENTAL and width != "f64":
    return OpInfo("trans", "trans", ISSUE_COST["trans_scalar" if m.prefix == "V_S" else "trans"], size=size, **regs)
  lat = VALU_LATENCY.get(kind := latency_class(m, width), 0)
  if width == "f64": return OpInfo("valu", "valu", ISSUE_COST["valu_f64"], size=size, width=width, lat=lat, **regs)
  if width: return OpInfo("valu", "valu", ISSUE_COST[f"valu_{width}"], size=size, via_trans=p.wide_via_trans, width=width, lat=lat, **regs)
  if kind == "mul32": return OpInfo("valu", "valu", ISSUE_COST["valu_mul32"], size=size, lat=lat, **regs)
  return OpInfo("valu", "valu", size=size, **regs)

class ReplayMemo:
  """What the timing model keeps across dispatches (process-wide): each step's replay form (made when a replay first needs it;
  the step is held, so its id is never reused), one number per (step, pc) so a wave's instruction stream is the same byte string
  in every dispatch, and the end cycle of every CU workload replayed so far, keyed by a 128-bit digest of everything the replay
  reads (the parameters, the waves' streams and workgroups); beyond `limit` workloads the least recently used is dropped. A
  dispatch whose CUs run what an earlier one ran (a training loop, a benchmark's repeats, a test calling a kernel again) replays
  nothing. A native region's step ids and pcs are listed once per (region, pc) (`run_keys`), and recent waves' streams are kept
  by their codes (`stream`).

  The numbering grows with every (step, pc) a process runs (a test suite loads thousands of programs at fresh addresses):
  beyond `max_codes` it starts over as a new generation, dropping the end cycles too, since their digests are of the old numbers;
  a dispatch numbered in the old generation keeps its own table and puts the generation into its digests."""
  def __init__(self, limit:int=65536, max_codes:int=1 << 20):
    self.ops: dict[int, list] = {}   # step id -> [the step, its ReplayOp once classified]
    self.classified: dict[tuple[str, bytes], ReplayOp] = {}   # (arch, instruction bytes) -> its ReplayOp
    self.interned: dict[ReplayOp, ReplayOp] = {}   # one object per distinct ReplayOp: a stream's few classes are its few distinct ops
    self.runs: dict[tuple[int, int], tuple[list, list[int], list[int]]] = {}   # run_keys
    self.streams: OrderedDict[tuple[int, bytes], Stream] = OrderedDict()   # stream(): by (generation, digest of the codes)
    self.stream_budget, self.stream_size = 400_000, 0   # instructions the kept streams may hold (a matmul's: ~60k, ~8 MB)
    self.limit, self.max_codes, self._lock = limit, max_codes, threading.Lock()
    self.generation = -1
    self._new_generation()

  def _new_generation(self):
    # fresh objects rather than clearing in place: a dispatch still reading the old table keeps a consistent one
    self.codes: dict[tuple[int, int], int] = {}
    self.pairs: list[tuple[int, int]] = []
    self.run_codes: dict[tuple[int, int], np.ndarray] = {}   # a region run's codes (number_parts), by its run_keys key
    self.ends: OrderedDict[bytes, int] = OrderedDict()
    self.generation += 1

  def hold(self, step:Step):
    """Keep `step` for the replays that will need its replay form (`op`): it is classified only when one does, and its id is not
    reused meanwhile. (A native region's steps may not be loaded yet, emu.amd.regions.LazyStep: a replay that never runs loads none.)"""
    if id(step) not in self.ops: self.ops[id(step)] = [step, None]

  def op(self, sid:int) -> ReplayOp:
    """The replay form of the held step of id `sid`: classified once per process and instruction (its bytes decide it: the
    same instruction in another region or program, as every candidate kernel of a BEAM search repeats most of them, is not
    classified again, nor a native region's step loaded for it)."""
    if (hit := self.ops[sid])[1] is None:
      step = hit[0]
      key = (step.spec.name, step.window[:step.size] if isinstance(step, LazyStep) else step.instr.raw)
      if (op := self.classified.get(key)) is None: op = self.classified[key] = self.interned.setdefault(new := replay_op(classify(step)), new)
      hit[1] = op
    return hit[1]

  def run_keys(self, steps:list[tuple[int, Step]], pc:int) -> tuple[tuple[int, int], tuple]:
    """(its key, (steps, step ids, pcs)) of a native region's `steps` ([(offset, Step)]) run at `pc`, each step held: made once
    per (steps object, pc), the steps object held so that its id is not reused while the key names it."""
    with self._lock: return self._run_key(steps, pc)

  def run_keys_all(self, runs:list[tuple]) -> list[tuple[tuple[int, int], tuple]]:
    """`run_keys` of each (steps, pc, ...) of `runs`, under one lock."""
    with self._lock: return [self._run_key(steps, pc) for steps, pc, _ in runs]

  def _run_key(self, steps:list[tuple[int, Step]], pc:int) -> tuple[tuple[int, int], tuple]:
    if (hit := self.runs.get(key := (id(steps), pc))) is None:
      for _, step in steps: self.hold(step)
      hit = self.runs[key] = (steps, [id(step) for _, step in steps], [pc + off for off, _ in steps])
      while len(self.runs) > self.limit:   # (its codes go with it: the key's steps id may be reused once the steps are freed)
        self.run_codes.pop(gone := next(iter(self.runs)), None)
        self.runs.pop(gone)
    return key, hit

  def number_parts(self, parts:list[tuple]) -> tuple[int, list[tuple[int, int]], np.ndarray, np.ndarray]:
    """Number each (step id, pc) of a dispatch's recorded `parts`, as TimingModel keeps them: (run key, run_keys's entry) of a
    native region run, whose codes are made once per generation, (None, (step id, pc)) of a single step, or (CHAIN, ([(run key,
    entry)] of the regions a wave ran, (region index, runs) per call)) of a chain's calls. (The generation, its code -> (step id,
    pc) table, the parts' codes one after another as int32, each part's number of codes.)"""
    def bound(key, entry) -> int:   # (at most this many new codes)
      return 1 if key is None else sum(len(e[1]) for _, e in entry[0]) if key is CHAIN else len(entry[1])
    with self._lock:
      if len(self.codes) + sum(bound(key, entry) for key, entry in parts) > self.max_codes: self._new_generation()
      codes, pairs, run_codes = self.codes, self.pairs, self.run_codes
      def code(key:tuple[int, int]) -> int:
        if (c := codes.get(key)) is None: c = codes[key] = len(pairs); pairs.append(key)
        return c
      def of_run(key:tuple[int, int], entry:tuple) -> np.ndarray:   # a region run's codes
        current = self.runs.get(key) is entry   # (the part holds its entry's steps: their id is this key's while it lives)
        if (c := run_codes.get(key) if current else None) is None:
          c = np.array([code(k) for k in zip(entry[1], entry[2])], dtype=np.int32)
          if current: run_codes[key] = c
        return c
      out, singles, sizes = [], [], np.ones(len(parts), dtype=np.int64)
      for i, (key, entry) in enumerate(parts):
        if key is None:
          singles.append(code(entry))
          continue
        if singles: out.append(np.array(singles, dtype=np.int32)); singles = []
        if key is CHAIN:   # each call's region codes, repeated its runs
          each = [of_run(k, e) for k, e in entry[0]]
          n = np.array([len(c) for c in each], dtype=np.int64)
          which, runs = entry[1][:, 0], entry[1][:, 1].astype(np.int64)
          c = _expand(np.concatenate(each), (np.cumsum(n) - n)[which], n[which], runs)
        else: c = of_run(key, entry)
        out.append(c)
        sizes[i] = len(c)
      if singles: out.append(np.array(singles, dtype=np.int32))
      return self.generation, pairs, np.concatenate(out) if out else np.zeros(0, dtype=np.int32), sizes

  def stream(self, generation:int, codes:np.ndarray, pairs:list[tuple[int, int]]) -> tuple[Stream, bytes]:
    """One wave's (ops, pcs, cache-line spans) from its issue codes (int32) numbered in `generation`, and the digest of the codes;
    the streams of recent dispatches are kept (a repeated dispatch builds none), least recently used dropped past the budget."""
    digest = hashlib.blake2b(codes.tobytes(), digest_size=16).digest()
    with self._lock:
      if (hit := self.streams.get(key := (generation, digest))) is not None:
        self.streams.move_to_end(key)
        return hit, digest
    stream = stream_of_codes(codes, lambda c: (self.op((p := pairs[c])[0]), p[1]))
    with self._lock:
      self.streams[key], self.stream_size = stream, self.stream_size + len(stream)
      while self.stream_size > self.stream_budget and len(self.streams) > 1:
        self.stream_size -= len(self.streams.popitem(last=False)[1])
    return stream, digest

  def forget_results(self):
    """Drop the kept streams and end cycles (the numbering stays): the next dispatch replays as a first one would."""
    with self._lock:
      self.ends.clear()
      self.streams.clear()
      self.stream_size = 0

  def end(self, key:bytes) -> int | None:
    with self._lock:
      if (e := self.ends.get(key)) is not None: self.ends.move_to_end(key)
      return e

  def store(self, key:bytes, end:int):
    with self._lock:
      self.ends[key] = end
      while len(self.ends) > self.limit: self.ends.popitem(last=False)

REPLAY_MEMO = ReplayMemo()
CHAIN = "chain"   # a record entry's key for a chain's calls (TimingModel.ran_chain)
CHAIN_CALLS = 16  # calls from which a chain's runs are recorded as one entry (fewer: an entry per region run, as `ran` makes)

class DeferredReplays:
  """Dispatches whose replay waits until someone reads their cycles (DispatchStats.replay): a test suite that never reads the GPU's
  clock never pays for it. What they recorded stays in memory meanwhile (TimingModel.recorded_bytes, an upper bound), so beyond
  `max_bytes` in all the oldest are replayed at once (a replay's result does not depend on when it runs)."""
  def __init__(self, max_bytes:int=128 << 20):
    self.max_bytes, self.bytes, self._lock = max_bytes, 0, threading.Lock()
    self.waiting: OrderedDict[int, tuple[object, int]] = OrderedDict()   # id(stats) -> (stats, its recorded bytes), oldest first

  def add(self, stats, tm:TimingModel):
    """Defer `tm`'s replay into `stats` (its cycles come from tm.finish when first read)."""
    key, n = id(stats), tm.recorded_bytes()
    stats.replay = lambda: self._replay(key, tm)
    with self._lock:
      self.waiting[key] = (stats, n)
      self.bytes += n
    while True:   # over budget: the oldest first (each replay takes itself out)
      with self._lock:
        if self.bytes <= self.max_bytes or len(self.waiting) <= 1: return
        oldest = next(iter(self.waiting.values()))[0]
      oldest.resolve()

  def _replay(self, key:int, tm:TimingModel) -> int:
    with self._lock:
      if (entry := self.waiting.pop(key, None)) is not None: self.bytes -= entry[1]
    return tm.finish()[0]

DEFERRED = DeferredReplays()
ENTRY_BYTES = 120      # one recorded entry: a 4-tuple, its ints and (single steps) its pair, and its list slot
DISPATCH_BYTES = 2048  # a deferred dispatch itself (its model, stats and the entries waiting for it), so even empty ones count
MEMBERSHIP_CELLS = 1 << 24   # waves x entries up to which _streams marks each wave's entries in a bitmap instead of sorting
DRIVERS = ("kfd", "am")   # the kernel driver that mapped the code: amdgpu's KFD (tinygrad's default AMD interface) or tinygrad's AM

def _expand(flat:np.ndarray, starts:np.ndarray, sizes:np.ndarray, times:np.ndarray) -> np.ndarray:
  """Parts of `flat` one after another, part i (flat[starts[i]:starts[i] + sizes[i]]) repeated times[i] times."""
  n = sizes * times
  if not len(n): return flat[:0]
  part = np.repeat(np.arange(len(n)), n)
  pos = np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)   # the position in its part's repeated codes
  return flat[starts[part] + pos % sizes[part]]

def cu_of(wave, waves_per_wg:int, n_cus:int):
  """The CU the model runs a wave on (or each of an array of waves): workgroups are dealt round-robin over the CUs."""
  return (wave // waves_per_wg) % n_cus

class TimingModel(DispatchObserver):
  """Cycle counts for one dispatch; `timeline=True` also keeps per-wave (wave, pc, cycle, class, dram) issue records.

  pc -1 marks the wave's start; dram: the issue waited on a global-memory (VMEM/SMEM) completion or the launch. `driver` (DRIVERS)
  picks the cold instruction-fetch latency: `Params.launch_kfd` under KFD, `Params.launch` under AM. `deferred`: the replay runs
  when the dispatch's cycles are first read (DEFERRED), not at its end (never with a timeline)."""
  def __init__(self, spec:ArchSpec, timeline:bool=False, driver:str="kfd", deferred:bool=False):
    if driver not in DRIVERS: raise ValueError(f"unknown driver {driver!r}: expected one of {DRIVERS}")
    self.spec, self.keep_timeline, self.deferred = spec, timeline, deferred and not timeline
    self.clock_mhz, self.n_cus, self.params = spec.clock_mhz, spec.n_cus, PARAMS[spec.family]
    self.fetch = self.params.launch_kfd if driver == "kfd" else self.params.launch
    self.timeline: list[tuple[int, int, int, str, bool]] = []

  # ---- DispatchObserver ----
  def launch(self, launch:Launch): self.start(launch.waves, launch.lanes, launch.waves_per_wg, launch.vgprs, launch.lds_bytes)
  reads_registers = False   # it records which waves issued which step, nothing of their state
  def before(self, st, ws:np.ndarray, step:Step, pc:int, first_wave:int): self.issue(step, ws + first_wave if first_wave else ws, pc)
  def ran(self, st, ws:np.ndarray, steps:list, pc:int, first_wave:int, times:int=1):
    key, entry = REPLAY_MEMO.run_keys(steps, pc)
    self.lockstep &= len(ws) == self.n_waves
    self.record.append((key, entry, ws + first_wave if first_wave else ws, times))   # (a loop's runs: one entry)
    self.recorded += len(ws)
  def ran_chain(self, st, ws:np.ndarray, rows:list, calls:np.ndarray, first_wave:int):
    self.lockstep &= len(ws) == self.n_waves
    waves = ws + first_wave if first_wave else ws
    if len(calls) < CHAIN_CALLS:   # an entry per region run
      runs = [(rows[row][1].steps, rows[row][0], times) for row, times in calls.tolist()]
      self.record.extend((key, entry, waves, times) for (key, entry), (_, _, times) in zip(REPLAY_MEMO.run_keys_all(runs), runs))
      self.recorded += len(ws) * len(runs)
      return
    used, which = np.unique(calls[:, 0], return_inverse=True)   # one entry: the regions it ran, each call's region and runs
    keys = REPLAY_MEMO.run_keys_all([(rows[row][1].steps, rows[row][0], None) for row in used.tolist()])
    self.record.append((CHAIN, (keys, np.stack([which.reshape(-1), calls[:, 1]], axis=1)), waves, 1))
    self.recorded += len(ws) + 2 * len(calls)   # (the calls' array: 16 bytes a call, two wave numbers' worth)
  def done(self, stats):
    stats.clock_mhz = self.clock_mhz
    if self.deferred: DEFERRED.add(stats, self)
    else: stats.cycles = self.finish()[0]

  def start(self, n_waves:int, lanes:int, waves_per_wg:int=1, vgprs:int=0, lds_bytes:int=0):
    """Begin a dispatch of n_waves waves (workgroups of waves_per_wg), `vgprs` allocated per wave, `lds_bytes` per workgroup."""
    self.n_waves, self.passes, self.wpg = n_waves, lanes // self.spec.simd_lanes, waves_per_wg
    p = self.params
    per_simd = min(p.max_waves_per_simd, p.vgpr_file * 32 // (lanes * vgprs)) if vgprs else p.max_waves_per_simd
    by_waves = max(1, per_simd * p.simds_per_cu // waves_per_wg)
    self.wg_slots = min(by_waves, self.spec.lds_per_cu // lds_bytes) if lds_bytes else by_waves
    # what ran, in order: (run key, run_keys's entry, waves, times in a row) of a native region's runs, (None, (step id, pc), waves,
    # 1) of a single step; a wave's instruction stream is its entries' instructions, each entry's repeated `times` times
    self.record: list[tuple[tuple | None, tuple, np.ndarray, int]] = []
    self.recorded = 0      # wave numbers the entries' arrays hold (an array shared by several entries counted for each)
    self.lockstep = True   # every entry so far held every wave

  def issue(self, step:Step, ws:np.ndarray, pc:int=0):
    """Record that waves `ws` (dispatch-wide numbers) executed `step` at `pc`."""
    REPLAY_MEMO.hold(step)
    self.lockstep &= len(ws) == self.n_waves
    self.record.append((None, (id(step), pc), np.asarray(ws), 1))
    self.recorded += len(ws)

  def recorded_bytes(self) -> int:
    """An upper bound of the memory the record holds: its entries and their wave arrays."""
    return DISPATCH_BYTES + len(self.record) * ENTRY_BYTES + self.recorded * 8

  def placement(self, wave:int) -> tuple[int, int]:
    """(CU, SIMD within the CU) the model runs a wave on."""
    return cu_of(wave, self.wpg, self.n_cus), (wave % self.wpg) % self.params.simds_per_cu

  def _streams(self, numbered:tuple[int, list, np.ndarray, np.ndarray], groups:dict|None) -> tuple[list[Stream], list[bytes], int]:
    """Each wave's (ops, pcs, cache-line spans) in issue order, a digest of it (waves with the same sequence share one Stream
    object), and the replay memo's generation that numbered them (`numbered`: ReplayMemo.number_parts of the record;
    `groups`: its `_by_range`, None when not lockstep chunks)."""
    generation, pairs, flat, sizes = numbered
    if not self.record: return [make_stream([], []) for _ in range(self.n_waves)], [b""] * self.n_waves, generation
    times = np.fromiter((r[3] for r in self.record), np.int64, len(self.record))
    starts = np.cumsum(sizes) - sizes
    def stream(entries:np.ndarray) -> tuple[Stream, bytes]:   # the stream of a wave that ran these entries (indices, in order)
      return REPLAY_MEMO.stream(generation, _expand(flat, starts[entries], sizes[entries], times[entries]), pairs)
    if self.lockstep:   # every entry held every wave (one lockstep chunk): one sequence
      one, digest = stream(np.arange(len(self.record)))
      return [one] * self.n_waves, [digest] * self.n_waves, generation
    if groups is not None:   # chunks in lockstep: one sequence per chunk
      out, digests = [None] * self.n_waves, [None] * self.n_waves
      for (first, n), idx in groups.items():
        one, digest = stream(np.array(idx, dtype=np.int64))
        out[first:first + n], digests[first:first + n] = [one] * n, [digest] * n
      if None in digests:   # waves no entry held (none ran an instruction)
        one, digest = stream(np.zeros(0, dtype=np.int64))
        out, digests = [one if x is None else x for x in out], [digest if d is None else d for d in digests]
      return out, digests, generation
    waves, held = np.concatenate([r[2] for r in self.record]), [len(r[2]) for r in self.record]
    nb, nw = len(self.record), self.n_waves
    if nw * nb <= MEMBERSHIP_CELLS:
      # which entries each wave was in (in order: its issue sequence); waves in the same entries share one stream, built once
      flags = np.zeros(nb * nw, dtype=bool)   # (entry, wave), filled entry by entry (near-sequential writes), then by wave
      flags[waves + np.repeat(np.arange(0, nb * nw, nw), held)] = True
      member = np.packbits(flags.reshape(nb, nw), axis=0).T.copy()   # (waves, bytes): wave w's entries as bits
      rows = member.view(np.dtype((np.void, member.shape[1]))).reshape(-1)
      _, first, inverse = np.unique(rows, return_index=True, return_inverse=True)
      built = [stream(np.flatnonzero(np.unpackbits(member[f], count=nb))) for f in first.tolist()]
      return [built[i][0] for i in inverse.tolist()], [built[i][1] for i in inverse.tolist()], generation
    entries = np.repeat(np.arange(nb), held)
    memo: dict[bytes, tuple[Stream, bytes]] = {}
    out, digests = [], []
    # a stable sort by wave keeps each wave's entries in order; 16-bit keys make numpy's stable sort a radix sort
    order = np.argsort(waves.astype(np.uint16) if nw <= 0xffff else waves, kind="stable")
    waves, entries = waves[order], entries[order]
    bounds = np.searchsorted(waves, np.arange(nw + 1)).tolist()
    for w in range(nw):
      mine = entries[bounds[w]:bounds[w + 1]]
      if (hit := memo.get(key := mine.tobytes())) is None: hit = memo[key] = stream(mine)
      out.append(hit[0]); digests.append(hit[1])
    return out, digests, generation

  def _by_range(self) -> dict[tuple[int, int], list[int]] | None:
    """The record's entries by the waves they held, {(first wave, count): entry indices in order}, when each held a range of
    consecutive waves and no two ranges overlap (chunks that each ran in lockstep); None otherwise."""
    groups: dict[tuple[int, int], list[int]] = {}
    for i, (_, _, ws, _) in enumerate(self.record):
      first, n = int(ws[0]), len(ws)
      if int(ws[-1]) - first + 1 != n: return None
      groups.setdefault((first, n), []).append(i)
    spans = sorted(groups)
    return groups if all(a + n <= b for (a, n), (b, _) in zip(spans, spans[1:])) else None

  def finish(self) -> tuple[int, float]:
    """Replay the recorded streams; (cycles from the first wave start to the last wave's end, shader clock in MHz)."""
    # (step id, pc) -> an int: one array to sort and compare instead of two
    numbered = REPLAY_MEMO.number_parts([(key, entry) for key, entry, _, _ in self.record])
    inputs = repr((numbered[0], self.params, self.passes, self.wg_slots, self.fetch, self.wpg)).encode()   # the rest of what the replay reads
    groups = None if self.lockstep else self._by_range()
    whole_key = None
    if not self.keep_timeline and not self.lockstep and groups is None:
      # waves that went their own ways (sorting out each wave's sequence costs ~10 ms per 500 waves): a dispatch recorded as one
      # before (a kernel run again on the same data) takes its end from the memo
      if (known := REPLAY_MEMO.end(whole_key := self._recording_key(inputs, numbered))) is not None: return known, self.clock_mhz
    streams, digests, generation = self._streams(numbered, groups)
    n_wg = max(1, math.ceil(self.n_waves / self.wpg))
    per_dispatch: dict[tuple, list] = {}   # with a timeline: each distinct CU workload's full result
    end = 0
    # the waves of each CU in order: its workgroups are cu, cu + n_cus, ...
    wave_cu = cu_of(np.arange(self.n_waves), self.wpg, self.n_cus)
    by_cu = np.argsort(wave_cu, kind="stable")
    bounds = np.searchsorted(wave_cu[by_cu], np.arange(min(self.n_cus, n_wg) + 1)).tolist()
    digest_rows = np.frombuffer(b"".join(digests), dtype=np.uint8).reshape(self.n_waves, -1)   # (digests have one length)
    todo: dict[bytes, np.ndarray] = {}   # CU workloads without a known end: one CU's waves each
    for cu in range(min(self.n_cus, n_wg)):
      ids = by_cu[bounds[cu]:bounds[cu + 1]]
      if not self.keep_timeline:
        key = hashlib.blake2b(inputs + digest_rows[ids].tobytes(), digest_size=16).digest()
        if (cu_end := REPLAY_MEMO.end(key)) is None: todo.setdefault(key, ids)
        else: end = max(end, cu_end)
        continue
      waves = ids.tolist()
      if (res := per_dispatch.get(local := tuple(id(streams[w]) for w in waves))) is None: res = per_dispatch[local] = self._replay(streams, ids)
      end = max([end] + [r[1] for r in res])
      for w, (start, _, times, dram) in zip(waves, res):
        self.timeline.append((w, -1, start, "start", False))
        self.timeline.extend((w, pc, t, op.name, d) for op, pc, t, d in zip(streams[w].ops, streams[w].pcs, times, dram) if t is not None)
    # compiled where it can (emu/amd/cu_native.py), the rest in Python (independent: some may replay in worker processes,
    # emu/amd/replay_pool.py)
    ends, python = {}, {}
    for key, ids in todo.items():
      if (cu_end := cu_native.simulate_end(*(job := self._job(streams, ids)))) is None: python[key] = job
      else: ends[key] = cu_end
    ends.update(zip(python, POOL.ends(list(python.values()), lambda job: simulate_end(*job))))
    for key, cu_end in ends.items():
      REPLAY_MEMO.store(key, cu_end)
      end = max(end, cu_end)
    if whole_key is not None: REPLAY_MEMO.store(whole_key, end)
    return end, self.clock_mhz

  def _recording_key(self, inputs:bytes, numbered:tuple) -> bytes:
    """A digest of all the replay reads: its inputs, each entry's instructions (`numbered`'s codes and sizes), times and waves
    (entries that share a wave array name it by index: each array is hashed once)."""
    arrays: dict[int, tuple[int, np.ndarray]] = {}
    index = np.array([arrays.setdefault(id(ws), (len(arrays), ws))[0] for _, _, ws, _ in self.record], dtype=np.int32)
    times = np.array([r[3] for r in self.record], dtype=np.int64)
    h = hashlib.blake2b(inputs + repr((self.n_waves, self.n_cus, [len(ws) for _, ws in arrays.values()])).encode(), digest_size=16)
    for part in (numbered[2], numbered[3], times, index, *(np.ascontiguousarray(ws, dtype=np.int64) for _, ws in arrays.values())): h.update(part)
    return b"dispatch" + h.digest()

  def _job(self, streams:list[Stream], ids:np.ndarray) -> tuple:
    """simulate_cu's arguments for the waves `ids` of one CU (consecutive workgroups of `wpg` waves)."""
    waves = [streams[w] for w in ids.tolist()]
    return waves, [k // self.wpg for k in range(len(waves))], self.passes, self.wg_slots, self.params, self.fetch

  def _replay(self, streams:list[Stream], ids:np.ndarray) -> list:
    """simulate_cu for the waves `ids` of one CU (compiled where it can)."""
    job = self._job(streams, ids)
    return cu_native.simulate(*job) or simulate_cu(*job)

