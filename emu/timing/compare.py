"""Wave-by-wave, instruction-by-instruction comparison of emulated and hardware issue timing.

For every traced wave the issue-time deltas between consecutive instructions (the first one measured from the wave's
start) are paired with the emulator's deltas for the wave the model places on the same SIMD. Deltas the emulator
attributes to global memory (VMEM/SMEM completions, store drain at s_endpgm, wave launch) are kept apart as DRAM-bound:
their hardware values depend on cache state the traces do not record; the accuracy targets apply to the rest.
"""
from __future__ import annotations
from dataclasses import dataclass, field
from typing import Callable
from pathlib import Path
from emu.amd.arch import get_spec
from emu.timing.replay import Replay, replay
from emu.amd.sqtt_layouts import LAYOUTS
from emu.timing.traces import TracedKernel, load_trace

CLASSES = ("salu", "valu", "trans", "smem", "vmem_load", "vmem_store", "lds", "branch", "waitcnt", "barrier", "nop", "other", "end", "launch")
TOLERANCE = 2

@dataclass
class Delta:
  """One consecutive-issue delta of a wave: class of the later instruction, its PC and text, hardware and emulated cycles."""
  cls: str
  pc: int
  inst: str
  hw: int
  emu: int
  dram: bool
  @property
  def error(self) -> int: return self.emu - self.hw

@dataclass
class KernelResult:
  """Comparison of one traced kernel. error: why it could not be emulated (then no deltas)."""
  trace: str
  name: str
  arch: str
  hw_cycles: int
  emu_cycles: int = 0
  deltas: list[Delta] = field(default_factory=list)
  unmatched: int = 0
  error: str | None = None
  @property
  def ratio(self) -> float: return self.emu_cycles / self.hw_cycles if self.hw_cycles else float("nan")

def compare_kernel(k:TracedKernel, trace:str="") -> KernelResult:
  """Replay one traced kernel and pair its per-wave deltas with the hardware's."""
  try: rep = replay(k)
  except Exception as e:   # an arch or instruction the emulator does not run yet: reported, not fatal
    return KernelResult(trace, k.name, k.arch, k.cycles, error=f"{type(e).__name__}: {e}")
  return pair(k, rep, trace)

def pair(k:TracedKernel, rep:Replay, trace:str="") -> KernelResult:
  """The comparison of a traced kernel with one replay of it: per traced wave, each issue's delta beside the emulator's."""
  res = KernelResult(trace, k.name, k.arch, k.cycles)
  res.emu_cycles = rep.stats.cycles
  tick = LAYOUTS[get_spec(k.arch).family].tick   # compared at the capture's timestamp resolution (CDNA: 4-cycle ticks)
  for hw, w in zip(sorted(k.waves, key=lambda w: w.start or 0), rep.traced):
    emu = rep.waves.get(w, [])
    prev_hw, prev_emu = hw.start, rep.starts[w] // tick * tick
    for i, iss in enumerate(hw.issues):
      if i >= len(emu) or emu[i][0] != iss.pc: res.unmatched += len(hw.issues) - i; break
      pc, cyc, cls, dram = emu[i]
      cyc = cyc // tick * tick
      if prev_hw is not None:
        res.deltas.append(Delta("launch" if i == 0 else cls, pc, repr(iss.inst), iss.cycle - prev_hw, cyc - prev_emu, dram or i == 0))
      prev_hw, prev_emu = iss.cycle, cyc
  return res

def compare_file(path:str|Path, arch:str|None=None, progress:Callable[[int, int, str], None]|None=None) -> list[KernelResult]:
  """Compare every traced kernel of one pickle (arch: the traced GPU's target when the capture does not record it).
  progress(done, total, name) is called before each kernel."""
  kernels, out = load_trace(path, arch), []
  for i, k in enumerate(kernels):
    if progress is not None: progress(i, len(kernels), k.name)
    out.append(compare_kernel(k, Path(path).name))
  return out

def shares(deltas:list[Delta]) -> tuple[int, float, float]:
  """(count, share exactly equal, share within ±TOLERANCE cycles)."""
  if not deltas: return 0, float("nan"), float("nan")
  return len(deltas), sum(d.error == 0 for d in deltas) / len(deltas), sum(abs(d.error) <= TOLERANCE for d in deltas) / len(deltas)

def class_rows(results:list[KernelResult]) -> list[tuple[str, int, float, float]]:
  """Per class (non-DRAM deltas), then all DRAM-bound deltas: (class, count, exact share, ±2 share)."""
  deltas = [d for r in results for d in r.deltas]
  rows = [(c, *shares([d for d in deltas if d.cls == c and not d.dram])) for c in CLASSES]
  rows = [r for r in rows if r[1]]
  return rows + [("ALL non-DRAM", *shares([d for d in deltas if not d.dram])), ("DRAM-bound", *shares([d for d in deltas if d.dram]))]

def worst(results:list[KernelResult], n:int=8) -> list[tuple[KernelResult, Delta]]:
  """The n non-DRAM deltas with the largest absolute error (exact matches are never listed)."""
  pairs = [(r, d) for r in results for d in r.deltas if not d.dram and d.error]
  return sorted(pairs, key=lambda p: -abs(p[1].error))[:n]

def format_report(results:list[KernelResult], title:str, n_worst:int=8) -> str:
  """Text report: per-kernel ratios, per-class shares, worst offenders."""
  targets = sorted({r.arch for r in results if r.arch} - {Path(title).name})
  lines = [f"== {title}" + (f" (traced GPU: {', '.join(targets)})" if targets and not title.endswith(".pkl") else "")]
  for r in results:
    if r.error: lines.append(f"  {r.trace:28} {r.name:18} not available: {r.error}"); continue
    lines.append(f"  {r.trace:28} {r.name:18} hw {r.hw_cycles:6d} emu {r.emu_cycles:6d} ratio {r.ratio:5.2f}  deltas {len(r.deltas)}"
                 + (f" unmatched {r.unmatched}" if r.unmatched else ""))
  ok = [r for r in results if not r.error]
  if ok and any(r.deltas for r in ok):
    lines.append(f"  {'class':14} {'n':>5} {'exact':>7} {'±2':>7}")
    lines += [f"  {c:14} {n:5d} {e:7.1%} {w:7.1%}" for c, n, e, w in class_rows(ok)]
    bad = worst(ok, n_worst)
    lines.append("  worst non-DRAM deltas:" + ("" if bad else " none (every one exact)"))
    lines += [f"    {r.trace}:{r.name} pc={d.pc:#x} {d.inst[:48]:48} hw {d.hw:5d} emu {d.emu:5d}" for r, d in bad]
  return "\n".join(lines)
