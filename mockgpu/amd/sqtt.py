"""The SQ thread-trace (SQTT) unit of an emulated GPU (gfx11, gfx12 and gfx9 register sets), as the PM4 command processor drives it.

tinygrad (PROFILE=1 SQTT=1) programs it with PM4 register writes, per shader engine as selected through GRBM_GFX_INDEX (or
broadcast): the trace buffer, the traced unit (SQ_THREAD_TRACE_MASK), the token mask and the mode that starts and stops tracing.
`TRACE_REGS` says where each GC generation keeps these (gfx11: BUF0_BASE/BUF0_SIZE, CTRL.mode; gfx12: BUF0_BASE_LO/_HI,
BUF0_SIZE, CTRL.mode; gfx9: BASE/BASE2/SIZE, MODE.mode, MASK.cu_sel/sh_sel/simd_en, an include-type token mask). Dispatches are
traced while COMPUTE_THREAD_TRACE_ENABLE is set (gfx11/12) or the engine's MODE.mask_cs is (gfx9). A traced dispatch runs with a
timeline-keeping timing model, and its waves are encoded (`emu.amd.sqtt_encode`, in the layout of the GPU's ISA family)
into the buffer of each tracing shader engine, continuing that engine's stream; the write pointer (SQ_THREAD_TRACE_WPTR, 32-byte
units; on GC 11.0 counted from address 0 like the hardware, elsewhere from the buffer start) always covers the whole stream, so
the stop sequence (waits on SQ_THREAD_TRACE_STATUS, which reads idle, COPY_DATA of the write pointer) finds finished data.
Stream time is shader cycles since tracing started (the device clock scaled to the shader clock).

A stream larger than the buffer is cut at the buffer's end (tinygrad then warns that the buffer is full). The wheel's register
modules exist for GC 9, 11 and 12 only, so every GC version a board can publish has a register set here.
"""
from __future__ import annotations
from dataclasses import dataclass
from typing import Callable
from emu.amd.api import Dispatch, DispatchStats
from emu.amd.arch import get_spec
from emu.common.memory import MemoryMap
from emu.amd.steps import Program
from emu.amd.timing import TimingModel
from emu.amd.sqtt_encode import EngineTrace, Shape, Unit, encode, waves_of
from emu.amd.sqtt_layouts import LAYOUTS, WPTR_UNIT
from mockgpu.clock import TICKS_PER_SECOND, DeviceClock
from mockgpu.engine import PacketError
from mockgpu.amd.registers import ComputeRegs

WPTR_MASK = 0x1FFFFFFF
Field = tuple[str, str]   # (register name after regSQ_THREAD_TRACE_, field)

@dataclass(frozen=True)
class TraceRegs:
  """Where one GC generation keeps the thread-trace settings of a shader engine."""
  base_lo: Field             # buffer address >> 12, low 32 bits
  base_hi: Field
  size: Field                # buffer size >> 12
  mode: Field                # 1: tracing
  sa: Field                  # traced shader array / WGP (gfx9: CU) / SIMD
  wgp: Field
  simd: Field | None         # None: `simd_mask` selects the traced SIMDs (gfx9)
  tokens: Field              # the token mask field the layout reads (`Layout.emits`)
  simd_mask: Field | None = None
  compute: Field | None = None   # per-engine gate of compute dispatches (gfx9); None: COMPUTE_THREAD_TRACE_ENABLE

_RDNA = dict(mode=("CTRL", "mode"), sa=("MASK", "sa_sel"), wgp=("MASK", "wgp_sel"), simd=("MASK", "simd_sel"),
             tokens=("TOKEN_MASK", "token_exclude"))
TRACE_REGS: dict[int, TraceRegs] = {   # by GC major version
  11: TraceRegs(base_lo=("BUF0_BASE", "base_lo"), base_hi=("BUF0_SIZE", "base_hi"), size=("BUF0_SIZE", "size"), **_RDNA),
  12: TraceRegs(base_lo=("BUF0_BASE_LO", "base_lo"), base_hi=("BUF0_BASE_HI", "base_hi"), size=("BUF0_SIZE", "size"), **_RDNA),
  9: TraceRegs(base_lo=("BASE", "addr"), base_hi=("BASE2", "addr_hi"), size=("SIZE", "size"), mode=("MODE", "mode"), sa=("MASK", "sh_sel"),
               wgp=("MASK", "cu_sel"), simd=None, simd_mask=("MASK", "simd_en"), tokens=("TOKEN_MASK", "token_mask"),
               compute=("MODE", "mask_cs")),
}

class ThreadTrace:
  """Thread-trace registers and streams of one GPU. `write_reg`/`read_reg` see every PM4 register access; `dispatch` runs one."""
  def __init__(self, arch:str, gc_version:tuple[int, int, int], engines:int, arrays:int, memory:MemoryMap, clock:DeviceClock,
               regs:ComputeRegs|None=None):
    self.arch, self.gc_version, self.memory, self.clock = arch, gc_version, memory, clock
    self.gc = gc = (regs or ComputeRegs(gc_version)).gc
    self.layout = LAYOUTS[get_spec(arch).family]
    self.shape = Shape(engines, arrays, self.layout.cus_per_wgp)
    self.tr = TRACE_REGS[gc_version[0]]
    self.owned = {r.addr[0] for n, r in gc.regs.items() if n.startswith("regSQ_THREAD_TRACE_")}
    self.grbm = gc.regGRBM_GFX_INDEX.addr[0]
    self.enable = gc.regCOMPUTE_THREAD_TRACE_ENABLE.addr[0] if hasattr(gc, "regCOMPUTE_THREAD_TRACE_ENABLE") else None
    self.wptr_reg = gc.regSQ_THREAD_TRACE_WPTR.addr[0] if hasattr(gc, "regSQ_THREAD_TRACE_WPTR") else None
    self.selected: int | None = None      # GRBM_GFX_INDEX shader engine, None: broadcast
    self.compute_enabled = False
    self.regs: list[dict[int, int]] = [{} for _ in range(engines)]
    self.streams: dict[int, EngineTrace] = {}
    self.wptr = [0] * engines
    self.start_ticks = [0] * engines

  # ---- registers ----
  def write_reg(self, addr:int, value:int):
    """A PM4 register write (SET_SH_REG / SET_UCONFIG_REG / COPY_DATA to a register)."""
    if addr == self.grbm:
      f = self.gc.regGRBM_GFX_INDEX.decode(value)
      self.selected = None if f["se_broadcast_writes"] else f["se_index"]
    elif addr == self.enable and self.tr.compute is None: self.compute_enabled = bool(value & 1)
    elif addr in self.owned:
      for se in (range(len(self.regs)) if self.selected is None else (self.selected,)):
        was_tracing = self._tracing(se)
        self.regs[se][addr] = value
        if self._tracing(se) and not was_tracing: self._start(se)

  def read_reg(self, addr:int) -> int | None:
    """The value of a thread-trace register the unit owns (the selected engine's write pointer), else None."""
    if addr != self.wptr_reg: return None
    return self.wptr[self.selected or 0]

  def _field(self, se:int, f:Field) -> int:
    r = getattr(self.gc, f"regSQ_THREAD_TRACE_{f[0]}")
    return r.decode(self.regs[se].get(r.addr[0], 0))[f[1]]

  def _tracing(self, se:int) -> bool: return self._field(se, self.tr.mode) == 1

  def _buffer(self, se:int) -> tuple[int, int]:
    return ((self._field(se, self.tr.base_hi) << 32) | self._field(se, self.tr.base_lo)) << 12, self._field(se, self.tr.size) << 12

  def _start(self, se:int):
    """Tracing starts on `se`: a new stream (its first packets are in the buffer at once) with the current unit selection."""
    tr = self.tr
    unit = Unit(se, self._field(se, tr.sa), self._field(se, tr.wgp), self._field(se, tr.simd) if tr.simd else 0)
    self.streams[se] = EngineTrace(unit, self._field(se, tr.tokens), self.layout, self._field(se, tr.simd_mask) if tr.simd_mask else None)
    self.start_ticks[se] = self.clock.now()
    self._flush(se)

  def _flush(self, se:int):
    addr, size = self._buffer(se)
    if size == 0: raise PacketError(f"SQTT: shader engine {se} traces into a buffer of size 0")
    data = self.streams[se].writer.data()[:size]
    self.memory.write(addr, data)
    self.wptr[se] = ((addr // WPTR_UNIT if self.gc_version[:2] == (11, 0) else 0) + len(data) // WPTR_UNIT) & WPTR_MASK

  def _traces_compute(self, se:int) -> bool:
    return self._tracing(se) and (self.compute_enabled if self.tr.compute is None else self._field(se, self.tr.compute) == 1)

  # ---- dispatch ----
  def dispatch(self, run:Callable[..., DispatchStats], d:Dispatch) -> DispatchStats:
    """Run `d` through `run(d, timing=...)`, encoding its waves into the streams of the engines that trace; plain run otherwise."""
    engines = {se: s for se, s in self.streams.items() if self._traces_compute(se)}
    if not engines: return run(d)
    tm, now = TimingModel(get_spec(self.arch), timeline=True), self.clock.now()
    stats = run(d, timing=tm)
    program, waves = Program(tm.spec, self.memory), waves_of(tm.timeline, tm.placement, self.shape)
    for se, eng in engines.items():
      base = max(eng.writer.time, round((now - self.start_ticks[se]) * stats.clock_mhz * 1e6 / TICKS_PER_SECOND))
      encode({se: eng}, waves, base, program.at)
      self._flush(se)
    return stats
