"""Every executor-owned op (emu.pcode.overrides.EXECUTOR_OWNED) of every table, run through the executor with zero fields. Expectations
from the ISA's description of each group, not from the emulator: waits, scheduling and cache hints, prefetches and (with no
debugger attached) the debugger branches change no register, SCC or memory; s_endpgm_saved / s_endpgm_ordered_ps_done /
s_sendmsghalt end the wave; s_trap traps; the graphics and ray-tracing ops, trap return, fork/join and GS registers, which the
emulator does not model, are an illegal instruction naming the op (or its unemulated format), never a silent no-op."""
import pytest
from emu.amd import run_program
from emu.amd.api import GPUIllegalInstruction, GPUTrapFault
from emu.amd_ops import OWNED
from emu.amd.step_build import EXECUTOR_STEPS
from emu.pcode.overrides import EXECUTOR_OWNED
from fuzz import amd_exec
from fuzz.amd_fields import encode_fields

CPU = {"rdna3": "gfx1100", "rdna4": "gfx1201", "cdna": "gfx942"}
# modelled elsewhere (their own tests): barriers, DS swizzle/counters, message returns, mode writes, VGPR indexing, s_sethalt
NO_EFFECT = {n for n, o in OWNED.items() if o.effect == "none"}
ENDS = {n for n, o in OWNED.items() if o.effect in ("end", "halt")}
OWN_TESTS = {n for n, o in OWNED.items() if o.effect in ("barrier", "message", "mode")} | set(EXECUTOR_STEPS) | \
  {"S_SET_GPR_IDX_ON", "S_SETHALT", "S_ENDPGM", "S_WAITCNT", "S_BARRIER_WAIT", "S_SENDMSG"}

def encodings(arch:str) -> dict:
  """{op name: (class name, zero-field instruction bytes)} for the executor-owned ops of an arch's tables."""
  out = {}
  for cname, cls in sorted(amd_exec.inst_classes(arch).items()):
    if any(v in cname for v in ("_LIT", "DPP", "SDWA")): continue
    for op in amd_exec.ops_of(cls):
      if op is None or op.name not in EXECUTOR_OWNED or op.name in out: continue
      out[op.name] = (cname, encode_fields(cls, {**{n: 0 for n, _ in cls._fields}, "op": op.value}))
  return out

def state(arch:str, code:list[bytes]):
  lanes = 64 if arch == "cdna" else 32
  st = run_program(code, arch=CPU[arch], lanes=lanes, sgprs={5: 0x1111, 6: 0x2222}, vgprs={1: 0x3333}, scc=1)
  return st.sgpr[0].copy(), st.vgpr[0].copy(), int(st.scc[0])

@pytest.mark.parametrize("arch", CPU)
def test_no_effect_ops_change_nothing(arch):
  ops = {n: e for n, e in encodings(arch).items() if n in NO_EFFECT}
  assert len(ops) >= 15, sorted(ops)
  sgpr0, vgpr0, scc0 = state(arch, [])
  for name, (cname, raw) in ops.items():
    sgpr, vgpr, scc = state(arch, [raw])
    assert (sgpr == sgpr0).all() and (vgpr == vgpr0).all() and scc == scc0, f"{name} ({cname})"

@pytest.mark.parametrize("arch", CPU)
def test_wave_ending_ops_end_the_wave(arch):
  ops = {n: e for n, e in encodings(arch).items() if n in ENDS - {"S_ENDPGM", "S_SETHALT"}}
  assert ops, arch
  mov = amd_exec.spec(arch).ins.s_mov_b32(amd_exec.spec(arch).ins.s[5], 0x77).to_bytes()
  for name, (cname, raw) in ops.items():
    assert int(state(arch, [raw, mov])[0][5]) == 0x1111, f"{name} ({cname}) did not end the wave"

@pytest.mark.parametrize("arch", CPU)
def test_unmodelled_executor_ops_are_illegal_instructions(arch):
  ops = {n: e for n, e in encodings(arch).items() if n not in NO_EFFECT | ENDS | OWN_TESTS}
  assert ops, arch
  for name, (cname, raw) in ops.items():
    if name == "S_TRAP":
      with pytest.raises(GPUTrapFault): state(arch, [raw])
      continue
    with pytest.raises(GPUIllegalInstruction) as e: state(arch, [raw])
    assert name in str(e.value) or "cannot decode" in str(e.value), (name, str(e.value))
