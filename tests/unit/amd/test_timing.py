"""Timing relations of the cycle model (emu/amd/timing.py): orderings hardware guarantees, not calibrated numbers."""
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.rdna3.ins import v, s_delay_alu, s_waitcnt, v_add_f32_e32, v_exp_f32_e32, v_mov_b32_e32, global_load_b32
from tinygrad.renderer.amd.dsl import NULL
from emu.amd.api import DispatchStats
from emu.amd.arch import get_spec
from emu.common.watchdog import Watchdog
from emu.amd.dispatcher import MAX_VGPRS, Dispatcher
from emu.common.memory import MemoryMap
from emu.amd.runner import assemble
from emu.amd.step import Machine
from emu.amd.steps import Program
from emu.amd.timing import TimingModel
from emu.amd.wave import WaveState

VALU_DEP_1 = 1

def timed(insts, waves=1, lanes=32, vgprs=None, memory=None, sgprs=None):
  """Run one workgroup of `waves` waves through the dispatcher with the timing model; (cycles, timeline, final state, its `.stats`
  the DispatchStats). sgprs: {register: one 32-bit value per wave}."""
  spec, mem = get_spec("gfx1100"), memory if memory is not None else MemoryMap()
  code = np.frombuffer(assemble(insts) + b"\0" * 16, dtype=np.uint8).copy()
  m_code = mem.map(code.ctypes.data, code.size, name="code", writable=False, backing=code)
  st = WaveState(spec, waves, lanes, MAX_VGPRS, 0)
  st.pc[:] = m_code.addr
  for reg, val in (vgprs or {}).items(): st.vgpr[:, :, reg] = np.asarray(val).astype(np.int64).astype(np.uint32)
  for reg, val in (sgprs or {}).items(): st.sgpr[:, reg] = val
  for w in range(waves): st.set_mask(w, spec.exec_lo, (1 << lanes) - 1)
  st.wave_id = [(0, 0, 0, w) for w in range(waves)]
  stats = DispatchStats(workgroups=1, waves=waves)
  tm = TimingModel(spec, timeline=True)
  tm.start(waves, lanes, waves)
  Dispatcher(spec, mem, Watchdog(10**6), [tm]).schedule(Machine(spec, st, mem, stats, 0, 1), Program(spec, mem), waves, stats)
  cycles, _ = tm.finish()
  st.stats = stats
  return cycles, tm.timeline, st

def relative(timeline:list) -> list:
  """A timeline with its pcs counted from the code's start (each `timed` run maps its code at an address of its own)."""
  base = min(pc for _, pc, _, _, _ in timeline if pc >= 0)
  return [(w, pc - base if pc >= 0 else pc, *rest) for w, pc, *rest in timeline]

def test_dependent_valu_chain_slower_than_independent():
  dep = [x for i in range(8) for x in (v_add_f32_e32(v[1], v[1], v[2]), s_delay_alu(VALU_DEP_1))]
  indep = [x for i in range(8) for x in (v_add_f32_e32(v[1 + i], v[10], v[11]), s_delay_alu(0))]
  assert timed(dep)[0] > timed(indep)[0]

def test_waitcnt_stalls_until_load_completes():
  buf = np.zeros(64, dtype=np.uint32)
  mem = MemoryMap(); mem.map(buf.ctypes.data, buf.nbytes, backing=buf.view(np.uint8).reshape(-1))
  lo, hi = buf.ctypes.data & 0xffffffff, buf.ctypes.data >> 32
  load = global_load_b32(vdst=v[4], addr=v[0:1], saddr=NULL)
  _, tl_wait, _ = timed([load, s_waitcnt(0), v_mov_b32_e32(v[5], v[4])], vgprs={0: lo, 1: hi}, memory=mem)
  _, tl_free, _ = timed([load, v_mov_b32_e32(v[5], v[6])], vgprs={0: lo, 1: hi}, memory=mem)
  issue = lambda tl, cls: next(t for _, _, t, c, _ in tl if c == cls)
  # the VALU after s_waitcnt issues long after the load; without the wait it follows at once
  assert issue(tl_wait, "valu") - issue(tl_wait, "vmem_load") > 10 * (issue(tl_free, "valu") - issue(tl_free, "vmem_load"))

def test_more_waves_hide_latency():
  buf = np.zeros(64, dtype=np.uint32)
  mem = MemoryMap(); mem.map(buf.ctypes.data, buf.nbytes, backing=buf.view(np.uint8).reshape(-1))
  prog = [global_load_b32(vdst=v[4], addr=v[0:1], saddr=NULL), s_waitcnt(0)] + [v_add_f32_e32(v[5], v[4], v[5])] * 16
  regs = {0: buf.ctypes.data & 0xffffffff, 1: buf.ctypes.data >> 32}
  one, eight = timed(prog, 1, vgprs=regs, memory=mem)[0], timed(prog, 8, vgprs=regs, memory=mem)[0]
  assert one < eight < 8 * one / 2

def test_transcendental_slower_than_plain_valu():
  assert timed([v_exp_f32_e32(v[1 + i], v[0]) for i in range(8)])[0] > timed([v_add_f32_e32(v[1 + i], v[0], v[0]) for i in range(8)])[0]

def test_wave64_costs_two_passes():
  prog = [v_add_f32_e32(v[1 + i], v[0], v[0]) for i in range(16)]
  c32, c64 = timed(prog, lanes=32)[0], timed(prog, lanes=64)[0]
  assert c64 - c32 >= 16 - 1

def test_timing_is_deterministic_and_does_not_change_results():
  prog = [v_add_f32_e32(v[1], v[0], v[0]), s_delay_alu(VALU_DEP_1), v_exp_f32_e32(v[2], v[1])]
  regs = {0: np.arange(32, dtype=np.float32).view(np.uint32)}
  a, b = timed(prog, 2, vgprs=regs), timed(prog, 2, vgprs=regs)
  assert a[0] == b[0] and relative(a[1]) == relative(b[1])
  from emu.amd import run_program
  ref = run_program(prog, waves=2, vgprs=regs)
  np.testing.assert_array_equal(a[2].vgpr[:, :, :3], ref.vgpr[:, :, :3])

# --- replay rules on synthetic streams (simulate_cu): expected cycles worked by hand from the rules docs/timing.md states ---
from emu.amd.timing import PARAMS, OpInfo  # noqa: E402
from emu.amd.cu_model import ILINE, make_stream, replay_op  # noqa: E402
from emu.amd import cu_model, cu_native  # noqa: E402

def simulate_cu(streams, wg_of, passes, slots, p, fetch):
  """cu_model.simulate_cu, which each case below works out by hand; the compiled replay (emu/amd/cu_native.py) must agree
  wherever it takes the workload and a C compiler can build it (tests/unit/amd/test_cu_native.py checks that it builds)."""
  res = cu_model.simulate_cu(streams, wg_of, passes, slots, p, fetch)
  if (native := cu_native.simulate(streams, wg_of, passes, slots, p, fetch, wait=True)) is not None: assert native == res
  return res

RDNA4 = PARAMS["rdna4"]
F16_WMMA = replay_op(OpInfo("valu", "matrix", 16))   # v_wmma_f32_16x16x16_f16 on RDNA4: 4096 MACs / 256 per cycle
IU8_WMMA = replay_op(OpInfo("valu", "matrix", 8))    # v_wmma_i32_16x16x16_iu8: 4096 / 512
VALU, SALU, END = replay_op(OpInfo("valu", "valu")), replay_op(OpInfo("salu", "salu")), replay_op(OpInfo("end", None))

def stream(ops, pcs=None):
  pcs = pcs if pcs is not None else [4 * k for k in range(len(ops))]
  return make_stream(ops, pcs)

def issue_times(streams, p=RDNA4, wg_of=None):
  """Issue cycles per wave, relative to the first wave's first issue."""
  res = simulate_cu(streams, wg_of or [0] * len(streams), 1, 1, p, p.launch)
  t0 = res[0][2][0]
  return [[t - t0 for t in times if t is not None] for _, _, times, _ in res]

def test_waves_contending_for_a_simds_valu_issue_oldest_first():
  # five wave64 waves (two passes: a VALU op holds its SIMD's port 2 cycles, and the wave's next instruction waits as long) of one
  # workgroup alternate over the two SIMDs, one launch a cycle: waves 0, 2, 4 share SIMD 0, ready at 0, 2, 4 (the first issue at 0
  # here); waves 1 and 3 share SIMD 1. Waves 0 and 1 stall 3 cycles on an s_nop (no port) after their first VALU op (the nop is
  # traced at the end of its pause: 2 + 3 - 1). Whenever the
  # port frees it goes to the oldest wave that wants it: wave 0, back from its s_nop at 5 while 2 holds the port and 4 waits, takes
  # it at 6 ahead of both; wave 4 starts only after 2 has finished.
  nop = replay_op(OpInfo("nop", None, delay=3))
  a, b = stream([VALU, nop, VALU, VALU, END]), stream([VALU] * 4 + [END])
  res = simulate_cu([a, a, b, b, b], [0] * 5, 2, 1, RDNA4, RDNA4.launch)
  t0 = res[0][2][0]
  assert [[t - t0 for t in times] for _, _, times, _ in res] == [
    [0, 4, 6, 8, 10], [1, 5, 7, 9, 11], [2, 4, 10, 12, 14], [3, 5, 11, 13, 15], [14, 16, 18, 20, 22]]

def test_wmma_queue_holds_the_wave_until_the_oldest_completes():
  batch = [F16_WMMA, IU8_WMMA] * 5
  (times,) = issue_times([stream(batch + [SALU, END])])
  start, q = RDNA4.matrix_start, RDNA4.matrix_queue
  ends = [start + sum((16, 8)[k % 2] for k in range(n + 1)) for n in range(10)]   # in-order completions: 31, 39, 55, ...
  assert times[:q] == list(range(q))                        # eight WMMAs fill the queue one per cycle
  assert times[q:q + 2] == [ends[0], ends[1]]               # the 9th and 10th each wait for the oldest one to complete
  assert times[q + 2] == ends[2]                            # so does the next instruction, a SALU
  assert times[q + 3] == ends[-1] + RDNA4.matrix_drain      # s_endpgm waits for the last WMMA

def test_other_waves_valu_issues_only_as_a_wmma_completes():
  # two waves of one workgroup share SIMD 0 only when the CU has one SIMD per wave slot: use a one-SIMD CU
  p = PARAMS["rdna4"].__class__(**{**vars(RDNA4), "simds_per_cu": 1})
  a = stream([F16_WMMA, F16_WMMA, F16_WMMA, END])
  b = stream([VALU, VALU, END])
  wa, wb = issue_times([a, b], p)
  ends = [wa[0] + p.matrix_start + 16 * (k + 1) for k in range(3)]
  # wave b starts one cycle after a (LAUNCH_GAP); its first VALU finds the unit busy and takes the first completion, its second the next
  assert wb[:2] == ends[:2]

def test_another_waves_wmma_waits_for_a_completion():
  p = PARAMS["rdna4"].__class__(**{**vars(RDNA4), "simds_per_cu": 1})
  wa, wb = issue_times([stream([F16_WMMA] * 3 + [END]), stream([F16_WMMA, END])], p)
  # the queue has room, but the unit holds a's WMMAs: b's WMMA issues as the first of them completes, not at once
  assert wb[0] == wa[0] + p.matrix_start + 16

def test_the_owner_runs_ahead_into_the_valu_buffer_which_each_completion_drains():
  (times,) = issue_times([stream([F16_WMMA, F16_WMMA] + [VALU] * 9 + [END])])
  e1, e2 = RDNA4.matrix_start + 16, RDNA4.matrix_start + 32
  cap = RDNA4.matrix_buffer   # 4 passes
  # the wave owns every WMMA in flight: four VALUs issue at once; the fifth waits for the first completion, which starts draining
  # the buffer one pass per cycle, so four more issue from there, one per cycle; the ninth waits for the second, last completion and,
  # the unit now idle, for those four passes to drain (the last one drains in cycle e2 + 3)
  assert times[2:2 + cap] == [2, 3, 4, 5]
  assert times[2 + cap:2 + 2 * cap] == [e1, e1 + 1, e1 + 2, e1 + 3]
  assert times[2 + 2 * cap] == e2 + cap - 1

def test_another_waves_pending_passes_take_free_completions_and_hold_the_owner():
  p = PARAMS["rdna4"].__class__(**{**vars(RDNA4), "simds_per_cu": 1})
  wide = replay_op(OpInfo("valu", "valu", 2))                           # a 2-pass op (64-bit shift)
  a = stream([F16_WMMA] * 4 + [SALU] * 30 + [VALU, END])
  b = stream([wide, VALU, END])
  wa, wb = issue_times([a, b], p)
  e1, e2, e3 = (p.matrix_start + 16 * k for k in (1, 2, 3))
  # b does not own the WMMAs: its 2-pass op issues at the first completion, which runs one pass; the other pass waits for a later
  # completion. a's VALU, ready after its SALUs (34), would fit a's buffer, but b's pending pass holds a to completions: it takes
  # e2. The pass then runs at e3, the next free completion, and b issues its next VALU in the cycle after (without a completion)
  assert wb[0] == e1
  assert wa[4 + 30] == e2
  assert wb[1] == e3 + 1

def test_a_held_owner_issues_its_wmmas_at_completions_too():
  p = PARAMS["rdna4"].__class__(**{**vars(RDNA4), "simds_per_cu": 1})
  wide = replay_op(OpInfo("valu", "valu", 2))
  wa, wb = issue_times([stream([F16_WMMA] * 2 + [SALU] * 30 + [F16_WMMA, END]), stream([wide, END])], p)
  e1, e2 = p.matrix_start + 16, p.matrix_start + 32
  # b's 2-pass op takes e1 and leaves a pass pending; a's third WMMA, ready at 32, waits for e2 instead of issuing at once
  assert wb[0] == e1
  assert wa[2 + 30] == e2

def test_a_64_bit_integer_op_waits_for_the_transcendental_port():
  trans = replay_op(OpInfo("trans", "trans", 4))                        # v_rcp_f32: the transcendental port is busy 4 cycles
  wide = replay_op(OpInfo("valu", "valu", 2, via_trans=True))           # v_lshlrev_b64 on RDNA4
  (times,) = issue_times([stream([trans, VALU, wide, END])])
  assert times[1] == 1                                            # a plain VALU op issues while the transcendental runs
  assert times[2] == 4                                            # the 64-bit shift waits for the transcendental port

def test_conditional_branch_waits_for_the_salu_and_a_taken_branch_refetches():
  cbr = replay_op(OpInfo("branch", "salu", cond=True))
  # s_cmp; s_cbranch (taken: the next PC is back at 0x10); target instruction
  ops, pcs = [SALU, cbr, SALU, END], [0, 4, 0x10, 0x14]
  (times,) = issue_times([stream(ops, pcs)])
  assert times[1] == RDNA4.branch_dep
  assert times[2] == RDNA4.branch_dep + RDNA4.branch_taken

def test_instruction_fetch_brings_the_128_byte_line_pair():
  # straight-line code over 8 lines: the launch brings lines 0-3, entering line 3 requests line 4 and with it line 5; line 6 is
  # requested on entering line 5 (with 7): the wave stalls once for 4/5 and once for 6/7 at most, never separately for 5 or 7
  n = 8 * ILINE // 4
  (times,) = issue_times([stream([SALU] * n + [END])])
  stalls = [k * 4 // ILINE for k in range(1, n) if times[k] - times[k - 1] > 1]
  assert stalls and set(stalls) <= {4, 6}

def test_kfd_mappings_make_the_cold_fetch_slower_than_am():
  spec = get_spec("gfx1201")
  kfd, am = TimingModel(spec), TimingModel(spec, driver="am")
  assert (kfd.fetch, am.fetch) == (RDNA4.launch_kfd, RDNA4.launch) and RDNA4.launch_kfd > RDNA4.launch
  # the fetch latency is both the launch and a later cache-line miss: a wave of 8 lines of SALU starts later and stalls longer
  n = 8 * ILINE // 4
  s = stream([SALU] * n + [END])
  (fast,), (slow,) = (simulate_cu([s], [0], 1, 1, RDNA4, f) for f in (RDNA4.launch, RDNA4.launch_kfd))
  assert slow[2][0] - fast[2][0] == RDNA4.launch_kfd - RDNA4.launch and slow[2][-1] - fast[2][-1] > slow[2][0] - fast[2][0]

def test_unknown_driver_is_rejected():
  with pytest.raises(ValueError, match="unknown driver"): TimingModel(get_spec("gfx1100"), driver="amdgpu")

# --- classification from the mnemonic grammar and the compiled semantics (emu.amd.timing.classify) ---
from tinygrad.runtime.autogen.amd.cdna import ins as cdna_ins  # noqa: E402
from tinygrad.runtime.autogen.amd.rdna3 import ins as rdna3_ins  # noqa: E402
from emu.amd.decode import decode  # noqa: E402
from emu.amd.step_build import compile_step  # noqa: E402
from emu.amd.timing import classify  # noqa: E402

def _info(inst, arch="gfx1100"):
  spec = get_spec(arch)
  return classify(compile_step(decode(inst.to_bytes(), spec), spec, 0))

def _store_cost(p, dwords): return p.store_port[0] + p.store_port[1] * dwords

def test_atomic_with_return_counts_as_a_load():
  # vscnt counts stores and atomics without return; an atomic that returns its pre-op value (GLC) is waited for with vmcnt
  # (LLVM SIInsertWaitcnts, D153279: "global_atomic_csub_u32 ... glc is an atomic-with-return which uses VMcnt")
  i = rdna3_ins
  plain = _info(i.global_atomic_add_u32(addr=v[0:1], data=v[2], saddr=NULL))
  ret = _info(i.global_atomic_add_u32(vdst=v[3], addr=v[0:1], data=v[2], saddr=NULL, glc=1))
  assert (plain.cls, ret.cls) == ("vmem_store", "vmem_load")

@pytest.mark.parametrize("make,dwords", [
  (lambda i: i.global_store_b128(addr=v[0:1], data=v[4:7], saddr=NULL), 4),
  (lambda i: i.global_atomic_add_u64(addr=v[0:1], data=v[2:3], saddr=NULL), 2),       # 64-bit data
  (lambda i: i.global_atomic_cmpswap_b32(addr=v[0:1], data=v[2:3], saddr=NULL), 2),   # data and compare value
  (lambda i: i.global_store_b8(addr=v[0:1], data=v[2], saddr=NULL), 1),
])
def test_store_cost_follows_the_data_it_sends(make, dwords):
  assert _info(make(rdna3_ins)).cost == _store_cost(PARAMS["rdna3"], dwords)

def test_cdna_memory_sizes_and_buffer_ops():
  c = cdna_ins
  assert _info(c.global_store_dwordx4(addr=v[0:1], data=v[4:7], saddr=NULL), "gfx942").cost == _store_cost(PARAMS["cdna"], 4)
  load = _info(c.buffer_load_dword(vdata=v[1], vaddr=v[0], srsrc=c.s[0:3], soffset=c.s[4], offen=1), "gfx942")
  store = _info(c.buffer_store_dwordx2(vdata=v[2:3], vaddr=v[0], srsrc=c.s[0:3], soffset=c.s[4], offen=1), "gfx942")
  assert (load.cls, load.port, store.cls, store.cost) == ("vmem_load", "vmem", "vmem_store", _store_cost(PARAMS["cdna"], 2))

def test_lds_cycles_count_the_data_written():
  i = rdna3_ins
  cyc = lambda data: -(-32 * (4 + data) // 128)   # a wave32's address + data bytes over the LDS pipe's 128 bytes/cycle
  assert _info(i.ds_load_b128(vdst=v[4:7], addr=v[0])).lds_cycles == cyc(0)
  assert _info(i.ds_max_u32(addr=v[0], data0=v[1])).lds_cycles == cyc(4)                      # an atomic writes its data
  assert _info(i.ds_store_2addr_b64(addr=v[0], data0=v[2:3], data1=v[4:5])).lds_cycles == cyc(16)

def test_unmodelled_wait_counters_do_not_wait():
  i = rdna3_ins
  assert _info(i.s_waitcnt_depctr(simm16=0xfff)).waits == () and _info(i.s_waitcnt_expcnt(sdst=NULL, simm16=0)).waits == ()
  assert _info(i.s_waitcnt_vscnt(sdst=NULL, simm16=2)).waits == (("vs", 2),)

@pytest.mark.parametrize("make,cls,port,cost", [
  (lambda i: i.v_exp_f32_e32(v[1], v[0]), "trans", "trans", 4),
  (lambda i: i.v_rcp_f64_e32(v[2:3], v[0:1]), "valu", "valu", 16),        # double precision: not the transcendental unit
  (lambda i: i.v_lshlrev_b64(v[2:3], v[0], v[4:5]), "valu", "valu", 2),
  (lambda i: i.v_mad_u64_u32(v[2:3], NULL, v[0], v[1], v[4:5]), "valu", "valu", 4),
  (lambda i: i.v_sub_nc_u32_e32(v[1], v[0], v[2]), "valu", "valu", 1),
])
def test_valu_classes(make, cls, port, cost):
  t = _info(make(rdna3_ins))
  assert (t.cls, t.port, t.cost) == (cls, port, cost)

def test_dispatch_stats_split_the_host_time_into_decode_observe_and_the_rest():
  from emu.bench import valu_loop
  run = valu_loop(waves=8, iters=4)
  first, again = run(), run()
  for s in (first, again):
    assert set(s.host) == {"total", "decode", "observe"} and s.host["total"] >= s.host["decode"] + s.host["observe"]
    assert s.host["observe"] > 0   # the timing model replays at the end
  assert first.host["decode"] > 0 and again.host["decode"] == 0   # the first dispatch fetches its code, the next reuses it unchanged

def test_a_repeated_dispatch_takes_its_cycles_from_the_replay_memo_and_they_equal_a_fresh_replay():
  from emu.bench import valu_loop
  from emu.amd.timing import REPLAY_MEMO
  run = valu_loop(waves=64, iters=8)
  REPLAY_MEMO.ends.clear()
  fresh = run().cycles
  workloads = len(REPLAY_MEMO.ends)
  assert workloads > 0 and run().cycles == fresh and len(REPLAY_MEMO.ends) == workloads   # nothing new replayed
  REPLAY_MEMO.ends.clear()
  assert run().cycles == fresh                                                            # and a fresh replay agrees
  assert valu_loop(waves=64, iters=9)().cycles > fresh   # one more loop trip: other streams, a longer kernel (not a memo hit)

def test_a_dispatch_that_ran_otherwise_is_not_taken_for_a_recorded_one():
  """A whole dispatch's end is kept by its recording (each batch's instruction and waves): the same code on other data, which runs
  its loop another number of times, is replayed, and gives what a fresh replay gives."""
  from tinygrad.runtime.autogen.amd.rdna3.ins import s, s_load_b32, s_lshl_b32, s_sub_u32, s_cmp_lg_u32, s_cbranch_scc1, v_fma_f32, s_endpgm
  from emu.amd.api import Dispatch
  from emu.amd.gpu import AMDGPU
  from emu.amd.kernel import Buffers
  from emu.amd.timing import REPLAY_MEMO
  body = [v_fma_f32(v[1], v[1], v[0], 1.0), s_sub_u32(s[2], s[2], 1), s_cmp_lg_u32(s[2], 0)]
  back = -(sum(len(i.to_bytes()) for i in body) + 4) // 4
  head = [s_lshl_b32(s[3], s[2], 2), s_load_b32(s[2], s[0:1], s[3]), s_waitcnt(0)]   # each workgroup's trips: its waves part ways
  code = b"".join(i.to_bytes() for i in [*head, *body, s_cbranch_scc1(simm16=back & 0xffff), s_endpgm()])
  bufs = Buffers()
  trips = np.array([3, 4, 5, 6], dtype=np.uint32)
  t = bufs.add(trips, "trips", writable=False)
  addr = bufs.add(np.frombuffer(code + bytes(64), dtype=np.uint8).copy(), "code", writable=False)
  d = Dispatch(code_addr=addr, grid=(4, 1, 1), workgroup=(64, 1, 1), user_sgprs=[t & 0xffffffff, t >> 32], rsrc2=(2 << 1) | (1 << 7))
  gpu = AMDGPU("gfx1100", bufs.mem, timing=True)
  first = gpu.dispatch(d).cycles
  assert gpu.dispatch(d).cycles == first   # the same recording: its end from the memo
  trips[3] = 9
  other = gpu.dispatch(d).cycles
  REPLAY_MEMO.forget_results()
  assert gpu.dispatch(d).cycles == other > first

def test_region_runs_numbered_once_give_a_fresh_replays_cycles_also_when_the_memo_drops_them():
  """A region run's instruction codes are made once per generation (ReplayMemo.number_parts); a memo bounded below the runs a
  dispatch makes drops runs and their codes as it goes, and the cycles stay those of a fresh replay."""
  from emu import bench
  from emu.amd import timing
  run = bench.boxmuller(1 << 10)
  timing.REPLAY_MEMO.forget_results()
  fresh = run().cycles
  saved, timing.REPLAY_MEMO = timing.REPLAY_MEMO, timing.ReplayMemo(limit=2)
  try:
    assert run().cycles == fresh and run().cycles == fresh
    assert len(timing.REPLAY_MEMO.runs) <= 2 and set(timing.REPLAY_MEMO.run_codes) <= set(timing.REPLAY_MEMO.runs)
  finally: timing.REPLAY_MEMO = saved

def test_the_replay_memo_numbering_starts_over_beyond_its_bound_and_cycles_stay_those_of_a_fresh_replay():
  from emu.bench import valu_loop
  from emu.amd import timing
  run = valu_loop(waves=64, iters=8)
  fresh = run().cycles
  saved, timing.REPLAY_MEMO = timing.REPLAY_MEMO, timing.ReplayMemo(max_codes=8)   # the loop has more than 8 (step, pc) pairs
  try:
    memo = timing.REPLAY_MEMO
    assert run().cycles == fresh and memo.generation == 1
    assert run().cycles == fresh and memo.generation == 2   # each dispatch overflows the bound: numbered afresh, replayed afresh
    tables = memo.number_parts([(None, (1, 0))])
    assert tables[0] == 3 and len(memo.codes) == 1 and list(tables[2]) == [0] and list(tables[3]) == [1]
  finally: timing.REPLAY_MEMO = saved

def test_chunks_in_lockstep_share_streams_as_the_general_path_builds_them(monkeypatch):
  """Several 4-wave chunks (workgroups of 2 waves) each in lockstep: the per-range streams give the cycles and the per-wave digests
  the general path (every wave's issue sequence sorted out of all batches) gives."""
  from emu import bench
  from emu.amd.timing import REPLAY_MEMO
  from emu.amd import dispatcher
  monkeypatch.setattr(dispatcher, "CHUNK_WAVES", 4)
  monkeypatch.setattr(dispatcher, "CHUNK_WAVES_MAX", 4)
  seen = []
  real_streams = TimingModel._streams
  def spy(self, numbered, groups):
    out = real_streams(self, numbered, groups)
    seen.append(out[1])
    return out
  monkeypatch.setattr(TimingModel, "_streams", spy)
  run = bench.tinygrad_kernel(lambda a, b: a * b + 1, [(4096,), (4096,)], 4096)
  fast = run()
  by_range = TimingModel._by_range
  monkeypatch.setattr(TimingModel, "_by_range", lambda self: None)
  REPLAY_MEMO.forget_results()   # (else the same recording's end is known)
  general = run()
  assert fast.waves >= 8 and fast.cycles == general.cycles and seen[0] == seen[1]
  ranges = []
  monkeypatch.setattr(TimingModel, "_by_range", lambda self: (r := by_range(self), ranges.append(r))[0])
  REPLAY_MEMO.forget_results()
  run()
  assert ranges[0] is not None and len(ranges[0]) == fast.waves // 4   # the fast path was the one taken

def test_waves_batches_bitmap_gives_the_streams_the_sort_by_wave_gives(monkeypatch):
  """Waves that branch on data (Box-Muller's range reductions) run in batches of varying waves: marking each wave's batches in a
  bitmap gives every wave the issue sequence (digest) and the dispatch the cycles that sorting all batches by wave gives."""
  from emu import bench
  from emu.amd import timing
  from emu.amd.timing import REPLAY_MEMO
  seen = []
  real_streams = TimingModel._streams
  def spy(self, numbered, groups):
    out = real_streams(self, numbered, groups)
    seen.append((groups, out[1]))
    return out
  monkeypatch.setattr(TimingModel, "_streams", spy)
  run = bench.boxmuller(1 << 12)
  bitmap = run()
  monkeypatch.setattr(timing, "MEMBERSHIP_CELLS", 0)
  REPLAY_MEMO.forget_results()
  by_sort = run()
  (ranges, a), (_, b) = seen
  assert ranges is None and len(set(a)) > 2   # neither lockstep nor chunks in lockstep: the waves' sequences differ
  assert a == b and bitmap.cycles == by_sort.cycles

def test_a_deferred_replay_runs_when_the_cycles_are_read_and_gives_the_same_count():
  from emu.amd.gpu import AMDGPU
  from emu.amd.kernel import Buffers, compile_kernel, kernel_dispatch
  from emu.amd.timing import DEFERRED, REPLAY_MEMO
  k = compile_kernel(lambda a, b: a * b + 1, (4096,), (4096,))
  ins, out, bufs = [np.ones(4096, np.float32), np.ones(4096, np.float32)], np.zeros(4096, np.float32), Buffers()
  d = kernel_dispatch(k, ins, out, bufs)
  eager = AMDGPU("gfx1100", bufs.mem).dispatch(d)
  REPLAY_MEMO.forget_results()
  stats = AMDGPU("gfx1100", bufs.mem, defer_timing=True).dispatch(d)
  assert stats.pending and id(stats) in DEFERRED.waiting and "observe" in stats.host   # nothing replayed yet
  observe = stats.host["observe"]
  assert stats.cycles == eager.cycles > 0 and not stats.pending and id(stats) not in DEFERRED.waiting
  assert stats.host["observe"] > observe and (out == 2).all()

def test_a_deferred_replay_classifies_the_instructions_only_when_it_runs(monkeypatch):
  # the timing view of each instruction (classify) is made when a replay needs it: a dispatch whose cycles are never read makes
  # none (nor loads a restored native region's steps for one: emu.amd.regions.LazyStep)
  from emu.amd import timing
  from emu.amd.gpu import AMDGPU
  from emu.amd.kernel import Buffers, compile_kernel, kernel_dispatch
  classified, real = [], timing.classify
  monkeypatch.setattr(timing, "classify", lambda step: classified.append(step.instr.name) or real(step))
  k = compile_kernel(lambda a, b: a * b - 3.25, (256,), (256,))   # (a constant no other test uses: steps not classified before)
  ins, out, bufs = [np.full(256, 2, np.float32), np.ones(256, np.float32)], np.zeros(256, np.float32), Buffers()
  stats = AMDGPU("gfx1100", bufs.mem, defer_timing=True).dispatch(kernel_dispatch(k, ins, out, bufs))
  assert stats.pending and classified == [] and (out == -1.25).all()
  assert stats.cycles > 0 and len(classified) > 0

def test_deferred_replays_beyond_the_budget_run_oldest_first(monkeypatch):
  from emu.amd import timing
  spec = get_spec("gfx1100")
  nop = compile_step(decode(assemble([rdna3_ins.s_nop(0)]) + b"\0" * 12, spec), spec, 0)
  each = timing.DISPATCH_BYTES + 3 * timing.ENTRY_BYTES + 3 * 8   # 3 recorded entries of one wave
  q = timing.DeferredReplays(max_bytes=2 * each - 1)
  monkeypatch.setattr(timing, "DEFERRED", q)
  made = []
  for _ in range(3):   # three such dispatches: the second pushes the first out, the third the second
    tm = TimingModel(spec, deferred=True)
    tm.start(1, 32)
    for _ in range(3): tm.issue(nop, np.array([0]), 0)
    assert tm.recorded_bytes() == each
    made.append(st := DispatchStats(waves=1))
    tm.done(st)
  assert [st.pending for st in made] == [False, False, True] and q.bytes == each
  assert made[0].cycles == made[1].cycles == made[2].cycles > 0 and q.bytes == 0

def test_a_loops_runs_are_one_entry_of_the_record_and_replay_as_its_runs_one_by_one():
  """A native loop's runs are recorded as one entry (memory independent of its trips); the replay expands them into the same
  instruction stream as the runs recorded one by one, interleaved with single steps before and after."""
  from emu.amd import timing
  from emu.amd.regions import offsets
  spec = get_spec("gfx1100")
  insts = [v_add_f32_e32(v[1], v[1], v[2]), s_delay_alu(VALU_DEP_1), v_add_f32_e32(v[3], v[1], v[2])]
  code = assemble(insts) + b"\0" * 16
  sizes = [len(i.to_bytes()) for i in insts]
  steps = list(zip(offsets(sizes), (compile_step(decode(code[o:o + 16], spec), spec, 0x1000 + o) for o in offsets(sizes))))
  ws = np.array([0, 1])
  def model(trips:int, at_once:bool) -> TimingModel:
    tm = TimingModel(spec, timeline=True)
    tm.start(2, 32, 2)
    tm.issue(steps[0][1], ws, 0x1000)
    if at_once: tm.ran(None, ws, steps, 0x1000, 0, times=trips)
    else:
      for _ in range(trips): tm.ran(None, ws, steps, 0x1000, 0)
    tm.issue(steps[2][1], ws[:1], 0x1000 + steps[2][0])   # one wave goes on alone
    return tm
  looped = model(300, True)
  assert looped.recorded_bytes() == model(3, True).recorded_bytes() == timing.DISPATCH_BYTES + 3 * timing.ENTRY_BYTES + 5 * 8
  one_by_one = model(300, False)
  assert looped.finish() == one_by_one.finish() and looped.timeline == one_by_one.timeline
  assert len([t for t in looped.timeline if t[0] == 0]) > len([t for t in looped.timeline if t[0] == 1]) > 600
  assert looped.finish()[0] > model(100, True).finish()[0]
