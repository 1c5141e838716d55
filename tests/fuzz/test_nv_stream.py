"""The stream.nv target: seeded runs hold the channel's contract, the generator reaches every header form and launches kernels,
and the check reports what it must (a mutation of the mock makes it fail)."""
import random
import numpy as np
import pytest
from fuzz import registry, runner
from fuzz.finding import Finding
from fuzz.targets import nv_stream
from mockgpu.nv import methods

def test_seeded_streams_end_in_results_or_documented_errors(tmp_path):
  st = runner.run(registry.get("stream.nv"), seconds=60, seed=1, findings_dir=tmp_path, progress=None, max_execs=300)
  assert st.execs == 300 and st.hits == 0, list(st.findings.values())

def test_generation_is_seeded_and_reaches_every_header_form_and_real_launches():
  a, b = (nv_stream.generate(random.Random(5)) for _ in range(2))
  assert a == b
  opcodes, launches = set(), 0
  for seed in range(400):
    case = nv_stream.generate(random.Random(seed))
    opcodes |= {w >> 29 for w in case["words"] if w}
    ch = methods.Channel(nv_stream.memory(case)[0], lambda: 0)
    try: ch.run(np.array(case["words"], np.uint32))
    except Exception: pass
    launches += ch.launches
  assert opcodes == set(range(8)) and launches > 50   # every opcode (incl. tertiary and reserved ones), and kernels that ran

def test_an_exception_the_contract_does_not_allow_is_a_finding(monkeypatch):
  case = nv_stream.generate(random.Random(3))
  case["words"] = [1 << 29 | 1 << 16 | 0 << 13 | methods.nv.NVC56F_NON_STALL_INTERRUPT >> 2, 0]
  monkeypatch.setattr(methods.Channel, "_host", lambda self, pos, mthd, value: [][1])   # an emulator bug: an IndexError escapes
  with pytest.raises(Finding) as e: nv_stream.check(case)
  assert e.value.kind == "host-exception" and e.value.key[0] == "IndexError"
