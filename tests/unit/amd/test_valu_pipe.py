"""The VALU and transcendental pipes' register interlock (cu_model._ValuPipe), the waits for their results and for SALU results
(memory instructions, s_waitcnt_depctr), an s_nop's pause and what follows a store: issue times worked by hand from the documented
rules (docs/timing.md), and the VGPRs and SGPRs an instruction's encoding names (timing.vgpr_use, timing.sgpr_use)."""
import dataclasses
import pytest
import tinygrad.runtime.autogen.amd.rdna3.ins as rdna3
from emu.amd.arch import get_spec
from emu.amd.cu_model import SGPR_BASE, make_stream, replay_op, simulate_cu
from emu.amd.decode import decode
from emu.amd.timing import PARAMS, OpInfo, sgpr_use, vgpr_use

END = replay_op(OpInfo("end", None))
STORE = replay_op(OpInfo("vmem_store", "vmem", 1))   # (rdna3 store port: 1 cycle)

def valu(reads=(), writes=()): return replay_op(OpInfo("valu", "valu", vreads=reads, vwrites=writes))
def trans(reads=(), writes=()): return replay_op(OpInfo("trans", "trans", 4, vreads=reads, vwrites=writes))
DRAIN = replay_op(OpInfo("waitcnt", None, drain=True))
SALU, NOP_4 = replay_op(OpInfo("salu", "salu")), replay_op(OpInfo("nop", None, delay=4))

def issue_times(ops, **params) -> list[int]:
  """One wave's issue times, counted from its first issue."""
  p = dataclasses.replace(PARAMS["rdna3"], **params)
  (_, _, times, _), = simulate_cu([make_stream(ops, [4 * k for k in range(len(ops))])], [0], 1, 1, p, p.launch)
  return [t - times[0] for t in times]

CHAIN = [valu(writes=(0,)), valu((0,), (0,)), valu((0,), (0,))]   # v0 = ..., then v0 = f(v0) twice

def test_a_dependent_chain_issues_back_to_back_and_executes_at_the_result_latency():
  # issues 0, 1, 2 (the pipe has room); they start at 0, 5, 10; the store reads VGPRs vgpr_to_mem (18) after the last start
  assert issue_times([*CHAIN, STORE, END], valu_queue=13, valu_raw=5)[:4] == [0, 1, 2, 10 + 18]

def test_without_the_pipe_a_chain_costs_only_its_issue():
  assert issue_times([*CHAIN, STORE, END], valu_queue=0)[:4] == [0, 1, 2, 2 + 18]

def test_a_full_pipe_holds_the_next_instruction_until_one_starts():
  # depth 1, no hold: the second op waits in the pipe (starts at 5); the third may enter only then, and starts at 5 + 5
  assert issue_times([*CHAIN, STORE, END], valu_queue=1, valu_raw=5, pipe_hold=0)[:4] == [0, 1, 5, 10 + 18]

def test_an_instruction_keeps_its_place_until_the_hold_after_its_start():
  # depth 2, hold 3, independent ops: they start at issue (0, 1) and leave at 3, 4, so the third issues at 3, the fourth at 4
  assert issue_times([valu(), valu(), valu(), valu(), END], valu_queue=2, pipe_hold=3)[:4] == [0, 1, 3, 4]

def test_a_long_dependent_chain_fills_the_pipe():
  # depth 13, hold 12, result latency 5: op k starts at 5k and leaves at 5k + 12 (k from 0). Ops 0-12 issue at 0-12; at 13 op 0
  # has left (12 places held): op 13 issues; op 14 waits for op 1 to leave (17), op 15 for op 2 (22)
  chain = [valu(writes=(0,))] + [valu((0,), (0,)) for _ in range(15)]
  assert issue_times([*chain, END], valu_queue=13, valu_raw=5, pipe_hold=12)[:16] == [*range(14), 17, 22]

def test_a_ds_instruction_reads_its_vgprs_vgpr_to_lds_after_the_last_start():
  ds = replay_op(OpInfo("lds", "lds", 1, counter="lgkm", lds_cycles=2))
  assert issue_times([*CHAIN, ds, END], valu_queue=13, valu_raw=5, vgpr_to_lds=15)[:4] == [0, 1, 2, 10 + 15]

def test_independent_work_behind_a_stalled_instruction_waits_in_order():
  # the third op reads nothing, but starts after the stalled second one (5): a store reading VGPRs follows its start (6) + 18
  assert issue_times([valu(writes=(0,)), valu((0,), (1,)), valu(writes=(2,)), STORE, END], valu_queue=13, valu_raw=5)[:4] == [0, 1, 2, 6 + 18]

PIPE = {"valu_queue": 13, "valu_raw": 5, "trans_raw": 9, "vgpr_to_mem": 18}

def test_a_drain_waits_for_the_last_result_written_back():
  # starts 0 and 5 (dependent), result at 10; written back vgpr_to_mem - valu_raw = 13 later: the drain at 23, the next op +1
  assert issue_times([*CHAIN[:2], DRAIN, valu(), END], **PIPE)[:4] == [0, 1, 23, 24]

def test_a_transcendental_chain_and_the_valu_work_reading_it():
  # the trans port takes 4 cycles per op: issues 0, 4; starts 0, 9 (trans_raw); its result at 18, written back at 18 + 13
  assert issue_times([trans(writes=(0,)), trans((0,), (0,)), STORE, END], **PIPE)[:3] == [0, 4, 31]
  # a VALU op reading the first result issues 1 cycle later (the trans op holds the VALU port for one pass), starts at 9
  assert issue_times([trans(writes=(0,)), valu((0,), (1,)), STORE, END], **PIPE)[:3] == [0, 1, 9 + 18]

def test_a_dependent_transcendental_starts_trans_raw_after_its_producer_while_memory_sees_the_result_at_trans_result():
  # trans_raw 12: starts 0, 12; the second's result at 12 + 9 (trans_result) is written back 13 later, when the store issues
  params = {**PIPE, "trans_raw": 12, "trans_result": 9}
  assert issue_times([trans(writes=(0,)), trans((0,), (0,)), STORE, END], **params)[:3] == [0, 4, 21 + 13]

@pytest.mark.parametrize("depths", [{"valu_queue": 13, "trans_queue": 0}, {"valu_queue": -1}])
def test_a_pipe_without_room_is_refused_by_name(depths):
  with pytest.raises(ValueError, match="depths must be at least 1"): issue_times([*CHAIN, END], **depths)

def test_a_negative_hold_is_refused_by_name():
  with pytest.raises(ValueError, match="hold must not be negative"): issue_times([*CHAIN, END], valu_queue=13, pipe_hold=-1)

def test_an_op_with_its_own_latency():
  # a 32-bit integer multiply (LLVM WriteIntMul: latency 8, quarter rate: 4 port cycles): issues 0, 4; starts 0, 8; the second's
  # result at 16 is written back 13 (vgpr_to_mem - valu_raw) later, when the store may issue
  mul = lambda reads, writes: replay_op(OpInfo("valu", "valu", 4, vreads=reads, vwrites=writes, lat=8))
  assert issue_times([mul((), (0,)), mul((0,), (0,)), STORE, END], **PIPE)[:3] == [0, 4, 16 + 13]

@pytest.mark.parametrize("name, kind", [("V_MUL_LO_U32", "mul32"), ("V_MUL_HI_I32", "mul32"), ("V_MUL_U32_U24", ""), ("V_MUL_LO_U16", ""),
                                        ("V_MAD_U64_U32", "mad64"), ("V_ADD_F64", "f64"), ("V_LSHLREV_B64", "b64"), ("V_ADD_F32", "")])
def test_latency_classes(name, kind):
  from emu.amd.mnemonic import parse
  from emu.amd.timing import latency_class, width_class
  m = parse(name)
  assert latency_class(m, width_class(m)) == kind

def test_an_s_nop_is_traced_at_the_end_of_its_pause():
  assert issue_times([valu(), NOP_4, valu(), END], valu_queue=0)[:3] == [0, 4, 5]

@pytest.mark.parametrize("after, gap", [(STORE, 1), (SALU, 3), (valu(), 8)])
def test_what_follows_a_store(after, gap):
  # rdna3: another VMEM instruction at once, VALU work store_valu (8) later, anything else store_next (3) later
  assert issue_times([STORE, after, END], valu_queue=0, store_next=3, store_valu=8)[:2] == [0, gap]

def salu(reads=(), writes=(), lat=0):
  return replay_op(OpInfo("salu", "salu", vreads=tuple(SGPR_BASE + s for s in reads), vwrites=tuple(SGPR_BASE + s for s in writes), lat=lat))

@pytest.mark.parametrize("ops, store_at", [
  ([salu(writes=(4,))], 2 + 5),                                           # one SALU: its result at 2, the store 5 later
  ([salu(writes=(k,)) for k in range(4)], 3 + 2 + 5),                     # independent: issued 0-3, the last result at 5
  ([salu(writes=(4,))] + [salu((4,), (4,)) for _ in range(4)], 5 * 2 + 5),   # a dependent chain: issued 0-4, results 2 apart
  ([salu(writes=(4,))] + [salu((4,), (4,), lat=3) for _ in range(4)], 2 + 4 * 3 + 5),   # multiplies: 3 per link
])
def test_a_vmem_instruction_waits_for_the_waves_salu_results(ops, store_at):
  # salu_lat 2, sgpr_to_mem 5: every SALU instruction issues back to back; the store waits until the last result + 5
  times = issue_times([*ops, STORE, END], valu_queue=0, salu_lat=2, sgpr_to_mem=5)
  assert times[:len(ops)] == list(range(len(ops))) and times[len(ops)] == store_at

@pytest.mark.parametrize("inst, reads, writes", [
  (rdna3.s_add_u32(rdna3.s[20], rdna3.s[20], 1), (20,), (20,)),
  (rdna3.s_mov_b64(rdna3.s[4:5], rdna3.s[6:7]), (6, 7), (4, 5)),
  (rdna3.s_cmp_eq_i32(rdna3.s[4], 1), (4,), ()),
  (rdna3.s_movk_i32(rdna3.s[4], 1), (), (4,)),
])
def test_the_sgprs_an_salu_encoding_names(inst, reads, writes):
  assert sgpr_use(decoded(inst)) == (reads, writes)

def decoded(inst):
  spec = get_spec("gfx1100")
  return decode(inst.to_bytes(), spec, 0)

@pytest.mark.parametrize("inst, reads_dst, reads, writes", [
  (rdna3.v_add_f32_e32(rdna3.v[1], 1.0, rdna3.v[1]), False, (1,), (1,)),
  (rdna3.v_fmac_f32_e32(rdna3.v[4], rdna3.v[5], rdna3.v[6]), True, (4, 5, 6), (4,)),
  (rdna3.v_fma_f64(rdna3.v[0:1], rdna3.v[2:3], rdna3.v[4:5], rdna3.v[6:7]), False, (2, 3, 4, 5, 6, 7), (0, 1)),
  (rdna3.VOPD(rdna3.VOPDOp.V_DUAL_FMAC_F32, rdna3.VOPDOp.V_DUAL_ADD_F32, rdna3.v[4], rdna3.v[5], rdna3.v[6], rdna3.v[7], rdna3.v[8],
              rdna3.v[9]), False, (4, 6, 7, 8, 9), (4, 5)),   # the X lane accumulates into v4; the Y lane's add does not read v5
])
def test_the_vgprs_an_encoding_names(inst, reads_dst, reads, writes):
  assert vgpr_use(decoded(inst), reads_dst) == (reads, writes)
