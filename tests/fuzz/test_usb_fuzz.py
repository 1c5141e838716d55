"""The usb.* targets: seeded runs hold the bridge's error contract, the generator reaches every request and real transfers into
the GPU, and the check reports what it must (a mutation of the bridge makes it fail)."""
import collections, random
import pytest
from fuzz import registry, runner
from fuzz.finding import Finding
from fuzz.targets import usb as target
from mockgpu.usb import bridge as br

@pytest.mark.parametrize("arch", target.ARCHS)
def test_seeded_streams_end_in_transfers_or_documented_errors(tmp_path, arch):
  st = runner.run(registry.get(f"usb.{arch}"), seconds=60, seed=1, findings_dir=tmp_path, progress=None, max_execs=300)
  assert st.execs == 300 and st.hits == 0, list(st.findings.values())

def test_generation_is_seeded_and_reaches_every_request_and_the_gpus_memory():
  assert target.generate("gfx1100", random.Random(5)) == target.generate("gfx1100", random.Random(5))
  requests, done = set(), collections.Counter()
  for seed in range(300):
    case = target.generate("gfx1100", random.Random(seed))
    usb = target._device("gfx1100")
    if case["setup"]: target._link_up(usb)
    for op in case["ops"]:
      requests.add(op[1] if op[0] in ("in", "out") else op[0])
      try: target._apply(usb, op)
      except (br.USBTransferError, target.PCIDeviceError): continue
      done[op[0] if op[0].startswith("bulk") else op[1]] += 1
  assert {br.REQ_XDATA_READ, br.REQ_XDATA_WRITE, br.REQ_TLP, br.REQ_SRAM, br.REQ_POWER, "bulk_out", "bulk_in"} <= requests
  assert len(requests) > 10   # and requests the firmware does not serve
  assert done["bulk_out"] > 50 and done["bulk_in"] > 5 and done[br.REQ_TLP] > 200, done   # transfers that moved data

def test_an_exception_the_contract_does_not_allow_is_a_finding(monkeypatch):
  case = {"arch": "gfx1100", "setup": False, "ops": [["in", br.REQ_XDATA_READ, 0xa800, 0, 8]]}
  target.check(case)
  monkeypatch.setattr(br.ASM24Bridge, "_xdata_span", lambda self, addr, size, what: [][1])   # a bridge bug: an IndexError escapes
  with pytest.raises(Finding) as e: target.check(case)
  assert e.value.kind == "host-exception" and e.value.key[:2] == ("gfx1100", "IndexError")
