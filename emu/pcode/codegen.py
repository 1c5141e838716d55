"""Typed code generator: pcode statements -> the Python source of one op function `op(st)`.

Two modes share one generator: 'np' (vector ops: per-lane values are numpy arrays, lane-dependent control flow becomes
masked selects) and 'py' (scalar and wave ops: Python ints, numpy float scalars, plain control flow). Every expression
compiles to a `Val`: code, static type, whether it differs per lane, and whether an integer may carry bits beyond its
width (`dirty`; cleaned lazily where it matters). The generator runs twice: the first pass only learns variable types
and which variables vary per lane. A third pass with `fpmode` set generates the op's mode variant, the body an op runs when
the wave's MODE is not the IEEE default (abi.MODE_DEFAULTS): float operands pass through `daz`, float results through `ftz`,
float arithmetic, fma, sqrt and rounding conversions round in the mode of their result's format.
"""
from __future__ import annotations
import ast, re
from dataclasses import dataclass
import math
from emu.pcode.nodes import (Assign, Binary, Break, Call, Cast, Concat, Declare, ExprStmt, For, If, Index, Lambda, Name, Num, Return, Slice,
                             Ternary, Unary, View, While)
from emu.pcode import cse, helpers

class CodegenError(Exception):
  """A construct the generator does not handle (reported as 'codegen' unsupported)."""

@dataclass(frozen=True)
class Val:
  code: str
  typ: tuple
  vary: bool = False
  dirty: bool = False

LANE_OPERANDS = {"S0", "S1", "S2", "S3", "D0", "D1", "DATA", "DATA0", "DATA1", "DATA2", "ADDR", "VDATA", "RETURN_DATA", "VADDR", "SRC0_LANE"}
UNIFORM_REGS = {"SCC", "M0", "PC", "SIMM16", "SIMM32", "SRC0", "SRC1", "SRC2", "VDST", "OFFSET", "OFFSET0", "OFFSET1", "OPSEL", "OPSEL_HI",
                "WAVE32", "WAVE64", "MODE_IEEE", "ROUND_MODE", "EXECZ", "VCCZ", "SDATA", "SGPR", "HW_REGISTERS", "TTMP", "TBA", "TMA", "TrapID",
                "SDST", "SSRC0", "SSRC1", "SBASE", "SOFFSET", "SADDR", "SRSRC", "IOFFSET", "INST_OFFSET", "SIMM32", "NEG", "NEG_HI", "ABS",
                "CLAMP", "OMOD"}
MASK_REGS = {"EXEC", "VCC"}
# encoding fields some entries `declare` to say where they come from (DS_PERMUTE/BPERMUTE: "VDST, ADDR and DATA0 are from the microcode
# DS encoding"; DS_*_ADDTID declare OFFSET0/OFFSET1 as 8'U): they stay inputs, with the declared width
DECLARED_FIELDS = {"OFFSET", "OFFSET0", "OFFSET1", "DATA0", "VDST"}
SCALAR_FILES = {"SGPR", "HW_REGISTERS"}   # register files scalar ops index (SGPR[i], HW_REGISTERS[id]): 32-bit registers
FIELD_NAMES = {("WAVE_MODE", "IEEE"): "MODE_IEEE"}
CONST_FIELDS = {("WAVE_STATUS", "PRIV"): "0"}  # the emulator runs user code only
HALF_REGS = {"EXEC_LO": ("EXEC", 0), "EXEC_HI": ("EXEC", 32), "VCC_LO": ("VCC", 0), "VCC_HI": ("VCC", 32)}
# per-arch spellings of the same operand (memory pseudocode: all address helpers evaluate to ADDR anyway; cdna V_BITOP3_B16/B32
# assign the destination as `D.b32`, the matrix ops' prose `D = A * B + C` is hand-written)
ALIASES = {"vgpr_a": "ADDR", "v_addr": "ADDR", "v_addr_off": "ADDR", "laneID": "laneId", "vgpr_d": "DATA", "DATA0": "DATA",
           "ADDR_BASE": "ADDR", "SGPR_ADDR": "ADDR", "wave32": "WAVE32", "D": "D0"}
_NAN_HELPERS = {"isSignalNAN", "isQuietNAN", "isNAN", "cvtToQuietNAN"}
IEEE_MODE = View(Name("WAVE_MODE"), "IEEE", None)   # the argument a mode-dependent helper call gets when the vendor text leaves it out
_FLOAT_CONST = {"INF": "inf", "PI": "3.141592653589793", "NAN": "nan", "MAX_FLOAT_F32": "3.4028234663852886e+38"}
_ARITH = {"+": "fadd", "-": "fsub", "*": "fmul", "/": "fdiv"}   # float arithmetic in an op's mode variant (rounds in the wave's mode)
_DT = {("f", 16): "np.float16", ("f", 32): "np.float32", ("f", 64): "np.float64", ("bf", 16): "np.float32"}

def is_vgpr(e) -> bool:
  """`VGPR[lane][reg]`."""
  return isinstance(e, Index) and isinstance(e.expr, Index) and e.expr.expr == Name("VGPR")
def isint(t): return t[0] in ("u", "i", "b")
def isfloat(t): return t[0] in ("f", "bf")
def mask(w:int) -> int: return (1 << w) - 1
def _offset(e) -> tuple:
  """`base + N` -> (base, N); any other expression -> (itself, 0) (a Num -> (None, its value))."""
  if isinstance(e, Num): return None, e.value
  if isinstance(e, Binary) and e.op == "+" and isinstance(e.b, Num): return e.a, e.b.value
  return e, 0

_SELECT = re.compile(r"(\w+) = where\(\w+, (.*), \1\)")   # `x = where(mask, value, x)`

def _cheap(code:str) -> bool:
  """A value made of names, constants and the pure conversions the generated code hoists (cse.PURE: an operand's float view or bits)."""
  try: tree = ast.parse(code, mode="eval")
  except SyntaxError: return False
  return all(isinstance(n, (ast.Expression, ast.Name, ast.Constant, ast.Load)) or
             isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in cse.PURE and not n.keywords for n in ast.walk(tree))

def guard_arm(lines:list[str], indent:str) -> bool:
  """Whether a masked arm's generated `lines` (each starting with `indent`) are worth a `mask.any()` test and safe to skip: more
  than one cheap select, and at its own level only assignments, memory / VGPR writes and nested guarded arms (inner levels are
  those arms' bodies)."""
  own = [ln[len(indent):] for ln in lines if ln.startswith(indent) and not ln.startswith(indent + " ")]
  if len(lines) == 1 and (sel := _SELECT.fullmatch(own[0])) and _cheap(sel.group(2)): return False
  return all(re.match(r"\w+ = |(mwrite|vgpr_write)\(|if _m\d+\.any\(\):$", ln) and not ln.startswith("ROUND_MODE") for ln in own)

class Gen:
  """Generate one op body. `mode` 'np' or 'py'; `info` is the pre-scan (see `scan`)."""
  def __init__(self, mode:str, info:dict, vt:dict|None=None, vary:set|None=None, fpmode:bool=False):
    self.mode, self.info, self.fpmode = mode, info, fpmode
    self.final = vt is not None
    self.vt: dict = dict(vt) if vt else {}
    self.vary: set = set(vary) if vary else set()
    self.lines: list[str] = []
    self.ind = 1
    self.mask: str | None = None
    self.loop_alive: list = []
    self.ntmp = 0
    self.env: list[dict] = [{}]
    self.lambdas: dict = {}
    self.reads: set = set()
    self.writes: set = set()
    self.widths: dict = {}
    self.floats = False
    self.ret: list = []
    self.defined: set = set()
    self.field_widths: dict[str, int] = {}   # encoding fields the entry declares (DECLARED_FIELDS): their width
    self.full: set = set()   # operands already written whole, unconditionally: later uses read the op's own value, not st's
    self.depth = 0           # nesting in conditional / loop bodies (a write there may not happen)
    self.top_inserts = 0     # lines put at the top of the body (zero starts of variables first assigned under a lane mask)

  # ---- plumbing ----
  def emit(self, line:str): self.lines.append("  " * self.ind + line)
  def tmp(self, prefix:str="_t") -> str:
    self.ntmp += 1
    return f"{prefix}{self.ntmp}"
  def bind(self, v:Val, prefix:str="_t") -> Val:
    if v.code.isidentifier() or v.code.lstrip("-").isdigit(): return v
    name = self.tmp(prefix)
    self.emit(f"{name} = {v.code}")
    return Val(name, v.typ, v.vary, v.dirty)
  def np(self, vary:bool) -> bool: return self.mode == "np" and vary
  def use(self, n:str):
    """Note a read of operand n: an input unless the op has already written all of it (S_MIN_I32's SCC, a load's VDATA)."""
    if n not in self.full: self.reads.add(n)
  def fmode(self, t:tuple, kind:str) -> str:
    """The wave mode field (abi.MODE_DEFAULTS) governing float type t: kind 'ROUND' or 'DENORM', of f32 or of f16/f64."""
    n = f"MODE_{kind}{32 if t[1] == 32 else 16}"
    self.reads.add(n)
    return n
  def opnd_width(self, name:str) -> int:
    """The bits the code holds of an operand: its width, at least a whole 32-bit register. A 16-bit operand's views mask its
    register's bits (an SDWA DWORD select passes all 32) and a 16-bit write merges into the value the executor preloaded."""
    return max(self.info["widths"].get(name, 32), 32)
  def is_wide(self, name:str) -> bool: return self.mode == "np" and self.opnd_width(name) > 64 and name in self.info["operands"]

  # ---- representation conversions ----
  def const(self, value:int, vary:bool) -> str:
    """An integer constant next to a value of the given variance (uint64 arrays need non-negative constants)."""
    return str(value & ((1 << 64) - 1)) if self.np(vary) else str(value)

  def clean(self, v:Val) -> Val:
    """The canonical form of an integer value: masked (unsigned) or sign-extended (signed) to its width."""
    if not isint(v.typ) or not v.dirty: return Val(v.code, v.typ, v.vary)
    k, w = v.typ
    if w > 64 or not self.np(v.vary):
      return Val(f"sext({v.code}, {w})" if k == "i" else f"(({v.code}) & {hex(mask(w))})", v.typ, v.vary)
    if w == 64: return Val(v.code, v.typ, v.vary)
    return Val(f"sext({v.code}, {w})" if k == "i" else f"(({v.code}) & {hex(mask(w))})", v.typ, v.vary)

  def bits(self, v:Val) -> Val:
    """The raw bits of a value as an unsigned integer of its width."""
    k, w = v.typ
    if k == "bool": return Val(f"({v.code}).astype(np.uint64)" if self.np(v.vary) else f"int({v.code})", ("u", 1), v.vary)
    if k == "bf": return Val(f"bf16_bits({v.code})", ("u", 16), v.vary)
    if k == "f":
      x = f"ftz({v.code}, {self.fmode(v.typ, 'DENORM')})" if self.fpmode else v.code   # a float result leaves the op: flush-output mode
      return Val(f"f2bits({x}, {w})", ("u", w), v.vary)
    v = self.clean(v)
    if k == "i": return Val(f"(({v.code}) & {hex(mask(w))})" if w < 64 or not self.np(v.vary) else v.code, ("u", w), v.vary)
    return Val(v.code, ("u", w), v.vary)

  def from_bits(self, b:Val, t:tuple) -> Val:
    """Reinterpret unsigned bits b (any width) as type t (truncating or zero-extending)."""
    k, w = t
    if k == "f":
      self.floats = True
      x = f"bits2f({b.code}, {w})"
      return Val(f"daz({x}, {self.fmode(t, 'DENORM')})" if self.fpmode else x, t, b.vary)   # a float operand enters: flush-input mode
    if k == "bf": self.floats = True; return Val(f"bf16_from_bits({b.code})", t, b.vary)
    if k == "bool": return Val(f"(({b.code}) != 0)", t, b.vary)
    if b.typ[1] > w or b.dirty or k == "i" and b.typ != t: return self.clean(Val(b.code, t, b.vary, True))
    if w > 64 and b.typ[1] <= 64 and self.mode == "np" and b.vary: return Val(f"wide({b.code})", t, b.vary)
    return Val(b.code, t, b.vary)

  def conv(self, v:Val, t:tuple, numeric:bool=True) -> Val:
    """Convert v to type t: ints by truncation/extension, floats numerically; int<->float numerically when `numeric`, else
    as a bit reinterpretation."""
    if v.typ == t: return self.clean(v)
    if t[0] == "bool":
      if v.typ[0] == "bool": return v
      return Val(f"(({self.clean(v).code}) != 0)", t, v.vary)
    if isint(t):
      if v.typ[0] == "bool": v = self.bits(v)
      if isfloat(v.typ):
        if not numeric: return self.from_bits(self.bits(v), t)
        return Val(f"toint({v.code}, {t[1]}, {t[0] == 'i'})", t, v.vary)
      if self.mode == "np" and v.vary:
        if t[1] > 64 and v.typ[1] <= 64:
          c = self.clean(v)
          return self.clean(Val(f"sext(wide({c.code}), 64)" if v.typ[0] == "i" else f"wide({c.code})", t, True, True))
        if t[1] <= 64 and v.typ[1] > 64: return self.clean(Val(f"u64(({v.code}) & {hex(mask(64))})", t, True, True))
      c = self.clean(v)
      if v.typ[0] != "i" and t[1] >= v.typ[1] and t[0] != "i": return Val(c.code, t, v.vary)
      if v.typ[0] == "i" and t[0] == "i" and t[1] >= v.typ[1]: return Val(c.code, t, v.vary)
      return self.clean(Val(c.code, t, v.vary, True))
    # to float
    self.floats = True
    if v.typ[0] == "bool": v = self.bits(v)
    if isint(v.typ):
      if not numeric: return self.from_bits(self.bits(v), t)
      c = self.clean(v)
      code = f"tofloat({c.code}, {32 if t[0] == 'bf' else t[1]}, {v.typ[0] == 'i'})"
      return Val(f"bf16_round({code})" if t[0] == "bf" else code, t, v.vary)
    if t[0] == "bf": return Val(f"bf16_round({v.code})", t, v.vary)
    if v.typ[0] == "bf" and t == ("f", 32): return Val(v.code, t, v.vary)
    if self.fpmode and v.typ[0] == "f" and t[1] < v.typ[1]: return Val(f"fround({v.code}, {t[1]}, {self.fmode(t, 'ROUND')})", t, v.vary)
    dt = _DT[t]
    if self.np(v.vary): return Val(f"np.asarray({v.code}).astype({dt})", t, v.vary)
    return Val(f"{dt}({v.code})", t, v.vary)

  def lane(self, v:Val) -> str:
    """Code of v usable next to uint64 lane arrays (Python ints masked to 64 bits)."""
    if v.vary or self.mode != "np" or not isint(v.typ): return v.code
    if v.code.lstrip("-").isdigit(): return str(int(v.code) & mask(64))
    return f"u64({v.code})"

  # ---- expressions ----
  def expr(self, e) -> Val:
    m = getattr(self, "e_" + type(e).__name__, None)
    if m is None: raise CodegenError(f"expression {type(e).__name__}")
    return m(e)

  def e_Num(self, e:Num) -> Val:
    if isinstance(e.value, float) or (e.typ and isfloat(e.typ)):
      t = e.typ if e.typ and e.typ != ("f", 64) else ("f", 64)
      self.floats = True
      code = repr(float(e.value))
      return Val(code if t == ("f", 64) else f"{_DT[t]}({code})", t if e.typ else ("f", 64))
    t = e.typ or ("i", 32)
    v = e.value & mask(t[1]) if t[0] != "i" else e.value
    return Val(str(v) if v >= 0 else f"({v})", t)

  def e_Name(self, e:Name, field:str|None=None) -> Val:
    n = ALIASES.get(e.id, e.id)
    if n == "DST": n = self.info["dst"]  # *MOVREL*: the destination register number from the instruction (VDST or SDST)
    for scope in reversed(self.env):
      if n in scope: return scope[n]
    if n in self.vt or n in self.info["vars"]:
      t = self.vt.get(n) or self.info["vars"].get(n)
      if isinstance(t, tuple) and len(t) == 3: raise CodegenError(f"array {n} used as a value")
      return Val(n, t, n in self.vary)
    if n == "laneId":
      if self.mode != "np": raise CodegenError("laneId outside a vector op")
      self.reads.add("laneId")
      return Val("laneId", ("u", 32), True)
    if n in HALF_REGS:
      if self.mode == "np": raise CodegenError(f"{n} in a vector op")
      reg, sh = HALF_REGS[n]
      self.reads.add(reg)
      return Val(f"(({reg} >> {sh}) & 0xffffffff)" if sh else f"({reg} & 0xffffffff)", ("b", 32))
    if n in _FLOAT_CONST and n != "NAN": self.floats = True; return Val(f"float('{_FLOAT_CONST[n]}')" if n == "INF" else _FLOAT_CONST[n], ("f", 64))
    if n in ("TRUE", "FALSE", "true", "false"): return Val(str(n.lower() == "true"), ("bool", 1))
    if n in helpers.CONSTANTS: return Val(n, helpers.CONSTANTS[n])
    if n == "ADDR" and self.info.get("ds_offset"): return self.ds_addr()
    if n in self.info["operands"] or n in UNIFORM_REGS or n in MASK_REGS:
      self.use(n)
      if self.mode == "np" and n in MASK_REGS | {"D0", "D1"} and n in self.info["lanemask"]:
        raise CodegenError(f"whole-register use of lane mask {n} in a vector op")
      vary = self.mode == "np" and n in self.info["operands"]
      if n in MASK_REGS: return Val(n, ("b", 64), vary)   # (per lane only in a scalar op compiled across waves)
      w = self.opnd_width(n) if n in self.info["operands"] else 64 if n in ("PC",) else self.field_widths.get(n, 32)
      if n == "SCC": w = 1
      if self.is_wide(n): return Val(f"wide({n})", ("b", w), True)
      return Val(n, ("b", w), vary)
    raise CodegenError(f"unknown name {n}")

  def ds_addr(self) -> Val:
    """A DS op's byte address: the address VGPR (ADDR) plus the instruction's 16-bit OFFSET."""
    self.reads.update(("ADDR", "OFFSET"))
    return Val("(ADDR + u64(OFFSET))" if self.mode == "np" else "(ADDR + OFFSET)", ("u", 64), self.mode == "np")

  def calc_addr(self, e:Call) -> Val:
    """Calc*Addr(...) (every arch's spelling and arity): the effective address the executor passes as ADDR. The arguments are not
    evaluated (they name per-arch register fields). CalcDsAddr with a non-zero offset argument adds the instruction offset, as DS
    ops get the bare address VGPR."""
    if e.name == "CalcDsAddr" and any(helpers.const_eval(a) != 0 for a in e.args[1:]): return self.ds_addr()
    self.reads.add("ADDR")
    return Val("ADDR", ("u", 64), self.mode == "np")

  def e_View(self, e:View) -> Val:
    if isinstance(e.expr, Name) and (e.expr.id, e.name) in FIELD_NAMES:
      n = FIELD_NAMES[(e.expr.id, e.name)]
      self.reads.add(n)
      return Val(n, ("bool", 1))
    if isinstance(e.expr, Name) and (e.expr.id, e.name) in CONST_FIELDS: return Val(CONST_FIELDS[(e.expr.id, e.name)], ("u", 1))
    if isinstance(e.expr, Name) and e.expr.id in ("NAN", "INF", "DENORM") and e.typ:
      self.floats = True
      if e.expr.id == "DENORM": raise CodegenError("DENORM outside a comparison")
      return Val(f"{_DT[e.typ]}(float('{e.expr.id.lower()}'))", e.typ)
    if e.expr == Name("INST") and e.typ is None: return self.e_Name(Name(e.name))  # INST.OMOD: an instruction field
    if e.typ is None:
      if e.name == "f" or e.name == "u":  # `S0.f` in a few entries: the op's own width
        return self.expr(e.expr)
      raise CodegenError(f"field .{e.name}")
    if isinstance(e.expr, Index) and isinstance(e.expr.expr, Name) and e.expr.expr.id == "MEM": return self.mem_read(e.expr.index, e.typ)
    if isinstance(e.expr, Index) and isinstance(e.expr.expr, Name) and e.expr.expr.id in SCALAR_FILES and e.typ[1] == 64:
      f, i = e.expr.expr.id, self.bind(self.conv(self.expr(e.expr.index), ("u", 32)))   # SGPR[i].b64: the register pair i, i + 1
      self.reads.add(f)
      return self.from_bits(Val(f"({f}[{i.code}] | ({f}[{i.code} + 1] << 32))", ("u", 64)), e.typ)
    v = self.expr(e.expr)
    if v.typ == e.typ: return v
    if v.typ[0] == "i" and isint(e.typ) and e.typ[1] > v.typ[1]: return self.conv(v, e.typ)  # n.i32 of an i16 sign-extends
    if isfloat(v.typ) and isfloat(e.typ) and v.typ[1] == e.typ[1] and v.typ[0] == e.typ[0]: return v
    # a local float read at another float width (`tmp.f16` of a tmp assigned 64'F values): the value, not its low bits
    if isinstance(e.expr, Name) and e.expr.id not in self.info["operands"] and v.typ[0] == e.typ[0] == "f": return self.conv(v, e.typ)
    if v.typ[0] == "bool": return self.conv(v, e.typ)
    return self.from_bits(self.bits(v), e.typ)

  def mem_read(self, addr, t:tuple) -> Val:
    a = self.conv(self.expr(addr), ("u", 64))
    self.reads.add("MEM"); self.info["mem"].add("r")
    nb = t[1] // 8
    if self.mode == "np":
      m = f", {self.mask}" if self.mask else ""
      b = Val(f"mread(MEM, {self.lane(a)}, {nb}, n{m})", ("u", t[1]), True)
      self.reads.add("n")
    else: b = Val(f"MEM.read({a.code}, {nb})", ("u", t[1]))
    return self.from_bits(b, t)

  def e_Index(self, e:Index) -> Val:
    base = e.expr
    if isinstance(base, Index) and isinstance(base.expr, Name) and base.expr.id == "VGPR":
      lane, reg = self.conv(self.expr(base.index), ("u", 32)), self.conv(self.expr(e.index), ("u", 32))
      self.reads.add("VGPR")
      if self.np(lane.vary): return Val(f"VGPR[{lane.code}, {reg.code}].astype(np.uint64)", ("b", 32), True)
      return Val(f"int(VGPR[{lane.code}, {reg.code}])", ("b", 32))
    if isinstance(base, Name) and base.id in SCALAR_FILES:
      self.reads.add(base.id)
      return Val(f"{base.id}[{self.conv(self.expr(e.index), ('u', 32)).code}]", ("b", 32))
    if base == Name("MEM"): return self.mem_read(e.index, ("b", 32))  # untyped MEM[a]: a dword
    lm = self.lanemask_name(e)
    if lm:
      self.use(lm)
      return Val(lm, ("u", 1), True)
    if isinstance(base, Name) and isinstance(self.vt.get(base.id) or self.info["vars"].get(base.id), tuple) and \
       len(self.vt.get(base.id) or self.info["vars"].get(base.id)) == 3:
      _, et, _cnt = self.vt.get(base.id) or self.info["vars"][base.id]
      i = self.conv(self.expr(e.index), ("u", 32))
      if self.np(i.vary): return Val(f"pick({base.id}, {i.code})", et, True)
      return Val(f"{base.id}[{i.code}]", et, base.id in self.vary)
    v, i = self.expr(base), self.conv(self.expr(e.index), ("u", 32))
    if isfloat(v.typ) or v.typ[0] == "bool": v = self.bits(v)
    v = self.clean(v)
    if self.np(v.vary or i.vary) or v.typ[1] > 64:
      return Val(f"(shr({self.lane(v)}, {self.lane(i)}) & 1)", ("u", 1), v.vary or i.vary)
    return Val(f"(({v.code} >> {i.code}) & 1)", ("u", 1), v.vary or i.vary)

  def lanemask_name(self, e:Index) -> str | None:
    """X[laneId] / X.u64[laneId] on a lane-mask register in a vector op -> X."""
    if self.mode != "np": return None
    b = e.expr.expr if isinstance(e.expr, View) else e.expr
    i = e.index.expr if isinstance(e.index, View) else e.index
    if isinstance(b, Name) and isinstance(i, Name) and ALIASES.get(i.id, i.id) == "laneId" and b.id in self.info["lanemask"]: return b.id
    return None

  def slice_bounds(self, e:Slice) -> tuple:
    hi, lo = e.hi, e.lo
    if isinstance(hi, Binary) and hi.op == "-" and isinstance(hi.a, Binary) and hi.a.op == "+" and hi.a.a == lo and isinstance(hi.a.b, Num):
      return None, hi.a.b.value, lo  # `lo +: w`
    (hb, hc), (lb, lc) = _offset(hi), _offset(lo)
    if hb is not None and hb == lb: return None, hc - lc + 1, lo  # `x + 11 : x + 6`: a dynamic position, a constant width
    h, lw = helpers.const_eval(hi), helpers.const_eval(lo)
    if h is None or lw is None: raise CodegenError("slice with non-constant width")
    if h < lw: raise CodegenError("reversed slice")  # `x[0 : 31]` (bit reversal) is handled by e_Slice
    return lw, h - lw + 1, lo

  def sliced_operand(self, x, lo_c:int|None, w:int):
    """What a slice of `x` takes its bits from: an integer view of a wider operand that the slice may reach past
    (`S0.u32[OPSEL[0].i32 * 32 + 31 : OPSEL[0].i32 * 32]` of 64-bit V_PK_MOV_B32) only types it, so the slice reads the operand."""
    if isinstance(x, View) and isinstance(x.expr, Name) and x.typ and isint(x.typ) and (lo_c is None or lo_c + w > x.typ[1]):
      n = ALIASES.get(x.expr.id, x.expr.id)
      if n in self.info["operands"] and self.opnd_width(n) > x.typ[1]: return x.expr
    return x

  def e_Slice(self, e:Slice) -> Val:
    h, lw = helpers.const_eval(e.hi), helpers.const_eval(e.lo)
    if h is not None and lw is not None and h < lw:  # S0.u32[0 : 31]: the bits in reverse order
      if h != 0: raise CodegenError("reversed slice not starting at bit 0")
      v = self.bits(self.expr(Slice(e.expr, e.lo, e.hi)))
      return Val(f"reverse_bits({self.lane(v)}, {lw + 1})", ("u", lw + 1), v.vary)
    lo_c, w, lo = self.slice_bounds(e)
    if isinstance(e.expr, Name) and self.is_wide(e.expr.id) and lo_c is not None and lo_c % 32 == 0 and w in (32, 64):
      n = e.expr.id
      self.use(n)
      k = lo_c // 32
      if w == 32: return Val(f"{n}[:, {k}].astype(np.uint64)", ("u", 32), True)
      return Val(f"({n}[:, {k}].astype(np.uint64) | ({n}[:, {k+1}].astype(np.uint64) << np.uint64(32)))", ("u", 64), True)
    v = self.expr(self.sliced_operand(e.expr, lo_c, w))
    if isfloat(v.typ) or v.typ[0] == "bool": v = self.bits(v)
    v = self.clean(v)
    lov = Val(str(lo_c), ("i", 32)) if lo_c is not None else self.conv(self.expr(lo), ("u", 32))
    if v.typ[0] == "i": v = self.bits(v)
    if self.np(v.vary or lov.vary) and v.typ[1] <= 64:
      sh = f"({self.lane(v)} >> np.uint64({lov.code}))" if not lov.vary else f"shr({self.lane(v)}, {lov.code})"
      return Val(f"({sh} & {hex(mask(w))})" if w < 64 else sh, ("u", w), True)
    if lo_c == 0: return Val(f"(({v.code}) & {hex(mask(w))})", ("u", w), v.vary)
    return Val(f"((({v.code}) >> {lov.code}) & {hex(mask(w))})", ("u", w), v.vary)

  def e_Cast(self, e:Cast) -> Val:
    k, w = e.typ
    t = {"u": ("u", w), "i": ("i", w), "b": ("u", w), "f": ("f", w), "bf": ("bf", w)}[k]
    v = self.expr(e.expr)
    if k == "f" and isinstance(e.expr, View) and e.expr.name in ("fp8", "bf8"):  # 32'F(S0[7 : 0].fp8): decode the 8-bit float
      self.floats = True
      return self.conv(Val(f"{e.expr.name}_to_f32({self.clean(v).code})", ("f", 32), v.vary), t)
    if k == "b" and isfloat(v.typ): return self.bits(v) if v.typ[1] == w else self.conv(self.bits(v), t)
    if k == "f" and isint(v.typ) and w == 16 and isinstance(e.expr, Num) is False and v.typ[1] == 16: return self.from_bits(v, t)
    return self.conv(v, t)

  def arith_type(self, a:Val, b:Val) -> tuple:
    if isfloat(a.typ) or isfloat(b.typ):
      fa = a.typ if isfloat(a.typ) else None
      fb = b.typ if isfloat(b.typ) else None
      ws = [t[1] if t[0] == "f" else 32 for t in (fa, fb) if t]
      # untyped float literals (f64 here) adopt the other operand's width, like numpy's weak scalars
      if fa and fb and a.code[:1].isdigit() and fb != ("f", 64): return fb if fb[0] == "f" else ("f", 32)
      if fa and fb and b.code[:1].isdigit() and fa != ("f", 64): return fa if fa[0] == "f" else ("f", 32)
      return ("f", max(ws))
    ta = a.typ if a.typ[0] != "bool" else ("u", 1)
    tb = b.typ if b.typ[0] != "bool" else ("u", 1)
    w = max(32, ta[1], tb[1])
    return ("i" if ta[0] == "i" and tb[0] == "i" else "u", w)

  def e_Unary(self, e:Unary) -> Val:
    v = self.expr(e.expr)
    if e.op == "!":
      c = self.conv(v, ("bool", 1))
      return Val(f"(~{c.code})" if self.np(c.vary) else f"(not {c.code})", ("bool", 1), c.vary)
    if isfloat(v.typ):
      if e.op == "-": return Val(f"(-{v.code})", v.typ, v.vary)
      raise CodegenError(f"unary {e.op} on float")
    if v.typ[0] == "bool": v = self.bits(v)
    t = (v.typ[0], max(32, v.typ[1]))
    if e.op == "~": return Val(f"(~{self.lane(v)})", t, v.vary, True)
    if self.np(v.vary): return Val(f"(np.uint64(0) - {v.code})", t, v.vary, True)
    return Val(f"(-{v.code})", t, v.vary, True)

  def e_Binary(self, e:Binary) -> Val:
    op = e.op
    if op in ("&&", "||"):
      a, b = self.conv(self.expr(e.a), ("bool", 1)), self.conv(self.expr(e.b), ("bool", 1))
      if self.np(a.vary or b.vary): return Val(f"({a.code} {'&' if op == '&&' else '|'} {b.code})", ("bool", 1), True)
      return Val(f"({a.code} {'and' if op == '&&' else 'or'} {b.code})", ("bool", 1))
    if op in ("==", "!=") and isinstance(e.b, View) and isinstance(e.b.expr, Name) and e.b.expr.id == "DENORM":
      a = self.conv(self.expr(e.a), e.b.typ)
      self.floats = True
      return Val(f"({'' if op == '==' else '~'}is_denorm({a.code}))", ("bool", 1), a.vary)
    a, b = self.expr(e.a), self.expr(e.b)
    vary = a.vary or b.vary
    if op == "**":
      self.floats = True
      t = self.arith_type(a, b) if isfloat(a.typ) or isfloat(b.typ) else ("f", 64)
      return Val(f"pow_f({self.conv(a, t).code}, {self.conv(b, t).code})", t, vary)
    t = self.arith_type(a, b)
    if op == "<>" and isint(t) or op == "<>" and a.typ[0] == b.typ[0] == "bool": op = "!="
    if op == "<>":  # ordered less-or-greater: false when either operand is NaN (unlike `!=`)
      a, b = self.conv(a, t), self.conv(b, t)
      return Val(f"(({a.code} < {b.code}) | ({a.code} > {b.code}))", ("bool", 1), vary)
    if op == "==" and isfloat(t) and (z := next((x for x in (e.a, e.b) if isinstance(x, Num) and x.signed and x.value == 0), None)):
      # gfx9 V_MIN/V_MAX `S0 == +0.0 && S1 == -0.0`: a zero written with its sign tests the sign too (float equality has -0 == +0)
      v = self.conv(b if z is e.a else a, t)
      return Val(f"(({v.code} == 0) & (sign({v.code}) == {int(math.copysign(1, z.value) < 0)}))", ("bool", 1), vary)
    if op in ("==", "!=", "<", "<=", ">", ">="): return self._compare(op, a, b, t, vary)
    if isfloat(t):
      if op not in ("+", "-", "*", "/"): raise CodegenError(f"float operator {op}")
      self.floats = True
      a, b = self.conv(a, t), self.conv(b, t)
      if t[0] == "bf": t = ("f", 32)
      if self.fpmode: return Val(f"{_ARITH[op]}({a.code}, {b.code}, {self.fmode(t, 'ROUND')})", t, vary)
      return Val(f"({a.code} {op} {b.code})", t, vary)
    return self._integer_binary(e, op, a, b, t, vary)

  def _compare(self, op:str, a:Val, b:Val, t:tuple, vary:bool) -> Val:
    """a <op> b for a comparison operator, in the common type `t` (booleans compare as bits against integers)."""
    if a.typ[0] == "bool" and b.typ[0] == "bool" or isint(t) and (a.typ[0] == "bool" or b.typ[0] == "bool"):
      a, b = self.bits(a), self.bits(b)
    a, b = self.conv(a, t), self.conv(b, t)
    if isint(t) and t[1] > 64 and self.mode == "np": return Val(f"np.asarray({a.code} {op} {b.code}, dtype=bool)", ("bool", 1), vary)
    if isint(t) and t[0] == "i": return Val(f"(i64({a.code}) {op} i64({b.code}))", ("bool", 1), vary)
    if isint(t): return Val(f"({self.lane(a) if vary else a.code} {op} {self.lane(b) if vary else b.code})", ("bool", 1), vary)
    return Val(f"({a.code} {op} {b.code})", ("bool", 1), vary)

  def _integer_binary(self, e:Binary, op:str, a:Val, b:Val, t:tuple, vary:bool) -> Val:
    """Integer and bit arithmetic: + - * & | ^, shifts, division and remainder."""
    if a.typ[0] == "bool": a = self.bits(a)
    if b.typ[0] == "bool": b = self.bits(b)
    if t[1] > 64 and self.mode == "np" and vary:
      a, b = self.conv(a, t), self.conv(b, t)
    if op in ("+", "-", "*", "&", "|", "^"):
      if t[1] <= 64 and self.np(vary): return Val(f"({self.lane(a)} {op} {self.lane(b)})", t, vary, True)
      return Val(f"({a.code} {op} {b.code})", t, vary, True)
    if op == "<<":
      sh = self.conv(b, ("u", 64))
      if self.np(vary) and t[1] <= 64:
        c = helpers.const_eval(e.b)
        if c is not None and c < 64 and not a.vary: return Val(f"shl({self.lane(a)}, {c})", t, vary, True)
        if c is not None and c < 64: return Val(f"({self.lane(a)} << np.uint64({c}))", t, vary, True)
        return Val(f"shl({self.lane(a)}, {sh.code})", t, vary, True)
      return Val(f"({a.code} << {sh.code})", t, vary, True)
    if op == ">>":
      ca, sh = self.conv(a, (a.typ[0] if a.typ[0] != "b" else "u", max(32, a.typ[1]))), self.conv(b, ("u", 64))
      ta = ca.typ
      if self.np(vary) and ta[1] <= 64: return Val(f"shr({self.lane(ca)}, {sh.code}, {ta[0] == 'i'})", ta, vary)
      return Val(f"({ca.code} >> {sh.code})", ta, vary)
    if op in ("/", "%"):
      a, b = self.conv(a, t), self.conv(b, t)
      return Val(f"{'idiv' if op == '/' else 'imod'}({self.lane(a)}, {self.lane(b)}, {t[0] == 'i'})", t, vary, True)
    raise CodegenError(f"operator {op}")

  def e_Ternary(self, e:Ternary) -> Val:
    c = self.conv(self.expr(e.cond), ("bool", 1))
    a, b = self.expr(e.a), self.expr(e.b)
    if a.typ == b.typ: t = a.typ
    elif a.typ[0] == "bool" and b.typ[0] == "bool": t = ("bool", 1)
    else:
      a2 = a if a.typ[0] != "bool" else self.bits(a)
      b2 = b if b.typ[0] != "bool" else self.bits(b)
      t = self.arith_type(a2, b2)
      if isint(a2.typ) and isint(b2.typ): t = (t[0], max(a2.typ[1], b2.typ[1]))
    a, b = self.conv(a, t), self.conv(b, t)
    vary = c.vary or a.vary or b.vary
    if self.np(vary):
      if t[1] > 64: return Val(f"np.where({c.code}, {a.code}, {b.code})", t, True)
      if isint(t) and not a.vary and not b.vary:  # two Python ints would select into int64 (uint64 + int64 promotes to float)
        return Val(f"where({c.code}, np.uint64({self.lane(a)}), np.uint64({self.lane(b)}))", t, True)
      return Val(f"where({c.code}, {self.lane(a)}, {self.lane(b)})", t, True)
    return Val(f"({a.code} if {c.code} else {b.code})", t, False)

  def concat_part(self, x) -> Val:
    """The bits of one part of `{a, b}` at its own width: `~lane[5]` stays 1 bit wide (no promotion to 32 bits as in `~mask`)."""
    if isinstance(x, Unary) and x.op == "~" and (inner := self.bits(self.expr(x.expr))).typ[1] < 32:
      return self.clean(Val(f"(~{self.lane(inner)})", inner.typ, inner.vary, True))
    return self.bits(self.expr(x))

  def e_Concat(self, e:Concat) -> Val:
    parts = [self.concat_part(x) for x in e.items]
    total = sum(p.typ[1] for p in parts)
    vary = any(p.vary for p in parts)
    big = total > 64 and self.mode == "np" and vary
    code, sh = None, 0
    for p in reversed(parts):
      pc = f"wide({p.code})" if big else self.lane(p) if self.np(vary) else p.code
      term = pc if sh == 0 else (f"({pc} << {sh})" if not self.np(vary) or big else f"({pc} << np.uint64({sh}))")
      code = term if code is None else f"({term} | {code})"
      sh += p.typ[1]
    return Val(code, ("u", total), vary)

  def e_Call(self, e:Call) -> Val:
    if e.name in self.lambdas: return self.call_lambda(e)
    if e.name in helpers.ADDR_HELPERS: return self.calc_addr(e)
    h = helpers.HELPERS.get(e.name)
    if h is None: raise helpers.MissingHelper(e.name)
    if h.missing: raise helpers.MissingHelper(h.missing)
    if h.ieee_arg and h.args is not None and len(e.args) == len(h.args) - 1:   # the vendor's call: the instruction's NaN rule reads the mode
      e = Call(e.name, (*e.args, IEEE_MODE))
    args = [self.expr(a) for a in e.args]
    if e.name in _NAN_HELPERS and isinstance(e.args[0], Cast) and e.args[0].typ == ("f", 64) and isfloat((inner := self.expr(e.args[0].expr)).typ):
      args[0] = inner  # isSignalNAN(64'F(S0.f32)): classify the operand itself (widening in numpy quiets a signalling NaN)
    if h.args is not None:
      if len(h.args) != len(args): raise CodegenError(f"{e.name} takes {len(h.args)} arguments, got {len(args)}")
      args = [a if want is None else self.conv(a, helpers.arg_type(want, [x.typ for x in args])) for a, want in zip(args, h.args)]
    else: args = [self.clean(a) for a in args]
    vary = any(a.vary for a in args)
    ret = h.ret([a.typ for a in args]) if callable(h.ret) else h.ret
    if isfloat(ret) or any(isfloat(a.typ) for a in args): self.floats = True
    extra = ""
    if h.needs_n:
      self.reads.add("n")
      extra = ", n=n" if self.mode == "np" else ", n=None"
    if h.rm and self.info.get("rm"):  # the op sets or reads the rounding mode: the conversion honours the mode in scope
      self.reads.add("ROUND_MODE")
      extra += ", rm=ROUND_MODE"
    elif h.rm and self.fpmode and ret[0] == "f": extra += f", rm={self.fmode(ret, 'ROUND')}"
    if h.lanes: args = [Val(self.lane(a), a.typ, a.vary) for a in args]
    return Val(f"{h.fn}({', '.join(a.code for a in args)}{extra})", ret, vary or h.vary_result and self.mode == "np", h.dirty)

  def call_lambda(self, e:Call) -> Val:
    lam = self.lambdas[e.name]
    if len(lam.params) != len(e.args): raise CodegenError(f"lambda {e.name} arity")
    scope = {p: self.bind(self.expr(a), "_a") for p, a in zip(lam.params, e.args)}
    self.env.append(scope)
    try:
      if not isinstance(lam.body, list): return self.bind(self.expr(lam.body), "_l")
      r = self.tmp("_r")
      self.ret.append(r)
      body_vary = any(v.vary for v in scope.values()) and self.mode == "np"
      if body_vary: self.vary.add(r)
      if r in self.vt:
        self.emit(f"{r} = {self.zero(self.vt[r], r in self.vary)}")
      self.depth += 1; self.block(lam.body); self.depth -= 1
      self.ret.pop()
      t = self.vt.get(r, ("u", 32))
      return Val(r, t, r in self.vary)
    finally:
      self.env.pop()

  # ---- statements ----
  def zero(self, t, vary:bool) -> str:
    if len(t) == 3: return f"[{self.zero(t[1], vary)}] * {t[2]}"
    if self.np(vary):
      if isfloat(t): return f"np.zeros(n, {_DT[t]})"
      if t[0] == "bool": return "np.zeros(n, bool)"
      return "np.zeros(n, np.uint64)" if t[1] <= 64 else "np.zeros(n, object)"
    if isfloat(t): return f"{_DT[t]}(0.0)"
    return "False" if t[0] == "bool" else "0"

  def block(self, stmts:list):
    for s in stmts:
      m = getattr(self, "s_" + type(s).__name__, None)
      if m is None: raise CodegenError(f"statement {type(s).__name__}")
      m(s)

  def s_Declare(self, s:Declare):
    t = ({"u": "u", "i": "i", "b": "u", "f": "f"}[s.typ[0]], s.typ[1])
    if s.name in DECLARED_FIELDS and not s.count:   # the instruction's field, an input of the declared width, not a zeroed local
      self.field_widths[s.name] = s.typ[1]
      return
    self.settype(s.name, ("arr", t, s.count) if s.count else t)
    self.defined.add(s.name)
    if s.name == "S" and s.count == 3:  # V_FMA_MIX*: `declare S : 32'B[3]` names the three source operands
      self.reads.update(("S0", "S1", "S2"))
      if self.mode == "np": self.vary.add("S")
      self.emit("S = [S0, S1, S2]")
      return
    self.emit(f"{s.name} = {self.zero(self.vt[s.name], s.name in self.vary)}")

  def settype(self, name:str, t):
    old = self.vt.get(name)
    if self.final: return
    if old is None or old == t: self.vt[name] = t; return
    if len(old) == 3 or len(t) == 3: return
    if isint(old) and isint(t): self.vt[name] = ("i" if old[0] == t[0] == "i" else "u", max(old[1], t[1]))
    elif isfloat(t) and not isfloat(old): self.vt[name] = t
    elif isfloat(t) and isfloat(old): self.vt[name] = max(old, t, key=lambda x: x[1])

  def s_ExprStmt(self, s:ExprStmt):
    if s.expr.name in helpers.NOOPS: return
    self.emit(self.expr(s.expr).code)

  def s_Break(self, s:Break):
    if self.loop_alive and self.loop_alive[-1]:
      a = self.loop_alive[-1]
      self.emit(f"{a} = {a} & ~{self.mask}" if self.mask != a else f"{a} = np.zeros(n, bool)")
    else: self.emit("break")

  def s_Return(self, s:Return):
    if not self.ret: raise CodegenError("return outside a lambda")
    r = self.ret[-1]
    v = self.expr(s.value)
    self.settype(r, v.typ if v.typ[0] != "bool" else ("u", 1))
    if v.vary or self.mask: self.vary.add(r)
    self.assign_var(r, v)

  def s_If(self, s:If):
    conds = [self.conv(self.expr(c), ("bool", 1)) for c, _ in s.arms[:1]]
    if not conds[0].vary or self.mode != "np": return self.plain_if(conds[0], s.arms, s.orelse)
    saved, rest = self.mask, None
    for i, (cond, body) in enumerate(s.arms):
      c = conds[0] if i == 0 else self.conv(self.expr(cond), ("bool", 1))
      if c.vary and (i < len(s.arms) - 1 or s.orelse): c = self.bind(c, "_c")   # the arm's mask and the rest's both test it: once
      cc = f"np.broadcast_to({c.code}, (n,))" if not c.vary else c.code
      m = self.tmp("_m")
      parts = [p for p in (saved, rest, cc) if p]
      self.emit(f"{m} = {' & '.join(parts)}")
      if i < len(s.arms) - 1 or s.orelse:
        r2 = self.tmp("_m")
        self.emit(f"{r2} = {rest + ' & ' if rest else ''}~{cc}")
        rest = r2
      self.mask = m
      self.masked_arm(m, body)
      self.mask = saved
    if s.orelse:
      m = self.tmp("_m")
      self.emit(f"{m} = {' & '.join(p for p in (saved, rest) if p)}")
      self.mask = m
      self.masked_arm(m, s.orelse)
      self.mask = saved

  def masked_arm(self, mask:str, body:list):
    """The statements of a per-lane if/else arm under lane mask `mask`: skipped when no lane takes the arm (`mask.any()`), unless
    the arm is one select of an operand's bits (cheaper than the test) or holds a statement whose effect is not confined to its
    lanes (a loop, whose variable outlives it; a uniform branch; ROUND_MODE)."""
    top, start = self.top_inserts, len(self.lines)
    self.ind += 1
    self.block(body)
    self.ind -= 1
    start += self.top_inserts - top   # (zero starts inserted at the top moved the arm down)
    arm = self.lines[start:]
    if arm and guard_arm(arm, "  " * (self.ind + 1)): self.lines.insert(start, "  " * self.ind + f"if {mask}.any():")
    else: self.lines[start:] = [ln[2:] for ln in arm]

  def plain_if(self, c:Val, arms:list, orelse:list, kw:str="if"):
    """if/elif/else as Python control flow (uniform condition). An elsif whose condition needs statements of its own (a lambda
    call) becomes `else:` + a nested `if`."""
    self.emit(f"{kw} {c.code}:")
    self.suite(arms[0][1])
    if len(arms) > 1:
      saved, self.lines = self.lines, []
      self.ind += 1
      c2 = self.conv(self.expr(arms[1][0]), ("bool", 1))
      self.ind -= 1
      prelude, self.lines = self.lines, saved
      if c2.vary and self.mode == "np": raise CodegenError("per-lane elsif after a uniform if")
      if not prelude: return self.plain_if(c2, arms[1:], orelse, "elif")
      self.emit("else:")
      self.lines += prelude
      self.ind += 1; self.plain_if(c2, arms[1:], orelse); self.ind -= 1
    elif orelse:
      self.emit("else:")
      self.suite(orelse)

  def suite(self, body:list):
    """An indented block that is never empty."""
    self.ind += 1; self.depth += 1; n0 = len(self.lines); self.block(body)
    if len(self.lines) == n0: self.emit("pass")
    self.ind -= 1; self.depth -= 1

  def s_For(self, s:For):
    a, b = self.conv(self.expr(s.start), ("i", 64)), self.conv(self.expr(s.end), ("i", 64))
    if a.vary or b.vary: raise CodegenError("per-lane loop bounds")
    self.settype(s.var, ("i", 32))
    self.defined.add(s.var)
    alive = None
    if self.mode == "np" and self.has_break(s.body):
      alive = self.tmp("_alive")
      self.emit(f"{alive} = {self.mask} & True" if self.mask else f"{alive} = np.ones(n, bool)")
    self.emit(f"for {s.var} in range({a.code}, {b.code} + 1):")
    self.ind += 1
    saved = self.mask
    self.loop_alive.append(alive)
    if alive: self.mask = alive
    n0 = len(self.lines)
    self.depth += 1; self.block(s.body); self.depth -= 1
    if len(self.lines) == n0: self.emit("pass")
    if alive: self.emit(f"if not {alive}.any(): break")
    self.loop_alive.pop()
    self.mask = saved
    self.ind -= 1

  def has_break(self, body) -> bool:
    for st in body:
      if isinstance(st, Break): return True
      if isinstance(st, If) and any(self.has_break(b) for _, b in st.arms) or isinstance(st, If) and self.has_break(st.orelse): return True
    return False

  def s_While(self, s:While):
    c = self.conv(self.expr(s.cond), ("bool", 1))
    if c.vary and self.mode == "np": raise CodegenError("per-lane while")
    self.emit(f"while {c.code}:")
    self.ind += 1; self.depth += 1; self.block(s.body); self.ind -= 1; self.depth -= 1

  def s_Assign(self, s:Assign):
    if isinstance(s.value, Lambda):
      self.lambdas[s.target.id] = s.value
      return
    value = s.value
    if s.op != "=": value = Binary(s.op[:-1], s.target, s.value)
    if s.target == Name("ROUND_MODE"):  # `ROUND_MODE = ROUND_TOWARD_ZERO ... ROUND_MODE = prev_mode`: a mode local to the op
      self.reads.add("ROUND_MODE")
      self.emit(f"ROUND_MODE = {self.conv(self.expr(value), ('u', 32)).code}")
      return
    self.assign(s.target, value)

  def assign_var(self, name:str, v:Val):
    t = self.vt.get(name, v.typ)
    if len(t) == 3: raise CodegenError(f"assignment to array {name}")
    new = self.conv(v, t, numeric=isinstance(v.code, str) and v.code.lstrip("(-").replace(".", "").replace(")", "").isdigit())
    if self.mask and self.mode == "np" and name not in self.defined:  # first assigned under a lane mask: the other lanes start at 0
      self.lines.insert(0, f"  {name} = {self.zero(t, True)}")        # (at the top, so a loop does not reset it)
      self.top_inserts += 1
      self.reads.add("n")
    self.defined.add(name)
    if self.mask and self.mode == "np":
      self.vary.add(name)
      self.emit(f"{name} = where({self.mask}, {self.lane(new)}, {name})")
    elif self.mode == "np" and name in self.vary and not new.vary:
      self.emit(f"{name} = {self.zero(t, True)} + {self.lane(new)}" if isint(t) else f"{name} = np.full(n, {new.code}, {_DT.get(t, 'bool')})")
    else: self.emit(f"{name} = {new.code}")

  def assign(self, target, value):
    """Emit `target = value` for any assignable pcode target (locals, typed views of locals, MEM, register files, lane-mask bits,
    local arrays, `{ hi, lo }` concatenations, operands)."""
    if isinstance(target, View) and target.expr == Name("TRAPSTS"): return  # exception status bits (TRAPSTS.INVALID): not modelled
    if isinstance(target, Name) and self._is_local(target.id): return self._assign_local(target.id, value)
    if isinstance(target, View) and isinstance(target.expr, Name) and target.typ and self._is_local(target.expr.id):
      return self._assign_local_view(target, value)
    if isinstance(target, Index) and target.expr == Name("MEM"): target = View(target, "b32", ("b", 32))  # untyped MEM[a]: a dword
    if isinstance(target, View) and isinstance(target.expr, Index) and isinstance(target.expr.expr, Name) and target.expr.expr.id == "MEM":
      return self._assign_mem(target, value)
    w = 32
    if isinstance(target, View) and isinstance(target.expr, Index) and \
       (target.expr.expr in [Name(f) for f in SCALAR_FILES] or isinstance(target.expr.expr, Index) and target.expr.expr.expr == Name("VGPR")):
      w = 64 if target.typ and target.typ[1] == 64 and not is_vgpr(target.expr) else 32
      target = target.expr  # SGPR[i].b32 / VGPR[lane][reg].b32: a whole register (SGPR[i].b64: the pair i, i + 1)
    if is_vgpr(target): return self.vgpr_store(target, self.conv(self.expr(value), ("u", 32), numeric=False))
    if isinstance(target, Index) and isinstance(target.expr, Name) and target.expr.id in SCALAR_FILES:
      return self._assign_scalar_file(target, value, w)
    if isinstance(target, Index) and (lm := self.lanemask_name(target)):   # lane-mask bit: VCC.u64[laneId] = value
      v = self.bits(self.conv(self.expr(value), ("bool", 1)))
      self.writes.add(lm)
      return self.store_opnd(lm, Val(v.code, ("u", 1), v.vary))  # a constant bit (V_CMP_T/F) is broadcast to the n lanes
    if isinstance(target, Index) and isinstance(target.expr, Name) and len(self.vt.get(target.expr.id, ()) or ()) == 3:
      return self._assign_array(target, value)
    if isinstance(target, Concat): return self._assign_concat(target, value)
    self.assign_raw(target, self.expr(value))

  def _is_local(self, name:str) -> bool:
    """A pcode variable of the op's own (not an operand, a uniform register or a lane mask)."""
    return ALIASES.get(name, name) not in self.info["operands"] and name not in UNIFORM_REGS | MASK_REGS

  def _assign_local(self, name:str, value):
    v = self.expr(value)
    if not self.final:
      self.settype(name, v.typ if v.typ[0] != "bool" else ("u", 1))
      if v.vary or self.mask: self.vary.add(name)
    self.assign_var(name, v)

  def _assign_local_view(self, target:View, value):
    """tmp.type = value: the variable takes the view's type (or keeps its own, reinterpreting the bits)."""
    v, name = self.expr(value), target.expr.id
    if not self.final:
      self.settype(name, target.typ)
      if v.vary or self.mask: self.vary.add(name)
    tv = self.conv(v, target.typ, numeric=False)
    if self.vt.get(name) != target.typ: tv = self.from_bits(self.bits(tv), self.vt[name])
    self.assign_var(name, tv)

  def _assign_mem(self, target:View, value):
    """MEM[addr].type = value."""
    a = self.conv(self.expr(target.expr.index), ("u", 64))
    v = self.bits(self.conv(self.expr(value), target.typ, numeric=False))
    self.reads.add("MEM"); self.info["mem"].add("w")
    nb = target.typ[1] // 8
    if self.mode == "np":
      self.reads.add("n")
      self.emit(f"mwrite(MEM, {self.lane(a)}, {self.lane(v)}, {nb}, n{', ' + self.mask if self.mask else ''})")
    else: self.emit(f"MEM.write({a.code}, {v.code}, {nb})")

  def _assign_scalar_file(self, target:Index, value, w:int):
    """SGPR[i] / HW_REGISTERS[i] = value (a 64-bit store writes the pair i, i + 1)."""
    f, i = target.expr.id, self.bind(self.conv(self.expr(target.index), ("u", 32)))
    v = self.bind(self.conv(self.expr(value), ("u", w), numeric=False))
    self.writes.add(f); self.reads.add(f)
    for k in range(w // 32): self.emit(f"{f}[{i.code}{f' + {k}' if k else ''}] = {f'({v.code} >> 32)' if k else v.code}")

  def _assign_array(self, target:Index, value):
    """tmp[i] = value for a local array (the index must be uniform)."""
    _, et, _ = self.vt[target.expr.id]
    i = self.conv(self.expr(target.index), ("u", 32))
    if self.np(i.vary): raise CodegenError("per-lane array index")
    v = self.conv(self.expr(value), et, numeric=False)
    if v.vary or self.mask: self.vary.add(target.expr.id)
    if self.mask: self.emit(f"{target.expr.id}[{i.code}] = where({self.mask}, {self.lane(v)}, {target.expr.id}[{i.code}])")
    else: self.emit(f"{target.expr.id}[{i.code}] = {v.code}")

  def _assign_concat(self, target:Concat, value):
    """{ hi, lo } = value: each part takes its bits, lowest part from bit 0."""
    v = self.bind(self.bits(self.expr(value)))
    sh = 0
    for part in reversed(target.items):
      w = part.typ[1] if isinstance(part, View) and part.typ else 32
      piece = Val(f"(({v.code} >> {sh}) & {hex(mask(w))})", ("u", w), v.vary) if not (self.mode == "np" and v.typ[1] > 64) else \
        Val(f"u64(({v.code} >> {sh}) & {hex(mask(w))})", ("u", w), True)
      if self.np(v.vary) and v.typ[1] <= 64: piece = Val(f"(({v.code} >> np.uint64({sh})) & {hex(mask(w))})", ("u", w), True)
      self.assign_raw(part, piece)
      sh += w

  def vgpr_store(self, target:Index, v:Val):
    """VGPR[lane][reg] = v (32 bits)."""
    lane, reg = self.conv(self.expr(target.expr.index), ("u", 32)), self.conv(self.expr(target.index), ("u", 32))
    self.writes.add("VGPR"); self.reads.add("VGPR")
    if self.mode == "np": self.emit(f"vgpr_write(VGPR, {lane.code}, {self.lane(reg)}, {self.lane(v)}{', ' + self.mask if self.mask else ''})")
    else: self.emit(f"VGPR[{lane.code}, {reg.code}] = {v.code}")

  def assign_raw(self, target, v:Val):
    """Assignment to an operand/register, a typed view of one, a slice or a bit of one (or of a variable)."""
    if isinstance(target, Name):
      n = ALIASES.get(target.id, target.id)
      if n in self.info["lanemask"] and self.mode == "np": raise CodegenError(f"whole-register write of lane mask {n} in a vector op")
      w = 1 if n == "SCC" else self.opnd_width(n) if n in self.info["operands"] else 64 if n in MASK_REGS | {"PC"} else 32
      self.writes.add(n)
      self.store_opnd(n, self.conv(self.bits(v) if v.typ[0] != "bool" else v, ("u", w), numeric=False))
      return
    if isinstance(target, View) and isinstance(target.expr, (Slice, Index)) and target.typ:  # X[31 : 16].f16 = value
      self.assign_raw(target.expr, self.bits(self.conv(v, target.typ, numeric=False)))
      return
    if isinstance(target, View) and isinstance(target.expr, Name) and target.typ:
      n = ALIASES.get(target.expr.id, target.expr.id)
      if n in self.info["lanemask"] and target.typ[1] == 1 and self.mode == "np":
        self.writes.add(n)
        self.store_opnd(n, self.bits(self.conv(v, ("bool", 1))))
        return
      b = self.bits(self.conv(v, target.typ, numeric=False))
      self.write_bits(n, 0, target.typ[1], b)
      return
    if isinstance(target, Slice):
      base = target.expr.expr if isinstance(target.expr, View) else target.expr
      lo_c, w, lo = self.slice_bounds(target)
      if is_vgpr(base):  # VGPR[laneId][VDST.u32][15 : 0].b16 = value: merge into the register
        lov = lo_c if lo_c is not None else self.conv(self.expr(lo), ("u", 32))
        new = self.merge(self.bits(self.expr(base)), lov, w, self.conv(self.bits(v) if v.typ[0] != "bool" else v, ("u", w), numeric=False), 32)
        self.vgpr_store(base, self.conv(new, ("u", 32), numeric=False))
        return
      if not isinstance(base, Name): raise CodegenError("slice assignment to an expression")
      lov = lo_c if lo_c is not None else self.conv(self.expr(lo), ("u", 32))
      self.write_bits(ALIASES.get(base.id, base.id), lov, w, self.conv(self.bits(v) if v.typ[0] != "bool" else self.bits(v), ("u", w),
                                                                        numeric=False))
      return
    if isinstance(target, Index):
      base = target.expr.expr if isinstance(target.expr, View) else target.expr
      if not isinstance(base, Name): raise CodegenError("bit assignment to an expression")
      i = self.conv(self.expr(target.index), ("u", 32))
      n = ALIASES.get(base.id, base.id)
      if n in self.vt or n not in self.info["operands"] | UNIFORM_REGS | MASK_REGS:
        if n not in self.vt: self.settype(n, ("u", 64))
        if n not in self.defined:
          self.defined.add(n)
          self.emit(f"{n} = {self.zero(self.vt[n], n in self.vary)}")
        cur = Val(n, self.vt[n], n in self.vary)
      else:
        self.use(n); self.writes.add(n)
        cur = self.e_Name(base)
      b = self.bits(self.conv(v, ("bool", 1)))
      new = Val(f"bitset({self.lane(cur)}, {self.lane(i)}, {self.lane(b)})", cur.typ, cur.vary or i.vary or b.vary)
      if n in self.vt: self.assign_var(n, new)
      else: self.store_opnd(n, new)
      return
    raise CodegenError(f"assignment target {type(target).__name__}")

  def write_bits(self, n:str, lo, w:int, b:Val):
    """Replace bits [lo, lo+w) of operand or variable n with b (unsigned, w bits)."""
    is_var = n in self.vt or (n not in self.info["operands"] and n not in UNIFORM_REGS | MASK_REGS)
    if is_var:
      if n not in self.vt or (not self.final and isint(self.vt[n]) and self.vt[n][1] < (lo if isinstance(lo, int) else 0) + w):
        self.settype(n, ("u", max(32, (lo if isinstance(lo, int) else 64) + w)))
      if b.vary or self.mask: self.vary.add(n)
      t = self.vt[n]
      if n not in self.defined:  # a partial write to a fresh variable (`tmp[31 : 16].f16 = ...`) starts from zero
        self.defined.add(n)
        self.emit(f"{n} = {self.zero(t, n in self.vary)}")
      cur = self.bits(Val(n, t, n in self.vary))
      new = self.merge(cur, lo, w, b, t[1])
      self.assign_var(n, self.from_bits(new, t) if isfloat(t) else Val(new.code, t, new.vary))
      return
    width = 1 if n == "SCC" else self.opnd_width(n) if n in self.info["operands"] else 64 if n in MASK_REGS | {"PC"} else 32
    self.writes.add(n)
    if self.is_wide(n) and isinstance(lo, int) and lo % 32 == 0 and w in (32, 64):
      k = lo // 32
      cols = [(k, f"{b.code}")] if w == 32 else [(k, f"{b.code}"), (k + 1, f"({b.code} >> np.uint64(32))")]
      for col, code in cols:
        if b.vary and not self.mask and b.typ[1] <= 64:   # a uint64 lane array: the uint32 column's assignment keeps its low bits
          self.emit(f"{n}[:, {col}] = {code}")
          continue
        val = f"np.asarray({self.lane(Val(code, b.typ, b.vary))}, dtype=np.uint64).astype(np.uint32)"
        if self.mask: val = f"where({self.mask}, {val}, {n}[:, {col}])"
        self.emit(f"{n}[:, {col}] = {val}")
      return
    if self.is_wide(n) and lo == 0 and w == width:
      if not self.mask and not self.depth: self.full.add(n)
      self.emit(f"{n} = {f'np.where({self.mask}[:, None], words({b.code}, {w // 32}), {n})' if self.mask else f'words({b.code}, {w // 32})'}")
      return
    if self.is_wide(n): raise CodegenError(f"unaligned write to wide operand {n}")
    if lo == 0 and w >= min(width, 32) and w >= width:
      self.store_opnd(n, b)
      return
    if lo == 0 and w >= 32:
      self.store_opnd(n, b)
      return
    self.use(n)
    cur = Val(n, ("u", width), self.mode == "np" and n in self.info["operands"])
    self.store_opnd(n, self.merge(cur, lo, w, b, width))

  def merge(self, cur:Val, lo, w:int, b:Val, width:int) -> Val:
    vary = cur.vary or b.vary or (not isinstance(lo, int) and lo.vary)
    if isinstance(lo, int):
      keep = mask(max(width, lo + w)) & ~(mask(w) << lo)
      if self.np(vary) and max(width, lo + w) <= 64:
        return Val(f"(({self.lane(cur)} & {hex(keep)}) | ({self.lane(b)} << np.uint64({lo})))", ("u", max(width, lo + w)), True)
      return Val(f"(({cur.code} & {hex(keep)}) | ({b.code} << {lo}))", ("u", max(width, lo + w)), vary)
    if self.np(vary) and width > 64:  # a wide value (object ints) at a dynamic position
      return Val(f"((wide({cur.code}) & ~({hex(mask(w))} << wide({lo.code}))) | (wide({b.code}) << wide({lo.code})))", ("u", width), True, True)
    if self.np(vary):
      keep = f"~shl(np.uint64({hex(mask(w))}), {self.lane(lo)})"  # np.uint64: `~` of a Python int is negative
      return Val(f"((({self.lane(cur)}) & {keep}) | shl({self.lane(b)}, {self.lane(lo)}))", ("u", width), True, True)
    return Val(f"(({cur.code} & ~({hex(mask(w))} << {lo.code})) | ({b.code} << {lo.code}))", ("u", width), vary, True)

  def store_opnd(self, n:str, v:Val):
    self.writes.add(n)
    code = self.lane(v) if self.mode == "np" else v.code
    if self.mode == "np" and n in self.info["operands"] | self.info["lanemask"]:
      if not v.vary: code = f"np.full(n, {code}, np.uint64)"; self.reads.add("n")
      if self.mask:
        self.use(n)
        code = f"where({self.mask}, {code}, {n})"
    if self.depth and not self.mask: self.use(n)   # a write under a condition may not happen: the old value is the default
    self.emit(f"{n} = {code}")
    if not self.mask and not self.depth: self.full.add(n)
