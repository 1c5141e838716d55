"""fuzz.reference, the kernel targets' reference: tinygrad's semantics in the program's own dtypes, each expected value worked by
hand (IEEE rounding in the dtype, the Tensor method's decomposition), and the elements it leaves undefined."""
import random
import numpy as np
from fuzz import reference, tiny_program

def case(dtype, data, *steps, shape=None):
  return {"inputs": [{"dtype": dtype, "shape": shape or [len(data)], "data": data}], "steps": list(steps)}

def ref(c, model=reference.REFERENCE): return reference.evaluate(c, model)

def test_half_is_computed_in_half():
  # 65504 * 65504 overflows half: inf (a reference computing half in double gave 4.29e9, and 32 after a later step)
  got, _ = ref(case("float16", [65504.0, 3.0], ["unary", "square"]))
  assert got.dtype == np.float16 and got.tolist() == [np.inf, 9.0]
  # 10 + (-9.336) in half: -9.336 is stored as -9.3359375 and the sum rounds to 0.6640625 (half's spacing at 0.66 is 2^-11)
  got, _ = ref(case("float16", [10.0, -9.336], ["reduce", "sum", 0], shape=[2]))
  assert got == np.float16(0.6640625)

def test_division_is_a_product_with_the_reciprocal_each_rounded():
  # tinygrad's a / b is a * (1 / b): in float32 1/3 rounds to 0x3eaaaaab (0.3333333433), and 7 * that is 2.33333340 -> 0x40155556,
  # one ulp above the correctly rounded 7 / 3 = 0x40155555
  got, _ = ref(case("float32", [7.0], ["binary", "div", "const", 3.0]))
  assert got.view(np.uint32).tolist() == [0x40155556]

def test_maximum_is_pythons_max_and_minimum_its_mirror():
  # maximum(a, b) is a unless b > a: NaN as a stays, NaN as b loses; minimum(a, b) = -maximum(-a, -b)
  nan = float("nan")
  got, _ = ref(case("float32", [nan, 1.0], ["binary", "max", "const", 2.0]))
  assert np.isnan(got[0]) and got[1] == 2.0
  got, _ = ref({"inputs": [{"dtype": "float32", "shape": [2], "data": [1.0, 5.0]}, {"dtype": "float32", "shape": [2], "data": [nan, 2.0]}],
                "steps": [["binary", "min", "input", 1]]})
  assert got.tolist() == [1.0, 2.0]
  # the PTX model: the non-NaN operand wins either way
  got, _ = ref(case("float32", [nan], ["binary", "max", "const", 2.0]), reference.Model(minmax_drops_nan=True))
  assert got.tolist() == [2.0]

def test_integers_wrap_in_their_dtype_and_the_renderer_models_do_not():
  c = case("uint8", [255, 3], ["binary", "mul", "const", 255], ["binary", "max", "const", 2])
  assert ref(c)[0].tolist() == [2, 253]                  # 255 * 255 = 65025 = 1 (mod 256) -> max(1, 2) = 2; 3 * 255 = 765 = 253
  assert ref(c, reference.Model(eight_bit_in_16_bits=True))[0].tolist() == [1, 253]   # 65025 > 2, stored as 1
  neg = case("uint8", [1], ["unary", "neg"], ["cast", "int32"])
  assert ref(neg)[0].tolist() == [255] and ref(neg, reference.Model(small_ints_as_int=True))[0].tolist() == [-1]

def test_casts_clamp_and_truncate_as_the_program_builds_them():
  # NaN -> 0, clamped to [-100, 100], the magnitude for unsigned, then truncation toward zero
  got, _ = ref(case("float32", [-7.9, 1e30, float("nan"), 3.99], ["cast", "uint8"]))
  assert got.dtype == np.uint8 and got.tolist() == [7, 100, 0, 3]

def test_multi_kernel_ops():
  x = case("float32", [1.0, 2.0, 3.0, 3.0], shape=[4])
  assert ref({**x, "steps": [["argmax", 0]]})[0].tolist() == 2             # the first of the maxima
  assert ref({**x, "steps": [["cumsum", 0]]})[0].tolist() == [1.0, 3.0, 6.0, 9.0]
  sm, _ = ref({**x, "steps": [["softmax", 0]]})
  e = np.exp(np.array([1.0, 2.0, 3.0, 3.0]) - 3.0)
  assert np.allclose(sm, e / e.sum(), rtol=1e-6)
  got, _ = ref(case("int8", [100, 100], ["cumsum", 0]))   # an int8 cumsum accumulates in int32 (tinygrad's sum_acc_dtype)
  assert got.dtype == np.int32 and got.tolist() == [100, 200]

def test_what_tinygrad_leaves_undefined_is_marked():
  nan, inf = float("nan"), float("inf")
  _, undef = ref(case("float32", [1.0, nan, 2.0, 3.0], ["reduce", "max", 1], shape=[2, 2]))   # max over a NaN: order-dependent
  assert undef.tolist() == [True, False]
  _, undef = ref(case("float32", [inf, 2.0], ["binary", "mul", "const", 0.0]))                # inf * 0: tinygrad folds x * 0 to 0
  assert undef.tolist() == [True, False]
  _, undef = ref(case("float32", [inf, 2.0], ["binary", "sub", "flip", 1], shape=[2, 1]))    # x - flip(x) over one element: x - x
  assert undef.tolist() == [[True], [False]]
  # x * x then softmax: a fused x * x - max (fma) keeps the product's rounding error; at 1e30 squared (float64) that is ~1e44 and
  # exp2 of it inf, so the row is undefined; at 3 squared the error moves nothing
  _, undef = ref(case("float64", [1.0, 1e30, 2.0, 3.0, 1.0, 2.0], ["unary", "square"], ["softmax", 1], shape=[2, 3]))
  assert undef.tolist() == [[True] * 3, [False] * 3]
  _, undef = ref(case("float64", [1.0, 1e30, 2.0], ["unary", "abs"], ["softmax", 0]))   # no product to fuse
  assert not undef.any()
  # the middle of an odd axis meets itself: NaN - NaN there is what tinygrad folds once it unrolls the axis (0 on gfx1100)
  _, undef = ref(case("float16", [1.0, 2.0, nan, 3.0, inf], ["binary", "sub", "flip", 0]))
  assert undef.tolist() == [False, False, True, False, False]

def test_reached_marks_the_elements_a_deviation_changes():
  # uint8 [255, 3] * 255: 65025 wraps (element 0), 765 wraps too (element 1); [3, 4] * 5 = [15, 20] wraps nowhere
  assert reference.reached(case("uint8", [255, 3], ["binary", "mul", "const", 255]), "eight_bit_in_16_bits").tolist() == [True, True]
  assert not reference.reached(case("uint8", [3, 4], ["binary", "mul", "const", 5]), "eight_bit_in_16_bits").any()
  # a wrap feeds a row's sum: every element of that row's result is reached, the other row's not
  rows = case("uint8", [200, 100, 1, 2], ["binary", "add", "const", 0], ["reduce", "sum", 1], shape=[2, 2])
  assert reference.reached(rows, "eight_bit_in_16_bits").tolist() == [True, False]
  # NaN into a maximum, and only there
  nan = case("float32", [float("nan"), 1.0], ["binary", "max", "const", 2.0])
  assert reference.reached(nan, "minmax_drops_nan").tolist() == [True, False]
  assert not reference.reached(case("float32", [float("nan")], ["unary", "neg"]), "minmax_drops_nan").any()
  # tinygrad subtracts by adding the negation: uint16 5 - 2 is 5 + 65534, which wraps (C's int keeps 65539)
  assert reference.reached(case("uint16", [5], ["binary", "sub", "const", 2]), "small_ints_as_int").tolist() == [True]
  assert not reference.reached(case("int32", [5], ["binary", "sub", "const", 2]), "wraps").any()
  # int16 promotion is CUDA's, not PTX's 8-bit deviation
  wide = case("int16", [30000], ["binary", "add", "const", 30000])
  assert reference.reached(wide, "small_ints_as_int").tolist() == [True]
  assert not reference.reached(wide, "eight_bit_in_16_bits").any()

def test_every_generated_program_evaluates():
  for seed in range(300):
    c = tiny_program.generate(random.Random(seed))
    if tiny_program.is_matmul(c): continue
    got, undef = reference.evaluate(c)
    assert got.shape == undef.shape
