"""Waves batched in lockstep must still compute per wave: SOP2/SOPC/SOP1 and SMEM inputs that differ between the waves of one batch
(workgroup ids), results scattered back to the right wave, scalar traffic counted per wave; on the numpy path and in native regions
(emu.amd.regions, which run a batch wave by wave)."""
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.rdna3.ins import (s, v, s_mul_i32, s_add_u32, s_cmp_gt_u32, s_cselect_b32, s_lshl_b32, s_load_b32, s_waitcnt,
  s_mov_b64, v_mov_b32_e32, global_store_b32, s_endpgm)
from emu.amd.api import Dispatch
from emu.amd.gpu import AMDGPU
from emu.amd.kernel import Buffers

@pytest.fixture(params=["numpy", "native"])
def path(request, monkeypatch):
  """Run on the numpy path (EMU_REGIONS=0): None; or with every region native at once: the batch sizes scalar loads ran for on
  the numpy path (a wave that falls back from its region)."""
  from emu import native
  from emu.amd.exec_salu import SmemStep
  if request.param == "numpy":
    monkeypatch.setenv("EMU_REGIONS", "0")
    return None
  if not native.available(): pytest.skip(f"no native code here: {native.NATIVE.why}")
  request.getfixturevalue("native_runs")
  calls, real = [], SmemStep.run
  monkeypatch.setattr(SmemStep, "run", lambda self, m, ws: (calls.append(len(ws)), real(self, m, ws))[1])
  return calls

def test_scalar_ops_and_s_load_b32_differ_per_workgroup(path):
  # user SGPRs s[0:1] = table, s[2:3] = out; s4 = workgroup id x (RSRC2: 4 user SGPRs, TGID_X_EN)
  n_wg, table = 6, (np.arange(6, dtype=np.uint32) * 1000 + 7)
  out = np.zeros((n_wg, 4), dtype=np.uint32)
  prog = [s_mul_i32(s[5], s[4], 3), s_add_u32(s[5], s[5], 5), s_cmp_gt_u32(s[4], 2), s_cselect_b32(s[6], 10, 20), s_lshl_b32(s[7], s[4], 2),
          s_load_b32(s[8], s[0:1], s[7]), s_waitcnt(0), s_lshl_b32(s[9], s[4], 4), s_mov_b64(s[10:11], s[2:3]),
          v_mov_b32_e32(v[1], s[5]), v_mov_b32_e32(v[2], s[6]), v_mov_b32_e32(v[3], s[8]), v_mov_b32_e32(v[4], s[9]), v_mov_b32_e32(v[0], s[9]),
          global_store_b32(addr=v[0], data=v[1], saddr=s[10:11], offset=0), global_store_b32(addr=v[0], data=v[2], saddr=s[10:11], offset=4),
          global_store_b32(addr=v[0], data=v[3], saddr=s[10:11], offset=8), global_store_b32(addr=v[0], data=v[4], saddr=s[10:11], offset=12),
          s_endpgm()]
  bufs = Buffers()
  code = bufs.add(np.frombuffer(b"".join(i.to_bytes() for i in prog) + bytes(64), dtype=np.uint8).copy(), "code", writable=False)
  t, o = bufs.add(table, "table", writable=False), bufs.add(out, "out")
  d = Dispatch(code_addr=code, grid=(n_wg, 1, 1), workgroup=(64, 1, 1), user_sgprs=[t & 0xffffffff, t >> 32, o & 0xffffffff, o >> 32],
               rsrc2=(4 << 1) | (1 << 7))
  stats = AMDGPU("gfx1100", bufs.mem, timing=False).dispatch(d)
  wg = np.arange(n_wg)
  out = bufs.keep[-1]
  assert (out[:, 0] == wg * 3 + 5).all() and (out[:, 1] == np.where(wg > 2, 10, 20)).all()
  assert (out[:, 2] == table).all() and (out[:, 3] == wg * 16).all()
  assert stats.waves == 2 * n_wg and stats.bytes_read == 4 * stats.waves   # every wave's s_load_b32 counts, even when deduplicated
  assert path is None or path == []   # native: the load ran in its region for every wave

def _scalar_loads(n_wg:int, table:np.ndarray, far_wg:int|None=None):
  """Each workgroup loads s_load_b128 at table + 64 * wg and s_load_b64 16 bytes past it (workgroup `far_wg`: 2 GiB past the
  table instead) and stores the six dwords at out + 32 * wg: (run the dispatch, the table's address, the output buffer)."""
  from tinygrad.runtime.autogen.amd.rdna3.ins import s_load_b128, s_load_b64, s_cmp_eq_u32
  prog = [s_lshl_b32(s[7], s[4], 6), s_cmp_eq_u32(s[4], -1 if far_wg is None else far_wg), s_cselect_b32(s[7], 0x7ff00000, s[7]),
          s_load_b128(s[8:11], s[0:1], s[7]), s_load_b64(s[12:13], s[0:1], s[7], offset=16), s_waitcnt(0),
          s_lshl_b32(s[9 + 16], s[4], 5), s_mov_b64(s[26:27], s[2:3]), v_mov_b32_e32(v[0], s[25])]
  for i in range(6): prog += [v_mov_b32_e32(v[1], s[8 + i]), global_store_b32(addr=v[0], data=v[1], saddr=s[26:27], offset=4 * i)]
  bufs = Buffers()
  code = bufs.add(np.frombuffer(b"".join(i.to_bytes() for i in prog + [s_endpgm()]) + bytes(64), dtype=np.uint8).copy(), "code", writable=False)
  t, o = bufs.add(table, "table", writable=False), bufs.add(np.zeros((n_wg, 8), dtype=np.uint32), "out")
  d = Dispatch(code_addr=code, grid=(n_wg, 1, 1), workgroup=(64, 1, 1), user_sgprs=[t & 0xffffffff, t >> 32, o & 0xffffffff, o >> 32],
               rsrc2=(4 << 1) | (1 << 7))
  return lambda: AMDGPU("gfx1100", bufs.mem, timing=False).dispatch(d), t, bufs.keep[-1]

def test_multi_dword_scalar_loads_differ_per_workgroup(path):
  n_wg, table = 6, np.arange(6 * 16, dtype=np.uint32) * 3 + 1
  run, _, out = _scalar_loads(n_wg, table)
  stats = run()
  rows = table.reshape(n_wg, 16)
  np.testing.assert_array_equal(out[:, :6], rows[:, :6])   # dwords 0-3 (b128 at +0) and 4-5 (b64 at +16) of each workgroup's row
  assert stats.bytes_read == (16 + 8) * stats.waves       # counted per wave
  assert path is None or path == []

def test_a_scalar_load_fault_names_its_address_when_waves_differ(path):
  from emu.amd.api import GPUMemoryFault
  run, table_addr, out = _scalar_loads(6, np.arange(6 * 16, dtype=np.uint32), far_wg=4)
  with pytest.raises(GPUMemoryFault) as e: run()
  # the far workgroup's own s_load_b128 address, as a scalar load reports it (not the batch's 'lane' of a vector access)
  assert e.value.addr == table_addr + 0x7ff00000 and "lane" not in str(e.value)
  assert not out.any()   # nothing stored: the fault ends the dispatch at the load
  assert path is None or path == [2]   # native: only the far workgroup's two waves fell back (and faulted on the numpy path)

def test_lanes_follow_exec_changes_within_a_batch():
  # the same two waves run every instruction as one batch; each VALU op must write the lanes EXEC enables at that instruction
  from emu.amd.runner import run_program
  from tinygrad.runtime.autogen.amd.rdna3.ins import s_mov_b32, EXEC_LO
  st = run_program([v_mov_b32_e32(v[1], 1), s_mov_b32(EXEC_LO, 0xf0), v_mov_b32_e32(v[2], 2), v_mov_b32_e32(v[3], 3),
                    s_mov_b32(EXEC_LO, 0x3), v_mov_b32_e32(v[4], 4)], waves=2, exec_mask=0b111)
  lane = np.arange(32)
  for w in range(2):
    np.testing.assert_array_equal(st.vgpr[w, :, 1], np.where(lane < 3, 1, 0))
    np.testing.assert_array_equal(st.vgpr[w, :, 2], np.where((lane >= 4) & (lane < 8), 2, 0))
    np.testing.assert_array_equal(st.vgpr[w, :, 3], np.where((lane >= 4) & (lane < 8), 3, 0))
    np.testing.assert_array_equal(st.vgpr[w, :, 4], np.where(lane < 2, 4, 0))
