"""Memory-instruction bugs the exec/asm fuzzers found (docs/fuzzing.md), one test each. Expected values are worked out by hand
from the ISA's documented semantics: MUBUF range checking (CDNA3 ISA "Buffer Addressing": stride 0 is out of range when
offset + the bytes moved > num_records; out of range loads return 0, stores are dropped), D16 loads (the loaded 16 bits replace
one half, the other half is kept), memory faults that move nothing, rdna4 block loads/stores (M0 selects which of 32 consecutive
dwords / VGPRs move), gfx12 sub-dword scalar loads and SGPR destinations of VALU ops."""
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.cdna import ins as cdna
from tinygrad.runtime.autogen.amd.rdna3 import ins as rdna3
from tinygrad.runtime.autogen.amd.rdna4 import ins as rdna4
from tinygrad.renderer.amd.dsl import NULL
from emu.amd import run_program
from emu.amd.api import GPUMemoryFault
from emu.amd.arch import SPECS
from emu.common.memory import MemoryMap

def mapped(a:np.ndarray) -> MemoryMap:
  mem = MemoryMap()
  mem.map(a.ctypes.data, a.nbytes, backing=a.view(np.uint8).reshape(-1))
  return mem

def rsrc(addr:int, num_records:int) -> int:
  """A raw (stride 0) buffer resource: base, num_records and LLVM's word3."""
  return addr | (num_records << 64) | (0x27000 << 96)

def cdna_run(insts, data:np.ndarray, exec_mask:int, **kw):
  return run_program(insts, arch="gfx942", lanes=64, exec_mask=exec_mask, memory=mapped(data), **kw)

def mubuf(op, vdata, **kw): return op(vdata=vdata, vaddr=cdna.v[0], srsrc=cdna.s[4:7], soffset=cdna.s[8], offen=1, **kw)

BYTES = (np.arange(32) + 0xa0).astype(np.uint8)   # byte k holds 0xa0 + k

# ---- 1. the MUBUF range check counts the bytes the instruction moves ----
def test_mubuf_range_check_uses_the_access_size():
  # num_records 8: a byte at offset 7 is in range (7 + 1 <= 8), at 8 not; a short at 6 is in (6 + 2 <= 8), at 7 or 8 not
  data = BYTES.copy()
  offs = [7, 8, 6, 7]
  st = cdna_run([mubuf(cdna.buffer_load_ubyte, cdna.v[1]), mubuf(cdna.buffer_load_ushort, cdna.v[2])], data, 0b1111,
                sgprs={4: rsrc(data.ctypes.data, 8), 8: 0}, vgprs={0: offs + [0] * 60, 1: 0x5555, 2: 0x5555})
  assert st.vgpr[0, :4, 1].tolist() == [0xa7, 0, 0xa6, 0xa7]
  assert st.vgpr[0, :4, 2].tolist() == [0, 0, 0xa7a6, 0]

def test_mubuf_cmpswap_32_counts_four_bytes():
  # the dword at offset 4 (bytes 4-7) lies inside num_records 8; DATA is 64 bits (src, cmp) but only 4 bytes move
  data = BYTES.copy()
  st = cdna_run([mubuf(cdna.buffer_atomic_cmpswap, cdna.v[2:3], sc0=1)], data, 1,
                sgprs={4: rsrc(data.ctypes.data, 8), 8: 0}, vgprs={0: 4, 2: 0x11223344, 3: 0xa7a6a5a4})
  assert data[4:8].tolist() == [0x44, 0x33, 0x22, 0x11] and int(st.vgpr[0, 0, 2]) == 0xa7a6a5a4

# ---- 2. MUBUF D16 loads out of range replace only their half ----
@pytest.mark.parametrize("op, want", [(cdna.buffer_load_short_d16, 0x12340000), (cdna.buffer_load_short_d16_hi, 0x00005678),
                                      (cdna.buffer_load_ubyte_d16, 0x12340000), (cdna.buffer_load_sbyte_d16_hi, 0x00005678)])
def test_mubuf_d16_out_of_range_merges_zero(op, want):
  data = BYTES.copy()
  st = cdna_run([mubuf(op, cdna.v[1])], data, 0b11, sgprs={4: rsrc(data.ctypes.data, 8), 8: 0}, vgprs={0: [0, 16] + [0] * 62, 1: 0x12345678})
  in_range = {cdna.buffer_load_short_d16: 0x1234a1a0, cdna.buffer_load_short_d16_hi: 0xa1a05678,
              cdna.buffer_load_ubyte_d16: 0x123400a0, cdna.buffer_load_sbyte_d16_hi: 0xffa05678}[op]   # 0xa0 sign-extends
  assert int(st.vgpr[0, 0, 1]) == in_range and int(st.vgpr[0, 1, 1]) == want

# ---- 3. a faulting multi-dword store writes nothing ----
def test_global_store_b128_straddling_the_mapping_writes_nothing():
  dst = np.zeros(8, dtype=np.uint32)
  a = dst.ctypes.data + 24   # bytes 24-39 of a 32-byte mapping
  with pytest.raises(GPUMemoryFault) as e:
    run_program([rdna3.global_store_b128(addr=rdna3.v[0:1], data=rdna3.v[2:5], saddr=NULL)], exec_mask=1,
                vgprs={0: a & 0xffffffff, 1: a >> 32, 2: 1, 3: 2, 4: 3, 5: 4}, memory=mapped(dst))
  assert e.value.write and not dst.any()

def test_smem_store_dwordx2_straddling_the_mapping_writes_nothing():
  dst = np.zeros(4, dtype=np.uint32)
  with pytest.raises(GPUMemoryFault):
    run_program([cdna.s_store_dwordx2(sdata=cdna.s[2:3], sbase=cdna.s[0:1], offset=12, imm=1)], arch="gfx942", lanes=64,
                sgprs={0: dst.ctypes.data, 2: 0x11111111, 3: 0x22222222}, memory=mapped(dst))
  assert not dst.any()

def test_mubuf_store_dwordx4_straddling_the_mapping_writes_nothing():
  dst = np.zeros(4, dtype=np.uint32)   # num_records covers 64 bytes, the mapping only 16
  with pytest.raises(GPUMemoryFault):
    cdna_run([mubuf(cdna.buffer_store_dwordx4, cdna.v[2:5])], dst, 1, sgprs={4: rsrc(dst.ctypes.data, 64), 8: 0},
             vgprs={0: 8, 2: 1, 3: 2, 4: 3, 5: 4})
  assert not dst.any()

def test_flat_store_with_a_faulting_scratch_lane_writes_no_global_memory():
  # lane 0 stores to global memory, lane 1 to private offset 64 of a 16-byte scratch: the instruction faults, lane 0 writes nothing
  dst = np.zeros(4, dtype=np.uint32)
  addrs = [dst.ctypes.data, SPECS["gfx1100"].private_aperture + 64] + [0] * 30
  with pytest.raises(GPUMemoryFault):
    run_program([rdna3.flat_store_b32(addr=rdna3.v[0:1], data=rdna3.v[2])], exec_mask=0b11, scratch_bytes=16, memory=mapped(dst),
                vgprs={0: [x & 0xffffffff for x in addrs], 1: [x >> 32 for x in addrs], 2: 7})
  assert not dst.any()

# ---- 4. rdna4 block loads and stores ----
def test_rdna4_global_load_block_m0_mask():
  # M0 = 0b1011: v8 <- dword 0, v9 <- dword 1, v10 kept, v11 <- dword 3 of the lane's block; nothing past bit 3
  src = (np.arange(64, dtype=np.uint32) + 1000)
  offs = np.arange(32, dtype=np.uint64) % 2 * 16 + src.ctypes.data   # even lanes at dword 0, odd lanes at dword 4
  st = run_program([rdna4.global_load_block(vdst=rdna4.v[8:39], vaddr=rdna4.v[0:1], saddr=NULL)], arch="gfx1201", memory=mapped(src),
                   sgprs={125: 0b1011}, vgprs={0: (offs & 0xffffffff).astype(np.uint32), 1: (offs >> np.uint64(32)).astype(np.uint32),
                                            10: 77, 12: 88})
  base = np.arange(32) % 2 * 4 + 1000
  assert (st.vgpr[0, :, 8] == base).all() and (st.vgpr[0, :, 9] == base + 1).all() and (st.vgpr[0, :, 11] == base + 3).all()
  assert (st.vgpr[0, :, 10] == 77).all() and (st.vgpr[0, :, 12] == 88).all()

def test_rdna4_global_store_block_m0_mask_and_offset():
  # M0 = 0b101, ioffset 4: lane 0 writes v8 at byte 4 and v10 at byte 12; byte 8 (bit 1) is a hole
  dst = np.zeros(8, dtype=np.uint32)
  a = dst.ctypes.data
  run_program([rdna4.global_store_block(vsrc=rdna4.v[8:39], vaddr=rdna4.v[0:1], saddr=NULL, ioffset=4)], arch="gfx1201", exec_mask=1,
              memory=mapped(dst), sgprs={125: 0b101}, vgprs={0: a & 0xffffffff, 1: a >> 32, 8: 0x80, 9: 0x90, 10: 0xa0})
  assert dst.tolist() == [0, 0x80, 0, 0xa0, 0, 0, 0, 0]

def test_rdna4_global_store_block_past_the_mapping_writes_nothing():
  dst = np.zeros(8, dtype=np.uint32)
  a = dst.ctypes.data
  with pytest.raises(GPUMemoryFault):   # bit 8: byte 32, just past the 32-byte mapping
    run_program([rdna4.global_store_block(vsrc=rdna4.v[8:39], vaddr=rdna4.v[0:1], saddr=NULL)], arch="gfx1201", exec_mask=1,
                memory=mapped(dst), sgprs={125: 0x101}, vgprs={0: a & 0xffffffff, 1: a >> 32, 8: 5})
  assert not dst.any()

def test_rdna4_scratch_block_round_trip():
  # store v8, v9 (M0 = 0b11) at private offset 8, load them back into v20, v21
  st = run_program([rdna4.scratch_store_block(vsrc=rdna4.v[8:39], vaddr=rdna4.v[0], saddr=NULL, sve=1),
                    rdna4.scratch_load_block(vdst=rdna4.v[20:51], vaddr=rdna4.v[0], saddr=NULL, sve=1)], arch="gfx1201", scratch_bytes=32,
                   sgprs={125: 0b11}, vgprs={0: 8, 8: np.arange(32) + 5, 9: np.arange(32) + 500})
  assert (st.vgpr[0, :, 20] == np.arange(32) + 5).all() and (st.vgpr[0, :, 21] == np.arange(32) + 500).all()

# ---- 5. gfx12 sub-dword scalar loads use the byte/short address ----
def test_rdna4_sub_dword_smem_loads_are_not_dword_aligned():
  data = BYTES.copy()
  data[9] = 0x7f
  R = rdna4
  load = lambda op, sdst, off, sbase=R.s[2:3]: op(sdata=R.s[sdst], sbase=sbase, ioffset=off, soffset=NULL)
  st = run_program([load(R.s_load_u8, 10, 5), load(R.s_load_i8, 11, 7), load(R.s_load_i8, 12, 9), load(R.s_load_u16, 13, 6),
                    load(R.s_load_i16, 14, 2), load(R.s_load_b32, 15, 5), load(R.s_buffer_load_u8, 16, 3, R.s[4:7]), R.s_wait_kmcnt(0)],
                   arch="gfx1201", sgprs={2: data.ctypes.data, 4: rsrc(data.ctypes.data, 32)}, memory=mapped(data))
  assert int(st.sgpr[0, 10]) == 0xa5 and int(st.sgpr[0, 11]) == 0xffffffa7 and int(st.sgpr[0, 12]) == 0x7f
  assert int(st.sgpr[0, 13]) == 0xa7a6 and int(st.sgpr[0, 14]) == 0xffffa3a2
  assert int(st.sgpr[0, 15]) == 0xa7a6a5a4   # a dword load still ignores ADDR[1:0]
  assert int(st.sgpr[0, 16]) == 0xa3

# ---- 6. cdna VALU ops whose destination operand is an SGPR ----
def test_cdna_readfirstlane_and_readlane_write_sgprs():
  vop1 = ((0x3f << 25) | (5 << 17) | (2 << 9) | (256 + 1)).to_bytes(4, "little")   # v_readfirstlane_b32 s5, v1 (gfx9 VOP1 op 2)
  st = run_program([vop1, cdna.v_readlane_b32(cdna.v[6], cdna.v[1], cdna.s[3])], arch="gfx942", lanes=64, exec_mask=0b1100,
                   sgprs={3: 9}, vgprs={1: np.arange(64) * 3 + 1, 5: 0x55, 6: 0x66})
  assert int(st.sgpr[0, 5]) == 7 and int(st.sgpr[0, 6]) == 28            # the first active lane is 2; v_readlane reads lane 9
  assert (st.vgpr[0, :, 5] == 0x55).all() and (st.vgpr[0, :, 6] == 0x66).all()
