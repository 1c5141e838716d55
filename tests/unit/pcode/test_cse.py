"""emu.pcode.cse on hand-written op sources: what is hoisted, where it goes, and what must stay (values that can change)."""
from emu.pcode.cse import eliminate

def _run(src, **st):
  ns = {"bits2f": lambda x, w: ("f", x), "sign": lambda x: ("sign", x), "np": None}
  exec(src, ns)
  class St: pass
  s = St(); s.__dict__.update(st)
  ns["op"](s)
  return s

def test_repeated_pure_calls_are_computed_once_after_the_loads_innermost_first():
  src = "def op(st):\n  S0 = st.S0\n  a = sign(bits2f(S0, 32))\n  b = sign(bits2f(S0, 32))\n  c = bits2f(S0, 32)\n  st.D0 = (a, b, c)\n"
  out = eliminate(src)
  lines = out.splitlines()
  assert lines[1].strip() == "S0 = st.S0" and lines[2].strip() == "_cse1 = bits2f(S0, 32)" and lines[3].strip() == "_cse2 = sign(_cse1)"
  assert out.count("bits2f(") == 1 and out.count("sign(") == 1
  assert _run(out, S0=7).D0 == _run(src, S0=7).D0

def test_calls_on_names_the_op_assigns_stay_where_they_are():
  src = "def op(st):\n  S0 = st.S0\n  x = S0\n  a = bits2f(x, 32)\n  x = 5\n  b = bits2f(x, 32)\n  st.D0 = (a, b)\n"
  assert eliminate(src) == src   # nothing hoisted: the source is returned as it was
  assert _run(eliminate(src), S0=1).D0 == (("f", 1), ("f", 5))

def test_hoisted_values_go_inside_the_errstate_block_after_the_mode_dispatch():
  src = ("def op(st):\n  if getattr(st, 'MODE', 0) != 0: return None\n  S0 = st.S0\n  with np.errstate(all='ignore'):\n"
         "    a = bits2f(S0, 16)\n    b = bits2f(S0, 16)\n  st.D0 = (a, b)\n")
  lines = [ln.strip() for ln in eliminate(src).splitlines()]
  at = lines.index("_cse1 = bits2f(S0, 16)")
  assert lines.index("return None") < lines.index("S0 = st.S0") < lines.index("with np.errstate(all='ignore'):") == at - 1

def test_numpy_scalar_literals_inside_a_call_are_constants_but_other_attributes_are_not():
  src = "def op(st):\n  S0 = st.S0\n  a = bits2f(S0 >> np.uint64(16), 16)\n  b = bits2f(S0 >> np.uint64(16), 16)\n  st.D0 = (a, b)\n"
  out = eliminate(src)
  assert out.count("bits2f(") == 1 and "_cse1 = bits2f(S0 >> np.uint64(16), 16)" in out
  for blocked in ("st.S1", "np.uint64(S0)", "S0[0]"):   # another state field, a numpy call on a variable, a subscript: never hoisted
    src = f"def op(st):\n  S0 = st.S0\n  a = bits2f({blocked}, 16)\n  b = bits2f({blocked}, 16)\n  st.D0 = (a, b)\n"
    assert eliminate(src) == src, blocked
