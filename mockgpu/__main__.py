"""`python -m mockgpu` (also the `mockgpu` console script).

  doctor             what this machine can run: tinygrad, libLLVM and its AMD targets, the import hook; the fix for what is missing
  run SCRIPT [ARGS]  run a Python script with the `test.mockgpu` hook installed (for interpreters without the .pth hook)
"""
from __future__ import annotations
import argparse, os, runpy, sys

def _run(args) -> int:
  from mockgpu import hook
  if not hook.install(): print("mockgpu: TINYGRAD_EMU_HOOK=0 is set; running without the hook", file=sys.stderr)
  sys.argv = [args.script, *args.args]
  sys.path.insert(0, os.path.dirname(os.path.abspath(args.script)))
  runpy.run_path(args.script, run_name="__main__")
  return 0

def main(argv:list[str]|None=None) -> int:
  parser = argparse.ArgumentParser(prog="mockgpu", description="tinygrad-emu's mock GPU drivers")
  sub = parser.add_subparsers(dest="cmd", required=True)
  sub.add_parser("doctor", help="check tinygrad, libLLVM, AMD targets and the import hook; print fixes")
  run = sub.add_parser("run", help="run a script with the test.mockgpu hook installed")
  run.add_argument("script")
  run.add_argument("args", nargs=argparse.REMAINDER)
  args = parser.parse_args(argv)
  if args.cmd == "doctor":
    from mockgpu.doctor import doctor
    return doctor()
  return _run(args)

if __name__ == "__main__": sys.exit(main())
