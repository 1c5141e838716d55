"""A channel's method stream: the dwords a GPFIFO entry points at, decoded and executed per subchannel.

Headers (the host class's DMA formats, bits from the wheel's NVC56F_DMA_* definitions): bits 31:29 are the opcode, 15:13 the
subchannel, 11:0 the method address in dwords, 28:16 the count (or, for an immediate, the data). Incrementing (1): `count` data
dwords to method, method + 4, ...; non-incrementing (3): `count` dwords to the same method; one-increment (5): the first to
method, the rest to method + 4; immediate (4): the 13-bit data in the header, no data dwords; end of segment (7): the rest of the
entry is not read; a zero dword is a no-op (NV_FIFO_DMA_NOP; tinygrad's HCQ graph pads with them). tinygrad writes only
incrementing headers. Subchannel 0 is the host class (semaphores: SEM_ADDR_LO/HI, SEM_PAYLOAD_LO/HI, SEM_EXECUTE;
NON_STALL_INTERRUPT), 1 the compute class (SEND_PCAS_A names a QMD, SEND_SIGNALING_PCAS2_B launches it and the QMDs chained after
it), 4 the copy class (LAUNCH_DMA: single-line pitch copies of LINE_LENGTH_IN bytes, then the semaphore release it asks for).
Field positions come from the wheel's nv_570 definitions. An acquire whose condition does not hold stalls the channel: `run`
returns where to resume.
"""
from __future__ import annotations
from dataclasses import dataclass
from typing import Callable
import numpy as np
from tinygrad.runtime.autogen import nv_570 as nv
from emu.common.faults import GPUFault
from emu.common.memory import MemoryMap
from emu.common.watchdog import Watchdog
from emu.nv.simt import LaunchStats
from mockgpu.nv.compute import ProgramCache, run_launch
from mockgpu.nv.qmd import QMD_BYTES, Launch

HOST, COMPUTE, COPY = 0, 1, 4
SEMAPHORE_FIELDS = {nv.NVC56F_SEM_ADDR_LO: "addr_lo", nv.NVC56F_SEM_ADDR_HI: "addr_hi", nv.NVC56F_SEM_PAYLOAD_LO: "payload_lo",
                    nv.NVC56F_SEM_PAYLOAD_HI: "payload_hi"}
NOP = 0   # a zero dword is a no-op (NVIDIA's host manuals: NV_FIFO_DMA_NOP); tinygrad's HCQ graph pads its command buffers with them
INC, NON_INC, IMMEDIATE, ONE_INC, END_SEGMENT = (nv.NVC56F_DMA_SEC_OP_INC_METHOD, nv.NVC56F_DMA_SEC_OP_NON_INC_METHOD,
  nv.NVC56F_DMA_SEC_OP_IMMD_DATA_METHOD, nv.NVC56F_DMA_SEC_OP_ONE_INC, nv.NVC56F_DMA_SEC_OP_END_PB_SEGMENT)
UNMODELLED_HEADERS = {nv.NVC56F_DMA_SEC_OP_GRP0_USE_TERT: "a subdevice-mask (GRP0 tertiary) header",
                      nv.NVC56F_DMA_SEC_OP_GRP2_USE_TERT: "a GRP2 tertiary header", nv.NVC56F_DMA_SEC_OP_RESERVED6: "a reserved opcode (6)"}

class MethodError(ValueError):
  """A malformed or unsupported method, naming the dword, subchannel and method."""
  def __init__(self, pos:int, subchannel:int|None, method:int|None, message:str):
    self.pos, self.subchannel, self.method = pos, subchannel, method
    where = f"dword {pos}" + (f", subchannel {subchannel} method {method:#x}" if method is not None else "")
    super().__init__(f"NV method stream, {where}: {message}")

def host_address(hi:int, lo:int) -> int:
  """A host-class semaphore address from SEM_ADDR_HI/LO (40 bits, 4-byte aligned)."""
  return (hi & 0xff) << 32 | (lo & ~3)

def copy_address(upper:int, lower:int) -> int:
  """A copy-class address from an UPPER/LOWER (or SEMAPHORE_A/B) pair (49 bits)."""
  return (upper & 0x1ffff) << 32 | lower

def bits(value:int, field:tuple[int, int]) -> int:
  hi, lo = field
  return (value >> lo) & ((1 << (hi - lo + 1)) - 1)

def decode(words, resume:tuple[int, int]=(0, 0)):
  """(position of its header, position of its data, subchannel, method, value) for every method write from `resume` on: a
  (header, data) position a Stall gave, the writes of that header before `data` skipped. An immediate's data position is its
  header's. MethodError for a header this decoder cannot run past."""
  i, skip_until = resume
  while i < len(words):
    h = int(words[i])
    if h == NOP:
      i += 1
      continue
    op, subc, mthd, n = bits(h, nv.NVC56F_DMA_SEC_OP), bits(h, nv.NVC56F_DMA_METHOD_SUBCHANNEL), \
      bits(h, nv.NVC56F_DMA_METHOD_ADDRESS) << 2, bits(h, nv.NVC56F_DMA_METHOD_COUNT)
    if op == END_SEGMENT: return
    if op in UNMODELLED_HEADERS: raise MethodError(i, None, None, f"header {h:#010x}: {UNMODELLED_HEADERS[op]} is not modelled")
    if op == IMMEDIATE:
      if i >= skip_until: yield i, i, subc, mthd, n
      i += 1
      continue
    if i + n >= len(words) + (n == 0): raise MethodError(i, subc, mthd, f"the header announces {n} data dwords past the end")
    for k in range(n):
      step = k if op == INC else 0 if op == NON_INC else min(k, 1)
      if i + 1 + k >= skip_until: yield i, i + 1 + k, subc, mthd + 4 * step, int(words[i + 1 + k])
    i += 1 + n

@dataclass
class Stall:
  """The channel waits: `pos` is (its header, its data dword) of the method to run again, `reason` what it waits for."""
  pos: tuple[int, int]
  reason: str

class Channel:
  """One GPFIFO channel's engines (host semaphores, compute launches, copies) over `memory`. `clock_ns()` gives the timestamps
  releases write; `watchdog` (re-armed per launch) bounds each kernel; kernels are timed on `board` (emu.nv.boards);
  `finished(stats)` runs after each kernel, before its releases (the device advances its clock by the kernel's modelled time
  there); `copied(nbytes)` after each copy; `never_released(addr)` says why an unsatisfied acquire of `addr` can never be
  satisfied (a stopped channel owed the semaphore), or None; it gets the asking channel too."""
  def __init__(self, memory:MemoryMap, clock_ns:Callable[[], int], programs:ProgramCache|None=None, watchdog:Watchdog|None=None,
               finished:Callable[[LaunchStats], None]|None=None, copied:Callable[[int], None]|None=None, board=None,
               never_released:Callable[[int, Channel], str|None]=lambda addr, waiter: None):
    self.memory, self.clock_ns, self.programs, self.never_released = memory, clock_ns, programs or ProgramCache(), never_released
    self.watchdog, self.finished, self.copied, self.board = watchdog, finished, copied, board
    self.sem = {"addr_lo": 0, "addr_hi": 0, "payload_lo": 0, "payload_hi": 0}
    self.qmd_addr = 0
    self.launches = self.copies = 0
    self.signals: dict[int, int] = {}   # address -> last payload of every release with a timestamp (tinygrad's signals) it made
    self.dma: dict[int, int] = {}   # copy-class registers by method

  def run(self, words, resume:tuple[int, int]=(0, 0)) -> Stall | None:
    """Execute the method stream from `resume` (the start, or where a Stall stopped); None when it ran to the end."""
    for header, pos, subc, mthd, value in decode(words, resume):
      if subc == HOST: stall = self._host(pos, mthd, value)
      elif subc == COMPUTE: stall = self._compute(pos, mthd, value)
      elif subc == COPY: stall = self._copy(pos, mthd, value)
      else: raise MethodError(pos, subc, mthd, "this subchannel's class is not modelled")
      if stall is not None: return Stall((header, pos), stall)
    return None

  # ---- host class (NVC56F) ----
  def _host(self, pos:int, mthd:int, value:int) -> str | None:
    if (field := SEMAPHORE_FIELDS.get(mthd)) is not None:
      self.sem[field] = value
      return None
    if mthd == nv.NVC56F_NON_STALL_INTERRUPT: return None
    if mthd == nv.NVC56F_SEM_EXECUTE: return self._sem_execute(pos, value)
    raise MethodError(pos, HOST, mthd, "host method not modelled")

  def _sem_execute(self, pos:int, value:int) -> str | None:
    op, wide = bits(value, nv.NVC56F_SEM_EXECUTE_OPERATION), bits(value, nv.NVC56F_SEM_EXECUTE_PAYLOAD_SIZE)
    addr = host_address(self.sem["addr_hi"], self.sem["addr_lo"])
    payload = self.sem["payload_lo"] | (self.sem["payload_hi"] << 32 if wide else 0)
    nbytes = 8 if wide else 4
    if op == nv.NVC56F_SEM_EXECUTE_OPERATION_RELEASE:
      data = payload.to_bytes(nbytes, "little")
      if bits(value, nv.NVC56F_SEM_EXECUTE_RELEASE_TIMESTAMP):
        data = data.ljust(8, b"\0") + self.clock_ns().to_bytes(8, "little")
        self.signals[addr] = payload
      self.memory.write(addr, data)
      return None
    cur = int.from_bytes(self.memory.read(addr, nbytes), "little")
    w = 8 * nbytes
    conds = {nv.NVC56F_SEM_EXECUTE_OPERATION_ACQUIRE: cur == payload,
             nv.NVC56F_SEM_EXECUTE_OPERATION_ACQ_STRICT_GEQ: cur >= payload,
             nv.NVC56F_SEM_EXECUTE_OPERATION_ACQ_CIRC_GEQ: ((cur - payload) & ((1 << w) - 1)) < (1 << (w - 1)),
             nv.NVC56F_SEM_EXECUTE_OPERATION_ACQ_AND: (cur & payload) != 0,
             nv.NVC56F_SEM_EXECUTE_OPERATION_ACQ_NOR: (~(cur | payload) & ((1 << w) - 1)) != 0}
    if op not in conds: raise MethodError(pos, HOST, nv.NVC56F_SEM_EXECUTE, f"SEM_EXECUTE operation {op} not modelled")
    if conds[op]: return None
    if (why := self.never_released(addr, self)) is not None:   # a stopped channel owed it: the acquire can never be satisfied
      raise MethodError(pos, HOST, nv.NVC56F_SEM_EXECUTE, f"the acquire of {addr:#x} (= {cur:#x}, for {payload:#x}) waits forever: {why}")
    return f"semaphore at {addr:#x} = {cur:#x}, waiting for operation {op} with {payload:#x}"

  # ---- compute class (NVC6C0 / ADA_COMPUTE_A) ----
  STATE = (nv.NVC6C0_SET_OBJECT, nv.NVC6C0_SET_SHADER_LOCAL_MEMORY_WINDOW_A, nv.NVC6C0_SET_SHADER_LOCAL_MEMORY_WINDOW_A + 4,
           nv.NVC6C0_SET_SHADER_SHARED_MEMORY_WINDOW_A, nv.NVC6C0_SET_SHADER_SHARED_MEMORY_WINDOW_A + 4, nv.NVC6C0_SET_SHADER_LOCAL_MEMORY_A,
           nv.NVC6C0_SET_SHADER_LOCAL_MEMORY_A + 4, nv.NVC6C0_SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_A,
           nv.NVC6C0_SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_A + 4, nv.NVC6C0_SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_A + 8,
           nv.NVC6C0_INVALIDATE_SHADER_CACHES_NO_WFI, nv.NVC6C0_PM_TRIGGER)

  def _compute(self, pos:int, mthd:int, value:int) -> str | None:
    if mthd in self.STATE: return None   # windows, local memory, cache invalidation: nothing the emulator keeps
    if mthd == nv.NVC6C0_SEND_PCAS_A:
      self.qmd_addr = value << 8
      return None
    if mthd == nv.NVC6C0_SEND_SIGNALING_PCAS2_B:
      try:
        for launch in qmd_chain(self.memory, self.qmd_addr):
          if self.watchdog is not None: self.watchdog.arm()
          run_launch(launch, self.memory, self.programs, self.clock_ns, self.watchdog, self.finished, self.board)
          self.launches += 1
          self.signals.update((r.address, r.payload) for r in launch.releases)   # a QMD release writes its timestamp too
      except ValueError as e: raise MethodError(pos, COMPUTE, mthd, str(e)) from None
      return None
    raise MethodError(pos, COMPUTE, mthd, "compute method not modelled")

  # ---- copy class (NVC6B5 / AMPERE_DMA_COPY_B) ----
  DMA_REGS = (nv.NVC6B5_OFFSET_IN_UPPER, nv.NVC6B5_OFFSET_IN_LOWER, nv.NVC6B5_OFFSET_OUT_UPPER, nv.NVC6B5_OFFSET_OUT_LOWER,
              nv.NVC6B5_LINE_LENGTH_IN, nv.NVC6B5_SET_SEMAPHORE_A, nv.NVC6B5_SET_SEMAPHORE_B, nv.NVC6B5_SET_SEMAPHORE_PAYLOAD)

  def _copy(self, pos:int, mthd:int, value:int) -> str | None:
    if mthd == nv.NVC6C0_SET_OBJECT: return None
    if mthd in self.DMA_REGS:
      self.dma[mthd] = value
      return None
    if mthd != nv.NVC6B5_LAUNCH_DMA: raise MethodError(pos, COPY, mthd, "copy method not modelled")
    r = lambda m: self.dma.get(m, 0)  # noqa: E731
    if bits(value, nv.NVC6B5_LAUNCH_DMA_DATA_TRANSFER_TYPE) != nv.NVC6B5_LAUNCH_DMA_DATA_TRANSFER_TYPE_NONE:
      if bits(value, nv.NVC6B5_LAUNCH_DMA_MULTI_LINE_ENABLE) or \
         bits(value, nv.NVC6B5_LAUNCH_DMA_SRC_MEMORY_LAYOUT) != nv.NVC6B5_LAUNCH_DMA_SRC_MEMORY_LAYOUT_PITCH or \
         bits(value, nv.NVC6B5_LAUNCH_DMA_DST_MEMORY_LAYOUT) != nv.NVC6B5_LAUNCH_DMA_DST_MEMORY_LAYOUT_PITCH:
        raise MethodError(pos, COPY, mthd, f"LAUNCH_DMA {value:#x}: only single-line pitch copies are modelled")
      src = copy_address(r(nv.NVC6B5_OFFSET_IN_UPPER), r(nv.NVC6B5_OFFSET_IN_LOWER))
      dst = copy_address(r(nv.NVC6B5_OFFSET_OUT_UPPER), r(nv.NVC6B5_OFFSET_OUT_LOWER))
      self.memory.write(dst, self.memory.read(src, r(nv.NVC6B5_LINE_LENGTH_IN)))
      self.copies += 1
      if self.copied is not None: self.copied(r(nv.NVC6B5_LINE_LENGTH_IN))
    sem = bits(value, nv.NVC6B5_LAUNCH_DMA_SEMAPHORE_TYPE)
    if sem:   # after the transfer: one word (the payload) or four (payload, a zero word, the timestamp at +8)
      addr = copy_address(r(nv.NVC6B5_SET_SEMAPHORE_A), r(nv.NVC6B5_SET_SEMAPHORE_B))
      data = r(nv.NVC6B5_SET_SEMAPHORE_PAYLOAD).to_bytes(4, "little")
      if sem == nv.NVC6B5_LAUNCH_DMA_SEMAPHORE_TYPE_RELEASE_FOUR_WORD_SEMAPHORE:
        data += bytes(4) + self.clock_ns().to_bytes(8, "little")
        self.signals[addr] = r(nv.NVC6B5_SET_SEMAPHORE_PAYLOAD)
      self.memory.write(addr, data)
    return None

MAX_CHAIN = 1 << 16   # QMDs one SEND_PCAS may launch through dependent pointers (tinygrad's graphs chain a few hundred at most)

def qmd_chain(memory:MemoryMap, addr:int):
  """The launches of the QMD at `addr` and those chained after it through dependent pointers, read one at a time; ValueError
  (naming the QMD) for a QMD that cannot be decoded, or a chain that returns to a QMD it already launched or runs past
  MAX_CHAIN (a chain the hardware would run forever)."""
  seen: set[int] = set()
  while addr is not None:
    if addr in seen or len(seen) >= MAX_CHAIN:
      raise ValueError(f"QMD at {addr:#x}: the dependent-QMD chain " + (f"loops back to it after {len(seen)} launches" if addr in seen
                       else f"is longer than {MAX_CHAIN} QMDs"))
    seen.add(addr)
    try: launch = Launch.read(memory.read(addr, QMD_BYTES))   # an unmapped QMD is the GPU memory fault of the read
    except ValueError as e: raise ValueError(f"QMD at {addr:#x}: {e}") from None
    yield launch
    addr = launch.dependent

def pending_releases(memory:MemoryMap, words) -> dict[int, int]:
  """The semaphores a method stream releases (host and copy releases, and the releases of the QMDs it launches), as address ->
  the largest payload released there, read without executing anything; a part that cannot be decoded contributes nothing."""
  out: dict[int, int] = {}
  regs: dict[tuple[int, int], int] = {}
  def add(addr:int, payload:int): out[addr] = max(payload, out.get(addr, 0))
  try:
    for _, _, subc, mthd, value in decode(words):
      regs[(subc, mthd)] = value
      r = lambda m, s=subc: regs.get((s, m), 0)  # noqa: E731
      release = bits(value, nv.NVC56F_SEM_EXECUTE_OPERATION) == nv.NVC56F_SEM_EXECUTE_OPERATION_RELEASE
      if subc == HOST and mthd == nv.NVC56F_SEM_EXECUTE and release:
        add(host_address(r(nv.NVC56F_SEM_ADDR_HI), r(nv.NVC56F_SEM_ADDR_LO)), r(nv.NVC56F_SEM_PAYLOAD_LO) | r(nv.NVC56F_SEM_PAYLOAD_HI) << 32)
      elif subc == COPY and mthd == nv.NVC6B5_LAUNCH_DMA and bits(value, nv.NVC6B5_LAUNCH_DMA_SEMAPHORE_TYPE):
        add(copy_address(r(nv.NVC6B5_SET_SEMAPHORE_A), r(nv.NVC6B5_SET_SEMAPHORE_B)), r(nv.NVC6B5_SET_SEMAPHORE_PAYLOAD))
      elif subc == COMPUTE and mthd == nv.NVC6C0_SEND_SIGNALING_PCAS2_B:
        try:
          for launch in qmd_chain(memory, r(nv.NVC6C0_SEND_PCAS_A) << 8):
            for rel in launch.releases: add(rel.address, rel.payload)
        except (ValueError, GPUFault): pass   # a QMD that cannot be read releases nothing; the methods after it still count
  except (MethodError, ValueError, GPUFault): pass
  return out

def words_of(q) -> np.ndarray:
  """The dwords of a tinygrad HWQueue (its `_q` list), for tests and tools."""
  return np.array([int(v) & 0xffffffff for v in q._q], np.uint32)
