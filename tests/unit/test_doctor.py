"""The doctor reports what is really there: a missing libLLVM is a problem with a fix, a present one lists compiling targets."""
import glob, os, shutil, subprocess, sys
import pytest

def doctor(unset:tuple=(), **env) -> subprocess.CompletedProcess:
  base = {k: v for k, v in os.environ.items() if k not in unset}
  return subprocess.run([sys.executable, "-m", "mockgpu", "doctor"], capture_output=True, text=True, timeout=300, env={**base, **env})

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

LLVM22 = sorted(glob.glob("/usr/lib/*/libLLVM-22.so"))
@pytest.mark.skipif(not (LLVM19 and LLVM22), reason="needs both libLLVM-19 and libLLVM-22 installed (bench.sh installs them when run as root)")
def test_gfx950_counts_the_llvm_the_mock_selects():
  # tinygrad alone picks LLVM 19 (it searches only up to 21), but with LLVM_PATH unset the mock selects LLVM 22 for gfx950
  r = doctor(unset=("LLVM_PATH",))
  gfx950 = next(l for l in r.stdout.splitlines() if "target gfx950" in l)
  assert "[ok]" in gfx950 and LLVM22[0] in gfx950 and "the mock selects" in gfx950, r.stdout

def test_compiled_replay_line():
  # without a C compiler on PATH the timing model replays in Python: said, with the fix; switched off, said without a fix
  bare = os.path.dirname(sys.executable)   # (the interpreter's folder: no clang or cc there)
  r = doctor(PATH=bare)
  replay = [l for l in r.stdout.splitlines() if "compiled CU replay" in l or "fix: apt-get install -y clang" in l]
  assert len(replay) == 2 and "[--]" in replay[0] and "no C compiler" in replay[0], r.stdout
  off = next(l for l in doctor(EMU_NATIVE_REPLAY="0").stdout.splitlines() if "compiled CU replay" in l)
  assert "[--]" in off and "EMU_NATIVE_REPLAY=0" in off

@pytest.mark.skipif(not shutil.which("clang") and not shutil.which("cc"), reason="no C compiler (clang or cc) on PATH")
def test_compiled_replay_builds():
  assert any("[ok] compiled CU replay" in l for l in doctor().stdout.splitlines())

def test_the_am_driver_probe_boots_the_board_over_pci_and_behind_the_usb_bridge():
  from mockgpu.doctor import probe_pci
  for iface in ("MOCKPCI", "MOCKUSB"):
    info = probe_pci("gfx1100", iface)
    assert info.get("arch") == "gfx1100" and info["board"] == "AMD Radeon RX 7900 XTX", (iface, info)
  assert "MOCKUSB+AMD emulates gfx1100, gfx1201 only" in probe_pci("gfx942", "MOCKUSB")["error"]
