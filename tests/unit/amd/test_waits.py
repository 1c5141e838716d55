"""Wait instructions come from one table (emu.amd_ops): every wait opcode of every arch is in it, and the executors, the pcode
overrides and the timing model read the same facts. Expected counts are the immediates' fields as LLVM's gfx12 encoding lays
them out (load/store count in bits 13:8, DS count in bits 5:0), worked by hand."""
import pytest
from emu import amd_ops as waits
from emu.amd.api import ARCHS
from emu.amd.arch import get_spec
from emu.amd.decode import decode, encode_fields
from emu.amd.facts import opcodes
from emu.amd.step_build import compile_step
from emu.amd.timing import classify
from emu.pcode.overrides import EXECUTOR_OWNED


def _wait_encodings(arch):
  """(name, class, opcode) of every SOPP/SOPK opcode of the arch whose name says it waits."""
  for cname, cls, op in opcodes(arch):
    if cname in ("SOPP", "SOPK") and (op.name.startswith("S_WAIT") or op.name in waits.UNISSUED): yield op.name, cls, op


def _timing(arch, cls, op, simm16):
  spec = get_spec(arch)
  return classify(compile_step(decode(encode_fields(cls, {"op": op.value, "simm16": simm16}), spec), spec, 0))


@pytest.mark.parametrize("arch", ARCHS)
def test_every_wait_opcode_is_in_the_table_and_every_consumer_agrees(arch):
  seen = list(_wait_encodings(arch))
  assert seen
  for name, cls, op in seen:
    known = name == waits.PACKED_WAIT or name in waits.COUNTER_WAITS or name in waits.OTHER_WAITS or name in waits.UNISSUED
    assert known, f"{arch} {name}: a wait the table does not know"
    assert waits.effect(name) == "none" and name in EXECUTOR_OWNED, name
    t = _timing(arch, cls, op, 0)
    if name in waits.UNISSUED: assert t.cls == "delay", name
    elif name in waits.OTHER_WAITS: assert t.cls == "other", name
    else: assert t.cls == "waitcnt", name


@pytest.mark.parametrize("name, simm16, expected", [
  ("S_WAIT_LOADCNT_DSCNT", 0x0203, (("vm", 2), ("ds", 3))),
  ("S_WAIT_STORECNT_DSCNT", 0x0a05, (("vs", 10), ("ds", 5))),
  ("S_WAIT_LOADCNT_DSCNT", 0x3f00, (("vm", 63), ("ds", 0))),
  ("S_WAIT_KMCNT", 0x0003, (("km", 3),)),
  ("S_WAIT_EXPCNT", 0x0002, ()),
])
def test_gfx12_wait_immediates(name, simm16, expected):
  enc = {n: (cls, op) for n, cls, op in _wait_encodings("gfx1201")}
  assert _timing("gfx1201", *enc[name], simm16).waits == expected
