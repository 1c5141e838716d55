"""Fuzz target registry: name -> Target. Target modules in fuzz/targets/ register themselves on import."""
from __future__ import annotations
import importlib, pkgutil, random
from dataclasses import dataclass
from typing import Any, Callable

@dataclass(frozen=True)
class Target:
  """A fuzz target. Cases are JSON-serialisable so they can be saved and replayed.

  generate(rng) -> case;  check(case) -> None, or raises fuzz.finding.Finding;
  minimise(case, fails) -> smaller case, where fails(candidate) is True while the candidate still shows the same finding.
  """
  name: str
  generate: Callable[[random.Random], Any]
  check: Callable[[Any], None]
  minimise: Callable[[Any, Callable[[Any], bool]], Any]
  doc: str = ""

TARGETS: dict[str, Target] = {}

def register(t:Target) -> Target:
  """Add a target to the registry (names must be unique)."""
  assert t.name not in TARGETS, f"duplicate fuzz target {t.name}"
  TARGETS[t.name] = t
  return t

def load_all() -> dict[str, Target]:
  """Import every module in fuzz.targets so that they register, and return the registry."""
  import fuzz.targets
  for m in pkgutil.iter_modules(fuzz.targets.__path__): importlib.import_module(f"fuzz.targets.{m.name}")
  return TARGETS

def get(name:str) -> Target:
  """Look up a target by name, loading target modules on first use."""
  if name not in TARGETS: load_all()
  if name not in TARGETS: raise KeyError(f"unknown fuzz target {name!r}; known: {', '.join(sorted(TARGETS))}")
  return TARGETS[name]
