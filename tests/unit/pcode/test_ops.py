"""Semantics of compiled ops, grouped by encoding and named after mnemonics. Expected values come from numpy/IEEE arithmetic
or from the ISA text worked by hand, never from the compiler."""
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.rdna3.enum import DSOp, GLOBALOp, SOP1Op, SOP2Op, SOPCOp, VOP1Op, VOP2Op, VOP3Op, VOP3POp, VOP3SDOp, VOPCOp
from emu.pcode import OpState, Unsupported, compile_op

def u32(*v): return np.array([x & 0xffffffff for x in v], dtype=np.uint64)
def f32bits(*v): return np.array(v, dtype=np.float32).view(np.uint32).astype(np.uint64)
def asf32(b): return np.asarray(b).astype(np.uint32).view(np.float32)

def run(op, **kw):
  c = compile_op("rdna3", op)
  n = next((len(v) for v in kw.values() if isinstance(v, np.ndarray)), 1)
  st = OpState(n=n, laneId=np.arange(n, dtype=np.uint64), **kw)
  if "D0" in c.reads and "D0" not in kw: st.D0 = np.zeros(n, np.uint64)
  c.fn(st)
  return st

class Mem:
  """A little-endian byte array as VectorMemory."""
  def __init__(self, size): self.b = np.zeros(size, np.uint8)
  def read(self, addrs, nbytes):
    return np.array([int.from_bytes(self.b[int(a):int(a) + nbytes].tobytes(), "little") for a in addrs], dtype=np.uint64)
  def write(self, addrs, values, nbytes):
    for a, v in zip(addrs, values): self.b[int(a):int(a) + nbytes] = np.frombuffer(int(v).to_bytes(nbytes, "little"), np.uint8)

# ---- VOP2 / VOP3 float ----
def test_v_add_f32_ieee_edges():
  a = np.array([1.5, np.inf, -np.inf, 0.0, -0.0, 1e-45, 3.4e38, np.nan], np.float32)
  b = np.array([2.25, -np.inf, -1.0, -0.0, -0.0, 1e-45, 3.4e38, 1.0], np.float32)
  with np.errstate(all="ignore"): want = a + b
  got = asf32(run(VOP2Op.V_ADD_F32_E32, S0=f32bits(*a), S1=f32bits(*b)).D0)
  assert np.array_equal(got.view(np.uint32)[:7], want.view(np.uint32)[:7]) and np.isnan(got[7]) and np.isnan(got[1])

def test_v_fma_f32_single_rounding():
  # a*b+c where a*b rounds differently in f32: (1+2^-23)^2 - 1 - 2^-22 = 2^-46 exactly; a double-rounded f32 product gives 0
  a = np.float32(1 + 2**-23)
  got = asf32(run(VOP3Op.V_FMA_F32, S0=f32bits(a), S1=f32bits(a), S2=f32bits(-(1 + 2**-22))).D0)
  assert got[0] == np.float32(2**-46)

def test_v_min_f32_nan_and_signed_zero():
  st = run(VOP2Op.V_MIN_F32_E32, S0=f32bits(np.nan, 0.0, -0.0, 3.0), S1=f32bits(1.0, -0.0, 0.0, -3.0), MODE_IEEE=False)
  assert list(asf32(st.D0)[:1]) == [1.0] and asf32(st.D0).view(np.uint32)[1] == 0x80000000 and asf32(st.D0).view(np.uint32)[2] == 0x80000000
  assert asf32(st.D0)[3] == -3.0

# ---- VOP3SD / VOP2 carries and lane masks ----
def test_v_add_co_u32_carry():
  st = run(VOP3SDOp.V_ADD_CO_U32, S0=u32(0xffffffff, 1, 0x80000000), S1=u32(1, 2, 0x80000000))
  assert list(st.D0) == [0, 3, 0] and list(st.VCC) == [1, 0, 1]

def test_v_cndmask_b32_selects_by_vcc_bit():
  st = run(VOP2Op.V_CNDMASK_B32_E32, S0=u32(10, 20), S1=u32(11, 21), VCC=np.array([1, 0], np.uint64))
  assert list(st.D0) == [11, 20]

def test_v_cmp_lt_i32_signed():
  c = compile_op("rdna3", VOPCOp.V_CMP_LT_I32_E32)
  assert "D0" in c.lane_masks
  assert list(run(VOPCOp.V_CMP_LT_I32_E32, S0=u32(-1, 5, 0x7fffffff), S1=u32(0, -5, -0x80000000)).D0) == [1, 0, 0]

def test_v_cmp_class_f32():
  st = run(VOPCOp.V_CMP_CLASS_F32_E32, S0=f32bits(-np.inf, 1e-40, -0.0, np.nan), S1=u32(1 << 2, 1 << 7, 1 << 5, 1 << 1))
  assert list(st.D0) == [1, 1, 1, 1]

# ---- integer VALU ----
def test_v_lshlrev_and_ashr():
  assert list(run(VOP2Op.V_LSHLREV_B32_E32, S0=u32(4, 31, 32), S1=u32(1, 3, 5)).D0) == [16, 0x80000000, 5]
  assert list(run(VOP3Op.V_ASHRREV_I32, S0=u32(4, 31), S1=u32(-32, -1)).D0) == [0xfffffffe, 0xffffffff]

def test_v_mad_u64_u32_carry_out():
  st = run(VOP3SDOp.V_MAD_U64_U32, S0=u32(0xffffffff), S1=u32(0xffffffff), S2=np.array([0xffffffffffffffff], np.uint64))
  want = 0xffffffff * 0xffffffff + 0xffffffffffffffff
  assert int(st.D0[0]) == want & (2**64 - 1) and int(st.D1[0]) == want >> 64

def test_v_cvt_f32_i32_and_back():
  assert list(asf32(run(VOP1Op.V_CVT_F32_I32_E32, S0=u32(-7, 16777217)).D0)) == [-7.0, 16777216.0]
  assert list(run(VOP1Op.V_CVT_I32_F32_E32, S0=f32bits(-7.9, 3e9, np.nan)).D0) == [0xfffffff9, 0x7fffffff, 0]

def test_v_ffbh_u32_loop_with_break():
  assert list(run(VOP1Op.V_CLZ_I32_U32_E32, S0=u32(1, 0x80000000, 0)).D0) == [31, 0, 0xffffffff]

# ---- SALU ----
def test_s_add_u32_scc():
  st = run(SOP2Op.S_ADD_U32, S0=0xffffffff, S1=2)
  assert (st.D0, st.SCC) == (1, 1)

def test_s_cselect_b32():
  assert run(SOP2Op.S_CSELECT_B32, S0=5, S1=6, SCC=0).D0 == 6 and run(SOP2Op.S_CSELECT_B32, S0=5, S1=6, SCC=1).D0 == 5

def test_s_ashr_and_bitcmp():
  assert run(SOP2Op.S_ASHR_I32, S0=0x80000000, S1=31).D0 == 0xffffffff
  assert run(SOPCOp.S_BITCMP1_B32, S0=0b100, S1=34).SCC == 1

def test_s_ff1_and_saveexec():
  assert run(SOP1Op.S_CTZ_I32_B32, S0=0b1000).D0 == 3 and run(SOP1Op.S_CTZ_I32_B32, S0=0).D0 == 0xffffffff
  st = run(SOP1Op.S_AND_SAVEEXEC_B32, S0=0b0110, EXEC=0b0011)
  assert (st.D0, st.EXEC, st.SCC) == (0b0011, 0b0010, 1)

# ---- memory ----
def test_global_load_b32_and_b128():
  m = Mem(64)
  m.b[:32] = np.arange(32, dtype=np.uint8)
  st = run(GLOBALOp.GLOBAL_LOAD_B32, ADDR=np.array([0, 4], np.uint64), MEM=m)
  assert list(st.VDATA) == [0x03020100, 0x07060504]
  st = run(GLOBALOp.GLOBAL_LOAD_B128, ADDR=np.array([16], np.uint64), MEM=m)
  assert st.VDATA.shape == (1, 4) and list(st.VDATA[0]) == [0x13121110, 0x17161514, 0x1b1a1918, 0x1f1e1d1c]

def test_ds_load_store_and_atomic():
  m = Mem(64)
  run(DSOp.DS_STORE_B32, ADDR=np.array([0, 8], np.uint64), OFFSET=4, DATA=u32(0xdeadbeef, 7), MEM=m)
  assert list(run(DSOp.DS_LOAD_B32, ADDR=np.array([4, 12], np.uint64), OFFSET=0, MEM=m).RETURN_DATA) == [0xdeadbeef, 7]
  st = run(DSOp.DS_ADD_RTN_U32, ADDR=np.array([12], np.uint64), OFFSET=0, DATA=u32(0xfffffffa), MEM=m)
  assert list(st.RETURN_DATA) == [7] and m.read([12], 4)[0] == 1
  # the rdna3 atomic and byte entries never name the instruction offset; the hardware adds it (ADDR is the bare address VGPR)
  st = run(DSOp.DS_ADD_RTN_U32, ADDR=np.array([4], np.uint64), OFFSET=8, DATA=u32(2), MEM=m)
  assert list(st.RETURN_DATA) == [1] and m.read([12], 4)[0] == 3
  run(DSOp.DS_STORE_B8, ADDR=np.array([0], np.uint64), OFFSET=13, DATA=u32(0x1ab), MEM=m)
  assert m.read([12], 4)[0] == 0xab03
  assert compile_op("rdna3", DSOp.DS_ADD_RTN_U32).mem_rmw

def test_unsupported_is_reported():
  from tinygrad.runtime.autogen.amd.rdna3.enum import MIMGOp
  with pytest.raises(Unsupported): compile_op("rdna3", MIMGOp.IMAGE_SAMPLE)  # no pcode in the wheel
  assert compile_op("gfx1100", VOP2Op.V_ADD_F32_E32).kind == "vector"

# ---- packed / sub-dword writes, byte permutes, bit reversal (expected values worked by hand from the ISA text) ----
def test_v_pk_add_f16_halves_independent():
  a = np.array([[1.5, 65504.0], [-0.0, np.inf]], np.float16)  # [lo, hi] per lane
  b = np.array([[2.25, 65504.0], [-0.0, -1.0]], np.float16)
  st = run(VOP3POp.V_PK_ADD_F16, S0=a.view(np.uint32).astype(np.uint64).ravel(), S1=b.view(np.uint32).astype(np.uint64).ravel())
  got = st.D0.astype(np.uint32).view(np.float16).reshape(2, 2)
  assert got[0, 0] == 3.75 and got[0, 1] == np.inf and got.view(np.uint16)[1, 0] == 0x8000 and got[1, 1] == np.inf

def test_v_pk_mad_i16_wraps_per_half():
  st = run(VOP3POp.V_PK_MAD_I16, S0=u32(0x7fff_0003), S1=u32(0x0002_fffe), S2=u32(0x0001_0001))
  assert int(st.D0[0]) == (((0x7fff * 2 + 1) & 0xffff) << 16) | ((3 * -2 + 1) & 0xffff)

def test_global_load_d16_hi_i8_keeps_low_half():
  m = Mem(8)
  m.b[3] = 0x80
  st = run(GLOBALOp.GLOBAL_LOAD_D16_HI_I8, ADDR=np.array([3], np.uint64), MEM=m, VDATA=u32(0x1234_5678))
  assert int(st.VDATA[0]) == 0xff80_5678

def test_v_perm_b32_selectors():
  # bytes of {S0, S1}: 0-3 from S1, 4-7 from S0; 8-11 replicate sign bits of bytes 1,3,5,7; 12 -> 0x00; >= 13 -> 0xff
  st = run(VOP3Op.V_PERM_B32, S0=u32(0x8899aabb, 0x11223344), S1=u32(0xccddeeff, 0x55667788), S2=u32(0x07000401, 0x0c0d0b08))
  assert int(st.D0[0]) == 0x88ffbbee and int(st.D0[1]) == 0x00ff0000

def test_v_sat_pk_u8_i16_and_brev():
  assert int(run(VOP1Op.V_SAT_PK_U8_I16_E32, S0=u32(0xff80_0123)).D0[0]) == 0x00ff
  assert int(run(VOP1Op.V_SAT_PK_U8_I16_E32, S0=u32(0x0042_0100)).D0[0]) == 0x42ff
  assert run(SOP1Op.S_BREV_B32, S0=0x0000_0001).D0 == 0x8000_0000 and run(SOP1Op.S_BREV_B64, S0=0x3).D0 == 0xc000_0000_0000_0000
  assert list(run(VOP1Op.V_BFREV_B32_E32, S0=u32(0x1, 0xf0000000)).D0) == [0x80000000, 0xf]

def test_s_min_f32_signed_zero_and_nan():
  f = lambda x: int(np.float32(x).view(np.uint32))  # noqa: E731
  assert run(SOP2Op.S_MIN_F32, S0=f(0.0), S1=f(-0.0), MODE_IEEE=False).D0 == 0x80000000
  assert run(SOP2Op.S_MIN_F32, S0=f(np.nan), S1=f(2.0), MODE_IEEE=False).D0 == f(2.0)
  assert run(SOP2Op.S_MAX_F32, S0=f(-1.0), S1=f(3.0), MODE_IEEE=True).D0 == f(3.0)

def test_v_readfirstlane_picks_lowest_active_lane():
  c = compile_op("rdna3", VOP1Op.V_READFIRSTLANE_B32_E32)
  vgpr = np.arange(32 * 4, dtype=np.uint32).reshape(32, 4)
  st = OpState(VGPR=vgpr, SRC0=2, EXEC=0b1000, WAVE32=True, WAVE64=False)
  c.fn(st)
  assert st.D0 == 3 * 4 + 2
