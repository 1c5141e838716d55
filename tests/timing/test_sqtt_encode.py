"""SQTT encoding (emu/timing/sqtt_encode.py) read back by the wheel's decoder (`tinygrad.renderer.amd.sqtt`).

Every packet type the encoder emits is decoded at every kind of time gap (in its own delta field, via TS_DELTA_SHORT, via
TS_DELTA_OR_MARK). Instruction-packet classes are checked against what real gfx1100 traces report for the same instructions
(the shipped captures and the decoder's documented encodings), and a replay of a real trace's code object, encoded and mapped
with `map_insts`, must give the instruction sequence the hardware trace gives."""
from pathlib import Path
import pytest
from tinygrad.renderer.amd import sqtt
from tinygrad.renderer.amd.dsl import NULL, s, v
from tinygrad.runtime.autogen.amd.rdna3 import ins
from emu.amd.arch import get_spec
from emu.amd.decode import decode
from emu.amd.steps import compile_step
from emu.amd.timing import classify
from emu.timing.traces import load_trace
from emu.timing.sqtt_encode import (EXCLUDE_INST, EXCLUDE_VALUINST, EngineTrace, Shape, StreamWriter, Unit, Wave, encode, issue_packet,
                                    pack)

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "sqtt" / "gfx1100"
SPEC = get_spec("gfx1100")
GAPS = [0, 1, 2, 3, 4, 7, 8, 19, 20, 26, 27, 1000, 123456, (1 << 36) + 77]
PACKETS = [(sqtt.WAVESTART, {"sa": 1, "wgp": 5, "simd": 2, "wave": 13}), (sqtt.WAVEEND, {"sa": 1, "wgp": 3, "simd": 3, "wave": 15}),
           (sqtt.VALUINST, {"wave": 7}), (sqtt.IMMEDIATE, {"wave": 9})] + \
          [(sqtt.INST, {"wave": 4, "op": op.value}) for op in sqtt.InstOp if not op.name.startswith("OTHER_")]

def real(packets): return [p for p in packets if not isinstance(p, (sqtt.NOP, sqtt.TS_DELTA_SHORT, sqtt.TS_DELTA_OR_MARK))]

def test_empty_stream_is_a_layout_3_header_padded_to_write_pointer_units():
  data = StreamWriter().data()
  (hdr,) = real(sqtt.decode(data))
  assert isinstance(hdr, sqtt.LAYOUT_HEADER) and hdr.layout == 3 and hdr._time == 0 and len(data) % 32 == 0

@pytest.mark.parametrize("cls,fields", PACKETS, ids=lambda x: x.__name__ if isinstance(x, type) else str(x.get("op", "")))
def test_every_packet_type_decodes_at_every_gap(cls, fields):
  w, times = StreamWriter(), []
  for gap in GAPS:
    times.append(w.time + gap)
    w.packet(times[-1], cls, **fields)
  got = real(sqtt.decode(w.data()))[1:]
  assert [type(p) for p in got] == [cls] * len(GAPS)
  assert [p._time for p in got] == times
  assert all(getattr(p, k) == (sqtt.InstOp(val) if k == "op" else val) for p in got for k, val in fields.items())

def test_out_of_order_and_oversized_fields_are_errors():
  w = StreamWriter()
  w.packet(10, sqtt.VALUINST, wave=0)
  with pytest.raises(ValueError, match="time order"): w.packet(9, sqtt.VALUINST, wave=0)
  with pytest.raises(ValueError, match="wave=32"): pack(sqtt.VALUINST, wave=32)

# instruction -> (timing class, packet) as the gfx1100 captures report it (plus/sync kernels), or as the decoder's InstOp
# documentation lists it (store sizes / address modes, transcendental, branches)
def _i(inst): return decode(inst.to_bytes(), SPEC)
HW_CLASSES = [
  (ins.s_load_b64(sdata=s[0:1], sbase=s[0:1], offset=16), "smem", False, (sqtt.INST, sqtt.InstOp.SMEM_RD)),
  (ins.global_load_b32(vdst=v[1], addr=v[0], saddr=s[6:7]), "vmem_load", False, (sqtt.INST, sqtt.InstOp.SGMEM_RD_1)),
  (ins.global_load_b32(vdst=v[1], addr=v[0:1], saddr=NULL), "vmem_load", False, (sqtt.INST, sqtt.InstOp.SGMEM_RD_2)),
  (ins.global_store_b32(addr=v[0], data=v[1], saddr=s[4:5]), "vmem_store", False, (sqtt.INST, sqtt.InstOp.SGMEM_WR_2)),
  (ins.global_store_b32(addr=v[0:1], data=v[1], saddr=NULL), "vmem_store", False, (sqtt.INST, sqtt.InstOp.SGMEM_WR_3)),
  (ins.global_store_b128(addr=v[0], data=v[4:7], saddr=s[4:5]), "vmem_store", False, (sqtt.INST, sqtt.InstOp.SGMEM_WR_5)),
  (ins.global_store_b128(addr=v[0:1], data=v[4:7], saddr=NULL), "vmem_store", False, (sqtt.INST, sqtt.InstOp.SGMEM_WR_6)),
  (ins.ds_store_b32(addr=v[0], data0=v[1]), "lds", False, (sqtt.INST, sqtt.InstOp.LDS_WR_2)),
  (ins.ds_load_b32(vdst=v[1], addr=v[0]), "lds", False, (sqtt.INST, sqtt.InstOp.LDS_RD)),
  (ins.s_waitcnt(simm16=0), "waitcnt", False, (sqtt.IMMEDIATE, None)),
  (ins.s_clause(simm16=1), "other", False, (sqtt.IMMEDIATE, None)),
  (ins.s_barrier(), "barrier", False, (sqtt.INST, sqtt.InstOp.BARRIER)),
  (ins.v_add_f32_e32(v[1], v[1], v[2]), "valu", False, (sqtt.VALUINST, None)),
  (ins.v_exp_f32_e32(v[1], v[2]), "trans", False, (sqtt.INST, sqtt.InstOp.VALUT_4)),
  (ins.s_branch(simm16=3), "branch", True, (sqtt.INST, sqtt.InstOp.JUMP)),
  (ins.s_cbranch_scc0(simm16=3), "branch", False, (sqtt.INST, sqtt.InstOp.JUMP_NO)),
  (ins.s_mov_b32(s[0], s[1]), "salu", False, (sqtt.INST, sqtt.InstOp.SALU)),
]

@pytest.mark.parametrize("inst,cls,taken,want", HW_CLASSES, ids=lambda x: repr(x).split("(")[0] if not isinstance(x, (str, bool, tuple)) else None)
def test_issue_packets_match_hardware(inst, cls, taken, want):
  assert issue_packet(cls, _i(inst), taken) == want

def test_s_delay_alu_and_s_endpgm_have_no_instruction_packet():
  assert issue_packet("delay", _i(ins.s_delay_alu(simm16=1)), False) is None and issue_packet("end", _i(ins.s_endpgm()), False) is None

def test_encode_waves_slots_units_and_exclusions():
  code = [ins.v_mov_b32_e32(v[0], 0), ins.s_waitcnt(simm16=0), ins.s_endpgm()]
  pcs, addr = {}, 0x1000
  for c in code: pcs[addr], addr = _i(c), addr + _i(c).size
  issues = lambda t: [(t + 10 + i, pc, cls) for i, (pc, cls) in enumerate(zip(pcs, ("valu", "waitcnt", "end")))]
  traced = Unit(0, 0, 0, 0)
  waves = [Wave(traced, 0, issues(0)), Wave(traced, 1, issues(1)), Wave(traced, 50, issues(50)), Wave(Unit(0, 1, 2, 3), 5, issues(5)),
           Wave(Unit(1, 0, 0, 0), 0, issues(0))]
  engines = {0: EngineTrace(traced)}
  encode(engines, waves, 100, pcs.__getitem__)
  got = real(sqtt.decode(engines[0].writer.data()))[1:]
  starts = [(p._time, p.cu, p.simd, p.wave) for p in got if isinstance(p, sqtt.WAVESTART)]
  assert starts == [(100, 0, 0, 0), (101, 0, 0, 1), (105, 2 | 8, 3, 0), (150, 0, 0, 0)]   # slot 0 is free again after wave 0 ends
  ends = sorted((p._time, p.cu, p.simd, p.wave) for p in got if isinstance(p, sqtt.WAVEEND))
  assert ends == [(112, 0, 0, 0), (113, 0, 0, 1), (117, 10, 3, 0), (162, 0, 0, 0)]
  insts = [(type(p).__name__, p._time, p.wave) for p in got if isinstance(p, (sqtt.VALUINST, sqtt.IMMEDIATE))]
  # only the traced SIMD, same-cycle issues in wave order; the other engine's wave is not in SE 0's stream
  assert insts == [("VALUINST", 110, 0), ("IMMEDIATE", 111, 0), ("VALUINST", 111, 1), ("IMMEDIATE", 112, 1), ("VALUINST", 160, 0),
                   ("IMMEDIATE", 161, 0)]
  quiet = {0: EngineTrace(traced, EXCLUDE_INST | EXCLUDE_VALUINST)}
  encode(quiet, waves[:1], 0, pcs.__getitem__)
  assert [type(p).__name__ for p in real(sqtt.decode(quiet[0].writer.data()))[1:]] == ["WAVESTART", "IMMEDIATE", "WAVEEND"]

def test_shape_places_cus_on_wgps_like_the_traces():
  sh = Shape(6, 2)
  assert [sh.unit(0, s) for s in (0, 1)] == [Unit(0, 0, 0, 0), Unit(0, 0, 0, 2)]   # sync: one workgroup on SIMDs 0 and 2 of a WGP
  assert sh.unit(1, 0) == Unit(0, 0, 0, 1) and sh.unit(2, 0) == Unit(1, 0, 0, 0) and sh.unit(12, 1) == Unit(0, 1, 0, 2)
  assert sh.unit(95, 1) == Unit(5, 1, 3, 3)

@pytest.mark.skipif(not TRACES.is_dir(), reason=f"shipped SQTT traces not present at {TRACES}")
@pytest.mark.parametrize("name", ["profile_plus_run_0.pkl", "profile_sync_run_0.pkl"])
def test_hardware_issue_streams_reencode_to_the_same_instructions_and_cycles(name):
  """The traced waves of a real capture, re-encoded from their (PC, cycle) issues, map back to the same instructions at the same cycles."""
  kernels = [k for k in load_trace(TRACES / name) if k.waves]
  assert kernels
  for k in kernels:
    instr_at = {i.pc: decode(i.inst.to_bytes(), SPEC) for w in k.waves for i in w.issues}.__getitem__
    waves = [Wave(Unit(0, 0, 0, 0), w.start, [(i.cycle, i.pc, classify(compile_step(instr_at(i.pc), SPEC, i.pc)).cls) for i in w.issues])
             for w in k.waves]
    eng = {0: EngineTrace(Unit(0, 0, 0, 0))}
    encode(eng, waves, 0, instr_at)
    seqs: dict[int, list[tuple[int, int, str]]] = {}
    for p, info in sqtt.map_insts(eng[0].writer.data(), k.lib, "gfx1100"):
      if info is not None: seqs.setdefault(info.wave, []).append((info.pc, p._time, repr(info.inst)))
    assert list(seqs.values()) == [[(i.pc, i.cycle, repr(i.inst)) for i in w.issues] for w in k.waves], k.name
