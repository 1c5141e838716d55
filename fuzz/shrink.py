"""A greedy shrinker shared by the targets: keep taking the first simpler candidate that still fails."""
from __future__ import annotations
from typing import Any, Callable, Iterable

def greedy(case:Any, fails:Callable[[Any], bool], simpler:Callable[[Any], Iterable[Any]], budget:int=500) -> Any:
  """Return a case no candidate of `simpler` can improve on while `fails` still holds, using at most `budget` calls of `fails`."""
  improved = True
  while improved and budget > 0:
    improved = False
    for cand in simpler(case):
      if budget <= 0: break
      budget -= 1
      if cand != case and fails(cand):
        case, improved = cand, True
        break
  return case
