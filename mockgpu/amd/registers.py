"""What the queue engines and the thread-trace unit share about registers: the COMPUTE_* register layout a dispatch reads (from
tinygrad's register modules for the GPU's GC version), and the compare functions of WAIT_REG_MEM / POLL_REGMEM."""
from __future__ import annotations
import importlib

def compare(func:int, value:int, ref:int) -> bool:
  """WAIT_REG_MEM / POLL_REGMEM compare functions (0 always, 1 <, 2 <=, 3 ==, 4 !=, 5 >=, 6 >)."""
  return [True, value < ref, value <= ref, value == ref, value != ref, value >= ref, value > ref, False][func & 7]

CMP_NAMES = ("always", "<", "<=", "==", "!=", ">=", ">", "never")

class ComputeRegs:
  """Addresses of the COMPUTE_* registers a dispatch reads, resolved through tinygrad's register module for `gc_version`."""
  NAMES = ("PGM_LO", "PGM_HI", "PGM_RSRC1", "PGM_RSRC2", "PGM_RSRC3", "TMPRING_SIZE", "DISPATCH_SCRATCH_BASE_LO", "DISPATCH_SCRATCH_BASE_HI",
           "USER_DATA_0", "NUM_THREAD_X", "NUM_THREAD_Y", "NUM_THREAD_Z", "START_X", "START_Y", "START_Z")
  def __init__(self, gc_version:tuple[int, int, int]):
    from tinygrad.runtime.support.amd import AMDIP
    offs = importlib.import_module(f"tinygrad.runtime.autogen.am.{'vega' if gc_version[0] == 9 else 'navi'}_offsets")
    self.gc = AMDIP("gc", gc_version, bases={i: tuple(getattr(offs, f"GC_BASE__INST{i}_SEG{s}", 0) for s in range(6)) for i in range(6)})
    self.addr = {n: getattr(self.gc, f"regCOMPUTE_{n}").addr[0] for n in self.NAMES}
    self.gfx9 = self.wave64_only = gc_version[0] == 9   # (gfx9's packet formats, and its waves are wave64)
    self.scratch_granule = 1024 if gc_version[0] == 9 else 256  # TMPRING_SIZE.WAVESIZE unit, bytes per wave64
