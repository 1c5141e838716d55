"""The doctor reports what is really there: a missing libLLVM is a problem with a fix, a present one lists compiling targets."""
import glob, os, subprocess, sys
import pytest

def doctor(**env) -> subprocess.CompletedProcess:
  return subprocess.run([sys.executable, "-m", "mockgpu", "doctor"], capture_output=True, text=True, timeout=300, env={**os.environ, **env})

def test_llvm_absent_reports_problem_and_fix():
  # LLVM_PATH naming a file that is no libLLVM makes tinygrad's loader fail exactly as on a machine without LLVM
  r = doctor(LLVM_PATH=sys.executable)
  assert r.returncode == 1
  llvm_line = next(l for l in r.stdout.splitlines() if "libLLVM" in l and "[" in l)
  assert "[!!]" in llvm_line and "cannot load" in llvm_line
  assert "apt-get install -y libllvm19" in r.stdout
  assert "target gfx1100" not in r.stdout

LLVM19 = sorted(glob.glob("/usr/lib/*/libLLVM-19.so"))
@pytest.mark.skipif(not LLVM19, reason="libLLVM-19 is not installed on this machine (bench.sh installs it when run as root)")
def test_llvm_present_lists_targets():
  r = doctor(LLVM_PATH=LLVM19[0])
  assert "[ok] libLLVM                19." in r.stdout
  for arch in ("gfx1100", "gfx1201", "gfx942"): assert any(f"[ok]   target {arch}" in l for l in r.stdout.splitlines()), r.stdout
  gfx950 = next(l for l in r.stdout.splitlines() if "target gfx950" in l)
  assert "[!!]" in gfx950 and "does not know the processor" in gfx950   # LLVM 19 predates gfx950
  assert "[ok] import hook" in r.stdout
