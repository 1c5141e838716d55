"""fuzz.known: each known bug's classifier labels a device result that shows the bug, worked by hand, and nothing else: a program
that does not exercise the deviation, or a result wrong in another way, stays a finding."""
import numpy as np
import pytest
from fuzz import known, reference
from fuzz.targets import kernel
from emu.llvm_libs import system_llvms
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
  assert label("MOCK+NV:CUDA", c, np.array([-1, 5], np.int32)) is None          # -0 wraps nowhere: element 1 is wrong another way
  # int16 30000 + 30000 wraps to -5536; promoted to int it is 60000, but the PTX renderer's 16-bit registers wrap int16 right
  wide = case("int16", [30000], ["binary", "add", "const", 30000], ["cast", "int32"])
  assert label("MOCK+NV:CUDA", wide, np.array([60000], np.int32)) == "cuda-small-int-promotion"
  assert label("MOCK+NV:PTX", wide, np.array([60000], np.int32)) is None          # another renderer: not its bug

def test_ptx_8_bit_values_in_16_bit_registers():
  # uint8 255 * 255 = 65025, which the PTX renderer's 16-bit register keeps: max(65025, 2) stores 65025 mod 256 = 1, not max(1, 2)
  c = case("uint8", [255, 3], ["binary", "mul", "const", 255], ["binary", "max", "const", 2])
  assert label("MOCK+NV:PTX", c, np.array([1, 253], np.uint8)) == "ptx-8-bit-in-16-bit-registers"
  # int8 (-13)^2 = 169 stays positive in 16 bits, so relu keeps it; the cumsum kernel reads it back stored as int8: -87 (the
  # reference wraps first: -87, relu 0)
  stored = case("int8", [-13], ["unary", "square"], ["unary", "relu"], ["cumsum", 0])
  assert label("MOCK+NV:PTX", stored, np.array([-87], np.int32)) == "ptx-8-bit-in-16-bit-registers"
  # 2 + 127 = 129 in 16 bits, the max of the row; the reduce kernel stores it as int8 (-127) before the cast (reference: max(-127, 2))
  reduced = {"inputs": [{"dtype": "int8", "shape": [1, 2], "data": [2, 1]}, {"dtype": "int8", "shape": [1, 2], "data": [127, 1]}],
             "steps": [["binary", "add", "input", 1], ["reduce", "max", 1], ["cast", "float64"]]}
  assert label("MOCK+NV:PTX", reduced, np.array([-127.0])) == "ptx-8-bit-in-16-bit-registers"
  fits = case("uint8", [3, 4], ["binary", "mul", "const", 5], ["binary", "max", "const", 2])   # nothing leaves 8 bits: 15, 20
  assert label("MOCK+NV:PTX", fits, np.array([16, 20], np.uint8)) is None

def test_ptx_minmax_drops_nan():
  c = case("float32", [float("nan"), 1.0], ["binary", "max", "const", 2.0])   # tinygrad's maximum(NaN, 2) is NaN
  assert label("MOCK+NV:PTX", c, np.array([2.0, 2.0], np.float32)) == "ptx-minmax-drops-nan"
  assert label("MOCK+NV:PTX", c, np.array([3.0, 2.0], np.float32)) == "ptx-minmax-drops-nan"   # element 0 met the NaN
  assert label("MOCK+NV:PTX", c, np.array([np.nan, 3.0], np.float32)) is None      # max(1, 2) is 2 on any renderer

@pytest.mark.parametrize("dev,message,name", [
  ("MOCK+NV:PTX", "RuntimeError: SM 0 fault (from RuntimeError: mockgpu: ... PTX line 41 at '.approx': sqrt.approx is not defined on .f64)",
   "ptx-f64-approx"),
  ("MOCK+NV:PTX", "... PTX line 37 at 'ex2': ex2 does not take .f64)", "ptx-f64-approx"),
  ("MOCKKFD+AMD:LLVM:gfx1201", "CompileError: src:6:48: error: integer constant must have integer type", "llvm-f64-const-exponent-literal"),
  ("MOCKKFD+AMD:LLVM:gfx1100", "CompileError: src:70:24: error: '%v54' defined with type '<4 x float>' but expected 'float'",
   "llvm-f16-vector-fptrunc"),
  ("MOCK+NV:PTX", """... NV method stream, dword 19: PTX line 183 at "'%cast_f32": cannot read a token here)""", "ptx-f16-vector-cast-list"),
  ("MOCK+NV:CUDA", 'CompileError: Nvrtc Error 6 ... error: no suitable user-defined conversion from "float4" to "half4" exists',
   "cuda-vector-cast"),
  ("MOCK+NV:CUDA", 'error: no suitable user-defined conversion from "int4" to "uint4" exists', "cuda-vector-cast"),
  ("MOCK+NV:CUDA", "... sqrt.approx is not defined on .f64", None),   # NVRTC does not emit it: not the CUDA renderer's bug
])
def test_error_bugs_are_matched_by_their_message(dev, message, name):
  bug = known.explains_error(dev, message)
  assert (bug.name if bug else None) == name

def test_judge_labels_known_bugs_and_asks_cpu_llvm_before_reporting():
  c = case("uint8", [1, 0], ["unary", "neg"], ["cast", "int32"])
  with pytest.raises(Classified, match="known: cuda-small-int-promotion"):
    judge("MOCK+NV:CUDA", c, np.array([-1, 0], np.int32), lambda d: pytest.fail("a known bug needs no second opinion"), "kernel")
  wrong, right = np.array([255, 7], np.int32), np.array([255, 0], np.int32)
  with pytest.raises(Classified, match="unjudged: the device agrees with CPU:LLVM"):   # tinygrad's other backend gives the same
    judge("MOCK+NV:CUDA", c, wrong, lambda d: wrong if d == "CPU:LLVM" else right, "kernel")
  with pytest.raises(Finding, match="CPU:LLVM agrees with the reference") as f:
    judge("MOCK+NV:CUDA", c, wrong, lambda d: right, "kernel")
  assert f.value.kind == "kernel-mismatch"
  judge("MOCK+NV:CUDA", c, right, lambda d: pytest.fail("a match needs no second opinion"), "kernel")

def test_judge_leaves_wraps_tinygrad_rewrote_unjudged():
  # uint8 -1 wraps to 255; where tinygrad's own PYTHON backend gives something else too, its front end rewrote the wrap away
  c = case("uint8", [1, 0], ["unary", "neg"], ["cast", "int32"])
  wrong, right = np.array([255, 7], np.int32), np.array([255, 0], np.int32)
  with pytest.raises(Classified, match="unjudged: tinygrad rewrote an integer wrap"):
    judge("MOCKKFD+AMD:gfx1100", c, wrong, lambda d: wrong if d == "PYTHON" else pytest.fail("no second opinion needed"), "kernel")
  with pytest.raises(Finding, match="CPU:LLVM agrees"):    # PYTHON keeps the wrap: the device is judged
    judge("MOCKKFD+AMD:gfx1100", c, wrong, lambda d: right, "kernel")
  nowrap = case("uint8", [1, 0], ["binary", "add", "const", 3])   # no wrap: PYTHON is never asked
  with pytest.raises(Finding, match="CPU:LLVM agrees"):
    judge("MOCKKFD+AMD:gfx1100", nowrap, np.array([4, 4], np.uint8),
          lambda d: np.array([4, 3], np.uint8) if d == "CPU:LLVM" else pytest.fail("PYTHON asked without a wrap"), "kernel")

def test_compiler_bugs_are_matched_by_a_rebuild_with_another_llvm():
  # float32 [1, 2] + 3 is [4, 5]; the device gave [4, 6] and CPU:LLVM [4, 5]
  c = case("float32", [1.0, 2.0], ["binary", "add", "const", 3.0])
  wrong, right = np.array([4.0, 6.0], np.float32), np.array([4.0, 5.0], np.float32)
  rebuilt = lambda again: lambda d, llvm=None: again if llvm == 22 else right  # noqa: E731
  with pytest.raises(Classified, match="known: llvm-19-amdgpu-miscompile"):    # LLVM 22's binary runs right: LLVM 19's was wrong
    judge("MOCKKFD+AMD:LLVM:gfx942", c, wrong, rebuilt(right), "kernel")
  with pytest.raises(Finding, match="CPU:LLVM agrees"):                         # LLVM 22's binary is as wrong: the emulator's
    judge("MOCKKFD+AMD:LLVM:gfx942", c, wrong, rebuilt(wrong), "kernel")
  with pytest.raises(Finding):                                                  # gfx950 already builds with LLVM 22
    judge("MOCKKFD+AMD:LLVM:gfx950", c, wrong, rebuilt(right), "kernel")

@pytest.mark.skipif(not {19, 22} <= set(system_llvms()), reason="needs libLLVM-19 (tinygrad's pick for gfx942) and libLLVM-22 installed")
def test_llvm_19_gfx942_miscompile_is_labelled_end_to_end():
  # float16 x - flip(x) over rows of 5, then a cumsum: row [1, 2, 3, 4, 5] gives [-4, -6, -6, -4, 0] (numpy, the reference);
  # LLVM 19's gfx942 binary reuses x[1] - x[3] for x[3] - x[1] (its last two sums come out wrong), LLVM 22's is right
  rows = [[1.0, 2.0, 3.0, 4.0, 5.0], [0.5, -1.0, 2.0, 7.0, -3.0]] * 3
  c = {"inputs": [{"dtype": "float16", "shape": [6, 5], "data": sum(rows, [])}], "steps": [["binary", "sub", "flip", 1], ["cumsum", 1]]}
  assert reference.evaluate(c)[0][0].tolist() == [-4.0, -6.0, -6.0, -4.0, 0.0]
  with pytest.raises(Classified, match="known: llvm-19-amdgpu-miscompile"):
    kernel.check("MOCKKFD+AMD:LLVM:gfx942", c)
