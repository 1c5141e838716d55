"""Executor-owned ops (DS_SWIZZLE_B32, DS_APPEND/DS_CONSUME, cache hints), float input modifiers on bit-typed selects, WMMA's register
inputs and the kernel entry point of symbol-less code objects. Expected values are worked out by hand from the ISA text."""
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.rdna3.ins import (s, v, VCC_LO, M0, EXEC_LO, v_cndmask_b32_e64, ds_swizzle_b32, ds_append, ds_consume, ds_load_b32,
                                                    s_dcache_inv, s_gl1_inv, s_mov_b32, v_mov_b32_e32, s_endpgm, DS)
from tinygrad.runtime.autogen.amd.rdna3.enum import DSOp, VOP3Op, VOP3POp
from tinygrad.runtime.autogen.amd.common import Fmt
from emu.amd import run_program
from emu.amd.api import GPUIllegalInstruction
from emu.amd.exec_ds import swizzle_sources
from emu.amd.kernel import Buffers, load_kernel
from emu.amd.operands import modifier_float_kind
from emu.amd.semantics import get_op

LANES = np.arange(32, dtype=np.uint32)
f32 = lambda x: np.asarray(x, dtype=np.float32).view(np.uint32)

def test_v_cndmask_b32_e64_applies_neg_and_abs():
  # v_cndmask_b32_e64 v0, -s8, |s9|, vcc: lanes with the VCC bit take |s9|, the others -s8 (sign bit flipped as an f32)
  prog = [v_cndmask_b32_e64(v[0], s[8], s[9], VCC_LO, neg=1, abs=2)]
  st = run_program(prog, sgprs={8: int(f32(0.5)), 9: int(f32(-2.0)), 106: 0x0000ffff})
  assert (st.vgpr[0, :16, 0] == f32(2.0)).all() and (st.vgpr[0, 16:, 0] == f32(-0.5)).all()

def test_modifier_float_kind_rule():
  kind = lambda op, i, fm=Fmt.FMT_NUM_F16: modifier_float_kind(get_op("rdna3", op), i, fm)
  assert kind(VOP3Op.V_CNDMASK_B32_E64, 0, None) == 32           # bit-typed select: float modifiers anyway (ISA, LLVM FP32InputMods)
  assert kind(VOP3Op.V_LDEXP_F16_E64, 0) == 16 and kind(VOP3Op.V_LDEXP_F16_E64, 1) == 0   # the exponent is read as i16
  assert kind(VOP3Op.V_CMP_CLASS_F16_E64, 0) == 16 and kind(VOP3Op.V_CMP_CLASS_F16_E64, 1) == 0   # the class mask: S1.u32[...]
  assert kind(VOP3Op.V_AND_B32_E64, 0, Fmt.FMT_NUM_B32) == 0
  assert get_op("rdna3", VOP3Op.V_LDEXP_F16_E64).views == {"S0": {"f"}, "S1": {"i"}, "D0": {"f"}}   # what the compiler saw the pcode view

@pytest.mark.parametrize("offset,src", [
  (0x8000 | 0b00_01_10_11, [3, 2, 1, 0]),         # quad permute: lane i reads (i & ~3) + offset[2*(i&3)+1:2*(i&3)]
  (0x1f | (1 << 10), [1, 0, 3, 2]),               # bit masks: and 0x1f, or 0, xor 1 -> swap neighbours
  (0x1c, [0, 0, 0, 0, 4, 4, 4, 4]),               # and 0x1c: broadcast lane 4k within groups of 4
  (0xc000 | (1 << 5), [1, 2, 3]),                 # rotate left by 1 within 32 lanes
])
def test_swizzle_sources(offset, src):
  got = swizzle_sources(offset, 32)
  assert got[:len(src)].tolist() == src
  if offset == 0xc000 | (1 << 5): assert got[31] == 0

def test_ds_swizzle_b32_inactive_source_reads_zero_and_inactive_lane_keeps():
  # xor 1 (swap neighbours); lane 3 is off: lane 2 reads 0 from it, lane 3 keeps its old 77
  st = run_program([ds_swizzle_b32(vdst=v[1], addr=v[0], offset0=0x1f, offset1=(1 << 10) >> 8)], vgprs={0: LANES + 100, 1: 77},
                   exec_mask=0xfffffff7)
  assert st.vgpr[0, 0, 1] == 101 and st.vgpr[0, 1, 1] == 100 and st.vgpr[0, 2, 1] == 0 and st.vgpr[0, 3, 1] == 77

def test_ds_append_and_consume_counter_at_m0():
  # counter at LDS byte 8 (M0 = 4, offset 4) starts at 5: 8 active lanes append (all read 5, counter 13), then 3 consume (read 13 -> 10)
  init = [v_mov_b32_e32(v[9], 5), v_mov_b32_e32(v[8], 8), DS(DSOp.DS_STORE_B32, addr=v[8], data0=v[9]), s_mov_b32(M0, 4)]
  prog = init + [ds_append(vdst=v[1], offset0=4), s_mov_b32(EXEC_LO, 0b111), ds_consume(vdst=v[2], offset0=4), ds_load_b32(vdst=v[3], addr=v[8])]
  st = run_program(prog, exec_mask=0xff, lds_bytes=64, vgprs={1: 1, 2: 2})
  assert (st.vgpr[0, :8, 1] == 5).all() and (st.vgpr[0, 8:, 1] == 1).all()
  assert (st.vgpr[0, :3, 2] == 13).all() and (st.vgpr[0, 3:, 2] == 2).all()
  assert st.vgpr[0, 0, 3] == 10

def test_cache_invalidations_are_no_ops():
  st = run_program([s_dcache_inv(), s_gl1_inv(), s_mov_b32(s[3], 9)])
  assert st.sgpr[0, 3] == 9

def test_unemulated_executor_op_is_illegal_instruction_naming_it():
  with pytest.raises(GPUIllegalInstruction, match="DS_ADD_GS_REG_RTN"):
    run_program([DS(DSOp.DS_ADD_GS_REG_RTN, vdst=v[0:1], addr=v[0], data0=v[1])])

def test_wmma_reads_its_register_fields():
  # the executor hands WMMA the 0-based VGPR numbers of A, B, C and D: f16 A = B = all 1.0, C = 2.0 -> D = 16 * 1 * 1 + 2 = 18
  from tinygrad.runtime.autogen.amd.rdna3.ins import VOP3P
  one = np.full(32, 0x3c003c00, dtype=np.uint32)
  vgprs = {r: one for r in range(0, 16)} | {r: f32(2.0) for r in range(16, 24)}
  st = run_program([VOP3P(VOP3POp.V_WMMA_F32_16X16X16_F16, vdst=v[24:31], src0=v[0:7], src1=v[8:15], src2=v[16:23])], vgprs=vgprs)
  assert (st.vgpr[0, :, 24:32] == f32(18.0)).all()

def test_wmma_runs_each_run_of_consecutive_waves_in_one_call(monkeypatch):
  # four waves, C = the wave's own s5 (1.0 .. 4.0); wave 1 branches past the WMMA, so the batch that reaches it is waves 0, 2, 3:
  # one call for wave 0, one for waves 2-3 (a view of their VGPRs), each D = 16 * 1 * 1 + C, wave 1's D untouched
  from tinygrad.runtime.autogen.amd.rdna3.ins import VOP3P, v_mov_b32_e32, s_cmp_eq_u32, s_cbranch_scc1
  from emu.amd.exec_valu import ValuStep
  calls, real = [], ValuStep._call
  monkeypatch.setattr(ValuStep, "_call", lambda self, st, w, o: (calls.append((w, o.VGPR.shape[0])), real(self, st, w, o))[1])
  one = np.full(32, 0x3c003c00, dtype=np.uint32)
  wmma = VOP3P(VOP3POp.V_WMMA_F32_16X16X16_F16, vdst=v[24:31], src0=v[0:7], src1=v[8:15], src2=v[16:23])
  prog = [*(v_mov_b32_e32(v[r], s[5]) for r in range(16, 24)), s_cmp_eq_u32(s[6], 1), s_cbranch_scc1(2), wmma]   # (skips its two dwords)
  cs = [1.0, 2.0, 3.0, 4.0]
  st = run_program(prog, waves=4, vgprs={r: one for r in range(16)} | {r: 0 for r in range(24, 32)},
                   sgprs={5: [int(f32(c)) for c in cs], 6: [0, 1, 0, 0]})
  assert calls == [(0, 1), (2, 2)]
  for w, c in enumerate(cs): assert (st.vgpr[w, :, 24:32] == (0 if w == 1 else f32(16 + c))).all()

def test_load_kernel_entry_of_symbol_less_code_object():
  # the wheel's ELF writer puts 16 bytes of code at .text 0x100 and the descriptor at round_up(0x110, 64) = 0x140 with entry offset
  # -len(text) = -16: descriptor + offset would be 0x130; the kernel is at the start of .text
  from tinygrad.uop.ops import UOp, Ops
  from tinygrad.renderer.amd.elf import assemble_linear
  insts = [v_mov_b32_e32(v[1], 7), s_mov_b32(s[0], 1), s_endpgm()]
  elf = assemble_linear(UOp(Ops.PROGRAM, src=(UOp(Ops.SINK),)), UOp(Ops.LINEAR, src=tuple(UOp(Ops.INS, arg=i) for i in insts)), "gfx1100")
  bufs = Buffers()
  lk = load_kernel(elf, bufs)
  assert lk.code_addr - bufs.keep[-1].ctypes.data == 0x100
