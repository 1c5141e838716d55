"""SQTT encoding (emu/amd/sqtt_encode.py, emu/amd/sqtt_layouts.py) read back by the wheel's decoder (`tinygrad.renderer.amd.sqtt`).

Per layout (RDNA3 / gfx1100, RDNA4 / gfx1201, CDNA / gfx950), every packet type the encoder emits is decoded at every kind of time
gap (in its own delta field, via the layout's timestamp packets). Instruction-packet classes are checked against what the real
captures report: a real capture's traced waves, re-encoded from their (PC, cycle) issues and mapped with `map_insts`, must give
the instructions, cycles and packet kinds the hardware trace gives (gfx1100, gfx1200). The gfx950 captures trace no instructions
(their waves ran on shader engines without instruction tracing), so for CDNA the captured wave start/end packets are re-encoded,
and the instruction types are checked against the decoder's InstOpCDNA names."""
from pathlib import Path
import pytest
from tinygrad.renderer.amd import sqtt
from tinygrad.renderer.amd.dsl import NULL, s, v
from tinygrad.runtime.autogen.amd.cdna import ins as cdna
from tinygrad.runtime.autogen.amd.rdna3 import ins
from tinygrad.runtime.autogen.amd.rdna4 import ins as rdna4
from tinygrad.viz.serve import amd_decode
from emu.amd.arch import get_spec
from emu.amd.decode import decode
from emu.amd.step_build import compile_step
from emu.amd.timing import classify
from emu.timing.traces import load_events, packets
from emu.amd.sqtt_encode import EngineTrace, Shape, Unit, Wave, encode
from emu.amd.sqtt_layouts import (CDNA_LAYOUT, CDNAWriter, EXCLUDE_INST, EXCLUDE_VALUINST, INCLUDE_INST, INCLUDE_WAVE_END, INCLUDE_WAVE_START,
                                     LAYOUTS, RDNA3_LAYOUT, RDNA4_LAYOUT, pack)

TRACES = Path(__file__).resolve().parents[2] / "data" / "sqtt"
SPECS = {lay: get_spec(arch) for lay, arch in ((RDNA3_LAYOUT, "gfx1100"), (RDNA4_LAYOUT, "gfx1201"), (CDNA_LAYOUT, "gfx950"))}
GAPS = [0, 1, 2, 3, 4, 7, 8, 19, 20, 26, 27, 1000, 1023, 1024, 4080, 4081, 4084, 123456, (1 << 36) + 77]
# tinygrad prepends a layout-0 LAYOUT_HEADER to gfx9 blobs (the hardware stream has none); the decoder then switches to CDNA tables
CDNA_PREFIX = pack(sqtt.LAYOUT_HEADER, layout=0).to_bytes(8, "little")
TIME_PACKETS = (sqtt.NOP, sqtt.TS_DELTA_SHORT, sqtt.TS_DELTA_OR_MARK, sqtt.TS_DELTA_OR_MARK_RDNA4, sqtt.CDNA_MISC, sqtt.CDNA_TIMESTAMP)

def blob(lay, data:bytes) -> bytes: return CDNA_PREFIX + data if lay is CDNA_LAYOUT else data
def real(packets): return [p for p in packets if not isinstance(p, TIME_PACKETS)]
def tick(lay, t:int) -> int: return t - t % 4 if lay is CDNA_LAYOUT else t   # CDNA timestamps count 4-cycle ticks

def emitted_packets(lay):
  """(packet class, fields) for every packet type and op `lay` can emit."""
  where = lay.wave_fields(1, 5, 2, 13) if lay is not CDNA_LAYOUT else lay.wave_fields(0, 9, 2, 7)
  ops = {RDNA3_LAYOUT: sqtt.InstOp, RDNA4_LAYOUT: sqtt.InstOpRDNA4, CDNA_LAYOUT: sqtt.InstOpCDNA}[lay]
  insts = [(lay.inst if lay is not CDNA_LAYOUT else sqtt.CDNA_INST, {**lay.inst_fields(3, 4), "op": op.value}) for op in ops
           if not op.name.startswith("OTHER_")]
  plain = [] if lay is CDNA_LAYOUT else [(sqtt.VALUINST, {"wave": 7}), (sqtt.IMMEDIATE, {"wave": 9})]
  return [(lay.wave_start, where), (lay.wave_end, where)] + plain + insts

PACKETS = [(lay, cls, f) for lay in LAYOUTS.values() for cls, f in emitted_packets(lay)]

@pytest.mark.parametrize("lay,header", [(RDNA3_LAYOUT, {"layout": 3, "sel_a": 6}), (RDNA4_LAYOUT, {"layout": 4, "sel_a": 6, "sel_b": 4, "flag4": 1}),
                                        (CDNA_LAYOUT, {"layout": 0})], ids=lambda x: getattr(x, "name", ""))
def test_empty_stream_is_the_layout_header_padded_to_write_pointer_units(lay, header):
  data = lay.writer().data()
  assert len(data) % 32 == 0
  (hdr, *rest) = list(sqtt.decode(blob(lay, data)))
  assert isinstance(hdr, sqtt.LAYOUT_HEADER) and all(getattr(hdr, k) == val for k, val in header.items())
  if lay is CDNA_LAYOUT:   # the hardware stream starts with an absolute timestamp anchoring the decoder's clock at 0
    assert isinstance(rest[0], sqtt.CDNA_TIMESTAMP) and rest[0].timestamp == 0 and all(p._time == 0 for p in rest)
  assert real(rest) == []

@pytest.mark.parametrize("lay,cls,fields", PACKETS, ids=lambda x: getattr(x, "name", None) or getattr(x, "__name__", None) or str(x.get("op", "")))
def test_every_packet_type_decodes_at_every_gap(lay, cls, fields):
  w, times = lay.writer(), []
  for gap in GAPS:
    times.append(w.time + gap)
    w.packet(times[-1], cls, **fields)
  got = real(sqtt.decode(blob(lay, w.data())))[1:]
  assert [type(p) for p in got] == [cls] * len(GAPS)
  assert [p._time for p in got] == [tick(lay, t) for t in times]
  assert all(getattr(p, k) == (p.op.__class__(val) if k == "op" else val) for p in got for k, val in fields.items())

@pytest.mark.parametrize("lay", LAYOUTS.values(), ids=lambda x: x.name)
def test_out_of_order_and_oversized_fields_are_errors(lay):
  w = lay.writer()
  cls, fields = emitted_packets(lay)[-1]
  w.packet(10, cls, **fields)
  with pytest.raises(ValueError, match="time order"): w.packet(9, cls, **fields)
  with pytest.raises(ValueError, match="wave=32"): pack(sqtt.VALUINST, wave=32)
  with pytest.raises(ValueError, match="wave=16"): pack(sqtt.CDNA_INST, wave=16)

# instruction -> (timing class, packet) as the gfx1100 captures report it (plus/sync kernels), or as the decoder's InstOp
# documentation lists it (store sizes / address modes, transcendental, branches)
def _i(inst, lay=RDNA3_LAYOUT): return decode(inst.to_bytes(), SPECS[lay])
def _info(inst, lay=RDNA3_LAYOUT):
  """(timing view, decoded instruction) of `inst` on the layout's arch."""
  instr = _i(inst, lay)
  return classify(compile_step(instr, SPECS[lay], 0)), instr
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
def test_rdna3_issue_packets_match_hardware(inst, cls, taken, want):
  info, instr = _info(inst)
  assert info.cls == cls and RDNA3_LAYOUT.issue(info, instr, taken) == want

# CDNA: no capture traces instructions; the types are the decoder's InstOpCDNA names for each kind of instruction
C = sqtt.InstOpCDNA
CDNA_CLASSES = [
  (cdna.s_load_dwordx2(sdata=s[0:1], sbase=s[0:1], offset=16), "smem", False, C.SMEM_RD),
  (cdna.s_store_dword(sdata=s[2], sbase=s[0:1], offset=16), "smem", False, C.SMEM_WR),
  (cdna.s_mov_b32(s[0], s[1]), "salu", False, C.SALU_32), (cdna.s_mov_b64(s[0:1], s[2:3]), "salu", False, C.SALU_64),
  (cdna.v_add_f32_e32(v[1], v[1], v[2]), "valu", False, C.VALU_32), (cdna.v_add_f64(v[0:1], v[2:3], v[4:5]), "valu", False, C.VALU_64),
  (cdna.v_exp_f32_e32(v[1], v[2]), "trans", False, C.VALU_32),
  (cdna.global_load_dword(vdst=v[1], addr=v[0], saddr=s[6:7]), "vmem_load", False, C.VMEM_RD),
  (cdna.global_store_dword(addr=v[0], data=v[1], saddr=s[4:5]), "vmem_store", False, C.VMEM_WR),
  (cdna.flat_load_dword(vdst=v[1], addr=v[0:1]), "vmem_load", False, C.FLAT_RD),
  (cdna.ds_read_b32(vdst=v[1], addr=v[0]), "lds", False, C.LDS),
  (cdna.s_branch(simm16=3), "branch", True, C.JUMP), (cdna.s_cbranch_scc0(simm16=3), "branch", False, C.NEXT),
  (cdna.s_sendmsg(simm16=3), "other", False, C.OTHER_MSG),
]

@pytest.mark.parametrize("inst,cls,taken,op", CDNA_CLASSES, ids=lambda x: repr(x).split("(")[0] if not isinstance(x, (str, bool, C)) else None)
def test_cdna_issue_packets_follow_the_decoders_instruction_types(inst, cls, taken, op):
  info, instr = _info(inst, CDNA_LAYOUT)
  assert info.cls == cls and CDNA_LAYOUT.issue(info, instr, taken) == (sqtt.CDNA_INST, op)

@pytest.mark.parametrize("lay,code", [(RDNA3_LAYOUT, [ins.s_delay_alu(simm16=1), ins.s_endpgm()]),
                                      (RDNA4_LAYOUT, [rdna4.s_delay_alu(simm16=1), rdna4.s_wait_alu(simm16=0), rdna4.s_barrier_wait(simm16=0xffff),
                                                      rdna4.s_endpgm()]),
                                      (CDNA_LAYOUT, [cdna.s_waitcnt(simm16=0), cdna.s_nop(simm16=0), cdna.s_barrier(), cdna.s_endpgm()])],
                         ids=lambda x: getattr(x, "name", ""))
def test_unreported_instructions_have_no_instruction_packet(lay, code):
  for inst in code:
    info, instr = _info(inst, lay)
    assert lay.issue(info, instr, False) is None, instr.name

def _program(lay, code):
  pcs, addr = {}, 0x1000
  for c in code: pcs[addr], addr = compile_step(_i(c, lay), SPECS[lay], addr), addr + _i(c, lay).size
  return pcs

def test_encode_waves_slots_units_and_exclusions():
  pcs = _program(RDNA3_LAYOUT, [ins.v_mov_b32_e32(v[0], 0), ins.s_waitcnt(simm16=0), ins.s_endpgm()])
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

def test_rdna4_wave_packets_carry_four_bit_wgps():
  pcs = _program(RDNA4_LAYOUT, [rdna4.v_mov_b32_e32(v[0], 0), rdna4.s_endpgm()])
  issues = [(10, pc, cls) for pc, cls in zip(pcs, ("valu", "end"))]
  issues[1] = (11, *issues[1][1:])
  eng = {0: EngineTrace(Unit(0, 1, 9, 1), layout=RDNA4_LAYOUT)}
  encode(eng, [Wave(Unit(0, 1, 9, 1), 0, issues), Wave(Unit(0, 0, 0, 0), 2, issues)], 0, pcs.__getitem__)
  got = [(type(p).__name__, p._time, getattr(p, "cu", None), getattr(p, "simd", None), p.wave) for p in real(sqtt.decode(eng[0].writer.data()))[1:]]
  assert got == [("WAVESTART_RDNA4", 0, 9 | 16, 1, 0), ("WAVESTART_RDNA4", 2, 0, 0, 0), ("VALUINST", 10, None, None, 0),
                 ("WAVEEND_RDNA4", 11, 9 | 16, 1, 0), ("WAVEEND_RDNA4", 11, 0, 0, 0)]

def test_cdna_traces_every_simd_of_the_traced_cu_in_4_cycle_ticks():
  pcs = _program(CDNA_LAYOUT, [cdna.v_mov_b32_e32(v[0], 0), cdna.s_waitcnt(simm16=0), cdna.s_endpgm()])
  issues = lambda t: [(t + 10 + 3 * i, pc, cls) for i, (pc, cls) in enumerate(zip(pcs, ("valu", "waitcnt", "end")))]
  waves = [Wave(Unit(0, 0, 2, s), 1 + s, issues(1 + s)) for s in range(4)] + [Wave(Unit(0, 0, 3, 0), 7, issues(7))]
  tokens = INCLUDE_WAVE_START | INCLUDE_WAVE_END | INCLUDE_INST
  eng = {0: EngineTrace(Unit(0, 0, 2, 0), tokens, CDNA_LAYOUT, simd_mask=0b1011)}
  encode(eng, waves, 1000, pcs.__getitem__)
  pkts = real(sqtt.decode(blob(CDNA_LAYOUT, eng[0].writer.data())))[1:]
  got = [(type(p).__name__[5:], p._time, getattr(p, "cu", None), p.simd, p.wave) for p in pkts]
  starts = [(t, cu, simd) for n, t, cu, simd, _ in got if n == "WAVESTART"]
  assert starts == [(1000, 2, 0), (1000, 2, 1), (1000, 2, 2), (1004, 2, 3), (1004, 3, 0)]   # cycles 1001..1004, 1007 in 4-cycle ticks
  insts = [(t, simd) for n, t, _, simd, _ in got if n == "INST"]   # s_waitcnt has no packet; SIMD 2 is not in the mask
  assert insts == [(1008, 0), (1012, 1), (1012, 3)]   # cycles 1011, 1012, 1014
  ends = [(t, cu, simd) for n, t, cu, simd, _ in got if n == "WAVEEND"]
  assert ends == [(1016, 2, 0), (1016, 2, 1), (1016, 2, 2), (1020, 2, 3), (1020, 3, 0)]
  starts_only = {0: EngineTrace(Unit(0, 0, 2, 0), INCLUDE_WAVE_START, CDNA_LAYOUT, simd_mask=0xf)}
  encode(starts_only, waves[:1], 0, pcs.__getitem__)
  assert [type(p).__name__ for p in real(sqtt.decode(blob(CDNA_LAYOUT, starts_only[0].writer.data())))[1:]] == ["CDNA_WAVESTART"]

def test_shape_places_cus_on_wgps_like_the_traces():
  sh = Shape(6, 2)
  assert [sh.unit(0, s) for s in (0, 1)] == [Unit(0, 0, 0, 0), Unit(0, 0, 0, 2)]   # sync: one workgroup on SIMDs 0 and 2 of a WGP
  assert sh.unit(1, 0) == Unit(0, 0, 0, 1) and sh.unit(2, 0) == Unit(1, 0, 0, 0) and sh.unit(12, 1) == Unit(0, 1, 0, 2)
  assert sh.unit(95, 1) == Unit(5, 1, 3, 3)
  cd = Shape(4, 1, CDNA_LAYOUT.cus_per_wgp)   # CDNA: a CU is its own unit, its 4 SIMDs as the model numbers them
  assert [cd.unit(c, 3) for c in (0, 1, 5, 31)] == [Unit(0, 0, 0, 3), Unit(1, 0, 0, 3), Unit(1, 0, 1, 3), Unit(3, 0, 7, 3)]

# ---- real captures ----

def _kind(p) -> str: return type(p).__name__.replace("_RDNA4", "") + (":" + p.op.name if hasattr(p, "op") else "")

def _issue_streams(data:bytes, lib:bytes, arch:str) -> dict[int, list[tuple[int, int, str]]]:
  """Per wave slot of the traced SIMD: the (pc, cycle, packet kind) `map_insts` gives."""
  seqs: dict[int, list[tuple[int, int, str]]] = {}
  for p, info in sqtt.map_insts(data, lib, arch):
    if info is not None: seqs.setdefault(info.wave, []).append((info.pc, p._time, _kind(p)))
  return seqs

def _captures(arch:str, kind:str) -> list:
  files = sorted((TRACES / arch).glob(f"profile_{kind}_run_*.pkl"))
  assert files, f"no {arch} {kind} traces in {TRACES / arch} (the repository ships them)"
  return [(f.name, load_events(f)) for f in files]

@pytest.mark.parametrize("arch,emu_arch,kind", [("gfx1100", "gfx1100", k) for k in ("plus", "sync")] +
                         [("gfx1200", "gfx1201", k) for k in ("plus", "sync", "handwritten")])
def test_hardware_issue_streams_reencode_to_the_same_instructions_cycles_and_packets(arch, emu_arch, kind):
  """The traced waves of a real capture, re-encoded from their (PC, cycle) issues with the emulator's instruction classes, map back
  to the same instructions at the same cycles, reported by the same packets (INST ops included)."""
  spec, seen = get_spec(emu_arch), 0
  lay = LAYOUTS[spec.family]
  for fname, events in _captures(arch, kind):
    progs = {e.tag: e for e in events if type(e).__name__ == "ProfileProgramEvent"}
    for ev in (e for e in events if type(e).__name__ == "ProfileSQTTEvent" and e.itrace):
      lib = progs[ev.kern].lib
      if not (hw := _issue_streams(ev.blob, lib, arch)): continue
      starts: dict[int, list[int]] = {}
      for p in sqtt.decode(ev.blob):
        if isinstance(p, lay.wave_start) and p.cu == 0 and p.simd == 0: starts.setdefault(p.wave, []).append(p._time)
      code = amd_decode(lib, arch)
      step_at = lambda pc: compile_step(decode(code[pc].to_bytes(), spec), spec, pc)   # only issued instructions (not s_code_end)
      waves = [Wave(Unit(0, 0, 0, 0), starts[slot].pop(0), [(t, pc, classify(step_at(pc)).cls) for pc, t, _ in seq])
               for slot, seq in hw.items()]
      eng = {0: EngineTrace(Unit(0, 0, 0, 0), layout=lay)}
      encode(eng, waves, 0, step_at)
      assert _issue_streams(eng[0].writer.data(), lib, arch) == hw, (fname, ev.se)
      seen += sum(len(s) for s in hw.values())
  assert seen

def test_gfx950_wave_starts_and_ends_reencode_to_the_same_packets():
  """The gfx950 captures' waves (start, end, CU, SIMD, slot), re-encoded, decode to the same CDNA_WAVESTART/CDNA_WAVEEND packets."""
  spec, seen = get_spec("gfx950"), 0
  for fname, events in _captures("gfx950", "*"):
    progs = {e.tag: e for e in events if type(e).__name__ == "ProfileProgramEvent"}
    for ev in (e for e in events if type(e).__name__ == "ProfileSQTTEvent"):
      hw = [(type(p).__name__, p._time, p.sh, p.cu, p.simd, p.wave) for p in packets(ev.blob)
            if isinstance(p, (sqtt.CDNA_WAVESTART, sqtt.CDNA_WAVEEND))]
      if not hw: continue
      code = {pc: decode(i.to_bytes(), spec) for pc, i in amd_decode(progs[ev.kern].lib, "gfx950").items()}
      endpgm = next(pc for pc, instr in code.items() if instr.name == "s_endpgm")
      live, waves = {}, []
      for name, t, sh, cu, simd, slot in hw:
        if name == "CDNA_WAVESTART": live[(sh, cu, simd, slot)] = Wave(Unit(ev.se, sh, cu, simd), t)
        else: (w := live.pop((sh, cu, simd, slot))).issues.append((t, endpgm, "end")); waves.append(w)
      eng = {ev.se: EngineTrace(Unit(ev.se, 0, 0, 0), INCLUDE_WAVE_START | INCLUDE_WAVE_END | INCLUDE_INST, CDNA_LAYOUT, 0xf)}
      encode(eng, waves, 0, lambda pc: compile_step(code[pc], spec, pc))
      got = [(type(p).__name__, p._time, p.sh, p.cu, p.simd, p.wave) for p in sqtt.decode(CDNA_PREFIX + eng[ev.se].writer.data())
             if isinstance(p, (sqtt.CDNA_WAVESTART, sqtt.CDNA_WAVEEND))]
      assert got == hw, (fname, ev.se)
      seen += len(hw)
  assert seen

def _cdna_stream(*items) -> bytes:
  """A CDNA blob written packet by packet as hardware orders them: ("misc", ticks), ("ts", cycle) or a (class, fields) packet."""
  w = CDNAWriter()   # starts with the timestamp the decoder anchors on (cycle 0)
  for kind, arg in items:
    if kind == "misc": w.put(sqtt.CDNA_MISC, pack(sqtt.CDNA_MISC, delta=arg))
    elif kind == "ts": w.put(sqtt.CDNA_TIMESTAMP, pack(sqtt.CDNA_TIMESTAMP, timestamp=arg + 4))   # the decoder places T at T - 4
    else: w.put(kind, pack(kind, **arg))
  return CDNA_PREFIX + w.data()

def _wave_times(stream) -> list[tuple[str, int]]:
  return [(type(p).__name__, p._time) for p in stream if isinstance(p, (sqtt.CDNA_WAVESTART, sqtt.CDNA_WAVEEND))]

START, END = (sqtt.CDNA_WAVESTART, {"cu": 0, "simd": 0, "wave": 1}), (sqtt.CDNA_WAVEEND, {"cu": 0, "simd": 0, "wave": 1})

def test_cdna_times_after_a_saturated_gap_take_the_next_timestamps_jump():
  # start at 2 ticks (8 cycles); a saturated gap (255 ticks: 1020 cycles or more) ends at the wave end; 1 tick later a timestamp
  # says 3000. The decoder leaves the end at 8 + 1020 = 1028; the 3000 - 1032 = 1968 cycles it lost belong to the saturated gap
  data = _cdna_stream(("misc", 2), START, ("misc", 255), END, ("misc", 1), ("ts", 3000))
  assert _wave_times(sqtt.decode(data)) == [("CDNA_WAVESTART", 8), ("CDNA_WAVEEND", 1028)]
  assert _wave_times(packets(data)) == [("CDNA_WAVESTART", 8), ("CDNA_WAVEEND", 2996)]

def test_cdna_times_without_a_saturated_gap_are_exact():
  # 254 ticks is an exact gap: a later timestamp jump is time after the wave end, not lost before it
  data = _cdna_stream(("misc", 2), START, ("misc", 254), END, ("ts", 3000))
  assert _wave_times(packets(data)) == _wave_times(sqtt.decode(data)) == [("CDNA_WAVESTART", 8), ("CDNA_WAVEEND", 1024)]

def test_cdna_time_lost_over_two_saturated_gaps_goes_to_the_later_one():
  # which gap lost how much is unknown: packets before the second gap keep their lower bound, those after it are exact
  data = _cdna_stream(("misc", 255), START, ("misc", 255), END, ("ts", 5000))
  assert _wave_times(packets(data)) == [("CDNA_WAVESTART", 1020), ("CDNA_WAVEEND", 5000)]
