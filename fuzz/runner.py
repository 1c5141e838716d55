"""The time-bounded fuzz loop: generate, check, minimise and save findings, report progress."""
from __future__ import annotations
import pathlib, random, time, traceback
from dataclasses import dataclass, field
from typing import Any, Callable
from fuzz.finding import Classified, Finding, finding_id, save
from fuzz.registry import Target

@dataclass
class Stats:
  """What one run did. `findings` maps finding id -> saved reproducer path; `hits` counts every failing case, duplicates included."""
  execs: int = 0
  hits: int = 0
  seconds: float = 0.0
  findings: dict[str, pathlib.Path] = field(default_factory=dict)
  classified: dict[str, int] = field(default_factory=dict)   # Classified label -> cases
  def classes(self) -> str:
    """The classified cases, e.g. `known: ptx-minmax-drops-nan 3, unjudged: undefined under LLVM's flags 1`."""
    return ", ".join(f"{k} {n}" for k, n in sorted(self.classified.items()))
  @property
  def rate(self) -> float: return self.execs / self.seconds if self.seconds else 0.0

def outcome(target:Target, case:Any) -> Finding|Classified|None:
  """Run a target's check: its Finding or Classified, None when the case passed; any other exception is a `harness-crash` finding."""
  try: target.check(case)
  except (Finding, Classified) as f: return f
  except Exception as e:  # a crash outside the target's own classification is still worth a reproducer
    return Finding("harness-crash", "".join(traceback.format_exception_only(e)).strip(), key=(type(e).__name__,))
  return None

def check_case(target:Target, case:Any) -> Finding|None:
  """The Finding a case gives (a classified case is not one), or None."""
  return f if isinstance(f := outcome(target, case), Finding) else None

def minimise(target:Target, case:Any, f:Finding) -> tuple[Any, Finding]:
  """Shrink a failing case while it keeps failing with the same kind and key; returns the smaller case and its finding."""
  def fails(c:Any) -> bool: return (g:=check_case(target, c)) is not None and (g.kind, g.key) == (f.kind, f.key)
  small = target.minimise(case, fails)
  return (small, g) if (g:=check_case(target, small)) is not None and (g.kind, g.key) == (f.kind, f.key) else (case, f)

def run(target:Target, seconds:float, seed:int, findings_dir:pathlib.Path, progress:Callable[[str], None]|None=print,
        every:float=3.0, max_execs:int|None=None) -> Stats:
  """Fuzz `target` for `seconds` of wall time (or `max_execs` cases) from `seed`; distinct findings are minimised and saved."""
  rng, st = random.Random(seed), Stats()
  start = last = time.perf_counter()
  def report(final=False):
    if progress: progress(f"[{st.seconds:6.1f}s] {target.name}: {st.execs} execs ({st.rate:.0f}/s), {len(st.findings)} findings"
                          f" ({st.hits} failing cases){'; ' + st.classes() if st.classified else ''}{' done' if final else ''}")
  while (now:=time.perf_counter()) - start < seconds and (max_execs is None or st.execs < max_execs):
    case_seed = rng.getrandbits(64)
    case = target.generate(random.Random(case_seed))
    st.execs += 1
    if isinstance(f := outcome(target, case), Classified): st.classified[f.label] = st.classified.get(f.label, 0) + 1
    elif f is not None:
      st.hits += 1
      if (fid:=finding_id(target.name, f)) not in st.findings:
        small, sf = minimise(target, case, f)
        st.findings[fid] = path = save(findings_dir, target.name, small, sf, seed=case_seed)
        if progress: progress(f"  finding {sf.kind} {list(map(str, sf.key))}: {sf.detail[:200]}\n    -> {path}")
    if now - last >= every:
      st.seconds, last = now - start, now
      report()
  st.seconds = time.perf_counter() - start
  report(final=True)
  return st
