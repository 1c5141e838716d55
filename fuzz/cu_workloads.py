"""CU workloads for the timing replay built from replay ops directly (no instructions decoded): a vocabulary of one op per
timing class and port, `loop` streams, and `random_workload`, which draws a whole CU workload over every class. The replay
mirrors (cu_model.simulate_cu with and without its steady-state skip, the compiled replay emu/amd/cu_native.py) must agree on
every one; the `mirror.replay` fuzz target and the replay tests draw from here."""
from __future__ import annotations
import random
from dataclasses import dataclass
from emu.amd import cu_model
from emu.amd.cu_model import Stream, make_stream, replay_op
from emu.amd.timing import PARAMS, OpInfo, Params

VALU, TRANS, SALU = replay_op(OpInfo("valu", "valu")), replay_op(OpInfo("trans", "trans", 4)), replay_op(OpInfo("salu", "salu"))
LOAD, STORE = replay_op(OpInfo("vmem_load", "vmem", 1)), replay_op(OpInfo("vmem_store", "vmem", 7))
LDS, WIDE_LDS = replay_op(OpInfo("lds", "lds", lds_cycles=2, counter="lgkm")), replay_op(OpInfo("lds", "lds", lds_cycles=16, counter="lgkm"))
WAIT_VM, WAIT_LGKM = replay_op(OpInfo("waitcnt", None, waits=(("vm", 0),))), replay_op(OpInfo("waitcnt", None, waits=(("lgkm", 0),)))
WAIT_VS_2 = replay_op(OpInfo("waitcnt", None, waits=(("vs", 2),)))
WMMA, WMMA_8 = replay_op(OpInfo("valu", "matrix", 16)), replay_op(OpInfo("valu", "matrix", 8))   # 16- and 8-cycle matrix ops
BARRIER, CBRANCH, END = replay_op(OpInfo("barrier", None)), replay_op(OpInfo("branch", "salu", cond=True)), replay_op(OpInfo("end", None))
VALU_DEP_1, VALU_DEP_4, TRANS32_DEP_1 = 1, 4, 5   # s_delay_alu instid0 values

def delay(dep:int) -> cu_model.ReplayOp:
  """An s_delay_alu whose immediate is `dep` (instid0 = dep & 0xf, skip and instid1 above it)."""
  return replay_op(OpInfo("delay", None, delay=dep))

def loop(head:list, body:list, trips:int, tail:list=(END,), late_body:list|None=None, late_from:int|None=None) -> Stream:
  """A stream: `head`, then `trips` trips of `body` (trips from `late_from` on run `late_body`, laid out after it) each ended by a
  conditional branch back to its start, taken but the last time, then `tail`."""
  ops, pcs, pc = list(head), [4 * k for k in range(len(head))], 4 * len(head)
  starts = {id(body): pc, id(late_body): pc + 4 * (len(body) + 1)} if late_body else {id(body): pc}
  after = max(starts.values()) + 4 * (len(late_body or body) + 1)
  for t in range(trips):
    b = late_body if late_body is not None and t >= late_from else body
    start = starts[id(b)]
    ops += [*b, CBRANCH]; pcs += [start + 4 * k for k in range(len(b) + 1)]
  ops += list(tail); pcs += [after + 4 * k for k in range(len(tail))]
  return make_stream(ops, pcs)

@dataclass
class Workload:
  """One CU's replay input: `cu_model.simulate_cu(*workload.args())`."""
  streams: list[Stream]
  wg_of: list[int]
  passes: int
  slots: int
  p: Params
  def args(self) -> tuple: return self.streams, self.wg_of, self.passes, self.slots, self.p, self.p.launch_kfd

# VALU ops whose VGPRs the VALU pipe's interlock reads: (port cycles, VGPRs read, VGPRs written); chains, a swap, a 64-bit pair
REGISTER_OPS = ((1, (0,), (0,)), (1, (0,), (1,)), (1, (1,), (0,)), (1, (2, 3), (2, 3)), (2, (0, 1), (1,)), (1, (), (3,)))
SGPR_OPS = (((4,), (4,), 0), ((), (5,), 0), ((4, 5), (6, 7), 3), ((127,), (4,), 0))   # SALU ops: (SGPRs read, written, latency)

def random_workload(rng:random.Random, matrix:bool) -> Workload:
  """Random loop bodies over every class (every port, WMMAs when `matrix`, s_delay_alu pairs and SALU cycles, 64-bit ops through
  the transcendental port, VALU and transcendental ops reading each other's VGPRs, waits (a VALU drain too), barriers, s_nop),
  random trip counts, workgroup shapes, slots, passes, families and SIMDs per CU (one SIMD: waves share a matrix unit)."""
  pool = [VALU, TRANS, SALU, LOAD, STORE, LDS, WIDE_LDS, WAIT_VM, WAIT_LGKM, WAIT_VS_2, BARRIER, replay_op(OpInfo("valu", "valu", 2)),
          replay_op(OpInfo("nop", None, delay=3)), replay_op(OpInfo("smem", "smem", counter="lgkm")), delay(VALU_DEP_1), delay(VALU_DEP_4),
          delay(TRANS32_DEP_1), delay(9), delay(2 | 1 << 4 | 3 << 7), replay_op(OpInfo("trans", "trans", 1)),
          replay_op(OpInfo("valu", "valu", 2, via_trans=True)), replay_op(OpInfo("other", None)), *([WMMA, WMMA_8, WMMA] if matrix else []),
          *(replay_op(OpInfo("valu", "valu", cost, vreads=r, vwrites=w)) for cost, r, w in REGISTER_OPS),
          replay_op(OpInfo("trans", "trans", 4, vreads=(0,), vwrites=(0,))), replay_op(OpInfo("trans", "trans", 1, vreads=(3,), vwrites=(2,))),
          replay_op(OpInfo("waitcnt", None, drain=True)), replay_op(OpInfo("valu", "valu", 4, vreads=(1,), vwrites=(1,), lat=8)),
          *(replay_op(OpInfo("salu", "salu", vreads=tuple(cu_model.SGPR_BASE + s for s in r), vwrites=tuple(cu_model.SGPR_BASE + s for s in w),
                             lat=lat)) for r, w, lat in SGPR_OPS)]
  body = [rng.choice(pool) for _ in range(rng.randint(1, 12))]
  waves, wpg = rng.randint(1, 12), rng.choice([1, 2, 3, 4])
  streams = [loop([rng.choice([SALU, VALU])], body, rng.randint(1, 60)) for _ in range(waves)]
  p = PARAMS[rng.choice(["rdna3", "rdna4", "cdna"])]
  if rng.random() < 0.4: p = p.__class__(**{**vars(p), "simds_per_cu": rng.choice([1, 2, 4])})
  if rng.random() < 0.3: p = p.__class__(**{**vars(p), "valu_queue": rng.choice([0, 1, 3]), "valu_raw": rng.choice([1, 5, 9]),
                                                         "trans_queue": rng.choice([1, 2, 13]), "trans_raw": rng.choice([2, 9]),
                                                         "pipe_hold": rng.choice([0, 3, 12]), "vgpr_to_lds": rng.choice([9, 18]),
                                                         "trans_result": rng.choice([4, 9]), "salu_lat": rng.choice([1, 2, 6]),
                                                         "sgpr_to_mem": rng.choice([0, 5])})
  return Workload(streams, [w // wpg for w in range(waves)], rng.choice([1, 2]), rng.choice([1, 2, 16]), p)
