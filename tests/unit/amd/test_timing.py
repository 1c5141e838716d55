"""Timing relations of the cycle model (emu/amd/timing.py): orderings hardware guarantees, not calibrated numbers."""
import numpy as np
from tinygrad.runtime.autogen.amd.rdna3.ins import v, s_delay_alu, s_waitcnt, v_add_f32_e32, v_exp_f32_e32, v_mov_b32_e32, global_load_b32
from tinygrad.renderer.amd.dsl import NULL
from emu.amd.api import DispatchStats
from emu.amd.arch import get_spec
from emu.amd.dispatcher import MAX_VGPRS, Dispatcher
from emu.amd.memory import MemoryMap
from emu.amd.runner import assemble
from emu.amd.step import Machine
from emu.amd.steps import Program
from emu.amd.timing import TimingModel
from emu.amd.wave import WaveState

VALU_DEP_1 = 1

def timed(insts, waves=1, lanes=32, vgprs=None, memory=None):
  """Run one workgroup of `waves` waves through the dispatcher with the timing model; (cycles, timeline, final state)."""
  spec, mem = get_spec("gfx1100"), memory if memory is not None else MemoryMap()
  code = np.frombuffer(assemble(insts) + b"\0" * 16, dtype=np.uint8).copy()
  m_code = mem.map(code.ctypes.data, code.size, name="code", writable=False, backing=code)
  st = WaveState(spec, waves, lanes, MAX_VGPRS, 0)
  st.pc[:] = m_code.addr
  for reg, val in (vgprs or {}).items(): st.vgpr[:, :, reg] = np.asarray(val).astype(np.int64).astype(np.uint32)
  for w in range(waves): st.set_mask(w, spec.exec_lo, (1 << lanes) - 1)
  st.wave_id = [(0, 0, 0, w) for w in range(waves)]
  stats = DispatchStats(workgroups=1, waves=waves)
  tm = TimingModel(spec, timeline=True)
  tm.start(waves, lanes, waves)
  Dispatcher(spec, mem, 10**6, None, tm).schedule(Machine(spec, st, mem, stats, 0, 1), Program(spec, mem), waves, stats)
  cycles, _ = tm.finish()
  return cycles, tm.timeline, st

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
  assert a[0] == b[0] and a[1] == b[1]
  from emu.amd import run_program
  ref = run_program(prog, waves=2, vgprs=regs)
  np.testing.assert_array_equal(a[2].vgpr[:, :, :3], ref.vgpr[:, :, :3])
