"""The PCIe physical address space the mock GPUs see: host pages (as /proc/self/pagemap reports them) and the GPUs' VRAM BARs.

A system-memory PTE holds a bus address. The AM driver learns the bus address of a host page from /proc/self/pagemap and that
of a peer GPU's VRAM from the peer's `resource` file (BAR0 start plus the offset). Real page frame numbers would let a GPU reach
any page of the machine; here frames are handed out on demand: the first time pagemap is read for a host page, the page gets the
next free frame, and the frame stays bound to that virtual page. Frames and BAR windows both sit below 2**44, the physical
address space RDNA page tables take. `resolve` turns a bus address back into host memory (a host page, or the VRAM mapping of
the GPU whose BAR holds it).
"""
from __future__ import annotations
import bisect, mmap
from typing import Callable

PAGE = mmap.PAGESIZE
FRAME_BASE = 0x1_0000_0000            # first host frame handed out (bus address)
BAR_BASE, BAR_STRIDE = 0x800_0000_0000, 0x40_0000_0000   # GPU i's VRAM BAR: BAR_BASE + i * BAR_STRIDE (256 GB apart)

class PhysicalBus:
  """Host frames and BAR windows; one per process, shared by every mock PCI GPU."""
  def __init__(self):
    self._va: list[int] = []              # sorted first virtual page of each run of frames
    self._runs: list[tuple[int, int, int]] = []   # (first virtual page, first frame, pages), sorted by virtual page
    self._by_frame: list[tuple[int, int, int]] = []   # the same runs sorted by frame
    self._next = FRAME_BASE // PAGE
    self.bars: dict[int, tuple[int, Callable[[int, int], int]]] = {}   # BAR start -> (size, host address of offset, size)

  def frames(self, vpage:int, count:int) -> list[int]:
    """Frame numbers of `count` virtual pages from `vpage` (assigning frames to pages that have none yet)."""
    out: list[int] = []
    while count > 0:
      i = bisect.bisect_right(self._va, vpage) - 1
      if i >= 0 and vpage < (r:=self._runs[i])[0] + r[2]:
        n = min(count, r[0] + r[2] - vpage)
        out += range(r[1] + vpage - r[0], r[1] + vpage - r[0] + n)
      else:
        n = min(count, self._va[i + 1] - vpage) if i + 1 < len(self._va) else count
        run = (vpage, self._next, n)
        self._next += n
        self._runs.insert(i + 1, run)
        self._va.insert(i + 1, vpage)
        bisect.insort(self._by_frame, (run[1], run[0], n))
        out += range(run[1], run[1] + n)
      vpage, count = vpage + n, count - n
    return out

  def add_bar(self, start:int, size:int, host:Callable[[int, int], int]):
    """Publish a VRAM BAR at bus address `start`; `host(offset, size)` is the host address of that part of VRAM."""
    self.bars[start] = (size, host)

  def resolve(self, addr:int, size:int) -> list[tuple[int, int, int]]:
    """The parts of bus range [addr, addr+size) that reach memory, as (offset into the range, host address, bytes); host-contiguous
    parts are merged, and what no BAR or host frame answers is left out (a GPU access there faults)."""
    for start, (bar_size, host) in self.bars.items():
      if start <= addr and addr + size <= start + bar_size: return [(0, host(addr - start, size), size)]
    out: list[tuple[int, int, int]] = []
    i = bisect.bisect_right(self._by_frame, (addr // PAGE, 1 << 62, 0)) - 1
    pos = addr
    while pos < addr + size:
      if i >= 0 and i < len(self._by_frame) and (r:=self._by_frame[i])[0] * PAGE <= pos < (r[0] + r[2]) * PAGE:
        n = min(addr + size, (r[0] + r[2]) * PAGE) - pos
        host = r[1] * PAGE + pos - r[0] * PAGE
        if out and out[-1][0] + out[-1][2] == pos - addr and out[-1][1] + out[-1][2] == host: out[-1] = (out[-1][0], out[-1][1], out[-1][2] + n)
        else: out.append((pos - addr, host, n))
        pos += n
      else:   # a gap: skip to the next frame run
        i += 1
        if i >= len(self._by_frame): break
        pos = max(pos, self._by_frame[i][0] * PAGE)
        continue
      i += 1
    return out

BUS = PhysicalBus()
