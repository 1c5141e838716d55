"""Known bugs of the system under test (tinygrad 0.14.0's renderers and LLVM), which the kernel-level targets label instead of
reporting: a case they explain is counted as `known: <name>` in the progress line and summary and never saved as a finding.

A bug is matched one of two ways, so that a label is never a guess:
- a value bug by a model (fuzz.reference.Model): the program evaluated with the renderer's deviation gives exactly what the
  device gave (within the program's tolerance) where the reference differs;
- an error bug by the error message the device raised.
Each entry names the devices it applies to (DEV strings, matched as prefixes) and what tinygrad does wrong. Adding one: give it
a model switch (fuzz.reference) or an error pattern, a test in tests/fuzz/test_known.py whose expected result is worked by hand,
and a line in docs/fuzzing.md.
"""
from __future__ import annotations
import re
from dataclasses import dataclass, replace
import numpy as np
from fuzz import reference, tiny_program

@dataclass(frozen=True)
class KnownBug:
  """One known bug: its label, the devices it applies to, what it is, and how a case is matched to it."""
  name: str
  devices: tuple[str, ...]
  doc: str
  model: reference.Model | None = None
  error: str | None = None

PTX, CUDA, LLVM = ("MOCK+NV:PTX",), ("MOCK+NV:CUDA",), ("MOCKKFD+AMD", "MOCKPCI+AMD", "CPU:LLVM")
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
  """The known bug whose model (each alone, then all of the device's models together) gives the device's result, where the
  reference does not: a program that does not exercise a deviation is never labelled by it, nor a result wrong another way."""
  bugs = [b for b in applicable(dev) if b.model is not None]
  combos = [(b, b.model) for b in bugs]
  if len(bugs) > 1:
    together = reference.Model(**{f: any(getattr(b.model, f) for b in bugs) for f in reference.Model.__dataclass_fields__})
    combos.append((replace(bugs[0], name="+".join(b.name for b in bugs)), together))
  for bug, model in combos:
    with np.errstate(all="ignore"): want, undef = reference.evaluate(case, model)
    if want.shape == got.shape and tiny_program.compare(got, want.astype(got.dtype), case, fast_math, undef) is None: return bug
  return None
