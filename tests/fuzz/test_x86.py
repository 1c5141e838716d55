"""The `x86` target and its unicorn runner."""
import pytest
from tinygrad.helpers import Context
from fuzz import registry, runner, x86_unicorn
from fuzz.finding import Finding
from fuzz.targets import x86

def test_unicorn_call_integer_add():
  # mov eax,[rsi]; add eax,[rdx]; mov [rdi],eax; ret  -- hand-assembled
  code = bytes.fromhex("8b06" "0302" "8907" "c3")
  out = x86_unicorn.call(code, ["out", "a", "b"], {"out": bytes(4), "a": (40).to_bytes(4, "little"), "b": (2).to_bytes(4, "little")})
  assert int.from_bytes(out["out"], "little") == 42

def test_unicorn_fault_on_unmapped_access():
  # mov eax,[rsi+0x2000]; ret: past the buffer and its guard page
  with pytest.raises(x86_unicorn.Fault): x86_unicorn.call(bytes.fromhex("8b860020000000c3"), [0, "a"], {"a": bytes(16)})

def test_unicorn_runaway_loop():
  with pytest.raises(x86_unicorn.Fault, match="did not return"): x86_unicorn.call(bytes.fromhex("ebfe"), [], {}, max_insns=1000)

def test_regression_unicorn_ignores_vex_vvvv():
  # unicorn 2.1.x runs VEX instructions as 2-operand SSE; the x86 target files value mismatches as unverified while this holds
  assert x86.VEX_OK == x86_unicorn.vex_faithful()
  if x86.VEX_OK: pytest.skip("this unicorn honours VEX 3-operand forms")
  assert x86.VEX_OK is False

@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_simple_program_passes(dtype):
  case = {"inputs": [{"dtype": dtype, "shape": [2, 3], "data": [1, 2, 3, 4, 5, 6]}], "steps": [["binary", "add", "const", 3]]}
  x86.check(case)

def test_reference_is_python_backend():
  case = {"inputs": [{"dtype": "int32", "shape": [2, 3], "data": [1, 2, 3, 4, 5, 6]}], "steps": [["reduce", "sum", 1]]}
  with Context(DEV="PYTHON"): assert x86.run_reference(case).tolist() == [6, 15]

def test_wrong_result_is_a_finding(monkeypatch):
  case = {"inputs": [{"dtype": "int32", "shape": [3], "data": [1, 2, 3]}], "steps": [["binary", "mul", "const", 2]]}
  monkeypatch.setattr(x86, "run_reference", lambda c: __import__("numpy").array([2, 4, 7], dtype="int32"))
  with pytest.raises(Finding) as e: x86.check(case)
  assert e.value.kind.startswith("x86-mismatch")

def test_smoke(tmp_path):
  st = runner.run(registry.get("x86"), seconds=4, seed=3, findings_dir=tmp_path, progress=None, max_execs=4)
  assert st.execs >= 1
