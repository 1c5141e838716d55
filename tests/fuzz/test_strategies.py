"""fuzz.strategies: the targets' generators as Hypothesis strategies; the instruction-level properties hold under @given."""
import pytest
from hypothesis import given, settings
from fuzz import strategies

@pytest.mark.parametrize("name", ["exec.rdna3", "exec.cdna", "oracle.rdna3", "oracle.cdna"])
def test_instruction_properties_hold(name):
  @settings(max_examples=25)
  @given(case=strategies.cases(name))
  def prop(case): assert strategies.finding(name, case) is None
  prop()

@settings(max_examples=60)
@given(case=strategies.cases("encoding.rdna4"))
def test_rdna4_encodings_decode_to_the_same_bytes_or_a_known_wheel_finding(case):
  f = strategies.finding("encoding.rdna4", case)
  assert f is None or not f.kind.startswith("harness"), f
