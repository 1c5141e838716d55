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
  r = bench_suite.run("MOCKKFD+AMD", "CPU:LLVM", 1, ops=["add", "sum_axis1"], bare="NULL:AMDLLVM:gfx1100")
  assert r["differ"] == []   # the mock's results agree with the CPU's
  emu, ref = r["emulated"], r["reference"]
  # tinygrad alone for gfx1100 (NULL runs nothing; its `.numpy()` reads zeros): timed the same way, no mock profile
  assert set(r["bare"]["ops"]) == {"add", "sum_axis1"} and r["bare"]["seconds"] > 0 and r["bare"]["mock"] is None
  assert "no runtime (NULL:AMDLLVM:gfx1100)" in bench_suite.report(r, "MOCKKFD+AMD", "CPU:LLVM")
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
  def measure(dev, ops=None, timeout=1800, eager=False, caches=None, workload="ops", tinygrad_cache=None, results=None, jobs=1):
    seen.append((dev, eager, bench_suite.profile_env(dev, eager).get("EMU_REGIONS")))
    return {"seconds": 1.0, "ops": {}, "mock": None}
  monkeypatch.setattr(bench_suite, "measure", measure)
  monkeypatch.delenv("EMU_REGIONS", raising=False)
  bench_suite.run("MOCKKFD+AMD", "CPU:LLVM", 2, steady=True)
  assert seen == [("MOCKKFD+AMD", True, "eager"), ("CPU:LLVM", False, None)] + [("MOCKKFD+AMD", False, None), ("CPU:LLVM", False, None)] * 2

def test_bare_is_timed_in_turn_with_the_others_and_may_copy_out(monkeypatch, capsys):
  from mockgpu import bench_suite
  seen = []
  def measure(dev, ops=None, timeout=1800, eager=False, caches=None, workload="ops", tinygrad_cache=None, results=None, jobs=1):
    seen.append((dev, bench_suite.profile_env(dev, eager).get("NULL_ALLOW_COPYOUT")))
    return {"seconds": 1.0, "ops": {}, "compile_s": 0.0, "mock": None}
  monkeypatch.setattr(bench_suite, "measure", measure)
  monkeypatch.delenv("NULL_ALLOW_COPYOUT", raising=False)
  res = bench_suite.run("MOCKKFD+AMD", "CPU:LLVM", 1, bare="NULL:AMDLLVM:gfx1100")
  assert seen == [("MOCKKFD+AMD", None), ("CPU:LLVM", None), ("NULL:AMDLLVM:gfx1100", "1")] * 2 and res["bare"]["dev"] == "NULL:AMDLLVM:gfx1100"
  with pytest.raises(SystemExit): bench.main(["--bare", "NULL:AMDLLVM:gfx1100"])   # (only with --suite)
  assert "--bare goes with --suite" in capsys.readouterr().err

def test_fresh_gives_the_runs_their_own_empty_caches_and_reports_each_runs_own_time(monkeypatch, tmp_path):
  import os
  from mockgpu import bench_suite
  seen, own = [], iter([3.0, 2.0, 1.5])
  def measure(dev, ops=None, timeout=1800, eager=False, caches=None, workload="ops", tinygrad_cache=None, results=None, jobs=1):
    env = bench_suite.profile_env(dev, eager, caches, tinygrad_cache)
    seen.append((dev, env.get("EMU_STEP_CACHE"), env.get("EMU_PCODE_CACHE"), env.get("CACHEDB"), caches is not None and os.listdir(caches) == []))
    return {"seconds": 1.0, "ops": {}, "compile_s": 0.0, "mock": {"emulated_s": next(own)} if dev.startswith("MOCK") else None}
  monkeypatch.setattr(bench_suite, "measure", measure)
  monkeypatch.setenv("EMU_STEP_CACHE", str(tmp_path / "mine"))
  monkeypatch.delenv("EMU_PCODE_CACHE", raising=False)
  monkeypatch.delenv("CACHEDB", raising=False)
  res = bench_suite.run("MOCKKFD+AMD", "CPU:LLVM", 2, fresh=True)
  folder = os.path.dirname(seen[0][1])
  # one folder: the emulator's caches for the mock's runs only, a compile cache of its own for each device's runs
  assert [s[1:4] for s in seen] == [(f"{folder}/steps", f"{folder}/pcode", f"{folder}/tinygrad-0.db"),
                                    (str(tmp_path / "mine"), None, f"{folder}/tinygrad-1.db")] * 3
  assert seen[0][4] and not os.path.exists(folder)   # empty at the start, removed at the end
  assert res["own"] == [3.0, 2.0, 1.5] and "3.00, 2.00, 1.50 s" in bench_suite.report(res, "MOCKKFD+AMD", "CPU:LLVM")
  with pytest.raises(ValueError): bench_suite.run("MOCKKFD+AMD", "CPU:LLVM", 1, steady=True, fresh=True)

def test_the_dtype_workload_checks_every_result_against_the_reference():
  from mockgpu import bench_suite
  names = ["cast_fp8e5m2_int64", "cast_uint64_bfloat16", "mod_int8", "div_float16", "sum_fp8e4m3fnuz"]
  r = bench_suite.run("MOCKKFD+AMD", "CPU:LLVM", 1, ops=names, workload="dtype")
  assert r["workload"] == "dtype" and set(r["emulated"]["ops"]) == set(names) and r["differ"] == []
  assert "every program agrees with CPU:LLVM" in bench_suite.report(r, "MOCKKFD+AMD", "CPU:LLVM")
  mock = r["emulated"]["mock"]   # the emulator's one-off work, by kind
  assert all(f"{k}_s" in mock for k in ("pcode", "step build", "step cache", "region lower", "region compile", "native load"))

def test_agree_follows_the_programs_tolerance():
  import numpy as np
  from mockgpu.bench_suite import agree
  exact = np.array([1, 2, 3], dtype=np.int8)
  assert agree(exact, exact.copy(), 0.0) and not agree(exact, np.array([1, 2, 4], dtype=np.int8), 0.0)
  assert not agree(exact, exact[:2], 0.0)   # shapes differ
  # two units of half's epsilon relative to each value, or to the largest magnitude: 18.8125 against 18.796875 is one half ulp
  half = 2.0 ** -10
  assert agree(np.array([-18.8125, 0.001]), np.array([-18.796875, 0.0]), half)
  assert not agree(np.array([-18.8125 + 0.1, 0.0]), np.array([-18.796875, 0.0]), half)
  assert agree(np.array([np.nan, np.inf]), np.array([np.nan, np.inf]), half) and not agree(np.array([np.nan]), np.array([1.0]), half)

def test_differing_names_the_programs_whose_results_disagree(tmp_path):
  import numpy as np
  from mockgpu.bench_suite import differing
  ok, bad = np.array([1.0, 2.0]), np.array([1.0, 2.5])
  np.savez(want := tmp_path / "want.npz", **{"a#0": ok, "a!tolerance": np.float64(0.0), "b#0": ok, "b#1": ok, "b!tolerance": np.float64(1e-3)})
  np.savez(got := tmp_path / "got.npz", **{"a#0": ok, "b#0": ok, "b#1": bad, "a!tolerance": np.float64(0.0), "b!tolerance": np.float64(1e-3)})
  assert differing(str(got), str(want)) == ["b"]
  np.savez(short := tmp_path / "short.npz", **{"a#0": ok})   # a run the emulated device did not save
  assert differing(str(short), str(want)) == ["b"]

def test_jobs_deal_the_programs_over_processes_run_at_once(capsys):
  from mockgpu import bench_suite
  names = ["add", "sub", "mul", "neg", "abs"]
  r = bench_suite.run("MOCKKFD+AMD", "CPU:LLVM", 1, ops=names, jobs=2)
  assert r["jobs"] == 2 and set(r["emulated"]["ops"]) == set(r["reference"]["ops"]) == set(names) and r["differ"] == []
  assert r["emulated"]["mock"]["dispatches"] >= len(names)   # both children's dispatches, summed
  assert "2 fresh processes at once" in bench_suite.report(r, "MOCKKFD+AMD", "CPU:LLVM")
  with pytest.raises(SystemExit): bench.main(["--suite", "--jobs", "0"])
  assert "--jobs takes a positive count" in capsys.readouterr().err
