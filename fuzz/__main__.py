"""Command line: `python -m fuzz TARGET [--time S] [--cases N] [--seed N] [--findings DIR]`, `python -m fuzz replay FILE...`,
`python -m fuzz list`."""
from __future__ import annotations
import argparse, pathlib, sys
from fuzz import registry, runner
from fuzz.finding import Classified, Finding, load

DEFAULT_FINDINGS = pathlib.Path(__file__).parent / "findings"

def replay(paths:list[str]) -> int:
  """Re-run saved reproducers; returns the number that still fail."""
  failing = 0
  for p in paths:
    rec = load(p)
    f = runner.outcome(registry.get(rec["target"]), rec["case"])
    print(f"{p}: {'passes' if f is None else f.label if isinstance(f, Classified) else 'STILL FAILS ' + str(f)}")
    failing += isinstance(f, Finding)
  return failing

def main(argv:list[str]|None=None) -> int:
  """Entry point; returns the process exit code (1 when a replayed finding still fails)."""
  argv = sys.argv[1:] if argv is None else argv
  if argv[:1] == ["replay"]:
    ap = argparse.ArgumentParser(prog="python -m fuzz replay", description="re-run saved findings")
    ap.add_argument("files", nargs="+", help="reproducer JSON files written by a fuzz run")
    return int(replay(ap.parse_args(argv[1:]).files) > 0)
  if argv[:1] == ["list"]:
    for name, t in sorted(registry.load_all().items()): print(f"{name:16s} {t.doc}")
    return 0
  ap = argparse.ArgumentParser(prog="python -m fuzz", description="run a fuzz target for a time budget (targets: `python -m fuzz list`)")
  ap.add_argument("target", help="target name, see `python -m fuzz list`")
  ap.add_argument("--time", type=float, default=60.0, help="wall-clock budget in seconds (default 60)")
  ap.add_argument("--seed", type=int, default=0, help="seed of the case sequence (default 0); same seed, same cases")
  ap.add_argument("--findings", type=pathlib.Path, default=DEFAULT_FINDINGS, help=f"folder for minimised reproducers (default {DEFAULT_FINDINGS})")
  ap.add_argument("--every", type=float, default=3.0, help="seconds between progress lines (default 3)")
  ap.add_argument("--cases", type=int, default=None, help="stop after this many cases (default: only the time budget)")
  args = ap.parse_args(argv)
  try: target = registry.get(args.target)
  except KeyError as e:
    print(e.args[0], file=sys.stderr)
    return 2
  st = runner.run(target, args.time, args.seed, args.findings, every=args.every, max_execs=args.cases)
  for label, n in sorted(st.classified.items()): print(f"{n:6d} {label}")
  for p in st.findings.values(): print(p)
  return 0

if __name__ == "__main__": sys.exit(main())
