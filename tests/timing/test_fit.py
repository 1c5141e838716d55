"""Leave-one-kernel-out (emu.timing.fit): a kernel's score never uses a fit that saw it, re-timing with the calibrated costs
gives the calibrated replay, and the score counts what it says. Captures: the repository's data/sqtt (gfx1100)."""
import dataclasses
from pathlib import Path
from emu.amd.timing import PARAMS
from emu.timing import fit
from emu.timing.__main__ import main
from emu.timing.compare import Delta, KernelResult
from emu.timing.replay import Prepared
from emu.timing.traces import load_trace

ROOT = Path(__file__).resolve().parents[2] / "data" / "sqtt" / "gfx1100"

def case(name:str) -> fit.Case:
  (k,) = load_trace(ROOT / name)[:1]
  return fit.Case(name, k, Prepared(k))

def test_retiming_with_the_calibrated_costs_is_the_calibrated_replay():
  c = case("profile_plus_run_0.pkl")
  slower = c.prepared.retime(dataclasses.replace(PARAMS["rdna3"], vmem_load_lat=PARAMS["rdna3"].vmem_load_lat + 1000))
  again = c.prepared.retime(PARAMS["rdna3"])
  assert slower.stats.cycles >= c.prepared.replay.stats.cycles + 1000   # the plus kernel waits on its loads
  assert again.stats.cycles == c.prepared.replay.stats.cycles and again.waves == c.prepared.replay.waves

def test_score_sums_capped_non_dram_errors_and_log_ratios():
  r = KernelResult("t", "k", "gfx1100", hw_cycles=100, emu_cycles=200,
                   deltas=[Delta("valu", 0, "", 5, 5, False), Delta("valu", 4, "", 5, 8, False), Delta("salu", 6, "", 1, 40, False),
                           Delta("vmem_load", 8, "", 500, 9, True)])
  errors, ratio = fit.score([r])
  assert errors == 3 + fit.ERROR_CAP and abs(ratio - 0.6931) < 1e-3   # 3 cycles off, 39 (capped) off, the DRAM delta left out; |log 2|

def test_a_held_out_kernel_is_never_in_its_own_fit(monkeypatch):
  cases = [case("profile_plus_run_0.pkl"), case("profile_empty_run_0.pkl")]
  seen = []
  real = fit.fit
  monkeypatch.setattr(fit, "fit", lambda train, start, progress=None: seen.append({c.key for c in train}) or real(train, start))
  folds = fit.leave_one_out(cases)
  assert [key for key, _, _ in folds] == [("rdna3", "E"), ("rdna3", "E_3")]
  assert seen == [{("rdna3", "E_3")}, {("rdna3", "E")}]
  for key, results, _ in folds: assert [r.name for r in results] == [key[1]] and not results[0].error

def test_a_large_family_is_scored_in_folds_that_keep_a_sweep_together():
  sweep = [("rdna3", f"mb_x_n{n}") for n in (1, 2, 4)]
  keys = sweep + [("rdna3", f"k{i}") for i in range(6)]
  groups = fit.folds(keys)
  assert len(groups) == fit.FOLDS and sorted(k for g in groups for k in g) == sorted(keys)   # each kernel held out exactly once
  assert any(set(g) >= set(sweep) for g in groups)   # a sweep's kernels are never on both sides of a fold
  assert fit.folds(keys[:fit.FOLDS]) == [[k] for k in keys[:fit.FOLDS]]   # a small family: leave-one-kernel-out

def test_the_cli_reports_every_kernel(tmp_path, capsys):
  for name in ("profile_plus_run_0.pkl", "profile_empty_run_0.pkl"): (tmp_path / name).write_bytes((ROOT / name).read_bytes())
  assert main(["compare", "--loo", "--dir", str(tmp_path), "--arch", "gfx1100"]) == 0
  out = capsys.readouterr()
  assert "rdna3  E_3" in out.out and "rdna3  E " in out.out and "leave-one-kernel-out" in out.out
  assert "2 captures of 2 kernels prepared" in out.err

def test_the_docs_state_the_figures_the_accuracy_table_holds():
  # docs/timing.md's leave-one-out table and emu.timing.accuracy (read by the doctor and the DEBUG=2 notice) are the same figures
  from emu.timing import accuracy
  text = (Path(__file__).resolve().parents[2] / "docs" / "timing.md").read_text()
  loo = text[text.index("### Leave-one-kernel-out"):text.index("### Held-out captures")]
  assert f"commit {accuracy.MEASURED['commit']}" in loo and accuracy.MEASURED["date"] in loo and accuracy.MEASURED["command"] in loo
  for family, share in accuracy.WITHIN_2.items():
    row = next(line for line in loo.splitlines() if line.startswith(f"| {family} |"))
    assert f"{share:.1%}" in row, (family, row)

def test_debug_2_says_once_how_far_emulated_times_hold(monkeypatch, capsys):
  from emu.timing import accuracy
  from mockgpu.amd import gpu
  monkeypatch.setattr(gpu, "_noticed", set())
  monkeypatch.setenv("DEBUG", "1")
  gpu.trust_notice("gfx1201")
  assert capsys.readouterr().err == ""
  monkeypatch.setenv("DEBUG", "2")
  gpu.trust_notice("gfx1201"); gpu.trust_notice("gfx1201")
  err = capsys.readouterr().err
  assert err.count("tinygrad-emu: gfx1201 kernel times are emulated") == 1
  assert f"rdna4: {accuracy.WITHIN_2['rdna4']:.1%} of issue deltas" in err   # the accuracy table's figure
