"""`python -m emu.timing compare TRACE.pkl [TRACE.pkl ...] [--arch gfxNNNN]` or `python -m emu.timing compare --all [--dir DIR]`.

Runs traced kernels on the emulator and prints the timing comparison (emu.timing.compare). --all takes every pickle under
DIR (default: the repository's data/sqtt) and prints one report per folder that holds captures (an arch folder, at any depth);
a capture that cannot be read is reported as such and the rest go on."""
from __future__ import annotations
import argparse, pickle, sys, time
from pathlib import Path
from emu.timing.compare import KernelResult, compare_file, format_report

DEFAULT_DIR = Path(__file__).resolve().parents[2] / "data" / "sqtt"
PROGRESS_AFTER = 2.0   # seconds into a run after which each kernel's start is reported on stderr

def main(argv:list[str]|None=None) -> int:
  """CLI entry point; returns the exit status."""
  ap = argparse.ArgumentParser(prog="python -m emu.timing", description="compare emulated timing with real SQTT traces")
  sub = ap.add_subparsers(dest="cmd", required=True)
  c = sub.add_parser("compare", help="compare traced kernels with the emulator")
  c.add_argument("traces", nargs="*", help="trace pickles")
  c.add_argument("--all", action="store_true", help="every trace under --dir, one report per arch")
  c.add_argument("--dir", default=str(DEFAULT_DIR), help="trace folder for --all (default %(default)s)")
  c.add_argument("--arch", help="the traced GPU's target (e.g. gfx1201) for captures that do not record it")
  c.add_argument("--worst", type=int, default=8, help="worst offenders to list")
  c.add_argument("--loo", action="store_true", help="leave-one-kernel-out: every capture under --dir scored with costs fitted on the "
                 "other kernels of its ISA family (emu.timing.fit)")
  args = ap.parse_args(argv)
  if not args.all and not args.traces and not args.loo: ap.error("give trace pickles, --all or --loo")
  if args.loo: return loo(Path(args.dir), args.arch, ap)
  started = time.monotonic()
  def progress(done:int, total:int, name:str):   # long comparisons (big captures replay for a while) report on stderr
    if time.monotonic() - started > PROGRESS_AFTER: print(f"  ... {name}: kernel {done + 1}/{total}", file=sys.stderr, flush=True)
  def compare(path:Path, keep_going:bool) -> list:
    try: return compare_file(path, args.arch, progress)
    except (OSError, EOFError, pickle.UnpicklingError, ValueError) as e:
      if not keep_going: ap.exit(2, f"{ap.prog}: error: cannot read trace {path}: {e}\n")
      return [KernelResult(path.name, "(capture)", "", 0, error=f"cannot read the capture: {type(e).__name__}: {e}")]
  if args.all:
    root = Path(args.dir)
    if not root.is_dir(): ap.error(f"no trace folder {root}")
    # every folder that holds captures, at any depth (data/sqtt/ARCH/, or COMMIT/ARCH/ for captures kept by their source's version)
    folders = sorted({p.parent for p in root.rglob("*.pkl")})
    if not folders: ap.error(f"no trace pickles under {root}")
    for folder in folders:
      title = str(folder.relative_to(root)) if folder != root else folder.name
      print(format_report([r for f in sorted(folder.glob("*.pkl")) for r in compare(f, True)], title, args.worst))
  for t in args.traces: print(format_report(compare(Path(t), False), t, args.worst))
  return 0

def loo(root:Path, arch:str|None, ap) -> int:
  """--loo: prepare every capture under `root` (those that cannot run are listed), then the leave-one-out report."""
  from emu.timing.compare import pair
  from emu.timing.fit import Case, format_loo, leave_one_out
  from emu.timing.replay import Prepared
  from emu.timing.traces import load_trace
  if not root.is_dir(): ap.error(f"no trace folder {root}")
  cases, calibrated = [], {}
  for path in sorted(root.rglob("*.pkl")):
    try: kernels = load_trace(path, arch)
    except (OSError, EOFError, pickle.UnpicklingError, ValueError) as e:
      print(f"  {path.relative_to(root)}: cannot read the capture: {e}", file=sys.stderr); continue
    for k in kernels:
      try: case = Case(path.name, k, Prepared(k))
      except Exception as e:
        print(f"  {path.relative_to(root)} {k.name}: not replayed: {type(e).__name__}: {str(e)[:120]}", file=sys.stderr); continue
      cases.append(case)
      calibrated.setdefault(case.key, []).append(pair(k, case.prepared.replay, path.name))
  print(f"  {len(cases)} captures of {len(calibrated)} kernels prepared", file=sys.stderr, flush=True)
  folds = leave_one_out(cases, lambda msg: print(f"  ... {msg}", file=sys.stderr, flush=True))
  print(format_loo(folds, calibrated))
  return 0

if __name__ == "__main__": raise SystemExit(main())
