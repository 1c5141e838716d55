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
  cbits = c.astype(np.float64).view(np.uint64) if dst == "F64" else c.astype(np.float32).view(np.uint32) if dst == "F32" else c.astype(np.int32).view(np.uint32)
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

def test_mfma_4x4x1_16b_hand_worked_element():
  # 4x4x1_16B: lane l holds A[block l // 4][row l % 4][0] and B[block l // 4][0][col l % 4]. A = 3.0 only at lane 22 (block 5,
  # row 2), B = 2.0 only at lane 21 (block 5, col 1): D[5][2][1] = 6.0 in lane 4 * 5 + 1 = 21, register 2 (row 2)
  vgpr, agpr = np.zeros((64, 32), np.uint32), np.zeros((64, 32), np.uint32)
  vgpr[22, 0], vgpr[21, 1] = np.float32(3.0).view(np.uint32), np.float32(2.0).view(np.uint32)
  st = OpState(VGPR=vgpr, AGPR=agpr, SRC0=0, SRC1=1, SRC2=8, VDST=12, ACC=0, ACC_CD=1, CBSZ=0, ABID=0, BLGP=0)
  compile_op("gfx942", cdna.VOP3POp.V_MFMA_F32_4X4X1_16B_F32).fn(st)
  assert agpr[21, 14].view(np.float32) == 6.0 and np.count_nonzero(agpr[:, 12:16]) == 1

def test_mfma_32x32x1_2b_hand_worked_element():
  # A = 1.0 at lane 40 (block 1, row 8), B = 5.0 at lane 35 (block 1, col 3): D[1][8][3] sits in register 16 + 4 = 20 of lane 3
  # (block 1 -> items 16..31; row 8 = 8 * (4 // 4) + 4 * (3 // 32) + 4 % 4)
  vgpr, agpr = np.zeros((64, 80), np.uint32), np.zeros((64, 80), np.uint32)
  vgpr[40, 0], vgpr[35, 1] = np.float32(1.0).view(np.uint32), np.float32(5.0).view(np.uint32)
  st = OpState(VGPR=vgpr, AGPR=agpr, SRC0=0, SRC1=1, SRC2=4, VDST=40, ACC=0, ACC_CD=1, CBSZ=0, ABID=0, BLGP=0)
  compile_op("cdna", cdna.VOP3POp.V_MFMA_F32_32X32X1_2B_F32).fn(st)
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
