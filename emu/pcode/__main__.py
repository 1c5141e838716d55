"""CLI: `python -m emu.pcode report [ARCH...]` (coverage and cold compile time), `python -m emu.pcode show ARCH OPCODE` (where one
opcode's semantics come from) and `python -m emu.pcode fingerprints [--write]` (overrides whose vendor text changed)."""
from __future__ import annotations
import argparse, collections, os, sys, tempfile, time
from emu.pcode.abi import Unsupported
from emu.pcode import compiler, overrides

def report(arch:str) -> dict:
  """Cold-compile every op of an arch (fresh cache dir); print and return the counts."""
  old = os.environ.get("EMU_PCODE_CACHE")
  with tempfile.TemporaryDirectory() as d:
    os.environ["EMU_PCODE_CACHE"] = d
    compiler.compile_op.cache_clear()
    ops = compiler.ops_for(arch)
    done, over, bad, times, kinds = 0, 0, collections.defaultdict(list), [], collections.Counter()
    t0 = time.perf_counter()
    for i, op in enumerate(ops):
      t = time.perf_counter()
      try:
        c = compiler.compile_op(arch, op)
        if c.override:
          over += 1
          kinds[override_kind(arch, op, c)] += 1
        else: done += 1
      except Unsupported as e: bad[e.category].append(f"{op.name} ({e.reason[:80]})")
      except Exception as e: bad["crash"].append(f"{op.name} ({type(e).__name__}: {str(e)[:80]})")
      times.append((time.perf_counter() - t, op.name))
      if (i + 1) % 250 == 0: print(f"  {arch}: {i + 1}/{len(ops)}", file=sys.stderr)
    total = time.perf_counter() - t0
  compiler.compile_op.cache_clear()
  if old is None: os.environ.pop("EMU_PCODE_CACHE", None)
  else: os.environ["EMU_PCODE_CACHE"] = old
  nbad = sum(len(v) for v in bad.values())
  print(f"{arch}: {len(ops)} opcodes with pcode, {done} compiled, {over} overridden ({', '.join(f'{n} {k}' for k, n in sorted(kinds.items()))}), "
        f"{nbad} unsupported; cold compile {total:.2f}s")
  for cat, items in sorted(bad.items()):
    print(f"  unsupported ({cat}): {len(items)}")
    for it in items: print(f"    {it}")
  print("  slowest: " + ", ".join(f"{n} {t*1000:.1f}ms" for t, n in sorted(times, reverse=True)[:5]))
  return {"ops": len(ops), "compiled": done, "overridden": over, "kinds": dict(kinds), "unsupported": nbad, "seconds": total}

def override_kind(arch:str, op, c) -> str:
  """The kind of an override: 'executor-owned', 'executor-run', 'corrected' (a fixed vendor text) or 'hand-written'."""
  if c.kind == "executor": return "executor-owned"
  if c.override == overrides.EXECUTOR_RUN.get(op.name): return "executor-run"
  return "corrected" if c.pcode and c.pcode != compiler.pcode_table(arch).get(op) else "hand-written"

def show(arch:str, name:str):
  """Print where one opcode's semantics come from: the vendor pcode, the correction or replacement with its reason, and the
  generated source."""
  ops = [op for op in compiler.ops_for(arch) if op.name == name.upper()]
  if not ops: sys.exit(f"{arch} has no opcode {name}")
  for op in ops:
    vendor = compiler.pcode_table(arch).get(op)
    print(f"=== {arch} {type(op).__name__}.{op.name}\n--- vendor pcode\n{vendor if vendor is not None else '(none in the wheel)'}")
    try: c = compiler.compile_op(arch, op)
    except Unsupported as e:
      print(f"--- unsupported: {e}")
      continue
    print(f"--- semantics: {semantics(arch, op, c)}")
    print(f"--- {c.kind} op; reads {sorted(c.reads)} writes {sorted(c.writes)} widths {c.widths} lane masks {sorted(c.lane_masks)}")
    if c.source: print(c.source)

def semantics(arch:str, op, c=None) -> str:
  """Where an opcode's semantics come from, in one line (a corrected text follows on the next lines)."""
  from emu.pcode import rules
  from emu.pcode.parser import parse
  c = c or compiler.compile_op(arch, op)
  vendor = compiler.pcode_table(arch).get(op)
  if not c.override:
    rules.apply(parse(vendor), used := set())
    return f"the vendor pcode, compiled{' with the rules ' + ', '.join(sorted(used)) + ' (emu.pcode.rules)' if used else ''}"
  kind = override_kind(arch, op, c)
  if kind == "executor-owned": return f"owned by the executor ({c.override})"
  if kind == "executor-run": return f"compiled for its operand metadata only; the executor runs it ({c.override})"
  if kind == "corrected": return f"corrected pcode ({c.override})\n{c.pcode}"
  return f"replaced ({c.override})"

def main(argv=None):
  ap = argparse.ArgumentParser(prog="python -m emu.pcode", description=__doc__)
  sub = ap.add_subparsers(dest="cmd", required=True)
  r = sub.add_parser("report", help="compile every opcode of the archs from a cold cache and summarise")
  r.add_argument("archs", nargs="*", default=["rdna3", "rdna4", "cdna"])
  s = sub.add_parser("show", help="an opcode's vendor pcode, its correction or replacement with the reason, and the generated code")
  s.add_argument("arch")
  s.add_argument("opcode")
  f = sub.add_parser("fingerprints", help="list overrides whose vendor pcode changed since they were written (--write records the current text)")
  f.add_argument("--write", action="store_true")
  a = ap.parse_args(argv)
  if a.cmd == "report":
    for arch in a.archs: report(compiler.arch_name(arch))
  elif a.cmd == "show": show(compiler.arch_name(a.arch), a.opcode)
  else: return fingerprints_cmd(a.write)

def fingerprints_cmd(write:bool) -> int:
  """Print the overrides whose vendor text is not the one they were written against; with `write`, record the current texts."""
  from emu.pcode import fingerprints
  if write:
    fingerprints.write()
    print(f"recorded {sum(len(t) for t in fingerprints.recorded().values())} fingerprints in {fingerprints.PATH}")
    return 0
  stale = fingerprints.stale()
  for s in stale: print(f"stale: {s}")
  print(f"{len(stale)} override(s) to review against the wheel's current pcode" if stale else "every override matches the vendor text it replaces")
  return 1 if stale else 0

if __name__ == "__main__": sys.exit(main())
