"""Independent CU replays in worker processes (`EMU_REPLAY_JOBS`), for dispatches that need only their end cycles and replay in
Python (the compiled replay, emu/amd/cu_native.py, is not there: no C compiler, or EMU_NATIVE_REPLAY=0).

A dispatch whose CUs run different workloads (waves whose instruction streams differ with the data: tinygrad's gated blocks,
skipped by a wave whose lanes are all masked off, make most training kernels so) replays each CU workload in turn, ~0.6-1 µs an
instruction in Python, and nothing repeats for `cu_model._Periods` to skip. The workloads are independent, so `ReplayPool.ends` hands
some of them to worker processes while this process replays the rest. Only when there is enough work (`MIN_INSTRUCTIONS`, at
least two workloads) and no timeline is wanted (a worker returns a workload's end cycle, not its issue times).

Workers are `python <this file>` children started on first use and kept for the process's life: each loads emu/amd/cu_model.py
by its path (no package import, so no tinygrad: ~0.1 s to start) and runs the same `simulate_cu`, so the numbers are the same.
Jobs go over pipes, pickled: a stream as its distinct (op, pc) pairs (ops as their fields), a pair per instruction and its codes; a worker
gets all its jobs at once and answers their end cycles; it ignores SIGINT (a terminal's Ctrl-C reaches the whole process group:
the parent decides) and ends when its stdin closes. Any failure (a worker that cannot start or is gone, a broken pipe, an
answer later than `TIMEOUT_S`, an error inside it) stops the pool for this process (`failure` says why) and the jobs still open
replay here: never a different number, at worst the time of doing it alone.
"""
from __future__ import annotations
import atexit, dataclasses, os, pickle, select, struct, subprocess, sys, threading

MIN_INSTRUCTIONS = 200_000   # wave-instructions to replay below which the pipes and pickling cost more than they save
TIMEOUT_S = 600.0            # longest wait for a worker's answer

def default_jobs() -> int:
  """Worker processes: `EMU_REPLAY_JOBS` (0: none), else one less than the CPUs this process may use, at most 8."""
  if (env := os.environ.get("EMU_REPLAY_JOBS")) is not None:
    if not env.strip().isdigit(): raise ValueError(f"EMU_REPLAY_JOBS={env!r}: expected a number of worker processes (0: none)")
    return int(env)
  cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
  return min(8, cpus - 1)

def _send(pipe, obj):
  data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
  pipe.write(struct.pack("<Q", len(data)) + data)
  pipe.flush()

def _receive(pipe):
  head = pipe.read(8)
  if len(head) < 8: raise EOFError("the worker closed its pipe")
  (n,) = struct.unpack("<Q", head)
  data = pipe.read(n)
  if len(data) < n: raise EOFError("the worker's answer was cut short")
  return pickle.loads(data)

def _pack_job(streams:list, wg_of:list[int], passes:int, slots:int, params, fetch:int, ops:dict, table:list, sent:dict) -> tuple:
  """One CU workload for a worker: its waves as stream numbers, each distinct stream (not `sent` before in this message) as its
  distinct (op, pc) pairs (op numbers in `table`, pcs), each instruction's pair and its codes (cu_model.Stream); `ops` numbers
  the distinct ReplayOps of the message (their fields go in `table`)."""
  waves, new = [], []
  for s in streams:
    if (k := sent.get(id(s))) is None:
      k = sent[id(s)] = len(sent)
      numbers = []
      for op in s.distinct:
        if (n := ops.get(id(op))) is None: n = ops[id(op)] = len(table); table.append(dataclasses.astuple(op))
        numbers.append(n)
      new.append((k, numbers, s.at, s.index, s.codes))
    waves.append(k)
  return waves, new, wg_of, passes, slots, dataclasses.asdict(params), fetch

class ReplayPool:
  """The worker processes of this process (see the module docstring)."""
  def __init__(self):
    self.workers: list[subprocess.Popen] = []
    self.failure: str | None = None
    self.pid = os.getpid()   # the process the workers serve (a forked child, e.g. a compile pool's, must not share their pipes)
    self._lock = threading.Lock()

  def ends(self, jobs:list[tuple], replay) -> list[int]:
    """The end cycle of each job (streams, wg_of, passes, slots, params, fetch): `replay(job)` for those this process keeps.
    One caller at a time uses the workers (another thread meanwhile replays its jobs itself)."""
    if self.pid != os.getpid():   # (forked: the workers are the parent's; start afresh, leaving theirs alone)
      self.workers, self.failure, self.pid, self._lock = [], None, os.getpid(), threading.Lock()
    sizes = [sum(len(s) for s in job[0]) for job in jobs]
    if len(jobs) < 2 or sum(sizes) < MIN_INSTRUCTIONS or self.failure is not None or not self._lock.acquire(blocking=False):
      return [replay(job) for job in jobs]
    try:
      if not self._start(default_jobs()): return [replay(job) for job in jobs]
      out = self._shared(jobs, sizes, replay)
    except BaseException as e:   # (an interrupt mid-exchange would leave answers in the pipes for the next caller to misread)
      self._stop(f"interrupted: {type(e).__name__}")
      raise
    finally: self._lock.release()
    return [replay(jobs[j]) if end is None else end for j, end in enumerate(out)]

  def _shared(self, jobs:list[tuple], sizes:list[int], replay) -> list[int | None]:
    """Each job's end cycle, the largest jobs first each to the least loaded of this process and the workers; None where a
    worker failed (the pool is stopped then)."""
    load, share = [0] * (len(self.workers) + 1), [[] for _ in range(len(self.workers) + 1)]   # share[0]: this process's
    for j in sorted(range(len(jobs)), key=lambda j: -sizes[j]):
      k = load.index(min(load))
      share[k].append(j); load[k] += sizes[j]
    out: list[int | None] = [None] * len(jobs)
    asked = []
    try:
      for worker, mine in zip(self.workers, share[1:]):
        if not mine: continue
        ops, table, sent = {}, [], {}
        _send(worker.stdin, (table, [_pack_job(*jobs[j], ops, table, sent) for j in mine]))
        asked.append((worker, mine))
    except (OSError, ValueError) as e:
      self._stop(f"sending jobs: {e}")
    for j in share[0]: out[j] = replay(jobs[j])
    if self.failure is None:
      try:
        for worker, mine in asked:
          if not select.select([worker.stdout], [], [], TIMEOUT_S)[0]: raise TimeoutError(f"no answer within {TIMEOUT_S:.0f} s")
          if isinstance(answer := _receive(worker.stdout), str): raise RuntimeError(answer)
          for j, end in zip(mine, answer): out[j] = end
      except (OSError, EOFError, TimeoutError, RuntimeError, pickle.UnpicklingError) as e:
        self._stop(f"receiving answers: {e}")
    return out

  def _start(self, n:int) -> bool:
    """At least one worker running (started now if need be); False when there are to be none."""
    if n <= 0: return False
    if self.workers: return True
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                                        os.environ.get("PYTHONPATH", "")])}
    try:
      self.workers = [subprocess.Popen([sys.executable, os.path.abspath(__file__)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       stderr=subprocess.DEVNULL, env=env) for _ in range(n)]
    except (OSError, ValueError, TypeError) as e:   # (no usable sys.executable, no fork)
      self._stop(f"starting workers: {e}")
    return bool(self.workers)

  def _stop(self, why:str):
    """No more workers in this process (their jobs replay here), for the reason `why`."""
    self.failure = why
    self.close()

  def close(self):
    """End the workers (at exit; after a failure)."""
    for w in self.workers:
      try: w.kill(); w.wait(timeout=5)
      except (OSError, subprocess.TimeoutExpired): pass
      for pipe in (w.stdin, w.stdout):
        try: pipe.close()
        except OSError: pass
    self.workers = []

POOL = ReplayPool()
atexit.register(lambda: POOL._stop("the process is exiting"))   # (no worker started while it exits)

def serve():
  """A worker's loop: read (op table, jobs) messages from stdin until it closes, answer each with the jobs' end cycles (or an
  error's text)."""
  import importlib.util, signal, types
  signal.signal(signal.SIGINT, signal.SIG_IGN)   # (a terminal's Ctrl-C reaches the whole process group: what it stops is the parent's call)
  spec = importlib.util.spec_from_file_location("replay_worker_cu_model", os.path.join(os.path.dirname(os.path.abspath(__file__)), "cu_model.py"))
  cu = importlib.util.module_from_spec(spec)
  sys.modules[spec.name] = cu   # (dataclasses look their module up by name)
  spec.loader.exec_module(cu)
  stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
  while True:
    try: table, jobs = _receive(stdin)
    except EOFError: return
    try:
      ops = [cu.ReplayOp(*fields) for fields in table]
      answer, streams = [], {}
      for waves, new, wg_of, passes, slots, params, fetch in jobs:
        for k, numbers, at, index, codes in new: streams[k] = cu.Stream([ops[n] for n in numbers], at, index, codes)
        answer.append(cu.simulate_end([streams[k] for k in waves], wg_of, passes, slots, types.SimpleNamespace(**params), fetch))
    except Exception as e:   # (the parent replays these itself)
      answer = f"{type(e).__name__}: {e}"
    _send(stdout, answer)

if __name__ == "__main__": serve()
