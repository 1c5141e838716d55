"""CDNA MFMA (wave64) hand-written ops (V_ACCVGPR_* moves are executor-owned: tests/unit/amd/test_cdna.py). The matmul checks
fill the register files from matrices with the layout documented in emu.pcode.handwritten and compare with numpy; the
hand-worked element pins the layout itself."""
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.cdna.enum import VOP3POp
from emu.pcode import OpState, compile_op

def pack(mat, m, k, w):
  """(m, k) raw-bit matrix -> (64, regs) uint32: lane l holds row l % m, elements k = E * (l // m) + e packed from bit 0."""
  e_per = k // (64 // m)
  regs = np.zeros((64, max(1, e_per * w // 32)), np.uint64)
  for l in range(64):
    for e in range(e_per):
      regs[l, (e * w) // 32] |= np.uint64(int(mat[l % m, e_per * (l // m) + e])) << np.uint64((e * w) % 32)
  return regs.astype(np.uint32)

def acc_pos(m):
  """(lane, reg) of each C/D element [row][col] (calculator layout): reg v of lane l holds [8(v//4) + 4(l//m) + v%4][l%m]."""
  pos = {}
  for l in range(64):
    for v in range(m * m // 64): pos[(8 * (v // 4) + 4 * (l // m) + v % 4, l % m)] = (l, v)
  return pos

def run_mfma(arch, op, a_bits, b_bits, c_f32, m, k, w, acc_cd=1):
  vgpr, agpr = np.zeros((64, 64), np.uint32), np.zeros((64, 64), np.uint32)
  ra, rb = pack(a_bits, m, k, w), pack(b_bits.T, m, k, w)
  vgpr[:, 0:ra.shape[1]], vgpr[:, 8:8 + rb.shape[1]] = ra, rb
  cd = agpr if acc_cd else vgpr
  pos = acc_pos(m)
  for (i, j), (l, v) in pos.items(): cd[l, 20 + v] = np.float32(c_f32[i, j]).view(np.uint32)
  st = OpState(VGPR=vgpr, AGPR=agpr, SRC0=0, SRC1=8, SRC2=20, VDST=40, ACC=0, ACC_CD=acc_cd, CBSZ=0, ABID=0, BLGP=0)
  compile_op(arch, op).fn(st)
  out = np.zeros((m, m), np.float32)
  for (i, j), (l, v) in pos.items(): out[i, j] = cd[l, 40 + v].view(np.float32)
  return out

@pytest.mark.parametrize("op,m,k", [(VOP3POp.V_MFMA_F32_16X16X16_F16, 16, 16), (VOP3POp.V_MFMA_F32_32X32X8_F16, 32, 8),
                                    (VOP3POp.V_MFMA_F32_16X16X32_F16, 16, 32)], ids=lambda x: getattr(x, "name", str(x)))
def test_mfma_f16_matches_numpy(op, m, k):
  rng = np.random.default_rng(1)
  a, b, c = (rng.integers(-8, 8, s).astype(np.float16) for s in ((m, k), (k, m), (m, m)))
  got = run_mfma("gfx942", op, a.view(np.uint16), b.view(np.uint16), c.astype(np.float32), m, k, 16)
  assert np.array_equal(got, a.astype(np.float32) @ b.astype(np.float32) + c.astype(np.float32))

def test_mfma_i8_and_f32_match_numpy():
  rng = np.random.default_rng(2)
  a, b = rng.integers(-128, 128, (16, 32)), rng.integers(-128, 128, (32, 16))
  vg = run_mfma("gfx942", VOP3POp.V_MFMA_I32_16X16X32_I8, a & 0xff, b & 0xff, np.zeros((16, 16)), 16, 32, 8)
  assert np.array_equal(vg.view(np.int32), (a @ b).astype(np.int32))
  x, y = rng.standard_normal((16, 4)).astype(np.float32), rng.standard_normal((4, 16)).astype(np.float32)
  got = run_mfma("gfx942", VOP3POp.V_MFMA_F32_16X16X4_F32, x.view(np.uint32), y.view(np.uint32), np.zeros((16, 16)), 16, 4, 32, acc_cd=0)
  assert np.allclose(got, x.astype(np.float64) @ y.astype(np.float64), rtol=1e-6)

def test_mfma_fp8_fnuz_on_gfx942_ocp_on_gfx950():
  # 0x40: OCP E4M3 2.0, FNUZ E4M3 (bias 8) 1.0. A = all 0x40, B = all 0x40, K = 32: D = 32 * 4.0 (OCP) or 32 * 1.0 (FNUZ)
  ones = np.full((16, 32), 0x40)
  assert run_mfma("gfx950", VOP3POp.V_MFMA_F32_16X16X32_FP8_FP8, ones, ones.T, np.zeros((16, 16)), 16, 32, 8)[3, 5] == 128.0
  assert run_mfma("gfx942", VOP3POp.V_MFMA_F32_16X16X32_FP8_FP8, ones, ones.T, np.zeros((16, 16)), 16, 32, 8)[3, 5] == 32.0

def test_mfma_16x16x16_hand_worked_element():
  # A = 1 only at lane 17 element 2 (row 1, k = 4 * 1 + 2 = 6); B = 2.0 only at lane 19 element 2 (column 3, k = 6): D[1][3] = 2.0,
  # found in register 1 of lane 3 (rows 4 * (3 // 16) + 1 = 1, column 3) of the D run, i.e. AGPR[3, 41]
  vgpr, agpr = np.zeros((64, 64), np.uint32), np.zeros((64, 64), np.uint32)
  vgpr[17, 1] = 0x3c00        # element 2 of lane 17: low half of its second A register
  vgpr[19, 9] = 0x4000        # element 2 of lane 19 in the B run at v8
  st = OpState(VGPR=vgpr, AGPR=agpr, SRC0=0, SRC1=8, SRC2=20, VDST=40, ACC=0, ACC_CD=1, CBSZ=0, ABID=0, BLGP=0)
  compile_op("cdna", VOP3POp.V_MFMA_F32_16X16X16_F16).fn(st)
  assert agpr[3, 41].view(np.float32) == 2.0 and np.count_nonzero(agpr[:, 40:44]) == 1

