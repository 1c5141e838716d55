"""`python -m mockgpu.upstream` against a fake tinygrad checkout made in tmp_path: its tinygrad/ is the installed package, its
test/ package has its own test/mockgpu (which must lose to ours) and a test file with a passing, a failing and a skipped test."""
import subprocess, sys, textwrap
from pathlib import Path
import pytest
import tinygrad
from mockgpu import upstream

TESTS = """
import unittest
import numpy as np
from tinygrad import Tensor, Device

class TestFake(unittest.TestCase):
  def test_add_on_the_mock(self):
    self.assertEqual(type(Device["AMD"].iface).__name__, "MOCKKFDIface")
    np.testing.assert_equal((Tensor([1, 2, 3], device="AMD") + 1).numpy(), [2, 3, 4])
  def test_fails(self): self.assertEqual(Tensor([1], device="AMD").tolist(), [2])
  @unittest.skip("skipped on purpose")
  def test_skipped(self): pass
"""

@pytest.fixture
def checkout(tmp_path:Path) -> Path:
  (tmp_path / "tinygrad").symlink_to(Path(tinygrad.__file__).parent)
  (tmp_path / "test" / "mockgpu").mkdir(parents=True)
  (tmp_path / "test" / "__init__.py").write_text("")
  (tmp_path / "test" / "mockgpu" / "__init__.py").write_text("")
  (tmp_path / "test" / "mockgpu" / "mockgpu.py").write_text("raise ImportError('the checkout\\'s own test.mockgpu was imported')\n")
  (tmp_path / "test" / "test_fake.py").write_text(textwrap.dedent(TESTS))
  return tmp_path

def test_runs_the_checkouts_tests_on_the_mock_and_summarises(checkout:Path):
  p = subprocess.run([sys.executable, "-m", "mockgpu.upstream", "--tinygrad", str(checkout), "test/test_fake.py", "-p", "no:randomly"],
                     capture_output=True, text=True, timeout=300, cwd=Path(upstream.__file__).parents[1])
  assert p.returncode == 1, p.stdout[-3000:] + p.stderr[-3000:]
  assert "1 failed, 1 passed, 1 skipped" in p.stdout   # pytest's own output streams through
  assert "mockgpu.upstream: 1 passed, 1 failed, 1 skipped\n  FAILED test.test_fake.TestFake::test_fails" in p.stdout, p.stdout[-3000:]

def test_rejects_a_path_that_is_not_a_checkout(tmp_path:Path):
  with pytest.raises(FileNotFoundError, match="not a tinygrad checkout"): upstream.run(tmp_path, [])
