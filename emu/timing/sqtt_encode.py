"""Encode the timing model's per-wave timeline as an RDNA3 (gfx1100, SQTT layout 3) thread-trace stream.

The stream is what the SQ of one shader engine writes to its trace buffer, in the format tinygrad's decoder
(`tinygrad.renderer.amd.sqtt`) reads: a nibble stream of variable-size packets, each carrying a small time delta. Packet layouts
come from the decoder's own packet classes (their bit fields set the bits), so encoder and decoder cannot disagree on a layout.

Packets emitted: LAYOUT_HEADER (layout 3, first packet), TS_DELTA_SHORT and TS_DELTA_OR_MARK (time gaps the packets' own
delta fields cannot carry), WAVESTART / WAVEEND (every wave of the shader engine), and for the waves of the traced SIMD the
instruction packets real gfx1100 traces show: VALUINST (VALU), IMMEDIATE (s_waitcnt, s_clause, s_nop and other immediate SOPP
instructions) and INST with the issue class (SALU, SMEM_RD, JUMP/JUMP_NO, MESSAGE, VALUT_4, BARRIER, SGMEM_RD_*/SGMEM_WR_*,
FLAT_RD/WR_*, LDS_RD/LDS_WR_*), NOP as padding. s_delay_alu is not reported (the hardware consumes it without issue), s_endpgm is
the WAVEEND. Not emitted: ALUEXEC/VMEMEXEC (execution), WAVERDY, OTHER_* (memory instructions of the other SIMDs), REG,
EVENT, SNAPSHOT, TS_WAVE_STATE, UTILCTR, PERF.
"""
from __future__ import annotations
from dataclasses import dataclass, field
from typing import Callable, Iterable
from tinygrad.renderer.amd import sqtt
from emu.amd.timing import access_bytes

LAYOUT = 3                 # gfx11 SQTT layout (LAYOUT_HEADER.layout)
LAYOUT_SEL_A = 6           # LAYOUT_HEADER.sel_a as gfx1100 hardware writes it
SHORT_DELTA = (4, 19)      # TS_DELTA_SHORT carries 4..19 cycles
LONG_DELTA_MAX = sqtt.TS_DELTA_OR_MARK.delta.mask
TAIL_BYTES = 8             # the decoder needs a 16-nibble window after the last packet start
WPTR_UNIT = 32             # the trace write pointer counts 32-byte units
SIMDS_PER_WGP = 4
WAVE_SLOTS = 16            # wave slots per SIMD

# token_exclude bits of SQ_THREAD_TRACE_TOKEN_MASK (gfx11 SQ_TT_TOKEN_EXCLUDE_*_SHIFT) for the packets emitted here
EXCLUDE_VALUINST, EXCLUDE_WAVESTARTEND, EXCLUDE_IMMEDIATE, EXCLUDE_INST = 1 << 2, 1 << 4, 1 << 5, 1 << 8

def pack(cls:type[sqtt.PacketType], **fields:int) -> int:
  """The raw bits of one packet of the decoder's packet class `cls` with the given field values (ValueError if one does not fit)."""
  raw = cls.encoding.default
  for name, value in fields.items():
    f = getattr(cls, name)
    if not 0 <= value <= f.mask: raise ValueError(f"{cls.__name__}.{name}={value} does not fit in {f.hi - f.lo + 1} bits")
    raw |= value << f.lo
  return raw

class StreamWriter:
  """One shader engine's SQTT stream: packets appended at absolute, non-decreasing cycle times."""
  def __init__(self):
    self.nibbles = bytearray()
    self.time = 0
    self._put(sqtt.LAYOUT_HEADER, pack(sqtt.LAYOUT_HEADER, layout=LAYOUT, sel_a=LAYOUT_SEL_A))

  def _put(self, cls:type[sqtt.PacketType], raw:int):
    self.nibbles.extend((raw >> (4 * i)) & 0xf for i in range(cls._size_nibbles))  # type: ignore[attr-defined]

  def packet(self, t:int, cls:type[sqtt.PacketType], **fields:int):
    """Append a packet stamped at cycle `t`; gaps beyond its own delta field go into timestamp packets first."""
    if t < self.time: raise ValueError(f"SQTT packets must be appended in time order ({t} < {self.time})")
    gap, dmax = t - self.time, cls.delta.mask
    while gap > dmax:
      if gap <= SHORT_DELTA[1] + dmax:
        step = max(SHORT_DELTA[0], gap - dmax)
        self._put(sqtt.TS_DELTA_SHORT, pack(sqtt.TS_DELTA_SHORT, delta=step - SHORT_DELTA[0]))
      else:
        step = min(LONG_DELTA_MAX, gap - dmax)
        self._put(sqtt.TS_DELTA_OR_MARK, pack(sqtt.TS_DELTA_OR_MARK, delta=step))
      gap -= step
    self._put(cls, pack(cls, delta=gap, **fields))
    self.time = t

  def data(self) -> bytes:
    """The stream as the trace buffer holds it: nibbles packed low-first, NOP padded to whole write-pointer units."""
    nib = bytes(self.nibbles) + b"\0" * (len(self.nibbles) & 1)
    body = bytes(lo | (hi << 4) for lo, hi in zip(nib[0::2], nib[1::2]))
    return body + b"\0" * (-(len(body) + TAIL_BYTES) % WPTR_UNIT + TAIL_BYTES)

@dataclass(frozen=True)
class Unit:
  """A SIMD as SQTT names it: shader engine, shader array, WGP within the array, SIMD within the WGP (0-3)."""
  se: int
  sa: int
  wgp: int
  simd: int

@dataclass(frozen=True)
class Shape:
  """The shader engines / arrays of a GPU: model CU c is half of WGP c // 2; WGPs are dealt round-robin over engines, then arrays."""
  engines: int
  arrays: int
  def unit(self, cu:int, simd:int) -> Unit:
    """The SQTT unit of the timing model's (CU, SIMD within the CU): the CU's SIMDs are 0/2 (even CU) or 1/3 of the WGP."""
    wgp, rest = cu // 2, (cu // 2) // self.engines
    return Unit(wgp % self.engines, rest % self.arrays, rest // self.arrays, simd * 2 + cu % 2)

@dataclass
class Wave:
  """One wave of the emulator's timeline: where it ran, when it started, and its issues (cycle, pc, class) ending with s_endpgm."""
  unit: Unit
  start: int
  issues: list[tuple[int, int, str]] = field(default_factory=list)
  @property
  def end(self) -> int: return self.issues[-1][0] if self.issues else self.start

def waves_of(timeline:Iterable[tuple[int, int, int, str, bool]], placement:Callable[[int], tuple[int, int]], shape:Shape) -> list[Wave]:
  """Group a TimingModel timeline ((wave, pc, cycle, class, dram), pc -1 = wave start) into `Wave`s, in wave order."""
  waves: dict[int, Wave] = {}
  for w, pc, cyc, cls, _ in timeline:
    if pc < 0: waves[w] = Wave(shape.unit(*placement(w)), cyc)
    else: waves[w].issues.append((cyc, pc, cls))
  return [waves[w] for w in sorted(waves)]

def _memory_op(name:str, fmt:str, store:bool, saddr_null:bool) -> sqtt.InstOp:
  dwords = max(1, access_bytes(name) // 4)
  if fmt == "FLAT": return sqtt.InstOp[f"FLAT_WR_{min(6, 2 + dwords)}"] if store else sqtt.InstOp.FLAT_RD_2
  if store: return sqtt.InstOp[f"SGMEM_WR_{min(6, 1 + dwords + saddr_null)}"]
  return sqtt.InstOp.SGMEM_RD_2 if saddr_null else sqtt.InstOp.SGMEM_RD_1

def issue_packet(cls:str, instr, taken:bool) -> tuple[type[sqtt.PacketType], sqtt.InstOp | None] | None:
  """(packet class, INST op) hardware reports for an instruction of timing class `cls` (emu.amd.timing.OpInfo.cls); None: no packet.

  `instr` is the decoded instruction (emu.amd.decode.Instr), `taken` whether a branch was taken."""
  name = instr.name
  if cls == "valu": return (sqtt.INST, sqtt.InstOp.VALU1_WR_EXEC) if name.startswith("v_cmpx") else (sqtt.VALUINST, None)
  if cls == "trans": return sqtt.INST, sqtt.InstOp.VALUT_4
  if cls == "salu": return sqtt.INST, (sqtt.InstOp.SALU_WR_EXEC if "saveexec" in name else sqtt.InstOp.SALU)
  if cls == "branch": return sqtt.INST, (sqtt.InstOp.JUMP if taken else sqtt.InstOp.JUMP_NO)
  if cls == "smem": return sqtt.INST, sqtt.InstOp.SMEM_RD
  if cls == "barrier": return sqtt.INST, sqtt.InstOp.BARRIER
  if cls in ("vmem_load", "vmem_store"):
    saddr = getattr(instr.inst, "saddr", None)
    return sqtt.INST, _memory_op(name, instr.fmt, cls == "vmem_store", saddr is None or saddr.offset >= 124)
  if cls == "lds":
    if "load" in name or "read" in name: return sqtt.INST, sqtt.InstOp.LDS_RD
    return sqtt.INST, sqtt.InstOp[f"LDS_WR_{min(5, 1 + max(1, access_bytes(name) // 4))}"]
  if cls == "other" and name.startswith("s_sendmsg"): return sqtt.INST, sqtt.InstOp.MESSAGE
  if cls in ("waitcnt", "nop", "other"): return sqtt.IMMEDIATE, None
  return None  # 'end' is the WAVEEND, 'delay' is never issued

@dataclass
class EngineTrace:
  """Trace settings of one shader engine: its stream, the traced SIMD (instruction packets) and the excluded token types."""
  traced: Unit
  token_exclude: int = 0
  writer: StreamWriter = field(default_factory=StreamWriter)

def encode(engines:dict[int, EngineTrace], waves:list[Wave], base:int, instr_at:Callable[[int], object]):
  """Append the packets of one dispatch's `waves` (cycles relative to `base`) to the streams of their shader engines.

  Waves of engines not in `engines` are not traced. Each wave takes the lowest wave slot of its SIMD that is free at its start.
  `instr_at(pc)` decodes the instruction at a PC (packet classes depend on memory sizes, address modes and branch outcomes)."""
  events: dict[int, list[tuple[int, int, int, type[sqtt.PacketType], dict]]] = {se: [] for se in engines}
  busy: dict[tuple[Unit, int], int] = {}
  for k, w in sorted(enumerate(waves), key=lambda kw: (kw[1].start, kw[0])):
    if (eng := engines.get(w.unit.se)) is None: continue
    slot = next((s for s in range(WAVE_SLOTS) if busy.get((w.unit, s), -1) <= w.start), None)
    if slot is None: raise ValueError(f"more than {WAVE_SLOTS} waves in flight on {w.unit}")
    busy[(w.unit, slot)] = w.end
    ev, where = events[w.unit.se], {"sa": w.unit.sa, "wgp": w.unit.wgp, "simd": w.unit.simd, "wave": slot}
    if not eng.token_exclude & EXCLUDE_WAVESTARTEND:
      ev.append((base + w.start, 1, k, sqtt.WAVESTART, where))
      ev.append((base + w.end, 0, k, sqtt.WAVEEND, where))
    if w.unit != eng.traced: continue
    for i, (cyc, pc, cls) in enumerate(w.issues):
      instr = instr_at(pc)
      taken = i + 1 < len(w.issues) and w.issues[i + 1][1] != pc + instr.size
      if (pk := issue_packet(cls, instr, taken)) is None: continue
      pcls, op = pk
      if eng.token_exclude & {sqtt.INST: EXCLUDE_INST, sqtt.VALUINST: EXCLUDE_VALUINST, sqtt.IMMEDIATE: EXCLUDE_IMMEDIATE}[pcls]: continue
      ev.append((base + cyc, 2, k, pcls, {"wave": slot, **({"op": op.value} if op is not None else {})}))
  for se, ev in events.items():
    for t, _, _, pcls, fields in sorted(ev, key=lambda e: e[:3]): engines[se].writer.packet(t, pcls, **fields)
