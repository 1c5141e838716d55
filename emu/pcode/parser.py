"""Recursive-descent parser: pcode tokens -> statements of `emu.pcode.nodes`.

Precedence follows C (lowest first): ?: , ||, &&, |, ^, &, == != <>, < <= > >=, << >>, + -, * / %, ** , unary, postfix.
"""
from __future__ import annotations
import keyword
from emu.pcode.lexer import PcodeSyntaxError, tokenize
from emu.pcode.nodes import (Assign, Binary, Break, Call, Cast, Concat, Declare, ExprStmt, For, If, Index, Lambda, Name, Num, Return, Slice,
                             Ternary, Unary, View, While)

TYPE_NAMES = {"u": "u", "i": "i", "b": "b", "f": "f", "bf": "bf"}
_BINOPS = [["||"], ["&&"], ["|"], ["^"], ["&"], ["==", "!=", "<>"], ["<", "<=", ">", ">="], ["<<", ">>"], ["+", "-"], ["*", "/", "%"], ["**"]]
_COMPOUND = {"+=", "-=", "*=", "/=", "|=", "&=", "^=", "<<=", ">>="}
_ENDS = {"endif", "elsif", "else", "endfor", "endwhile", "eof"}

def ident(name:str) -> str:
  """A pcode identifier as a Python-safe name (`in` -> `in_`)."""
  return name + "_" if keyword.iskeyword(name) else name

_SMALL_FLOATS = {"fp8": ("b", 8), "bf8": ("b", 8), "fp6": ("b", 6), "bf6": ("b", 6), "fp4": ("b", 4)}

def view_type(name:str):
  """`u32` -> ('u', 32), `bf16` -> ('bf', 16), `f` (S0.f in some entries) -> None; anything else is a plain field. The 4-8-bit
  float views (`.fp8 .bf8 .fp6 .bf6 .fp4`) are raw bits: only the conversion helpers (fp8_to_f32 ...) give them a value."""
  if name in _SMALL_FLOATS: return _SMALL_FLOATS[name]
  for k in ("bf", "u", "i", "b", "f"):
    if name.startswith(k) and name[len(k):].isdigit(): return (k, int(name[len(k):]))
  return None

class Parser:
  """Parse one pcode entry. `parse()` returns the list of top-level statements."""
  def __init__(self, text:str):
    self.toks, self.i = tokenize(text), 0

  def peek(self, k:int=0): return self.toks[min(self.i + k, len(self.toks) - 1)]
  def next(self):
    t = self.toks[self.i]; self.i += 1
    return t
  def at(self, *vals) -> bool: return self.peek()[1] in vals and self.peek()[0] in ("op", "id")
  def accept(self, *vals) -> bool:
    if self.at(*vals): self.i += 1; return True
    return False
  def expect(self, val):
    if not self.accept(val): raise PcodeSyntaxError(f"expected {val!r}, got {self.peek()[1]!r} (token {self.i})")

  def skip_seps(self):
    while self.peek()[0] == "nl" or self.at(";"): self.i += 1

  def parse(self) -> list:
    body = self.block()
    if self.peek()[0] != "eof": raise PcodeSyntaxError(f"unexpected {self.peek()[1]!r} (token {self.i})")
    return body

  def block(self) -> list:
    out = []
    self.skip_seps()
    while not (self.peek()[0] == "eof" or (self.peek()[0] == "id" and self.peek()[1] in _ENDS) or self.at(")")):  # `)` ends a lambda body
      st = self.statement()
      if isinstance(st, list): out.extend(st)
      else: out.append(st)
      if not (self.peek()[0] in ("nl", "eof") or self.at(";", ")") or (self.peek()[0] == "id" and self.peek()[1] in _ENDS)):
        raise PcodeSyntaxError(f"expected end of statement, got {self.peek()[1]!r} (token {self.i})")
      self.skip_seps()
    return out

  def statement(self):
    if self.accept("if"): return self.if_rest()
    if self.accept("for"):
      var = ident(self.next()[1])
      self.expect("in")
      start = self.expr()
      self.expect(":")
      end = self.expr()
      self.expect("do")
      body = self.block()
      self.expect("endfor")
      return For(var, start, end, body)
    if self.accept("while"):
      cond = self.expr()
      self.expect("do")
      body = self.block()
      self.expect("endwhile")
      return While(cond, body)
    if self.accept("break"): return Break()
    if self.accept("return"): return Return(self.expr())
    if self.accept("declare"):
      name = ident(self.next()[1])
      self.expect(":")
      kind, typ = self.next()
      if kind != "sized": raise PcodeSyntaxError(f"declare {name}: expected a type, got {typ!r}")
      count = None
      if self.accept("["):
        count = self.next()[1].value
        self.expect("]")
      return Declare(name, typ, count)
    if self.peek()[0] == "id" and self.peek(1) == ("op", "=") and self.peek(2) == ("id", "lambda"):
      name = self.next()[1]
      self.i += 2
      return Assign(Name(name), "=", self.lambda_rest())
    target = self.expr()
    if self.peek()[0] == "op" and (self.peek()[1] == "=" or self.peek()[1] in _COMPOUND):
      op = self.next()[1]
      targets, value = [target], self.expr()
      while op == "=" and self.peek() == ("op", "="):  # `EXEC.u64[laneId] = D0.u64[laneId] = x`: x to the last target, then back
        self.next()
        targets.append(value)
        value = self.expr()
      if len(targets) == 1: return Assign(target, op, value)
      return [Assign(targets[-1], "=", value)] + [Assign(t, "=", targets[-1]) for t in reversed(targets[:-1])]
    if isinstance(target, Call): return ExprStmt(target)
    raise PcodeSyntaxError(f"expected a statement, got expression {target!r} then {self.peek()[1]!r}")

  def if_rest(self) -> If:
    arms, orelse = [], []
    cond = self.expr()
    self.expect("then")
    arms.append((cond, self.block()))
    while True:
      if self.accept("elsif"):
        cond = self.expr()
        self.expect("then")
        arms.append((cond, self.block()))
      elif self.accept("else"): orelse = self.block()
      else:
        self.expect("endif")
        return If(arms, orelse)

  def lambda_rest(self) -> Lambda:
    self.expect("(")
    params = []
    while not self.accept(")"):
      params.append(self.next()[1])
      self.accept(",")
    self.expect("(")
    self.skip_seps()
    if self.at("if", "declare", "for"):
      body = self.block()
      self.expect(")")
      return Lambda(tuple(params), body)
    body = self.expr()
    self.skip_seps()
    self.expect(")")
    return Lambda(tuple(params), body)

  # ---- expressions ----
  def expr(self):
    cond = self.binary(0)
    if self.accept("?"):
      a = self.expr()
      self.expect(":")
      return Ternary(cond, a, self.expr())
    return cond

  def binary(self, level:int):
    if level == len(_BINOPS): return self.unary()
    e = self.binary(level + 1)
    while self.peek()[0] == "op" and self.peek()[1] in _BINOPS[level]:
      op = self.next()[1]
      e = Binary(op, e, self.binary(level + 1))
    return e

  def unary(self):
    if self.peek()[0] == "op" and self.peek()[1] in ("-", "!", "~", "+"):
      op = self.next()[1]
      e = self.unary()
      if op in "-+" and isinstance(e, Num) and isinstance(e.value, float): return Num(-e.value if op == "-" else e.value, e.typ, True)
      if op == "-" and isinstance(e, Num): return Num(-e.value, e.typ)
      return e if op == "+" else Unary(op, e)
    return self.postfix(self.primary())

  def primary(self):
    kind, val = self.next()
    if kind == "num": return val
    if kind == "sized":
      self.expect("(")
      e = self.expr()
      self.expect(")")
      return Cast(val, e)
    if kind == "id":
      if self.at("(") and val not in ("if",):
        self.i += 1
        args = []
        while not self.accept(")"):
          args.append(self.expr())
          self.accept(",")
        return Call(val, tuple(args))
      return Name(ident(val))
    if kind == "op" and val == "(":
      e = self.expr()
      if self.accept(","):  # (a, b) tuple: only as a concat-like target, parse as Concat
        items = [e, self.expr()]
        while self.accept(","): items.append(self.expr())
        self.expect(")")
        return Concat(tuple(items))
      self.expect(")")
      return e
    if kind == "op" and val == "{":
      items = [self.expr()]
      while self.accept(","): items.append(self.expr())
      self.expect("}")
      return Concat(tuple(items))
    raise PcodeSyntaxError(f"unexpected {val!r} (token {self.i - 1})")

  def postfix(self, e):
    while True:
      if self.accept("."):
        name = self.next()[1]
        e = View(e, name, view_type(name))
      elif self.accept("["):
        a = self.expr()
        if self.accept(":"):
          e = Slice(e, a, self.expr())
        elif self.accept("+:"):
          w = self.expr()
          e = Slice(e, Binary("-", Binary("+", a, w), Num(1)), a)
        else: e = Index(e, a)
        self.expect("]")
      else: return e

def parse(text:str) -> list:
  """Parse a pcode entry into a list of statements; raises PcodeSyntaxError."""
  return Parser(text).parse()
