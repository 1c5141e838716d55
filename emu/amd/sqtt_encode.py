"""Encode the timing model's per-wave timeline as thread-trace (SQTT) streams that tinygrad's decoder (`tinygrad.renderer.amd.sqtt`)
reads back: RDNA3 (gfx11, layout 3), RDNA4 (gfx12, layout 4) and CDNA (gfx9); the formats are in `emu.amd.sqtt_layouts`.

A stream is what the SQ of one shader engine writes to its trace buffer: wave start / end packets for every wave of the engine,
and for the waves of the traced SIMD(s) one instruction packet per issue (which packet: the layout's `issue`), each stamped at
its model cycle. Not emitted on any layout: execution packets (ALUEXEC/VMEMEXEC), WAVERDY, WAVEALLOC, OTHER_* (memory
instructions of untraced SIMDs), REG/userdata, EVENT, SNAPSHOT, TS_WAVE_STATE, UTILCTR, PERF, CDNA_INST_PC / CDNA_ISSUE.
"""
from __future__ import annotations
from dataclasses import dataclass, field
from typing import Callable, Iterable
from tinygrad.renderer.amd import sqtt
from emu.amd.step import Step
from emu.amd.timing import OpInfo, classify
from emu.amd.sqtt_layouts import RDNA3_LAYOUT, Layout, Writer

WAVE_SLOTS = 16            # wave slots per SIMD

@dataclass(frozen=True)
class Unit:
  """A SIMD as SQTT names it: shader engine, shader array, WGP within the array (CDNA: CU within the engine), SIMD (0-3)."""
  se: int
  sa: int
  wgp: int
  simd: int

@dataclass(frozen=True)
class Shape:
  """The shader engines / arrays of a GPU and how many model CUs make one WGP (RDNA: 2, CDNA: 1, the CU itself).

  WGPs are dealt round-robin over engines, then arrays; a model CU's SIMDs are every `cus_per_wgp`-th SIMD of its WGP."""
  engines: int
  arrays: int
  cus_per_wgp: int = 2
  def unit(self, cu:int, simd:int) -> Unit:
    """The SQTT unit of the timing model's (CU, SIMD within the CU): on RDNA SIMDs 0/2 (even CU) or 1/3 of the WGP."""
    wgp, rest = cu // self.cus_per_wgp, (cu // self.cus_per_wgp) // self.engines
    return Unit(wgp % self.engines, rest % self.arrays, rest // self.arrays, simd * self.cus_per_wgp + cu % self.cus_per_wgp)

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

@dataclass
class EngineTrace:
  """Trace settings of one shader engine: the traced unit, the token register field (`layout.emits` reads it), the SIMDs of the
  traced WGP/CU whose instructions are traced (bit mask; None: `traced.simd` only) and the stream."""
  traced: Unit
  tokens: int = 0
  layout: Layout = RDNA3_LAYOUT
  simd_mask: int | None = None
  writer: Writer = field(init=False)
  def __post_init__(self): self.writer = self.layout.writer()

  def itraced(self, u:Unit) -> bool:
    """Whether the instructions of waves on `u` are traced."""
    t = self.traced
    if (u.se, u.sa, u.wgp) != (t.se, t.sa, t.wgp): return False
    return u.simd == t.simd if self.simd_mask is None else bool(self.simd_mask >> u.simd & 1)

def encode(engines:dict[int, EngineTrace], waves:list[Wave], base:int, step_at:Callable[[int], Step]):
  """Append the packets of one dispatch's `waves` (cycles relative to `base`, rounded up to the layout's timestamp tick) to the
  streams of their shader engines.

  Waves of engines not in `engines` are not traced. Each wave takes the lowest wave slot of its SIMD that is free at its start.
  `step_at(pc)` is the compiled instruction at a PC (packet classes depend on its timing view, emu.amd.timing.classify, its address
  mode and branch outcomes).
  Same-cycle packets go in the order: wave ends, wave starts, then issues by wave."""
  events: dict[int, list[tuple[int, int, int, type[sqtt.PacketType], dict]]] = {se: [] for se in engines}
  busy: dict[tuple[Unit, int], int] = {}
  infos: dict[int, tuple[Step, OpInfo]] = {}
  def at(pc:int) -> tuple[Step, OpInfo]:
    if pc not in infos: infos[pc] = (step := step_at(pc)), classify(step)
    return infos[pc]
  for k, w in sorted(enumerate(waves), key=lambda kw: (kw[1].start, kw[0])):
    if (eng := engines.get(w.unit.se)) is None: continue
    slot = next((s for s in range(WAVE_SLOTS) if busy.get((w.unit, s), -1) <= w.start), None)
    if slot is None: raise ValueError(f"more than {WAVE_SLOTS} waves in flight on {w.unit}")
    busy[(w.unit, slot)] = w.end
    ev, lay = events[w.unit.se], eng.layout
    b = -(-base // lay.tick) * lay.tick   # a whole number of timestamp ticks: a cycle's tick is then its tick in the dispatch
    where = lay.wave_fields(w.unit.sa, w.unit.wgp, w.unit.simd, slot)
    if lay.emits(lay.wave_start, eng.tokens): ev.append((b + w.start, 1, k, lay.wave_start, where))
    if lay.emits(lay.wave_end, eng.tokens): ev.append((b + w.end, 0, k, lay.wave_end, where))
    if not eng.itraced(w.unit): continue
    for i, (cyc, pc, _) in enumerate(w.issues):
      step, info = at(pc)
      taken = i + 1 < len(w.issues) and w.issues[i + 1][1] != pc + step.instr.size
      if (pk := lay.issue(info, step.instr, taken)) is None or not lay.emits(pk[0], eng.tokens): continue
      pcls, op = pk
      ev.append((b + cyc, 2, k, pcls, {**lay.inst_fields(w.unit.simd, slot), **({"op": op.value} if op is not None else {})}))
  for se, ev in events.items():
    for t, _, _, pcls, fields in sorted(ev, key=lambda e: e[:3]): engines[se].writer.packet(t, pcls, **fields)
