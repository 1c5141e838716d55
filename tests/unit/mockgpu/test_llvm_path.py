"""mockgpu.llvm_path: LLVM_PATH is pointed at a newer libLLVM only when DEV's AMD arch needs one tinygrad would not load."""
import io, os, subprocess, sys
import pytest
from emu import llvm_libs
from mockgpu import llvm_path
from mockgpu.doctor import newest_system_llvm

def test_llvm_major_from_names():
  assert llvm_path.llvm_major("/usr/lib/x86_64-linux-gnu/libLLVM-22.so") == 22
  assert llvm_path.llvm_major("/nonexistent/libLLVM.so.19.1") == 19
  assert llvm_path.llvm_major("/nonexistent/libfoo.so") is None

@pytest.mark.parametrize("dev", ["MOCKKFD+AMD:LLVM:gfx1100", "MOCKKFD+AMD:LLVM:gfx942", "AMD:LLVM:gfx950", "MOCKKFD+AMD"])
def test_left_alone_when_not_needed(dev, monkeypatch):
  monkeypatch.setattr(llvm_libs, "tinygrad_llvm", lambda env=None: "/x/libLLVM-19.so")
  env = {"DEV": dev}
  assert llvm_path.select(env, out=io.StringIO()) is None and "LLVM_PATH" not in env

def test_user_setting_wins():
  env = {"DEV": "MOCKKFD+AMD:LLVM:gfx950", "LLVM_PATH": "/my/libLLVM-19.so"}
  assert llvm_path.select(env, out=io.StringIO()) is None and env["LLVM_PATH"] == "/my/libLLVM-19.so"

def test_gfx950_gets_newer_llvm(monkeypatch):
  monkeypatch.setattr(llvm_libs, "tinygrad_llvm", lambda env=None: "/x/libLLVM-19.so")
  monkeypatch.setattr(llvm_libs, "newest_system_llvm", lambda: "/x/libLLVM-22.so")
  env, out = {"DEV": "MOCKKFD+AMD:LLVM:gfx950"}, io.StringIO()
  assert llvm_path.select(env, out=out) == "/x/libLLVM-22.so" == env["LLVM_PATH"]
  assert out.getvalue().count("\n") == 1 and "LLVM_PATH=/x/libLLVM-22.so" in out.getvalue()

def test_nothing_newer_available(monkeypatch):
  monkeypatch.setattr(llvm_libs, "tinygrad_llvm", lambda env=None: "/x/libLLVM-19.so")
  monkeypatch.setattr(llvm_libs, "newest_system_llvm", lambda: "/x/libLLVM-19.so")
  env = {"DEV": "MOCKKFD+AMD:LLVM:gfx950"}
  assert llvm_path.select(env, out=io.StringIO()) is None and "LLVM_PATH" not in env

@pytest.mark.skipif((n := newest_system_llvm()) is None or llvm_path.llvm_major(n) < 20, reason="needs libLLVM >= 20 on the machine")
def test_tinygrad_compiles_gfx950_through_the_mock():
  code = "from tinygrad import Tensor; print((Tensor([1.0, 2.0]) * 3).tolist())"
  env = {k: v for k, v in os.environ.items() if k != "LLVM_PATH"} | {"DEV": "MOCKKFD+AMD:LLVM:gfx950"}
  r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
  assert r.returncode == 0, r.stderr[-2000:]
  assert r.stdout.strip().endswith("[3.0, 6.0]")
  if (llvm_path.llvm_major(llvm_path.tinygrad_llvm() or "") or 0) < 20: assert "mockgpu: gfx950 needs LLVM >= 20" in r.stderr
