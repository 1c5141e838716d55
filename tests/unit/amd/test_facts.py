"""Every opcode of every arch through its emu.amd.facts record: the deciders of one instruction's facts (the executor-owned
table emu.amd_ops.OWNED, the pcode overrides, the step builder, the timing classifier, the SQTT layouts, native-region
candidacy) agree with one another. Expectations are the ISA's: a wave end is timed as the end and reported as the wave-end
packet, a barrier parks the wave, a wait the instruction buffer consumes is never issued nor reported, an op without an
architectural effect may sit inside a native region, an op the emulator does not model is an illegal instruction naming it."""
import pytest
from emu import amd_ops
from emu.amd.api import ARCHS
from emu.amd.arch import get_spec
from emu.amd.exec_salu import ControlStep
from emu.amd.facts import LAYOUTS, facts, opcodes
from emu.amd.step_build import EFFECT_STEPS, EXECUTOR_STEPS
from emu.pcode import compile_op
from emu.pcode.abi import Unsupported

STEP_EFFECT = {"none": None, "halt": None, "end": "end", "barrier": "barrier", "trap": "trap"}   # ControlStep.effect (zero fields)
TIMING = {"end": "end", "barrier": "barrier"}   # the timing class of a wave end and a barrier arrive
ISSUED = ("salu", "valu", "trans", "smem", "vmem_load", "vmem_store", "lds", "branch")   # classes every layout reports

def _kind(arch, op):
  try: return compile_op(arch, op).kind
  except Unsupported: return None

def _records(arch):
  return [facts(arch, cname, cls, op) for cname, cls, op in opcodes(arch)]

@pytest.fixture(scope="module", params=ARCHS)
def records(request):
  return request.param, _records(request.param)

def test_the_walk_sees_every_kind_of_instruction(records):
  arch, rs = records
  assert len(rs) > 1500, len(rs)
  classes = {r.timing.cls for r in rs if r.timing}
  assert set(ISSUED) - {"trans"} <= classes and {"end", "barrier", "waitcnt", "nop"} <= classes, classes
  assert {r.owned.effect for r in rs if r.owned} >= {"none", "end", "barrier", "trap", "illegal"}

def test_owned_ops_are_the_pcode_executor_kind(records):
  arch, rs = records
  for r in rs: assert (r.owned is not None) == (_kind(arch, r.op) == "executor"), (arch, r.encoding, r.name)

def test_the_step_does_what_the_table_says(records):
  arch, rs = records
  for r in rs:
    if r.owned is None: continue
    where, effect = (arch, r.encoding, r.name), r.owned.effect
    if effect == "illegal":
      assert r.step is None and (r.name in r.problem or "cannot decode" in r.problem), where
    elif r.step is None: assert "cannot decode" in r.problem or "does not exist" in r.problem, (where, r.problem)
    elif effect == "step": assert type(r.step) is EXECUTOR_STEPS[r.name], where
    elif effect in EFFECT_STEPS: assert type(r.step) is EFFECT_STEPS[effect], where
    else: assert type(r.step) is ControlStep and r.step.effect == STEP_EFFECT[effect], where

def test_timing_agrees_with_the_table(records):
  arch, rs = records
  for r in rs:
    if r.timing is None: continue
    where, cls, effect = (arch, r.encoding, r.name), r.timing.cls, r.owned.effect if r.owned else None
    if effect in TIMING: assert cls == TIMING[effect], where
    if cls in TIMING.values(): assert TIMING.get(effect) == cls, where
    waits = r.name == amd_ops.PACKED_WAIT or r.name in amd_ops.COUNTER_WAITS
    assert (cls == "waitcnt") == waits, where
    assert (cls == "delay") == (r.name in amd_ops.UNISSUED), where
    assert (cls == "nop") == (r.name in amd_ops.PAUSES), where
    if cls in ISSUED or cls == "other": assert effect not in ("end", "barrier", "illegal"), where

def test_sqtt_reports_what_is_issued(records):
  arch, rs = records
  layout = LAYOUTS[get_spec(arch).family]
  for r in rs:
    if r.timing is None: continue
    where, cls = (arch, r.encoding, r.name, r.sqtt), r.timing.cls
    if cls == "end": assert r.sqtt == layout.wave_end.__name__, where
    elif cls == "delay": assert r.sqtt == "", where
    elif cls in ISSUED: assert r.sqtt and r.sqtt != "IMMEDIATE", where

def test_region_candidacy_follows_the_effect(records):
  arch, rs = records
  for r in rs:
    if r.owned is None or r.step is None: continue
    # zero fields: s_sethalt 0 resumes (no effect) like the 'none' ops; ends, barriers, traps, messages and mode writes never join
    assert r.region == (r.owned.effect in ("none", "halt")), (arch, r.encoding, r.name)

def test_every_effect_named_is_known():
  assert {o.effect for o in amd_ops.OWNED.values()} <= set(amd_ops.EFFECTS)
  assert set(EXECUTOR_STEPS) == {n for n, o in amd_ops.OWNED.items() if o.effect == "step"}
