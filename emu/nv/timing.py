"""The per-SM timing model: how many cycles a launch takes on a board (emu.nv.boards), computed alongside its execution.

Per warp (a scoreboard over the lockstep steps the executor runs): a warp issues its instructions in order; an instruction
starts when the warp's previous one has left the issue slot and its source registers are ready, occupies the slot for its
issue cycles and makes its destinations ready after its latency. `bar.sync` holds every warp of the CTA until the last one
arrives. Per SM: CTAs are placed round-robin on `SMs x CTAs-per-SM` slots (occupancy from resident-warp, CTA and
shared-memory limits; registers are not counted: PTX's virtual registers say nothing about the hardware's); an SM takes
the longest of (a) its slots' CTA timelines run back to back, (b) its warps' issue cycles over its four schedulers, (c) its
global-memory sectors over the L1's 4 sectors (128 bytes) per cycle. The launch takes the slowest SM, or the DRAM time of
the distinct 32-byte sectors each instruction touches (reuse across instructions is assumed to hit in L2), whichever is
longer, plus a fixed launch latency.

Costs per timing class (OpDef.timing in emu.nv.isa; latency = cycles until a result can be used, issue = cycles a
sub-partition spends per warp-instruction):
- alu: f32/f16 issue 1 (32 FP32 lanes per sub-partition), integers `int32_cycles` (64-bit twice that), f64 `fp64_cycles`
  (boards' rates); latency 4, the dependent add.f32 latency measured on Ampere (Abdelkhalik et al. 2022, "Demystifying the
  Nvidia Ampere Architecture through Microbenchmarking and Instruction-level Analysis"), plus the issue cycles.
- sfu (rcp/sqrt/ex2/lg2/sin/cos.approx): issue 8 (four SFU lanes per sub-partition), latency 18.
- div (div, rem: several SASS instructions each; the expansion is not documented): issue 16 x the type's ALU issue, latency 64.
- mem: global/local loads latency 200 (an L2 hit on Volta-Ampere in the microbenchmark literature; DRAM is charged through
  bandwidth); shared latency 23 and issue = the bank-conflict degree (32 banks of 4 bytes; lanes reading the same word
  broadcast); param (constant bank) latency 4; stores have no result.
- tensor (mma.sync): issue `mma_cycles` (the board's), latency mma_cycles + 20.
- branch: issue 1. barrier: 20 cycles after the last warp arrives.

These are representative values for the generations, not calibrated on the boards: the repository has no NVIDIA timing
traces yet. Deterministic: the same launch always gets the same cycles.
"""
from __future__ import annotations
import numpy as np
from emu.nv import isa
from emu.nv.ptx import Addr, Inst, Kernel, Reg, Vec

SCHEDULERS_PER_SM = 4
LAUNCH_LATENCY_S = 2e-6      # host-visible cost of a minimal launch (a few microseconds on current boards)
SECTOR = 32                  # bytes per DRAM/L1 sector
L1_SECTORS_PER_CYCLE = 4     # 128 bytes per cycle per SM
NO_DEST = ("st", "bra", "ret", "exit", "bar")
LATENCY = {"alu": 4, "sfu": 18, "div": 64, "branch": 1, "barrier": 20}
GLOBAL_LATENCY, SHARED_LATENCY, PARAM_LATENCY, MMA_EXTRA_LATENCY = 200, 23, 4, 20
SHARED_CTA_RESERVE = 1024    # bytes of shared memory the hardware reserves per CTA (CUDA Programming Guide, sm_80+)

def _regs(o) -> list[str]:
  if isinstance(o, Reg): return [o.name]
  if isinstance(o, Vec): return [n for item in o.items for n in _regs(item)]
  if isinstance(o, Addr) and o.base.startswith("%"): return [o.base]
  return []

class KernelCosts:
  """Per instruction of a kernel: register indices it reads and writes, issue and latency cycles on a board."""
  def __init__(self, kernel:Kernel, board):
    self.index = {r: i for i, r in enumerate(kernel.regs)}
    self.srcs, self.dsts, self.issue, self.latency, self.kind = [], [], [], [], []
    for inst in kernel.body:
      dst = [] if inst.op in NO_DEST or not inst.operands else _regs(inst.operands[0])
      src = [n for o in (inst.operands if inst.op in NO_DEST else inst.operands[1:]) for n in _regs(o)] + ([inst.guard[0]] if inst.guard else [])
      self.srcs.append(np.array([self.index[n] for n in src if n in self.index], np.int64))
      self.dsts.append(np.array([self.index[n] for n in dst if n in self.index], np.int64))
      issue, latency, kind = _cost(inst, isa.OPS[inst.op].timing, board)
      self.issue.append(issue)
      self.latency.append(latency)
      self.kind.append(kind)

def _cost(inst:Inst, timing:str, board) -> tuple[int, int, str]:
  """(issue cycles, latency, kind) of one instruction; kind is 'global'/'shared' for accesses costed per warp, else timing."""
  t = next((m for m in reversed(inst.mods) if m[:1] in "sufb" and m[1:].isdigit()), "")
  alu = board.fp64_cycles if t == "f64" else 1 if t[:1] == "f" else board.int32_cycles * (2 if t.endswith("64") else 1)
  if timing == "mem":
    space = next((s for s in ("global", "shared", "param", "local") if s in inst.mods), "global")
    if space == "param": return 1, PARAM_LATENCY, "alu"
    return 1, SHARED_LATENCY if space == "shared" else GLOBAL_LATENCY, "shared" if space == "shared" else "global"
  if timing == "tensor": return board.mma_cycles, board.mma_cycles + MMA_EXTRA_LATENCY, timing
  if timing == "sfu": return 8, LATENCY["sfu"], timing
  if timing == "div": return 16 * alu, LATENCY["div"], timing
  if timing in ("branch", "barrier"): return 1, LATENCY[timing], timing
  return alu, LATENCY["alu"] + alu - 1, "alu"

class Timer:
  """Times one launch of `kernel` (grid, block) on `board` while emu.nv.simt runs it: `begin` per batch of CTAs, `access` for
  each memory access of a step, `step` after each step, `end` per batch, then `cycles()`."""
  def __init__(self, kernel:Kernel, board, block:tuple):
    cached = getattr(kernel, "_costs", None)
    if cached is None or cached[0] is not board:
      kernel._costs = cached = (board, KernelCosts(kernel, board))   # type: ignore[attr-defined]
    self.costs, self.board = cached[1], board
    self.per_cta = int(np.prod(block))
    self.wpc = -(-self.per_cta // 32)
    self.shared_bytes = kernel.shared_bytes
    self.durations: list[np.ndarray] = []
    self.issue: list[np.ndarray] = []
    self.sectors: list[np.ndarray] = []
    self.dram_sectors = 0

  def begin(self, lane_warp:np.ndarray, nwarps:int):
    """A batch starts: `lane_warp` is each lane's warp index within the batch."""
    self.lane_warp, self.nwarps = lane_warp, nwarps
    self.t = np.zeros(nwarps)
    self.ready = np.zeros((nwarps, max(len(self.costs.index), 1)))
    self.warp_issue = np.zeros(nwarps)
    self.warp_sectors = np.zeros(nwarps)
    self._pending: np.ndarray | None = None   # this step's per-warp issue cycles from its memory access

  def access(self, space:str, addrs:np.ndarray, lanes:np.ndarray, nbytes:int):
    """A memory access by `lanes` (indices) at `addrs` of `nbytes` each: global/local sectors, shared bank conflicts."""
    if space == "param" or not len(lanes): return
    warps = self.lane_warp[lanes]
    if space == "shared":
      words = (addrs.astype(np.int64) >> 2)
      key = np.unique(warps * (1 << 40) + words)               # distinct words per warp
      w, bank = key >> 40, (key & ((1 << 40) - 1)) & 31
      degree = np.zeros((self.nwarps, 32), np.int64)
      np.add.at(degree, (w, bank), 1)
      self._pending = np.maximum(degree.max(1), 1).astype(float)
      return
    a = addrs.astype(np.int64)
    keys = warps * (1 << 44) + a // SECTOR
    if ((a % SECTOR) + nbytes > SECTOR).any(): keys = np.concatenate([keys, warps * (1 << 44) + (a + nbytes - 1) // SECTOR])   # straddles
    sectors = np.unique(keys)
    self.warp_sectors += np.bincount(sectors >> 44, minlength=self.nwarps)
    self.dram_sectors += len(np.unique(sectors & ((1 << 44) - 1)))

  def step(self, p:int, at:np.ndarray, all_lanes:bool, barrier:bool):
    """Account instruction `p` for the warps with a lane in `at` (every warp when `all_lanes`)."""
    c = self.costs
    sel = slice(None) if all_lanes else np.bincount(self.lane_warp[at], minlength=self.nwarps) > 0
    issue = c.issue[p] if self._pending is None or c.kind[p] != "shared" else self._pending[sel]
    start = self.t[sel]
    if len(c.srcs[p]): start = np.maximum(start, self.ready[sel][:, c.srcs[p]].max(1))
    self.t[sel] = start + issue
    if len(c.dsts[p]):
      rows = self.ready[sel]
      rows[:, c.dsts[p]] = (start + issue - 1 + c.latency[p])[:, None]
      self.ready[sel] = rows
    self.warp_issue[sel] += issue
    self._pending = None
    if barrier:
      arrived = self.t.reshape(-1, self.wpc).max(1) + c.latency[p]
      self.t = np.repeat(arrived, self.wpc)

  def end(self):
    """The batch finished: keep each CTA's duration, issue cycles and sectors."""
    finish = np.maximum(self.t, self.ready.max(1)).reshape(-1, self.wpc)
    self.durations.append(finish.max(1))
    self.issue.append(self.warp_issue.reshape(-1, self.wpc).sum(1))
    self.sectors.append(self.warp_sectors.reshape(-1, self.wpc).sum(1))

  def ctas_per_sm(self) -> int:
    """Resident CTAs per SM: the CTA, warp and shared-memory limits (at least one)."""
    b = self.board
    limit = min(b.max_ctas_per_sm, b.max_warps_per_sm // self.wpc)
    if self.shared_bytes: limit = min(limit, b.shared_per_sm // (self.shared_bytes + SHARED_CTA_RESERVE))
    return max(1, limit)

  def cycles(self) -> int:
    """The launch's cycles (see the module docstring)."""
    if not self.durations: return 0
    b = self.board
    dur, issue, sectors = (np.concatenate(x) for x in (self.durations, self.issue, self.sectors))
    slots = b.sms * self.ctas_per_sm()
    slot = np.arange(len(dur)) % slots
    per_slot = np.bincount(slot, weights=dur, minlength=min(slots, len(dur)))
    sm = np.arange(len(per_slot)) % b.sms
    latency = np.zeros(b.sms)
    np.maximum.at(latency, sm, per_slot)
    sm_of_cta = slot % b.sms
    issue_bound = np.bincount(sm_of_cta, weights=issue, minlength=b.sms) / SCHEDULERS_PER_SM
    l1_bound = np.bincount(sm_of_cta, weights=sectors, minlength=b.sms) / L1_SECTORS_PER_CYCLE
    dram = self.dram_sectors * SECTOR / (b.dram_bytes_per_s / (b.boost_mhz * 1e6))
    return int(np.ceil(max(float(np.max(np.maximum(latency, np.maximum(issue_bound, l1_bound)))), dram)))

def launch_seconds(cycles:int, board) -> float:
  """Device seconds for a launch of `cycles` on `board`, with the launch latency."""
  return LAUNCH_LATENCY_S + cycles / (board.boost_mhz * 1e6)
