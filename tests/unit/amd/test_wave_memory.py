"""Register files live on reused anonymous mappings (emu.amd.wave._ZeroMappings): whatever one chunk of waves left in them, the next
user starts from zero, in the part its user expected to touch and past it; a mapping an array still sees is never handed out."""
import sys
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.rdna3.ins import s, v, s_lshl_b32, v_lshlrev_b32_e32, v_add_nc_u32_e32, v_mov_b32_e32, global_store_b32, s_endpgm
from emu.amd import wave
from emu.amd.api import Dispatch
from emu.amd.dispatcher import CHUNK_WAVES
from emu.amd.gpu import AMDGPU
from emu.amd.kernel import Buffers

linux_only = pytest.mark.skipif(sys.platform != "linux", reason="mappings are reused on Linux only (elsewhere MADV_DONTNEED need not zero)")
SHAPE = (64, 1024, 32)   # 8 MiB of uint32: rows of 128 KiB
ROW = SHAPE[1] * SHAPE[2] * 4

@linux_only
def test_a_mapping_given_back_is_zero_again_inside_and_past_its_hot_part():
  mappings = wave._ZeroMappings()
  a = mappings.array(SHAPE, np.uint32, hot_bytes=4 * ROW)
  a[:4], a[40], a[-1, -1, -1] = 7, 9, 1   # the hot rows, a row past them, the last dword
  addr = a.ctypes.data
  del a
  assert len(mappings.free) == 1
  b = mappings.array(SHAPE, np.uint32, hot_bytes=0)
  assert b.ctypes.data == addr and not mappings.free   # the same mapping, reused
  assert not b.any()

@linux_only
def test_a_mapping_an_array_still_sees_is_not_reused():
  mappings = wave._ZeroMappings()
  a = mappings.array(SHAPE, np.uint32, hot_bytes=ROW)
  row = a[3]
  row[:] = 5
  del a
  assert not mappings.free
  b = mappings.array(SHAPE, np.uint32, hot_bytes=0)
  assert not b.any() and (row == 5).all()
  del row
  assert len(mappings.free) == 1

@linux_only
def test_only_the_most_recent_mappings_are_kept():
  mappings = wave._ZeroMappings(keep=2)
  arrays = [mappings.array(SHAPE, np.uint32, hot_bytes=0) for _ in range(3)]
  addrs = [a.ctypes.data for a in arrays]
  while arrays: arrays.pop(0)   # given back in order
  assert [len(m) for m in mappings.free] == [8 << 20] * 2
  assert mappings.array(SHAPE, np.uint32, hot_bytes=0).ctypes.data == addrs[2]

def test_every_chunk_starts_with_zero_registers_whatever_the_one_before_wrote(monkeypatch):
  # each thread stores v1 (inside RSRC1's allocation: 8 VGPRs) and v200 (past it), then writes both: four chunks of waves, so
  # that later chunks run on register files earlier ones wrote
  from emu.amd import dispatcher
  monkeypatch.setattr(dispatcher, "CHUNK_WAVES_MAX", CHUNK_WAVES)   # (a kernel allocating 8 VGPRs would get bigger chunks)
  wg_threads, n_wg = 256, 4 * CHUNK_WAVES * 32 // 256
  prog = [s_lshl_b32(s[5], s[4], 11), v_lshlrev_b32_e32(v[2], 3, v[0]), v_add_nc_u32_e32(v[2], s[5], v[2]),
          global_store_b32(addr=v[2], data=v[1], saddr=s[2:3], offset=0), global_store_b32(addr=v[2], data=v[200], saddr=s[2:3], offset=4),
          v_mov_b32_e32(v[1], 0xdead), v_mov_b32_e32(v[200], 0xbeef), s_endpgm()]
  bufs = Buffers()
  code = bufs.add(np.frombuffer(b"".join(i.to_bytes() for i in prog) + bytes(64), dtype=np.uint8).copy(), "code", writable=False)
  o = bufs.add(np.full((n_wg * wg_threads, 2), 0x5555, dtype=np.uint32), "out")
  d = Dispatch(code_addr=code, grid=(n_wg, 1, 1), workgroup=(wg_threads, 1, 1), user_sgprs=[0, 0, o & 0xffffffff, o >> 32],
               rsrc2=(4 << 1) | (1 << 7))
  AMDGPU("gfx1100", bufs.mem, timing=False).dispatch(d)
  assert not bufs.keep[-1].any()

@pytest.mark.parametrize("vgpr_blocks, lds, scratch, lanes, threads, want", [
  (0, 0, 0, 32, 256, 2048),        # 8 VGPRs (gfx1100 wave32 granule): 16 MiB holds 16K waves, capped at CHUNK_WAVES_MAX
  (31, 0, 0, 32, 256, 512),        # 256 VGPRs: 16 MiB holds 512 waves
  (15, 0, 0, 64, 64, 1024),        # 64 VGPRs of wave64 (16 blocks of 4) of 64 lanes x 4 bytes: 16 MiB / 16 KiB
  (0, 65536, 0, 32, 32, 1024),     # 64 KiB of LDS per one-wave workgroup: 64 MiB holds 1024 of them
  (0, 65536, 0, 32, 1024, 2048),   # ... per 32-wave workgroup: 1/32 of the LDS bytes per wave: the VGPRs decide
  (31, 65536, 0, 32, 32, 512),     # never fewer than CHUNK_WAVES for LDS or VGPRs
  (0, 0, 4096, 32, 256, 2048),     # 4 KiB of scratch per lane: 256 MiB holds 2048 waves
])
def test_chunks_grow_while_registers_and_lds_stay_small(vgpr_blocks, lds, scratch, lanes, threads, want):
  from emu.amd.arch import get_spec
  from emu.amd.dispatcher import LaunchConfig
  spec = get_spec("gfx1100")
  d = Dispatch(code_addr=0, grid=(1, 1, 1), workgroup=(threads, 1, 1), user_sgprs=[], rsrc1=vgpr_blocks, lds_bytes=lds, scratch_per_lane=scratch,
               wave32=lanes == 32)
  cfg = LaunchConfig(spec, d)
  assert cfg.chunk_workgroups(d) * cfg.waves_per_wg == want
