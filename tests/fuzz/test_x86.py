"""The `x86` target and its executors: unicorn (any host) and QEMU user mode (needs qemu-x86_64 >= 7.2 and clang)."""
import json, struct, time
import pytest
from fuzz import registry, runner, x86_qemu, x86_unicorn
from fuzz.finding import Finding
from fuzz.targets import x86

QEMU_MISSING = x86_qemu.unavailable()
needs_qemu = pytest.mark.skipif(QEMU_MISSING is not None, reason=f"no qemu executor here: {QEMU_MISSING}")
EXECUTORS = [pytest.param(x86_unicorn.call, id="unicorn"), pytest.param(x86_qemu.call, id="qemu", marks=needs_qemu)]
ADD = bytes.fromhex("8b06" "0302" "8907" "c3")  # mov eax,[rsi]; add eax,[rdx]; mov [rdi],eax; ret  -- hand-assembled

def add_40_2(call) -> int:
  out = call(ADD, ["out", "a", "b"], {"out": bytes(4), "a": (40).to_bytes(4, "little"), "b": (2).to_bytes(4, "little")})
  return int.from_bytes(out["out"], "little")

@pytest.mark.parametrize("call", EXECUTORS)
def test_call_integer_add(call):
  assert add_40_2(call) == 42

@pytest.mark.parametrize("call", EXECUTORS)
def test_fault_on_unmapped_access(call):
  # mov eax,[rsi+0x2000]; ret: past the buffer and its guard page
  with pytest.raises(x86_unicorn.Fault): call(bytes.fromhex("8b860020000000c3"), [0, "a"], {"a": bytes(16)})

@pytest.mark.parametrize("call", EXECUTORS)
def test_stack_arguments(call):
  # rax = rsi+rdx+rcx+r8+r9 + the 7th and 8th argument (stack); mov [rdi],rax; ret
  code = bytes.fromhex("4889f0" "4801d0" "4801c8" "4c01c0" "4c01c8" "4803442408" "4803442410" "488907" "c3")
  for extra in ([], [100]):  # an odd and an even number of stack words
    assert int.from_bytes(call(code, ["o", 1, 2, 3, 4, 5, 6, 7, *extra], {"o": bytes(8)})["o"], "little") == 28

@pytest.mark.parametrize("call", EXECUTORS)
def test_clobbered_callee_saved_register_is_a_fault(call):
  with pytest.raises(x86_unicorn.Fault, match="clobbered callee-saved rbx"): call(bytes.fromhex("bb01000000c3"), [], {})  # mov ebx,1; ret

def test_unicorn_runaway_loop():
  with pytest.raises(x86_unicorn.Fault, match="did not return"): x86_unicorn.call(bytes.fromhex("ebfe"), [], {}, max_insns=1000)

def test_regression_unicorn_ignores_vex_vvvv():
  # unicorn 2.1.x runs VEX instructions as 2-operand SSE: vaddss xmm0,xmm1,xmm2 with xmm0=100, xmm2=2 gives 100+2
  if x86_unicorn.vex_faithful(): pytest.skip("this unicorn honours VEX 3-operand forms")
  assert x86_unicorn.vaddss_probe(x86_unicorn.call) == 102.0

@needs_qemu
def test_qemu_vaddss_three_operand():
  assert x86_qemu.vaddss_probe(x86_qemu.call) == 1.5 + 2.0 and x86_qemu.vex_faithful()

@needs_qemu
def test_qemu_f16c():
  # vcvtph2ps xmm0,[rsi]; vmovups [rdi],xmm0; ret: halves 1.0, -2.0, 65504 (largest finite), 2**-24 (smallest subnormal)
  out = x86_qemu.call(bytes.fromhex("c4e2791306" "c5f81107" "c3"), ["o", "h"], {"o": bytes(16), "h": struct.pack("<4H", 0x3c00, 0xc000, 0x7bff, 1)})
  assert struct.unpack("<4f", out["o"]) == (1.0, -2.0, 65504.0, 2.0**-24)

@needs_qemu
@pytest.mark.parametrize("code, sig", [("c704250000000001000000c3", "SIGSEGV at address 0x0"),  # mov dword [0],1; ret
                                       ("0f0b", "SIGILL"), ("31c9f7f1c3", "SIGFPE")])      # ud2; xor ecx,ecx; div ecx
def test_qemu_fault_then_next_call_works(code, sig):
  with pytest.raises(x86_unicorn.Fault, match=sig): x86_qemu.call(bytes.fromhex(code), [], {})
  assert add_40_2(x86_qemu.call) == 42

@needs_qemu
def test_qemu_guard_page_after_buffer():
  # mov eax,[rsi+0x1000]: the page right after a one-page buffer is unmapped
  with pytest.raises(x86_unicorn.Fault, match="SIGSEGV"): x86_qemu.call(bytes.fromhex("8b8600100000c3"), [0, "a"], {"a": bytes(16)})
  assert x86_qemu.call(bytes.fromhex("8b86fc0f0000c3"), [0, "a"], {"a": bytes(16)}) == {"a": bytes(16)}  # last dword: fine

@needs_qemu
def test_qemu_runaway_loop_times_out():
  t = time.monotonic()
  with pytest.raises(x86_unicorn.Fault, match="did not return within 1 s"): x86_qemu.call(bytes.fromhex("ebfe"), [], {}, timeout=1.0)
  assert time.monotonic() - t < 5
  assert add_40_2(x86_qemu.call) == 42

def test_unavailable_names_the_missing_tool(monkeypatch):
  monkeypatch.setattr(x86_qemu.shutil, "which", lambda name: None)
  assert "qemu-x86_64 not found" in x86_qemu.unavailable.__wrapped__()

def test_executor_falls_back_to_unicorn(monkeypatch):
  x86.executor.cache_clear()
  monkeypatch.setattr(x86_qemu, "unavailable", lambda: "qemu-x86_64 not found")
  try:
    ex = x86.executor()
    assert ex.name == "unicorn" and ex.call is x86_unicorn.call and ex.vex_ok == x86_unicorn.vex_faithful() and "not found" in ex.why
  finally: x86.executor.cache_clear()

@needs_qemu
def test_executor_is_qemu_here():
  assert x86.executor().name == "qemu" and x86.executor().vex_ok

@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_simple_program_passes(dtype):
  case = {"inputs": [{"dtype": dtype, "shape": [2, 3], "data": [1, 2, 3, 4, 5, 6]}], "steps": [["binary", "add", "const", 3]]}
  x86.check(case)

def test_wrong_result_is_a_finding(monkeypatch):
  # the x86 program's result, made wrong, disagrees with the dtype reference and with CPU:LLVM's second opinion
  import numpy as np
  case = {"inputs": [{"dtype": "int32", "shape": [3], "data": [1, 2, 3]}], "steps": [["binary", "mul", "const", 2]]}
  monkeypatch.setattr(x86, "run_x86", lambda c: np.array([2, 4, 7], dtype="int32"))
  with pytest.raises(Finding) as e: x86.check(case)
  assert e.value.kind == ("x86-mismatch" if x86.executor().vex_ok else "x86-mismatch-unverified")
  assert e.value.detail.startswith(f"[{x86.executor().name}]") and "CPU:LLVM agrees with the reference" in e.value.detail

def test_smoke(tmp_path):
  st = runner.run(registry.get("x86"), seconds=4, seed=3, findings_dir=tmp_path, progress=None, max_execs=4)
  assert st.execs >= 1

@needs_qemu
def test_smoke_qemu(tmp_path):
  st = runner.run(registry.get("x86"), seconds=120, seed=1, findings_dir=tmp_path, progress=None, max_execs=15)
  assert st.execs == 15 and x86.executor().name == "qemu"
  kinds = [json.loads(p.read_text())["kind"] for p in st.findings.values()]
  assert "harness-crash" not in kinds, kinds
