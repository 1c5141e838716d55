"""GLOBAL/SCRATCH/DS/SMEM: addressing forms, LDS and global atomics with aliasing lanes, barrier across waves, scratch."""
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.rdna3.ins import (s, v, global_load_b32, global_store_b32, global_load_b128, global_store_b128,
  global_atomic_add_u32, ds_store_b32, ds_load_b32, ds_add_u32, ds_add_rtn_u32, ds_store_2addr_b32, ds_load_2addr_b32,
  scratch_store_b32, scratch_load_b32, s_load_b64, s_barrier, s_waitcnt, v_lshlrev_b32_e32, v_mov_b32_e32, s_endpgm, s_cmp_eq_u32, s_cbranch_scc1)
from tinygrad.renderer.amd.dsl import NULL
from emu.amd import run_program
from emu.amd.api import GPUMemoryFault, GPUHangFault, GPUIllegalInstruction
from emu.common.memory import MemoryMap

LANES = np.arange(32)

def mapped(*arrays):
  mem = MemoryMap()
  for a in arrays: mem.map(a.ctypes.data, a.nbytes, backing=a.view(np.uint8).reshape(-1))
  return mem

def addr64(base, offs):
  a = base + np.asarray(offs, dtype=np.uint64)
  return {"lo": (a & 0xffffffff).astype(np.uint32), "hi": (a >> np.uint64(32)).astype(np.uint32)}

def test_global_load_store_b32_vaddr64_and_offset():
  src, dst = np.arange(64, dtype=np.uint32) * 3, np.zeros(32, dtype=np.uint32)
  sa, da = addr64(src.ctypes.data, LANES * 4), addr64(dst.ctypes.data, LANES * 4)
  prog = [global_load_b32(vdst=v[4], addr=v[0:1], saddr=NULL, offset=8), s_waitcnt(0), global_store_b32(addr=v[2:3], data=v[4], saddr=NULL)]
  st = run_program(prog,
                   vgprs={0: sa["lo"], 1: sa["hi"], 2: da["lo"], 3: da["hi"]}, memory=mapped(src, dst))
  assert (dst == src[2:34]).all() and st.stats.bytes_read == 128 and st.stats.bytes_written == 128

def test_global_load_b128_saddr_form():
  src = np.arange(32 * 4, dtype=np.uint32)
  st = run_program([global_load_b128(vdst=v[4:7], addr=v[0], saddr=s[2:3])], sgprs={2: src.ctypes.data}, vgprs={0: LANES * 16}, memory=mapped(src))
  assert (st.vgpr[0, :, 4:8] == src.reshape(32, 4)).all()

def _bytes_at(buf:np.ndarray, offs, n:int) -> np.ndarray:
  """n bytes of buf at each byte offset, as little-endian dwords (the expected VDATA of a load)."""
  b = buf.view(np.uint8)
  return np.stack([b[o:o + n] for o in offs]).view("<u4")

@pytest.mark.parametrize("offs", [LANES * 16 + 2, (31 - LANES) * 12 + 4, LANES * 4 + 1],
                         ids=["unaligned", "reversed-overlapping", "unaligned-overlapping"])
def test_global_load_b128_any_lane_addresses(offs):
  # each lane reads its 16 bytes whatever the alignment or overlap of the lanes' spans (the located-span path takes only
  # dword-aligned lanes, the others read byte by byte): expected from the buffer's bytes
  src = np.random.default_rng(1).integers(0, 2**32, 160, dtype=np.uint32)
  st = run_program([global_load_b128(vdst=v[4:7], addr=v[0], saddr=s[2:3])], sgprs={2: src.ctypes.data}, vgprs={0: offs}, memory=mapped(src))
  assert (st.vgpr[0, :, 4:8] == _bytes_at(src, offs, 16)).all() and st.stats.bytes_read == 32 * 16

def test_global_load_b128_lanes_in_two_mappings():
  a, b = np.arange(64, dtype=np.uint32), np.arange(1000, 1064, dtype=np.uint32)
  addr = np.where(LANES % 2 == 0, a.ctypes.data + (LANES // 2) * 16, b.ctypes.data + (LANES // 2) * 16).astype(np.uint64)
  st = run_program([global_load_b128(vdst=v[4:7], addr=v[0:1], saddr=NULL)], vgprs={0: addr_lo(addr), 1: addr_hi(addr)}, memory=mapped(a, b))
  want = np.where((LANES % 2 == 0)[:, None], a.reshape(16, 4)[LANES // 2], b.reshape(16, 4)[LANES // 2])
  assert (st.vgpr[0, :, 4:8] == want).all()

def test_global_load_b128_straddling_the_mapping_faults_at_the_first_dword_outside():
  # lane 3's load covers bytes 120..135 of a 128-byte mapping: its third dword (byte 128) is the first access outside
  src = np.arange(32, dtype=np.uint32)
  offs = np.where(LANES == 3, 120, 0)
  with pytest.raises(GPUMemoryFault) as e:
    run_program([global_load_b128(vdst=v[4:7], addr=v[0], saddr=s[2:3])], sgprs={2: src.ctypes.data}, vgprs={0: offs}, memory=mapped(src))
  assert e.value.addr == src.ctypes.data + 128 and not e.value.write

@pytest.mark.parametrize("offs", [LANES * 16, (LANES // 2) * 8, LANES * 4 + 2], ids=["disjoint", "overlapping", "unaligned-overlapping"])
def test_global_store_b128_writes_dword_by_dword_in_lane_order(offs):
  # the pcode stores dword k of every lane (in lane order) before dword k + 1: where lanes' spans overlap, the later write wins
  dst = np.zeros(160, dtype=np.uint32)
  data = np.arange(32 * 4, dtype=np.uint32).reshape(32, 4) + 1
  want = dst.view(np.uint8).copy()
  for k in range(4):
    for lane in range(32): want[offs[lane] + 4 * k: offs[lane] + 4 * k + 4] = data[lane, k:k + 1].view(np.uint8)
  st = run_program([global_store_b128(addr=v[0], data=v[4:7], saddr=s[2:3])], sgprs={2: dst.ctypes.data},
                   vgprs={0: offs, 4: data[:, 0], 5: data[:, 1], 6: data[:, 2], 7: data[:, 3]}, memory=mapped(dst))
  assert (dst.view(np.uint8) == want).all() and st.stats.bytes_written == 32 * 16

def addr_lo(a): return (np.asarray(a, dtype=np.uint64) & np.uint64(0xffffffff)).astype(np.uint32)
def addr_hi(a): return (np.asarray(a, dtype=np.uint64) >> np.uint64(32)).astype(np.uint32)

def test_global_atomic_add_u32_same_address_all_lanes_return_pre_values():
  cnt = np.zeros(4, dtype=np.uint32)
  st = run_program([global_atomic_add_u32(vdst=v[3], addr=v[0], data=v[2], saddr=s[2:3], glc=1)], sgprs={2: cnt.ctypes.data}, vgprs={0: 0, 2: 1},
                   memory=mapped(cnt))
  assert cnt[0] == 32 and sorted(st.vgpr[0, :, 3].tolist()) == list(range(32))

def test_ds_store_load_b32_with_offset_and_partial_exec():
  st = run_program([v_lshlrev_b32_e32(v[1], 2, v[0]), ds_store_b32(addr=v[1], data0=v[2], offset0=4), ds_load_b32(vdst=v[3], addr=v[1], offset0=4)],
                   vgprs={0: LANES, 2: LANES + 1000, 3: 5}, lds_bytes=256, exec_mask=0x0000ffff)
  assert (st.vgpr[0, :16, 3] == LANES[:16] + 1000).all() and (st.vgpr[0, 16:, 3] == 5).all()
  assert (st.lds[4:68].view(np.uint32) == LANES[:16] + 1000).all()

def test_ds_2addr_b32():
  st = run_program([ds_store_2addr_b32(addr=v[1], data0=v[2], data1=v[3], offset0=0, offset1=32),
                    ds_load_2addr_b32(vdst=v[4:5], addr=v[1], offset0=32, offset1=0)],
                   vgprs={1: LANES * 4, 2: LANES, 3: LANES + 100}, lds_bytes=512)
  assert (st.vgpr[0, :, 4] == LANES + 100).all() and (st.vgpr[0, :, 5] == LANES).all()

def test_ds_add_u32_aliasing_and_ds_add_rtn():
  prog = [ds_add_u32(addr=v[1], data0=v[2]), ds_add_rtn_u32(vdst=v[3], addr=v[1], data0=v[2])]
  st = run_program(prog, vgprs={1: (LANES % 2) * 4, 2: 1, 3: 77}, lds_bytes=64)
  assert st.lds[:8].view(np.uint32).tolist() == [32, 32]
  assert sorted(st.vgpr[0, :, 3].tolist()) == sorted(list(range(16, 32)) * 2)
  assert st.vgpr[0, 0, 0] == 0   # the non-returning ds_add_u32 wrote no VGPR

def test_ds_out_of_range_reads_zero_like_hardware():
  st = run_program([ds_load_b32(vdst=v[3], addr=v[1])], vgprs={1: 4096, 3: 9}, lds_bytes=64)
  assert (st.vgpr[0, :, 3] == 0).all()

def test_s_barrier_orders_lds_across_waves():
  # wave 1 writes LDS after a barrier wave 0 waits on; each wave reads the other's slot after the barrier
  prog = [ds_store_b32(addr=v[1], data0=v[2]), s_waitcnt(0), s_barrier(), ds_load_b32(vdst=v[3], addr=v[4])]
  st = run_program(prog, waves=2, vgprs={1: LANES * 4, 2: LANES, 4: (31 - LANES) * 4}, lds_bytes=128)
  assert (st.vgpr[0, :, 3] == 31 - LANES).all() and (st.vgpr[1, :, 3] == 31 - LANES).all()

def test_scratch_store_load_private_per_lane():
  st = run_program([scratch_store_b32(addr=v[1], data=v[2], saddr=NULL, offset=4, sve=1),
                    scratch_load_b32(vdst=v[3], addr=v[1], saddr=NULL, offset=4, sve=1)],
                   vgprs={1: 0, 2: LANES * 7}, scratch_bytes=16)
  assert (st.vgpr[0, :, 3] == LANES * 7).all()

def test_s_load_b64():
  data = np.array([0x11111111, 0x22222222, 0x33333333, 0x44444444], dtype=np.uint32)
  st = run_program([s_load_b64(s[4:5], s[2:3], NULL, 8), s_waitcnt(0)], sgprs={2: data.ctypes.data}, memory=mapped(data))
  assert int(st.sgpr[0, 4]) == 0x33333333 and int(st.sgpr[0, 5]) == 0x44444444

# ---- faults ----
def test_global_load_unmapped_faults_with_pc_and_instruction():
  with pytest.raises(GPUMemoryFault) as e:
    run_program([global_load_b32(vdst=v[4], addr=v[0:1], saddr=NULL)], vgprs={0: 0x1000, 1: 0})
  assert e.value.addr == 0x1000 and e.value.pc is not None and "global_load_b32" in e.value.inst and not e.value.write

def test_global_store_out_of_bounds_writes_nothing():
  dst = np.zeros(8, dtype=np.uint32)
  a = addr64(dst.ctypes.data, LANES * 4)
  with pytest.raises(GPUMemoryFault) as e:
    run_program([global_store_b32(addr=v[0:1], data=v[2], saddr=NULL)], vgprs={0: a["lo"], 1: a["hi"], 2: 5}, memory=mapped(dst))
  assert e.value.write and (dst == 0).all()

def test_scratch_beyond_private_size_faults():
  with pytest.raises(GPUMemoryFault):
    run_program([scratch_load_b32(vdst=v[3], addr=v[1], saddr=NULL, sve=1)], vgprs={1: 64}, scratch_bytes=16)

def test_watchdog_on_infinite_loop():
  with pytest.raises(GPUHangFault) as e:
    run_program([s_cmp_eq_u32(0, 0), s_cbranch_scc1(-2 & 0xffff)], watchdog=1000)
  assert "1000 wave-instructions" in str(e.value) and e.value.executed > 1000

def test_illegal_instruction_bytes():
  with pytest.raises(GPUIllegalInstruction):
    run_program([b"\xff\xff\xff\xff"])

def test_unimplemented_op_is_named():
  from tinygrad.runtime.autogen.amd.rdna3.ins import ds_gws_init   # global wave sync: the wheel has no pcode and the emulator no model
  with pytest.raises(GPUIllegalInstruction, match="DS_GWS_INIT"):
    run_program([ds_gws_init(data0=v[0]), s_endpgm()])

def test_trace_prints_changes(capsys):
  run_program([v_mov_b32_e32(v[1], 3), s_endpgm()], trace=True)
  out = capsys.readouterr().out
  assert "v_mov_b32_e32" in out and "v1[0:0x3" in out

# ---- FLAT apertures: SRC_SHARED_BASE / SRC_PRIVATE_BASE and flat addresses that reach LDS and scratch ----
def s_mov_b64_src(sdst:int, code:int) -> bytes:
  """s_mov_b64 s[sdst:sdst+1], <source operand code> (SOP1 encoding by hand: the DSL has no 64-bit aperture operands)."""
  return (0xbe800100 | (sdst << 16) | code).to_bytes(4, "little")

def test_src_shared_and_private_base_read_the_apertures():
  from tinygrad.runtime.autogen.amd.rdna3.ins import s_mov_b32
  from tinygrad.renderer.amd.dsl import src
  st = run_program([s_mov_b64_src(4, 235), s_mov_b64_src(6, 237), s_mov_b32(s[8], src[235])])
  # amdkfd's gfx9+ layout: shared aperture at 1 << 48, private at 2 << 48; a 32-bit read gets the low half
  assert list(st.sgpr[0, 4:9]) == [0, 0x10000, 0, 0x20000, 0]

def test_flat_store_b32_to_shared_aperture_lands_in_lds():
  from tinygrad.runtime.autogen.amd.rdna3.ins import flat_store_b32
  prog = [s_mov_b64_src(4, 235), v_mov_b32_e32(v[1], s[5]), flat_store_b32(addr=v[0:1], data=v[2], offset=4),
          ds_load_b32(vdst=v[3], addr=v[0], offset0=4)]
  st = run_program(prog, vgprs={0: LANES * 4, 2: LANES + 100}, lds_bytes=256)
  assert (st.lds.view(np.uint32)[1:33] == LANES + 100).all() and (st.vgpr[0, :, 3] == LANES + 100).all()

def test_flat_load_b32_from_private_aperture_reads_scratch():
  from tinygrad.runtime.autogen.amd.rdna3.ins import flat_load_b32
  prog = [scratch_store_b32(addr=v[4], data=v[2], saddr=NULL, offset=0, sve=1), s_mov_b64_src(6, 237), v_mov_b32_e32(v[5], s[7]),
          flat_load_b32(vdst=v[3], addr=v[4:5])]
  st = run_program(prog, vgprs={2: LANES * 3, 4: 8}, scratch_bytes=16)
  assert (st.vgpr[0, :, 3] == LANES * 3).all()

def test_flat_global_and_shared_lanes_in_one_instruction():
  from tinygrad.runtime.autogen.amd.rdna3.ins import flat_load_b32
  data = np.arange(32, dtype=np.uint32) + 500
  g = addr64(data.ctypes.data, LANES * 4)
  lo, hi = np.where(LANES < 16, g["lo"], LANES * 4), np.where(LANES < 16, g["hi"], 0x10000)   # lanes 16..31 address LDS
  prog = [ds_store_b32(addr=v[6], data0=v[7]), flat_load_b32(vdst=v[3], addr=v[0:1])]
  st = run_program(prog, vgprs={0: lo, 1: hi, 6: LANES * 4, 7: LANES + 9}, lds_bytes=128, memory=mapped(data))
  assert (st.vgpr[0, :, 3] == np.where(LANES < 16, LANES + 500, LANES + 9)).all()
