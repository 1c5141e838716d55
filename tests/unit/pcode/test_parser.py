"""Parser/lexer constructs of the pcode language (expected trees written by hand)."""
import pytest
from emu.pcode.lexer import PcodeSyntaxError, tokenize
from emu.pcode.nodes import Assign, Binary, Cast, Concat, Declare, For, If, Index, Lambda, Name, Num, Slice, Ternary, View
from emu.pcode.parser import parse

def one(text): return parse(text)[0]

def test_sized_literals_and_suffixes():
  assert one("x = 1'1U").value == Num(1, ("u", 1))
  assert one("x = 16'4").value == Num(4, ("i", 16))
  assert one("x = 0x100000000ULL").value == Num(1 << 32, ("u", 64))
  assert one("x = 4LL").value == Num(4, ("i", 64))
  assert one("x = 2.0F").value == Num(2.0, ("f", 32))
  assert one("x = 32'U(y)").value == Cast(("u", 32), Name("y"))

def test_views_slices_index_concat():
  a = one("D0.u32 = { S0.u32[15 : 0], S1[7 : 0].u8 }")
  assert a.target == View(Name("D0"), "u32", ("u", 32))
  assert isinstance(a.value, Concat) and isinstance(a.value.items[0], Slice)
  assert one("VCC.u64[laneId] = 1'0U").target == Index(View(Name("VCC"), "u64", ("u", 64)), Name("laneId"))

def test_precedence_and_ternary():
  v = one("x = a + b * c << 2 == d ? 1 : 0").value
  assert isinstance(v, Ternary) and v.cond.op == "==" and v.cond.a.op == "<<" and v.cond.a.a.b.op == "*"
  assert one("x = a <> b").value == Binary("<>", Name("a"), Name("b"))

def test_wrapped_lines_are_joined():
  a = one("D0.f32 = fma(VGPR[(laneId.u32 & 0xfffffffcU) + 1U][SRC0.u32].f32, S1.f32, VGPR[laneId.u32 &\n0xfffffffcU][SRC2.u32].f32)")
  assert isinstance(a, Assign) and len(a.value.args) == 3

def test_control_flow_declare_lambda():
  s = parse("declare t : 32'B[4];\nfor i in 0 : 3 do\nif i == 2 then\nbreak\nelsif i == 1 then\nt[i] = 1\nelse\nt[i] += 2\nendif\nendfor")
  assert s[0] == Declare("t", ("b", 32), 4) and isinstance(s[1], For) and isinstance(s[1].body[0], If) and len(s[1].body[0].arms) == 2
  lam = one("F = lambda(a, b) (\na + b);")
  assert isinstance(lam.value, Lambda) and lam.value.params == ("a", "b")

def test_compound_and_prose_rejected():
  assert one("tmp += 1U").op == "+="
  with pytest.raises(PcodeSyntaxError): parse("D = A (16x16) * B (16x16) + C")
  assert tokenize("a // comment\nb")[1] == ("nl", "\n")
