"""Target `x86`: tinygrad's x86 ISA renderer (tinygrad/renderer/isa/x86.py) against the dtype reference.

A random small program (fuzz.tiny_program) is scheduled by tinygrad; every kernel is compiled with X86Renderer (whose render()
emits machine code directly and whose X86Compiler only un-hexes it, so no assembler is involved) and executed, never on the
host CPU: under QEMU user mode (fuzz.x86_qemu) where qemu-x86_64 >= 7.2 and clang are installed, else in unicorn
(fuzz.x86_unicorn). The output buffer is judged by fuzz.judge (numpy in the program's own dtypes, CPU:LLVM as a second opinion).
Kinds: `x86-mismatch` (wrong values), `x86-fault` (crash, bad access, runaway loop, callee-saved register clobbered),
`x86-compile-error` (the renderer raised),
`unicorn-invalid-insn` (unicorn cannot execute an instruction the renderer emitted). The executor is chosen by measurement
(`executor()`: the vaddss 3-operand probe); where it ignores VEX 3-operand semantics (unicorn 2.1.x) value mismatches cannot
be blamed on the renderer and are filed as `x86-mismatch-unverified`. Every finding's detail starts with the executor's name.
"""
from __future__ import annotations
import functools, random, sys
from typing import Callable, NamedTuple
import numpy as np
from tinygrad import Tensor
from tinygrad.codegen import do_to_program
from tinygrad.engine.realize import get_call_arg_uops
from tinygrad.helpers import Context, Target as TGTarget
from tinygrad.renderer.isa.x86 import X86Renderer
from tinygrad.uop.ops import Ops
from fuzz import tiny_program, x86_qemu, x86_unicorn
from fuzz.finding import Finding
from fuzz.judge import judge, run_device
from fuzz.registry import Target, register
from fuzz.shrink import greedy

RENDERER = X86Renderer(TGTarget("CPU", "X86", "x86_64,native"))

class Executor(NamedTuple):
  """How kernels run: `name` (qemu or unicorn), `call` (the executor's call(code, args, buffers)), `vex_ok` (VEX 3-operand
  semantics measured by the vaddss probe: value mismatches are then blamed on the renderer), `why` (why this one)."""
  name: str
  call: Callable[..., dict[str, bytes]]
  vex_ok: bool
  why: str

@functools.cache
def executor() -> Executor:
  """QEMU user mode when it is installed, its harness builds and it passes the vaddss probe; unicorn otherwise (said on stderr)."""
  why = x86_qemu.unavailable()
  if why is None and not x86_qemu.vex_faithful(): why = "qemu-x86_64 fails the vaddss 3-operand probe (QEMU < 7.2?)"
  if why is None: ex = Executor("qemu", x86_qemu.call, True, "qemu-x86_64 -cpu max passes the vaddss 3-operand probe")
  else:
    ok = x86_unicorn.vex_faithful()
    ex = Executor("unicorn", x86_unicorn.call, ok, f"{why}; unicorn {'passes' if ok else 'fails'} the vaddss 3-operand probe")
  print(f"x86: executing kernels in {ex.name} ({ex.why})", file=sys.stderr)
  return ex

def _np_dtype(t:Tensor) -> np.dtype: return np.dtype(t.dtype.fmt) if t.dtype.fmt else np.dtype(t.dtype.name)

def run_x86(case:dict) -> np.ndarray:
  """Schedule the program, compile each kernel with X86Renderer and execute the kernels in order (`executor()`); the output array."""
  ins = [Tensor(tiny_program.input_array(i), device="PYTHON").realize() for i in case["inputs"]]
  out = tiny_program.build(case, ins)
  shape, dt = out.shape, _np_dtype(out)
  linear = out.schedule_linear()
  mem: dict = {}  # base Buffer -> its bytes as the kernels left them; views (Buffer.offset) are slices of their base
  ex = executor()
  def span(buf) -> slice: return slice(buf.offset, buf.offset + buf.nbytes)
  def content(buf) -> bytes:
    if (base:=buf.base) not in mem: mem[base] = bytearray(base.as_memoryview() if base.is_allocated() else base.nbytes)
    return bytes(mem[base][span(buf)])
  for call in linear.src:
    if call.src[0].op is not Ops.SINK: raise Finding("x86-unsupported", f"schedule item {call.src[0].op}", key=(str(call.src[0].op),))
    try: prg = do_to_program(call.src[0], RENDERER)
    except Exception as e: raise Finding("x86-compile-error", f"{type(e).__name__}: {e}", key=(type(e).__name__,)) from None
    code, info = next(s.arg for s in prg.src if s.op is Ops.BINARY), prg.arg
    bufs = [b.buffer for b in get_call_arg_uops(call)]
    names = {f"b{i}": b for i, b in enumerate(bufs)}
    if any(v.expr != "core_id" for v in info.vars): raise Finding("x86-unsupported", f"kernel vars {info.vars}", key=("vars",))
    for core in range(int(info.global_size[0]) if info.vars else 1):
      args = [f"b{i}" for i in info.globals] + [core for _ in info.vars]
      try: res = ex.call(code, args, {n: content(b) for n, b in names.items()})
      except x86_unicorn.Fault as e:
        kind = "unicorn-invalid-insn" if "INSN_INVALID" in str(e) else "x86-fault"
        raise Finding(kind, f"[{ex.name}] {e}; steps {case['steps']}", key=(str(e).split(" at ")[0][:40],)) from None
      for n, b in names.items(): mem[b.base][span(b)] = res[n]
  return np.frombuffer(content(out.uop.buffer), dtype=dt)[:int(np.prod(shape))].reshape(shape)  # a view when no kernel copied

def generate(rng:random.Random) -> dict: return tiny_program.generate(rng)

def check(case:dict) -> None:
  """Raise a Finding when the x86-rendered program, run by `executor()`, disagrees with fuzz.reference (fuzz.judge: numpy in the
  program's dtypes, CPU:LLVM as a second opinion; a matmul program: tiny_program.compare_matmul)."""
  with Context(DEV="PYTHON"): got = run_x86(case)
  ex = executor()
  try:
    if tiny_program.is_matmul(case):
      if (diff := tiny_program.compare_matmul(got, case)) is not None: raise Finding("x86-mismatch", diff[0], key=diff[1])
    else: judge("x86", case, got, lambda d, llvm=None: run_device(d, case, llvm), "x86")
  except Finding as f:
    raise Finding("x86-mismatch" if ex.vex_ok else "x86-mismatch-unverified", f"[{ex.name}] {f.detail}", key=f.key) from None

def simpler(case:dict):
  """Drop a step, drop the second input, or replace an input value by 0 or 1. A matmul program keeps its matmul and the casts
  around it (without them it is another program: a bfloat16 result numpy cannot hold, a matmul the reference does not know)."""
  keep = ("matmul", "cast") if tiny_program.is_matmul(case) else ()
  for i, st in enumerate(case["steps"]):
    if st[0] not in keep: yield {**case, "steps": case["steps"][:i] + case["steps"][i+1:]}
  for j, inp in enumerate(case["inputs"]):
    for k, v in enumerate(inp["data"]):
      for nv in (0, 1):
        if v == nv: continue
        new = {**inp, "data": inp["data"][:k] + [nv] + inp["data"][k+1:]}
        yield {**case, "inputs": case["inputs"][:j] + [new] + case["inputs"][j+1:]}

def minimise(case:dict, fails) -> dict:
  """Shrink steps first, then input values, while the same finding persists."""
  return greedy(case, fails, simpler, budget=40)

register(Target("x86", generate, check, minimise, doc="tinygrad's x86 ISA renderer in QEMU user mode (else unicorn) vs the dtype reference"))
