"""`AMDGPU`: the emulated GPU's entry point for command processors and tests."""
from __future__ import annotations
import os
from emu.amd.api import Dispatch, DispatchStats
from emu.amd.arch import get_spec
from emu.amd.dispatcher import Dispatcher
from emu.amd.observe import DispatchObserver
from emu.common.memory import MemoryMap
from emu.amd.steps import ProgramCache
from emu.amd.trace import TraceFilter, Tracer
from emu.common.watchdog import Watchdog

class AMDGPU:
  """One emulated AMD GPU.

  `AMDGPU(arch="gfx1100", memory=MemoryMap(), watchdog=None, watchdog_s=None, trace=None, timing=True)`; `dispatch(Dispatch)`
  runs a dispatch to completion and returns DispatchStats, or raises a GPUFault subclass (GPUMemoryFault, GPUHangFault,
  GPUIllegalInstruction, GPUTrapFault, GPUInvalidDispatch, GPUEmulatorError) and nothing else.
  watchdog: wave-instruction budget per dispatch (None: env EMU_WATCHDOG, else none); watchdog_s: wall-clock seconds per
  dispatch (None: env EMU_WATCHDOG_S, else 20; 0: none); see emu.common.watchdog. `cancel(reason)` stops the running dispatch
  from another thread. trace: print an instruction trace: True/False,
  or a selection in EMU_TRACE's syntax (`TraceFilter`: '1', '@3', 'r_16_4'); None: env EMU_TRACE. timing: run the cycle model
  (emu.amd.timing) to fill DispatchStats.cycles; defer_timing: replay it only when the cycles are first read (DispatchStats.resolve).
  """
  def __init__(self, arch:str="gfx1100", memory:MemoryMap|None=None, watchdog:int|None=None, trace:bool|str|None=None, timing:bool=True,
               watchdog_s:float|None=None, defer_timing:bool=False):
    self.spec = get_spec(arch)
    self.arch, self.memory = arch, memory if memory is not None else MemoryMap()
    self.watchdog = Watchdog(watchdog, watchdog_s)
    self.trace = TraceFilter(trace if trace is not None else os.environ.get("EMU_TRACE", "0"))
    self.timing, self.defer_timing, self.dispatches = timing, defer_timing, 0
    self.programs = ProgramCache(self.spec, self.memory)   # a later dispatch of unchanged code reuses what an earlier one fetched

  def dispatch(self, d:Dispatch, timing=None, watch:tuple[DispatchObserver, ...]=()) -> DispatchStats:
    """Run one dispatch to completion. `timing`: a TimingModel to use instead of a fresh one (e.g. one keeping a timeline);
    `watch`: more observers of this dispatch (emu.amd.observe), e.g. the LDS bank model the PMC counters read."""
    from emu.amd.timing import TimingModel
    tm = timing if timing is not None else TimingModel(self.spec, deferred=self.defer_timing) if self.timing else None
    index, self.dispatches = self.dispatches, self.dispatches + 1
    observers = ([Tracer()] if self.trace.wants(index, d.name) else []) + ([tm] if tm is not None else []) + list(watch)
    return Dispatcher(self.spec, self.memory, self.watchdog, observers, self.programs).run(d)

  def cancel(self, reason:str):
    """Stop the dispatch in flight (from any thread) at its next instruction batch with GPUHangFault naming `reason`."""
    self.watchdog.cancel(reason)
