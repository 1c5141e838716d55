"""Run a snippet under unmodified tinygrad in a fresh interpreter with DEV set before tinygrad is imported.

tinygrad parses DEV once, at import, so every scenario gets its own process. The snippet's stdout is returned; it reports
results as JSON on its last line.
"""
from __future__ import annotations
import importlib.util, json, os, subprocess, sys, textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LLVM19 = "/usr/lib/x86_64-linux-gnu/libLLVM-19.so"
ARCH = os.environ.get("EMU_TEST_ARCH", "gfx1100")   # the emulated GPU the integration tests run on (gfx1100 | gfx1201)
PRELUDE = "import sys; sys.path.insert(0, %r)\nfrom mockgpu import hook; hook.install()\n" % str(ROOT)

def emulator_available() -> bool:
  """Whether the AMD emulator's dispatch entry point exists (kernels need it; copies do not)."""
  return importlib.util.find_spec("emu.amd.gpu") is not None

def run(code:str, dev:str=f"MOCKKFD+AMD:LLVM:{ARCH}", env:dict|None=None, timeout:int=300) -> subprocess.CompletedProcess:
  """Run `code` with DEV=`dev` (default: the arch of env EMU_TEST_ARCH); returns the completed process (check=False)."""
  e = {**os.environ, "DEV": dev, "PYTHONPATH": str(ROOT), **(env or {})}
  if Path(LLVM19).exists(): e.setdefault("LLVM_PATH", LLVM19)
  return subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(code)], capture_output=True, text=True, timeout=timeout, env=e)

def run_json(code:str, **kwargs):
  """Run `code` and parse the JSON its last stdout line prints; fails with the child's stderr when it did not succeed."""
  p = run(code, **kwargs)
  assert p.returncode == 0, f"child failed ({p.returncode}):\n{p.stderr[-4000:]}"
  return json.loads(p.stdout.strip().splitlines()[-1])
