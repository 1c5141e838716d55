"""Targets `ptx.int`, `ptx.float`: one random well-typed PTX instruction on 32 lanes of emu.nv, against fuzz.ptx_oracle (an
independent reference in Python integers and fractions), with edge-biased operands (0, -0, +-inf, NaNs, subnormals, the
smallest and largest normals, integer extremes) and a random active-lane mask through a guard predicate.

Kinds: `ptx-mismatch` (a lane's result is not the reference's; NaN matches any NaN), `inactive-lane-written` (a lane whose
guard is false changed its destination), `nondeterministic` (two runs differ), `ptx-error` (the emulator refused or failed on
an instruction the reference models). Only opcodes and types in fuzz.ptx_oracle.ORACLE are drawn.
"""
from __future__ import annotations
import random
import numpy as np
from fuzz import ptx_oracle as O
from fuzz.finding import Finding
from fuzz.registry import Target, register

LANES = 32
RECORD = 40   # per lane: a, b, c (8 bytes each), the active flag (+24), the destination's initial value (+32)

def edges(t:str) -> list[int]:
  """Edge values of type t (bits)."""
  w = O.width(t)
  if t in O.FLOAT:
    e, m = O.FLOAT[t]
    top, inf = 1 << (e + m), ((1 << e) - 1) << m
    # 0, subnormals, the smallest normal, the largest finite, inf, NaNs, 1.0
    vals = [0, 1, (1 << m) - 1, 1 << m, inf - 1, inf, inf | 1, inf | (1 << (m - 1)), ((1 << (e - 1)) - 1) << m]
    return vals + [v | top for v in vals]
  lo = 1 << (w - 1)
  return [0, 1, (1 << w) - 1, lo, lo - 1, lo + 1, 2, 3]

def value(rng:random.Random, t:str) -> int:
  if rng.random() < 0.4: return rng.choice(edges(t))
  if t in O.FLOAT and rng.random() < 0.7:   # ordinary magnitudes, so sums and products mostly stay in range
    e, m = O.FLOAT[t]
    bias = (1 << (e - 1)) - 1
    return rng.getrandbits(1) << (e + m) | (bias + rng.randint(-8, 8)) << m | rng.getrandbits(m)
  return rng.getrandbits(O.width(t))

CVT_TYPES = ("s16", "s32", "s64", "u16", "u32", "u64", "f16", "f32", "f64")

def generate_cvt(rng:random.Random) -> dict:
  """A cvt between two of CVT_TYPES with the modifier the ISA requires for the pair (a rounding to narrower or integer-sourced
  floats, an integral rounding to integers or within one float type, optionally .sat between integers)."""
  st, dt = rng.choice(CVT_TYPES), rng.choice(CVT_TYPES)
  fs, fd = st in O.FLOAT, dt in O.FLOAT
  if fd and (not fs or O.width(dt) < O.width(st)):   # 64-bit integers beyond 2**53 convert with .rn only (docs/nv-emulator.md)
    mods = [rng.choice(["rn", "rz", "rm", "rp"]) if st not in ("s64", "u64") else "rn"]
  elif fs and (not fd or st == dt): mods = [rng.choice(["rni", "rzi", "rmi", "rpi"])]
  else:   # integer to integer: .sat only where the source range does not fit the destination (the ISA's rule)
    rng_of = lambda t: (-(1 << (O.width(t) - 1)), (1 << (O.width(t) - 1)) - 1) if O.signed(t) else (0, O.mask(t))  # noqa: E731
    fits = fd or fs or (rng_of(st)[0] >= rng_of(dt)[0] and rng_of(st)[1] <= rng_of(dt)[1])
    mods = ["sat"] if not fits and rng.random() < 0.5 else []
  lanes = [[value(rng, st), 0, 0] for _ in range(LANES)]
  return {"op": "cvt", "type": dt, "stype": st, "mods": mods, "lanes": lanes, "active": rng.getrandbits(LANES) | 1, "init": rng.getrandbits(64)}

def generate(rng:random.Random, floats:bool) -> dict:
  if rng.random() < 0.15: return generate_cvt(rng)
  ops = [o for o, (types, _, _) in O.ORACLE.items() if any((t in O.FLOAT) == floats for t in types)]
  op = rng.choice(ops)
  types, nargs, _ = O.ORACLE[op]
  t = rng.choice([t for t in types if (t in O.FLOAT) == floats])
  mods: list[str] = []
  if t in O.FLOAT and op in ("add", "sub", "mul", "fma", "div", "sqrt"): mods.append("rn")
  if op in ("mul", "mad") and t not in O.FLOAT: mods.append(rng.choice(["lo", "hi"] + (["wide"] if O.width(t) < 64 else [])))
  if op == "setp":
    cmps = ["eq", "ne", "lt", "le", "gt", "ge"] + (["equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan"] if t in O.FLOAT else
                                                   ["lo", "ls", "hi", "hs"] if t[0] == "u" else [])
    mods.append(rng.choice(cmps))
  lanes = []
  for _ in range(LANES):
    a, b, c = value(rng, t), value(rng, "u32" if op in ("shl", "shr") else t), value(rng, t)
    if op in ("shl", "shr") and rng.random() < 0.7: b = rng.randint(0, O.width(t) + 2)
    if op in ("div", "rem") and t not in O.FLOAT and O.to_int(b, t) == 0: b = 1   # the ISA leaves x / 0 unspecified
    lanes.append([a, b, c])
  return {"op": op, "type": t, "mods": mods, "lanes": lanes, "active": rng.getrandbits(LANES) | (1 << rng.randrange(LANES)),
          "init": rng.getrandbits(64)}

def dest_type(case:dict) -> str:
  t = case["type"]
  if case["op"] == "setp": return "u32"
  if "wide" in case["mods"]: return t[0] + str(2 * O.width(t))
  if case["op"] in ("clz", "popc"): return "u32"
  return t

def kernel_text(case:dict) -> str:
  op, mods = case["op"], case["mods"]
  t = case.get("stype", case["type"])   # cvt: the source type; the destination's is dest_type
  nargs = O.ORACLE[op][1] if op != "cvt" else 1
  dt = dest_type(case)
  bt = "u32" if op in ("shl", "shr") else t
  ct = dt if op == "mad" else t   # mad.wide adds a c of the product's width
  mem = lambda x: "b16" if x == "f16" else x  # noqa: E731  (half values load and store as .b16)
  srcs = ["%a", "%b", "%c"][:nargs]
  if op == "setp": body = f"@%q setp.{'.'.join(mods)}.{t} %p, {', '.join(srcs)};\n@%q selp.u32 %d, 1, 0, %p;"
  elif op == "cvt": body = f"@%q {'.'.join(['cvt', *mods, dt, t])} %d, %a;"
  else: body = f"@%q {'.'.join([op, *mods, t])} %d, {', '.join(srcs)};"
  return (".version 8.0\n.target sm_89\n.address_size 64\n.visible .entry k(.param .u64 inp, .param .u64 outp)\n{\n"
          f".reg .u64 %base, %o, %x;\n.reg .u32 %t, %m;\n.reg .pred %p, %q;\n.reg .{t} %a;\n.reg .{bt} %b;\n.reg .{ct} %c;\n.reg .{dt} %d;\n"
          "ld.param.u64 %base, [inp+0];\nld.param.u64 %o, [outp+0];\nmov.u32 %t, %tid.x;\n"
          f"mul.wide.u32 %x, %t, {RECORD};\nadd.u64 %base, %base, %x;\n"
          f"ld.global.{mem(t)} %a, [%base+0];\nld.global.{mem(bt)} %b, [%base+8];\nld.global.{mem(ct)} %c, [%base+16];\n"
          f"ld.global.u32 %m, [%base+24];\nld.global.{mem(dt)} %d, [%base+32];\nsetp.ne.u32 %q, %m, 0;\n{body}\n"
          f"mul.wide.u32 %x, %t, 8;\nadd.u64 %o, %o, %x;\nst.global.{mem(dt)} [%o+0], %d;\nret;\n}}\n")

def run(case:dict) -> np.ndarray:
  """The 32 lanes' destination bits after the instruction (as uint64, the destination's width)."""
  from emu.common.memory import MemoryMap
  from emu.nv import isa, simt
  k = isa.parse(kernel_text(case)).kernels["k"]
  rec = np.zeros((LANES, RECORD), np.uint8)
  for i, (a, b, c) in enumerate(case["lanes"]):
    rec[i, :24] = np.array([a, b, c], np.uint64).view(np.uint8)
    rec[i, 24:28] = np.array([case["active"] >> i & 1], np.uint32).view(np.uint8)
    rec[i, 32:40] = np.array([case["init"]], np.uint64).view(np.uint8)
  out = np.zeros(LANES, np.uint64)
  mem = MemoryMap()
  mem.map(rec.ctypes.data, rec.nbytes, backing=rec.reshape(-1))
  mem.map(out.ctypes.data, out.nbytes, backing=out.view(np.uint8))
  simt.run(k, (1,), (LANES,), [rec.ctypes.data, out.ctypes.data], mem)
  return out & np.uint64((1 << O.width(dest_type(case))) - 1 if O.width(dest_type(case)) < 64 else 0xffffffffffffffff)

def check(case:dict) -> None:
  op, t, mods = case["op"], case.get("stype", case["type"]), case["mods"]
  try: got, again = run(case), run(case)
  except Exception as e: raise Finding("ptx-error", f"{op}.{'.'.join(mods)}.{t}: {type(e).__name__}: {e}", key=(op, t, type(e).__name__)) from None
  if not np.array_equal(got, again): raise Finding("nondeterministic", f"{op}.{t}: two runs differ", key=(op, t))
  dt = dest_type(case)
  init = case["init"] & ((1 << O.width(dt)) - 1)
  fn = O.ORACLE[op][2] if op != "cvt" else (lambda m, st, a, b, c: O.cvt(m, dt, st, a))
  for i, (a, b, c) in enumerate(case["lanes"]):
    g = int(got[i])
    if not case["active"] >> i & 1:
      if g != init: raise Finding("inactive-lane-written", f"{op}.{t}: lane {i} is inactive but holds {g:#x}, not {init:#x}", key=(op,))
      continue
    want = fn(mods, t, a, b, c)
    wants = want if isinstance(want, tuple) else (want,)
    if dt in O.FLOAT and op != "setp" and any(O.is_nan(w, dt) for w in wants) and O.is_nan(g, dt): continue
    if g not in wants:
      name = ".".join([op, *mods, *((dt,) if op == "cvt" else ()), t])
      raise Finding("ptx-mismatch", f"{name} lane {i}: a={a:#x} b={b:#x} c={c:#x}: got {g:#x}, want {' or '.join(hex(w) for w in wants)}",
                    key=(op, t, dt, *mods))

def minimise(case:dict, fails) -> dict:
  """One active lane that still fails, with the others inactive."""
  for i in range(LANES):
    if case["active"] >> i & 1 and fails(one := {**case, "active": 1 << i}): return one
  return case

register(Target("ptx.int", lambda rng: generate(rng, floats=False), check, minimise,
                doc="one random integer/bit PTX instruction on emu.nv vs an independent Python-integer reference (fuzz.ptx_oracle)"))
register(Target("ptx.float", lambda rng: generate(rng, floats=True), check, minimise,
                doc="one random f16/f32/f64 PTX instruction on emu.nv vs an exact-fraction IEEE reference (fuzz.ptx_oracle)"))
