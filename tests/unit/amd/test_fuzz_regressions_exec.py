"""Emulator bugs the exec.* fuzzers found in the memory, SOPP and DS formats (fuzz/findings/regressions/exec-*.json), pinned with
expectations worked out from the ISA by hand."""
import struct
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.cdna import ins as C
from tinygrad.runtime.autogen.amd.rdna3 import ins as I
from tinygrad.runtime.autogen.amd.rdna4 import ins as R4
from emu.amd import run_program
from emu.amd.api import GPUMemoryFault
from emu.common.memory import MemoryMap

LANES = np.arange(32)
M0 = {"gfx1100": 125, "gfx1201": 125, "gfx942": 124}

def mapped(buf:np.ndarray) -> MemoryMap:
  mem = MemoryMap()
  mem.map(buf.ctypes.data, buf.nbytes, backing=buf.view(np.uint8).reshape(-1))
  return mem

def test_ds_storexchg_rtn_returns_the_old_value():
  # ds_store_b32 puts 100+lane at lane*4; ds_storexchg_rtn_b32 swaps in 7 and returns the 100+lane it replaced
  st = run_program([I.ds_store_b32(addr=I.v[0], data0=I.v[1]), I.ds_storexchg_rtn_b32(vdst=I.v[2], addr=I.v[0], data0=I.v[3])],
                   vgprs={0: LANES * 4, 1: LANES + 100, 2: 5, 3: 7}, lds_bytes=128)
  assert (st.vgpr[0, :, 2] == LANES + 100).all() and (st.lds.view(np.uint32) == 7).all()

def test_cdna_flat_has_no_sgpr_base():
  # gfx9 FLAT encodes its SADDR field as 0 (LLVM rejects anything else): the address is v[0:1] alone, s[0:1] is not added
  buf = np.arange(16, dtype=np.uint32) + 50
  raw = (int.from_bytes(C.flat_load_dword(vdst=C.v[2], addr=C.v[0:1]).to_bytes(), "little") & ~(0x7f << 48)).to_bytes(8, "little")
  a = buf.ctypes.data + 8
  st = run_program([raw], arch="gfx942", lanes=64, sgprs={0: 0x1000, 1: 0x1}, vgprs={0: a & 0xffffffff, 1: a >> 32}, memory=mapped(buf))
  assert (st.vgpr[0, :, 2] == 52).all()

def test_rdna3_flat_offset_msb_is_ignored():
  # gfx11 FLAT-segment offsets are 12-bit unsigned (LLVM: "MSB is ignored and forced to zero"): offset field 0x1004 means +4, not -4092
  buf = np.arange(16, dtype=np.uint32) + 50
  a = buf.ctypes.data
  st = run_program([I.flat_load_b32(vdst=I.v[2], addr=I.v[0:1], offset=0x1004)], vgprs={0: a & 0xffffffff, 1: a >> 32}, memory=mapped(buf))
  assert (st.vgpr[0, :, 2] == 51).all()

def test_gfx12_combined_waits_and_s_sethalt_0_are_no_ops():
  # s_wait_loadcnt_dscnt / s_wait_storecnt_dscnt / s_wait_expcnt wait for counters (nothing to wait for here); s_sethalt 0 clears HALT
  prog = [R4.s_wait_loadcnt_dscnt(0), R4.s_wait_storecnt_dscnt(0), R4.s_wait_expcnt(0), R4.s_sethalt(0), R4.s_movk_i32(R4.s[0], 5)]
  assert int(run_program(prog, arch="gfx1201").sgpr[0, 0]) == 5
  assert int(run_program([I.s_sethalt(1), I.s_movk_i32(I.s[0], 5)], sgprs={0: 9}).sgpr[0, 0]) == 9   # halted: the s_movk never runs

def test_cdna_ds_consume_with_acc_writes_the_agpr():
  # ds_consume a0: the counter at M0 + 0 starts at 0, so every active lane gets 0 in a0; v0 keeps its value
  st = run_program([C.ds_consume(vdst=C.v[0], acc=1)], arch="gfx942", lanes=64, sgprs={M0["gfx942"]: 0}, vgprs={0: 11, 256: 22}, lds_bytes=64)
  assert (st.vgpr[0, :, 0] == 11).all() and (st.vgpr[0, :, 256] == 0).all()
  assert int(st.lds[:4].view(np.uint32)[0]) == 0xffffffc0   # 0 - 64 lanes

def test_rdna4_ds_min_num_with_lanes_that_keep_memory():
  # the op writes only lanes whose data is smaller: a conditional LDS write from a subset of the lanes (crashed with IndexError)
  one = struct.unpack("<I", struct.pack("<f", 1.0))[0]
  data = np.array([struct.unpack("<I", struct.pack("<f", 0.5 if i % 2 else 2.0))[0] for i in range(32)], dtype=np.uint32)
  st = run_program([R4.ds_store_b32(addr=R4.v[0], data0=R4.v[2]), R4.ds_min_num_f32(addr=R4.v[0], data0=R4.v[1])], arch="gfx1201",
                   vgprs={0: LANES * 4, 1: data, 2: one}, lds_bytes=128)
  assert (st.lds.view(np.float32) == np.where(LANES % 2, 0.5, 1.0)).all()

def test_cdna_s_atomic_add_returns_the_old_value_with_glc():
  buf = np.array([40, 0], dtype=np.uint32)
  st = run_program([C.s_atomic_add(sdata=C.s[4], sbase=C.s[0:1], offset=0, imm=1, glc=1)], arch="gfx942", lanes=64,
                   sgprs={0: buf.ctypes.data, 4: 2}, memory=mapped(buf))
  assert int(buf[0]) == 42 and int(st.sgpr[0, 4]) == 40

def test_cdna_global_atomic_add_f64_returns_64_bits():
  buf = np.array([1.5, 0.0], dtype=np.float64)
  st = run_program([C.global_atomic_add_f64(vdst=C.v[4:5], addr=C.v[0], data=C.v[2:3], saddr=C.s[2:3], sc0=1)], arch="gfx942", lanes=64,
                   exec_mask=1, sgprs={2: buf.ctypes.data}, vgprs={0: 0, 2: 0, 3: 0x40000000}, memory=mapped(buf))   # + 2.0
  assert buf[0] == 3.5 and st.vgpr[0, 0, 4:6].copy().view(np.float64)[0] == 1.5

def test_ds_addtid_uses_offset_m0_and_lane():
  # ds_store_addtid_b32 / ds_load_addtid_b32: address = OFFSET + M0[15:0] + lane * 4 (the offset was lost, M0 not passed)
  st = run_program([I.ds_store_addtid_b32(data0=I.v[1], offset0=8), I.ds_load_addtid_b32(vdst=I.v[2], offset0=4)],
                   sgprs={M0["gfx1100"]: 0x10004}, vgprs={1: LANES + 100}, lds_bytes=256)
  assert (st.lds[12:140].view(np.uint32) == LANES + 100).all() and (st.lds[:12] == 0).all()
  assert (st.vgpr[0, 1:, 2] == LANES[:-1] + 100).all() and int(st.vgpr[0, 0, 2]) == 0   # lane 0 reads 8 + 0: not written

def test_ds_addtid_offset_is_offset1_then_offset0():
  # the vendor text's { OFFSET1, OFFSET0 } (declared 8'U each): offset1=1, offset0=4 is byte 260; M0[15:0] = 0 (its high half ignored)
  st = run_program([I.ds_store_addtid_b32(data0=I.v[1], offset0=4, offset1=1)], sgprs={M0["gfx1100"]: 0x10000}, vgprs={1: LANES + 7},
                   lds_bytes=512)
  assert (st.lds[260:388].view(np.uint32) == LANES + 7).all() and not st.lds[:260].any() and not st.lds[388:].any()

def test_cdna_ds_addtid_uses_offset_m0_and_lane():
  # gfx942's DS_WRITE_ADDTID_B32 / DS_READ_ADDTID_B32 (the same vendor text as RDNA's ds_store/load_addtid): OFFSET + M0[15:0] + lane * 4
  from tinygrad.runtime.autogen.amd.cdna import ins as C
  lanes = np.arange(64, dtype=np.uint32)
  st = run_program([C.ds_write_addtid_b32(data0=C.v[1], offset0=8), C.ds_read_addtid_b32(vdst=C.v[2], offset0=4)], arch="gfx942", lanes=64,
                   sgprs={M0["gfx942"]: 0x10004}, vgprs={1: lanes + 100}, lds_bytes=512)
  assert (st.lds[12:268].view(np.uint32) == lanes + 100).all() and (st.lds[:12] == 0).all()
  assert (st.vgpr[0, 1:, 2] == lanes[:-1] + 100).all() and int(st.vgpr[0, 0, 2]) == 0

def test_rdna4_ds_bpermute_fi_reads_the_unsigned_address_lane():
  # DS_BPERMUTE_FI_B32 (rdna4): lane = (addr + offset) / 4 mod 32, the address unsigned: 0xfffffffc / 4 % 32 = 31 (a signed division
  # gave lane -1); FI: it also reads lanes whose EXEC bit is 0 (lane 31 is off here and is still read)
  from tinygrad.runtime.autogen.amd.rdna4 import ins as R4
  st = run_program([R4.ds_bpermute_fi_b32(vdst=R4.v[1], addr=R4.v[2], data0=R4.v[3])], arch="gfx1201", exec_mask=0x7fffffff,
                   vgprs={1: 9, 2: 0xfffffffc, 3: LANES * 10})
  assert (st.vgpr[0, :31, 1] == 310).all() and int(st.vgpr[0, 31, 1]) == 9

def test_ds_bpermute_reads_the_addressed_lane():
  # v1[i] = v3[v2[i] / 4]: reverse the lanes; inactive source lanes read 0, inactive destination lanes keep v1
  st = run_program([I.ds_bpermute_b32(vdst=I.v[1], addr=I.v[2], data0=I.v[3])], exec_mask=0x7fffffff,
                   vgprs={1: 9, 2: (31 - LANES) * 4, 3: LANES * 10})
  assert int(st.vgpr[0, 0, 1]) == 0 and (st.vgpr[0, 1:31, 1] == (31 - LANES[1:31]) * 10).all() and int(st.vgpr[0, 31, 1]) == 9

def test_smem_sbase_null_reads_zero():
  # s_load_b32 s0, null, null: the base is 0 (NULL), not the storage of NULL (124) and M0 (125) as a pair, which here point at buf
  buf = np.zeros(4, dtype=np.uint32)
  with pytest.raises(GPUMemoryFault):
    run_program([I.s_load_b32(sdata=I.s[0], sbase=I.NULL, soffset=I.NULL, offset=0)],
                sgprs={124: buf.ctypes.data & 0xffffffff, 125: buf.ctypes.data >> 32}, memory=mapped(buf))

def test_ds_swizzle_reads_the_addr_vgpr():
  # ds_swizzle_b32 v1, v2 offset:swizzle(BITMASK_PERM, "ppppp") (and_mask 0x1f: identity): the source is the ADDR field's v2, not data0's v0
  st = run_program([I.ds_swizzle_b32(vdst=I.v[1], addr=I.v[2], offset0=0x1f)], vgprs={0: 5, 2: LANES + 100})
  assert (st.vgpr[0, :, 1] == LANES + 100).all()
  st = run_program([C.ds_swizzle_b32(vdst=C.v[3], addr=C.v[2], offset0=0x1f, acc=1)], arch="gfx942", lanes=64, vgprs={2: 7, 3: 9})
  assert (st.vgpr[0, :, 256 + 3] == 7).all() and (st.vgpr[0, :, 3] == 9).all()   # ds_swizzle_b32 a3, v2
