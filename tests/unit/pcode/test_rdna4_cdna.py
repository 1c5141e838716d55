"""rdna4 and cdna specifics: memory pseudocode mapped onto the ABI's ADDR convention, IEEE 754-2019 min/max, chained lane-mask
writes, fp8 conversions and the RDNA4 WMMA register layout. Expected values come from numpy or the ISA text worked by hand."""
import numpy as np
from tinygrad.runtime.autogen.amd.cdna import enum as cdna
from tinygrad.runtime.autogen.amd.rdna4 import enum as rdna4
from emu.pcode import OpState, compile_op

def run(arch, op, **kw):
  c = compile_op(arch, op)
  n = next((len(v) for v in kw.values() if isinstance(v, np.ndarray) and v.ndim == 1), 1)
  st = OpState(n=n, laneId=np.arange(n, dtype=np.uint64), **kw)
  if "D0" in c.reads and "D0" not in kw: st.D0 = np.zeros(n, np.uint64)
  c.fn(st)
  return st

class Mem:
  """A little-endian byte array (VectorMemory and ScalarMemory)."""
  def __init__(self, size): self.b = np.arange(size, dtype=np.uint8)
  def read(self, addrs, nbytes):
    one = lambda a: int.from_bytes(self.b[int(a):int(a) + nbytes].tobytes(), "little")
    return one(addrs) if isinstance(addrs, int) else np.array([one(a) for a in addrs], np.uint64)
  def write(self, addrs, values, nbytes):
    for a, v in zip(addrs, values): self.b[int(a):int(a) + nbytes] = np.frombuffer(int(v).to_bytes(nbytes, "little"), np.uint8)

def f32(*v): return np.array(v, np.float32).view(np.uint32).astype(np.uint64)
def asf32(b): return np.asarray(b).astype(np.uint32).view(np.float32)

# ---- memory: every arch's Calc*Addr(...) is the executor's effective address ADDR (DS: the address VGPR plus OFFSET) ----
def test_rdna4_global_and_scalar_loads_read_addr():
  m = Mem(64)
  st = run("rdna4", rdna4.VGLOBALOp.GLOBAL_LOAD_B32, ADDR=np.array([4, 9], np.uint64), MEM=m)
  assert list(st.VDATA) == [0x07060504, 0x0c0b0a09]
  c = compile_op("rdna4", rdna4.SMEMOp.S_LOAD_B64)
  assert {"ADDR", "MEM"} <= c.reads and not c.reads & {"sgpr_base", "offset", "SBASE"}
  st = OpState(ADDR=8, MEM=m, SDATA=0)
  c.fn(st)
  assert st.SDATA == 0x0f0e0d0c0b0a0908

def test_cdna_scalar_and_global_loads_read_addr():
  m = Mem(64)
  c = compile_op("cdna", cdna.SMEMOp.S_LOAD_DWORD)
  assert "SBASE" not in c.reads and "ADDR" in c.reads
  st = OpState(ADDR=16, MEM=m, SDATA=0)
  c.fn(st)
  assert st.SDATA == 0x13121110
  assert list(run("cdna", cdna.GLOBALOp.GLOBAL_LOAD_DWORD, ADDR=np.array([0], np.uint64), MEM=m).VDATA) == [0x03020100]

def test_ds_atomics_add_the_instruction_offset():
  for arch, op in (("rdna4", rdna4.DSOp.DS_ADD_RTN_U32), ("cdna", cdna.DSOp.DS_ADD_RTN_U32)):
    m = Mem(64)
    st = run(arch, op, ADDR=np.array([4], np.uint64), OFFSET=8, OFFSET0=8, OFFSET1=0, DATA=np.array([0x10], np.uint64), MEM=m)
    assert list(st.RETURN_DATA) == [0x0f0e0d0c], arch
    assert m.read([12], 4)[0] == 0x0f0e0d1c, arch
  m = Mem(64)
  run("rdna4", rdna4.DSOp.DS_STORE_B32, ADDR=np.array([0], np.uint64), OFFSET=4, DATA=np.array([0xdeadbeef], np.uint64), MEM=m)
  assert m.read([4], 4)[0] == 0xdeadbeef

def test_cdna_ds_pk_add_f16_untyped_mem_is_a_dword():
  m = Mem(16)
  m.write([0], [int(np.array([1.5, -2.0], np.float16).view(np.uint32)[0])], 4)
  data = np.array([int(np.array([0.25, 0.5], np.float16).view(np.uint32)[0])], np.uint64)
  run("cdna", cdna.DSOp.DS_PK_ADD_RTN_F16, ADDR=np.array([0], np.uint64), OFFSET=0, DATA=data, MEM=m)
  assert list(np.array([m.read([0], 4)[0]], np.uint32).view(np.float16)) == [1.75, -1.5]

# ---- RDNA4 IEEE 754-2019 minimumNumber / maximumNumber / minimum ----
def test_v_min_num_and_minimum_f32():
  snan = np.array([0x7f800001], np.uint32).view(np.float32)[0]
  a = f32(1.0, np.nan, np.nan, -0.0, 0.0, 2.0)
  b = f32(2.0, 3.0, np.nan, 0.0, -0.0, snan)
  d = asf32(run("rdna4", rdna4.VOP2Op.V_MIN_NUM_F32_E32, S0=a, S1=b).D0)
  assert list(d[[0, 1, 5]]) == [1.0, 3.0, 2.0] and np.isnan(d[2])
  assert np.signbit(d[3]) and np.signbit(d[4])          # min(-0, +0) = -0 either way round
  mx = asf32(run("rdna4", rdna4.VOP2Op.V_MAX_NUM_F32_E32, S0=a, S1=b).D0)
  assert not np.signbit(mx[3]) and not np.signbit(mx[4]) and mx[1] == 3.0
  m = asf32(run("rdna4", rdna4.VOP3Op.V_MINIMUM_F32, S0=a, S1=b).D0)  # NaN-propagating
  assert m[0] == 1.0 and np.isnan(m[1]) and np.isnan(m[5])
  assert np.asarray(m[5]).view(np.uint32) == 0x7fc00001   # the signalling NaN comes back quieted
  m3 = asf32(run("rdna4", rdna4.VOP3Op.V_MIN3_NUM_F32, S0=f32(5.0), S1=f32(np.nan), S2=f32(-1.0)).D0)
  assert list(m3) == [-1.0]

# ---- chained lane-mask writes (cdna V_CMPX: EXEC and the VCC/SDST bit) ----
def test_cdna_v_cmpx_writes_exec_and_d0():
  c = compile_op("cdna", cdna.VOPCOp.V_CMPX_LT_F32_E32)
  assert {"EXEC", "D0"} <= c.writes and {"EXEC", "D0"} <= c.lane_masks
  st = run("cdna", cdna.VOPCOp.V_CMPX_LT_F32_E32, S0=f32(1.0, 3.0, np.nan), S1=f32(2.0, 2.0, 1.0))
  assert list(st.EXEC) == [1, 0, 0] and list(st.D0) == [1, 0, 0]

# ---- fp8 / bf8 (OCP E4M3 / E5M2) ----
def test_fp8_conversions():
  # cdna: the SDWA byte select is the executor's; S0 bits 7:0 hold the byte. E4M3 0x38 = 1.0, 0xc4 = -(1 + 4/8) * 2 = -3.0
  assert list(asf32(run("cdna", cdna.VOP1Op.V_CVT_F32_FP8_E32, S0=np.array([0x38, 0xc4], np.uint64)).D0)) == [1.0, -3.0]
  assert list(asf32(run("cdna", cdna.VOP1Op.V_CVT_F32_BF8_E32, S0=np.array([0x3c, 0x7c], np.uint64)).D0)) == [1.0, np.inf]  # E5M2
  # rdna4 V_CVT_PK_FP8_F32: {fp8(S1), fp8(S0)} into VDST[15:0], bits 31:16 kept; 448 is E4M3's largest finite (0x7e)
  vgpr = np.full((2, 4), 0xabcd0000, np.uint32)
  run("rdna4", rdna4.VOP3Op.V_CVT_PK_FP8_F32, S0=f32(1.0, 448.0), S1=f32(-3.0, 0.5), VDST=2, OPSEL=0, VGPR=vgpr, ROUND_MODE=0)
  assert list(vgpr[:, 2]) == [0xabcdc438, 0xabcd307e]

def test_rdna4_dot4_fp8_bf8():
  # S0 bytes fp8 (1.0, 2.0, -1.0, 0.5) = 0x38 0x40 0xb8 0x30; S1 bytes bf8 (2.0, 0.5, 4.0, 1.0) = 0x40 0x38 0x44 0x3c
  st = run("rdna4", rdna4.VOP3POp.V_DOT4_F32_FP8_BF8, S0=np.array([0x30b84038], np.uint64), S1=np.array([0x3c443840], np.uint64),
           S2=f32(10.0))
  assert list(asf32(st.D0)) == [10.0 + 2.0 + 1.0 - 4.0 + 0.5]

# ---- destination and operand widths ----
def test_cdna_bitop3_assigns_d_the_destination():
  # the vendor text assigns `D.b32 = tmp`: D is the destination D0. TTBL {OMOD[1:0], ABS[2:0], NEG[2:0]} = 0x96 (OMOD 2, ABS 2,
  # NEG 6): minterms S0S1S2 = 001, 010, 100, 111, i.e. S0 ^ S1 ^ S2: 0b1100 ^ 0b1010 ^ 0b1110 = 0b1000
  for op, want in ((cdna.VOP3Op.V_BITOP3_B32, 0xffff0008), (cdna.VOP3Op.V_BITOP3_B16, 0xdead0008)):
    assert "D0" in compile_op("cdna", op).writes, op.name
    st = run("cdna", op, S0=np.array([0xffff000c], np.uint64), S1=np.array([0x0000000a], np.uint64), S2=np.array([0x0000000e], np.uint64),
             OMOD=2, ABS=2, NEG=6, D0=np.array([0xdead0000], np.uint64))
    assert list(st.D0) == [want], op.name

def test_every_op_naming_d_writes_d0():
  import re
  from emu.pcode import ops_for
  from emu.pcode.abi import Unsupported
  for arch in ("rdna3", "rdna4", "cdna"):
    for op in ops_for(arch):
      try: c = compile_op(arch, op)
      except Unsupported: continue
      if c.kind != "executor" and re.search(r"(?m)^[^/]*\bD\.\w+\s*=", c.pcode): assert "D0" in c.writes, (arch, op.name)

def test_cdna_pk_mov_b32_reads_64_bit_sources():
  # S0.u32[OPSEL[0].i32 * 32 + 31 : OPSEL[0].i32 * 32] cannot be bounded by the pcode scan; the operand table says 64 bits.
  # D = { S1 dword OPSEL[1], S0 dword OPSEL[0] }
  c = compile_op("cdna", cdna.VOP3POp.V_PK_MOV_B32)
  assert (c.widths["S0"], c.widths["S1"], c.widths["D0"]) == (64, 64, 64)
  s0, s1 = np.array([0x5555555544444444], np.uint64), np.array([0x7777777766666666], np.uint64)
  for opsel, want in ((0, 0x6666666644444444), (1, 0x6666666655555555), (2, 0x7777777744444444), (3, 0x7777777755555555)):
    assert list(run("cdna", cdna.VOP3POp.V_PK_MOV_B32, S0=s0, S1=s1, OPSEL=opsel).D0) == [want], opsel

def test_operand_widths_are_at_least_the_isa_operand_table():
  from emu.pcode import ops_for
  from emu.pcode.abi import Unsupported
  from emu.pcode.compiler import table_widths
  for arch in ("rdna3", "rdna4", "cdna"):
    for op in ops_for(arch):
      try: c = compile_op(arch, op)
      except Unsupported: continue
      if c.override: continue
      for name, bits in table_widths(arch, op).items():
        if name in c.widths and bits in (32, 64) and name not in c.lane_masks: assert c.widths[name] >= bits, (arch, op.name, name)

# ---- handwritten overrides reached through cdna's _E64 spellings ----
def test_cdna_div_fmas_e64_is_the_handwritten_op():
  c = compile_op("cdna", cdna.VOP3Op.V_DIV_FMAS_F32_E64)
  assert c.override and "handwritten" in c.source
  st = run("cdna", cdna.VOP3Op.V_DIV_FMAS_F32_E64, S0=f32(2.0), S1=f32(3.0), S2=f32(1.0), VCC=np.array([0], np.uint64))
  assert list(asf32(st.D0)) == [7.0]

# ---- RDNA4 WMMA (wave32, no lane duplication) ----
def pack_rdna4_operand(m, w:int, g:int):
  """The ISA guide's A layout (B: pass the transpose): lane l, element e -> m[l % 16][e % g + g * (l // 16) + 2g * (e // g)]."""
  k = m.shape[1]
  per = k // 2
  regs = np.zeros((32, per * w // 32), np.uint64)
  for lane in range(32):
    for e in range(per):
      kk = e % g + g * (lane // 16) + 2 * g * (e // g)
      regs[lane, (e * w) // 32] |= (int(m[lane % 16, kk]) & ((1 << w) - 1)) << ((e * w) % 32)
  return regs.astype(np.uint32)

def pack_rdna4_acc(c_bits, packed:bool):
  regs = np.zeros((32, 4 if packed else 8), np.uint64)
  for lane in range(32):
    for v in range(8):
      bits = int(c_bits[v + 8 * (lane // 16), lane % 16])
      if packed: regs[lane, v // 2] |= bits << (16 * (v % 2))
      else: regs[lane, v] = bits
  return regs.astype(np.uint32)

def run_wmma4(op, a_regs, b_regs, c_regs):
  na, nb, nc = a_regs.shape[1], b_regs.shape[1], c_regs.shape[1]
  vgpr = np.concatenate([a_regs, b_regs, c_regs, np.zeros((32, nc), np.uint32)], axis=1)
  st = OpState(VGPR=vgpr, SRC0=0, SRC1=na, SRC2=na + nb, VDST=na + nb + nc, OPSEL=0, NEG=0, CLAMP=0)
  compile_op("rdna4", op).fn(st)
  d = st.VGPR[:, na + nb + nc:]
  out = np.zeros((16, 16), np.uint64)
  for lane in range(32):
    for v in range(8): out[v + 8 * (lane // 16), lane % 16] = (int(d[lane, v // 2]) >> (16 * (v % 2))) & 0xffff if nc == 4 else d[lane, v]
  return out

def test_rdna4_wmma_f32_f16_matches_numpy_matmul():
  rng = np.random.default_rng(1)
  a, b = rng.standard_normal((16, 16)).astype(np.float16), rng.standard_normal((16, 16)).astype(np.float16)
  c = rng.standard_normal((16, 16)).astype(np.float32)
  d = run_wmma4(rdna4.VOP3POp.V_WMMA_F32_16X16X16_F16, pack_rdna4_operand(a.view(np.uint16), 16, 4),
                pack_rdna4_operand(b.T.copy().view(np.uint16), 16, 4), pack_rdna4_acc(c.view(np.uint32), False))
  want = (a.astype(np.float64) @ b.astype(np.float64) + c).astype(np.float32)
  np.testing.assert_array_equal(d.astype(np.uint32).view(np.float32), want)

def test_rdna4_wmma_hand_worked_element():
  # A[3][5] = 2 sits in lane 16 + 3, register 0, high half (K 5: lanes 16-31 hold K 4..7 of V0/V1, element 1);
  # B[5][7] = 3 in lane 16 + 7, register 0, high half; C[3][7] = 1 in lane 7, register 3. D[3][7] = 2 * 3 + 1 = 7 in lane 7, reg 3.
  a_regs, b_regs, c_regs = np.zeros((32, 4), np.uint32), np.zeros((32, 4), np.uint32), np.zeros((32, 8), np.uint32)
  a_regs[19, 0] = int(np.float16(2.0).view(np.uint16)) << 16
  b_regs[23, 0] = int(np.float16(3.0).view(np.uint16)) << 16
  c_regs[7, 3] = np.float32(1.0).view(np.uint32)
  vgpr = np.concatenate([a_regs, b_regs, c_regs, np.zeros((32, 8), np.uint32)], axis=1)
  st = OpState(VGPR=vgpr, SRC0=0, SRC1=4, SRC2=8, VDST=16, OPSEL=0, NEG=0, CLAMP=0)
  compile_op("rdna4", rdna4.VOP3POp.V_WMMA_F32_16X16X16_F16).fn(st)
  d = st.VGPR[:, 16:24].view(np.float32)
  assert d[7, 3] == 7.0 and np.count_nonzero(d) == 1

def test_rdna4_wmma_f16_out_iu8_and_fp8():
  rng = np.random.default_rng(2)
  a, b = rng.integers(-3, 4, (16, 16)).astype(np.float16), rng.integers(-3, 4, (16, 16)).astype(np.float16)
  c = rng.integers(-8, 8, (16, 16)).astype(np.float16)
  d = run_wmma4(rdna4.VOP3POp.V_WMMA_F16_16X16X16_F16, pack_rdna4_operand(a.view(np.uint16), 16, 4),
                pack_rdna4_operand(b.T.copy().view(np.uint16), 16, 4), pack_rdna4_acc(c.view(np.uint16), True))
  np.testing.assert_array_equal(d.astype(np.uint16).view(np.float16), a.astype(np.float64) @ b.astype(np.float64) + c)
  ai, bi = rng.integers(0, 256, (16, 16)), rng.integers(0, 256, (16, 16))
  d = run_wmma4(rdna4.VOP3POp.V_WMMA_I32_16X16X16_IU8, pack_rdna4_operand(ai, 8, 4), pack_rdna4_operand(bi.T.copy(), 8, 4),
                pack_rdna4_acc(np.zeros((16, 16), np.uint64), False))
  np.testing.assert_array_equal(d.astype(np.uint32).view(np.int32), ai @ bi)  # NEG = 0: unsigned bytes
  # fp8 x bf8: E4M3 codes 0x30..0x40 are 0.5..2.0, E5M2 codes 0x38..0x40 are 0.5..2.0 (exact in f64)
  fa = {0x30: 0.5, 0x38: 1.0, 0x3c: 1.5, 0x40: 2.0}
  fb = {0x38: 0.5, 0x3c: 1.0, 0x3e: 1.5, 0x40: 2.0}
  ka, kb = rng.choice(list(fa), (16, 16)), rng.choice(list(fb), (16, 16))
  d = run_wmma4(rdna4.VOP3POp.V_WMMA_F32_16X16X16_FP8_BF8, pack_rdna4_operand(ka, 8, 4), pack_rdna4_operand(kb.T.copy(), 8, 4),
                pack_rdna4_acc(np.zeros((16, 16), np.uint64), False))
  va, vb = np.vectorize(fa.get)(ka), np.vectorize(fb.get)(kb)
  np.testing.assert_array_equal(d.astype(np.uint32).view(np.float32), (va @ vb).astype(np.float32))

def test_rdna4_and_cdna_overrides_have_reasons_and_compile():
  from emu.pcode import ops_for
  from emu.pcode.overrides import CDNA_PCODE_FIXES, EXECUTOR_OWNED
  from emu.pcode.handwritten import HANDWRITTEN_RDNA4
  for arch, names in (("rdna4", {*EXECUTOR_OWNED, *HANDWRITTEN_RDNA4}), ("cdna", {*EXECUTOR_OWNED, *CDNA_PCODE_FIXES})):
    for op in ops_for(arch):
      if op.name not in names: continue
      c = compile_op(arch, op)
      assert c.override and (c.kind == "executor") == (op.name in EXECUTOR_OWNED), (arch, op.name)

def test_cdna_vop3_form_of_vop1_op_uses_its_twins_pcode():
  # the cdna wheel has no pseudocode for V_TRUNC_F64_E64, only for V_TRUNC_F64_E32; trunc(-2.5) = -2.0, trunc(1e300) = 1e300
  op = compile_op("cdna", cdna.VOP3Op.V_TRUNC_F64_E64)
  assert "V_TRUNC_F64_E32" in op.override
  st = OpState(n=2, S0=np.array([-2.5, 1e300]).view(np.uint64), D0=np.zeros(2, np.uint64))
  op.fn(st)
  assert st.D0.view(np.float64).tolist() == [-2.0, 1e300]
