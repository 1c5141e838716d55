"""Multi-block, F64, XF32, F8F6F4 (and SCALE) MFMA, sparse SMFMAC / RDNA4 SWMMAC, v_prng_b32 and the dynamic-width slices of the
scaled conversions. Registers are filled from matrices with per-element loops following the layout documented in
emu.pcode.handwritten; expected values come from numpy matmuls (exact for the small values used), hand-decoded small-float
tables and elements worked by hand from the ISA."""
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.cdna import enum as cdna
from tinygrad.runtime.autogen.amd.rdna4 import enum as rdna4
from emu.pcode import OpState, compile_op

def pack_lanes(vals, w, nregs, lanes=64):
  """vals[lane] = list of w-bit codes -> (lanes, nregs) uint32, packed from bit 0 (crossing register boundaries)."""
  out = np.zeros((lanes, nregs), np.uint32)
  for lane in range(lanes):
    big = sum((int(c) & ((1 << w) - 1)) << (w * i) for i, c in enumerate(vals[lane]))
    for r in range(nregs): out[lane, r] = (big >> (32 * r)) & 0xffffffff
  return out

def operand_lanes(mat, m, k, blocks):
  """(blocks, m, k) codes -> per lane its E codes: lane l holds row l % m of block (l // m) // KG, K E*((l // m) % KG) + e."""
  kg = 64 // m // blocks
  e_per = k // kg
  return [[mat[(lane // m) // kg, lane % m, e_per * ((lane // m) % kg) + e] for e in range(e_per)] for lane in range(64)]

def acc_positions(m, blocks):
  """{(block, row, col): (lane, item)} of the C/D layout."""
  items, pos = blocks * m * m // 64, {}
  for lane in range(64):
    for t in range(items):
      if m >= 16:
        per = m * m // 64
        tt = t % per
        pos[(t // per, 8 * (tt // 4) + 4 * (lane // m) + tt % 4, lane % m)] = (lane, t)
      else:
        r = items * (lane // 4) + t
        pos[(r // 4, r % 4, lane % 4)] = (lane, t)
  return pos

def run_mfma(target, op, a_codes, b_codes, c, m, k, blocks, w, dst="F32", wb=None, a_regs=None, **fields):
  """a_codes (blocks, m, k), b_codes (blocks, k, m) raw codes of w (B: wb) bits; c (blocks, m, m) values; a_regs: A's registers
  as given (sparse A). Returns D (blocks, m, m)."""
  nregs = lambda bits: max(1, -(-(k // (64 // m // blocks)) * bits // 32))  # noqa: E731
  vgpr, agpr = np.zeros((64, 256), np.uint32), np.zeros((64, 256), np.uint32)
  ra = a_regs if a_regs is not None else pack_lanes(operand_lanes(a_codes, m, k, blocks), w, nregs(w))
  vgpr[:, 0:ra.shape[1]] = ra
  vgpr[:, 16:16 + nregs(wb or w)] = pack_lanes(operand_lanes(b_codes.transpose(0, 2, 1), m, k, blocks), wb or w, nregs(wb or w))
  pos, dw = acc_positions(m, blocks), 2 if dst == "F64" else 1
  cbits = c.astype(np.float64).view(np.uint64) if dst == "F64" else \
    c.astype(np.float32).view(np.uint32) if dst == "F32" else c.astype(np.int32).view(np.uint32)
  for (bl, i, j), (lane, t) in pos.items():
    for h in range(dw): agpr[lane, 40 + dw * t + h] = (int(cbits[bl, i, j]) >> (32 * h)) & 0xffffffff
  st = OpState(VGPR=vgpr, AGPR=agpr, SRC0=0, SRC1=16, SRC2=40, VDST=120, ACC=0, ACC_CD=1, CBSZ=0, ABID=0, BLGP=0)
  st.__dict__.update(fields)
  compile_op(target, op).fn(st)
  out = np.zeros(c.shape, np.uint64)
  for (bl, i, j), (lane, t) in pos.items():
    out[bl, i, j] = sum(int(agpr[lane, 120 + dw * t + h]) << (32 * h) for h in range(dw))
  return out.view(np.float64) if dst == "F64" else out.astype(np.uint32).view(np.float32 if dst == "F32" else np.int32)

MULTI = [(op, m, k, b, src) for op, m, k, b, src in [
  ("V_MFMA_F32_32X32X1_2B_F32", 32, 1, 2, "F32"), ("V_MFMA_F32_16X16X1_4B_F32", 16, 1, 4, "F32"), ("V_MFMA_F32_4X4X1_16B_F32", 4, 1, 16, "F32"),
  ("V_MFMA_F32_32X32X4_2B_F16", 32, 4, 2, "F16"), ("V_MFMA_F32_16X16X4_4B_F16", 16, 4, 4, "F16"), ("V_MFMA_F32_4X4X4_16B_F16", 4, 4, 16, "F16"),
  ("V_MFMA_F32_32X32X4_2B_BF16", 32, 4, 2, "BF16"), ("V_MFMA_F32_16X16X4_4B_BF16", 16, 4, 4, "BF16"),
  ("V_MFMA_F32_4X4X4_16B_BF16", 4, 4, 16, "BF16"), ("V_MFMA_I32_32X32X4_2B_I8", 32, 4, 2, "I8"), ("V_MFMA_I32_16X16X4_4B_I8", 16, 4, 4, "I8"),
  ("V_MFMA_I32_4X4X4_16B_I8", 4, 4, 16, "I8"), ("V_MFMA_F64_16X16X4_F64", 16, 4, 1, "F64"), ("V_MFMA_F64_4X4X4_4B_F64", 4, 4, 4, "F64"),
  ("V_MFMA_F32_16X16X8_XF32", 16, 8, 1, "XF32"), ("V_MFMA_F32_32X32X4_XF32", 32, 4, 1, "XF32")]]

def encode(vals, src):
  if src in ("F32", "XF32"): return vals.astype(np.float32).view(np.uint32)
  if src == "F64": return vals.astype(np.float64).view(np.uint64)
  if src == "F16": return vals.astype(np.float16).view(np.uint16)
  if src == "BF16": return vals.astype(np.float32).view(np.uint32) >> 16
  return vals.astype(np.int64) & 0xff

@pytest.mark.parametrize("name,m,k,blocks,src", MULTI, ids=[x[0] for x in MULTI])
def test_mfma_shapes_match_numpy_per_block(name, m, k, blocks, src):
  rng = np.random.default_rng(3)
  a, b, c = (rng.integers(-8, 8, s).astype(np.float64) for s in ((blocks, m, k), (blocks, k, m), (blocks, m, m)))
  w, dst = {"F64": 64, "F32": 32, "XF32": 32, "I8": 8}.get(src, 16), {"F64": "F64", "I8": "I32"}.get(src, "F32")
  got = run_mfma("gfx942", getattr(cdna.VOP3POp, name), encode(a, src), encode(b, src), c, m, k, blocks, w, dst)
  np.testing.assert_array_equal(got, a @ b + c)

def one_product(arch:str, op, regs:int, a:tuple[int, float], b:tuple[int, float], src2:int, vdst:int) -> np.ndarray:
  """Run a single-pass f32 MFMA with A in v0 and B in v1, zero except one lane each ((lane, value)), C from the zeroed AGPRs at
  src2; returns the AGPR file (the result goes to vdst)."""
  vgpr, agpr = np.zeros((64, regs), np.uint32), np.zeros((64, regs), np.uint32)
  vgpr[a[0], 0], vgpr[b[0], 1] = np.float32(a[1]).view(np.uint32), np.float32(b[1]).view(np.uint32)
  st = OpState(VGPR=vgpr, AGPR=agpr, SRC0=0, SRC1=1, SRC2=src2, VDST=vdst, ACC=0, ACC_CD=1, CBSZ=0, ABID=0, BLGP=0)
  compile_op(arch, op).fn(st)
  return agpr

def test_mfma_4x4x1_16b_hand_worked_element():
  # 4x4x1_16B: lane l holds A[block l // 4][row l % 4][0] and B[block l // 4][0][col l % 4]. A = 3.0 only at lane 22 (block 5,
  # row 2), B = 2.0 only at lane 21 (block 5, col 1): D[5][2][1] = 6.0 in lane 4 * 5 + 1 = 21, register 2 (row 2)
  agpr = one_product("gfx942", cdna.VOP3POp.V_MFMA_F32_4X4X1_16B_F32, 32, (22, 3.0), (21, 2.0), src2=8, vdst=12)
  assert agpr[21, 14].view(np.float32) == 6.0 and np.count_nonzero(agpr[:, 12:16]) == 1

def test_mfma_32x32x1_2b_hand_worked_element():
  # A = 1.0 at lane 40 (block 1, row 8), B = 5.0 at lane 35 (block 1, col 3): D[1][8][3] sits in register 16 + 4 = 20 of lane 3
  # (block 1 -> items 16..31; row 8 = 8 * (4 // 4) + 4 * (3 // 32) + 4 % 4)
  agpr = one_product("cdna", cdna.VOP3POp.V_MFMA_F32_32X32X1_2B_F32, 80, (40, 1.0), (35, 5.0), src2=4, vdst=40)
  assert agpr[3, 60].view(np.float32) == 5.0 and np.count_nonzero(agpr[:, 40:72]) == 1

def test_mfma_f64_is_fused():
  # (1 + 2**-30)(1 - 2**-30) - 1 = -2**-60 exactly; an unfused multiply rounds the product to 1.0 and gives 0
  a, b, c = np.zeros((1, 16, 4)), np.zeros((1, 4, 16)), np.zeros((1, 16, 16))
  a[0, 2, 0], b[0, 0, 5], c[0, 2, 5] = 1 + 2.0 ** -30, 1 - 2.0 ** -30, -1.0
  got = run_mfma("cdna", cdna.VOP3POp.V_MFMA_F64_16X16X4_F64, encode(a, "F64"), encode(b, "F64"), c, 16, 4, 1, 64, "F64")
  assert got[0, 2, 5] == -2.0 ** -60 and np.count_nonzero(got) == 1

def test_xf32_rounds_inputs_to_10_mantissa_bits():
  # 1 + 2**-11 + 2**-23 rounds up to 1 + 2**-10; 1 + 2**-11 is a tie and rounds to even (1.0); B = 1.0: D = A
  a, b = np.zeros((1, 16, 8), np.float32), np.zeros((1, 8, 16), np.float32)
  a[0, 0, 0], a[0, 1, 0], b[0, 0, :] = 1 + 2.0 ** -11 + 2.0 ** -23, 1 + 2.0 ** -11, 1.0
  got = run_mfma("gfx942", cdna.VOP3POp.V_MFMA_F32_16X16X8_XF32, encode(a, "F32"), encode(b, "F32"), np.zeros((1, 16, 16)), 16, 8, 1, 32)
  assert got[0, 0, 3] == 1 + 2.0 ** -10 and got[0, 1, 3] == 1.0

# ---- gfx950 F8F6F4: OCP formats decoded by hand ----
def fp4_value(c): return (-1) ** (c >> 3) * [0, 0.5, 1, 1.5, 2, 3, 4, 6][c & 7]
def fp6_value(c):  # E2M3, bias 1
  e, mt = (c >> 3) & 3, c & 7
  return (-1) ** (c >> 5) * (mt / 8 if e == 0 else (1 + mt / 8) * 2.0 ** (e - 1))
def bf6_value(c):  # E3M2, bias 3
  e, mt = (c >> 2) & 7, c & 3
  return (-1) ** (c >> 5) * (mt / 4 * 2.0 ** -2 if e == 0 else (1 + mt / 4) * 2.0 ** (e - 3))
def fp8_value(c):  # E4M3 (OCP), bias 7; codes below 0x78 only (no NaN)
  e, mt = (c >> 3) & 15, c & 7
  return (-1) ** (c >> 7) * (mt / 8 * 2.0 ** -6 if e == 0 else (1 + mt / 8) * 2.0 ** (e - 7))
FMT = {0: (8, fp8_value, 0x70), 2: (6, fp6_value, 64), 3: (6, bf6_value, 64), 4: (4, fp4_value, 16)}

@pytest.mark.parametrize("cbsz,blgp", [(2, 4), (0, 3), (4, 0)])
@pytest.mark.parametrize("name,m,k", [("V_MFMA_F32_16X16X128_F8F6F4", 16, 128), ("V_MFMA_F32_32X32X64_F8F6F4", 32, 64)])
def test_mfma_f8f6f4_formats_from_cbsz_blgp(name, m, k, cbsz, blgp):
  rng = np.random.default_rng(cbsz * 8 + blgp)
  (wa, fa, na), (wb, fb, nb) = FMT[cbsz], FMT[blgp]
  a, b = rng.integers(0, na, (1, m, k)), rng.integers(0, nb, (1, k, m))
  got = run_mfma("gfx950", getattr(cdna.VOP3POp, name), a, b, np.zeros((1, m, m)), m, k, 1, wa, wb=wb, CBSZ=cbsz, BLGP=blgp)
  want = np.vectorize(fa, otypes=[float])(a) @ np.vectorize(fb, otypes=[float])(b)
  np.testing.assert_array_equal(got, want.astype(np.float32))

def test_mfma_scale_applies_each_lanes_e8m0_byte():
  # fp8 A and B; lane l's scale covers its 32 K elements. A scales: byte 2 (OPSEL[0] = 0, OPSEL_HI[0] = 1) of SCALE_SRC0; B scales:
  # byte 1 (OPSEL[1] = 1) of SCALE_SRC1. Expected: A[i][k] * 2**(sa(lane of i, k) - 127) times the same for B
  m, k = 16, 128
  rng = np.random.default_rng(7)
  a, b = rng.integers(0, 0x70, (1, m, k)), rng.integers(0, 0x70, (1, k, m))
  sa, sb = rng.integers(120, 135, 64), rng.integers(120, 135, 64)
  scale0 = (sa << 16) | 0x7f0000ff
  scale1 = (sb << 8) | 0xff0000ff
  got = run_mfma("gfx950", cdna.VOP3PX2Op.V_MFMA_SCALE_F32_16X16X128_F8F6F4, a, b, np.zeros((1, m, m)), m, k, 1, 8, OPSEL=0b10, OPSEL_HI=0b01,
                 SCALE_SRC0=scale0.astype(np.uint64), SCALE_SRC1=scale1.astype(np.uint64))
  av, bv = np.vectorize(fp8_value, otypes=[float])(a)[0], np.vectorize(fp8_value, otypes=[float])(b)[0]
  for lane in range(64):  # lane l: row (col) l % 16, K 32 * (l // 16) ...
    av[lane % 16, 32 * (lane // 16):32 * (lane // 16) + 32] *= 2.0 ** (int(sa[lane]) - 127)
    bv[32 * (lane // 16):32 * (lane // 16) + 32, lane % 16] *= 2.0 ** (int(sb[lane]) - 127)
  np.testing.assert_array_equal(got[0], (av @ bv).astype(np.float32))

def sparse_dense(rng, shape, vals):
  """A dense matrix with exactly 2 nonzeros in every run of 4 along K (the last axis)."""
  d = np.zeros(shape, np.int64)
  for idx in np.ndindex(*shape[:-1]):
    for q in range(shape[-1] // 4):
      for p in rng.choice(4, 2, replace=False): d[idx + (4 * q + p,)] = rng.choice(vals)
  return d

def compress(lane_codes):
  """Per lane, dense codes (runs of 4 with 2 nonzeros) -> (compressed codes, index bits: 2 per compressed element)."""
  comp, idx = [], []
  for codes in lane_codes:
    c, bits = [], 0
    for q in range(len(codes) // 4):
      nz = [p for p in range(4) if codes[4 * q + p]]
      for j, p in enumerate(nz):
        c.append(codes[4 * q + p])
        bits |= p << (2 * (2 * q + j))
    comp.append(c)
    idx.append(bits)
  return comp, idx

@pytest.mark.parametrize("target,name,m,k,w,src,abid", [("gfx942", "V_SMFMAC_F32_16X16X32_F16", 16, 32, 16, "F16", 1),
                                                         ("gfx942", "V_SMFMAC_I32_32X32X32_I8", 32, 32, 8, "I8", 1),
                                                         ("gfx950", "V_SMFMAC_F32_16X16X128_FP8_FP8", 16, 128, 8, "FP8", 0)])
def test_smfmac_equals_dense_matmul(target, name, m, k, w, src, abid):
  rng = np.random.default_rng(11)
  codes_of = {0x38: 1.0, 0x40: 2.0, 0xb8: -1.0, 0x30: 0.5} if src == "FP8" else {v & 0xff: v for v in (1, 2, -3, 5)} if src == "I8" else \
    {int(encode(np.array([v]), src)[0]): v for v in (1.0, 2.0, -3.0, 0.5)}
  dense_codes = sparse_dense(rng, (1, m, k), list(codes_of))
  dense = np.vectorize(lambda c: codes_of.get(c, 0), otypes=[float])(dense_codes)
  b_codes = rng.choice(list(codes_of), (1, k, m))
  bvals = np.vectorize(codes_of.get, otypes=[float])(b_codes)
  c = rng.integers(-4, 4, (1, m, m)).astype(np.float64)
  comp, idx = compress(operand_lanes(dense_codes, m, k, 1))
  a_regs = pack_lanes(comp, w, max(1, len(comp[0]) * w // 32))
  ibits = len(comp[0]) * 2
  dst = "I32" if src == "I8" else "F32"
  # the index set ABID of the index VGPR; another set holds different (wrong) indices where there is room
  other = (abid + 1) % (32 // ibits)
  vgpr_idx = np.array([int(i) << (abid * ibits) | (0x5 << (other * ibits) if other != abid else 0) for i in idx])
  got = run_sparse(target, getattr(cdna.VOP3POp, name), a_regs, b_codes, c, m, k, w, dst, vgpr_idx.astype(np.uint32), abid)
  np.testing.assert_array_equal(got, (dense @ bvals + c)[0].astype(np.float32 if dst == "F32" else np.int32))

def run_sparse(target, op, a_regs, b_codes, c, m, k, w, dst, index, abid):
  """An SMFMAC with compressed A registers, B codes, C (accumulated in place in the D registers, AGPR 80...) and index VGPR 60."""
  vgpr, agpr = np.zeros((64, 128), np.uint32), np.zeros((64, 128), np.uint32)
  vgpr[:, 0:a_regs.shape[1]] = a_regs
  nb = max(1, (k // (64 // m)) * w // 32)
  vgpr[:, 16:16 + nb] = pack_lanes(operand_lanes(b_codes.transpose(0, 2, 1), m, k, 1), w, nb)
  vgpr[:, 60] = index
  pos = acc_positions(m, 1)
  for (_, i, j), (lane, t) in pos.items(): agpr[lane, 80 + t] = np.array(c[0, i, j], np.float32 if dst == "F32" else np.int32).view(np.uint32)
  st = OpState(VGPR=vgpr, AGPR=agpr, SRC0=0, SRC1=16, SRC2=60, VDST=80, ACC=0, ACC_CD=1, CBSZ=0, ABID=abid, BLGP=0)
  compile_op(target, op).fn(st)
  out = np.zeros((m, m), np.uint32)
  for (_, i, j), (lane, t) in pos.items(): out[i, j] = agpr[lane, 80 + t]
  return out.view(np.float32 if dst == "F32" else np.int32)

def test_swmmac_rdna4_equals_dense_matmul():
  from test_rdna4_cdna import pack_rdna4_acc, pack_rdna4_operand
  rng = np.random.default_rng(5)
  vals = [1.0, -2.0, 0.5, 3.0]
  codes = {int(np.float16(v).view(np.uint16)): v for v in vals}
  dense_codes = sparse_dense(rng, (16, 32), list(codes))
  dense = np.vectorize(lambda x: codes.get(x, 0.0), otypes=[float])(dense_codes)
  b = rng.choice(vals, (32, 16))
  c = rng.integers(-4, 4, (16, 16)).astype(np.float32)
  # the RDNA4 lane's dense elements (pack_rdna4_operand's order) are compressed run by run
  lanes = [[dense_codes[lane % 16, e % 4 + 4 * (lane // 16) + 8 * (e // 4)] for e in range(16)] for lane in range(32)]
  comp, idx = compress(lanes)
  vgpr = np.zeros((32, 32), np.uint32)
  vgpr[:, 0:4] = pack_lanes(comp, 16, 4, lanes=32)
  vgpr[:, 4:12] = pack_rdna4_operand(b.T.astype(np.float16).view(np.uint16), 16, 4)
  vgpr[:, 12] = np.array(idx, np.uint32) << 16                        # index key 1: bits 31:16
  vgpr[:, 16:24] = pack_rdna4_acc(c.view(np.uint32), False)
  st = OpState(VGPR=vgpr, SRC0=0, SRC1=4, SRC2=12, VDST=16, OPSEL=1, NEG=0, CLAMP=0)
  compile_op("rdna4", rdna4.VOP3POp.V_SWMMAC_F32_16X16X32_F16).fn(st)
  want = pack_rdna4_acc((dense @ b + c).astype(np.float32).view(np.uint32), False)
  np.testing.assert_array_equal(st.VGPR[:, 16:24], want)

# ---- v_prng_b32 and the scaled conversions it and dynamic slices unlocked ----
def test_prng_and_stochastic_rounding_advance_the_lfsr():
  st = OpState(n=2, laneId=np.arange(2, dtype=np.uint64), S0=np.array([0x80000001, 0x40000000], np.uint64))
  compile_op("cdna", cdna.VOP1Op.V_PRNG_B32_E32).fn(st)
  assert list(st.D0) == [0x2 ^ 197, 0x80000000]   # (x << 1) ^ (x[31] ? 197 : 0)
  # 0.75 lies halfway between fp4 0.5 (code 1) and 1.0 (code 2): random 0x40000000 rounds down, prng(it) = 0x80000000 rounds up.
  # Byte OPSEL[3:2] = 1 of VDST gets {tmp1, tmp0} = 0x21; the other bytes are kept
  vgpr = np.full((1, 4), 0xaabbccdd, np.uint32)
  st = OpState(n=1, laneId=np.zeros(1, np.uint64), S0=np.array([np.array([0.75, 0.75], np.float32).view(np.uint64)[0]], np.uint64),
               S1=np.array([0x40000000], np.uint64), S2=np.array([np.float32(1.0).view(np.uint32)], np.uint64), OPSEL=0b0100, VDST=2, VGPR=vgpr)
  compile_op("cdna", cdna.VOP3Op.V_CVT_SCALEF32_SR_PK_FP4_F32).fn(st)
  assert vgpr[0, 2] == 0xaabb21dd

def test_2xpk16_fp6_interleaves_s0_and_s1_with_dynamic_slices():
  # fp6 E2M3 codes worked by hand: 1.0 = 0b001000, 1.5 = 0b001100, 0.5 = 0b000100, -2.0 = 0b110000; scale exponent 127: x1
  s0v, s1v = [1.0, 1.5, 0.5, -2.0] * 4, [-2.0, 0.5, 1.5, 1.0] * 4
  code = {1.0: 0x08, 1.5: 0x0c, 0.5: 0x04, -2.0: 0x30}
  st = OpState(n=1, laneId=np.zeros(1, np.uint64), S0=np.array([s0v], np.float32).view(np.uint32), S1=np.array([s1v], np.float32).view(np.uint32),
               S2=np.array([np.float32(1.0).view(np.uint32)], np.uint64))
  c = compile_op("cdna", cdna.VOP3Op.V_CVT_SCALEF32_2XPK16_FP6_F32)
  assert c.widths["S0"] == c.widths["S1"] == 512 and c.widths["D0"] == 192
  c.fn(st)
  want = sum((code[a] | code[b] << 6) << (12 * p) for p, (a, b) in enumerate(zip(s0v, s1v)))
  assert sum(int(x) << (32 * i) for i, x in enumerate(st.D0[0])) == want

def test_pk32_f32_fp6_reads_all_192_source_bits():
  c = compile_op("cdna", cdna.VOP3Op.V_CVT_SCALEF32_PK32_F32_FP6)
  assert c.widths["S0"] == 192
  codes = [0x08, 0x0c, 0x04, 0x30] * 8
  big = sum(x << (6 * i) for i, x in enumerate(codes))
  st = OpState(n=1, laneId=np.zeros(1, np.uint64), S0=np.array([[(big >> (32 * r)) & 0xffffffff for r in range(6)]], np.uint32),
               S1=np.array([np.float32(2.0).view(np.uint32)], np.uint64))
  c.fn(st)
  assert list(st.D0[0].view(np.float32)) == [2.0 * v for v in [1.0, 1.5, 0.5, -2.0] * 8]
