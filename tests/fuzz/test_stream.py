"""The stream.* targets: seeded runs hold the API contract, and the check reports what it must (a mutation makes it fail)."""
import random
import pytest
from emu.amd.exec_salu import ControlStep
from fuzz import registry, runner
from fuzz.finding import Finding
from fuzz.targets import stream

@pytest.mark.parametrize("arch", list(stream.ARCHS))
def test_seeded_streams_end_in_results_or_defined_faults(arch, tmp_path):
  st = runner.run(registry.get(f"stream.{arch}"), seconds=30, seed=1, findings_dir=tmp_path, progress=None, max_execs=40)
  assert st.execs == 40 and st.hits == 0, list(st.findings.values())

def test_generation_is_seeded():
  a, b = (stream.generate("gfx942", random.Random(5)) for _ in range(2))
  assert a == b and len(a["insts"]) == stream.STREAM_LENGTH and a["lanes"] == 64

def test_a_failure_inside_an_instruction_is_a_finding(monkeypatch):
  monkeypatch.setattr(ControlStep, "execute", lambda self, m, ws: {}["boom"])   # s_endpgm now fails like an emulator bug
  with pytest.raises(Finding) as e: stream.check({"arch": "gfx1100", "lanes": 32, "insts": []})
  assert e.value.kind == "host-exception" and e.value.key[1] == "KeyError"
