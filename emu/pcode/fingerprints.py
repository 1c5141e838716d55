"""Fingerprints of the vendor pseudocode each override stands in for.

An override (a corrected text in PCODE_FIXES, a hand-written op, an executor-owned op) replaces the wheel's text for its opcode,
so a correction AMD or tinygrad makes upstream would be shadowed without anyone noticing. `fix_fingerprints.json` records, per
ISA family and opcode, a hash of the vendor text that was there when the override was written; `stale()` lists every
override whose vendor text has changed since (or that has no fingerprint yet). After reviewing such an override against the
new text, `python -m emu.pcode fingerprints --write` records the new fingerprints.
"""
from __future__ import annotations
import hashlib, json, pathlib
from emu.pcode import compiler, overrides

PATH = pathlib.Path(__file__).with_name("fix_fingerprints.json")
FAMILIES = ("rdna3", "rdna4", "cdna")

def fingerprint(text:str) -> str: return hashlib.sha256(text.encode()).hexdigest()[:12]

def current() -> dict[str, dict[str, str]]:
  """{family: {'Enum.OPCODE': fingerprint of the vendor text}} for every overridden opcode that has vendor text in the wheel."""
  out: dict[str, dict[str, str]] = {}
  for arch in FAMILIES:
    table = compiler.pcode_table(arch)
    for op, text in table.items():
      if overrides.fixed_pcode(op, arch) is None and overrides.lookup(arch, op, arch) is None and op.name not in overrides.EXECUTOR_RUN: continue
      out.setdefault(arch, {})[f"{type(op).__name__}.{op.name}"] = fingerprint(text)
  return out

def recorded() -> dict[str, dict[str, str]]: return json.loads(PATH.read_text())

def stale(now:dict|None=None, then:dict|None=None) -> list[str]:
  """'family Enum.OPCODE' of every override whose vendor text differs from the recorded fingerprint or has none recorded, and of
  every recorded fingerprint whose opcode is no longer overridden."""
  now, then = current() if now is None else now, recorded() if then is None else then
  changed = {f"{a} {k}" for a, t in now.items() for k, h in t.items() if then.get(a, {}).get(k) != h}
  return sorted(changed | {f"{a} {k}" for a, t in then.items() for k in t if k not in now.get(a, {})})

def write():
  """Record the current fingerprints (after reviewing every stale override)."""
  PATH.write_text(json.dumps(current(), indent=1, sort_keys=True) + "\n")
