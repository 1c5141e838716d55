"""emu.bench's warm-up (`settle`): the timed runs must see code as native as many earlier runs leave it, so the warm-up goes on
while a region still runs on the numpy path gathering heat, not only while compiles are queued."""
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.rdna3.ins import v, v_add_f32_e32, v_mul_f32_e32
from emu import native
from emu.amd import regions, run_program
from emu.bench import settle

pytestmark = pytest.mark.skipif(not native.available(), reason=f"no native code here: {native.NATIVE.why}")

def test_settle_waits_for_a_region_that_gathers_heat_over_many_rounds(monkeypatch):
  # 40 VALU instructions: hot once 90 + 8 * 40 = 410 -> 400 instructions ran on the numpy path, 10 dispatches of one wave; the
  # compile itself happens in the dispatch that makes it hot (no background job a round could see queued)
  monkeypatch.setattr(regions, "BACKGROUND", False)
  monkeypatch.setattr(regions, "REGION_HOT", 90)
  monkeypatch.setattr(regions, "REGION_HOT_PER_INSTR", 8)
  monkeypatch.setattr(regions, "REGION_HOT_MAX", 400)
  monkeypatch.delenv("EMU_REGIONS", raising=False)
  monkeypatch.setenv("EMU_CHAINS", "0")   # (a region a call: Region.run says whether it ran natively)
  prog = [(v_add_f32_e32 if k % 2 else v_mul_f32_e32)(v[2 + k % 7], v[1], v[2 + (k + 3) % 7]) for k in range(40)]
  x = np.arange(32, dtype=np.float32) / 7   # (an ad hoc scale keeps these code bytes apart from other tests' regions)
  native_calls, real = [], regions.Region.run
  monkeypatch.setattr(regions.Region, "run", lambda self, m, ws, budget=None: (r := real(self, m, ws, budget), native_calls.append(r is not None))[0])
  run = lambda: run_program(prog, vgprs={r: x + r for r in range(1, 9)})
  assert settle(run, most=30)
  native_calls.clear()
  run()
  assert native_calls == [True], "the region is native in the first timed run"


def test_an_unknown_workload_is_an_error_not_an_empty_run(capsys):
  import pytest
  from emu import bench
  with pytest.raises(SystemExit): bench.main(["--workloads", "valu,replay"])
  assert "unknown workload replay" in capsys.readouterr().err
