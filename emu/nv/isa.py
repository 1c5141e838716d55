"""The PTX opcodes the emulator runs: one `OpDef` per opcode (accepted types, accepted modifiers, semantics, timing class).
A reader finds an instruction here and nowhere else; emu.nv.simt only moves operands and lanes.

Numerics (PTX ISA 8.x): f32/f64 arithmetic is IEEE with the instruction's rounding (`.rn` is the default and the only one
modelled for add/sub/mul/fma/div/sqrt; others are rejected); f16 arithmetic rounds in f16; integer arithmetic wraps at the type's
width; shl/shr clamp the shift amount to the width (shl -> 0, shr.u -> 0, shr.s -> the sign); `.approx` sqrt/rcp/ex2/lg2/sin/cos
on f32 return the correctly rounded f32 of the exact value (the ISA bounds them at a few ulp; a correctly rounded result is
inside every bound) and are rejected on f64, as ptxas does, except the two f64 forms the ISA defines (rcp.approx.ftz.f64,
rsqrt.approx.f64; NVRTC seeds its f64 division and logarithms with the first). cvt: float -> float rounds to nearest even (`.rn`), float -> int
rounds by `.rzi/.rni/.rmi/.rpi`, saturates to the type's range and gives 0 for NaN; int -> float rounds to nearest even.
"""
from __future__ import annotations
from dataclasses import dataclass
from typing import Callable
import numpy as np
from emu.common.faults import GPUTrapFault
from emu.pcode import numerics as N
from emu.nv import mma as MMA
from emu.nv.ptx import SPECIAL, Addr, Inst, Kernel, Label, Module, PTXError, Reg, Vec, parse_syntax

DTYPES = {"f16": np.float16, "f32": np.float32, "f64": np.float64, "s8": np.int8, "s16": np.int16, "s32": np.int32, "s64": np.int64,
          "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64, "b8": np.uint8, "b16": np.uint16, "b32": np.uint32,
          "b64": np.uint64, "pred": np.bool_, "bf16": np.uint16}   # bf16: numpy has none; its values travel as raw bits
FLOATS, SIGNED = ("f16", "f32", "f64"), ("s8", "s16", "s32", "s64")
INTS = SIGNED + ("u8", "u16", "u32", "u64", "b8", "b16", "b32", "b64")
def width(t:str) -> int: return 1 if t == "pred" else int(t.lstrip("bfsu"))
ROUNDING = {"rn": N.RM_NE, "rz": N.RM_ZERO, "rm": N.RM_DOWN, "rp": N.RM_UP}   # float results' rounding modifiers
INTEGRAL = ("rzi", "rni", "rmi", "rpi")   # cvt's round-to-integer modifiers
FMT = {"f16": N.F16, "f32": N.F32, "f64": N.F64, "bf16": N.BF16}

def rounding(mods) -> int:
  """The rounding mode an instruction's modifiers ask for (.rn when none)."""
  return next((ROUNDING[m] for m in mods if m in ROUNDING), N.RM_NE)

def to_f64(x:np.ndarray, t:str) -> np.ndarray:
  """The exact float64 values of float type t (bf16 from its bits)."""
  return N.bf16_to_f32(x).astype(np.float64) if t == "bf16" else x.astype(np.float64)

def round_to(x64:np.ndarray, t:str, mods=()) -> np.ndarray:
  """Exact float64 values rounded once to float type t in the instruction's rounding mode (bf16 as bits); .ftz on f32 flushes
  a subnormal result to a zero of its sign, .sat clamps to [0, 1] (NaN -> 0)."""
  rm = rounding(mods)
  if t == "bf16": r = N.encode(x64, N.BF16, rm)
  elif rm == N.RM_NE:
    with np.errstate(all="ignore"): r = np.asarray(x64).astype(DTYPES[t])
  else: r = N.encode(x64, FMT[t], rm).view(DTYPES[t])
  return _after(r, t, mods)

def _after(r:np.ndarray, t:str, mods) -> np.ndarray:
  if "ftz" in mods and t in ("f32", "f64"): r = N.flush_denorm(r)
  if "sat" in mods and t in FLOATS: r = np.where(np.isnan(r), 0, np.clip(r, 0, 1)).astype(DTYPES[t])
  return r

def ftz_in(x:np.ndarray, t:str, mods) -> np.ndarray:
  """An f32 operand of a .ftz instruction (or f64 of rcp/rsqrt.approx.ftz.f64, the only f64 forms with .ftz): subnormals read
  as zeros of their sign."""
  return N.flush_denorm(x) if "ftz" in mods and t in ("f32", "f64") else x

@dataclass(frozen=True)
class OpDef:
  """One opcode: the type suffixes it accepts, its other modifiers, its semantics fn(ctx, inst, type), timing class and
  operand counts it takes."""
  types: tuple[str, ...]
  mods: frozenset[str]
  fn: Callable
  timing: str
  operands: tuple[int, ...]

OPS: dict[str, OpDef] = {}
def op(name:str, types, mods=(), timing="alu", operands:int|tuple[int, ...]=3):
  def reg(fn):
    OPS[name] = OpDef(tuple(types), frozenset(mods), fn, timing, operands if isinstance(operands, tuple) else (operands,))
    return fn
  return reg

TWO_TYPES = ("cvt", "set", "dp4a", "dp2a")   # opcodes with two type suffixes

def instruction_type(inst:Inst) -> str:
  """The instruction's (last) type suffix."""
  return next((m for m in reversed(inst.mods) if m in DTYPES), "")

def parse(text:str) -> Module:
  """PTX text as the kernels the emulator runs: parsed, `.func` calls inlined, every kernel validated against the ISA table."""
  module = parse_syntax(text)
  for k in module.kernels.values(): validate(k)
  return module

def validate(k:Kernel):
  """Reject what the executor cannot run or ptxas would not accept, naming the line: unknown opcodes, types and modifiers,
  undeclared registers, unknown labels, `.approx` on f64."""
  for inst in k.body:
    d = OPS.get(inst.op)
    if d is None: raise PTXError(inst.line, inst.op, "opcode not supported by the emulator")
    for m in inst.mods:
      if m not in d.mods and m not in d.types and not (m in DTYPES and inst.op in TWO_TYPES):
        raise PTXError(inst.line, f".{m}", f"{inst.op} does not take .{m} here")
    if len(inst.operands) not in d.operands:
      raise PTXError(inst.line, inst.op, f"{inst.op} takes {' or '.join(map(str, d.operands))} operands, got {len(inst.operands)}")
    t = instruction_type(inst)
    if t and t not in d.types and inst.op not in TWO_TYPES: raise PTXError(inst.line, f".{t}", f"{inst.op} does not take type .{t}")
    _check_modifiers(inst, t)
    if inst.op != "cvt" and set(inst.mods) & {"rz", "rm", "rp"}:   # valid PTX (checked above); only cvt models the directed modes
      raise PTXError(inst.line, inst.op, f"{inst.op} with directed rounding (.rz/.rm/.rp) is not modelled by the emulator (only .rn)")
    if "approx" in inst.mods and t == "f64" and not (inst.op == "rsqrt" or inst.op == "rcp" and "ftz" in inst.mods):
      raise PTXError(inst.line, ".approx", f"{inst.op}.approx is not defined on .f64")   # only rcp.approx.ftz.f64 and rsqrt.approx.f64 are
    regs = [o for o in _flat(inst.operands) if isinstance(o, Reg)] + ([Reg(inst.guard[0])] if inst.guard else [])
    for r in regs:
      if r.name not in k.regs and r.name not in SPECIAL: raise PTXError(inst.line, r.name, "register not declared")
    for o in _flat(inst.operands):
      if isinstance(o, Label) and not (o.name in k.labels or o.name in k.shared or o.name in k.local or o.name in k.globals
                                       or o.name in dict(k.params)):
        raise PTXError(inst.line, o.name, "unknown label or symbol")

ROUNDS, PARTS, ARITH = {"rn", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi"}, {"lo", "hi", "wide"}, \
  {"add", "sub", "mul", "mad", "div", "rem", "min", "max", "neg", "abs", "fma"}

def _check_modifiers(inst:Inst, t:str):
  """The PTX ISA's rules for modifier combinations that the per-opcode sets cannot express (the ones ptxas enforces and the
  ptxas.agree fuzzer checks): one rounding, one part and one comparison at most; arithmetic on no .b or 8-bit types; .lo/.hi/
  .wide only on integer mul/mad (.wide from 16/32 bits); rounding, .ftz, .approx, .full only on floats; .sat on f16/f32, and on
  s32 add/sub/mad; no .f16 loads or stores (they take .b16)."""
  mods = set(inst.mods) - set(DTYPES)
  def bad(why:str): raise PTXError(inst.line, inst.op, why)
  if len(mods & ROUNDS) > 1 or len(mods & PARTS) > 1 or len(mods & {m for m in mods if m in COMPARES}) > 1:
    bad(f"{inst.op} takes one rounding, one .lo/.hi/.wide and one comparison at most")
  if inst.op == "dp2a" and len(mods & {"lo", "hi"}) != 1: bad("dp2a needs .lo or .hi")
  if inst.op in ("ld", "st") and t == "f16": bad(f"{inst.op} does not take .f16 (half values load and store as .b16)")
  if inst.op == "cvt": return _check_cvt_packed(inst, mods, bad) if mods & PACKED.keys() else _check_cvt(inst, mods, bad)
  if inst.op in ("setp", "set"):
    st = [m for m in inst.mods if m in DTYPES][-1]
    cmp = next((m for m in inst.mods if m in COMPARES), None)
    if cmp is None: bad(f"{inst.op} needs a comparison")
    if st in INTS and width(st) == 8: bad(f"{inst.op} does not take .{st}")
    kind = "float" if st in FLOATS or st == "bf16" else "bits" if st[0] == "b" else st[0]
    allowed = {"float": CMP.keys() | {"equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan"}, "bits": {"eq", "ne"},
               "s": CMP.keys(), "u": CMP.keys() | {"lo", "ls", "hi", "hs"}}[kind]
    if cmp not in allowed: bad(f"{inst.op}.{cmp} does not compare .{st}")
    if "ftz" in mods and st not in ("f16", "f32"): bad(f"{inst.op}.ftz takes .f16 or .f32")
    return
  if "cc" in mods and (inst.op not in ("add", "sub", "mad", "addc", "subc", "madc") or t not in CARRY_TYPES or "wide" in mods):
    bad(f"{inst.op}.{t} does not take .cc (carry chains are add/sub/mad on 32- and 64-bit integers)")
  if inst.op in TRANSCENDENTAL: return _check_transcendental(inst, t, mods, bad)
  if inst.op == "mma": return _check_mma(inst, bad)
  if inst.op not in ARITH: return
  is_float = t in FLOATS or t == "bf16"
  if t[0] == "b" and t != "bf16" or (t in INTS and width(t) == 8): bad(f"{inst.op} does not take .{t}")
  if mods & PARTS and (is_float or inst.op not in ("mul", "mad")): bad(f"{inst.op}.{t} does not take .lo/.hi/.wide")
  if "wide" in mods and width(t) not in (16, 32): bad(f"{inst.op}.wide takes 16- or 32-bit integers")
  if not is_float and mods & {"rn", "rz", "rm", "rp", "ftz", "approx", "full"}: bad(f"{inst.op}.{t} takes no float modifiers")
  if "sat" in mods and not (t in ("f16", "f32") or t == "s32" and inst.op in ("add", "sub", "mad")): bad(f"{inst.op}.{t} does not take .sat")
  if "ftz" in mods and t not in ("f16", "f32"): bad(f"{inst.op}.{t} does not take .ftz")
  rounding_given = bool(mods & {"rn", "rz", "rm", "rp"})
  if inst.op in ("mul", "mad") and not is_float and not mods & PARTS: bad(f"{inst.op}.{t} needs .lo, .hi or .wide")
  if inst.op == "fma" and not rounding_given: bad("fma needs a rounding modifier")
  if inst.op == "mad" and is_float and (t == "f16" or not rounding_given): bad(f"mad.{t} needs a rounding modifier (f32/f64 only)")
  if inst.op == "div" and is_float:
    if t not in ("f32", "f64"): bad(f"div does not take .{t}")
    if "full" in mods and (rounding_given or "approx" in mods or t == "f64"): bad("div.full is f32 only and takes no rounding or .approx")
    if t == "f32" and rounding_given == ("approx" in mods or "full" in mods): bad("div.f32 needs exactly one of a rounding, .approx, .full")
    if t == "f64" and not rounding_given: bad("div.f64 needs a rounding modifier")

def _check_cvt(inst:Inst, mods:set, bad:Callable):
  """cvt's rules: no .b types; a float destination from an integer or a wider float needs .rn/.rz/.rm/.rp, from the same float
  type at most an integral rounding, from a narrower float none; an integer destination from a float needs an integral rounding,
  from an integer none, and .sat only where the source range does not fit; .ftz only with an f32 side."""
  dt, st = [m for m in inst.mods if m in DTYPES]
  if len(inst.operands) != 2: bad("cvt takes 2 operands")
  if mods & {"relu", "satfinite"}: bad(f"cvt.{dt}.{st} with .relu or .satfinite is not modelled by the emulator (only the packed forms)")
  if dt[0] == "b" and dt != "bf16" or st[0] == "b" and st != "bf16": bad("cvt does not take .b types")
  fd, fs = dt in FLOATS or dt == "bf16", st in FLOATS or st == "bf16"
  rnd, integral = mods & {"rn", "rz", "rm", "rp"}, mods & {"rni", "rzi", "rmi", "rpi"}
  if fd and fs and dt == st: need = "optional integral"
  elif fd and (not fs or width(dt) < width(st)): need = "rounding"
  elif not fd and fs: need = "integral"
  else: need = None
  if need == "rounding" and (len(rnd) != 1 or integral): bad(f"cvt.{dt}.{st} needs one of .rn/.rz/.rm/.rp")
  if need == "integral" and (len(integral) != 1 or rnd): bad(f"cvt.{dt}.{st} needs one of .rni/.rzi/.rmi/.rpi")
  if need is None and (rnd or integral): bad(f"cvt.{dt}.{st} takes no rounding modifier")
  if need == "optional integral" and (rnd or len(integral) > 1): bad(f"cvt.{dt}.{st} takes at most an integral rounding")
  if "sat" in mods and not fd and not fs:
    if _int_range(st)[0] >= _int_range(dt)[0] and _int_range(st)[1] <= _int_range(dt)[1]: bad(f"cvt.sat.{dt}.{st} cannot overflow")
  if "ftz" in mods and "f32" not in (dt, st): bad("cvt.ftz needs an f32 source or destination")

def _check_cvt_packed(inst:Inst, mods:set, bad:Callable):
  """The packed forms the ISA defines: .f16x2/.bf16x2 from two .f32 (.rn/.rz, optional .relu and .satfinite); .e4m3x2/.e5m2x2
  from two .f32 or from an .f16x2 (.rn.satfinite, optional .relu); .f16x2 from .e4m3x2/.e5m2x2 (.rn, optional .relu)."""
  types = [m for m in inst.mods if m in PACKED or m in DTYPES]
  if len(types) != 2: bad("a packed cvt names a destination and a source type")
  dt, st = types
  fp8 = ("e4m3x2", "e5m2x2")
  if not (dt in ("f16x2", "bf16x2") and st == "f32" or dt in fp8 and st in ("f32", "f16x2") or dt == "f16x2" and st in fp8):
    bad(f"cvt.{dt}.{st} is not a conversion the ISA defines")
  rnd = mods & {"rn", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi"}
  half_pair = dt in ("f16x2", "bf16x2") and st == "f32"
  if rnd != {"rn"} and not (half_pair and rnd == {"rz"}): bad(f"cvt.{dt}.{st} rounds with .rn" + (" or .rz" if half_pair else ""))
  if dt in fp8 and "satfinite" not in mods: bad(f"cvt.{dt}.{st} needs .satfinite")
  if st in fp8 and "satfinite" in mods: bad(f"cvt.{dt}.{st} does not take .satfinite")
  if mods - {"rn", "rz", "relu", "satfinite", dt, st}: bad(f"cvt.{dt}.{st} takes only a rounding, .relu and .satfinite")
  if len(inst.operands) != (3 if st == "f32" else 2): bad(f"cvt.{dt}.{st} takes {3 if st == 'f32' else 2} operands")

def _int_range(t:str) -> tuple[int, int]:
  return (-(1 << (width(t) - 1)), (1 << (width(t) - 1)) - 1) if t in SIGNED else (0, (1 << width(t)) - 1)

TRANSCENDENTAL = {"sqrt": ("f32", "f64"), "rcp": ("f32", "f64"), "rsqrt": ("f32", "f64"), "ex2": ("f16", "f32"), "lg2": ("f32",),
                  "sin": ("f32",), "cos": ("f32",)}

def _check_transcendental(inst:Inst, t:str, mods:set, bad:Callable):
  """sqrt/rcp: f32 takes exactly one of a rounding or .approx, f64 a rounding (or rcp.approx.ftz.f64); rsqrt, ex2, lg2, sin and cos
  exist only as .approx; .ftz on f32 (f64 only in rcp/rsqrt.approx.ftz.f64); no .full."""
  if t not in TRANSCENDENTAL[inst.op]: bad(f"{inst.op} does not take .{t}")
  rounding_given, approx = bool(mods & {"rn", "rz", "rm", "rp"}), "approx" in mods
  if "full" in mods: bad(f"{inst.op} does not take .full")
  if inst.op in ("sqrt", "rcp"):
    if rounding_given == approx and not (t == "f64" and approx and not rounding_given):
      bad(f"{inst.op}.{t} needs exactly one of a rounding modifier or .approx")
    if t == "f64" and not rounding_given and not approx: bad(f"{inst.op}.f64 needs a rounding modifier")
  elif not approx or rounding_given: bad(f"{inst.op} exists only as {inst.op}.approx")
  if "ftz" in mods and t != "f32" and not (t == "f64" and approx): bad(f"{inst.op}.{t} does not take .ftz")

def _check_mma(inst:Inst, bad:Callable):
  """A form the ISA defines (emu.nv.mma.form) with vectors of as many registers as its fragments fill."""
  try: f = MMA.form(inst.mods)
  except MMA.FormError as e: bad(str(e))
  for name, o in zip("dabc", inst.operands):
    if not isinstance(o, Vec) or len(o.items) != f.registers(name):
      bad(f"mma {'.'.join(inst.mods)}: operand {name} is a vector of {f.registers(name)} registers")

def _flat(ops):
  for o in ops:
    if isinstance(o, Vec): yield from o.items
    elif isinstance(o, Addr): yield Reg(o.base) if o.base.startswith("%") else Label(o.base)
    else: yield o

# ---- data movement ----
@op("mov", ("b16", "b32", "b64", "u16", "u32", "u64", "s16", "s32", "s64", "f16", "f32", "f64", "pred"), operands=2)
def _mov(ctx, inst, t):
  dst, src = inst.operands
  if isinstance(src, Vec):   # pack: element i at bits [i*w, (i+1)*w) of the destination
    w = width(t) // len(src.items)
    parts = [ctx.read(o, f"b{w}").astype(np.uint64) << np.uint64(i * w) for i, o in enumerate(src.items)]
    return ctx.write(dst, np.bitwise_or.reduce(parts).astype(DTYPES[f"b{width(t)}"]), f"b{width(t)}")
  if isinstance(dst, Vec):   # unpack
    w, v = width(t) // len(dst.items), ctx.read(src, f"b{width(t)}").astype(np.uint64)
    for i, o in enumerate(dst.items): ctx.write(o, ((v >> np.uint64(i * w)) & np.uint64((1 << w) - 1)).astype(DTYPES[f"b{w}"]), f"b{w}")
    return
  ctx.write(dst, ctx.read(src, t), t)

@op("ld", tuple(DTYPES), mods=("global", "shared", "param", "local", "v2", "v4", "nc"), timing="mem", operands=2)
def _ld(ctx, inst, t):
  dst, src = inst.operands
  outs = dst.items if isinstance(dst, Vec) else (dst,)
  vals = ctx.load(_space(inst), src, t, len(outs))
  for o, v in zip(outs, vals): ctx.write(o, v, t)

@op("st", tuple(DTYPES), mods=("global", "shared", "local", "param", "v2", "v4"), timing="mem", operands=2)
def _st(ctx, inst, t):
  dst, src = inst.operands
  ins = src.items if isinstance(src, Vec) else (src,)
  ctx.store(_space(inst), dst, t, [ctx.read(o, t) for o in ins])

def _space(inst:Inst) -> str:
  """The state space an ld/st names; "generic" (the window the address falls in decides) when none."""
  return next((s for s in ("global", "shared", "param", "local") if s in inst.mods), "generic")

@op("cvta", ("u32", "u64"), mods=("to", "global", "shared", "local", "const", "param"), operands=2)
def _cvta(ctx, inst, t):
  """Addresses between a state space and the generic space: cvta.SPACE maps a SPACE address to generic, cvta.to.SPACE back.
  Global addresses are the same in both; shared and local ones are offsets in their windows (emu.nv.simt.WINDOWS)."""
  space = next(s for s in ("global", "shared", "local", "const", "param") if s in inst.mods)
  a = ctx.read(inst.operands[1], t).astype(np.uint64)
  base = np.uint64(ctx.window(space))
  ctx.write(inst.operands[0], (a - base if "to" in inst.mods else a + base).astype(DTYPES[t]), t)

# packed cvt types: element format and bits (PTX ISA cvt: .f16x2/.bf16x2 from two f32, .e4m3x2/.e5m2x2 from two f32 or an .f16x2,
# .f16x2 from an .e4m3x2/.e5m2x2; the first source, or the upper half of a packed one, goes to the upper half)
PACKED = {"f16x2": (N.F16, 16), "bf16x2": (N.BF16, 16), "e4m3x2": (N.FP8, 8), "e5m2x2": (N.BF8, 8)}

@op("cvt", INTS + FLOATS + ("bf16",), mods=("rn", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi", "sat", "ftz", "relu", "satfinite",
                                            *PACKED), operands=(2, 3))
def _cvt(ctx, inst, t):
  if any(m in PACKED for m in inst.mods): return _cvt_packed(ctx, inst)
  dt, st = [m for m in inst.mods if m in DTYPES]
  x = ctx.read(inst.operands[1], st)
  ctx.write(inst.operands[0], convert(x, st, dt, inst.mods), dt)

def _cvt_packed(ctx, inst):
  """Two values converted at once and packed, high element first (PTX ISA cvt): .relu makes negative results +0 (NaN stays
  NaN); .satfinite turns infinities and finite overflow into the largest finite value of the sign (NaN stays NaN)."""
  dt, st = [m for m in inst.mods if m in PACKED or m == "f32"]
  if st == "f32": hi, lo = (ctx.read(o, "f32").astype(np.float64) for o in inst.operands[1:3])
  else:
    fmt, bits = PACKED[st]
    raw = ctx.read(inst.operands[1], f"b{2 * bits}").astype(np.uint32)
    hi, lo = N.decode(raw >> np.uint32(bits), fmt), N.decode(raw & np.uint32((1 << bits) - 1), fmt)
  fmt, bits = PACKED[dt]
  out = np.zeros(ctx.n, np.uint32)
  for x, shift in ((hi, bits), (lo, 0)):
    if "relu" in inst.mods: x = np.where(x < 0, 0.0, x)
    out |= N.encode(x, fmt, rounding(inst.mods), saturate="satfinite" in inst.mods).astype(np.uint32) << np.uint32(shift)
  ctx.write(inst.operands[0], out, f"b{2 * bits}")

def convert(x:np.ndarray, st:str, dt:str, mods) -> np.ndarray:
  """cvt semantics (see the module docstring). A float destination gets the exact source value rounded once in the
  instruction's mode (.rn/.rz/.rm/.rp; bf16 through its bits); integer sources beyond 2**53 convert through numpy's C cast,
  which rounds to nearest even only, so other modes are refused there. .ftz flushes f32 subnormal sources and results, .sat
  clamps float results to [0, 1] and integer results to the destination's range."""
  if st == "bf16": x, st = N.bf16_to_f32(x), "f32"
  x = ftz_in(x, st, mods)
  integral = {"rzi": np.trunc, "rni": np.rint, "rmi": np.floor, "rpi": np.ceil}.get(next((m for m in mods if m in INTEGRAL), ""))
  with np.errstate(all="ignore"):
    if st in FLOATS and dt in FLOATS and integral is not None:   # cvt.rzi.f32.f32 etc.: round to an integral value, same type
      return _after(integral(x.astype(np.float64)).astype(DTYPES[dt]), dt, mods)
    if dt in FLOATS or dt == "bf16":
      if st in INTS and width(st) == 64 and rounding(mods) != N.RM_NE and (np.abs(x.astype(np.float64)) >= 2.0 ** 53).any():
        raise PTXError(0, "cvt", f"cvt from .{st} beyond 2**53 is modelled with .rn only")
      if st in INTS and width(st) == 64 and dt != "bf16": return _after(x.astype(DTYPES[dt]), dt, mods)
      return round_to(x.astype(np.float64), dt, mods)
    lo, hi = _int_range(dt)
    if st in INTS and "sat" in mods: return np.clip(x.astype(object), lo, hi).astype(DTYPES[dt])
    if st in FLOATS:
      v = (integral or np.trunc)(x.astype(np.float64))
      # NaN -> 0; saturate, +-inf included (Python compares floats and ints exactly)
      ints = [0 if a != a else lo if a <= lo else hi if a >= hi else int(a) for a in v.tolist()]
      return np.array(ints, dtype=object).astype(DTYPES[dt])
    return x.astype(DTYPES[dt])                                        # integers: truncate or extend (sign by the source)

# ---- arithmetic ----
def _arith(name:str, fint:Callable, ffloat:Callable, operands:int=3, types=INTS + FLOATS + ("bf16",)):
  @op(name, types, mods=("rn", "rz", "rm", "rp", "ftz", "sat", "lo", "hi", "wide", "cc"), operands=operands)
  def fn(ctx, inst, t):
    if "cc" in inst.mods: return carry_chain(ctx, inst, t)
    args = [ctx.read(o, t) for o in inst.operands[1:]]
    r = integer(fint, args, t, inst.mods) if t in INTS else float_op(ffloat, args, t, inst)
    ctx.write(inst.operands[0], r, (t[0] + str(2 * width(t))) if "wide" in inst.mods else t)
  return fn

def float_op(f:Callable, args:list[np.ndarray], t:str, inst:Inst) -> np.ndarray:
  """A float instruction's result: f on its operands (.ftz: f32 subnormal operands read as zero), rounded once to t. f16/f32/f64
  use numpy's IEEE arithmetic in their own type (f16's through f32 is exact enough for one rounding); bf16 computes in float64,
  exact for its sums and products, then rounds. Only .rn rounding is modelled for arithmetic."""
  args = [ftz_in(a, t, inst.mods) for a in args]
  with np.errstate(all="ignore"):
    if t == "bf16": return round_to(f(*[to_f64(a, t) for a in args]), t, inst.mods)
    return _after(np.asarray(f(*args)).astype(DTYPES[t]), t, inst.mods)

def integer(f:Callable, args:list[np.ndarray], t:str, mods) -> np.ndarray:
  """f on integers, exactly: .lo (the default) keeps the low `width` bits, .hi the next ones, .wide twice the width. Computed in
  uint64 (wrapping) where that is exact, through Python ints for 64-bit .hi/.wide."""
  w, signed = width(t), t in SIGNED
  ow = 2 * w if "wide" in mods else w
  out = DTYPES[("s" if signed else "u") + str(ow)]
  if w == 64 and ("hi" in mods or "wide" in mods):
    big = [[int(v) for v in a.tolist()] for a in args]
    r = [f(*vals) >> (64 if "hi" in mods else 0) for vals in zip(*big)]
    return np.array([v & ((1 << 64) - 1) for v in r], dtype=np.uint64).view(out)
  u = [a.astype(np.int64 if signed else np.uint64).astype(np.uint64) for a in args]   # two's complement in 64 bits
  r = f(*u)
  if "hi" in mods: r = (r >> np.uint64(w)) if not signed else (r.view(np.int64) >> np.int64(w)).view(np.uint64)
  return (r & np.uint64((1 << ow) - 1 if ow < 64 else 0xffffffffffffffff)).astype(np.uint64).astype(DTYPES["u" + str(ow)]).view(out)

def _fma_f(a, b, c):
  """a * b + c rounded once in the operands' format (emu.pcode.numerics' exact fused multiply-adds)."""
  return {np.float64: N.fma_f64, np.float32: N.fma_f32, np.float16: N.fma_f16}[a.dtype.type](a, b, c)

_arith("add", lambda a, b: a + b, lambda a, b: a + b)
_arith("sub", lambda a, b: a - b, lambda a, b: a - b)
_arith("mul", lambda a, b: a * b, lambda a, b: a * b)

CARRY_TYPES = ("u32", "s32", "u64", "s64")

def carry_chain(ctx, inst, t:str):
  """add.cc, addc, sub.cc, subc, mad.cc, madc (PTX's extended-precision arithmetic): d = a + b + CF, a - (b + CF), or the .lo/.hi
  part of a*b + c + CF, wrapping at the type's width; CF (the carry in) counts only for the c-forms, and .cc writes the carry
  out (for subtraction, the borrow)."""
  w = width(t)
  u = lambda x: x.view(DTYPES["u" + str(w)]).astype(np.uint64)  # noqa: E731
  cin = ctx.carry.astype(np.uint64) if inst.op in ("addc", "subc", "madc") else np.zeros(ctx.n, np.uint64)
  a, b = (u(ctx.read(o, t)) for o in inst.operands[1:3])
  if inst.op in ("sub", "subc"):
    d, carry = a - b - cin, (a < b) | ((a == b) & (cin == 1))
  else:
    if inst.op in ("mad", "madc"):
      a = u(integer(lambda x, y: x * y, [ctx.read(o, t) for o in inst.operands[1:3]], t, [m for m in inst.mods if m in ("lo", "hi")]))
      b = u(ctx.read(inst.operands[3], t))
    s = a + b
    d = s + cin   # 32-bit: below 2**33, so bit 32 is the carry out; 64-bit: wrapped, the carry is where a sum wrapped
    carry = (d >> np.uint64(32)).astype(bool) if w == 32 else (s < a) | (d < s)
  ctx.write(inst.operands[0], d.astype(DTYPES["u" + str(w)]).view(DTYPES[t]), t)   # the narrowing cast wraps
  if "cc" in inst.mods: ctx.set_carry(carry)

for _name, _n in (("addc", 3), ("subc", 3), ("madc", 4)):
  op(_name, CARRY_TYPES, mods=("cc", "lo", "hi"), operands=_n)(carry_chain)

@op("mad", INTS + FLOATS, mods=("rn", "rz", "rm", "rp", "ftz", "sat", "lo", "hi", "wide", "cc"), operands=4)
def _mad(ctx, inst, t):
  """Integers: the .lo/.hi/.wide part of a*b, plus c (of the product's width: .wide's c is twice as wide), wrapping. Floats:
  fused (mad.rn.f32 is fma on sm_20+, the PTX ISA's mad)."""
  if "cc" in inst.mods: return carry_chain(ctx, inst, t)
  a, b = (ctx.read(o, t) for o in inst.operands[1:3])
  if t in FLOATS: return ctx.write(inst.operands[0], float_op(_fma_f, [a, b, ctx.read(inst.operands[3], t)], t, inst), t)
  wt = (t[0] + str(2 * width(t))) if "wide" in inst.mods else t
  p = integer(lambda x, y: x * y, [a, b], t, inst.mods).astype(DTYPES[wt]).view(DTYPES["u" + str(width(wt))]).astype(np.uint64)
  c = ctx.read(inst.operands[3], wt).view(DTYPES["u" + str(width(wt))]).astype(np.uint64)
  ctx.write(inst.operands[0], (p + c).astype(DTYPES["u" + str(width(wt))]).view(DTYPES[wt]), wt)

@op("fma", FLOATS + ("bf16",), mods=("rn", "rz", "rm", "rp", "ftz", "sat"), operands=4)
def _fma(ctx, inst, t):
  a, b, c = (ctx.read(o, t) for o in inst.operands[1:])
  if t == "bf16": return ctx.write(inst.operands[0], N.fma_bf16(a, b, c), t)
  ctx.write(inst.operands[0], float_op(_fma_f, [a, b, c], t, inst), t)

def _minmax(name:str, fint:Callable, ffloat:Callable):
  @op(name, INTS + FLOATS + ("bf16",), mods=("ftz",))
  def fn(ctx, inst, t):
    a, b = (ctx.read(o, t) for o in inst.operands[1:])
    if t in INTS: return ctx.write(inst.operands[0], fint(a, b).astype(DTYPES[t]), t)
    ctx.write(inst.operands[0], float_op(ffloat, [a, b], t, inst), t)
_minmax("min", np.minimum, np.fmin)   # a NaN operand loses (fminf)
_minmax("max", np.maximum, np.fmax)

@op("div", INTS + FLOATS, mods=("rn", "rz", "rm", "rp", "full", "approx", "ftz"), timing="div")
def _div(ctx, inst, t):
  a, b = (ctx.read(o, t) for o in inst.operands[1:])
  with np.errstate(all="ignore"): r = (a / b).astype(DTYPES[t]) if t in FLOATS else trunc_divmod(a, b, t)[0]
  ctx.write(inst.operands[0], r, t)

@op("rem", INTS, timing="div")
def _rem(ctx, inst, t):
  a, b = (ctx.read(o, t) for o in inst.operands[1:])
  ctx.write(inst.operands[0], trunc_divmod(a, b, t)[1], t)

def trunc_divmod(a:np.ndarray, b:np.ndarray, t:str) -> tuple[np.ndarray, np.ndarray]:
  """(quotient, remainder) of integer division truncating toward zero (C's), exact at every width, computed on 64-bit
  two's-complement magnitudes (INT_MIN's fits). A zero divisor gives the quotient all ones and the remainder the dividend:
  the PTX ISA leaves both unspecified, this is a fixed choice."""
  w, signed = width(t), t in SIGNED
  zero = b == 0
  wide = (lambda x: x.astype(np.int64).astype(np.uint64)) if signed else (lambda x: x.astype(np.uint64))
  ua, ub = wide(a), wide(np.where(zero, 1, b).astype(a.dtype))
  if signed:
    neg_a, neg_b = a < 0, np.where(zero, 1, b) < 0
    mag = lambda x, n: np.where(n, ~x + np.uint64(1), x)  # noqa: E731
    q = mag(mag(ua, neg_a) // mag(ub, neg_b), neg_a != neg_b)
  else: q = ua // ub
  r = ua - q * ub   # wraps like the hardware's 64-bit arithmetic; exact modulo 2**64
  q, r = np.where(zero, np.uint64(0xffffffffffffffff), q), np.where(zero, ua, r)
  narrow = lambda x: x.astype(DTYPES[f"u{w}"]).view(DTYPES[t]) if signed else x.astype(DTYPES[t])  # noqa: E731
  return narrow(q), narrow(r)

# ---- logic and shifts ----
def _logic(name:str, f:Callable, types=("b16", "b32", "b64", "pred"), operands:int=3):
  @op(name, types, operands=operands)
  def fn(ctx, inst, t):
    args = [ctx.read(o, t) for o in inst.operands[1:]]
    ctx.write(inst.operands[0], f(*args), t)
_logic("and", lambda a, b: a & b)
_logic("or", lambda a, b: a | b)
_logic("xor", lambda a, b: a ^ b)
_logic("not", lambda a: ~a, operands=2)

@op("shl", ("b16", "b32", "b64"))
def _shl(ctx, inst, t):
  a, n = ctx.read(inst.operands[1], t), ctx.read(inst.operands[2], "u32").astype(np.uint64)
  w = width(t)
  r = np.where(n >= w, 0, (a.astype(np.uint64) << np.minimum(n, w - 1)) & np.uint64((1 << w) - 1 if w < 64 else 0xffffffffffffffff))
  ctx.write(inst.operands[0], r.astype(DTYPES[t]), t)

@op("shr", ("b16", "b32", "b64", "u16", "u32", "u64", "s16", "s32", "s64"))
def _shr(ctx, inst, t):
  a, n = ctx.read(inst.operands[1], t), ctx.read(inst.operands[2], "u32").astype(np.int64)
  w = width(t)
  n = np.minimum(n, w - 1 if t in SIGNED else w)
  if t in SIGNED: r = a >> n.astype(a.dtype)
  else: r = np.where(n >= w, 0, a.astype(np.uint64) >> np.minimum(n, w - 1).astype(np.uint64)).astype(DTYPES[t])
  ctx.write(inst.operands[0], r, t)

@op("shf", ("b32",), mods=("l", "r", "wrap", "clamp"), operands=4)
def _shf(ctx, inst, t):
  """Funnel shift of the 64-bit {b:a} (b the high word) by n (.wrap: n mod 32; .clamp: at most 32): .l keeps the high word of
  the left shift, .r the low word of the right shift."""
  a, b = (ctx.read(o, "u32").astype(np.uint64) for o in inst.operands[1:3])
  n = ctx.read(inst.operands[3], "u32").astype(np.uint64)
  n = n & np.uint64(31) if "wrap" in inst.mods else np.minimum(n, np.uint64(32))
  v = (b << np.uint64(32)) | a
  r = (v << n) >> np.uint64(32) if "l" in inst.mods else v >> n
  ctx.write(inst.operands[0], (r & np.uint64(0xffffffff)).astype(np.uint32), "b32")

@op("bfi", ("b32", "b64"), operands=5)
def _bfi(ctx, inst, t):
  """bfi d, a, b, pos, len: b with bits [pos, pos+len) replaced by a's low len bits (pos and len are their low 8 bits; a field
  starting past the top bit changes nothing)."""
  w = width(t)
  a, b = (ctx.read(o, t).astype(np.uint64) for o in inst.operands[1:3])
  pos, ln = (ctx.read(o, "u32").astype(np.uint64) & np.uint64(0xff) for o in inst.operands[3:5])
  ln = np.minimum(ln, np.where(pos < w, np.uint64(w) - np.minimum(pos, np.uint64(w)), np.uint64(0)))
  field = np.where(ln >= 64, np.uint64(0xffffffffffffffff), (np.uint64(1) << np.minimum(ln, np.uint64(63))) - np.uint64(1))
  mask = np.where(pos < w, field << np.minimum(pos, np.uint64(63)), np.uint64(0))
  ctx.write(inst.operands[0], ((b & ~mask) | ((a << np.minimum(pos, np.uint64(63))) & mask)).astype(DTYPES[t]), t)

@op("prmt", ("b32",), mods=("f4e", "b4e", "rc8", "ecl", "ecr", "rc16"), operands=4)
def _prmt(ctx, inst, t):
  """prmt.b32 d, a, b, c (the default mode): byte i of d is byte (c's nibble i & 7) of the 8 bytes {b:a} (a the low four),
  or that byte's sign replicated when the nibble's bit 3 is set. The other modes are refused by name."""
  if set(inst.mods) & {"f4e", "b4e", "rc8", "ecl", "ecr", "rc16"}:
    raise PTXError(inst.line, "prmt", "prmt modes other than the default are not modelled")
  a, b, c = (ctx.read(o, "u32").astype(np.uint64) for o in inst.operands[1:4])
  v = (b << np.uint64(32)) | a
  d = np.zeros(ctx.n, np.uint64)
  for i in range(4):
    s = (c >> np.uint64(4 * i)) & np.uint64(0xf)
    byte = (v >> ((s & np.uint64(7)) * np.uint64(8))) & np.uint64(0xff)
    byte = np.where(s & np.uint64(8), np.where(byte & np.uint64(0x80), np.uint64(0xff), np.uint64(0)), byte)
    d |= byte << np.uint64(8 * i)
  ctx.write(inst.operands[0], d.astype(np.uint32), "b32")

def _packed(x:np.ndarray, bits:int, first:int, n:int, signed:bool) -> list[np.ndarray]:
  """n `bits`-wide fields of the 32-bit values x from field `first` on, sign- or zero-extended to int64."""
  out = []
  for i in range(first, first + n):
    v = (x >> (bits * i)) & ((1 << bits) - 1)
    out.append(np.where(v >= 1 << (bits - 1), v - (1 << bits), v) if signed else v)
  return out

def _dot(ctx, inst, a_bits:int, b_first:int):
  """d = c + the dot product of a's `a_bits`-wide fields with as many of b's bytes from byte `b_first` on, each field signed or
  unsigned by its operand's type, wrapping at 32 bits (c and d are .s32 when either input is signed)."""
  at, bt = [m for m in inst.mods if m in DTYPES]
  dt = "s32" if "s32" in (at, bt) else "u32"
  a, b = ctx.read(inst.operands[1], "u32").astype(np.int64), ctx.read(inst.operands[2], "u32").astype(np.int64)
  n = 32 // a_bits
  acc = ctx.read(inst.operands[3], dt).astype(np.int64)
  for x, y in zip(_packed(a, a_bits, 0, n, at == "s32"), _packed(b, 8, b_first, n, bt == "s32")): acc = acc + x * y
  ctx.write(inst.operands[0], (acc & 0xffffffff).astype(np.uint32).view(DTYPES[dt]), dt)

@op("dp4a", ("u32", "s32"), operands=4)
def _dp4a(ctx, inst, t):
  """dp4a.atype.btype d, a, b, c: c plus the four products of a's and b's bytes."""
  _dot(ctx, inst, 8, 0)

@op("dp2a", ("u32", "s32"), mods=("lo", "hi"), operands=4)
def _dp2a(ctx, inst, t):
  """dp2a.mode.atype.btype d, a, b, c: c plus the two products of a's 16-bit halves with b's bytes 0-1 (.lo) or 2-3 (.hi)."""
  _dot(ctx, inst, 16, 0 if "lo" in inst.mods else 2)

def _count(name:str, f:Callable):
  @op(name, ("b32", "b64"), operands=2)
  def fn(ctx, inst, t):
    x = ctx.read(inst.operands[1], t).astype(np.uint64)
    ctx.write(inst.operands[0], f(x, width(t)).astype(np.uint32), "u32")
_count("popc", lambda x, w: np.array([bin(int(v)).count("1") for v in x.tolist()], np.uint32))
_count("clz", lambda x, w: np.array([w - int(v).bit_length() for v in x.tolist()], np.uint32))

# ---- compare and select ----
CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal}

COMPARES = (*CMP, "lo", "ls", "hi", "hs", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan")

def compare(cmp:str, a:np.ndarray, b:np.ndarray) -> np.ndarray:
  """The PTX comparison `cmp` (ordered float forms are false on NaN; the u-suffixed ones true)."""
  with np.errstate(all="ignore"):
    base = {"lo": "lt", "ls": "le", "hi": "gt", "hs": "ge"}.get(cmp, cmp)
    if base == "ne": return (a != b) & ~np.isnan(a) & ~np.isnan(b)   # ordered: false when either is NaN (neu is the unordered one)
    if base in CMP: return CMP[base](a, b)
    if base == "num": return ~(np.isnan(a) | np.isnan(b))
    if base == "nan": return np.isnan(a) | np.isnan(b)
    return CMP[base[:-1]](a, b) | np.isnan(a) | np.isnan(b)   # unordered forms

def _compared(ctx, inst, t) -> np.ndarray:
  cmp = next(m for m in inst.mods if m in COMPARES)
  a, b = (ftz_in(ctx.read(o, t), t, inst.mods) for o in inst.operands[1:3])
  if t == "bf16": a, b = to_f64(a, t), to_f64(b, t)
  return compare(cmp, a, b)

@op("setp", INTS + FLOATS + ("bf16",), mods=(*COMPARES, "ftz"))
def _setp(ctx, inst, t): ctx.write(inst.operands[0], _compared(ctx, inst, t), "pred")

@op("set", INTS + FLOATS, mods=(*COMPARES, "ftz"))
def _set(ctx, inst, t):
  """set.cmp.dtype.stype: 1.0 (float destination) or all ones (integer destination) where the comparison holds, else 0."""
  dt, st = [m for m in inst.mods if m in DTYPES]
  r = _compared(ctx, inst, st)
  out = np.where(r, 1.0, 0.0).astype(DTYPES[dt]) if dt in FLOATS else np.where(r, -1, 0).astype(np.int64).astype(DTYPES[dt])
  ctx.write(inst.operands[0], out, dt)

@op("selp", INTS + FLOATS, operands=4)
def _selp(ctx, inst, t):
  a, b, p = ctx.read(inst.operands[1], t), ctx.read(inst.operands[2], t), ctx.read(inst.operands[3], "pred")
  ctx.write(inst.operands[0], np.where(p, a, b).astype(DTYPES[t]), t)

# ---- transcendentals (.approx: the correctly rounded f32 of the exact value) ----
def _unary(name:str, f:Callable, mods=("approx", "ftz", "rn", "rz", "rm", "rp", "full")):
  @op(name, FLOATS, mods=mods, timing="sfu", operands=2)
  def fn(ctx, inst, t):
    x = ftz_in(ctx.read(inst.operands[1], t), t, inst.mods)
    with np.errstate(all="ignore"): ctx.write(inst.operands[0], _after(f(x.astype(np.float64)).astype(DTYPES[t]), t, inst.mods), t)
_unary("sqrt", np.sqrt)
_unary("rcp", lambda x: 1.0 / x)
_unary("rsqrt", lambda x: 1.0 / np.sqrt(x))   # .approx only; the correctly rounded value of the exact one
_unary("ex2", np.exp2)
_unary("lg2", np.log2)
_unary("sin", np.sin)
_unary("cos", np.cos)

def _sign_op(name:str, fint:Callable, bf16_bits:Callable):
  @op(name, SIGNED + FLOATS + ("bf16",), mods=("ftz",), operands=2)
  def fn(ctx, inst, t):
    x = ctx.read(inst.operands[1], t)
    if t == "bf16": return ctx.write(inst.operands[0], bf16_bits(x).astype(np.uint16), t)
    if t in SIGNED: return ctx.write(inst.operands[0], fint(x).astype(DTYPES[t]), t)   # wraps: -INT_MIN and |INT_MIN| are INT_MIN
    ctx.write(inst.operands[0], _after(fint(ftz_in(x, t, inst.mods)), t, inst.mods), t)
_sign_op("neg", np.negative, lambda b: b ^ np.uint16(0x8000))   # floats: the sign bit flips, NaN included
_sign_op("abs", np.abs, lambda b: b & np.uint16(0x7fff))

# ---- control ----
@op("bra", (), mods=("uni",), timing="branch", operands=1)
def _bra(ctx, inst, t): ctx.branch(inst.operands[0].name)

@op("ret", (), timing="branch", operands=0)
def _ret(ctx, inst, t): ctx.exit()

@op("exit", (), timing="branch", operands=0)
def _exit(ctx, inst, t): ctx.exit()

@op("trap", (), timing="branch", operands=0)
def _trap(ctx, inst, t): raise GPUTrapFault(0, 0, what=f"PTX trap (line {inst.line})")   # emu.nv.simt gives it the instruction's index

@op("bar", (), mods=("sync",), timing="barrier", operands=1)
def _bar(ctx, inst, t): ctx.barrier()

# ---- warp-level matrix multiply-accumulate (tensor cores): forms, fragment layouts and arithmetic in emu.nv.mma ----
@op("mma", MMA.TYPES, mods=MMA.MODIFIERS, timing="tensor", operands=4)
def _mma(ctx, inst, t):
  """D = A * B + C per warp (emu.nv.mma). Every lane of each warp must take part (.aligned)."""
  f = MMA.form(inst.mods)
  lanes = np.nonzero(ctx.mask)[0]
  warps, local = np.unique(ctx.warp[lanes], return_inverse=True)
  if (np.bincount(local) != 32).any(): raise PTXError(inst.line, "mma", "mma.sync.aligned needs all 32 lanes of each warp")
  order = np.lexsort((ctx.special["%laneid"][lanes], local))   # each warp's lanes in %laneid order
  lanes = lanes[order]
  d, a, b, c = (o.items for o in inst.operands)
  frags = [MMA.elements([ctx.read(r, "b32")[lanes] for r in regs], typ).reshape(len(warps), 32, -1)
           for regs, typ in ((a, f.atype), (b, f.btype), (c, f.ctype))]
  out = MMA.multiply(f, *frags).reshape(len(lanes), -1)
  for reg, words in zip(d, MMA.words_of(out, f.dtype)):
    full = ctx.read(reg, "b32")
    full[lanes] = words
    ctx.write(reg, full, "b32")
