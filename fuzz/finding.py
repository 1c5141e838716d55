"""Findings: the exception a target's check raises, and their JSON reproducer files."""
from __future__ import annotations
import hashlib, json, pathlib
from dataclasses import dataclass, field
from typing import Any

@dataclass
class Finding(Exception):
  """A property violation. `kind` classifies it (stable across runs, used to dedupe); `detail` is for humans."""
  kind: str
  detail: str
  key: tuple = field(default=())  # extra dedupe key parts (e.g. arch, format, opcode); kind + key names one distinct bug
  def __str__(self): return f"{self.kind}: {self.detail}"

class Classified(Exception):
  """A case that differs from the reference for a known reason, counted but never saved: `label` is `known: <class>` (a known
  bug of the system under test, fuzz/known.py) or `unjudged: <why>` (the program's result is not defined, or tinygrad's other
  backends give what the device gives)."""
  def __init__(self, label:str, detail:str=""):
    self.label, self.detail = label, detail
    super().__init__(f"{label}{': ' + detail if detail else ''}")

def finding_id(target:str, f:Finding) -> str:
  """Short stable id of a distinct finding: the same bug found twice gets the same id."""
  return hashlib.sha1(json.dumps([target, f.kind, *map(str, f.key)]).encode()).hexdigest()[:12]

def save(folder:pathlib.Path, target:str, case:Any, f:Finding, seed:int|None=None) -> pathlib.Path:
  """Write a minimised reproducer as `{folder}/{target}-{kind}-{id}.json` and return its path."""
  folder.mkdir(parents=True, exist_ok=True)
  path = folder / f"{target}-{f.kind}-{finding_id(target, f)}.json"
  path.write_text(json.dumps({"target": target, "kind": f.kind, "key": [str(k) for k in f.key], "detail": f.detail, "seed": seed,
                              "case": case}, indent=1) + "\n")
  return path

def load(path:str|pathlib.Path) -> dict:
  """Read a reproducer file written by `save`."""
  return json.loads(pathlib.Path(path).read_text())
