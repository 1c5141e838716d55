"""The integration suite runs on EMU_TEST_ARCH's GPU; where tinygrad cannot compile for that arch (gfx950 needs libLLVM >= 20), its
tests skip with the reason, except test_amd_archs.py, which covers every arch and skips per arch, and the NVIDIA tests (test_nv*.py),
which need no LLVM."""
import pytest
from tinygrad_run import ARCH, llvm_missing

def pytest_collection_modifyitems(config, items):
  if (why := llvm_missing(ARCH)) is None: return
  for item in items:
    if item.path.parent.name == "integration" and item.path.name != "test_amd_archs.py" \
       and not item.path.name.startswith("test_nv"): item.add_marker(pytest.mark.skip(reason=why))
