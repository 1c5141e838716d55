"""The `test.mockgpu` import hook: the names tinygrad imports resolve to this package, and nothing else under `test` moves."""
import os, subprocess, sys, textwrap
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MOCKGPU_DIR = os.path.join(REPO, "mockgpu")

def run_py(code:str, cwd:str, **env) -> subprocess.CompletedProcess:
  return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=cwd, capture_output=True, text=True, timeout=60,
                        env={**os.environ, **env})

@pytest.fixture
def checkout(tmp_path):
  """A folder shaped like a tinygrad checkout: its own test package with a test/mockgpu that must lose to ours."""
  (tmp_path / "test" / "mockgpu").mkdir(parents=True)
  (tmp_path / "test" / "__init__.py").write_text("")
  (tmp_path / "test" / "helpers.py").write_text("CHECKOUT = True\n")
  (tmp_path / "test" / "mockgpu" / "__init__.py").write_text("raise RuntimeError('the checkout mockgpu was imported')\n")
  return tmp_path

def test_resolves_to_this_package_from_any_folder(tmp_path):
  r = run_py("import test.mockgpu.hook as m, mockgpu.hook as h; print(m.__file__); print(m is h)", cwd=str(tmp_path))
  assert r.returncode == 0, r.stderr
  path, same = r.stdout.split()
  assert path == os.path.join(MOCKGPU_DIR, "hook.py") and same == "True"

def test_stdlib_test_package_untouched(tmp_path):
  r = run_py("import test, test.support; print(test.support.__file__)", cwd=str(tmp_path))
  assert r.returncode == 0, r.stderr
  assert "mockgpu" not in r.stdout and os.path.join("test", "support") in r.stdout

def test_wins_over_checkout_and_leaves_its_tests(checkout):
  r = run_py("import test.helpers, test.mockgpu as m; print(test.helpers.CHECKOUT, m.__file__)", cwd=str(checkout))
  assert r.returncode == 0, r.stderr
  flag, path = r.stdout.split()
  assert flag == "True" and path.startswith(MOCKGPU_DIR)

def test_pytest_in_checkout(checkout):
  (checkout / "test" / "test_uses_mock.py").write_text(textwrap.dedent(f"""
    def test_it():
      import test.mockgpu as m, test.helpers
      assert m.__file__.startswith({MOCKGPU_DIR!r}) and test.helpers.CHECKOUT
  """))
  r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "test/test_uses_mock.py"], cwd=str(checkout),
                     capture_output=True, text=True, timeout=120)
  assert r.returncode == 0, r.stdout + r.stderr

def test_pytest_plugin_installs_hook(tmp_path):
  # drop the finder the .pth installed, then load the plugin module the way pytest's entry point does
  r = run_py("""
    import sys
    from mockgpu import hook
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, hook.MockgpuFinder)]
    assert not hook.installed()
    import mockgpu.pytest_plugin
    import test.mockgpu
    print(hook.installed())
  """, cwd=str(tmp_path))
  assert r.returncode == 0 and r.stdout.strip() == "True", r.stderr

def test_launcher_runs_script_with_hook(tmp_path):
  (tmp_path / "s.py").write_text("import sys, test.mockgpu as m; print(m.__file__, sys.argv[1:])\n")
  r = subprocess.run([sys.executable, "-m", "mockgpu", "run", "s.py", "a", "b"], cwd=str(tmp_path), capture_output=True, text=True, timeout=60,
                     env={**os.environ})
  assert r.returncode == 0, r.stderr
  assert r.stdout.startswith(MOCKGPU_DIR) and "['a', 'b']" in r.stdout

def test_opt_out(tmp_path):
  r = run_py("import test.mockgpu", cwd=str(tmp_path), TINYGRAD_EMU_HOOK="0")
  assert r.returncode != 0 and "No module named 'test.mockgpu'" in r.stderr
