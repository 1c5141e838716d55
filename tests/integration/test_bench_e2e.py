"""`python -m mockgpu.bench` (the end-to-end benchmark) runs a program on the mock and on the reference device and reports what
its README row shows; it asserts no speed (those are measured, never tested)."""
import pytest
from tinygrad_run import emulator_available
from mockgpu import bench

pytestmark = pytest.mark.skipif(not emulator_available(), reason="emu.amd.gpu (the AMD emulator) is not available")

def test_one_program_on_both_devices():
  r = bench.run(["axpy"], "MOCKKFD+AMD", "CPU:LLVM", repeat=1)["axpy"]
  assert r["emulated"]["seconds"] > 0 and r["reference"]["seconds"] > 0 and r["ratio"] == r["emulated"]["seconds"] / r["reference"]["seconds"]
  # a*b+c over 2M floats, at most 4 floats per lane (b128 accesses): at least 2M / (32 * 4) wave32 waves, each running at least
  # three loads and a store; the reference device counts none
  assert r["emulated"]["wave_instructions"] >= 4 * (2 << 20) // (32 * 4) and r["reference"]["wave_instructions"] is None
  assert r["emulated"]["peak_rss_mib"] > 0 and r["reference"]["peak_rss_mib"] > 0

def test_an_unknown_program_is_refused(capsys):
  with pytest.raises(SystemExit): bench.main(["--programs", "nope"])
  assert "unknown program(s) nope" in capsys.readouterr().err

def test_the_suite_workload_splits_the_mocks_time_by_part():
  from mockgpu import bench_suite
  r = bench_suite.run("MOCKKFD+AMD", "CPU:LLVM", 1, ops=["add", "sum_axis1"])
  emu, ref = r["emulated"], r["reference"]
  assert set(emu["ops"]) == set(ref["ops"]) == {"add", "sum_axis1"} and r["ratio"] == emu["seconds"] / ref["seconds"]
  mock = emu["mock"]   # profiled on the mock only; the emulator's parts add up to its total
  assert ref["mock"] is None and mock["emulated_s"] > 0 and mock["execute_s"] > 0
  # nothing read the GPU's clock (no PROFILE, no DEBUG=2): no dispatch's timing replay ran
  assert mock["dispatches"] >= 2 and mock["deferred"] == mock["dispatches"]
  assert abs(mock["decode_s"] + mock["execute_s"] + mock["timing_s"] - mock["emulated_s"]) < 1e-9
  assert "ratio" in bench_suite.report(r, "MOCKKFD+AMD", "CPU:LLVM")

def test_steady_compiles_every_region_in_the_first_mock_run_only(monkeypatch):
  from mockgpu import bench_suite
  seen = []
  def measure(dev, ops=None, timeout=1800, eager=False):
    seen.append((dev, eager, bench_suite.profile_env(dev, eager).get("EMU_REGIONS")))
    return {"seconds": 1.0, "ops": {}, "mock": None}
  monkeypatch.setattr(bench_suite, "measure", measure)
  monkeypatch.delenv("EMU_REGIONS", raising=False)
  bench_suite.run("MOCKKFD+AMD", "CPU:LLVM", 2, steady=True)
  assert seen == [("MOCKKFD+AMD", True, "eager"), ("CPU:LLVM", False, None)] + [("MOCKKFD+AMD", False, None), ("CPU:LLVM", False, None)] * 2
