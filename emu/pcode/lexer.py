"""Tokenizer for AMD's ISA pseudocode.

Tokens are (kind, value) pairs: 'num' (value: `Num` literal), 'sized' (a `N'U`/`N'I`/`N'F`/`N'B`/`N'BF` type or cast prefix:
value (kind letter, width)), 'id', 'op', 'nl' (statement-ending newline) and 'eof'. Comments (`//`) vanish. Newlines
inside brackets, after an operator or before a line that starts with a binary operator are dropped: the PDF scraper
wraps long expressions across lines.
"""
from __future__ import annotations
import re
from emu.pcode.nodes import Num

class PcodeSyntaxError(Exception):
  """The pseudocode does not tokenize or parse."""

OPS = ["+:", "<<=", ">>=", "**", "<>", "<=", ">=", "==", "!=", "&&", "||", "<<", ">>", "+=", "-=", "*=", "/=", "|=", "&=", "^=", "..",
       "+", "-", "*", "/", "%", "&", "|", "^", "~", "!", "<", ">", "=", "?", ":", ",", ";", ".", "(", ")", "[", "]", "{", "}"]
_TOKEN = re.compile(r"""
  (?P<ws>[ \t\r]+) | (?P<comment>//[^\n]*) | (?P<nl>\n)
  | (?P<sized>(?P<sw>\d+)'(?:(?P<sk>BF|[UIFB])(?![0-9A-Za-z_])|(?P<sv>0x[0-9a-fA-F]+|\d+\.\d+|\d+)(?P<ss>ULL|LL|U|F)?))
  | (?P<num>(?:0x[0-9a-fA-F]+|\d+\.\d+(?:[eE][-+]?\d+)?|\d+)(?P<suf>ULL|LL|U|F)?(?![0-9A-Za-z_]))
  | (?P<id>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>""" + "|".join(re.escape(o) for o in OPS) + ")", re.X)
_BINARY = {"+", "*", "/", "%", "&", "|", "^", "<", ">", "<=", ">=", "==", "!=", "<>", "&&", "||", "<<", ">>", "**", "?", ":", "=", ",",
           "+=", "-=", "*=", "/=", "|=", "&=", "^=", "<<=", ">>=", "+:", "..", "-"}
_SUFFIX = {None: None, "U": ("u", 32), "ULL": ("u", 64), "LL": ("i", 64), "F": ("f", 32)}

def literal(text:str, suffix:str|None, width:int|None=None) -> Num:
  """A numeric literal: `0x..ULL`, `4LL`, `2.0F`, `1U`, or the value part of a sized literal `16'4`, `1'1U`."""
  value: int | float = float(text) if "." in text else int(text, 0)
  typ = _SUFFIX[suffix]
  if width is not None: typ = ("f" if isinstance(value, float) or suffix == "F" else "i" if suffix is None else typ[0] if typ else "u", width)
  elif isinstance(value, float) and typ is None: typ = ("f", 64)
  if typ is not None and typ[0] == "f": value = float(value)
  return Num(value, typ)

def tokenize(text:str) -> list[tuple[str, object]]:
  """Split pcode text into tokens, dropping newlines that do not end a statement."""
  raw: list[tuple[str, object]] = []
  pos = 0
  while pos < len(text):
    m = _TOKEN.match(text, pos)
    if m is None: raise PcodeSyntaxError(f"unexpected character {text[pos]!r} at offset {pos}: {text[max(0, pos-20):pos+20]!r}")
    pos = m.end()
    kind = m.lastgroup if m.lastgroup not in ("sw", "sk", "sv", "ss", "suf") else ("sized" if m.group("sized") else "num")
    if kind in ("ws", "comment"): continue
    if kind == "nl": raw.append(("nl", "\n"))
    elif kind == "sized":
      if m.group("sk"): raw.append(("sized", (m.group("sk").lower(), int(m.group("sw")))))
      else: raw.append(("num", literal(m.group("sv"), m.group("ss"), int(m.group("sw")))))
    elif kind == "num": raw.append(("num", literal(m.group("num")[:len(m.group("num")) - len(m.group("suf") or "")], m.group("suf"))))
    else: raw.append((kind, m.group(kind)))
  # drop newlines that do not end a statement
  out: list[tuple[str, object]] = []
  depth = 0
  for i, (kind, val) in enumerate(raw):
    if kind == "op" and val in "([{": depth += 1
    elif kind == "op" and val in ")]}": depth -= 1
    if kind == "nl":
      nxt = next((t for t in raw[i+1:] if t[0] != "nl"), ("eof", None))
      if depth > 0 or not out or out[-1][0] == "nl" or (out[-1][0] == "op" and out[-1][1] in _BINARY | {"(", "[", "{", "!", "~"}) or \
         (nxt[0] == "op" and nxt[1] in _BINARY - {"-"}) or (out[-1] == ("op", ";")): continue
    out.append((kind, val))
  return out + [("eof", None)]
