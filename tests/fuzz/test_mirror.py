"""The mirror.* targets: seeded runs find the mirrors agreeing, the generator feeds regions, and a broken mirror is a finding
(a mutation of each side makes the check fail; the expected values are the reference mirror's, computed in the same run)."""
import ast, random
import pytest
from emu.amd import cu_native, regions
from emu.amd.arch import get_spec
from emu.pcode import lanes_ir
from fuzz import registry, runner
from fuzz.finding import Finding
from fuzz.targets import mirror

def test_seeded_replays_agree(tmp_path):
  st = runner.run(registry.get("mirror.replay"), seconds=60, seed=1, findings_dir=tmp_path, progress=None, max_execs=60)
  assert st.execs == 60 and st.hits == 0, list(st.findings.values())

@pytest.mark.parametrize("arch", list(mirror.stream.ARCHS))
def test_seeded_region_streams_agree_and_run_natively(arch, tmp_path, monkeypatch):
  ran = []
  real = regions.Region.run
  monkeypatch.setattr(regions.Region, "run", lambda self, *a, **k: ran.append(r := real(self, *a, **k)) or r)
  st = runner.run(registry.get(f"mirror.regions.{arch}"), seconds=60, seed=1, findings_dir=tmp_path, progress=None, max_execs=12)
  assert st.execs == 12 and st.hits == 0, list(st.findings.values())
  assert any(r is not None for r in ran)   # (a generator that fed no region would check nothing)
  assert not regions.CHECK   # the check's mode is the check's only

def test_the_generator_draws_only_region_instructions():
  case = mirror.generate_regions("gfx1201", random.Random(3))
  assert len(case["insts"]) == mirror.REGION_LENGTH
  assert all(mirror.joins("gfx1201", bytes.fromhex(h)) for h in case["insts"])

def test_a_compiled_replay_that_differs_is_a_finding(monkeypatch):
  real = cu_native.simulate
  def shifted(*job, wait=False):   # every wave one cycle late: a mirror that drifted
    out = real(*job, wait=wait)
    return None if out is None else [(s + 1, e + 1, t, d) for s, e, t, d in out]
  monkeypatch.setattr(cu_native, "simulate", shifted)
  if real(*mirror.random_workload(random.Random(0), False).args(), wait=True) is None: pytest.skip("no C compiler for the compiled replay")
  with pytest.raises(Finding) as e: mirror.check_replay({"seed": 0, "matrix": False})
  assert e.value.kind == "replay-mismatch" and e.value.key == ("compiled",)

def test_a_region_lowering_that_differs_is_a_finding(monkeypatch):
  monkeypatch.setitem(lanes_ir.INT_BINOPS, ast.BitXor, "or")   # the native code's xor computes or
  ins = get_spec("gfx1100").ins
  case = {"arch": "gfx1100", "lanes": 32, "waves": 2, "insts": [ins.v_xor_b32_e32(ins.v[1], 7, ins.v[0]).to_bytes().hex()]}
  with pytest.raises(Finding) as e: mirror.check_regions(case)   # lanes 1..7 and beyond: lane ^ 7 != lane | 7
  assert e.value.kind == "region-mismatch" and e.value.key == ("gfx1100", "v_xor_b32_e32")
