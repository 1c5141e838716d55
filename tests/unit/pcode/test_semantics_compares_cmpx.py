"""rdna3 VOPC semantics: ordered/unordered float compares with NaN, integer compares at 16/32/64 bits, V_CMP_CLASS masks
(bit 0 sNaN, 1 qNaN, 2 -inf, 3 -normal, 4 -denormal, 5 -0, 6 +0, 7 +denormal, 8 +normal, 9 +inf) and V_CMPX writing EXEC lanes.
Lane-mask results are per-lane 0/1 arrays (abi.py)."""
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.rdna3.enum import VOPCOp
from emu.pcode import compile_op
from test_ops import f32bits, run, u32
from test_semantics_helpers import F16_QNAN, F16_SNAN, F32_QNAN, F32_SNAN, F64_SNAN, bits, f16bits, f64bits

A = [1.0, 1.0, 2.0, np.nan, 1.0, np.nan, -0.0, -np.inf]
B = [1.0, 2.0, 1.0, 1.0, np.nan, np.nan, 0.0, np.inf]

@pytest.mark.parametrize("op,f", [
  (VOPCOp.V_CMP_LT_F32_E32, lambda a, b: a < b), (VOPCOp.V_CMP_EQ_F32_E32, lambda a, b: a == b),
  (VOPCOp.V_CMP_LG_F32_E32, lambda a, b: a < b or a > b),  # pcode `<>`: ordered less-or-greater, false with a NaN
  (VOPCOp.V_CMP_NEQ_F32_E32, lambda a, b: not a == b),
  (VOPCOp.V_CMP_NLT_F32_E32, lambda a, b: not a < b), (VOPCOp.V_CMP_GE_F32_E32, lambda a, b: a >= b),
  (VOPCOp.V_CMP_O_F32_E32, lambda a, b: a == a and b == b), (VOPCOp.V_CMP_U_F32_E32, lambda a, b: a != a or b != b),
  (VOPCOp.V_CMP_NGT_F32_E32, lambda a, b: not a > b), (VOPCOp.V_CMP_T_F32_E32, lambda a, b: True),
  (VOPCOp.V_CMP_F_F32_E32, lambda a, b: False),
], ids=lambda x: getattr(x, "name", ""))
def test_v_cmp_f32_nan_rules(op, f):
  got = run(op, S0=f32bits(*A), S1=f32bits(*B)).D0
  assert [int(x) for x in got] == [int(f(a, b)) for a, b in zip(A, B)]

def test_v_cmp_t_f_f32_return_lane_arrays():
  # constant results are still uint64 (n,) lane arrays (abi.py), not Python ints
  for op, v in ((VOPCOp.V_CMP_T_F32_E32, 1), (VOPCOp.V_CMP_F_F32_E32, 0)):
    got = run(op, S0=f32bits(1.0, 2.0), S1=f32bits(1.0, 2.0)).D0
    assert isinstance(got, np.ndarray) and got.dtype == np.uint64 and got.shape == (2,) and list(got) == [v, v]

@pytest.mark.parametrize("op,f", [(VOPCOp.V_CMP_LT_F16_E32, lambda a, b: a < b), (VOPCOp.V_CMP_NGE_F16_E32, lambda a, b: not a >= b)],
                         ids=lambda x: getattr(x, "name", ""))
def test_v_cmp_f16_nan_rules(op, f):
  assert [int(x) for x in run(op, S0=f16bits(*A), S1=f16bits(*B)).D0] == [int(f(a, b)) for a, b in zip(A, B)]

def test_v_cmp_lg_f16_nan_is_false():
  assert list(run(VOPCOp.V_CMP_LG_F16_E32, S0=f16bits(np.nan, 1.0), S1=f16bits(1.0, 2.0)).D0) == [0, 1]

def test_v_cmp_lg_f64_nan_is_false():
  assert list(run(VOPCOp.V_CMP_LG_F64_E32, S0=f64bits(np.nan, 1.0), S1=f64bits(1.0, 2.0)).D0) == [0, 1]

@pytest.mark.parametrize("op,f", [(VOPCOp.V_CMP_LE_F64_E32, lambda a, b: a <= b), (VOPCOp.V_CMP_NLE_F64_E32, lambda a, b: not a <= b)],
                         ids=lambda x: getattr(x, "name", ""))
def test_v_cmp_f64_nan_rules(op, f):
  assert [int(x) for x in run(op, S0=f64bits(*A), S1=f64bits(*B)).D0] == [int(f(a, b)) for a, b in zip(A, B)]

def test_v_cmp_int_signedness_and_width():
  assert list(run(VOPCOp.V_CMP_LT_U32_E32, S0=u32(-1, 0), S1=u32(0, -1)).D0) == [0, 1]
  assert list(run(VOPCOp.V_CMP_GT_I64_E32, S0=bits(1 << 63, 1), S1=bits(0, -1)).D0) == [0, 1]
  assert list(run(VOPCOp.V_CMP_LT_U64_E32, S0=bits(0xffffffff, 1 << 32), S1=bits(1 << 32, 0xffffffff)).D0) == [1, 0]
  assert list(run(VOPCOp.V_CMP_EQ_U64_E32, S0=bits(1 << 32), S1=bits(0)).D0) == [0]  # high dword compared
  assert list(run(VOPCOp.V_CMP_LT_I16_E32, S0=u32(0x0000_8000, 0xffff_0001), S1=u32(0x0000_0001, 0x0000_0002)).D0) == [1, 1]
  assert list(run(VOPCOp.V_CMP_NE_U16_E32, S0=u32(0x1234_0005), S1=u32(0x4321_0005)).D0) == [0]  # only bits 15:0 compared

# value -> expected class bit
F32_CLASSES = [(F32_SNAN, 0), (F32_QNAN, 1), (0xff800000, 2), (0xbf800000, 3), (0x80000001, 4), (0x80000000, 5), (0x00000000, 6),
               (0x007fffff, 7), (0x00800000, 8), (0x7f800000, 9), (0xffc00001, 1), (0xff800001, 0)]

def test_v_cmp_class_f32_all_classes():
  v = [x for x, _ in F32_CLASSES]
  for bit in range(10):
    got = run(VOPCOp.V_CMP_CLASS_F32_E32, S0=u32(*v), S1=u32(*[1 << bit] * len(v))).D0
    want = [int(c == bit) for _, c in F32_CLASSES]
    if bit in (0, 1): continue  # sNaN/qNaN distinction checked separately (below)
    assert [int(g) for g in got] == want, bit
  assert list(run(VOPCOp.V_CMP_CLASS_F32_E32, S0=u32(*v), S1=u32(*[0x3ff] * len(v))).D0) == [1] * len(v)
  assert list(run(VOPCOp.V_CMP_CLASS_F32_E32, S0=u32(*v), S1=u32(*[0] * len(v))).D0) == [0] * len(v)
  assert list(run(VOPCOp.V_CMP_CLASS_F32_E32, S0=u32(F32_QNAN, F32_SNAN), S1=u32(3, 3)).D0) == [1, 1]  # either NaN bit

def test_v_cmp_class_f32_signalling_nan():
  assert list(run(VOPCOp.V_CMP_CLASS_F32_E32, S0=u32(F32_SNAN, F32_SNAN), S1=u32(1, 2)).D0) == [1, 0]

def test_v_cmp_class_f16_and_f64():
  h = [F16_SNAN, F16_QNAN, 0xfc00, 0xbc00, 0x8001, 0x8000, 0x0000, 0x03ff, 0x0400, 0x7c00]
  for bit in range(10):
    assert [int(g) for g in run(VOPCOp.V_CMP_CLASS_F16_E32, S0=u32(*h), S1=u32(*[1 << bit] * 10)).D0] == [int(i == bit) for i in range(10)]
  d = [F64_SNAN, 0x7ff8000000000000, 0xfff0000000000000, 0xbff0000000000000, 0x8000000000000001, 1 << 63, 0, 0x000fffffffffffff,
       0x0010000000000000, 0x7ff0000000000000]
  for bit in range(10):
    assert [int(g) for g in run(VOPCOp.V_CMP_CLASS_F64_E32, S0=bits(*d), S1=u32(*[1 << bit] * 10)).D0] == [int(i == bit) for i in range(10)]

def test_v_cmpx_writes_exec_lanes():
  c = compile_op("rdna3", VOPCOp.V_CMPX_LT_F32_E32)
  assert "EXEC" in c.writes and "EXEC" in c.lane_masks
  st_ = run(VOPCOp.V_CMPX_LT_F32_E32, S0=f32bits(1.0, 2.0, np.nan, -np.inf), S1=f32bits(2.0, 1.0, 0.0, 0.0))
  assert [int(x) for x in st_.EXEC] == [1, 0, 0, 1]
  st_ = run(VOPCOp.V_CMPX_NE_U32_E32, S0=u32(0, 5, 7), S1=u32(0, 6, 7))
  assert [int(x) for x in st_.EXEC] == [0, 1, 0]
  st_ = run(VOPCOp.V_CMPX_CLASS_F32_E32, S0=f32bits(-0.0, 0.0, 1.0), S1=u32(1 << 5, 1 << 5, 1 << 8))
  assert [int(x) for x in st_.EXEC] == [1, 0, 1]

def test_v_cmp_only_given_lanes_written():
  # a batch is any subset of lanes: the op yields one bit per given row, independent of laneId
  c = compile_op("rdna3", VOPCOp.V_CMP_GT_I32_E32)
  from emu.pcode import OpState
  st_ = OpState(n=2, laneId=np.array([5, 30], np.uint64), S0=u32(3, -3), S1=u32(2, 2))
  c.fn(st_)
  assert list(st_.D0) == [1, 0] and st_.D0.shape == (2,)
