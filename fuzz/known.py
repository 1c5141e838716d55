"""Known bugs of the system under test (tinygrad 0.14.0's renderers and LLVM), which the kernel-level targets label instead of
reporting: a case they explain is counted as `known: <name>` in the progress line and summary and never saved as a finding.

A bug is matched one of three ways, so that a label is never a guess:
- a value bug by its deviation (a fuzz.reference.Model switch): every element where the device differs from the reference went
  through it under tinygrad's semantics (reference.reached: an 8-bit value wrapped, a NaN met a maximum); an element no known
  deviation reached stays a finding, whatever the device gives there;
- an error bug by the error message the device raised;
- a compiler bug by a rebuild: the same program compiled by another LLVM for the same arch (`rebuilt_with`) gives the reference's
  result on the same emulator, so the first binary, not the emulator, computed something else (fuzz.judge asks last, since it
  runs the program again; an emulator bug in an instruction only the first LLVM emits would hide here, which the instruction-
  level targets, asm.* and isa.*, are there to catch).
Each entry names the devices it applies to (DEV strings, matched as prefixes) and what tinygrad does wrong. Adding one: give it
a model switch (fuzz.reference) or an error pattern, a test in tests/fuzz/test_known.py whose expected result is worked by hand,
and a line in docs/fuzzing.md.
"""
from __future__ import annotations
import re
from dataclasses import dataclass
import numpy as np
from fuzz import reference, tiny_program
from emu.amd.api import ARCHS
from emu.amd.arch import SPECS

@dataclass(frozen=True)
class KnownBug:
  """One known bug: its label, the devices it applies to, what it is, and how a case is matched to it."""
  name: str
  devices: tuple[str, ...]
  doc: str
  model: reference.Model | None = None
  error: str | None = None
  rebuilt_with: int | None = None   # the LLVM major whose build of the program runs right

PTX, CUDA, LLVM = ("MOCK+NV:PTX",), ("MOCK+NV:CUDA",), ("MOCKKFD+AMD", "MOCKPCI+AMD", "CPU:LLVM")
DEFAULT_LLVM = 19   # the libLLVM tinygrad loads for the AMD arches that LLVM 19 knows
AMD_ON_LLVM_19 = tuple(f"{iface}+AMD:LLVM:{a}" for iface in ("MOCKKFD", "MOCKPCI") for a in ARCHS if SPECS[a].llvm_min <= DEFAULT_LLVM)
KNOWN: tuple[KnownBug, ...] = (
  KnownBug("cuda-small-int-promotion", CUDA, "the CUDA renderer writes int8/uint8/int16 arithmetic as plain C, which promotes it to int: "
           "the result is not wrapped at the type's width before a widening cast or a comparison (-val of a uint8 is -1, not 255; "
           "int8 x * -2 then a cumsum sees 298, not 42)", model=reference.Model(small_ints_as_int=True)),
  KnownBug("ptx-8-bit-in-16-bit-registers", PTX, "the PTX renderer keeps int8/uint8 values in 16-bit registers and does not wrap them at 8 "
           "bits between operations (max(255 * 255, 2) sees 65025)", model=reference.Model(eight_bit_in_16_bits=True)),
  KnownBug("ptx-minmax-drops-nan", PTX, "the PTX renderer maps maximum/minimum to PTX max/min, which return the non-NaN operand; "
           "tinygrad's maximum returns its first operand when either is NaN", model=reference.Model(minmax_drops_nan=True)),
  KnownBug("ptx-f64-approx", PTX, "the PTX renderer emits sqrt/ex2/lg2/sin/rcp.approx.f64 for float64 sqrt, exp2, log2, sin and division, "
           "which PTX does not define (ptxas rejects them; so does the emulator, by name)",
           error=r"\.approx is not defined on \.f64|(ex2|lg2|sin|cos) does not take \.f64"),
  KnownBug("ptx-f16-vector-cast-list", PTX, "the PTX renderer prints the source of a vector float32 -> float16 cast (log2 of a padded "
           "half tensor, llvm-f16-vector-fptrunc's sibling) as a Python list of registers: `cvt.rn.f16.f32 %r, ['%a', '%a', ...]`",
           error=r"at \"'%\w+\": cannot read a token here"),
  KnownBug("cuda-vector-cast", CUDA, "the CUDA renderer casts a vector value with a C cast between CUDA's vector structs (log2 of a "
           "padded half tensor: `(half4)(make_float4(...))`; a uint32 minimum: `(uint4)(make_int4(...))`), a conversion they do not "
           "have: NVRTC rejects it (llvm-f16-vector-fptrunc's sibling)", error=r'no suitable user-defined conversion from "[a-z]+\d" to "[a-z]+\d"'),
  KnownBug("llvm-19-amdgpu-miscompile", AMD_ON_LLVM_19, "LLVM 19's AMDGPU backend computes some kernels wrongly; e.g. for gfx942 "
           "(float16 x - flip(x), then a cumsum) it reuses the SDWA subtraction x[1] - x[3] for x[3] - x[1], halves swapped and sign "
           "not; LLVM 22's code for the same program and arch runs right", rebuilt_with=22),
  KnownBug("llvm-f64-const-exponent-literal", LLVM, "the LLVM renderer prints a float64 constant with Python's repr (1e+30), which LLVM IR "
           "rejects without a decimal point", error=r"integer constant must have integer type"),
  KnownBug("llvm-f16-vector-fptrunc", LLVM, "the LLVM renderer emits `fptrunc float %v to half` for a vector value (log2 of a padded "
           "float16 tensor), which LLVM IR rejects", error=r"defined with type '<\d+ x float>' but expected 'float'"),
)

def applicable(dev:str) -> list[KnownBug]:
  """The known bugs of the device `dev` (a DEV string)."""
  return [b for b in KNOWN if dev.startswith(b.devices)]

def explains_error(dev:str, message:str) -> KnownBug | None:
  """The known bug whose error the device's error message is."""
  return next((b for b in applicable(dev) if b.error is not None and re.search(b.error, message)), None)

def explains_values(dev:str, case:dict, got:np.ndarray, fast_math:bool) -> KnownBug | None:
  """The known bug that explains the device's result: every element where the device differs from the reference went through
  the bug's deviation (reference.reached: its value wrapped at 8 bits, a NaN met a maximum; the renderer's fusion decides which
  uses of a value see the deviation, so its exact result is not asked for). Elements no deviation reached stay a finding,
  whatever the device gives; where several bugs reach, the first in KNOWN names it."""
  with np.errstate(all="ignore"): ref, undef = reference.evaluate(case)
  if ref.shape != got.shape: return None
  wrong = tiny_program.differs(got, ref.astype(got.dtype), case, fast_math, undef)
  if not wrong.any(): return None
  for bug in applicable(dev):
    if bug.model is None: continue
    touched = np.zeros(got.shape, bool)
    for f in reference.Model.__dataclass_fields__:
      if getattr(bug.model, f): touched |= reference.reached(case, f)
    if not (wrong & ~touched).any(): return bug
  return None

def rebuild_bugs(dev:str) -> list[KnownBug]:
  """The known compiler bugs of `dev` matched by a rebuild with another LLVM."""
  return [b for b in applicable(dev) if b.rebuilt_with is not None]
