"""The demo's orchestration and its numpy references (checked on tinygrad's PYTHON backend, an independent UOp interpreter)."""
import os, subprocess, sys

def demo(*args, timeout=600):
  return subprocess.run([sys.executable, "-m", "mockgpu.demo", *args], capture_output=True, text=True, timeout=timeout, env={**os.environ})

def test_references_agree_with_tinygrad_python_backend():
  r = demo("--devices", "reference", "--programs", "elementwise,reduction,conv2d,softmax,mlp_train_step")
  rows = [l.split() for l in r.stdout.splitlines() if l.startswith("reference")]
  assert [row[1] for row in rows] == ["elementwise", "reduction", "conv2d", "softmax", "mlp_train_step"], r.stdout + r.stderr
  assert all(row[2] == "yes" for row in rows), r.stdout
  assert r.returncode == 0

def test_unknown_device_is_a_usage_error():
  r = demo("--devices", "gfx9999")
  assert r.returncode == 2 and "unknown device/program" in r.stderr

def test_broken_device_reports_reason_not_crash():
  # an interface name tinygrad does not know: the device cannot open, and the table says why
  sys_env = {**os.environ, "DEV": "NOSUCH+AMD"}
  r = subprocess.run([sys.executable, "-m", "mockgpu.demo", "--child", "elementwise"], capture_output=True, text=True, timeout=300, env=sys_env)
  assert r.returncode == 0 and '"unavailable"' in r.stdout

def test_gfx1100_rows_correct_with_emulator_counters():
  r = demo("--devices", "gfx1100", "--programs", "elementwise,matmul")
  rows = {row[1]: row for row in (l.split() for l in r.stdout.splitlines()) if row and row[0] == "gfx1100"}
  assert set(rows) == {"elementwise", "matmul"}, r.stdout + r.stderr
  for row in rows.values():
    assert row[2] == "yes" and int(row[3]) >= 1 and int(row[4].replace(",", "")) > 0, row   # correct, kernels, wave-instructions
  assert r.returncode == 0

def test_unimplemented_devices_say_why(monkeypatch, capsys):
  import mockgpu.demo as demo_mod
  from mockgpu.demo import DEVICES, unavailable_reason
  from emu.amd.arch import SPECS
  for d in DEVICES:
    arch = d.dev.split(":")[-1]
    if d.dev.startswith("MOCKKFD+AMD"): assert (unavailable_reason(d) is None) == SPECS[arch].supported, d
    if d.dev.startswith("MOCKPCI+AMD"): assert (unavailable_reason(d) is None) == (arch in ("gfx1100", "gfx1201")), d
  cdna_am = next(d for d in DEVICES if d.name == "gfx942-am")
  assert "CDNA over PCI is out of scope" in unavailable_reason(cdna_am)
  monkeypatch.setattr(demo_mod, "DEVICES", [cdna_am])
  assert demo_mod.main(["--devices", "gfx942-am"]) == 1   # nothing ran: the demo does not claim success
  assert "not available" in capsys.readouterr().out
