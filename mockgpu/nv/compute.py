"""The compute engine's launch: what a QMD asks for, run on emu.nv. In mock mode tinygrad's NV runtime uploads PTX text (NUL
padded) as the program and puts the kernel's arguments in constant buffer 0 from byte 0x160 on, one 8-byte slot per `.param`
in order (buffer addresses as u64, then values as signed 64-bit ints; a 32-bit parameter reads its slot's low half)."""
from __future__ import annotations
import hashlib
from typing import Callable
import numpy as np
from emu.common.memory import MemoryMap
from emu.common.watchdog import Watchdog
from emu.nv import isa, ptx, simt
from mockgpu.nv.qmd import Launch

ARGS_OFFSET = 0x160          # first argument slot in constant buffer 0 (ops_nv.py, mock mode)
MAX_PROGRAM = 16 << 20       # a program text longer than this is a corrupt QMD, not a kernel
PAGE = 4096

class ProgramCache:
  """Parsed kernels by the hash of their PTX text (a program is parsed once per process)."""
  def __init__(self): self._kernels: dict[bytes, ptx.Kernel] = {}
  def kernel(self, text:str) -> ptx.Kernel:
    key = hashlib.sha256(text.encode()).digest()
    if (k := self._kernels.get(key)) is None:
      module = isa.parse(text)
      if len(module.kernels) != 1: raise ValueError(f"a mock-mode program has one .entry, this one has {len(module.kernels)}")
      k = self._kernels[key] = next(iter(module.kernels.values()))
    return k

def program_text(memory:MemoryMap, addr:int) -> str:
  """The NUL-terminated PTX text at `addr`, scanned a page at a time within the mapping that holds it (a program is a few KB;
  the mapping may be all of VRAM)."""
  m = memory.find(addr)
  if m is None: raise ValueError(f"the QMD's program address {addr:#x} is not mapped")
  start, stop = addr - m.addr, addr - m.addr + min(m.end - addr, MAX_PROGRAM)
  end = stop
  for chunk in range(start, stop, PAGE):
    if (nul := bytes(m.view[chunk:min(chunk + PAGE, stop)]).find(b"\0")) >= 0:
      end = chunk + nul
      break
  return bytes(m.view[start:end]).decode("ascii", errors="replace")

def run_launch(launch:Launch, memory:MemoryMap, programs:ProgramCache, clock_ns:Callable[[], int], watchdog:Watchdog|None=None,
               finished:Callable[[simt.LaunchStats], None]|None=None, board=None) -> simt.LaunchStats:
  """Run one launch (bounded by `watchdog`, timed on `board` when given), call `finished(stats)`, then perform its releases
  (payload, then `clock_ns()` at +8).
  Faults (emu.amd.api.GPUFault) and a malformed program (ValueError, ptx.PTXError) propagate before any release is written."""
  kernel = programs.kernel(program_text(memory, launch.program))
  base = launch.cbuf0[0] + ARGS_OFFSET
  slots = memory.gather(np.array([base + 8 * i for i in range(len(kernel.params))], np.uint64), 8).view(np.uint64).reshape(-1)
  stats = simt.run(kernel, launch.grid, launch.block, [int(v) for v in slots], memory, watchdog, board)
  if finished is not None: finished(stats)
  for r in launch.releases:
    memory.write(r.address, np.array([r.payload, clock_ns()], np.uint64).view(np.uint8))
  return stats
