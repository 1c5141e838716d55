"""Leave-one-kernel-out validation of the timing model: fit the costs the replay reads on every captured kernel but one, score
that one with them, for each kernel in turn (`python -m emu.timing compare --loo`). A family with more than FOLDS kernels (the
microbenchmark captures: hundreds) is scored FOLDS-fold instead: its kernels are dealt into FOLDS groups, a sweep's kernels
(`mb_x_n4`, `mb_x_n8`: one series) always in the same group, and each group is scored with costs fitted on the others.

A kernel is a program name on one ISA family (its runs and its other captures count as one kernel: none of them may be in the
training set when it is scored). Each capture is run on the emulator once (`replay.Prepared`); a candidate set of costs only
re-times the recorded instruction streams. The fitted costs are FITTED, the Params fields the replay reads (latencies, the
launch); instruction classes and port costs stay the calibrated ones. The fit is a coordinate descent from the calibrated
values over a grid of multiples (FACTORS, and +-1/+-2 for small values), two passes, minimising first the non-DRAM issue deltas'
errors (each capped at ERROR_CAP cycles, `score`) and then the sum of |log(emulated / hardware cycles)| over kernels (the launch
costs only show there). Scores use emu.timing.compare's pairing, so they read like its report."""
from __future__ import annotations
import dataclasses, math, multiprocessing, os, re
from typing import Callable
from emu.amd.arch import get_spec
from emu.amd.timing import PARAMS
from emu.timing.compare import KernelResult, pair
from emu.timing.replay import Prepared
from emu.timing.traces import TracedKernel

FITTED = ("launch", "launch_kfd", "valu_dep", "trans_dep", "vgpr_to_mem", "vgpr_to_lds", "smem_lat", "vmem_load_lat", "vmem_store_lat",
          "store_next", "store_valu", "lds_lat", "barrier_release", "branch_dep", "branch_taken", "valu_queue", "valu_raw", "trans_raw",
          "trans_queue", "trans_result", "pipe_hold", "salu_lat", "sgpr_to_mem")
FOLDS = 5
FACTORS = (0.5, 0.7, 0.85, 1.0, 1.15, 1.3, 1.5, 2.0)
PASSES = 2

@dataclasses.dataclass
class Case:
  """One capture of a kernel, run once, with where it came from."""
  trace: str
  kernel: TracedKernel
  prepared: Prepared
  @property
  def key(self) -> tuple[str, str]: return get_spec(self.kernel.arch).family, self.kernel.name

ERROR_CAP = 10   # cycles: a delta further off counts as this far (a mechanism the model lacks must not steer the fit)

def score(results:list[KernelResult]) -> tuple[int, float]:
  """(sum over non-DRAM deltas of their error in cycles, capped at ERROR_CAP; sum over kernels of |log(emu / hw cycles)|): what
  the fit minimises, in that order. Not the count outside +-TOLERANCE: that one rewards costs that move errors just inside the
  tolerance (a VALU result latency of 3 puts both the 1- and the 5-cycle issues of a dependent chain within 2 cycles)."""
  errors = sum(min(abs(d.error), ERROR_CAP) for r in results for d in r.deltas if not d.dram)
  ratio = sum(abs(math.log(r.emu_cycles / r.hw_cycles)) for r in results if r.emu_cycles > 0 and r.hw_cycles > 0)
  return errors, ratio

def evaluate(cases:list[Case], params) -> list[KernelResult]:
  """Every case re-timed with `params` and paired with its hardware trace."""
  return [pair(c.kernel, c.prepared.retime(params), c.trace) for c in cases]

def candidates(value:int) -> list[int]:
  """The values the descent tries for a cost now at `value`."""
  out = {max(0, round(value * f)) for f in FACTORS}
  if value <= 20: out |= {max(0, value + d) for d in (-2, -1, 1, 2)}
  return sorted(out)

_TRAINING: list[Case] = []   # the cases a fit's worker processes score (inherited when they fork)

def _score_share(job:tuple) -> tuple[int, float]:
  params, k, n = job
  return score(evaluate(_TRAINING[k::n], params))

def fit(cases:list[Case], start, progress:Callable[[str], None]|None=None):
  """The Params (starting from `start`) that minimise `score` over `cases`, by coordinate descent over FITTED. Each candidate is
  scored over the cases split between one process per core (forked: they share the prepared replays), the scores summed."""
  global _TRAINING
  _TRAINING, jobs = cases, min(os.cpu_count() or 1, 8, len(cases))
  pool = multiprocessing.get_context("fork").Pool(jobs) if jobs > 1 and "fork" in multiprocessing.get_all_start_methods() else None
  def total(params) -> tuple[int, float]:
    if pool is None: return score(evaluate(cases, params))
    parts = pool.map(_score_share, [(params, k, jobs) for k in range(jobs)])
    return sum(p[0] for p in parts), sum(p[1] for p in parts)
  try:
    best, best_score = start, total(start)
    for _ in range(PASSES):
      for name in FITTED:
        for value in candidates(getattr(best, name)):
          if value == getattr(best, name): continue
          trial = dataclasses.replace(best, **{name: value})
          if (s := total(trial)) < best_score: best, best_score = trial, s
        if progress is not None: progress(f"{name} {getattr(best, name)}")
  finally:
    if pool is not None: pool.terminate()
  return best

def series(name:str) -> str:
  """The sweep a kernel belongs to: its name without a trailing `_n<count>`."""
  return re.sub(r"_n\d+$", "", name)

def folds(keys:list[tuple[str, str]]) -> list[list[tuple[str, str]]]:
  """The held-out groups of one family's kernels: each kernel alone, or (more than FOLDS kernels) FOLDS groups dealt by series."""
  if len(keys) <= FOLDS: return [[k] for k in keys]
  rank = {s: n for n, s in enumerate(sorted({series(k[1]) for k in keys}))}
  return [g for f in range(FOLDS) if (g := [k for k in keys if rank[series(k[1])] % FOLDS == f])]

def leave_one_out(cases:list[Case], progress:Callable[[str], None]|None=None) -> list[tuple[tuple[str, str], list[KernelResult], object]]:
  """For each kernel (family, name): its captures scored with costs fitted on the other kernels of its family (those outside its
  group, `folds`), and those costs. A family with one kernel has nothing to fit on: it is scored with the calibrated costs."""
  out = []
  for family in sorted({c.key[0] for c in cases}):
    for group in folds(sorted({c.key for c in cases if c.key[0] == family})):
      train = [c for c in cases if c.key[0] == family and c.key not in group]
      start = PARAMS[family]
      if progress is not None: progress(f"{family} {group[0][1]}{f' and {len(group) - 1} more' if len(group) > 1 else ''}: "
                                        f"fitting on {len(train)} captures")
      params = fit(train, start, progress) if train else start
      out += [(key, evaluate([c for c in cases if c.key == key], params), params) for key in group]
  return out

def format_loo(scored:list, calibrated:dict[tuple[str, str], list[KernelResult]]) -> str:
  """Text report: per kernel and per family, the leave-one-out scores beside the calibrated costs' (in-sample) ones."""
  from emu.timing.compare import class_rows, shares
  lines = [f"  {'family':6} {'kernel':22} {'captures':>8} {'n':>6} {'LOO ±2':>7} {'calib ±2':>8}  LOO ratios"]
  by_family: dict[str, tuple[list, list]] = {}
  for key, results, _ in scored:
    ok = [r for r in results if not r.error]
    n, _, loo = shares([d for r in ok for d in r.deltas if not d.dram])
    _, _, cal = shares([d for r in calibrated[key] if not r.error for d in r.deltas if not d.dram])
    ratios = sorted(r.ratio for r in ok if r.hw_cycles)
    span = f"{ratios[0]:.2f}-{ratios[-1]:.2f}" if ratios else "-"
    lines.append(f"  {key[0]:6} {key[1][:22]:22} {len(results):8d} {n:6d} {loo:7.1%} {cal:8.1%}  {span}")
    fam = by_family.setdefault(key[0], ([], []))
    fam[0].extend(ok); fam[1].extend(r for r in calibrated[key] if not r.error)
  for family, (loo, cal) in sorted(by_family.items()):
    lines.append(f"== {family}: leave-one-kernel-out (calibrated costs in brackets)")
    cal_rows = {c: w for c, _, _, w in class_rows(cal)}
    lines += [f"  {c:14} {n:5d} {w:7.1%} ({cal_rows.get(c, float('nan')):6.1%})" for c, n, _, w in class_rows(loo)]
  return "\n".join(lines)
