"""CDNA (gfx942/gfx950) executor tests: SDWA, gfx9 DPP, MUBUF bounds, AGPR moves, wave64 launch state, s_waitcnt fields and a
tinygrad-compiled gfx942 kernel. Expected values are worked out from the ISA by hand or computed with numpy. Hand-encoded
words follow the CDNA3 ISA's SDWA / DPP layouts (LLVM's disassembler confirms each in test_encodings_disassemble)."""
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.cdna import ins
from tinygrad.runtime.autogen.amd.cdna.enum import VOP1Op, VOP2Op
from emu.amd import run_program
from emu.amd.api import Dispatch, GPUIllegalInstruction
from emu.amd.arch import SPECS
from emu.amd.dispatcher import LaunchConfig, _init_waves
from emu.amd.disasm import disassemble
from emu.common.memory import MemoryMap
from emu.amd.wave import AGPR_BASE

LANES = np.arange(64)

def vop2_sdwa(op, vdst, vsrc0, vsrc1, dst_sel=6, dst_unused=0, src0_sel=6, src0_sext=0, src1_sel=6, src1_sext=0) -> bytes:
  w0 = (op.value << 25) | (vdst << 17) | (vsrc1 << 9) | 0xF9
  w1 = vsrc0 | (dst_sel << 8) | (dst_unused << 11) | (src0_sel << 16) | (src0_sext << 19) | (src1_sel << 24) | (src1_sext << 27)
  return w0.to_bytes(4, "little") + w1.to_bytes(4, "little")

def vop1_dpp(op, vdst, vsrc0, ctrl, row_mask=0xf, bank_mask=0xf, bound_ctrl=0) -> bytes:
  w0 = (0x3f << 25) | (vdst << 17) | (op.value << 9) | 0xFA
  w1 = vsrc0 | (ctrl << 8) | (bound_ctrl << 19) | (bank_mask << 24) | (row_mask << 28)
  return w0.to_bytes(4, "little") + w1.to_bytes(4, "little")

def run(insts, **kw): return run_program(insts, arch="gfx942", lanes=64, **kw)

def test_encodings_disassemble():
  sdwa = vop2_sdwa(VOP2Op.V_ADD_U32, 2, 0, 1, dst_sel=4, dst_unused=2, src0_sel=1, src1_sel=5, src1_sext=1)
  text = "v_add_u32_sdwa v2, v0, sext(v1) dst_sel:WORD_0 dst_unused:UNUSED_PRESERVE src0_sel:BYTE_1 src1_sel:WORD_1"
  assert disassemble(sdwa, "gfx942") in (None, text)
  dpp = vop1_dpp(VOP1Op.V_MOV_B32, 1, 0, 0x142, row_mask=0xa)
  assert disassemble(dpp, "gfx942") in (None, "v_mov_b32_dpp v1, v0 row_bcast:15 row_mask:0xa bank_mask:0xf")

def test_sdwa_selects_and_preserve():
  a = (LANES * 0x01020304 + 0x8000).astype(np.uint32)
  b = (0xfff00000 + LANES * 0x10000).astype(np.uint32)
  old = np.full(64, 0xdeadbeef, np.uint32)
  st = run([vop2_sdwa(VOP2Op.V_ADD_U32, 2, 0, 1, dst_sel=4, dst_unused=2, src0_sel=1, src1_sel=5, src1_sext=1)], vgprs={0: a, 1: b, 2: old})
  byte1 = (a.astype(np.int64) >> 8) & 0xff
  word1 = ((b.astype(np.int64) >> 16) ^ 0x8000) - 0x8000
  assert (st.vgpr[0, :, 2] == ((0xdead0000 | ((byte1 + word1) & 0xffff)).astype(np.uint32))).all()

def test_sdwa_dst_unused_sext_and_pad():
  a = np.full(64, 0x80, np.uint32)   # byte 0x80 + 0 -> byte field 0x80, sign bit set
  zero = np.zeros(64, np.uint32)
  st = run([vop2_sdwa(VOP2Op.V_ADD_U32, 2, 0, 1, dst_sel=1, dst_unused=1, src0_sel=0),
            vop2_sdwa(VOP2Op.V_ADD_U32, 3, 0, 1, dst_sel=1, dst_unused=0, src0_sel=0)], vgprs={0: a, 1: zero, 2: zero, 3: zero})
  assert (st.vgpr[0, :, 2] == 0xffff8000).all()   # BYTE_1 = 0x80, bits above sign-extended, bits below zero
  assert (st.vgpr[0, :, 3] == 0x8000).all()

@pytest.mark.parametrize("ctrl,src,valid", [
  (0x142, np.where(LANES >= 16, (LANES & ~15) - 1, LANES), LANES >= 16),        # row_bcast:15
  (0x143, np.full(64, 31), LANES >= 32),                                       # row_bcast:31
  (0x138, LANES - 1, LANES >= 1),                                              # wave_shr:1
  (0x134, (LANES + 1) % 64, np.ones(64, bool)),                                # wave_rol:1
  (0x101, LANES + 1, (LANES & 15) != 15),                                      # row_shl:1
])
def test_gfx9_dpp(ctrl, src, valid):
  v0 = (LANES + 100).astype(np.uint32)
  st = run([vop1_dpp(VOP1Op.V_MOV_B32, 1, 0, ctrl, bound_ctrl=0), vop1_dpp(VOP1Op.V_MOV_B32, 2, 0, ctrl, bound_ctrl=1)],
           vgprs={0: v0, 1: 7, 2: 7})
  want = np.where(valid, (src % 64) + 100, 7)   # invalid source lane: destination kept without bound_ctrl ...
  assert (st.vgpr[0, :, 1] == want).all()
  assert (st.vgpr[0, :, 2] == np.where(valid, want, 0)).all()   # ... and 0 with it

def _buffer_rsrc(addr:int, num_records:int, stride:int=0) -> int:
  return addr | (stride << 48) | (num_records << 64) | (0x27000 << 96)   # word3: DST_SEL/NUM_FORMAT/DATA_FORMAT as LLVM sets them

def test_mubuf_out_of_range_reads_zero_and_drops_writes():
  data = np.arange(8, dtype=np.uint32) + 1000
  mem = MemoryMap()
  mem.map(data.ctypes.data, data.nbytes, backing=data.view(np.uint8))
  offs = (LANES * 4).astype(np.uint32)   # lanes 0-3 inside num_records = 16 bytes, the rest outside (but inside the mapping: 0-7)
  st = run([ins.buffer_load_dword(vdata=ins.v[1], vaddr=ins.v[0], srsrc=ins.s[4:7], soffset=ins.s[8], offen=1, offset=0),
            ins.buffer_store_dword(vdata=ins.v[2], vaddr=ins.v[0], srsrc=ins.s[4:7], soffset=ins.s[8], offen=1, offset=0)],
           sgprs={4: _buffer_rsrc(data.ctypes.data, 16), 8: 0}, vgprs={0: offs, 1: 0xffffffff, 2: 5}, memory=mem)
  assert (st.vgpr[0, :4, 1] == [1000, 1001, 1002, 1003]).all() and (st.vgpr[0, 4:, 1] == 0).all()
  assert (data == [5, 5, 5, 5, 1004, 1005, 1006, 1007]).all()

def test_mubuf_stride_index_and_soffset():
  data = np.arange(64, dtype=np.uint32)
  mem = MemoryMap()
  mem.map(data.ctypes.data, data.nbytes, backing=data.view(np.uint8))
  idx = (LANES % 8).astype(np.uint32)
  # index * 16 + soffset 4 + offset 8: dword index*4 + 3; num_records 6 records -> indices 6, 7 read 0
  st = run([ins.buffer_load_dword(vdata=ins.v[1], vaddr=ins.v[0], srsrc=ins.s[4:7], soffset=ins.s[8], idxen=1, offset=8)],
           sgprs={4: _buffer_rsrc(data.ctypes.data, 6, stride=16), 8: 4}, vgprs={0: idx}, memory=mem)
  assert (st.vgpr[0, :, 1] == np.where(idx < 6, idx * 4 + 3, 0)).all()

def test_agpr_moves_and_separate_file():
  v1 = (LANES * 3).astype(np.uint32)
  st = run([ins.v_accvgpr_write(ins.v[3], ins.v[1]), ins.v_accvgpr_mov_b32_e32(ins.v[5], ins.v[3]), ins.v_accvgpr_read(ins.v[2], ins.v[5])],
           vgprs={1: v1, 3: 77, 5: 88})
  assert (st.vgpr[0, :, 2] == v1).all()                                              # v2 <- a5 <- a3 <- v1
  assert (st.vgpr[0, :, AGPR_BASE + 3] == v1).all() and (st.vgpr[0, :, AGPR_BASE + 5] == v1).all()
  assert (st.vgpr[0, :, 3] == 77).all() and (st.vgpr[0, :, 5] == 88).all()         # VGPRs v3/v5 untouched

def test_wave64_launch_state():
  spec = SPECS["gfx942"]
  # RSRC2: 2 user SGPRs, TGID_X/Y enabled, TIDIG_COMP_CNT 2 (x, y, z) -> packed v0 (gfx90a+ PackedTID)
  d = Dispatch(code_addr=0, grid=(3, 2, 1), workgroup=(8, 4, 3), user_sgprs=[0x1234, 0x5678], rsrc2=(2 << 1) | (1 << 7) | (1 << 8) | (2 << 11),
               wave32=False)
  cfg = LaunchConfig(spec, d)
  st = _init_waves(spec, d, cfg, [(2, 1, 0)])
  t = np.arange(128)
  assert cfg.lanes == 64 and cfg.waves_per_wg == 2
  assert (st.vgpr[:, :, 0].reshape(-1)[:96] == ((t % 8) | (((t // 8) % 4) << 10) | ((t // 32) << 20))[:96]).all()
  assert st.get_mask(0, spec.exec_lo) == (1 << 64) - 1 and st.get_mask(1, spec.exec_lo) == (1 << 32) - 1
  assert (st.sgpr[:, :4] == [0x1234, 0x5678, 2, 1]).all()

def test_waitcnt_fields():
  # gfx9 s_waitcnt: vmcnt = simm[3:0] | simm[15:14] << 4, expcnt simm[6:4], lgkmcnt simm[11:8]
  assert SPECS["gfx942"].waitcnt_counts((2 << 14) | (5 << 8) | (3 << 4) | 9) == {"vm": 0x29, "vs": 0x29, "lgkm": 5, "exp": 3}

def test_m0_is_124():
  # the DSL's M0 is RDNA's 125 (NULL on gfx9): encode m0 as 124 by hand (SOP1 sdst [22:16], SOP2 ssrc0 [7:0])
  mov, add = ins.s_mov_b32(ins.M0, 0x55).to_bytes(), ins.s_add_u32(ins.s[1], ins.M0, 1).to_bytes()
  mov = (int.from_bytes(mov[:4], "little") & ~(0x7f << 16) | (124 << 16)).to_bytes(4, "little") + mov[4:]
  add = (int.from_bytes(add[:4], "little") & ~0xff | 124).to_bytes(4, "little") + add[4:]
  assert disassemble(mov, "gfx942") in (None, "s_mov_b32 m0, 0x55") and disassemble(add, "gfx942") in (None, "s_add_u32 s1, m0, 1")
  st = run([mov, add])
  assert int(st.sgpr[0, 124]) == 0x55 and int(st.sgpr[0, 1]) == 0x56

@pytest.mark.parametrize("acc_cd", [0, 1])
def test_mfma_reads_and_writes_agprs(acc_cd):
  """16x16x16 f16 MFMA with every A and B element 1.0 and every C element 2.0: every D element is 16 + 2, whatever the lane
  layout. acc_cd=1 takes C from and writes D to AGPRs a[0:3], leaving v[0:3] alone."""
  one2 = 0x3c003c00   # two f16 1.0
  st = run([ins.v_mfma_f32_16x16x16_f16(ins.v[0:3], ins.v[4:5], ins.v[6:7], ins.v[0:3], acc_cd=acc_cd)],
           vgprs={4: one2, 5: one2, 6: one2, 7: one2, **{r: 0x40000000 for r in range(4)}, **{AGPR_BASE + r: 0x40000000 for r in range(4)}})
  d = st.vgpr[0, :, (AGPR_BASE if acc_cd else 0) + np.arange(4)]
  assert (d.view(np.float32) == 18.0).all()
  if acc_cd: assert (st.vgpr[0, :, :4] == 0x40000000).all()

@pytest.mark.skipif(not __import__("emu.amd.kernel", fromlist=["llvm_available"]).llvm_available(), reason="needs libLLVM")
@pytest.mark.parametrize("name", ["where_elementwise", "reduction", "matmul"])
def test_tinygrad_gfx942_kernel(name):
  from emu.amd.kernel import Buffers, compile_kernel, run_kernel
  rng = np.random.default_rng(0)
  if name == "where_elementwise":
    fn, shapes = lambda a, b: (a * b).maximum(0) + (a < b).where(a, b), [(32, 48), (32, 48)]
    ref = lambda a, b: np.maximum(a * b, 0) + np.where(a < b, a, b)
  elif name == "reduction": fn, shapes, ref = lambda a: a.sum(axis=1), [(40, 100)], lambda a: a.astype(np.float64).sum(axis=1)
  else: fn, shapes, ref = lambda a, b: a @ b, [(24, 40), (40, 16)], lambda a, b: a.astype(np.float64) @ b
  ins_ = [rng.standard_normal(s).astype(np.float32) for s in shapes]
  k = compile_kernel(fn, *shapes, arch="gfx942")
  want = np.asarray(ref(*ins_), dtype=np.float32)
  out = np.zeros_like(want)
  stats = run_kernel(k, ins_, out, Buffers(), arch="gfx942")
  assert stats.waves > 0 and stats.cycles > 0
  np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)

def test_dpp_controls_of_the_other_family_are_illegal():
  # gfx9 has wave_shl/rol/shr/ror:1 and row_bcast:15/31, RDNA row_xmask; each is an illegal instruction on the other (RDNA3's
  # observed 0x142 aside: tests/unit/amd/test_dpp_controls.py)
  from emu.amd.dpp import dpp16_route
  for ctrl in (0x130, 0x134, 0x138, 0x13c, 0x142, 0x143):
    assert dpp16_route(ctrl, 64, "cdna")[1].dtype == bool
    with pytest.raises(ValueError, match="does not exist on rdna4"): dpp16_route(ctrl, 32, "rdna4")
  for ctrl in (0x160, 0x16f):
    assert dpp16_route(ctrl, 32, "rdna3")[1].all()
    with pytest.raises(ValueError, match="does not exist on cdna"): dpp16_route(ctrl, 64, "cdna")
  with pytest.raises(GPUIllegalInstruction, match="0x160"): run([vop1_dpp(VOP1Op.V_MOV_B32, 1, 0, 0x160)])

# ---- the cdna f64 atomics (CDNA_PCODE_FIXES: the vendor text returned 32 bits of the old value): 1.5 + 2.0, old value 1.5 back ----
def test_cdna_f64_add_atomics_add_and_return_64_bits():
  two = {2: 0, 3: 0x40000000}   # v[2:3] = 2.0
  lds = run([ins.ds_add_rtn_f64(vdst=ins.v[4:5], addr=ins.v[0], data0=ins.v[2:3]), ins.s_waitcnt(0),
             ins.ds_add_f64(addr=ins.v[0], data0=ins.v[2:3])], exec_mask=1, vgprs={0: 8, **two, 6: 0}, lds_bytes=64,
            sgprs={124: 0xffff})
  assert lds.lds[8:16].view(np.float64)[0] == 4.0 and lds.vgpr[0, 0, 4:6].copy().view(np.float64)[0] == 0.0   # 0 + 2 + 2
  for flat in (True, False):
    buf = np.array([1.5, 0.0], dtype=np.float64)
    mem = MemoryMap()
    mem.map(buf.ctypes.data, buf.nbytes, backing=buf.view(np.uint8))
    if flat:
      prog = [ins.flat_atomic_add_f64(vdst=ins.v[4:5], addr=ins.v[0:1], data=ins.v[2:3], sc0=1)]
      regs = {0: buf.ctypes.data & 0xffffffff, 1: buf.ctypes.data >> 32, **two}
      st = run(prog, exec_mask=1, vgprs=regs, memory=mem)
    else:
      prog = [ins.buffer_atomic_add_f64(vdata=ins.v[4:5], vaddr=ins.v[0], srsrc=ins.s[4:7], soffset=ins.s[8], offset=0, sc0=1)]
      st = run(prog, exec_mask=1, sgprs={4: _buffer_rsrc(buf.ctypes.data, 16), 8: 0}, vgprs={0: 0, 4: 0, 5: 0x40000000}, memory=mem)
    assert buf[0] == 3.5 and st.vgpr[0, 0, 4:6].copy().view(np.float64)[0] == 1.5, flat

CVT_PK = [("gfx950", "v_cvt_pk_f32_bf8_e32", 0x4440, (2.0, 4.0)), ("gfx942", "v_cvt_pk_f32_bf8_e32", 0x4440, (1.0, 2.0)),
          ("gfx950", "v_cvt_pk_f32_fp8_e32", 0x4038, (1.0, 2.0)), ("gfx942", "v_cvt_pk_f32_fp8_e32", 0x4840, (1.0, 2.0))]

@pytest.mark.parametrize("arch,name,codes,want", CVT_PK)
def test_cdna_cvt_pk_f32_fp8_bf8_decode_the_arch_format(arch, name, codes, want):
  # gfx942 has the FNUZ float8 formats only (ROCm's FP8 table), gfx950 OCP. E5M2: OCP bias 15 (0x40 = 2.0, 0x44 = 4.0), FNUZ bias 16
  # (0x40 = 1.0, 0x44 = 2.0); E4M3: OCP bias 7 (0x38 = 1.0, 0x40 = 2.0), FNUZ bias 8 (0x40 = 1.0, 0x48 = 2.0). Byte 0 -> D0, byte 1 -> D1
  st = run_program([getattr(ins, name)(ins.v[2:3], ins.v[0])], arch=arch, lanes=64, vgprs={0: codes})
  assert tuple(st.vgpr[0, 0, 2:4].copy().view(np.float32)) == want

@pytest.mark.parametrize("arch,want", [("gfx950", 0x4038), ("gfx942", 0x4840)])
def test_cdna_cvt_pk_fp8_f32_encodes_the_arch_format(arch, want):
  # v_cvt_pk_fp8_f32 v1, 1.0, 2.0: fp8(S0) in byte 0, fp8(S1) in byte 1 (E4M3 codes as above); bits 31:16 keep v1's
  st = run_program([ins.v_cvt_pk_fp8_f32(ins.v[1], ins.v[2], ins.v[3])], arch=arch, lanes=64,
                   vgprs={1: 0xabcd0000, 2: np.float32(1.0).view(np.uint32), 3: np.float32(2.0).view(np.uint32)})
  assert int(st.vgpr[0, 0, 1]) == 0xabcd0000 | want
