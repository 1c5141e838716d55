"""SOP1/SOP2/SOPC/SOPK/SOPP: scalar ALU, SCC side effects, 64-bit pairs, literals, branches and loops."""
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.rdna3.ins import (s, v, VCC_LO, EXEC_LO, s_add_u32, s_addc_u32, s_mov_b32, s_mov_b64, s_cmp_lt_u32,
  s_cselect_b32, s_branch, s_cbranch_scc1, s_cbranch_execz, s_add_i32, s_sub_u32, s_cmpk_eq_u32, s_movk_i32, s_and_saveexec_b32,
  s_getpc_b64, s_lshl_b64, v_mov_b32_e32, s_nop, s_waitcnt, s_delay_alu)
from emu.amd import run_program

def test_s_add_u32_carry_sets_scc():
  st = run_program([s_add_u32(s[0], s[1], s[2]), s_addc_u32(s[3], 0, 0)], sgprs={1: 0xffffffff, 2: 2})
  assert int(st.sgpr[0, 0]) == 1 and int(st.sgpr[0, 3]) == 1 and int(st.scc[0]) == 0

def test_s_add_u32_literal():
  st = run_program([s_add_u32(s[0], s[1], 0x12345678)], sgprs={1: 1})
  assert int(st.sgpr[0, 0]) == 0x12345679 and int(st.scc[0]) == 0

def test_s_mov_b64_inline_negative_constant_sign_extends():
  st = run_program([s_mov_b64(s[4:5], -3)])
  assert int(st.sgpr[0, 4]) == 0xfffffffd and int(st.sgpr[0, 5]) == 0xffffffff

def test_s_lshl_b64():
  st = run_program([s_lshl_b64(s[0:1], s[2:3], 4)], sgprs={2: 0x8000000000000001})
  assert (int(st.sgpr[0, 1]) << 32 | int(st.sgpr[0, 0])) == 0x10 and int(st.scc[0]) == 1

def test_s_cmp_lt_u32_and_s_cselect_b32():
  st = run_program([s_cmp_lt_u32(s[1], s[2]), s_cselect_b32(s[0], 11, 22)], sgprs={1: 3, 2: 5})
  assert int(st.sgpr[0, 0]) == 11 and int(st.scc[0]) == 1

def test_s_cmpk_eq_u32_and_s_movk_i32():
  st = run_program([s_movk_i32(s[0], -2 & 0xffff), s_cmpk_eq_u32(s[1], 7)], sgprs={1: 7})
  assert int(st.sgpr[0, 0]) == 0xfffffffe and int(st.scc[0]) == 1

def test_s_branch_skips():
  st = run_program([s_mov_b32(s[0], 1), s_branch(1), s_mov_b32(s[0], 2), s_nop(0)])
  assert int(st.sgpr[0, 0]) == 1

def test_loop_sums_with_s_cbranch_scc1():
  # s0 = sum of 1..10: s1 counts down; branch back while s1 != 0
  prog = [s_mov_b32(s[0], 0), s_mov_b32(s[1], 10), s_add_i32(s[0], s[0], s[1]), s_sub_u32(s[1], s[1], 1), s_cmp_lt_u32(0, s[1]),
          s_cbranch_scc1(-4 & 0xffff)]
  st = run_program(prog)
  assert int(st.sgpr[0, 0]) == 55 and int(st.sgpr[0, 1]) == 0

def test_s_and_saveexec_b32_and_execz_branch():
  prog = [s_and_saveexec_b32(s[2], s[1]), s_cbranch_execz(1), v_mov_b32_e32(v[0], 5), s_waitcnt(0), s_delay_alu(0)]
  st = run_program(prog, sgprs={1: 0}, vgprs={0: 9}, exec_mask=0xff)
  assert int(st.sgpr[0, 2]) == 0xff and int(st.sgpr[0, 126]) == 0 and int(st.scc[0]) == 0
  assert (st.vgpr[0, :, 0] == 9).all()

def test_s_getpc_b64_points_after_itself():
  st = run_program([s_getpc_b64(s[0:1])])
  pc = int(st.sgpr[0, 0]) | int(st.sgpr[0, 1]) << 32
  assert pc % 4 == 0 and pc != 0

def test_vcc_and_exec_are_scalar_operands():
  st = run_program([s_mov_b32(VCC_LO, 0x1234), s_mov_b32(s[0], EXEC_LO)], exec_mask=0xf0)
  assert int(st.sgpr[0, 106]) == 0x1234 and int(st.sgpr[0, 0]) == 0xf0
  assert np.all(st.pc == st.pc[0])

# ---- SOPP/SOP1 executor-owned: traps and messages ----
def test_s_trap_raises_trap_fault_with_id_and_pc():
  from tinygrad.runtime.autogen.amd.rdna3.ins import s_trap
  from emu.amd.api import GPUTrapFault
  with pytest.raises(GPUTrapFault, match="s_trap 0x2") as e: run_program([s_mov_b32(s[0], 1), s_trap(simm16=2), s_mov_b32(s[1], 1)])
  assert e.value.trap_id == 2 and e.value.wave == (0, 0, 0, 0)

def test_s_sendmsg_and_s_sleep_change_no_registers():
  from tinygrad.runtime.autogen.amd.rdna3.ins import s_sendmsg, s_sleep
  st = run_program([s_sendmsg(simm16=3), s_sleep(simm16=1), s_mov_b32(s[0], 5)], sgprs={1: 9})   # 3 = MSG_DEALLOC_VGPRS
  assert int(st.sgpr[0, 0]) == 5 and int(st.sgpr[0, 1]) == 9

def test_s_sendmsg_rtn_b32_get_realtime_and_b64_get_doorbell():
  from tinygrad.runtime.autogen.amd.rdna3.ins import s_sendmsg_rtn_b32, s_sendmsg_rtn_b64
  from tinygrad.renderer.amd.dsl import src
  # the message id is the raw SSRC0 field (131 = MSG_RTN_GET_REALTIME, 128 = MSG_RTN_GET_DOORBELL); REALTIME reads the dispatch's
  # wave-instruction count so far: 2 waves x 2 instructions before it
  st = run_program([s_mov_b32(s[0], 1), s_nop(0), s_sendmsg_rtn_b32(s[4], src[131]), s_sendmsg_rtn_b64(s[6:7], src[128])], waves=2,
                   sgprs={6: 5, 7: 5})
  assert list(st.sgpr[:, 4]) == [4, 4] and (st.sgpr[:, 6:8] == 0).all()
