"""The replay's steady-state skip (emu/amd/cu_model.py, _Periods): a loop's repeated trips written out must be exactly what
replaying them gives. The reference is the same replay with the skip off (its rules are checked by hand in test_timing.py);
each case also checks that the skip happened, so that it cannot pass by never skipping."""
import numpy as np
import pytest
from emu.amd import cu_model
from emu.amd.cu_model import make_stream, replay_op, simulate_cu
from emu.amd.timing import PARAMS, OpInfo
from fuzz.cu_workloads import (BARRIER, LDS, LOAD, SALU, STORE, TRANS, TRANS32_DEP_1, VALU, VALU_DEP_1, VALU_DEP_4, WAIT_LGKM,
                               WAIT_VM, WAIT_VS_2, WIDE_LDS, WMMA, WMMA_8, delay, loop)

def replays(streams, wg_of, family="rdna3", passes=1, slots=16, p=None):
  """(with the skip, without it, how many trips the skip wrote out); `p` instead of the family's parameters."""
  p = p or PARAMS[family]
  written = [0]
  real = cu_model._Periods.skip
  def counted(self, now, period, periods, pos):
    written[0] += periods
    return real(self, now, period, periods, pos)
  cu_model._Periods.skip = counted
  try: fast = simulate_cu(streams, wg_of, passes, slots, p, p.launch_kfd)
  finally: cu_model._Periods.skip = real
  return fast, simulate_cu(streams, wg_of, passes, slots, p, p.launch_kfd, skip_periods=False), written[0]

@pytest.mark.parametrize("family", ["rdna3", "rdna4", "cdna"])
@pytest.mark.parametrize("passes", [1, 2])
def test_one_waves_loop_with_loads_and_dependencies(family, passes):
  body = [VALU, delay(VALU_DEP_1), VALU, LOAD, TRANS, delay(TRANS32_DEP_1), VALU, WAIT_VM, SALU]
  fast, slow, written = replays([loop([SALU, VALU], body, 300)], [0], family, passes)
  assert fast == slow
  assert written > 200

def test_waves_of_a_workgroup_sharing_simds_and_a_barrier():
  body = [VALU, VALU, LDS, WAIT_LGKM, BARRIER, VALU, delay(VALU_DEP_1), VALU, SALU]
  fast, slow, written = replays([loop([SALU], body, 200)] * 5, [0] * 5, passes=2)
  assert fast == slow
  assert written > 100

def test_a_dependency_reaching_into_the_trip_before():
  # two VALU ops a trip: VALU_DEP_4 names the VALU op two trips back... of the one before: the state must carry the last trip's issues
  body = [VALU, delay(VALU_DEP_4), VALU, SALU]
  fast, slow, written = replays([loop([VALU, VALU, VALU], body, 400)], [0])
  assert fast == slow
  assert written > 300

def test_waves_leaving_their_loops_at_different_trips():
  body = [VALU, LOAD, WAIT_VM, VALU, STORE, SALU]
  streams = [loop([SALU], body, n) for n in (300, 180, 240)]
  fast, slow, written = replays(streams, [0, 1, 2], slots=3)
  assert fast == slow
  assert written > 100

def test_trips_that_change_partway():
  # from trip 150 on, each trip runs a longer body at other pcs (a data-dependent branch): the skip must stop where the repetition
  # ends and replay the change
  body, late = [VALU, SALU], [VALU, TRANS, delay(TRANS32_DEP_1), VALU, SALU]
  fast, slow, written = replays([loop([SALU], body, 300, late_body=late, late_from=150)], [0])
  assert fast == slow
  assert written > 250   # (both parts: each ends its own skips)

def test_workgroups_launched_one_after_another():
  # one workgroup slot: each of four one-wave workgroups starts when the one before ends (the instruction cache warm by then)
  body = [VALU, delay(VALU_DEP_1), VALU, SALU]
  fast, slow, written = replays([loop([SALU], body, 150)] * 4, [0, 1, 2, 3], slots=1)
  assert fast == slow
  assert written > 400

def test_waits_on_operations_issued_trips_before():
  # a store takes longer than several trips and each trip waits until two are left in flight: every trip waits for the store of
  # two trips before, so a skip must carry the stores in flight over
  body = [VALU, STORE, WAIT_VS_2, SALU]
  fast, slow, written = replays([loop([SALU], body, 400)], [0])
  assert fast == slow
  assert written > 100

def test_a_backlog_in_the_cus_lds_pipe():
  # five waves issue a 16-cycle DS instruction each trip: the CU's LDS pipe runs more than lds_lat behind, which a skip must keep
  body = [WIDE_LDS, WAIT_LGKM, VALU, SALU]
  fast, slow, written = replays([loop([SALU], body, 200)] * 5, [0] * 5)
  assert fast == slow
  assert written > 100

def test_s_delay_alu_dependencies_worked_by_hand():
  # the ISA's s_delay_alu: instid0 applies to the next non-delay instruction, instid1 to the one `skip` non-delay instructions
  # after that; VALU_DEP_n names the n-th most recent VALU (transcendentals count), TRANS32_DEP_n the n-th most recent
  # transcendental, SALU_CYCLE_n the most recent SALU instruction (waits n + 1 cycles after its issue). A later s_delay_alu's
  # dependency can land before an earlier one's skipped one, and two can land on one instruction (in the order they came).
  def simm(id0, skip=0, id1=0): return id0 | skip << 4 | id1 << 7
  ops = [VALU, TRANS, SALU, delay(simm(2, 2, 9)), VALU, delay(simm(5)), VALU, SALU,
         delay(simm(1, 1, 3)), delay(simm(4)), VALU, VALU]
  st = make_stream(ops, [4 * k for k in range(len(ops))])
  kind, reach, _ = cu_model.alu_deps(np.array([op.cls for op in ops]), np.array([op.delay for op in ops]))
  deps = st.deps
  V, T = cu_model.VALU_DEP, cu_model.TRANS_DEP
  assert deps == [(), (), (), (), ((0, V),), (), ((1, T),), ((2, 2),), (), (), ((6, V), (0, V)), ((4, V),)]
  assert reach == 10
  assert (kind == 0).tolist() == [d == () for d in deps] and len(set(kind[kind > 0].tolist())) == 5

# (113, 127, 347: seeds whose WMMA loops carry completions instructions issued at over a skip, found by a sweep of 1,500)
@pytest.mark.parametrize("seed", [*range(40), 113, 127, 347])
def test_random_loops_replay_alike_with_and_without_the_skip(seed):
  # random loop bodies over every replayed class (WMMAs in odd seeds), random trip counts per wave, workgroup shapes, slots,
  # passes and families
  import random
  rng = random.Random(seed)
  pool = [VALU, TRANS, SALU, LOAD, STORE, LDS, WIDE_LDS, WAIT_VM, WAIT_LGKM, WAIT_VS_2, BARRIER,
          replay_op(OpInfo("valu", "valu", 2)), replay_op(OpInfo("nop", None, delay=3)), replay_op(OpInfo("smem", "smem", counter="lgkm")),
          delay(VALU_DEP_1), delay(VALU_DEP_4), delay(TRANS32_DEP_1), delay(9), delay(2 | 1 << 4 | 3 << 7), *([WMMA, WMMA_8] if seed % 2 else [])]
  body = [rng.choice(pool) for _ in range(rng.randint(1, 10))]
  waves, wpg = rng.randint(1, 6), rng.choice([1, 2, 3])
  trips = [rng.randint(30, 160) for _ in range(waves)]
  streams = [loop([rng.choice([SALU, VALU])], body, n) for n in trips]
  fast, slow, _ = replays(streams, [w // wpg for w in range(waves)], rng.choice(["rdna3", "rdna4", "cdna"]), rng.choice([1, 2]),
                          rng.choice([1, 2, 16]))
  assert fast == slow

def test_wmma_loops_of_waves_sharing_a_matrix_unit():
  # two waves on one SIMD (a one-SIMD CU) interleave WMMAs and VALU work: the matrix unit's completions, the owner's buffer and
  # the other wave's passes waiting for completions carry over from trip to trip
  p = PARAMS["rdna4"].__class__(**{**vars(PARAMS["rdna4"]), "simds_per_cu": 1})
  body = [WMMA, VALU, WMMA_8, VALU, VALU, SALU]
  fast, slow, written = replays([loop([SALU], body, 200)] * 2, [0, 0], slots=2, p=p)
  assert fast == slow
  assert written > 100
