"""The contract between compiled pcode ops and the executor that calls them (emu/amd): `CompiledOp` (what an op reads and
writes, its kind, widths, lane masks, memory use), `OpState`, the memory protocols and `Unsupported`. How each kind of op is
called (operand layouts per kind, the preloaded destination, lane masks, instruction fields, the MODE inputs, memory, the
matrix ops' inputs) is written out in docs/pcode.md, "The contract between compiled ops and the executor".
"""
from __future__ import annotations
from dataclasses import dataclass, field
from typing import Callable, Protocol
import numpy as np

ARCH_ALIASES = {"rdna3": "rdna3", "gfx1100": "rdna3", "gfx1151": "rdna3", "rdna4": "rdna4", "gfx1200": "rdna4", "gfx1201": "rdna4",
                "cdna": "cdna", "gfx942": "cdna", "gfx950": "cdna"}
KINDS = ("vector", "scalar", "wave", "executor")
# fp8/bf8 encodings per gfx target: gfx942 reads them as FNUZ (no infinities, one NaN, bias one higher), later targets as OCP
FP8_FNUZ = {"gfx942": True, "gfx950": False}
MODE_DEFAULTS = {"MODE_ROUND32": 0, "MODE_ROUND16": 0, "MODE_DENORM32": 3, "MODE_DENORM16": 3}   # IEEE: nearest even, denormals kept

class Unsupported(Exception):
  """An opcode the pcode compiler cannot turn into an op. `category` groups reasons in reports ('no pcode', 'parse error',
  'missing helper', 'codegen', ...); `reason` says what exactly."""
  def __init__(self, category:str, reason:str, op:str=""):
    self.category, self.reason, self.op = category, reason, op
    super().__init__(f"{op}: {category}: {reason}" if op else f"{category}: {reason}")

class InvalidField(ValueError):
  """A hand-written op (MFMA, SWMMAC) met an instruction field value it does not define or model (MFMA CBSZ/ABID/BLGP broadcast,
  an out-of-range index set). The executor reports it as an illegal instruction naming the op."""

class VectorMemory(Protocol):
  """Memory as a vector op sees it. Addresses are uint64 (n,) arrays of byte addresses, one per lane."""
  def read(self, addrs:np.ndarray, nbytes:int) -> np.ndarray:
    """Little-endian load of `nbytes` (1, 2, 4 or 8) per lane; returns uint64 (n,) zero-extended values."""
  def write(self, addrs:np.ndarray, values:np.ndarray, nbytes:int) -> None:
    """Store the low `nbytes` (1, 2, 4 or 8) of each uint64 value little-endian at its lane's address, lanes in order."""

class ScalarMemory(Protocol):
  """Memory as a scalar (SMEM) op sees it: one address, Python ints."""
  def read(self, addr:int, nbytes:int) -> int:
    """Little-endian load of `nbytes` (1, 2, 4 or 8) at addr."""
  def write(self, addr:int, value:int, nbytes:int) -> None:
    """Store the low `nbytes` of value little-endian at addr."""

class OpState:
  """The attribute bag an op reads and writes (see the module docstring for each attribute). Any object will do."""
  def __init__(self, **kw): self.__dict__.update(kw)
  def __repr__(self): return f"OpState({', '.join(f'{k}={v!r}' for k, v in self.__dict__.items())})"

@dataclass
class CompiledOp:
  """One opcode's executable semantics.

  fn(st) runs the op on an `OpState` (None for kind 'executor'). `reads`/`writes` name the OpState attributes it uses;
  `widths` gives the bit width of each operand it touches (S0/S1/S2/D0/D1/DATA/DATA2/ADDR/VDATA/SDATA/RETURN_DATA ...);
  `lane_masks` names the lane-mask registers a vector op accesses as one bit per lane. `source` is the generated Python,
  `pcode` the vendor text it came from, `override` the reason when the semantics come from the override table; `views` the type
  kinds ('u' 'i' 'b' 'f' 'bf') the pcode reads or writes each of S0/S1/S2/D0 as (empty for ops it does not compile).
  `waves_at_once`: a 'wave' op whose fn also takes VGPR as a (waves, lanes, registers) array and runs every wave of it in one call
  (it reads no per-wave scalar: no EXEC, M0 or SGPR source), each wave's result as a call of its own would give."""
  arch: str
  name: str
  kind: str
  fn: Callable[[OpState], None] | None
  reads: frozenset[str] = frozenset()
  writes: frozenset[str] = frozenset()
  widths: dict[str, int] = field(default_factory=dict)
  lane_masks: frozenset[str] = frozenset()
  mem: str = ""
  mem_rmw: bool = False
  source: str = ""
  pcode: str = ""
  override: str = ""
  views: dict[str, frozenset[str]] = field(default_factory=dict)
  waves_at_once: bool = False
