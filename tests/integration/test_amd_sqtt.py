"""tinygrad's own SQTT profiling (PROFILE=1 SQTT=1) on the mock KFD: the thread-trace blobs it collects are encoded from the
emulator's timeline, and the wheel's decoder maps them back onto the kernel's own code object.

Expected values come from the code object (tinygrad's disassembly of `ProfileProgramEvent.lib`) and from the instruction
classes real gfx1100 traces report (s_load -> INST SMEM_RD, global_* -> INST SGMEM_*, v_* -> VALUINST, s_waitcnt/s_clause/s_nop ->
IMMEDIATE, s_endpgm -> WAVEEND)."""
import pytest
from tests.integration.tinygrad_run import ARCH, SQTT_ENV, emulator_available, run_json

pytestmark = pytest.mark.skipif(not emulator_available(), reason="emulator not available")
GFX11_ONLY = pytest.mark.skipif(ARCH != "gfx1100", reason=f"thread trace is emulated on gfx1100 only (SQTT layout 3); {ARCH}'s GC is not: "
                                                          "test_amd_archs.py checks the error there")

CHILD = """
import json
from tinygrad import Tensor, Device
from tinygrad.device import Compiled
from tinygrad.renderer.amd import sqtt
from tinygrad.viz.serve import amd_decode
out = (Tensor([1., 2., 3.]).realize() + Tensor([4., 5., 6.]).realize()).realize().tolist()
red = Tensor.ones(64, 512).contiguous().realize().sum(axis=1).realize().tolist()
Device["AMD"].synchronize()
evs = Compiled.profile_events
progs = {e.tag: e for e in evs if type(e).__name__ == "ProfileProgramEvent"}
sq = [e for e in evs if type(e).__name__ == "ProfileSQTTEvent"]
res = {"out": out, "red": red, "events": [[progs[e.kern].name, e.se, e.itrace, len(e.blob)] for e in sq], "kernels": {}}
for kern in sorted({e.kern for e in sq}):
  prog = progs[kern]
  code = [(pc, repr(i), getattr(i, "op_name", "").lower()) for pc, i in amd_decode(prog.lib, "gfx1100").items()]
  waves, starts, ordered = {}, 0, True
  for e in (e for e in sq if e.kern == kern):
    starts += sum(isinstance(p, sqtt.WAVESTART) for p in sqtt.decode(e.blob))
    times = [p._time for p in sqtt.decode(e.blob)]
    ordered &= times == sorted(times)
    if not e.itrace: continue
    for p, info in sqtt.map_insts(e.blob, prog.lib, "gfx1100"):
      if info is None: continue
      kind = type(p).__name__ + (":" + p.op.name if isinstance(p, sqtt.INST) else "")
      waves.setdefault((e.se, info.wave), []).append([info.pc, repr(info.inst), kind, p._time])
  res["kernels"][prog.name] = {"code": code, "waves": list(waves.values()), "starts": starts, "sorted": ordered}
print(json.dumps(res))
"""

SKIPPED = {"s_delay_alu", "s_wait_alu", "s_barrier_wait"}

def expected_kind(name:str) -> str:
  if name.startswith("v_"): return "VALUINST"
  if name.startswith("s_load"): return "INST:SMEM_RD"
  if name.startswith("global_load"): return "INST:SGMEM_RD_"
  if name.startswith("global_store"): return "INST:SGMEM_WR_"
  if name in ("s_waitcnt", "s_clause", "s_nop"): return "IMMEDIATE"
  if name == "s_sendmsg": return "INST:MESSAGE"
  if name == "s_endpgm": return "WAVEEND"
  return "?"

@pytest.fixture(scope="module")
def traced(): return run_json(CHILD, env=SQTT_ENV)

@GFX11_ONLY
def test_results_and_one_blob_per_shader_engine(traced):
  assert traced["out"] == [5.0, 7.0, 9.0] and traced["red"] == [512.0] * 64
  for name in traced["kernels"]:
    evs = sorted(ev[1:] for ev in traced["events"] if ev[0] == name)
    assert [se for se, _, _ in evs] == list(range(6))                             # gfx1100 board: 6 shader engines
    assert [it for _, it, _ in evs] == [True, True, False, False, False, False]  # SQTT_ITRACE_SE_MASK=0b11
    assert all(n > 0 and n % 32 == 0 for _, _, n in evs)

@GFX11_ONLY
def test_instruction_stream_matches_the_code_object(traced):
  k = traced["kernels"]["E_3"]
  assert k["starts"] == 1 and k["sorted"]                                        # E_3: one wave32, timestamps monotonic
  (wave,) = k["waves"]
  code = [(pc, text, name) for pc, text, name in k["code"] if name not in SKIPPED]
  end = next(i for i, (_, _, name) in enumerate(code) if name == "s_endpgm")
  assert [(pc, text) for pc, text, _, _ in wave] == [(pc, text) for pc, text, _ in code[:end + 1]]   # straight-line code, in order
  for (_, _, name), (_, _, kind, _) in zip(code, wave): assert kind.startswith(expected_kind(name)), (name, kind)
  times = [t for _, _, _, t in wave]
  assert times == sorted(times) and times[-1] > times[0]

@pytest.mark.parametrize("gc", [(12, 0, 1), (9, 4, 3)])
def test_thread_trace_on_other_gc_versions_is_a_clear_error(gc):
  from emu.amd.memory import MemoryMap
  from mockgpu.amd.clock import DeviceClock
  from mockgpu.amd.engine import PacketError
  from mockgpu.amd.sqtt import ThreadTrace
  tt = ThreadTrace("gfx1201" if gc[0] == 12 else "gfx942", gc, 4, 2, MemoryMap(), DeviceClock())
  with pytest.raises(PacketError, match=f"GC {'.'.join(map(str, gc))} is not emulated"): tt.write_reg(tt.gc.regSQ_THREAD_TRACE_CTRL.addr[0], 1)

@GFX11_ONLY
def test_reduction_waves_follow_their_branches_to_s_endpgm(traced):
  (name,) = [n for n in traced["kernels"] if n.startswith("r_")]
  k = traced["kernels"][name]
  assert k["sorted"] and k["waves"] and k["starts"] >= len(k["waves"])
  size = {pc: nxt - pc for (pc, _, _), (nxt, _, _) in zip(k["code"], k["code"][1:])}
  endpgm = next(pc for pc, _, n in k["code"] if n == "s_endpgm")
  branches = {pc for pc, _, n in k["code"] if "branch" in n}
  for wave in k["waves"]:
    assert wave[-1][0] == endpgm and wave[-1][2] == "WAVEEND"
    for (pc, _, kind, _), (nxt, _, _, _) in zip(wave, wave[1:]):
      if pc in branches: assert kind.startswith("INST:JUMP") and (nxt != pc + size[pc]) == (kind == "INST:JUMP")
      else: assert nxt >= pc + size[pc] or kind == "WAVEEND"
