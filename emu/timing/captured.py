"""What a loaded capture is: traced kernels, their waves and issues (the readers, emu.timing.traces and emu.timing.decoded, build
them; the replay and the comparison read them)."""
from __future__ import annotations
from dataclasses import dataclass, field

@dataclass
class Issue:
  """One instruction issue seen in the trace: PC (code-object address), the decoded DSL instruction, cycle timestamp."""
  pc: int
  inst: object
  cycle: int
  @property
  def name(self) -> str: return getattr(self.inst, "op_name", type(self.inst).__name__).lower()

@dataclass
class WaveTrace:
  """One wave on a traced SIMD: shader engine, hardware wave slot, start/end cycles and its issues (s_endpgm last)."""
  se: int
  slot: int
  start: int | None
  end: int | None = None
  issues: list[Issue] = field(default_factory=list)

@dataclass
class WaveStart:
  """A WAVESTART packet: where and when a wave of the kernel was launched."""
  se: int
  cu: int
  simd: int
  slot: int
  cycle: int

@dataclass
class TracedKernel:
  """One traced dispatch: program name, ELF code object, load address, arch; instruction-traced waves and all wave starts."""
  name: str
  display: str
  lib: bytes
  base: int
  arch: str
  waves: list[WaveTrace]
  starts: list[WaveStart]
  ends: list[tuple[int, int]]   # (shader engine, cycle) of every WAVEEND
  buffers: int
  launch: tuple[tuple[int, int, int], tuple[int, int, int]] | None = None   # (grid, workgroup) when the capture came with it
  span: int | None = None   # the hardware duration, for captures without wave start/end packets
  @property
  def cycles(self) -> int:
    """Hardware duration: first wave start to last wave end, within each shader engine's stream, the longest over engines.

    Each engine's stream counts from its own trace start (the captures see one register write at 1032/710/385/63 cycles in the
    four gfx1200 streams), so times of different engines are not comparable."""
    if self.span is not None: return self.span
    first: dict[int, int] = {}
    for st in self.starts: first[st.se] = min(first.get(st.se, st.cycle), st.cycle)
    return max((end - first[se] for se, end in self.ends if se in first), default=0)
