"""Run a traced kernel on the emulator with an equivalent launch and a per-wave timeline.

The code object comes from the trace. Launch size: from the kernel name (tinygrad encodes global/local dimensions),
else one workgroup holding every traced wave. Every kernel-argument slot points at its own zero-filled buffer large
enough for the launch (numerical results do not matter here, timing does)."""
from __future__ import annotations
import dataclasses, math, struct
from dataclasses import dataclass
import numpy as np
from emu.amd.api import Dispatch, DispatchStats
from emu.amd.arch import get_spec
from emu.amd.decode import decode
from emu.amd.dispatcher import Dispatcher
from emu.common.watchdog import Watchdog
from emu.amd.kernel import Buffers, load_kernel
from emu.amd.timing import TimingModel
from emu.amd.sqtt_layouts import LAYOUTS
from emu.timing.traces import TracedKernel, cdna_reported, launch_dims

BUF_BYTES = 1 << 20
KERNARG_SLOTS = 8          # pointer slots filled even when the trace lists fewer buffers
MAX_WORKGROUP = 1024       # threads a workgroup may hold (the dispatcher's limit)
# tinygrad's AM driver hands out GPU virtual addresses from this window (tinygrad.runtime.support.am.amdev, AMMemoryManager); under
# KFD a buffer's GPU address is its host mmap address
AM_VA = range(0x200000000000, 0x200000000000 + (1 << 44))

def driver_of(k:TracedKernel) -> str:
  """The kernel driver a trace was captured under, from where its code was loaded: 'am' or 'kfd'."""
  return "am" if k.base in AM_VA else "kfd"

@dataclass
class Replay:
  """The emulated run: stats, per-wave records {wave: [(pc relative to the code object, cycle, class, dram)]} (CDNA: only the
  instructions its captures report, `traces.cdna_reported`), wave starts
  and the waves the model places on SIMD 0 of CU 0 (the SIMD the hardware traces), in launch order."""
  stats: DispatchStats
  waves: dict[int, list[tuple[int, int, str, bool]]]
  starts: dict[int, int]
  grid: tuple[int, int, int]
  workgroup: tuple[int, int, int]
  traced: list[int]

def launch_of(k:TracedKernel, lanes:int=32) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
  """(grid, workgroup) for a traced kernel of `lanes`-wide waves: the one its capture came with, else from its name, checked
  against the wave starts; else one workgroup of all waves (ValueError when they do not fit one)."""
  if k.launch is not None: return k.launch
  n_waves = len(k.starts)
  if (dims := launch_dims(k.display)) is not None:
    grid, wg = dims
    if math.prod(grid) * math.ceil(math.prod(wg) / lanes) == n_waves or not n_waves: return grid, wg
  if n_waves * lanes > MAX_WORKGROUP:
    raise ValueError(f"launch shape unknown: the kernel's name carries no dimensions and its {n_waves} waves do not fit one workgroup")
  return (1, 1, 1), (max(1, n_waves) * lanes, 1, 1)

def replay(k:TracedKernel) -> Replay:
  """Dispatch the traced kernel on a fresh emulated GPU of its arch (raises ValueError if the arch is unsupported)."""
  return Prepared(k).replay

class Prepared:
  """A traced kernel run once on the emulator, kept so that the timing model can replay its recorded instruction streams with
  other costs (`retime`) without running the kernel again. `replay` is the run with the calibrated costs; `watch`: more
  observers of the run (emu.amd.observe), e.g. the LDS bank model."""
  def __init__(self, k:TracedKernel, watch:tuple=()):
    spec = get_spec(k.arch)
    if not spec.supported: raise ValueError(f"the emulator does not run {k.arch} yet")
    self.kernel, self.spec = k, spec
    bufs = self.bufs = Buffers()
    lk = load_kernel(k.lib, bufs)
    self.image = bufs.keep[0].ctypes.data
    n_args = max(k.buffers, KERNARG_SLOTS)
    addrs = [bufs.add(np.zeros(BUF_BYTES, dtype=np.uint8), f"arg{i}") for i in range(n_args)]
    kernargs = np.frombuffer(b"".join(struct.pack("<Q", a) for a in addrs) + b"\0" * 256, dtype=np.uint8).copy()
    ka = bufs.add(kernargs, "kernargs", writable=False)
    self.grid, self.workgroup = launch_of(k, 32 if lk.wave32 else 64)
    # the first traced PC is where hardware entered the code (robust against code objects whose descriptor offset assumes
    # another section layout than the loader's)
    # packets without PCs (CDNA) locate instructions by order only: the loader follows the code from the entry, and the replay keeps
    # the instructions the format reports
    self.by_order = not LAYOUTS[spec.family].has_pc
    entry = self.image + k.waves[0].issues[0].pc if k.waves and k.waves[0].issues and not self.by_order else lk.code_addr
    d = Dispatch(code_addr=entry, grid=self.grid, workgroup=self.workgroup, user_sgprs=[ka & 0xffffffff, ka >> 32], rsrc1=lk.rsrc1,
                 rsrc2=lk.rsrc2, rsrc3=lk.rsrc3, wave32=lk.wave32)
    self.driver = driver_of(k)
    self.model = TimingModel(spec, timeline=True, driver=self.driver)
    self.stats = Dispatcher(spec, bufs.mem, Watchdog(), [self.model, *watch]).run(d)
    self.replay = self._records(self.stats)

  def retime(self, params) -> Replay:
    """The replay with costs `params` (an emu.amd.timing.Params of the kernel's family) in place of the calibrated ones: only what
    the replay reads changes (latencies, the launch); the instruction classes and port costs are the calibrated ones. The model
    keeps `params` until the next retime."""
    tm = self.model
    tm.params, tm.fetch, tm.timeline = params, params.launch_kfd if self.driver == "kfd" else params.launch, []
    stats = dataclasses.replace(self.stats, cycles=tm.finish()[0])
    return self._records(stats)

  def _records(self, stats:DispatchStats) -> Replay:
    tm, spec = self.model, self.spec
    waves: dict[int, list[tuple[int, int, str, bool]]] = {}
    starts: dict[int, int] = {}
    code, reported = self.bufs.keep[0].tobytes(), {}
    carry: dict[int, bool] = {}   # CDNA: a DRAM wait of an unreported instruction (s_waitcnt) shows in the next reported one
    for w, pc, cyc, cls, dram in tm.timeline:
      if pc < 0: starts[w] = cyc; continue
      off = pc - self.image
      if self.by_order and off not in reported:
        reported[off] = cls == "end" or cdna_reported(decode(code[off:off + 16], spec, off), spec, off)
      if self.by_order and not reported[off]:
        carry[w] = carry.get(w, False) or dram; continue
      waves.setdefault(w, []).append((off, cyc, cls, dram or carry.pop(w, False)))
    traced = sorted((w for w in starts if tm.placement(w) == (0, 0)), key=lambda w: (starts[w], w))
    return Replay(stats, waves, starts, self.grid, self.workgroup, traced)
