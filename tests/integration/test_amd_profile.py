"""`MOCKGPU_PROFILE`: the mock's host-time profile of a real tinygrad program (kernels named after tinygrad's programs, the
emulator's phases, the mock's parts). Checks structure and bookkeeping only; no time is asserted to be small or large."""
import json
import pytest
from tinygrad_run import emulator_available, run

pytestmark = pytest.mark.skipif(not emulator_available(), reason="emu.amd.gpu (the AMD emulator) is not available")

PROGRAM = """
import numpy as np
from tinygrad import Tensor
a = Tensor(np.arange(64, dtype=np.float32)).realize()   # from host data: a graph of constants alone may run on the CPU
for _ in range(3): (a * 2 + 1).realize()
print((a.sum()).item())
"""

def test_profile_names_each_kernel_and_splits_the_emulators_host_time(tmp_path):
  out = tmp_path / "profile.json"
  p = run(PROGRAM, env={"MOCKGPU_PROFILE": str(out)})
  assert p.returncode == 0, p.stderr[-3000:]
  assert "2016.0" in p.stdout.splitlines()                          # sum(0..63): the program ran correctly with the profile on
  assert "mockgpu profile:" in p.stderr and "mock parts (host s):" in p.stderr
  data = json.loads(out.read_text())
  by_label = {k["label"]: k for k in data["kernels"]}
  ew = [k for name, k in by_label.items() if name.startswith("E_")]   # tinygrad names the elementwise kernel E_<sizes>
  assert len(ew) == 1 and ew[0]["dispatches"] == 3, by_label.keys()   # the same program three times: one row
  assert any(name.startswith("r_") for name in by_label)              # the reduction
  for k in data["kernels"]:
    h = k["host"]
    assert k["wave_instructions"] > 0 and h["total"] >= h["decode"] + h["observe"] >= 0
  assert data["parts"]["PM4"] > 0 and data["wall_s"] >= sum(k["host"]["total"] for k in data["kernels"])

def test_no_profile_without_the_setting():
  p = run(PROGRAM)
  assert p.returncode == 0 and "mockgpu profile" not in p.stderr
