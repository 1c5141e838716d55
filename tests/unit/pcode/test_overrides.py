"""The override table (emu.pcode.overrides): every corrected or hand-written entry has a test stating why it is needed.
Expected values come from numpy's IEEE arithmetic or from constants published independently of the ISA text."""
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.rdna3.enum import SOPPOp, VOP1Op, VOP3Op, VOP3POp, VOP3SDOp
from emu.pcode import OpState, compile_op, ops_for
from emu.pcode.abi import MODE_DEFAULTS
from emu.pcode.overrides import EXECUTOR_OWNED, PCODE_FIXES
from emu.pcode.handwritten import HANDWRITTEN, HANDWRITTEN_RDNA3
from tinygrad.renderer.amd.dsl import s as sreg, v as vreg
from emu.amd import run_program
from emu.amd.arch import get_spec
from emu.common.memory import MemoryMap

def call(op, **kw):
  c = compile_op("rdna3", op)
  n = next(len(v) for v in kw.values() if isinstance(v, np.ndarray))
  st = OpState(n=n, laneId=np.arange(n, dtype=np.uint64), D0=np.zeros(n, np.uint64), **kw)
  c.fn(st)
  return st

def b32(x): return np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
def b64(x): return np.asarray(x, np.float64).view(np.uint64)
def neg32(b): return b ^ np.uint64(0x80000000)
def neg64(b): return b ^ np.uint64(1 << 63)

def llvm_fdiv_f32(a, b, flush:bool=False):
  """The gfx11 f32 division sequence LLVM emits: div_scale x2, rcp, 4 fma, div_fmas, div_fixup. flush: the function's MODE flushes
  f32 denormals, and LLVM keeps denormals only around the fma steps (s_denorm_mode), so div_scale, rcp, div_fmas and div_fixup run
  flushing."""
  n, d = b32(a), b32(b)
  m = MODE_DEFAULTS | {"MODE_DENORM32": 0 if flush else 3}
  den = call(VOP3SDOp.V_DIV_SCALE_F32, S0=d, S1=d, S2=n, **m).D0
  st = call(VOP3SDOp.V_DIV_SCALE_F32, S0=n, S1=d, S2=n, **m)
  num, vcc = st.D0, st.VCC
  rcp = call(VOP1Op.V_RCP_F32_E32, S0=den, **m).D0
  fma = lambda x, y, z: call(VOP3Op.V_FMA_F32, S0=x, S1=y, S2=z).D0  # noqa: E731
  e = fma(neg32(den), rcp, b32(np.ones(len(n), np.float32)))
  rcp = fma(e, rcp, rcp)
  q = call(VOP3Op.V_MUL_F32, S0=num, S1=rcp).D0
  r = fma(neg32(den), q, num)
  q = fma(r, rcp, q)
  r = fma(neg32(den), q, num)
  q = call(VOP3Op.V_DIV_FMAS_F32, S0=r, S1=rcp, S2=q, VCC=vcc, **m).D0
  return call(VOP3Op.V_DIV_FIXUP_F32, S0=q, S1=d, S2=n, **m).D0

def llvm_fdiv_f64(a, b):
  n, d = b64(a), b64(b)
  den = call(VOP3SDOp.V_DIV_SCALE_F64, S0=d, S1=d, S2=n).D0
  st = call(VOP3SDOp.V_DIV_SCALE_F64, S0=n, S1=d, S2=n)
  num, vcc = st.D0, st.VCC
  fma = lambda x, y, z: call(VOP3Op.V_FMA_F64, S0=x, S1=y, S2=z).D0  # noqa: E731
  one = b64(np.ones(len(n)))
  rcp = call(VOP1Op.V_RCP_F64_E32, S0=den).D0
  rcp = fma(fma(neg64(den), rcp, one), rcp, rcp)
  rcp = fma(fma(neg64(den), rcp, one), rcp, rcp)
  q = call(VOP3Op.V_MUL_F64, S0=num, S1=rcp).D0
  r = fma(neg64(den), q, num)
  q = call(VOP3Op.V_DIV_FMAS_F64, S0=r, S1=rcp, S2=q, VCC=vcc).D0
  return call(VOP3Op.V_DIV_FIXUP_F64, S0=q, S1=d, S2=n).D0

def assert_quotients(a, b, got, want):
  """Bitwise equal results (any NaN matching any NaN), naming the first operand pairs that differ."""
  ok = (got.view(want.dtype.str.replace("f", "u")) == want.view(want.dtype.str.replace("f", "u"))) | (np.isnan(got) & np.isnan(want))
  assert ok.all(), [(a[i], b[i], got[i], want[i]) for i in np.nonzero(~ok)[0][:5]]

F32_CASES = [(1.0, 3.0), (-7.0, 2.0), (2.0, 3.0), (1e-40, 3.0), (3.0, 1e-40), (1e-40, 1e-41), (1e-45, 2.0), (3e38, 1e-3), (3e38, 1e-30),
             (1e-30, 3e38), (1.0, 3e38), (5e37, 3e38), (1e-38, 3e38), (1e-20, 1e19), (3e38, 0.5), (1.0, 0.0), (-1.0, 0.0), (0.0, 0.0),
             (0.0, -5.0), (np.inf, 2.0), (2.0, -np.inf), (np.inf, np.inf), (np.nan, 1.0), (1.0, np.nan), (-0.0, 3.0), (1e-44, 1e-45),
             (1.17549435e-38, 0.9999999), (16777215.0, 16777216.0), (1e-42, 1e30), (3.4028235e38, 1.1754944e-38)]

def test_llvm_f32_division_is_correctly_rounded():
  a = np.array([x for x, _ in F32_CASES], np.float32)
  b = np.array([y for _, y in F32_CASES], np.float32)
  rng = np.random.default_rng(0)
  ra = (rng.standard_normal(2000) * 2.0 ** rng.integers(-140, 127, 2000)).astype(np.float32)
  rb = (rng.standard_normal(2000) * 2.0 ** rng.integers(-140, 127, 2000)).astype(np.float32)
  a, b = np.concatenate([a, ra]), np.concatenate([b, rb])
  with np.errstate(all="ignore"): want = a / b
  got = llvm_fdiv_f32(a, b).astype(np.uint32).view(np.float32)
  assert_quotients(a, b, got, want)

def test_llvm_f64_division_is_correctly_rounded():
  cases = [(1.0, 3.0), (1e-310, 3.0), (3.0, 1e-310), (1e308, 1e-10), (1e-300, 1e300), (1.0, 1e308), (1.0, 0.0), (0.0, 0.0), (np.inf, np.inf),
           (np.nan, 2.0), (-0.0, 1.0), (5e-324, 2.0)]
  a, b = np.array([x for x, _ in cases]), np.array([y for _, y in cases])
  rng = np.random.default_rng(1)
  a = np.concatenate([a, rng.standard_normal(500) * 2.0 ** rng.integers(-900, 900, 500)])
  b = np.concatenate([b, rng.standard_normal(500) * 2.0 ** rng.integers(-900, 900, 500)])
  with np.errstate(all="ignore"): want = a / b
  got = llvm_fdiv_f64(a, b).view(np.float64)
  assert_quotients(a, b, got, want)

def test_llvm_division_of_random_bit_patterns_is_correctly_rounded():
  # every exponent field equally likely: tiny numerators over small denominators, denormals, infinities and NaNs included
  rng = np.random.default_rng(2)
  a32, b32_ = (rng.integers(0, 2**32, 20000, dtype=np.uint64).astype(np.uint32).view(np.float32) for _ in range(2))
  with np.errstate(all="ignore"): want32 = a32 / b32_
  got32 = llvm_fdiv_f32(a32, b32_).astype(np.uint32).view(np.float32)
  assert_quotients(a32, b32_, got32, want32)
  a64, b64_ = (rng.integers(0, 2**64, 20000, dtype=np.uint64).view(np.float64) for _ in range(2))
  with np.errstate(all="ignore"): want64 = a64 / b64_
  got64 = llvm_fdiv_f64(a64, b64_).view(np.float64)
  assert_quotients(a64, b64_, got64, want64)

def test_llvm_f32_division_in_flush_mode_is_ftz_division():
  # with f32 denormals flushed the sequence gives flush(flush(a) / flush(b)): x / denormal = +-inf, denormal / x = +-0
  from emu.pcode.numerics import flush_denorm
  rng = np.random.default_rng(3)
  with np.errstate(over="ignore"): ra, rb = ((rng.standard_normal(5000) * 2.0 ** rng.integers(-150, 128, 5000)).astype(np.float32) for _ in "ab")
  a = np.concatenate([np.array([1.0, 1e-40, 1.0, 1e-40, 3e-39, 1e-38], np.float32), ra])
  b = np.concatenate([np.array([1e-45, 1.0, -1e-40, 1e-40, 1e3, 4.0], np.float32), rb])
  with np.errstate(all="ignore"): want = flush_denorm(flush_denorm(a) / flush_denorm(b))
  got = llvm_fdiv_f32(a, b, flush=True).astype(np.uint32).view(np.float32)
  assert_quotients(a, b, got, want)

def test_div_scale_sets_vcc_only_when_scaling_one_operand():
  # 1/3: no scaling, D0 = S0 (the vendor pcode leaves D0 unwritten); 1e-40 / 3: numerator scaled by 2**64 and VCC set
  # (tests/unit/amd/test_div_scale.py has the other cases on every arch)
  st = call(VOP3SDOp.V_DIV_SCALE_F32, S0=b32([1.0, 1e-40]), S1=b32([3.0, 3.0]), S2=b32([1.0, 1e-40]))
  assert list(st.VCC) == [0, 1] and st.D0[0] == b32(1.0) and st.D0[1] == b32(np.float32(1e-40) * np.float32(2.0 ** 64))

def test_div_fixup_f16_special_cases():
  h = lambda *v: np.array(v, np.float16).view(np.uint16).astype(np.uint64)  # noqa: E731
  st = call(VOP3Op.V_DIV_FIXUP_F16, S0=h(0.5, 0.5, 0.5, 0.5, 0.5), S1=h(2.0, 0.0, -np.inf, 0.0, -4.0), S2=h(1.0, -3.0, 1.0, 0.0, 2.0))
  got = st.D0.astype(np.uint16).view(np.float16)
  assert got[0] == 0.5 and got[1] == -np.inf and got[2] == 0 and np.signbit(got[2]) and np.isnan(got[3]) and got[4] == -0.5

# 2/pi in hex, 24 bits per word: the two_over_pi table of fdlibm's __kernel_rem_pio2 (Sun Microsystems, 1993)
TWO_OVER_PI_HEX = "A2F9836E4E441529FC2757D1F534DDC0DB6295993C439041FE5163"

def test_trig_preop_f64_walks_the_bits_of_2_over_pi():
  ref = int(TWO_OVER_PI_HEX, 16)
  nbits = 4 * len(TWO_OVER_PI_HEX)
  st = call(VOP3Op.V_TRIG_PREOP_F64, S0=b64([1.0, 1.0, 1.0]), S1=np.array([0, 1, 2], np.uint64))
  for k, v in enumerate(st.D0.view(np.float64)):
    chunk = (ref >> (nbits - 53 * (k + 1))) & ((1 << 53) - 1)
    assert v == np.ldexp(float(chunk), -53 * (k + 1)), k
  # a large input shifts the window by its exponent field's excess over 1077 (2**60: 1083 - 1077 = 6 bits)
  big = call(VOP3Op.V_TRIG_PREOP_F64, S0=b64([2.0 ** 60]), S1=np.array([0], np.uint64)).D0.view(np.float64)[0]
  assert big == np.ldexp(float((ref >> (nbits - 53 - 6)) & ((1 << 53) - 1)), -53 - 6)

def test_cvt_off_f32_i4_table():
  # vendor entry: an empty CVT_OFF_TABLE; the table is the signed 4-bit value / 16
  got = call(VOP1Op.V_CVT_OFF_F32_I4_E32, S0=np.arange(16, dtype=np.uint64) | np.uint64(0xf0)).D0.astype(np.uint32).view(np.float32)
  assert list(got) == [i / 16 for i in range(8)] + [(i - 16) / 16 for i in range(8, 16)]

@pytest.mark.parametrize("arch,data,addr", [("gfx1100", "data", "addr"), ("gfx1201", "vsrc", "vaddr")])
def test_global_addtid_ops_address_sgpr_base_plus_offset_plus_lane_times_4(arch, data, addr):
  # GLOBAL_STORE_ADDTID_B32 / GLOBAL_LOAD_ADDTID_B32 (the vendor text): the address is SGPR_ADDR + INST_OFFSET[11:0] + laneId * 4,
  # no address VGPR (v255 here: reading it as an address pair would run past the file). Lane i stores 10*i + 7 at byte 16 + 4*i
  # of the buffer, worked by hand, and the load reads every lane's word back into v2 without GLC.
  spec = get_spec(arch)
  buf = np.zeros(64, dtype=np.uint32)
  mem = MemoryMap()
  mem.map(buf.ctypes.data, buf.nbytes, "buf", backing=buf.view(np.uint8))
  off = {"offset": 16} if arch == "gfx1100" else {"ioffset": 16}
  store = spec.ins.global_store_addtid_b32(**{data: vreg[1], addr: vreg[255]}, saddr=sreg[0:1], **off)
  load = spec.ins.global_load_addtid_b32(vdst=vreg[2], **{addr: vreg[255]}, saddr=sreg[0:1], **off)
  st = run_program([store, load], arch=arch, lanes=32, sgprs={0: buf.ctypes.data}, vgprs={1: np.arange(32) * 10 + 7}, memory=mem)
  assert list(buf[4:36]) == [10 * i + 7 for i in range(32)] and not buf[:4].any() and not buf[36:].any()
  assert list(st.vgpr[0, :, 2]) == [10 * i + 7 for i in range(32)]

@pytest.mark.parametrize("name,src", [("S_SETREG_B32", "S0"), ("S_SETREG_IMM32_B32", "SIMM32")])
def test_setreg_writes_the_field_at_its_offset(name, src):
  # rdna3's vendor text never shifts the field mask by offset. MODE (hwreg 1) = 0x205; offset 4, size 4, value 0xf: bits [7:4]
  # become 0xf, the others stay: 0x2f5. Offset 8, size 2, value 0x7 (bits above the field dropped): bits [9:8] = 0b11: 0x3f5.
  from tinygrad.runtime.autogen.amd.rdna3.enum import SOPKOp
  op = compile_op("rdna3", SOPKOp[name])
  assert op.override
  hw = [0] * 64
  hw[1] = 0x205
  for offset, size, value, want in ((4, 4, 0xf, 0x2f5), (8, 2, 0x7, 0x3f5)):
    op.fn(OpState(SIMM16=1 | offset << 6 | (size - 1) << 11, HW_REGISTERS=hw, **{src: value}))
    assert hw[1] == want and hw[0] == 0 and hw[2] == 0, (offset, size)

def test_every_override_has_a_reason_and_compiles():
  names = {op.name: op for op in ops_for("rdna3")}
  for name in (*EXECUTOR_OWNED, *PCODE_FIXES, *HANDWRITTEN, *HANDWRITTEN_RDNA3):
    if name not in names: continue
    c = compile_op("rdna3", names[name])
    assert c.override, name
    assert (c.kind == "executor") == (name in EXECUTOR_OWNED), name
  assert compile_op("rdna3", SOPPOp.S_ENDPGM).fn is None

@pytest.mark.parametrize("arch", ["rdna3"])
def test_no_unsupported_ops(arch):
  from emu.pcode import Unsupported
  bad = []
  for op in ops_for(arch):
    try: compile_op(arch, op)
    except Unsupported as e: bad.append(str(e))
  assert bad == [], bad[:5]

def test_rndne_rounds_exactly():
  x = np.array([0.49999997, 0.5, 1.5, 2.5, -2.5, -0.5, 8388609.0, np.inf, -0.0], np.float32)
  got = call(VOP1Op.V_RNDNE_F32_E32, S0=b32(x)).D0.astype(np.uint32).view(np.float32)
  assert got.view(np.uint32).tolist() == np.rint(x).view(np.uint32).tolist()
  x64 = np.array([0.49999999999999994, 2.5, 4503599627370497.0])
  assert call(VOP1Op.V_RNDNE_F64_E32, S0=b64(x64)).D0.view(np.float64).tolist() == np.rint(x64).tolist()

RNDNE_SIBLINGS = [("rdna3", "VOP1Op", "V_RNDNE_F16_E32", np.float16), ("rdna4", "VOP1Op", "V_RNDNE_F16_E32", np.float16),
                  ("rdna4", "SOP1Op", "S_RNDNE_F32", np.float32), ("rdna4", "SOP1Op", "S_RNDNE_F16", np.float16)]

@pytest.mark.parametrize("arch,enum,name,ft", RNDNE_SIBLINGS, ids=[f"{a}-{n}" for a, _, n, _ in RNDNE_SIBLINGS])
def test_rndne_siblings_round_to_nearest_even_exactly(arch, enum, name, ft):
  # the round-half-even rule (emu.pcode.rules: rint instead of floor(x + 0.5)) on the f16 and scalar forms: the largest value below 0.5
  # rounds to 0, ties to even
  import importlib
  op = getattr(getattr(importlib.import_module(f"tinygrad.runtime.autogen.amd.{arch}.enum"), enum), name)
  below_half = np.nextafter(ft(0.5), ft(0))
  x = np.array([below_half, 0.5, 1.5, 2.5, -2.5, -0.5, np.inf, -0.0], ft)
  ut = np.uint16 if ft is np.float16 else np.uint32
  st = OpState(n=len(x), laneId=np.arange(len(x), dtype=np.uint64), D0=np.zeros(len(x), np.uint64), S0=x.view(ut).astype(np.uint64))
  c = compile_op(arch, op)
  if c.kind == "scalar":
    got = [int((st.__dict__.update(S0=int(v), D0=0), c.fn(st), st.D0)[2]) for v in x.view(ut)]
  else:
    c.fn(st)
    got = [int(v) for v in st.D0]
  assert [g & ((1 << (8 * np.dtype(ft).itemsize)) - 1) for g in got] == np.rint(x).view(ut).tolist()

def test_rdna4_scalar_rsq_f16_rounds_once():
  # V_S_RSQ_F16 (rdna4): 1/sqrt(x) from f64, rounded once to f16; the high half is zero. 1/sqrt(4) = 0.5, 1/sqrt(2) = 0.70703125 (f16)
  from tinygrad.runtime.autogen.amd.rdna4.enum import VOP3Op as R4
  c = compile_op("rdna4", R4.V_S_RSQ_F16)
  x = np.array([4.0, 2.0, 0.25, 3.0], np.float16)
  st = OpState(n=1, laneId=np.zeros(1, np.uint64), D0=np.zeros(1, np.uint64))
  for v in x:
    st.S0 = np.array([int(np.array(v).view(np.uint16))], np.uint64) if c.kind == "vector" else int(np.array(v).view(np.uint16))
    c.fn(st)
    want = int(np.array(1 / np.sqrt(np.float64(v)), np.float16).view(np.uint16))
    assert int(np.asarray(st.D0).reshape(-1)[0]) == want, v

@pytest.mark.parametrize("arch", ["rdna3"])   # rdna4 renames it V_MINMAX_NUM_F16
def test_minmax_f16_is_max_of_min_and_s2(arch):
  # V_MINMAX_F16: max(min(S0, S1), S2); IEEE mode: a quiet NaN loses to a number (min(NaN, 3) = 3)
  import importlib
  op = importlib.import_module(f"tinygrad.runtime.autogen.amd.{arch}.enum").VOP3Op.V_MINMAX_F16
  h = lambda *v: np.array(v, np.float16).view(np.uint16).astype(np.uint64)  # noqa: E731
  st = OpState(n=3, laneId=np.arange(3, dtype=np.uint64), D0=np.zeros(3, np.uint64), S0=h(1.0, 5.0, np.nan), S1=h(3.0, 4.0, 3.0),
               S2=h(2.0, 2.0, 1.0), MODE_IEEE=True, OPSEL=0)
  c = compile_op(arch, op)
  c.fn(st)
  assert (st.D0 & 0xffff).astype(np.uint16).view(np.float16).tolist() == [2.0, 4.0, 3.0]

# ---- WMMA: A row i in lane i (and i + 16), B column j in lane j, C/D element [2v + lane // 16][lane % 16] in register v ----
def wmma_regs(a, b, c, w:int, c_dtype):
  """Pack A/B (16x16 raw w-bit codes) and C (16x16 of c_dtype) into a (32, 64) VGPR file at v0, v8, v16 (by hand, from the layout)."""
  vgpr = np.zeros((32, 64), np.uint32)
  for lane in range(32):
    for k in range(16):
      vgpr[lane, (k * w) // 32] |= np.uint32(int(a[lane % 16, k]) << ((k * w) % 32))
      vgpr[lane, 8 + (k * w) // 32] |= np.uint32(int(b[k, lane % 16]) << ((k * w) % 32))
    for v in range(8):
      vgpr[lane, 16 + v] = np.array([c[2 * v + lane // 16, lane % 16]], c_dtype).view(np.uint32 if c_dtype != np.float16 else np.uint16)[0]
  return vgpr

def run_wmma(op, vgpr, opsel=0, neg=0, clamp=0):
  c = compile_op("rdna3", op)
  assert c.kind == "wave"
  st = OpState(VGPR=vgpr, SRC0=0, SRC1=8, SRC2=16, VDST=24, OPSEL=opsel, NEG=neg, CLAMP=clamp, EXEC=0xffffffff, WAVE32=True)
  c.fn(st)
  return np.array([[st.VGPR[(r % 2) * 16 + col, 24 + r // 2] for col in range(16)] for r in range(16)], np.uint32)

def test_wmma_f32_f16_matches_numpy_matmul():
  rng = np.random.default_rng(2)
  a, b = rng.standard_normal((16, 16)).astype(np.float16), rng.standard_normal((16, 16)).astype(np.float16)
  c = rng.standard_normal((16, 16)).astype(np.float32)
  d = run_wmma(VOP3POp.V_WMMA_F32_16X16X16_F16, wmma_regs(a.view(np.uint16), b.view(np.uint16), c, 16, np.float32)).view(np.float32)
  want = a.astype(np.float64) @ b.astype(np.float64) + c
  assert np.allclose(d, want, rtol=1e-6, atol=1e-6)

def test_wmma_hand_worked_identity_and_i8():
  # A = I, B[k][j] = k*16 + j, C = 1: D[r][j] = r*16 + j + 1; D[3][5] sits in register v25 (= 24 + 3 // 2) of lane 16 + 5
  eye, bm = np.eye(16, dtype=np.float16), np.arange(256, dtype=np.float16).reshape(16, 16)
  d = run_wmma(VOP3POp.V_WMMA_F32_16X16X16_F16, wmma_regs(eye.view(np.uint16), bm.view(np.uint16), np.ones((16, 16), np.float32), 16,
                                                          np.float32)).view(np.float32)
  assert d[3, 5] == 3 * 16 + 5 + 1 and (d == np.arange(256).reshape(16, 16) + 1).all()
  # iu8 with A signed (NEG bit 0): row 0 of A all -1 (0xff), B all 2 -> D[0][j] = -32; unsigned A reads 255 -> 16 * 510
  a8 = np.zeros((16, 16), np.uint8); a8[0] = 0xff
  b8 = np.full((16, 16), 2, np.uint8)
  regs = wmma_regs(a8, b8, np.zeros((16, 16), np.int32), 8, np.int32)
  assert run_wmma(VOP3POp.V_WMMA_I32_16X16X16_IU8, regs.copy(), neg=1).view(np.int32)[0, 7] == -32
  assert run_wmma(VOP3POp.V_WMMA_I32_16X16X16_IU8, regs.copy(), neg=0).view(np.int32)[0, 7] == 16 * 510

def test_div_fmas_f32_rounds_a_negative_sum_just_past_a_tie_once():
  # a*b + c = -(1 + 2**-24 + 4688 * 2**-70): just beyond the f32 tie 1 + 2**-24, by less than a float64 ulp. Its float64 value
  # truncated is the tie itself; rounding that again picks the even -1.0, the single rounding gives -(1 + 2**-23). (The sticky
  # bit was once taken from RZ != RU, which are equal for every negative sum.) Expected value: Fraction arithmetic.
  from fractions import Fraction
  a, b, c = np.float32(-(2.0 ** -24) * (1 + 2896 * 2.0 ** -23)), np.float32(1 - 2895 * 2.0 ** -23), np.float32(-1.0)
  exact = Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
  assert exact == -(1 + Fraction(1, 2 ** 24) + Fraction(4688, 2 ** 70))
  want = np.float32(-(1 + 2.0 ** -23))   # the nearest f32 to `exact` (above the tie in magnitude)
  for sign in (1, -1):                     # and the positive mirror image
    args = [b32(np.array([v * s])) for v, s in ((a, sign), (b, 1), (c, sign))]
    got = call(VOP3Op.V_DIV_FMAS_F32, S0=args[0], S1=args[1], S2=args[2], VCC=np.zeros(1, np.uint64)).D0
    assert int(got[0]) == int(b32(np.array([want * sign]))[0])

@pytest.mark.parametrize("arch, isa, n", [("gfx1100", "rdna3", 32), ("gfx1201", "rdna4", 32), ("gfx942", "cdna", 64)])
def test_ds_condxchg32_rtn_b64_writes_each_dword_whose_bit_31_is_set(arch, isa, n):
  # ISA text: per dword of the 64-bit data, write its low 31 bits (bit 31 cleared) where its bit 31 is set; return both old dwords
  import importlib
  I = importlib.import_module(f"tinygrad.runtime.autogen.amd.{isa}.ins")
  lanes = np.arange(n, dtype=np.uint32)
  lo = np.where(lanes % 2 == 0, 0x80000033, 0x00000044).astype(np.uint32)   # even lanes write 0x33, odd lanes keep theirs
  store = I.ds_write_b64 if isa == "cdna" else I.ds_store_b64
  prog = [store(addr=I.v[0], data0=I.v[2:3]), I.ds_condxchg32_rtn_b64(vdst=I.v[6:7], addr=I.v[0], data0=I.v[4:5])]
  st = run_program(prog, arch=arch, lanes=n, vgprs={0: lanes * 8, 2: 0x1000 + lanes, 3: 0x2000 + lanes, 4: lo, 5: 0xffffffff},
                   lds_bytes=8 * n)
  words = st.lds.view(np.uint32).reshape(n, 2)
  assert (st.vgpr[0, :, 6] == 0x1000 + lanes).all() and (st.vgpr[0, :, 7] == 0x2000 + lanes).all()   # the old dwords
  assert (words[:, 0] == np.where(lanes % 2 == 0, 0x33, 0x1000 + lanes)).all() and (words[:, 1] == 0x7fffffff).all()
