"""`python -m mockgpu.upstream`: run a tinygrad checkout's own test suite on the mock GPUs.

  python -m mockgpu.upstream --tinygrad PATH [--dev MOCKKFD+AMD:LLVM:gfx1100] [PYTEST ARGS ...] TESTS ...

pytest runs in a child interpreter whose working directory is the checkout (so the checkout's `tinygrad` is the one
imported, ahead of any installed wheel), with DEV set and the `test.mockgpu` hook installed before pytest starts (so this
package wins over the checkout's own `test/mockgpu`). pytest's output streams through unchanged; afterwards the results are
read back from a junit-xml file and summarised. The exit status is pytest's, and non-zero whenever a test failed.
"""
from __future__ import annotations
import argparse, os, subprocess, sys, tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_DEV = "MOCKKFD+AMD:LLVM:gfx1100"
ROOT = Path(__file__).resolve().parents[1]
# the child: hook first, then pytest; argv[1:] are pytest's arguments
# the hook imports mockgpu before pytest can register its pytest11 plugin for assertion rewriting; that is harmless
_REWRITE_WARNING = "ignore:Module already imported so cannot be rewritten; mockgpu:pytest.PytestAssertRewriteWarning"
_CHILD = "import sys; from mockgpu import hook; hook.install(); import pytest; sys.exit(pytest.main(sys.argv[1:]))"

@dataclass
class Results:
  """Outcome of a run, per test as junit names it ("dotted.module.Class::test")."""
  passed: list[str] = field(default_factory=list)
  failed: list[str] = field(default_factory=list)   # failures and errors
  skipped: list[str] = field(default_factory=list)

def parse_junit(path:str|Path) -> Results:
  """Read pytest's junit-xml report: a testcase with <failure>/<error> failed, with <skipped> was skipped, else passed."""
  res = Results()
  for case in ET.parse(path).getroot().iter("testcase"):
    tid = f"{case.get('classname', '')}::{case.get('name', '')}"
    kinds = {child.tag for child in case}
    (res.failed if kinds & {"failure", "error"} else res.skipped if "skipped" in kinds else res.passed).append(tid)
  return res

def summary(res:Results) -> str:
  """The lines printed after the run: counts, then every failed test."""
  lines = [f"mockgpu.upstream: {len(res.passed)} passed, {len(res.failed)} failed, {len(res.skipped)} skipped"]
  lines += [f"  FAILED {t}" for t in res.failed]
  return "\n".join(lines)

def child_env(dev:str, env:dict|None=None) -> dict:
  """The child's environment: DEV, and this repository importable (after the checkout, which is the working directory)."""
  e = dict(os.environ if env is None else env)
  e["DEV"] = dev
  e["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [e.get("PYTHONPATH")])])
  e.pop("TINYGRAD_EMU_HOOK", None)  # the hook is the point of this runner
  return e

def run(tinygrad:str|Path, pytest_args:list[str], dev:str=DEFAULT_DEV) -> tuple[int, Results]:
  """Run pytest with `pytest_args` inside the checkout at `tinygrad`; returns (exit status, results)."""
  checkout = Path(tinygrad).resolve()
  if not (checkout / "tinygrad").is_dir(): raise FileNotFoundError(f"{checkout} is not a tinygrad checkout (no tinygrad/ package in it)")
  with tempfile.TemporaryDirectory(prefix="mockgpu-upstream-") as tmp:
    junit = Path(tmp) / "junit.xml"
    cmd = [sys.executable, "-c", _CHILD, f"--junitxml={junit}", "-o", "junit_family=xunit1", "-W", _REWRITE_WARNING, *pytest_args]
    rc = subprocess.run(cmd, cwd=checkout, env=child_env(dev)).returncode
    res = parse_junit(junit) if junit.exists() else Results()
  return (rc if rc != 0 else int(bool(res.failed))), res

def main(argv:list[str]|None=None) -> int:
  parser = argparse.ArgumentParser(prog="python -m mockgpu.upstream", description=__doc__.split("\n")[0],
                                   epilog="Arguments not listed here (test paths, -k, -x, -n 2, ...) are passed to pytest.")
  parser.add_argument("--tinygrad", required=True, help="path of the tinygrad checkout whose tests run")
  parser.add_argument("--dev", default=DEFAULT_DEV, help=f"DEV for the tests (default {DEFAULT_DEV})")
  args, pytest_args = parser.parse_known_args(argv)
  rc, res = run(args.tinygrad, pytest_args, args.dev)
  print(summary(res), flush=True)
  return rc

if __name__ == "__main__": sys.exit(main())
