"""The typed AST of AMD pseudocode. Types are (kind, width) pairs: kind 'u' | 'i' | 'b' | 'f' (bf16 is ('bf', 16)), plus
('bool', 1) for conditions. Expressions are frozen dataclasses; statements hold lists of statements."""
from __future__ import annotations
from dataclasses import dataclass, field

Type = tuple[str, int]

@dataclass(frozen=True)
class Num:
  """A literal; `typ` None means an untyped C integer (int) literal. `signed`: a float literal written with an explicit sign (+0.0, -0.0)."""
  value: int | float
  typ: Type | None = None
  signed: bool = False

@dataclass(frozen=True)
class Name:
  """A variable, operand (S0, D0, VDATA ...), register (EXEC, VCC, SCC, M0, PC) or named constant (INF, PI ...)."""
  id: str

@dataclass(frozen=True)
class View:
  """`e.u32`: the bits of e reinterpreted as a type; `typ` None for a plain field such as WAVE_MODE.IEEE (`name`)."""
  expr: object
  name: str
  typ: Type | None

@dataclass(frozen=True)
class Index:
  """`e[i]`: one bit of an integer, one element of a declared array, or a register file row (VGPR[lane][reg])."""
  expr: object
  index: object

@dataclass(frozen=True)
class Slice:
  """`e[hi : lo]` (constant bounds) or `e[lo +: width]`; the result is `hi - lo + 1` bits wide."""
  expr: object
  hi: object
  lo: object

@dataclass(frozen=True)
class Cast:
  """`32'U(e)` etc: numeric conversion to (kind, width)."""
  typ: Type
  expr: object

@dataclass(frozen=True)
class Call:
  """A helper function or lambda call."""
  name: str
  args: tuple

@dataclass(frozen=True)
class Unary:
  op: str
  expr: object

@dataclass(frozen=True)
class Binary:
  op: str
  a: object
  b: object

@dataclass(frozen=True)
class Ternary:
  cond: object
  a: object
  b: object

@dataclass(frozen=True)
class Concat:
  """`{ hi, ..., lo }`: bit concatenation, first item in the most significant bits."""
  items: tuple

@dataclass
class Lambda:
  """`name = lambda(a, b) (expr)` or with an if/return statement body."""
  params: tuple
  body: object  # an expression, or a list of statements

@dataclass
class Assign:
  """`target op value` with op '=' or a compound operator ('+=', ...)."""
  target: object
  op: str
  value: object

@dataclass
class If:
  arms: list  # [(cond, [stmts])]
  orelse: list = field(default_factory=list)

@dataclass
class For:
  var: str
  start: object
  end: object  # inclusive
  body: list

@dataclass
class While:
  cond: object
  body: list

@dataclass
class Break:
  pass

@dataclass
class Return:
  value: object

@dataclass
class Declare:
  """`declare name : 32'U` or an array `declare name : 32'F[3]`."""
  name: str
  typ: Type
  count: int | None = None

@dataclass
class ExprStmt:
  expr: object

def walk(node):
  """Yield every AST node below (and including) node, parents before children, children in order. (An explicit stack: nested
  `yield from` passes each node up through one generator per level.)"""
  stack = [node]
  while stack:
    n = stack.pop()
    yield n
    if isinstance(n, (list, tuple)): stack.extend(reversed(n))
    elif hasattr(n, "__dataclass_fields__"): stack.extend([getattr(n, f) for f in reversed(n.__dataclass_fields__)])
