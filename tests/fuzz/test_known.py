"""fuzz.known: each known bug's classifier labels a device result that shows the bug, worked by hand, and nothing else: a program
that does not exercise the deviation, or a result wrong in another way, stays a finding."""
import numpy as np
import pytest
from fuzz import known
from fuzz.finding import Classified, Finding
from fuzz.judge import judge

def case(dtype, data, *steps, shape=None):
  return {"inputs": [{"dtype": dtype, "shape": shape or [len(data)], "data": data}], "steps": list(steps)}

def label(dev, c, got):
  bug = known.explains_values(dev, c, np.asarray(got), fast_math=False)
  return bug.name if bug else None

def test_cuda_small_int_promotion():
  # -uint8(1) then int32: tinygrad's uint8 arithmetic wraps to 255; C's -val is the int -1
  c = case("uint8", [1, 0], ["unary", "neg"], ["cast", "int32"])
  assert label("MOCK+NV:CUDA", c, np.array([-1, 0], np.int32)) == "cuda-small-int-promotion"
  assert label("MOCK+NV:CUDA", c, np.array([7, 0], np.int32)) is None           # wrong, but not the way promotion is
  assert label("MOCK+NV:PTX", c, np.array([-1, 0], np.int32)) is None           # another renderer: not its bug

def test_ptx_8_bit_values_in_16_bit_registers():
  # uint8 255 * 255 = 65025, which the PTX renderer's 16-bit register keeps: max(65025, 2) stores 65025 mod 256 = 1, not max(1, 2)
  c = case("uint8", [255, 3], ["binary", "mul", "const", 255], ["binary", "max", "const", 2])
  assert label("MOCK+NV:PTX", c, np.array([1, 253], np.uint8)) == "ptx-8-bit-in-16-bit-registers"
  fits = case("uint8", [3, 4], ["binary", "mul", "const", 5], ["binary", "max", "const", 2])   # nothing leaves 8 bits: 15, 20
  assert label("MOCK+NV:PTX", fits, np.array([16, 20], np.uint8)) is None

def test_ptx_minmax_drops_nan():
  c = case("float32", [float("nan"), 1.0], ["binary", "max", "const", 2.0])   # tinygrad's maximum(NaN, 2) is NaN
  assert label("MOCK+NV:PTX", c, np.array([2.0, 2.0], np.float32)) == "ptx-minmax-drops-nan"
  assert label("MOCK+NV:PTX", c, np.array([3.0, 2.0], np.float32)) is None

@pytest.mark.parametrize("dev,message,name", [
  ("MOCK+NV:PTX", "RuntimeError: SM 0 fault (from RuntimeError: mockgpu: ... PTX line 41 at '.approx': sqrt.approx is not defined on .f64)",
   "ptx-f64-approx"),
  ("MOCK+NV:PTX", "... PTX line 37 at 'ex2': ex2 does not take .f64)", "ptx-f64-approx"),
  ("MOCKKFD+AMD:LLVM:gfx1201", "CompileError: src:6:48: error: integer constant must have integer type", "llvm-f64-const-exponent-literal"),
  ("MOCKKFD+AMD:LLVM:gfx1100", "CompileError: src:70:24: error: '%v54' defined with type '<4 x float>' but expected 'float'",
   "llvm-f16-vector-fptrunc"),
  ("MOCK+NV:CUDA", "... sqrt.approx is not defined on .f64", None),   # NVRTC does not emit it: not the CUDA renderer's bug
])
def test_error_bugs_are_matched_by_their_message(dev, message, name):
  bug = known.explains_error(dev, message)
  assert (bug.name if bug else None) == name

def test_judge_labels_known_bugs_and_asks_cpu_llvm_before_reporting():
  c = case("uint8", [1, 0], ["unary", "neg"], ["cast", "int32"])
  with pytest.raises(Classified, match="known: cuda-small-int-promotion"):
    judge("MOCK+NV:CUDA", c, np.array([-1, 0], np.int32), lambda: pytest.fail("a known bug needs no second opinion"), "kernel")
  wrong = np.array([7, 0], np.int32)
  with pytest.raises(Classified, match="unjudged: the device agrees with CPU:LLVM"):
    judge("MOCK+NV:CUDA", c, wrong, lambda: wrong, "kernel")    # tinygrad's other backend gives the same: tinygrad's own
  with pytest.raises(Finding, match="CPU:LLVM agrees with the reference") as f:
    judge("MOCK+NV:CUDA", c, wrong, lambda: np.array([255, 0], np.int32), "kernel")
  assert f.value.kind == "kernel-mismatch"
  judge("MOCK+NV:CUDA", c, np.array([255, 0], np.int32), lambda: pytest.fail("a match needs no second opinion"), "kernel")
