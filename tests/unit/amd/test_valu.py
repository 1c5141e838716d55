"""VOP1/VOP2/VOP3/VOP3SD/VOPC/VOP3P/VOPD and DPP: partial EXEC, VCC side effects, inline constants, literals, modifiers."""
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.rdna3.ins import (s, v, VCC_LO, v_add_f32_e32, v_mul_f32_e32, v_fma_f32, v_add_co_u32, v_add_co_ci_u32_e32,
  v_cmp_gt_f32_e32, v_cmp_gt_u32_e64, v_cndmask_b32_e32, v_cndmask_b32_e64, v_mov_b32_e32, v_add_f64, v_fma_f64, v_lshlrev_b64,
  v_add_f16_e32, v_dot2_f32_f16, v_cvt_f32_i32_e32, v_sqrt_f32_e32, v_add_nc_u32_e32, v_cmpx_gt_u32_e32, v_readlane_b32,
  v_writelane_b32, VOPD, VOPDOp, v_fmamk_f32_e32, VOP1_DPP8, VOP1_DPP16, VOP1Op, v_mul_f64, v_max_f32_e64)
from tinygrad.renderer.amd.dsl import src, INV_2PI
from emu.amd import run_program

LANES = np.arange(32)

def f32(x) -> np.ndarray: return np.asarray(x, dtype=np.float32).view(np.uint32)
def as_f32(x) -> np.ndarray: return np.asarray(x, dtype=np.uint32).view(np.float32)
def v_mov_b32_dpp(vdst, vsrc, **kw): return VOP1_DPP16(VOP1Op.V_MOV_B32_E32, vdst=vdst, src0=src[250], vsrc0=vsrc, **kw)

def f64_bits(x): return np.asarray(x, dtype=np.float64).view(np.uint64)
def read_f64(st, reg): return (st.vgpr[0, :, reg].astype(np.uint64) | st.vgpr[0, :, reg + 1].astype(np.uint64) << np.uint64(32)).view(np.float64)

def test_v_add_f32_partial_exec_keeps_inactive_lanes():
  st = run_program([v_add_f32_e32(v[1], v[2], v[3])], vgprs={1: f32(np.full(32, -1.0)), 2: f32(LANES), 3: f32(0.25)}, exec_mask=0x0000ffff)
  out = as_f32(st.vgpr[0, :, 1])
  assert (out[:16] == LANES[:16] + 0.25).all() and (out[16:] == -1.0).all()

def test_v_mul_f32_inline_float_constant_and_inv2pi():
  st = run_program([v_mul_f32_e32(v[1], -4.0, v[2]), v_mul_f32_e32(v[3], INV_2PI, v[2])], vgprs={2: f32(LANES)})
  assert (as_f32(st.vgpr[0, :, 1]) == -4.0 * LANES).all()
  inv2pi = np.uint32(0x3e22f983).view(np.float32)
  assert (as_f32(st.vgpr[0, :, 3]) == np.float32(inv2pi) * LANES.astype(np.float32)).all()

def test_v_fma_f32_neg_abs_modifiers():
  st = run_program([v_fma_f32(v[4], -v[1], abs(v[2]), 0.5)], vgprs={1: f32(2.0), 2: f32(-3.0)})
  assert (as_f32(st.vgpr[0, :, 4]) == np.float32(-2.0 * 3.0 + 0.5)).all()

def test_v_max_f32_e64_clamp():
  st = run_program([v_max_f32_e64(v[4], v[1], v[2], clmp=1)], vgprs={1: f32(LANES - 3.0), 2: f32(0.25)})
  assert (as_f32(st.vgpr[0, :, 4]) == np.clip(np.maximum(LANES - 3.0, 0.25), 0, 1).astype(np.float32)).all()

def test_v_add_co_u32_carry_to_sdst_then_add_co_ci():
  lo = np.where(LANES % 2 == 0, 0xffffffff, 1).astype(np.uint32)
  st = run_program([v_add_co_u32(v[3], s[10], v[1], 1)], vgprs={1: lo})
  assert (st.vgpr[0, :, 3] == (lo.astype(np.uint64) + 1).astype(np.uint32)).all() and int(st.sgpr[0, 10]) == 0x55555555
  st = run_program([v_add_co_u32(v[3], VCC_LO, v[1], 1), v_add_co_ci_u32_e32(v[4], 0, v[2])], vgprs={1: lo, 2: 7})
  assert (st.vgpr[0, :, 4] == np.where(LANES % 2 == 0, 8, 7)).all()

def test_v_cmp_gt_f32_vcc_inactive_lanes_zero_and_cndmask():
  st = run_program([v_cmp_gt_f32_e32(4.0, v[1]), v_cndmask_b32_e32(v[2], 10, v[3])], vgprs={1: f32(LANES), 2: 99, 3: 20}, exec_mask=0xff)
  assert int(st.sgpr[0, 106]) == 0b1111
  assert (st.vgpr[0, :8, 2] == np.where(LANES[:8] < 4, 20, 10)).all() and (st.vgpr[0, 8:, 2] == 99).all()

def test_v_cmp_gt_u32_e64_to_sgpr_and_cndmask_e64():
  st = run_program([v_cmp_gt_u32_e64(s[8], v[1], 20), v_cndmask_b32_e64(v[2], 1, 2, s[8])], vgprs={1: LANES})
  assert int(st.sgpr[0, 8]) == sum(1 << i for i in range(21, 32))
  assert (st.vgpr[0, :, 2] == np.where(LANES > 20, 2, 1)).all()

@pytest.mark.parametrize("exec_mask", [None, 0xf0f0_0000_0000_ff0f], ids=["every-lane", "partial"])
def test_v_cndmask_e64_wave64_reads_each_lanes_bit_of_the_sgpr_pair(exec_mask):
  # lane i selects S1 where bit i of s[8:9] is set (lanes 32-63 from s9); lanes outside EXEC keep their old value
  mask = 0x8000_0001_dead_beef
  st = run_program([v_cndmask_b32_e64(v[2], 1, 2, s[8])], lanes=64, waves=2, sgprs={8: mask}, vgprs={2: 99}, exec_mask=exec_mask)
  bit = lambda m, i: (m >> i) & 1 == 1
  on, pick = np.array([exec_mask is None or bit(exec_mask, i) for i in range(64)]), np.array([bit(mask, i) for i in range(64)])
  for w in range(2): assert (st.vgpr[w, :, 2] == np.where(on, np.where(pick, 2, 1), 99)).all()

def test_v_cmpx_writes_exec():
  st = run_program([v_cmpx_gt_u32_e32(10, v[1]), v_mov_b32_e32(v[2], 1)], vgprs={1: LANES, 2: 0})
  assert int(st.sgpr[0, 126]) == (1 << 10) - 1 and (st.vgpr[0, :, 2] == (LANES < 10)).all()

def test_v_add_f64_and_literal_high_half():
  # a 32-bit literal on a 64-bit float operand is the high half: 0x40080000 -> 3.0
  st = run_program([v_add_f64(v[2:3], v[4:5], 0x40080000), v_fma_f64(v[6:7], v[4:5], 2.0, -1.0), v_mul_f64(v[8:9], v[4:5], v[4:5])],
                   vgprs={4: (f64_bits(LANES * 0.5) & 0xffffffff).astype(np.uint32), 5: (f64_bits(LANES * 0.5) >> 32).astype(np.uint32)})
  assert (read_f64(st, 2) == LANES * 0.5 + 3.0).all()
  assert (read_f64(st, 6) == LANES * 1.0 - 1.0).all() and (read_f64(st, 8) == (LANES * 0.5) ** 2).all()

def test_v_lshlrev_b64():
  st = run_program([v_lshlrev_b64(v[2:3], 4, v[4:5])], vgprs={4: 0x80000001, 5: 0x1})
  assert (st.vgpr[0, :, 2] == 0x10).all() and (st.vgpr[0, :, 3] == 0x18).all()

def test_v_add_f16_keeps_high_half():
  a, b = np.float16(1.5), np.float16(-0.25)
  st = run_program([v_add_f16_e32(v[1], v[2], v[3])], vgprs={1: 0xdead0000, 2: int(a.view(np.uint16)), 3: int(b.view(np.uint16))})
  assert (st.vgpr[0, :, 1] == (0xdead0000 | int(np.float16(a + b).view(np.uint16)))).all()

def test_v_dot2_f32_f16_opsel_packed_sources():
  pa = int(np.array([1.5, 2.0], dtype=np.float16).view(np.uint32)[0])
  pb = int(np.array([4.0, -1.0], dtype=np.float16).view(np.uint32)[0])
  st = run_program([v_dot2_f32_f16(v[4], v[5], v[6], v[7])], vgprs={5: pa, 6: pb, 7: f32(0.5)})
  assert (as_f32(st.vgpr[0, :, 4]) == np.float32(1.5 * 4.0 + 2.0 * -1.0 + 0.5)).all()

def test_v_cvt_f32_i32_and_sqrt():
  st = run_program([v_cvt_f32_i32_e32(v[1], v[2]), v_sqrt_f32_e32(v[3], v[1])], vgprs={2: (LANES - 5).astype(np.uint32)})
  assert (as_f32(st.vgpr[0, :, 1]) == (LANES - 5).astype(np.float32)).all()
  assert np.allclose(as_f32(st.vgpr[0, 5:, 3]), np.sqrt(LANES[5:] - 5.0), rtol=1e-6)

def test_dpp16_row_shr_and_bound_ctrl():
  # row_shr:1 (0x111): lane i reads lane i-1 within its row of 16; lane 0 of each row reads 0 with bound_ctrl
  st = run_program([v_mov_b32_dpp(v[1], v[2], dpp=0x111, row_mask=0xf, bank_mask=0xf, bc=1)], vgprs={1: 77, 2: LANES + 100})
  exp = np.where(LANES % 16 == 0, 0, LANES + 99)
  assert (st.vgpr[0, :, 1] == exp).all()

def test_dpp16_quad_perm_broadcast():
  st = run_program([v_mov_b32_dpp(v[1], v[2], dpp=0x00, row_mask=0xf, bank_mask=0xf)], vgprs={2: LANES})
  assert (st.vgpr[0, :, 1] == (LANES & ~3)).all()

def test_dpp8_lane_select():
  sel = [7, 6, 5, 4, 3, 2, 1, 0]
  inst = VOP1_DPP8(VOP1Op.V_MOV_B32_E32, vdst=v[1], src0=src[234], vsrc0=v[2], **{f"lane_sel_{i}": x for i, x in enumerate(sel)})
  st = run_program([inst], vgprs={2: LANES})
  assert (st.vgpr[0, :, 1] == (LANES & ~7) + (7 - (LANES & 7))).all()

def test_vopd_dual_issue_reads_before_writes():
  inst = VOPD(VOPDOp.V_DUAL_MOV_B32, VOPDOp.V_DUAL_ADD_F32, vdstx=v[1], vdsty=v[2], srcx0=v[2], srcy0=v[1], vsrcy1=v[1])
  st = run_program([inst], vgprs={1: f32(1.5), 2: f32(10.0)})
  assert (as_f32(st.vgpr[0, :, 1]) == 10.0).all() and (as_f32(st.vgpr[0, :, 2]) == 3.0).all()

def test_v_fmamk_f32_literal():
  st = run_program([v_fmamk_f32_e32(v[1], v[2], v[3], literal=0x40000000)], vgprs={2: f32(LANES), 3: f32(1.0)})
  assert (as_f32(st.vgpr[0, :, 1]) == LANES * 2.0 + 1.0).all()

def test_readlane_writelane():
  st = run_program([v_readlane_b32(s[0], v[1], 5), v_writelane_b32(v[2], s[2], 3)], vgprs={1: LANES * 3, 2: 0}, sgprs={2: 0xabc},
                   exec_mask=0xfff0)
  assert int(st.sgpr[0, 0]) == 15
  assert st.vgpr[0, 3, 2] == 0xabc and (np.delete(st.vgpr[0, :, 2], 3) == 0).all()

def test_wave64_two_halves():
  st = run_program([v_add_nc_u32_e32(v[1], 1, v[2])], lanes=64, vgprs={2: np.arange(64)}, exec_mask=(1 << 64) - 1 - 1)
  assert st.vgpr[0, 0, 1] == 0 and (st.vgpr[0, 1:, 1] == np.arange(1, 64) + 1).all()

# ---- VOP3/VOP3SD integer clamp: saturate to the destination type instead of wrapping ----
def test_v_add_nc_u32_e64_clamp_saturates_and_plain_wraps():
  from tinygrad.runtime.autogen.amd.rdna3.ins import v_add_nc_u32_e64
  a = (0xfffffff0 + LANES).astype(np.uint32)
  st = run_program([v_add_nc_u32_e64(v[3], v[1], v[2], clmp=1), v_add_nc_u32_e64(v[4], v[1], v[2])], vgprs={1: a, 2: 0x20})
  exact = a.astype(np.int64) + 0x20
  assert (st.vgpr[0, :, 3] == np.minimum(exact, 0xffffffff)).all() and (st.vgpr[0, :, 4] == (exact & 0xffffffff)).all()

def test_v_sub_nc_u32_e64_clamp_floors_at_zero():
  from tinygrad.runtime.autogen.amd.rdna3.ins import v_sub_nc_u32_e64
  st = run_program([v_sub_nc_u32_e64(v[3], v[1], v[2], clmp=1)], vgprs={1: LANES, 2: 16})
  assert (st.vgpr[0, :, 3] == np.maximum(LANES - 16, 0)).all()

def test_v_sub_nc_i32_clamp_saturates_signed():
  from tinygrad.runtime.autogen.amd.rdna3.ins import v_sub_nc_i32
  a = np.where(LANES % 2 == 0, -0x7ffffff0, 5).astype(np.int32)
  st = run_program([v_sub_nc_i32(v[3], v[1], v[2], clmp=1)], vgprs={1: a.view(np.uint32), 2: 0x20})
  assert (st.vgpr[0, :, 3].view(np.int32) == np.maximum(a.astype(np.int64) - 0x20, -2**31)).all()

def test_v_add_nc_i16_clamp_keeps_high_half():
  from tinygrad.runtime.autogen.amd.rdna3.ins import v_add_nc_i16
  st = run_program([v_add_nc_i16(v[3], v[1], v[2], clmp=1)], vgprs={1: 0x7ff0, 2: 0x20, 3: 0xabcd0000})
  assert (st.vgpr[0, :, 3] == 0xabcd7fff).all()

def test_v_add_co_u32_clamp_saturates_and_still_sets_carry():
  st = run_program([v_add_co_u32(v[3], s[10], v[1], v[2], clmp=1)], vgprs={1: np.where(LANES < 8, 0xffffffff, 1), 2: 2})
  assert (st.vgpr[0, :, 3] == np.where(LANES < 8, 0xffffffff, 3)).all() and int(st.sgpr[0, 10]) == 0xff

def test_v_mad_u32_u24_clamp():
  from tinygrad.runtime.autogen.amd.rdna3.ins import v_mad_u32_u24
  st = run_program([v_mad_u32_u24(v[3], v[1], v[2], v[4], clmp=1)], vgprs={1: 0x1fffff0 + LANES, 2: 0x100, 4: 7})
  exact = ((0x1fffff0 + LANES) & 0xffffff).astype(np.int64) * 0x100 + 7
  assert (st.vgpr[0, :, 3] == np.minimum(exact, 0xffffffff)).all()
