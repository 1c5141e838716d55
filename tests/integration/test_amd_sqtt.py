"""tinygrad's own SQTT profiling (PROFILE=1 SQTT=1) on the mock KFD, on every emulated GPU: the thread-trace blobs it collects are
encoded from the emulator's timeline in the GPU's own format (gfx1100: layout 3, gfx1201: layout 4, gfx942/gfx950: CDNA), and the
wheel's decoder reads them back onto the kernel's own code object.

Expected values come from the code object (tinygrad's disassembly of `ProfileProgramEvent.lib`) and from the instruction classes
real captures report: gfx1100 (s_load -> INST SMEM_RD, global_* -> INST SGMEM_*, v_* -> VALUINST, s_waitcnt/s_clause/s_nop ->
IMMEDIATE, s_endpgm -> WAVEEND), gfx1200 (the same with INST_RDNA4 SMEM / VMEM_*, s_wait_* -> IMMEDIATE). No CDNA capture traces
instructions: there the decoder's InstOpCDNA names are expected (s_load -> SMEM_RD, v_* -> VALU_32/64, global_* -> VMEM_RD/WR,
s_waitcnt/s_nop unreported), and since `map_insts` maps no CDNA instruction packets to PCs, the test walks the code itself."""
import getpass
import pytest
from emu.timing.compare import compare_file
from tests.integration.tinygrad_run import ARCHS, SQTT_ENV, emulator_available, llvm_missing, run_json

pytestmark = pytest.mark.skipif(not emulator_available(), reason="emulator not available")
ENGINES = {"gfx1100": 6, "gfx1201": 4, "gfx942": 4, "gfx950": 4}   # shader engines of the boards (one XCC on CDNA)

CHILD = """
import json
from tinygrad import Tensor, Device
from tinygrad.device import Compiled
from tinygrad.renderer.amd import sqtt
from tinygrad.viz.serve import amd_decode, sqtt_timeline
out = (Tensor([1., 2., 3.]).realize() + Tensor([4., 5., 6.]).realize()).realize().tolist()
red = Tensor.ones(64, 512).contiguous().realize().sum(axis=1).realize().tolist()
Device["AMD"].synchronize()
arch, evs = Device["AMD"].arch, Compiled.profile_events
cdna = arch.startswith("gfx9")
progs = {e.tag: e for e in evs if type(e).__name__ == "ProfileProgramEvent"}
sq = [e for e in evs if type(e).__name__ == "ProfileSQTTEvent"]
res = {"out": out, "red": red, "events": [[progs[e.kern].name, e.se, e.itrace, len(e.blob)] for e in sq], "kernels": {}}
def kind(p): return type(p).__name__.replace("_RDNA4", "").replace("CDNA_", "") + (":" + p.op.name if hasattr(p, "op") else "")
for kern in sorted({e.kern for e in sq}):
  prog = progs[kern]
  code, pcs = [], list(amd_decode(prog.lib, arch).items())
  for (pc, i), nxt in zip(pcs, [p for p, _ in pcs[1:]] + [None]):
    name = getattr(i, "op_name", "").lower() or ("v_dual" if type(i).__name__ == "VOPD" else "")
    target = nxt + ((i.simm16 & 0xffff) ^ 0x8000) * 4 - 0x20000 if "branch" in name else None
    code.append((pc, repr(i), name, nxt, target))
  waves, starts, ordered, viz = {}, 0, True, 0
  for e in (e for e in sq if e.kern == kern):
    pkts = list(sqtt.decode(e.blob))
    starts += sum(isinstance(p, (sqtt.WAVESTART, sqtt.WAVESTART_RDNA4, sqtt.CDNA_WAVESTART)) for p in pkts)
    ordered &= [p._time for p in pkts] == sorted(p._time for p in pkts)
    if not e.itrace: continue
    if cdna:   # per (se, simd, slot) of the traced CU: the instruction packets in order, closed by the wave end
      live = {}
      for p in pkts:
        if isinstance(p, sqtt.CDNA_WAVESTART) and p.cu == 0: live[(p.simd, p.wave)] = waves.setdefault((e.se, p.simd, p.wave, p._time), [])
        elif isinstance(p, sqtt.CDNA_INST): live[(p.simd, p.wave)].append([None, None, kind(p), p._time])
        elif isinstance(p, sqtt.CDNA_WAVEEND) and p.cu == 0: live.pop((p.simd, p.wave)).append([None, None, "WAVEEND", p._time])
    else:
      for p, info in sqtt.map_insts(e.blob, prog.lib, arch):
        if info is not None: waves.setdefault((e.se, info.wave), []).append([info.pc, repr(info.inst), kind(p), p._time])
    try: viz += sum(type(x).__name__ == "ProfileRangeEvent" for x in sqtt_timeline(e.blob, prog.lib, arch))
    except AssertionError as err: viz = str(err)
  res["kernels"][prog.name] = {"code": code, "waves": list(waves.values()), "starts": starts, "sorted": ordered, "viz": viz}
print(json.dumps(res))
"""

# the packet kinds (prefixes) an instruction is reported with, per ISA family; None: not reported
def expected_kind(arch:str, name:str) -> tuple[str, ...] | None:
  cdna, rdna4 = arch.startswith("gfx9"), arch.startswith("gfx12")
  if name == "s_endpgm": return ("WAVEEND",)
  if name.startswith("v_"): return ("INST:VALU_",) if cdna else ("VALUINST", "INST:VALU")
  if name.startswith(("s_waitcnt", "s_wait_", "s_clause", "s_nop")): return None if cdna else ("IMMEDIATE",)
  if name.startswith("s_barrier"): return None if cdna else ("INST:BARRIER",)
  if name.startswith(("s_branch", "s_cbranch")): return ("INST:JUMP", "INST:NEXT") if cdna else ("INST:JUMP",)
  for prefix, kinds in (("s_load", ("INST:SMEM_RD", "INST:SMEM_RD", "INST:SMEM")), ("s_sendmsg", ("INST:OTHER_MSG", "INST:MESSAGE", "INST:MESSAGE")),
                        ("global_load", ("INST:VMEM_RD", "INST:SGMEM_RD_", "INST:VMEM_RD_")), ("ds_", ("INST:LDS",) * 3),
                        ("global_store", ("INST:VMEM_WR", "INST:SGMEM_WR_", "INST:VMEM_WR_")), ("s_", ("INST:SALU_", "INST:SALU", "INST:SALU"))):
    if name.startswith(prefix): return (kinds[0 if cdna else 2 if rdna4 else 1],)
  return ("?",)

SKIPPED = {"s_delay_alu", "s_wait_alu", "s_barrier_wait"}   # never issued (the instruction buffer consumes them)

def first_reported(arch:str, at:dict, pc:int) -> int:
  """The first instruction at or after `pc` that the trace reports."""
  while at[pc][2] in SKIPPED or expected_kind(arch, at[pc][2]) is None: pc = at[pc][3]
  return pc

def with_pcs(arch:str, code:list, wave:list) -> list:
  """A wave's [pc, text, kind, cycle] packets; on CDNA the PCs are recovered by following the code from its entry (a reported
  instruction per packet, a branch to its target when the packet says JUMP), as `map_insts` does on RDNA."""
  if not arch.startswith("gfx9"): return wave
  at, pc, out = {c[0]: c for c in code}, code[0][0], []
  for _, _, kind, t in wave:
    pc = first_reported(arch, at, pc)
    out.append([pc, at[pc][1], kind, t])
    pc = at[pc][4] if kind == "INST:JUMP" else at[pc][3]
  return out

@pytest.fixture(scope="module", params=ARCHS)
def traced(request):
  arch = request.param
  if (why := llvm_missing(arch)) is not None: pytest.skip(why)
  return arch, run_json(CHILD, dev=f"MOCKKFD+AMD:LLVM:{arch}", env=SQTT_ENV)

def test_results_and_one_blob_per_shader_engine(traced):
  arch, res = traced
  assert res["out"] == [5.0, 7.0, 9.0] and res["red"] == [512.0] * 64
  n = ENGINES[arch]
  for name in res["kernels"]:
    evs = sorted(ev[1:] for ev in res["events"] if ev[0] == name)
    assert [se for se, _, _ in evs] == list(range(n))
    assert [it for _, it, _ in evs] == [True, True] + [False] * (n - 2)   # SQTT_ITRACE_SE_MASK=0b11
    assert all(size > 0 and (size - 8 * arch.startswith("gfx9")) % 32 == 0 for _, _, size in evs)   # gfx9: tinygrad's 8-byte header

def test_instruction_stream_matches_the_code_object(traced):
  arch, res = traced
  k = res["kernels"]["E_3"]
  assert k["starts"] == 1 and k["sorted"]                                        # E_3: one wave, timestamps monotonic
  assert isinstance(k["viz"], int) and k["viz"] > 0                             # tinygrad's VIZ timeline renders it
  (wave,) = k["waves"]
  wave, at = with_pcs(arch, k["code"], wave), {c[0]: c for c in k["code"]}
  code = [c for c in k["code"] if c[2] not in SKIPPED and expected_kind(arch, c[2]) is not None]
  code = code[:next(i for i, c in enumerate(code) if c[2] == "s_endpgm") + 1]
  assert [(pc, text) for pc, text, _, _ in wave] == [(c[0], c[1]) for c in code]   # straight-line code, in order
  for pc, _, kind, _ in wave: assert kind.startswith(expected_kind(arch, at[pc][2])), (at[pc][2], kind)
  times = [t for _, _, _, t in wave]
  assert times == sorted(times) and times[-1] > times[0]

def test_reduction_waves_follow_their_branches_to_s_endpgm(traced):
  arch, res = traced
  (name,) = [n for n in res["kernels"] if n.startswith("r_")]
  k = res["kernels"][name]
  assert k["sorted"] and k["waves"] and k["starts"] >= len(k["waves"])
  # VIZ: on CDNA `map_insts` never releases a wave slot at CDNA_WAVEEND, so it asserts once a slot of CU 0 / SIMD 0 is reused
  assert arch.startswith("gfx9") or isinstance(k["viz"], int) and k["viz"] > 0
  at = {c[0]: c for c in k["code"]}
  for wave in (with_pcs(arch, k["code"], w) for w in k["waves"]):
    assert at[wave[-1][0]][2] == "s_endpgm" and wave[-1][2] == "WAVEEND"
    for (pc, _, kind, _), (nxt, _, _, _) in zip(wave, wave[1:]):
      assert kind.startswith(expected_kind(arch, at[pc][2])), (at[pc][2], kind)
      assert nxt == first_reported(arch, at, at[pc][4] if kind == "INST:JUMP" else at[pc][3])

# ---- the trace unit's registers, driven directly (no compiler needed) ----

BUF, CODE = 0x7f0000123000, 0x10000
# gfx9 token_mask tinygrad sets on an instruction-traced SE: MISC, TIME, REG, WAVE_START, REG_CS, WAVE_END, INST, INST_PC, USERDATA,
# ISSUE, REG_CS_PRIV
GFX9_TOKENS = sum(1 << b for b in (0, 1, 2, 3, 5, 6, 10, 11, 12, 13, 15))

def sqtt_start_writes(gc:int, size:int) -> list[tuple[str, dict]]:
  """The per-shader-engine register writes of tinygrad 0.14.0's AMDComputeQueue.sqtt_start (ops_amd.py) on GC `gc`, tracing SE 0
  with instruction tracing on (SQTT_ITRACE_SE_MASK bit set); register names after regSQ_THREAD_TRACE_."""
  lo, hi = (BUF >> 12) & 0xffffffff, BUF >> 44
  if gc == 9:
    return [("MASK", {"simd_en": 0xf, "cu_sel": 0}), ("TOKEN_MASK", {"token_mask": GFX9_TOKENS, "reg_mask": 0xf}), ("BASE", {"addr": lo}),
            ("BASE2", {"addr_hi": hi}), ("SIZE", {"size": size >> 12}), ("CTRL", {"reset_buffer": 1}),
            ("MODE", {"mask_cs": 1, "autoflush_en": 1, "mode": 1})]
  buf = [("BUF0_SIZE", {"size": size >> 12}), ("BUF0_BASE_LO", {"base_lo": lo}), ("BUF0_BASE_HI", {"base_hi": hi})] if gc == 12 else \
        [("BUF0_SIZE", {"base_hi": hi, "size": size >> 12}), ("BUF0_BASE", {"base_lo": lo})]
  return buf + [("MASK", {"simd_sel": 0, "wgp_sel": 0, "sa_sel": 0}), ("TOKEN_MASK", {"token_exclude": 0}), ("CTRL", {"mode": 1})]

@pytest.mark.parametrize("arch,gc", [("gfx1100", (11, 0, 0)), ("gfx1201", (12, 0, 1)), ("gfx942", (9, 4, 3)), ("gfx950", (9, 5, 0))])
def test_trace_registers_buffer_write_pointer_and_gate(arch, gc):
  import numpy as np
  from emu.amd.api import DispatchStats
  from emu.amd.arch import get_spec
  from emu.common.memory import MemoryMap
  from tinygrad.renderer.amd import sqtt
  from mockgpu.clock import DeviceClock
  from mockgpu.amd.sqtt import ThreadTrace
  spec, mem, size = get_spec(arch), MemoryMap(), 0x2000
  mem.map(BUF, size, backing=np.zeros(size, np.uint8)), mem.map(CODE, 0x1000, backing=np.zeros(0x1000, np.uint8))
  mem.write(CODE, spec.ins.s_endpgm().to_bytes())
  tt = ThreadTrace(arch, gc, 4, 1 if gc[0] == 9 else 2, mem, DeviceClock())
  reg = lambda name: getattr(tt.gc, f"regSQ_THREAD_TRACE_{name}")
  write = lambda name, fields: tt.write_reg(reg(name).addr[0], reg(name).encode(**fields))
  grbm = lambda se=None: tt.write_reg(tt.gc.regGRBM_GFX_INDEX.addr[0], tt.gc.regGRBM_GFX_INDEX.encode(
    **({"se_broadcast_writes": 1} if se is None else {"se_index": se}), **{"sh_broadcast_writes" if gc[0] == 9 else "sa_broadcast_writes": 1}))
  calls = []
  def run(d, timing=None):
    calls.append(timing is not None)
    if timing is not None:
      timing.start(1, spec.wave_sizes[-1 if gc[0] == 9 else 0])
      timing.timeline += [(0, -1, 3, "start", False), (0, CODE, 20, "end", False)]
    return DispatchStats(cycles=20, clock_mhz=2000.0)
  grbm(0)
  for name, fields in sqtt_start_writes(gc[0], size): write(name, fields)
  grbm()
  if gc[0] != 9: tt.write_reg(tt.gc.regCOMPUTE_THREAD_TRACE_ENABLE.addr[0], 1)
  tt.dispatch(run, None)
  grbm(0)
  units = (tt.read_reg(reg("WPTR").addr[0]) - (BUF // 32 if gc[:2] == (11, 0) else 0)) & 0x1FFFFFFF   # GC 11.0 counts from address 0
  data = mem.read(BUF, units * 32)
  prefix = sqtt.LAYOUT_HEADER.encoding.default.to_bytes(8, "little") if gc[0] == 9 else b""   # tinygrad's gfx9 blob header
  start, end = {11: (sqtt.WAVESTART, sqtt.WAVEEND), 12: (sqtt.WAVESTART_RDNA4, sqtt.WAVEEND_RDNA4),
                9: (sqtt.CDNA_WAVESTART, sqtt.CDNA_WAVEEND)}[gc[0]]
  got = [(type(p), p._time, p.wave, p.simd) for p in sqtt.decode(prefix + data) if isinstance(p, (start, end))]
  assert got == [(start, 0 if gc[0] == 9 else 3, 0, 0), (end, 20, 0, 0)]   # CDNA time in 4-cycle ticks
  grbm()
  write("MODE" if gc[0] == 9 else "CTRL", {"mode": 0})   # sqtt_stop: tracing off, the next dispatch runs untraced
  tt.dispatch(run, None)
  assert calls == [True, False]

ROUND_TRIP = """
from tinygrad import Tensor, Device, dtypes
a, b = Tensor([1., 2., 3.]).realize(), Tensor([4., 5., 6.]).realize()
plus = [(a + b).realize().tolist(), (b + a).realize().tolist()]          # one program, two dispatches
h = Tensor.ones(32, 32, dtype=dtypes.half).contiguous().realize()
mm = (h @ h).float().sum().item()                                       # WMMA / MFMA where the renderer uses them
red = Tensor.ones(16, 256).contiguous().realize().sum(axis=1).tolist()   # LDS and barriers
Device["AMD"].synchronize()
print(json.dumps({"plus": plus, "mm": mm, "red": red}))
"""

@pytest.mark.parametrize("arch", ARCHS)
def test_the_profile_pickle_compares_exactly_with_a_replay(arch, tmp_path):
  """tinygrad's own profile pickle of a run, read by the trace comparison (`python -m emu.timing compare`) as a hardware capture:
  replaying each dispatch on a fresh emulator gives the same issue deltas and the same duration (CDNA stamps are 4-cycle ticks,
  and its instruction packets carry no PCs: the loader follows the code, traces.cdna_insts). Checks the chain end to end: the
  encoder, tinygrad's pickle, the trace loader (target, one kernel per dispatch, launch size from the kernel name, per-engine
  time bases) and the replay (driver, placement)."""
  if (why := llvm_missing(arch)) is not None: pytest.skip(why)
  # tinygrad writes profile.pkl.$USER to its temp folder as it exits
  res = run_json("import json\n" + ROUND_TRIP, dev=f"MOCKKFD+AMD:LLVM:{arch}", env=SQTT_ENV | {"TMPDIR": str(tmp_path)})
  assert res == {"plus": [[5.0, 7.0, 9.0]] * 2, "mm": 32.0 ** 3, "red": [256.0] * 16}
  results = compare_file(tmp_path / f"profile.pkl.{getpass.getuser()}")
  assert [r.name for r in results].count("E_3") == 2 and len(results) >= 5, [r.name for r in results]
  tick = 4 if arch.startswith("gfx9") else 1
  for r in results:
    assert r.error is None and r.unmatched == 0 and r.hw_cycles > 0, (r.name, r.error, r.unmatched)
    assert abs(r.emu_cycles - r.hw_cycles) < tick, (r.name, r.hw_cycles, r.emu_cycles)
    assert [d for d in r.deltas if d.error] == [], r.name
  assert sum(len(r.deltas) for r in results) > 500
