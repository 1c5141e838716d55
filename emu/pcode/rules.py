"""Rewrites the generator applies to every vendor text before compiling it, where the vendor's notation means an operation that
its literal reading would round differently. Each rule names the ISA meaning it restores; each replaced what were per-op fixes.

- `x * 2.0 ** n` (the power possibly cast to x's format): x scaled by 2**n, rounded once: `ldexp(x, n)`. Formed literally, 2**n
  overflows or underflows the operand's format before the product does (V_LDEXP of 1e-30 by 2**120 in f32).
- `sin(x * 2 * PI)` / `cos(...)` (the constant possibly cast): the hardware takes x in revolutions and reduces it exactly:
  `sin_rev(x)`. The literal product rounds x * 2pi to the operand's format first (a 1e-7 relative error that grows with x).
- `D = floor(x + 0.5)` followed by `if isEven(floor(x)) && fract(x) == 0.5 then D -= 1.0`: round half to even, `D = rint(x)`;
  the literal form rounds x + 0.5 first (0.49999997 + 0.5 is 1.0 in f32).
- `D.fN = mantissa(x)` (a float destination) and `exponent(x) - bias + 1` (bias of x's format): C's frexp, the significand in
  [0.5, 1) with x's sign and the exponent of the normalised value: `frexp_mant(x)`, `frexp_exp(x)`. Read literally they are the
  stored fraction bits as a float (V_FREXP_MANT_F32 of 1.5 gave 5.9e-39) and the biased field, wrong for zeros and denormals.
  mantissa() in an integer context (V_CVT_SR_FP8's rounding bits) keeps its field meaning.
- `1.0 / sqrt(x)` for an f16/f32 x: the reciprocal square root rounded once: `rsq(x)` (computed in f64, rounded to x's format);
  the literal form rounds the square root to x's format first. An f64 x keeps the literal form, which computes in f64 already.

Three rules change no result, only the cost of computing it. The first two (read literally, each is hi - lo + 1 passes over every lane):
- `for i in lo : hi do T += X[i] endfor`, also written `T += X[i] == 1 ? 1 : 0` (or `== 0` to count zeros), with X independent of
  i and T: the set (clear) bits of X[hi : lo] counted at once, `T += countbits(X[hi : lo])` (V_BCNT, V_MBCNT, S_BCNT0/1).
- `for i in lo : hi do if X[i] == 1 then T = i; break endif endfor` (or X[c - i], searching from the top): with Y the bits
  searched, lowest first (X[hi : lo], or the reversed slice X[c - hi : c - lo]), `if Y != 0 then T = countbits(Y ^ (Y - 1)) - 1 + lo`,
  since Y ^ (Y - 1) sets the bits up to Y's lowest set one (V_CTZ/V_CLZ, S_CTZ/S_CLZ). `X[c - i] != X[k]` (V_CLS/S_CLS: the
  first bit unlike the sign) searches X ^ (X[k] ? ones : 0) the same way.
- `{ D1.k1, D0.k64 } = 65'B(65'K(a.k32) * 65'K(b.k32) + 65'K(c.k64))` (V_MAD_U64_U32, V_MAD_I64_I32; K unsigned or signed): read
  literally it is 65-bit arithmetic, which numpy has only as Python-int object arrays (~9 ms for 16K lanes). The product of two
  32-bit operands fits 64 bits, so D0 is the 64-bit sum, wrapping, and D1 bit 64 of the exact sum: unsigned, the carry `D0 < c`;
  signed, the sign of the exact sum, which is c's where the product and c have one sign (the 64-bit sum may have overflowed) and
  D0's where they differ (it cannot have).
"""
from __future__ import annotations
import dataclasses
from emu.pcode.nodes import Assign, Binary, Break, Call, Cast, Concat, For, If, Index, Name, Num, Slice, Ternary, View, walk
from emu.pcode.numerics import F16, F32, F64

def _is_num(e, value) -> bool: return isinstance(e, Num) and e.typ is not None and e.value == value

def _uncast(e): return e.expr if isinstance(e, Cast) and e.typ[0] == "f" else e

def _is_two_pi(e) -> bool:
  e = _uncast(e)
  return isinstance(e, Binary) and e.op == "*" and {type(e.a), type(e.b)} == {Name, Num} and \
    any(isinstance(x, Name) and x.id == "PI" for x in (e.a, e.b)) and any(_is_num(x, 2.0) for x in (e.a, e.b))

def _ldexp(e):
  if isinstance(e, Binary) and e.op == "*" and isinstance(p := _uncast(e.b), Binary) and p.op == "**" and _is_num(p.a, 2.0):
    return Call("ldexp", (e.a, p.b))
  return None

def _revolutions(e):
  if isinstance(e, Call) and e.name in ("sin", "cos") and len(e.args) == 1 and isinstance(a := e.args[0], Binary) and a.op == "*" and _is_two_pi(a.b):
    return Call(f"{e.name}_rev", (a.a,))
  return None

def _rsq(e):
  if isinstance(e, Binary) and e.op == "/" and _is_num(e.a, 1.0) and isinstance(e.b, Call) and e.b.name == "sqrt" and len(e.b.args) == 1 \
     and getattr(e.b.args[0], "typ", None) in (("f", 16), ("f", 32)):
    return Call("rsq", e.b.args)
  return None

EXPONENT_BIAS = {f.width: f.bias for f in (F16, F32, F64)}   # by the pcode type's width

def _is_int(e, value) -> bool: return isinstance(e, Num) and e.value == value

def _float_typed(e) -> bool: return (getattr(e, "typ", None) or ("",))[0] == "f"

def _frexp_exp(e):
  if isinstance(e, Binary) and e.op == "+" and _is_int(e.b, 1) and isinstance(d := e.a, Binary) and d.op == "-" and \
     isinstance(c := d.a, Call) and c.name == "exponent" and len(c.args) == 1 and _float_typed(x := c.args[0]) and \
     _is_int(d.b, EXPONENT_BIAS.get(x.typ[1])):
    return Call("frexp_exp", c.args)
  return None

def _frexp_mant(e):
  if isinstance(e, Assign) and e.op == "=" and _float_typed(e.target) and isinstance(c := e.value, Call) and c.name == "mantissa" and \
     len(c.args) == 1:
    return dataclasses.replace(e, value=Call("frexp_mant", c.args))
  return None

def _loop_bit(e, var:str):
  """(X, counted bit value) when `e` is bit `var` of X as a loop body counts it: X[i], X[i] == 1 ? 1 : 0, X[i] == 0 ? 1 : 0."""
  if isinstance(e, View) and e.typ is not None and e.typ[0] == "u": e = e.expr
  if isinstance(e, Index) and e.index == Name(var): return e.expr, 1
  if isinstance(e, Ternary) and _is_int(e.a, 1) and _is_int(e.b, 0) and isinstance(c := e.cond, Binary) and c.op == "==" and \
     isinstance(c.a, Index) and c.a.index == Name(var) and isinstance(c.b, Num) and c.b.value in (0, 1):
    return c.a.expr, c.b.value
  return None

def _loop_statement(e):
  """The one statement of `e` when it is a loop with constant bounds and a single-statement body (what both loop rules rewrite)."""
  return e.body[0] if isinstance(e, For) and isinstance(e.start, Num) and isinstance(e.end, Num) and len(e.body) == 1 else None

def _mentions(x, names:set[str]) -> bool:
  """Whether expression `x` reads any of `names` (a rewritten loop's bits must not depend on its variable or its result)."""
  return any(isinstance(n, Name) and n.id in names for n in walk(x))

def _bit_count(e):
  if not (isinstance(s := _loop_statement(e), Assign) and s.op == "+=" and isinstance(s.target, Name)): return None
  if (found := _loop_bit(s.value, e.var)) is None: return None
  x, bit = found
  if _mentions(x, {e.var, s.target.id}): return None
  ones = Call("countbits", (Slice(x, e.end, e.start),))
  return Assign(s.target, "+=", ones if bit else Binary("-", Num(e.end.value - e.start.value + 1, None), ones))

def _searched_bits(x, index, loop:For):
  """The bits a find-first loop tests, the first tested as bit 0: X[hi : lo] for X[i], the reversed X[c - hi : c - lo] for X[c - i]."""
  a, b = loop.start.value, loop.end.value
  if index == Name(loop.var): return Slice(x, Num(b, None), Num(a, None))
  if isinstance(index, Binary) and index.op == "-" and isinstance(index.a, Num) and index.a.typ is None and index.b == Name(loop.var) \
     and index.a.value - b >= 0:
    return Slice(x, Num(index.a.value - b, None), Num(index.a.value - a, None))
  return None

def _find_first(e):
  if not (isinstance(s := _loop_statement(e), If) and len(s.arms) == 1 and not s.orelse): return None
  cond, body = s.arms[0]
  if not (len(body) == 2 and isinstance(body[0], Assign) and body[0].op == "=" and body[0].value == Name(e.var) and isinstance(body[1], Break)
          and isinstance(cond, Binary) and isinstance(cond.a, Index)): return None
  x, target = cond.a.expr, body[0].target
  if cond.op == "!=" and isinstance(k := cond.b, Index) and k.expr == x and isinstance(k.index, Num) and k.index.typ is None:
    # X[c - i] != X[k] (V_CLS: bits unlike the sign bit) searches the set bits of X ^ (X[k] replicated); k is above every bit searched
    if not (isinstance(cond.a.index, Binary) and isinstance(cond.a.index.a, Num) and cond.a.index.a.value - e.start.value < k.index.value):
      return None
    x = Binary("^", x, Ternary(Binary("==", k, Num(1, ("u", 1))), Num((1 << (k.index.value + 1)) - 1, None), Num(0, None)))
  elif not (cond.op == "==" and _is_int(cond.b, 1)): return None
  if (y := _searched_bits(x, cond.a.index, e)) is None or _mentions(y, {e.var} | {m.id for m in walk(target) if isinstance(m, Name)}):
    return None
  first = Binary("+", Binary("-", Call("countbits", (Binary("^", y, Binary("-", y, Num(1, None))),)), Num(1, None)), Num(e.start.value, None))
  return If([(Binary("!=", y, Num(0, None)), [Assign(target, "=", first)])])

RULES = {"ldexp": _ldexp, "revolutions": _revolutions, "rsq": _rsq, "frexp_exp": _frexp_exp, "frexp_mant": _frexp_mant,
         "bit-count": _bit_count, "find-first": _find_first}

def _round_half_even(first, second):
  """The statement replacing the pair `first`, `second` when they are the vendor's round-half-to-even, else None."""
  if not (isinstance(first, Assign) and first.op == "=" and isinstance(f := first.value, Call) and f.name == "floor" and len(f.args) == 1
          and isinstance(p := f.args[0], Binary) and p.op == "+" and _is_num(p.b, 0.5)): return None
  x, d = p.a, first.target
  if not (isinstance(second, If) and len(second.arms) == 1 and not second.orelse): return None
  cond, body = second.arms[0]
  fix = [Assign(d, "-=", Num(1.0, getattr(d, "typ", None)))]
  even = isinstance(cond, Binary) and cond.op == "&&" and isinstance(c := cond.a, Call) and c.name == "isEven" and \
    _uncast(c.args[0]) == Call("floor", (x,)) and cond.b == Binary("==", Call("fract", (x,)), Num(0.5, getattr(x, "typ", None)))
  return Assign(d, "=", Call("rint", (x,))) if even and body == fix else None

def _widened(e, kind:str, width:int):
  """x when `e` is 65'K(x) with x a `kind` view of `width` bits (the widened operands of a 65-bit multiply-add), else None."""
  if isinstance(e, Cast) and e.typ == (kind, 65) and getattr(e.expr, "typ", None) == (kind, width): return e.expr
  return None

def _carry_out_mad(st) -> list | None:
  """`{ D1.k1, D0.k64 } = 65'B(65'K(a.k32) * 65'K(b.k32) + 65'K(c.k64))` as 64-bit statements, else None."""
  if not (isinstance(st, Assign) and st.op == "=" and isinstance(st.target, Concat) and len(st.target.items) == 2): return None
  hi, lo = st.target.items
  kind = getattr(lo, "typ", (None,))[0]
  if not (kind in ("u", "i") and getattr(lo, "typ", None) == (kind, 64) and getattr(hi, "typ", None) == (kind, 1)): return None
  v = st.value
  if not (isinstance(v, Cast) and v.typ == ("b", 65) and isinstance(s := v.expr, Binary) and s.op == "+" and isinstance(m := s.a, Binary)
          and m.op == "*"): return None
  a, b, c = _widened(m.a, kind, 32), _widened(m.b, kind, 32), _widened(s.b, kind, 64)
  if a is None or b is None or c is None: return None
  product, bit = Name("mad_product"), lambda cond: Ternary(cond, Num(1, ("u", 1)), Num(0, ("u", 1)))
  negative = lambda x: Binary("<", x, Num(0, None))
  carry = bit(Binary("<", lo, c)) if kind == "u" else \
    Ternary(Binary("==", negative(product), negative(c)), bit(negative(c)), bit(negative(lo)))
  return [Assign(product, "=", Binary("*", Cast((kind, 64), a), Cast((kind, 64), b))), Assign(lo, "=", Binary("+", product, c)),
          Assign(Index(View(hi.expr, "u64", ("u", 64)), Name("laneId")), "=", carry)]

def _statements(stmts:list, used:set|None) -> list:
  out: list = []
  for st in stmts:
    if out and (merged := _round_half_even(out[-1], st)) is not None:
      out[-1] = merged
      if used is not None: used.add("round-half-even")
    elif (split := _carry_out_mad(st)) is not None:
      out.extend(split)
      if used is not None: used.add("carry-out-mad")
    else: out.append(st)
  return out

def apply(node, used:set|None=None):
  """`node` (a statement list, a statement or an expression) with every rule applied bottom-up; the names of the rules that
  fired are added to `used`."""
  if isinstance(node, list): return _statements([apply(x, used) for x in node], used)
  if isinstance(node, tuple): return tuple(apply(x, used) for x in node)
  if not dataclasses.is_dataclass(node) or isinstance(node, type): return node
  new = dataclasses.replace(node, **{f.name: apply(getattr(node, f.name), used) for f in dataclasses.fields(node) if f.init})
  for name, rule in RULES.items():
    if (out := rule(new)) is not None:
      if used is not None: used.add(name)
      return out
  return new
