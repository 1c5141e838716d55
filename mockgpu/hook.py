"""Makes tinygrad's `test.mockgpu.*` imports resolve to this package.

tinygrad 0.14.0 imports `test.mockgpu.mockgpu` (hcq.py), `test.mockgpu.usb` (usb.py) and `test.mockgpu.cuda`
(ops_cuda.py) when DEV names a MOCK interface. `test` is also the standard library's test package, and a tinygrad
checkout has its own `test/mockgpu`. `install()` puts a finder at the front of `sys.meta_path` that claims exactly
`test.mockgpu` and the names below it and answers with this package's modules — the same module objects as
`mockgpu.*`, so state is never duplicated. Every other `test.*` name is left to the normal import system.

Where it is installed from:
- at interpreter start-up by the `tinygrad_emu_hook.pth` file that `pip install` puts in site-packages (covers
  `DEV=... python script.py` and `python -m pytest` in a tinygrad checkout);
- by the pytest plugin registered under the `pytest11` entry point (covers `pytest` even where .pth files are skipped, e.g. `python -S`);
- by `python -m mockgpu run script.py` for interpreters where neither applies.
Set TINYGRAD_EMU_HOOK=0 to keep the hook out of an interpreter.
"""
from __future__ import annotations
import importlib, importlib.abc, importlib.machinery, importlib.util, os, sys

PREFIX = "test.mockgpu"
PACKAGE = "mockgpu"

class _AliasLoader(importlib.abc.Loader):
  """Loads `test.mockgpu[.x]` as the already-importable `mockgpu[.x]` module object."""
  def __init__(self, target:str): self.target = target
  def create_module(self, spec): return importlib.import_module(self.target)
  def exec_module(self, module): pass  # the target module was executed when it was imported under its own name

class MockgpuFinder(importlib.abc.MetaPathFinder):
  """Claims `test.mockgpu` and its submodules; declines everything else."""
  def find_spec(self, fullname:str, path=None, target=None):
    if fullname != PREFIX and not fullname.startswith(PREFIX + "."): return None
    real = PACKAGE + fullname[len(PREFIX):]
    if (spec:=importlib.util.find_spec(real)) is None: return None
    is_pkg = spec.submodule_search_locations is not None
    return importlib.machinery.ModuleSpec(fullname, _AliasLoader(real), is_package=is_pkg)

def enabled() -> bool:
  """False when the user opted out with TINYGRAD_EMU_HOOK=0."""
  return os.environ.get("TINYGRAD_EMU_HOOK", "1") not in ("0", "false", "no")

def installed() -> bool:
  """Whether the finder is active in this interpreter."""
  return any(isinstance(f, MockgpuFinder) for f in sys.meta_path)

def install() -> bool:
  """Put the finder first in sys.meta_path (idempotent). Drops any `test.mockgpu*` modules imported from elsewhere before."""
  if not enabled(): return False
  if not installed():
    sys.meta_path.insert(0, MockgpuFinder())
    for name in [n for n in sys.modules if n == PREFIX or n.startswith(PREFIX + ".")]:
      if not getattr(sys.modules[name], "__name__", "").startswith(PACKAGE): del sys.modules[name]
  return True
