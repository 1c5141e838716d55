"""The SQ thread-trace (SQTT) unit of an emulated gfx11 GPU, as the PM4 command processor drives it.

tinygrad (PROFILE=1 SQTT=1) programs it with PM4 register writes: per shader engine (selected through GRBM_GFX_INDEX) the
trace buffer (SQ_THREAD_TRACE_BUF0_BASE/_SIZE), the traced SIMD (SQ_THREAD_TRACE_MASK simd_sel/wgp_sel/sa_sel), the excluded
tokens (SQ_THREAD_TRACE_TOKEN_MASK) and the mode (SQ_THREAD_TRACE_CTRL, 1 = tracing); COMPUTE_THREAD_TRACE_ENABLE gates the
dispatches. A dispatch while tracing runs with a timeline-keeping timing model, and its waves are encoded
(`emu.timing.sqtt_encode`) into the buffer of each traced shader engine, continuing that engine's stream; the write pointer
(SQ_THREAD_TRACE_WPTR, 32-byte units, on gfx 11.0 counted from address 0 like the hardware) always covers the whole stream, so
the stop sequence (THREAD_TRACE_FINISH, waits on SQ_THREAD_TRACE_STATUS, which reads idle, COPY_DATA of the write pointer)
finds finished data. Stream time is shader cycles since tracing started (the device clock scaled to the shader clock).

Only the gfx11 (RDNA3, SQTT layout 3) unit is emulated: writing a thread-trace register on another GC version is a PacketError.
A stream larger than the buffer is cut at the buffer's end (tinygrad then warns that the buffer is full).
"""
from __future__ import annotations
from typing import Callable
from emu.amd.api import Dispatch, DispatchStats
from emu.amd.arch import get_spec
from emu.amd.memory import MemoryMap
from emu.amd.steps import Program
from emu.amd.timing import TimingModel
from emu.timing.sqtt_encode import WPTR_UNIT, EngineTrace, Shape, Unit, encode, waves_of
from mockgpu.amd.clock import TICKS_PER_SECOND, DeviceClock
from mockgpu.amd.engine import PacketError
from mockgpu.amd.pm4 import ComputeRegs

TRACE_REGS = ("BUF0_BASE", "BUF0_SIZE", "MASK", "TOKEN_MASK", "CTRL")
WPTR_MASK = 0x1FFFFFFF

class ThreadTrace:
  """Thread-trace registers and streams of one GPU. `write_reg`/`read_reg` see every PM4 register access; `dispatch` runs one."""
  def __init__(self, arch:str, gc_version:tuple[int, int, int], engines:int, arrays:int, memory:MemoryMap, clock:DeviceClock,
               regs:ComputeRegs|None=None):
    self.arch, self.gc_version, self.memory, self.clock, self.shape = arch, gc_version, memory, clock, Shape(engines, arrays)
    self.gc = gc = (regs or ComputeRegs(gc_version)).gc
    self.addr = {n: getattr(gc, f"regSQ_THREAD_TRACE_{n}").addr[0] for n in TRACE_REGS if hasattr(gc, f"regSQ_THREAD_TRACE_{n}")}
    self.owned = {r.addr[0] for n, r in gc.regs.items() if n.startswith("regSQ_THREAD_TRACE_")} if gc_version[0] != 11 else set()
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
    if addr in self.owned:
      raise PacketError(f"SQTT: thread trace on GC {'.'.join(map(str, self.gc_version))} is not emulated (only gfx11, SQTT layout 3)")
    if addr == self.grbm:
      f = self.gc.regGRBM_GFX_INDEX.decode(value)
      self.selected = None if f["se_broadcast_writes"] else f["se_index"]
    elif addr == self.enable: self.compute_enabled = bool(value & 1)
    elif addr in self.addr.values():
      for se in (range(len(self.regs)) if self.selected is None else (self.selected,)):
        was_tracing = self._tracing(se)
        self.regs[se][addr] = value
        if self._tracing(se) and not was_tracing: self._start(se)

  def read_reg(self, addr:int) -> int | None:
    """The value of a thread-trace register the unit owns (the selected engine's write pointer), else None."""
    if addr != self.wptr_reg: return None
    return self.wptr[self.selected or 0]

  def _reg(self, se:int, name:str) -> dict[str, int]:
    r = getattr(self.gc, f"regSQ_THREAD_TRACE_{name}")
    return r.decode(self.regs[se].get(r.addr[0], 0))

  def _tracing(self, se:int) -> bool: return self._reg(se, "CTRL")["mode"] == 1

  def _buffer(self, se:int) -> tuple[int, int]:
    size = self._reg(se, "BUF0_SIZE")
    return ((size["base_hi"] << 32) | self._reg(se, "BUF0_BASE")["base_lo"]) << 12, size["size"] << 12

  def _start(self, se:int):
    """Tracing starts on `se`: a new stream (its layout header is in the buffer at once) with the current unit selection."""
    mask, tokens = self._reg(se, "MASK"), self._reg(se, "TOKEN_MASK")
    self.streams[se] = EngineTrace(Unit(se, mask["sa_sel"], mask["wgp_sel"], mask["simd_sel"]), tokens["token_exclude"])
    self.start_ticks[se] = self.clock.now()
    self._flush(se)

  def _flush(self, se:int):
    addr, size = self._buffer(se)
    if size == 0: raise PacketError(f"SQTT: shader engine {se} traces into a buffer of size 0")
    data = self.streams[se].writer.data()[:size]
    self.memory.write(addr, data)
    self.wptr[se] = ((addr // WPTR_UNIT if self.gc_version[:2] == (11, 0) else 0) + len(data) // WPTR_UNIT) & WPTR_MASK

  # ---- dispatch ----
  def dispatch(self, run:Callable[..., DispatchStats], d:Dispatch) -> DispatchStats:
    """Run `d` through `run(d, timing=...)`, encoding its waves into the streams of the engines that trace; plain run otherwise."""
    engines = {se: s for se, s in self.streams.items() if self._tracing(se)}
    if not (self.compute_enabled and engines): return run(d)
    tm, now = TimingModel(get_spec(self.arch), timeline=True), self.clock.now()
    stats = run(d, timing=tm)
    program, waves = Program(tm.spec, self.memory), waves_of(tm.timeline, tm.placement, self.shape)
    for se, eng in engines.items():
      base = max(eng.writer.time, round((now - self.start_ticks[se]) * stats.clock_mhz * 1e6 / TICKS_PER_SECOND))
      encode({se: eng}, waves, base, lambda pc: program.at(pc).instr)
      self._flush(se)
    return stats
