"""Scalar ops that write EXEC inside native regions (emu.amd.regions): LLVM guards a conditional block with s_and_saveexec, skips it
with s_cbranch_execz and restores EXEC with s_or_b32 exec (tinygrad's padded loads in convolutions). Every later instruction of the
region runs on the new EXEC: its VGPR writes keep inactive lanes, its lane masks are 0 there, its loads read only active lanes
(and count only their bytes), a NaN only in a lane inactive when it was made does not send the wave back. The numpy path
(EMU_REGIONS=0) is the reference (the `both` fixture) and the expected values are worked by hand."""
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.rdna3.ins import (s, v, EXEC_LO, s_and_saveexec_b32, s_and_saveexec_b64, s_or_b32,
  s_cbranch_execz, v_add_nc_u32_e32, v_cmp_gt_u32_e64, v_mul_f32_e32, global_load_b32, s_waitcnt)
from emu import native
from emu.amd import run_program

pytestmark = pytest.mark.skipif(not native.available(), reason=f"no native code here: {native.NATIVE.why}")
LANES = np.arange(64)

def test_saveexec_block_and_restore_in_one_region_wave32(monkeypatch, native_runs, both, region_calls):
  seen = region_calls
  prog = [s_and_saveexec_b32(s[4], s[2]), v_add_nc_u32_e32(v[2], v[1], v[1]), v_cmp_gt_u32_e64(s[6], v[1], 3),
          s_or_b32(EXEC_LO, EXEC_LO, s[4]), v_add_nc_u32_e32(v[3], 1, v[2])]
  st = both(prog, waves=2, sgprs={2: 0x0000f0f0}, vgprs={1: LANES[:32], 2: 1000, 3: 7})
  assert seen == [(5, 2)]   # all five in one region, both waves natively
  inner = (0x0000f0f0 >> LANES[:32]) & 1 == 1
  v2 = np.where(inner, 2 * LANES[:32], 1000)
  for w in range(2):
    assert (st.vgpr[w, :, 2] == v2).all() and (st.vgpr[w, :, 3] == v2 + 1).all()   # the add after the restore: every lane
    assert st.get_mask(w, 4) == 0xffffffff and st.get_mask(w, 126) == 0xffffffff   # saved EXEC, restored EXEC
    assert st.get_mask(w, 6) == sum(1 << i for i in range(32) if inner[i] and i > 3)   # the compare under the block's EXEC: 0 elsewhere

def test_saveexec_wave64_and_exec_left_changed(monkeypatch, native_runs, both, region_calls):
  seen = region_calls
  mask = (0xff << 40) | 0x3
  prog = [s_and_saveexec_b64(s[4:5], s[2:3]), v_add_nc_u32_e32(v[2], v[1], v[1])]
  st = both(prog, lanes=64, sgprs={2: mask & 0xffffffff, 3: mask >> 32}, vgprs={1: LANES, 2: 5})
  assert seen == [(2, 1)]
  on = (mask >> LANES) & 1 == 1
  assert (st.vgpr[0, :, 2] == np.where(on, 2 * LANES, 5)).all()
  assert st.get_mask(0, 126) == mask and st.get_mask(0, 4) == (1 << 64) - 1   # EXEC stays as the region left it

@pytest.mark.parametrize("block", [0x0, 0x00ff0000], ids=["taken", "not-taken"])
def test_cbranch_execz_ends_the_region_taken_or_not(monkeypatch, native_runs, both, block, region_calls):
  seen = region_calls
  # if the block's EXEC is empty the branch skips the add (to the restore); either way EXEC comes back and v3 = v2 + 1 everywhere
  prog = [s_and_saveexec_b32(s[4], s[2]), s_cbranch_execz(1), v_add_nc_u32_e32(v[2], v[1], v[1]),
          s_or_b32(EXEC_LO, EXEC_LO, s[4]), v_add_nc_u32_e32(v[3], 1, v[2])]
  st = both(prog, sgprs={2: block}, vgprs={1: LANES[:32], 2: 1000})
  assert seen[0] == (2, 1)   # the saveexec and the branch: one region ending at the branch
  inner = (block >> LANES[:32]) & 1 == 1
  v2 = np.where(inner, 2 * LANES[:32], 1000)
  assert (st.vgpr[0, :, 2] == v2).all() and (st.vgpr[0, :, 3] == v2 + 1).all()

def test_a_load_under_a_narrowed_exec_reads_and_counts_only_its_lanes(monkeypatch, native_runs, both, region_calls):
  from emu.common.memory import MemoryMap
  seen = region_calls
  data = (np.arange(32, dtype=np.uint32) * 3 + 11)
  mem = MemoryMap()
  mem.map(data.ctypes.data, data.nbytes, backing=data.view(np.uint8))
  on = (0xff00 >> LANES[:32]) & 1 == 1
  # lanes outside the block point far past the buffer: a load there would fault (or leave the native table)
  prog = [s_and_saveexec_b32(s[4], s[2]), global_load_b32(vdst=v[5], addr=v[2], saddr=s[6:7], offset=0), s_waitcnt(0),
          s_or_b32(EXEC_LO, EXEC_LO, s[4]), v_add_nc_u32_e32(v[6], 1, v[5])]
  st = both(prog, memory=mem, sgprs={2: 0x0000ff00, 6: data.ctypes.data & 0xffffffff, 7: data.ctypes.data >> 32},
            vgprs={2: np.where(on, LANES[:32] * 4, 1 << 30), 5: 9})
  assert [n for n, _ in seen] == [5]
  assert (st.vgpr[0, :, 5] == np.where(on, data, 9)).all() and (st.vgpr[0, :, 6] == np.where(on, data, 9) + 1).all()
  assert st.stats.bytes_read == 4 * 8

def test_a_nan_only_in_a_lane_the_block_left_out_stays_native(monkeypatch, native_runs, both):
  from emu.amd.exec_valu import ValuStep
  calls, real = [], ValuStep.run   # the numpy path's VALU runs: a wave that fell back re-runs the multiply there
  monkeypatch.setattr(ValuStep, "run", lambda self, m, ws: (calls.append(list(ws)), real(self, m, ws))[1])
  x = np.where(LANES[:32] < 16, 2.0, np.inf).astype(np.float32)   # 0 * inf = NaN in lanes 16..31
  prog = [s_and_saveexec_b32(s[4], s[2]), v_mul_f32_e32(v[2], 0, v[1]), s_or_b32(EXEC_LO, EXEC_LO, s[4])]
  st = run_program(prog, sgprs={2: 0x0000ffff}, vgprs={1: x.view(np.uint32), 2: 77})   # the NaN lanes outside the block
  assert native_runs == [1] and calls == []   # no NaN where the multiply ran: no fallback
  assert (st.vgpr[0, :, 2] == np.where(LANES[:32] < 16, 0, 77)).all() and st.get_mask(0, 126) == 0xffffffff
  st = both(prog, sgprs={2: 0xffff0000}, vgprs={1: x.view(np.uint32), 2: 77})   # inside: the wave goes back to the numpy path
  # (one numpy-path multiply for the wave that fell back, one in `both`'s reference run with regions off, one where its chained
  # run fell back)
  assert calls == [[0], [0], [0]] and np.isnan(st.vgpr[0, 16:, 2].view(np.float32)).all() and (st.vgpr[0, :16, 2] == 77).all()

def test_lanes_switched_on_mid_region_are_written_and_read_exec_as_set(monkeypatch, native_runs, both, region_calls):
  from tinygrad.runtime.autogen.amd.rdna3.ins import v_cndmask_b32_e64
  seen = region_calls
  # the dispatch starts with lanes 0..15; the region turns on 16..31, then selects by EXEC (20 where a lane is on) and adds
  prog = [v_add_nc_u32_e32(v[2], 1, v[1]), s_or_b32(EXEC_LO, EXEC_LO, s[2]), v_cndmask_b32_e64(v[3], 10, 20, EXEC_LO),
          v_add_nc_u32_e32(v[4], v[3], v[1])]
  st = both(prog, exec_mask=0x0000ffff, sgprs={2: 0xffff0000}, vgprs={1: LANES[:32], 2: 5, 3: 6, 4: 7})
  assert seen == [(4, 1)]
  assert (st.vgpr[0, :, 2] == np.where(LANES[:32] < 16, LANES[:32] + 1, 5)).all()   # before the switch: the first 16 lanes
  assert (st.vgpr[0, :, 3] == 20).all() and (st.vgpr[0, :, 4] == LANES[:32] + 20).all() and st.get_mask(0, 126) == 0xffffffff
