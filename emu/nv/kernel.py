"""tinygrad's PTX for a tinygrad function, for tests and tools: the same renderer MOCK+NV:PTX uses, without a device."""
from __future__ import annotations
from dataclasses import dataclass

@dataclass
class RenderedKernel:
  """PTX text with tinygrad's VERSION/TARGET placeholders filled, the entry name, grid and block sizes, and for each kernel
  parameter the index of the input tensor it is (-1: the output)."""
  ptx: str
  name: str
  grid: tuple[int, ...]
  block: tuple[int, ...]
  order: list[int]

def render(fn, *shapes, dtype:str="float32", arch:str="sm_89", version:str="7.8") -> RenderedKernel:
  """Render the last kernel of fn(*tensors) (empty tensors of `shapes`) with tinygrad's PTXRenderer for `arch`."""
  from tinygrad import Tensor, dtypes
  from tinygrad.uop.ops import Ops
  from tinygrad.helpers import Target, DEV
  if not DEV.device: DEV.value = "PYTHON"   # constants in the graph need a default device; nothing runs on it
  from tinygrad.renderer.ptx import PTXRenderer
  from tinygrad.codegen import to_program
  ts = [Tensor.empty(*s, dtype=getattr(dtypes, dtype), device="PYTHON") for s in shapes]
  lin = fn(*ts).schedule_linear()
  call = [c for c in lin.src if c.op is Ops.CALL][-1]
  prg = to_program(call.src[0], PTXRenderer(Target("NV", "PTX", arch, interface="MOCK")))
  src = next(x.arg for x in prg.src if x.op is Ops.SOURCE)
  order = [next((i for i, t in enumerate(ts) if p in (t.uop, t.uop.base)), -1) for p in call.src[1:]]
  info = prg.arg
  return RenderedKernel(src.replace("VERSION", version).replace("TARGET", arch), info.function_name,
                        tuple(int(x) for x in info.global_size), tuple(int(x) for x in (info.local_size or (1, 1, 1))), order)
