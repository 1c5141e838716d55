"""Lane masks, VCC branches, v_cmpx and 16-bit results inside native regions (emu.amd.regions). A lane mask's word is made where
it is written, so scalar ops later in the region read it (and may write over it), s_cbranch_vccz/vccnz may end a region on a VCC
the region wrote, and a VALU op may write EXEC (v_cmpx, a compare into EXEC_LO): every later instruction runs on the narrowed EXEC.
16-bit VALU results go to the low half (RDNA keeps the high half, gfx9's 16-bit ops zero it). The numpy path (EMU_REGIONS=0) is
the reference (the `both` fixture) and the expected values are worked by hand."""
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.rdna3 import ins as r3
from tinygrad.runtime.autogen.amd.cdna import ins as c9
from emu import native

pytestmark = pytest.mark.skipif(not native.available(), reason=f"no native code here: {native.NATIVE.why}")
LANES = np.arange(64)
s, v = r3.s, r3.v

def _mask(bits) -> int: return sum(1 << i for i, b in enumerate(bits) if b)

def test_a_lane_mask_over_a_scalar_result_then_read_as_a_scalar(monkeypatch, native_runs, both, region_calls):
  seen = region_calls
  prog = [r3.s_mov_b32(s[4], 0x1234), r3.v_cmp_gt_u32_e64(s[4], v[1], 9), r3.s_and_b32(s[5], s[4], s[6]),
          r3.v_add_nc_u32_e32(v[2], s[5], v[1])]
  st = both(prog, waves=2, sgprs={6: 0x00ffff00}, vgprs={1: LANES[:32]}, exec_mask=0x7fffffff)
  assert seen == [(4, 2)]
  cmp = _mask((LANES[:32] > 9) & (LANES[:32] != 31))   # lane 31 inactive: its bit is 0
  assert int(st.sgpr[1, 4]) == cmp and int(st.sgpr[1, 5]) == cmp & 0x00ffff00
  assert (st.vgpr[1, :31, 2] == (cmp & 0x00ffff00) + LANES[:31]).all() and st.vgpr[1, 31, 2] == 0

def test_a_scalar_write_over_half_a_wave64_mask_then_read_lane_by_lane(monkeypatch, native_runs, both, region_calls):
  seen = region_calls
  prog = [r3.v_cmp_gt_u32_e64(s[10], v[1], 20),   # (the DSL names the pair's base; wave64 writes s10, s11)
          r3.s_mov_b32(s[11], 0xffff0000), r3.v_cndmask_b32_e64(v[2], 7, 9, s[10])]
  st = both(prog, lanes=64, vgprs={1: LANES})
  assert seen == [(3, 1)]
  pick = np.concatenate([LANES[:32] > 20, LANES[32:] >= 48])   # low word: the compare; high word: the scalar write
  assert (st.vgpr[0, :, 2] == np.where(pick, 9, 7)).all()

@pytest.mark.parametrize("in_region", [True, False], ids=["vcc-written-in-region", "vcc-from-before"])
@pytest.mark.parametrize("taken", [True, False])
def test_cbranch_vccnz_and_vccz_end_a_region(monkeypatch, native_runs, both, in_region, taken, region_calls):
  seen = region_calls
  limit = 100 if taken else 0   # lanes 0..31 > limit - 1: some lane (taken) or none (not taken) of the active ones
  head = [r3.v_cmp_gt_u32_e32(limit, v[1])] if in_region else [r3.v_add_nc_u32_e32(v[5], 1, v[1])]
  for branch, jumps in ((r3.s_cbranch_vccnz, taken), (r3.s_cbranch_vccz, not taken)):
    seen.clear()
    prog = [*head, branch(1), r3.v_add_nc_u32_e32(v[2], 1, v[2]), r3.v_add_nc_u32_e32(v[3], 1, v[3])]
    vcc = _mask(LANES[:32] < limit) if not in_region else 0x5   # (an earlier VCC; a written one ignores it)
    st = both(prog, sgprs={106: vcc, 107: 0xffffffff}, vgprs={1: LANES[:32], 2: 10, 3: 20})   # (wave32: VCC_HI is not VCC)
    assert seen[0] == (2, 1)   # the head and the branch
    assert (st.vgpr[0, :, 2] == (10 if jumps else 11)).all() and (st.vgpr[0, :, 3] == 21).all()

@pytest.mark.parametrize("lanes", [32, 64])
def test_v_cmpx_narrows_exec_for_the_rest_of_the_region(monkeypatch, native_runs, both, lanes, region_calls):
  seen = region_calls
  ex = ((1 << lanes) - 1) ^ 0b110   # lanes 1 and 2 off before
  prog = [r3.v_add_nc_u32_e32(v[2], 1, v[1]), r3.v_cmpx_gt_u32_e32(40 % lanes, v[1]), r3.v_add_nc_u32_e32(v[3], v[1], v[1]),
          r3.v_cmp_gt_u32_e64(s[8], v[1], 3)]   # (wave64: the pair s8, s9)
  st = both(prog, lanes=lanes, waves=2, vgprs={1: LANES[:lanes], 2: 5, 3: 6}, exec_mask=ex)
  assert seen == [(4, 2)]
  before = (np.uint64(ex) >> LANES[:lanes].astype(np.uint64)) & np.uint64(1) == 1
  after = before & (LANES[:lanes] < 40 % lanes)
  assert st.get_mask(1, 126) == _mask(after)
  assert (st.vgpr[1, :, 2] == np.where(before, LANES[:lanes] + 1, 5)).all()
  assert (st.vgpr[1, :, 3] == np.where(after, 2 * LANES[:lanes], 6)).all()
  assert st.get_mask(1, 8) == _mask(after & (LANES[:lanes] > 3))

def test_a_compare_into_exec_lo_narrows_exec(monkeypatch, native_runs, both, region_calls):
  seen = region_calls
  prog = [r3.v_cmp_gt_u32_e64(r3.EXEC_LO, v[1], 7), r3.v_add_nc_u32_e32(v[2], 1, v[1])]
  st = both(prog, vgprs={1: LANES[:32], 2: 3}, exec_mask=0xfffff0ff)
  assert seen == [(2, 1)]
  on = (LANES[:32] > 7) & ((0xfffff0ff >> LANES[:32]) & 1 == 1)
  assert st.get_mask(0, 126) == _mask(on) and (st.vgpr[0, :, 2] == np.where(on, LANES[:32] + 1, 3)).all()

def test_gfx9_v_cmpx_writes_vcc_and_exec_under_the_exec_it_ran_with(monkeypatch, native_runs, both, region_calls):
  seen = region_calls
  ex = (1 << 64) - 1 - (1 << 50)
  prog = [c9.v_cmpx_gt_u32_e32(c9.v[1], c9.v[2]), c9.v_add_u32_e32(c9.v[3], c9.v[1], c9.v[1])]
  st = both(prog, arch="gfx942", lanes=64, vgprs={1: LANES, 2: 30, 3: 1}, exec_mask=ex)
  assert seen == [(2, 1)]
  on = (LANES > 30) & (LANES != 50)
  assert st.get_mask(0, 106) == _mask(on) and st.get_mask(0, 126) == _mask(on)   # (lane 50: inactive, so 0 in both)
  assert (st.vgpr[0, :, 3] == np.where(on, 2 * LANES, 1)).all()

def test_16_bit_results_keep_the_high_half_on_rdna(monkeypatch, native_runs, both, region_calls):
  seen = region_calls
  prog = [r3.v_add_nc_u16(v[2], v[1], v[1]), r3.v_lshrrev_b16(v[3], 3, v[1]), r3.v_mul_lo_u16(v[4], v[1], 0x101),
          r3.v_add_nc_u32_e32(v[5], 1, v[2])]
  x = (0xabcd0000 + LANES[:32] * 0x0801).astype(np.uint32)
  st = both(prog, vgprs={1: x, 2: 0x11110000, 3: 0x22220000, 4: 0x33330000}, exec_mask=0xfffffffe)
  assert seen == [(4, 1)]
  lo = x.astype(np.uint64) & 0xffff
  on = LANES[:32] != 0
  assert (st.vgpr[0, :, 2] == np.where(on, 0x11110000 | (2 * lo & 0xffff), 0x11110000)).all()
  assert (st.vgpr[0, on, 3] == 0x22220000 | (lo[on] >> 3)).all() and (st.vgpr[0, on, 4] == 0x33330000 | (lo[on] * 0x101 & 0xffff)).all()
  assert (st.vgpr[0, on, 5] == (0x11110000 | (2 * lo[on] & 0xffff)) + 1).all()

def test_16_bit_results_zero_the_high_half_on_gfx9(monkeypatch, native_runs, both, region_calls):
  seen = region_calls
  x = (0xabcd0000 + LANES * 0x0801).astype(np.uint32)
  prog = [c9.v_add_u16_e32(c9.v[2], c9.v[1], c9.v[1]), c9.v_lshrrev_b16_e32(c9.v[3], 3, c9.v[1])]
  st = both(prog, arch="gfx942", lanes=64, vgprs={1: x, 2: 0x11110000, 3: 0x22220000})
  assert seen == [(2, 1)]
  lo = x.astype(np.uint64) & 0xffff
  assert (st.vgpr[0, :, 2] == 2 * lo & 0xffff).all() and (st.vgpr[0, :, 3] == lo >> 3).all()

def test_ldexp_and_class_tests_join_a_region(monkeypatch, native_runs, both, region_calls):
  seen = region_calls
  f = np.array([1.5, -3.0, 1e-40, 3e38] * 8, dtype=np.float32)
  prog = [r3.v_ldexp_f32(v[2], v[1], v[3]), r3.v_cmp_class_f32_e64(s[4], v[2], 0x204), r3.v_add_nc_u32_e32(v[4], s[4], v[3])]
  e = np.array([2, -1, 140, 1] * 8)
  st = both(prog, vgprs={1: f.view(np.uint32), 3: e.astype(np.int64).astype(np.uint32)})
  assert seen == [(3, 1)]
  want = np.array([6.0, -1.5, np.float64(np.float32(1e-40)) * 2.0 ** 140, np.inf] * 8).astype(np.float32)   # (x 2**e exact, one rounding)
  assert (st.vgpr[0, :, 2].view(np.float32) == want).all()
  cls = _mask(np.isinf(want) & (want > 0))   # class bits 0x204: +inf (bit 9) or -inf (bit 2)... only +inf here
  assert int(st.sgpr[0, 4]) == cls

def test_a_carry_out_into_exec_lo_leaves_the_sum_under_the_exec_it_ran_with(monkeypatch, native_runs, both, region_calls):
  seen = region_calls
  big = np.where(LANES[:32] % 2 == 1, 0xfffffff0, 5).astype(np.uint32)
  prog = [r3.v_add_co_u32(v[2], r3.EXEC_LO, v[1], 0x10), r3.v_add_nc_u32_e32(v[3], 1, v[2])]
  st = both(prog, vgprs={1: big, 2: 9, 3: 8}, exec_mask=0x0000ffff)
  assert seen == [(2, 1)]
  before = LANES[:32] < 16
  carry = before & (LANES[:32] % 2 == 1)
  total = (big.astype(np.uint64) + 0x10) & 0xffffffff
  assert (st.vgpr[0, :, 2] == np.where(before, total, 9)).all()   # every lane active when it ran gets its sum
  assert st.get_mask(0, 126) == _mask(carry) and (st.vgpr[0, :, 3] == np.where(carry, total + 1, 8)).all()
