"""PTX front end: text -> a validated `Module` of `Kernel`s (PTX ISA 8.x syntax, the subset tinygrad's PTX renderer emits).

Statements are parsed into `Inst(op, mods, operands, guard)`: `fma.rn.f32 %f1, %f2, 0f40000000, %f3;` is op 'fma', mods
('rn', 'f32'). Operands: `Reg` (a declared register or a special register such as %tid.x), `Imm` (decimal with an optional U,
0f/0d hexadecimal f32/f64 bits, 0x hexadecimal), `Addr` ([base+offset], base a register, a parameter or a .shared symbol),
`Vec` ({a, b, ...}) and `Label`. Every error is a `PTXError` naming the line and the token. Opcode-level checks (known opcode,
accepted types and modifiers) are emu.nv.isa's; `parse` runs them, so a Module that parses is one the executor can run.
"""
from __future__ import annotations
import re, struct
from dataclasses import dataclass, field

class PTXError(ValueError):
  """A PTX program the front end rejects: `line` (1-based) and `token` say where."""
  def __init__(self, line:int, token:str, message:str):
    self.line, self.token, self.message = line, token, message
    super().__init__(f"PTX line {line} at {token!r}: {message}")

@dataclass(frozen=True)
class Reg:
  name: str
@dataclass(frozen=True)
class Imm:
  value: int | float
  bits: int = 0      # 32/64: written as 0f/0d float bits (value is the float); 0: an integer (0x or decimal)
@dataclass(frozen=True)
class Addr:
  base: str          # a register, a .param name or a .shared symbol
  offset: int = 0
@dataclass(frozen=True)
class Vec:
  items: tuple
@dataclass(frozen=True)
class Label:
  name: str

@dataclass
class Inst:
  op: str
  mods: tuple[str, ...]
  operands: tuple
  guard: tuple[str, bool] | None   # (predicate register, negated)
  line: int
  def __str__(self):
    g = f"@{'!' if self.guard[1] else ''}{self.guard[0]} " if self.guard else ""
    return f"{g}{'.'.join((self.op,) + self.mods)} (line {self.line})"

@dataclass
class Kernel:
  name: str
  params: list[tuple[str, str]]                      # (name, type) in order
  regs: dict[str, str] = field(default_factory=dict)  # register -> type ('f32', 'pred', ...)
  shared: dict[str, tuple[int, int]] = field(default_factory=dict)  # symbol -> (offset, bytes) in the CTA's shared memory
  shared_bytes: int = 0
  local: dict[str, tuple[int, int]] = field(default_factory=dict)   # symbol -> (offset, bytes) in each thread's local memory
  local_bytes: int = 0
  globals: dict[str, bytearray] = field(default_factory=dict)       # the module's .global variables (shared by its kernels)
  returns: list[str] = field(default_factory=list)                  # a .func's return parameters (kernels have none)
  body: list[Inst] = field(default_factory=list)
  labels: dict[str, int] = field(default_factory=dict)  # label -> index of the next instruction
  maxntid: tuple[int, ...] = ()

@dataclass
class Module:
  version: str
  target: str
  address_size: int
  kernels: dict[str, Kernel]
  globals: dict[str, bytearray] = field(default_factory=dict)   # module-scope .global variables: name -> initial bytes
  functions: dict[str, Kernel] = field(default_factory=dict)    # .func definitions (inlined into their callers by `parse`)

SPECIAL = {f"%{r}.{c}" for r in ("tid", "ntid", "ctaid", "nctaid") for c in "xyz"} | {"%laneid", "%warpid", "%nwarpid"}
_TOKEN = re.compile(r"\s+|//[^\n]*|/\*.*?\*/|(?P<tok>\"[^\"\n]*\"|0[fF][0-9a-fA-F]{8}|0[dD][0-9a-fA-F]{16}|0[xX][0-9a-fA-F]+U?|\d+\.\d+|\d+U?|"
                    r"[%$A-Za-z_][\w$]*(?:<\d+>)?|\.[A-Za-z_][\w$]*|[(){}\[\],;:@!+\-<>=|])", re.S)

def tokenize(text:str) -> list[tuple[str, int]]:
  """(token, line) pairs; comments and whitespace dropped."""
  out, pos, line = [], 0, 1
  while pos < len(text):
    if (m := _TOKEN.match(text, pos)) is None: raise PTXError(line, text[pos:pos + 10], "cannot read a token here")
    if m.group("tok") is not None: out.append((m.group("tok"), line))
    line += text.count("\n", pos, m.end())
    pos = m.end()
  return out

class _Parser:
  def __init__(self, text:str):
    self.toks, self.i = tokenize(text.replace("\0", "")), 0
    self.scopes: list[dict[str, str]] = []   # inner { } blocks: declared name -> its unique register or symbol name
    self.nscopes = 0
    self.symbols: set[str] = set()           # renamed names that are symbols (a block's .param storage), not registers
  def peek(self, k:int=0) -> str: return self.toks[self.i + k][0] if self.i + k < len(self.toks) else ""
  @property
  def line(self) -> int: return self.toks[min(self.i, len(self.toks) - 1)][1] if self.toks else 1
  def take(self, want:str|None=None) -> str:
    if self.i >= len(self.toks): raise PTXError(self.line, "<end>", f"expected {want or 'a token'}")
    tok = self.toks[self.i][0]
    if want is not None and tok != want: raise PTXError(self.line, tok, f"expected {want!r}")
    self.i += 1
    return tok
  def fail(self, message:str): raise PTXError(self.line, self.peek() or "<end>", message)

  def module(self) -> Module:
    head: dict[str, str] = {}
    kernels: dict[str, Kernel] = {}
    globals_: dict[str, bytearray] = {}
    functions: dict[str, Kernel] = {}
    while self.i < len(self.toks):
      tok = self.take()
      if tok in (".version", ".target", ".address_size"): head[tok] = self.take()
      elif tok in (".visible", ".weak", ".extern"): continue
      elif tok == ".global": self.global_decl(globals_)
      elif tok == ".func":
        if (f := self.function()) is not None: functions[f.name] = f
      elif tok == ".entry":
        k = self.kernel()
        k.globals = globals_
        kernels[k.name] = k
      else: raise PTXError(self.toks[self.i - 1][1], tok, "expected .version, .target, .address_size, .global or .entry")
    for d in (".version", ".target", ".address_size"):
      if d not in head: raise PTXError(1, d, f"the module has no {d} directive")
    for f in functions.values(): f.globals = globals_
    return Module(head[".version"], head[".target"], int(head[".address_size"]), kernels, globals_, functions)

  def param_list(self) -> list[tuple[str, str]]:
    """`( .param [.align N] .type name[[N]], ... )` -> (name, type) pairs."""
    self.take("(")
    out = []
    while self.peek() != ")":
      self.take(".param")
      name, _, _, typ = self.array_decl()
      out.append((name, typ))
      if self.peek() == ",": self.take()
    self.take(")")
    return out

  def function(self) -> Kernel | None:
    """A `.func [(returns)] name(params)` prototype (None) or definition (its body, like a kernel's)."""
    returns = [n for n, _ in self.param_list()] if self.peek() == "(" else []
    f = Kernel(self.take(), self.param_list() if self.peek() == "(" else [])
    f.returns = returns
    if self.peek() == ";":
      self.take(";")
      return None
    self.take("{")
    while self.peek() != "}": self.statement(f)
    self.take("}")
    return f

  def array_decl(self) -> tuple[str, int, int, str]:
    """`[.align N] .type name[count]` (count 1 without brackets): (name, bytes, alignment, type)."""
    align = 1
    if self.peek() == ".align": self.take(); align = int(self.take())
    typ = self.take().lstrip(".")
    name, count = self.take(), 1
    if self.peek() == "[":
      self.take("[")
      count = int(self.take().rstrip("U"), 0)
      self.take("]")
    return name, count * max(1, int(re.sub(r"\D", "", typ) or 8) // 8), align, typ

  def global_decl(self, out:dict[str, bytearray]):
    """A module-scope `.global` variable, optionally initialised with `= {v, ...}` or `= v` (integers of its element type)."""
    name, size, _, typ = self.array_decl()
    data = bytearray(size)
    if self.peek() == "=":
      self.take("=")
      vals = []
      if self.peek() == "{":
        self.take("{")
        while self.peek() != "}":
          vals.append(self.immediate(self.take()).value)
          if self.peek() == ",": self.take(",")
        self.take("}")
      else: vals.append(self.immediate(self.take()).value)
      w = max(1, int(re.sub(r"\D", "", typ) or 8) // 8)
      if len(vals) * w > size: self.fail(f"{name} has {len(vals)} initialisers for {size} bytes")
      for i, v in enumerate(vals): data[i * w:(i + 1) * w] = (int(v) & ((1 << (8 * w)) - 1)).to_bytes(w, "little")
    self.take(";")
    out[name] = data

  def kernel(self) -> Kernel:
    k = Kernel(self.take(), [])
    self.take("(")
    while self.peek() != ")":
      self.take(".param")
      typ = self.take().lstrip(".")
      k.params.append((self.take(), typ))
      if self.peek() == ",": self.take()
    self.take(")")
    while self.peek().startswith(".") and self.peek() != "{":
      d = self.take()
      if d in (".maxntid", ".reqntid"):
        dims = [int(self.take())]
        while self.peek() == ",": self.take(); dims.append(int(self.take()))
        k.maxntid = tuple(dims)
      elif d in (".minnctapersm", ".maxnreg"): self.take()
      else: self.fail(f"unknown kernel directive {d}")
    self.take("{")
    while self.peek() != "}": self.statement(k)
    self.take("}")
    return k

  def statement(self, k:Kernel):
    tok = self.peek()
    if tok == ".reg": return self.reg_decl(k)
    if tok in (".shared", ".local", ".param"): return self.space_decl(k)
    if tok == ".pragma":   # hints for ptxas (e.g. "nounroll"): nothing to execute
      self.take(); self.take(); self.take(";")
      return
    if tok == "{":   # an inner block (inline asm): its .reg names are its own
      self.take("{")
      self.scopes.append({})
      self.nscopes += 1
      while self.peek() != "}": self.statement(k)
      self.take("}")
      self.scopes.pop()
      return
    if self.peek(1) == ":" and not tok.startswith("%"):   # a label
      k.labels[self.take()] = len(k.body)
      self.take(":")
      return
    k.body.append(self.instruction())

  def reg_decl(self, k:Kernel):
    self.take(".reg")
    typ = self.take().lstrip(".")
    while True:
      name = self.take()
      names = [f"{m[1]}{i}" for i in range(int(m[2]))] if (m := re.fullmatch(r"(.+)<(\d+)>", name)) else [name]
      for n in names:
        if self.scopes: self.scopes[-1][n] = n = f"{n}${self.nscopes}"
        k.regs[n] = typ
      if self.peek() != ",": break
      self.take(",")
    self.take(";")

  def resolve(self, name:str) -> str:
    """The register a name means here: the innermost block's own declaration, else the kernel's."""
    return next((s[name] for s in reversed(self.scopes) if name in s), name)

  def space_decl(self, k:Kernel):
    """`.shared` (per CTA) or `.local` (per thread) storage: a symbol at the next aligned offset of that space. A `.param`
    declared in the body (a call's arguments and results) is per-thread storage too, kept with the .local symbols."""
    space = self.take()
    name, size, align, _ = self.array_decl()
    self.take(";")
    if self.scopes:
      self.scopes[-1][name] = name = f"{name}${self.nscopes}"
      self.symbols.add(name)
    table, used = (k.shared, k.shared_bytes) if space == ".shared" else (k.local, k.local_bytes)
    off = -(-used // align) * align
    table[name] = (off, size)
    if space == ".shared": k.shared_bytes = off + size
    else: k.local_bytes = off + size

  def instruction(self) -> Inst:
    line, guard = self.line, None
    if self.peek() == "@":
      self.take()
      neg = self.peek() == "!"
      if neg: self.take()
      guard = (self.resolve(self.take()), neg)
    name = self.take()
    if not re.fullmatch(r"[a-z][a-z0-9_]*", name): raise PTXError(line, name, "expected an instruction")
    mods = []
    while self.peek().startswith(".") and len(self.peek()) > 1: mods.append(self.take()[1:])
    operands = []
    while self.peek() != ";":
      operands.append(self.operand())
      if self.peek() == ",": self.take()
      elif self.peek() != ";": self.fail("expected ',' or ';'")
    self.take(";")
    return Inst(name, tuple(mods), tuple(operands), guard, line)

  def operand(self):
    tok = self.peek()
    if tok == "[":
      self.take()
      base, off = self.resolve(self.take()), 0
      if self.peek() in ("+", "-"):
        sign = -1 if self.take() == "-" else 1
        if self.peek() == "-": self.take(); sign = -sign   # [%rd+-16]
        off = sign * int(self.take().rstrip("U"), 0)
      self.take("]")
      return Addr(base, off)
    if tok in ("{", "("):   # a vector, or a call's argument/return list
      self.take()
      items = [] if self.peek() in ("}", ")") else [self.operand()]
      while self.peek() == ",": self.take(); items.append(self.operand())
      self.take("}" if tok == "{" else ")")
      return Vec(tuple(items))
    if tok == "-" and re.fullmatch(r"\d+U?|0[xX][0-9a-fA-F]+U?", self.peek(1)):
      self.take()
      return Imm(-self.immediate(self.take()).value)
    if re.fullmatch(r"0[fFdDxX][0-9a-fA-F]+U?|\d+U?", tok): return self.immediate(self.take())
    self.take()
    if tok.startswith("%") and self.peek() in (".x", ".y", ".z"): return Reg(tok + self.take())   # %tid.x
    if (name := self.resolve(tok)) != tok: return Label(name) if name in self.symbols else Reg(name)   # an inner block's own name
    if not tok.startswith("%") and self.peek() == "[":   # symbol[offset]: the symbol's address plus offset (mov.u64 %r, smem[0])
      self.take("[")
      off = int(self.take().rstrip("U"), 0)
      self.take("]")
      return Addr(tok, off)
    return Reg(tok) if tok.startswith("%") else Label(tok)

  @staticmethod
  def immediate(tok:str) -> Imm:
    t = tok.rstrip("U")
    if t[:2] in ("0f", "0F"): return Imm(struct.unpack("<f", struct.pack("<I", int(t[2:], 16)))[0], 32)
    if t[:2] in ("0d", "0D"): return Imm(struct.unpack("<d", struct.pack("<Q", int(t[2:], 16)))[0], 64)
    return Imm(int(t, 0))

def parse_syntax(text:str) -> Module:
  """Parse PTX text (see the module docstring), `.func` calls inlined into the kernels; emu.nv.isa.parse also validates them."""
  module = _Parser(text).module()
  for k in module.kernels.values(): inline_calls(k, module.functions)
  return module

MAX_CALL_DEPTH = 16

def _rename(o, m:dict[str, str]):
  if isinstance(o, Reg): return Reg(m.get(o.name, o.name))
  if isinstance(o, Label): return Label(m.get(o.name, o.name))
  if isinstance(o, Addr): return Addr(m.get(o.base, o.base), o.offset)
  if isinstance(o, Vec): return Vec(tuple(_rename(x, m) for x in o.items))
  return o

def inline_calls(k:Kernel, functions:dict[str, Kernel], depth:int=0):
  """Replace every `call` in k by the called .func's body: its registers, labels and .local storage renamed per call site, its
  parameters and returns bound to the caller's .param storage, each `ret` a branch past the inlined body. Lockstep execution
  then needs no call stack; recursion (which tinygrad's kernels never use) is refused."""
  if not any(i.op == "call" for i in k.body): return
  if depth > MAX_CALL_DEPTH: raise PTXError(k.body[0].line if k.body else 0, k.name, "calls nest too deep (recursion is not modelled)")
  at: dict[int, list[str]] = {}
  for name, i in k.labels.items(): at.setdefault(i, []).append(name)
  body, labels = [], {}
  for idx, inst in enumerate(k.body):
    for name in at.get(idx, []): labels[name] = len(body)
    if inst.op != "call":
      body.append(inst)
      continue
    if inst.guard is not None: raise PTXError(inst.line, "call", "a predicated call is not modelled")
    ops = list(inst.operands)
    rets = ops.pop(0).items if ops and isinstance(ops[0], Vec) else ()
    if not ops or not isinstance(ops[0], Label) or (f := functions.get(ops[0].name)) is None:
      raise PTXError(inst.line, "call", f"call of a function that is not defined: {ops[0] if ops else '?'}")
    args = ops[1].items if len(ops) > 1 else ()
    if len(args) != len(f.params) or len(rets) != len(f.returns):
      raise PTXError(inst.line, "call", f"{f.name} takes {len(f.params)} arguments and {len(f.returns)} returns")
    inline_calls(f, functions, depth + 1)
    site = f"$call{len(body)}_{idx}"
    m = {r: r + site for r in f.regs} | {name: name + site for name in f.labels}
    for name, (off, size) in f.local.items():
      m[name] = name + site
      k.local_bytes = -(-k.local_bytes // 16) * 16
      k.local[name + site] = (k.local_bytes, size)
      k.local_bytes += size
    m |= {p: a.name for (p, _), a in zip(f.params, args)} | {r: a.name for r, a in zip(f.returns, rets)}
    k.regs.update({r + site: t for r, t in f.regs.items()})
    f_at: dict[int, list[str]] = {}
    for name, i in f.labels.items(): f_at.setdefault(i, []).append(name)
    end = f"$return{site}"
    for j, finst in enumerate(f.body):
      for name in f_at.get(j, []): labels[m[name]] = len(body)
      guard = (m.get(finst.guard[0], finst.guard[0]), finst.guard[1]) if finst.guard else None
      if finst.op == "ret": body.append(Inst("bra", (), (Label(end),), guard, finst.line))
      else: body.append(Inst(finst.op, finst.mods, tuple(_rename(o, m) for o in finst.operands), guard, finst.line))
    for name in f_at.get(len(f.body), []): labels[m[name]] = len(body)
    labels[end] = len(body)
  for name in at.get(len(k.body), []): labels[name] = len(body)
  k.body, k.labels = body, labels
