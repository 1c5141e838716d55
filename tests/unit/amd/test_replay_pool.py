"""CU replays in worker processes (emu/amd/replay_pool.py): the same end cycles as replaying here, work actually handed out,
and a failing worker costing nothing but time."""
import pytest
from emu.amd import replay_pool
from emu.amd.cu_model import make_stream, replay_op, simulate_cu
from emu.amd.timing import PARAMS, OpInfo

VALU, TRANS, SALU = replay_op(OpInfo("valu", "valu")), replay_op(OpInfo("trans", "trans", 4)), replay_op(OpInfo("salu", "salu"))
LOAD, WAIT = replay_op(OpInfo("vmem_load", "vmem", 1)), replay_op(OpInfo("waitcnt", None, waits=(("vm", 0),)))
CBRANCH, END = replay_op(OpInfo("branch", "salu", cond=True)), replay_op(OpInfo("end", None))
WMMA = replay_op(OpInfo("valu", "matrix", 16))

def stream(body, trips):
  ops, pcs = [SALU], [0]
  for _ in range(trips): ops += [*body, CBRANCH]; pcs += [4 + 4 * k for k in range(len(body) + 1)]
  return make_stream(ops + [END], pcs + [8 + 4 * len(body)])

def jobs(family="rdna3"):
  """Six CU workloads that differ: waves with different loops and trip counts, one with a matrix unit."""
  p = PARAMS[family]
  bodies = [[VALU, LOAD, WAIT, VALU], [TRANS, VALU, SALU], [VALU, WMMA, VALU]]
  out = []
  for k in range(6):
    streams = [stream(bodies[(k + w) % 3], 20 + 7 * k + 3 * w) for w in range(1 + k % 3)]
    out.append((streams, [w // 2 for w in range(len(streams))], 1 + k % 2, 4, p, p.launch_kfd))
  return out

def here(job): return max(r[1] for r in simulate_cu(*job))

@pytest.fixture
def pool(monkeypatch):
  monkeypatch.setattr(replay_pool, "MIN_INSTRUCTIONS", 0)
  monkeypatch.setenv("EMU_REPLAY_JOBS", "2")
  p = replay_pool.ReplayPool()
  yield p
  p.close()

@pytest.mark.parametrize("family", ["rdna3", "rdna4", "cdna"])
def test_workers_answer_what_this_process_would(pool, family):
  js = jobs(family)
  local = []
  def replay(job):
    local.append(job)
    return here(job)
  assert pool.ends(js, replay) == [here(j) for j in js]
  assert pool.failure is None and len(pool.workers) == 2
  assert 0 < len(local) < len(js)   # (some went to the workers, some stayed)

def test_a_worker_gone_costs_only_time(pool):
  js = jobs()
  assert pool.ends(js[:2], here) == [here(j) for j in js[:2]]   # (starts the workers)
  for w in pool.workers: w.kill(); w.wait()
  assert pool.ends(js, here) == [here(j) for j in js]
  assert pool.failure is not None and not pool.workers
  assert pool.ends(js, here) == [here(j) for j in js]   # (and it stays off)

def test_no_workers_when_asked_for_none(pool, monkeypatch):
  monkeypatch.setenv("EMU_REPLAY_JOBS", "0")
  js = jobs()
  assert pool.ends(js, here) == [here(j) for j in js]
  assert not pool.workers

def test_a_dispatch_times_alike_with_and_without_workers(monkeypatch, boxmuller_cycles):
  # a tinygrad kernel whose waves branch on data (each CU its own workload) through the timing model, workers on and off
  monkeypatch.setattr(replay_pool, "MIN_INSTRUCTIONS", 0)
  monkeypatch.setattr(replay_pool, "POOL", pool := replay_pool.ReplayPool())
  monkeypatch.setenv("EMU_NATIVE_REPLAY", "0")   # (the workers take what the compiled replay does not: here, everything)
  from emu.amd import timing
  monkeypatch.setattr(timing, "POOL", pool)
  try:
    cycles = boxmuller_cycles("EMU_REPLAY_JOBS", ("0", "1"))
    assert cycles["0"] == cycles["1"] and pool.failure is None and pool.workers
  finally: pool.close()

def test_default_jobs(monkeypatch):
  monkeypatch.setenv("EMU_REPLAY_JOBS", "3")
  assert replay_pool.default_jobs() == 3
  monkeypatch.delenv("EMU_REPLAY_JOBS")
  assert 0 <= replay_pool.default_jobs() <= 8
  monkeypatch.setenv("EMU_REPLAY_JOBS", "many")
  with pytest.raises(ValueError, match="EMU_REPLAY_JOBS='many'"): replay_pool.default_jobs()

def test_an_interrupt_mid_exchange_stops_the_pool(pool):
  # a Ctrl-C while the workers hold jobs would leave their answers in the pipes for the next caller to read as its own
  js = jobs()
  def interrupted(job): raise KeyboardInterrupt
  with pytest.raises(KeyboardInterrupt): pool.ends(js, interrupted)
  assert pool.failure is not None and not pool.workers
  assert pool.ends(js, here) == [here(j) for j in js]

def test_a_second_caller_replays_its_own_jobs(pool):
  js = jobs()
  local = []
  def replay(job):
    local.append(job)
    return here(job)
  with pool._lock: assert pool.ends(js, replay) == [here(j) for j in js]   # (another thread is using the workers)
  assert len(local) == len(js) and not pool.workers

def test_a_forked_child_leaves_the_parents_workers_alone(pool):
  import os
  js = jobs()
  assert pool.ends(js, here) == [here(j) for j in js] and pool.workers
  parents = [w.pid for w in pool.workers]
  r, w = os.pipe()
  if (pid := os.fork()) == 0:   # the child replays (with workers of its own) and reports whether it used its parent's
    ok = pool.ends(js, here) == [here(j) for j in js] and all(x.pid not in parents for x in pool.workers)
    pool.close()
    os.write(w, b"1" if ok else b"0"); os._exit(0)
  os.close(w)
  assert os.read(r, 1) == b"1"
  os.waitpid(pid, 0)
  assert [x.pid for x in pool.workers] == parents and all(x.poll() is None for x in pool.workers)
  assert pool.ends(js, here) == [here(j) for j in js]

def test_workers_that_cannot_start_cost_only_time(pool, monkeypatch):
  monkeypatch.setattr(replay_pool.sys, "executable", "/nonexistent/python")
  js = jobs()
  assert pool.ends(js, here) == [here(j) for j in js]
  assert "starting workers" in pool.failure and not pool.workers

def test_a_ctrl_c_to_the_process_group_leaves_the_workers_to_the_parent(pool):
  # a terminal's Ctrl-C reaches the workers too; whether to stop is the parent's decision (its own interrupt stops the pool)
  import os, signal, time
  js = jobs()
  assert pool.ends(js, here) == [here(j) for j in js]
  time.sleep(0.5)   # (the workers have set up their signal handling before their first answer; this waits out any lag)
  for w in pool.workers: os.kill(w.pid, signal.SIGINT)
  time.sleep(0.2)
  assert all(w.poll() is None for w in pool.workers)
  assert pool.ends(js, here) == [here(j) for j in js] and pool.failure is None
