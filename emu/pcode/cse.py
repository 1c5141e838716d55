"""Common-subexpression elimination on the generated source of a vector op: a call of a pure helper (PURE) whose arguments are
constants, or names the function never assigns, has the same value wherever it appears, so when it appears more than once it
is computed once, right after the op loads its operands. V_CMP_CLASS_F32's vendor text reads `S0.f32` ten times and its sign
four: each read was a numpy conversion of every lane.

Vector ops only: their per-lane conditions are masks, and their only Python branches are uniform ones (MODE_IEEE) and the
skipping of arms no lane takes (codegen.Gen.masked_arm), so a hoisted call runs whenever one of its uses would have, and being
pure changes nothing when it runs for an arm that is skipped. Scalar ops branch in Python and are left alone."""
from __future__ import annotations
import ast

# helpers (emu/pcode/runtime.py, helpers.py) whose value depends only on their arguments, none of which they change
PURE = frozenset({"bits2f", "f2bits", "sign", "exponent", "mantissa", "is_snan", "is_qnan", "isnan", "is_denorm", "fabs", "i64", "u64",
                  "sext", "reverse_bits", "popcount"})

def _invariant(node:ast.AST, assigned:set[str]) -> bool:
  """Whether `node` is a pure call whose every name is one the function never assigns (its value is the same everywhere)."""
  if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in PURE and not node.keywords): return False
  for sub in ast.walk(node):
    if isinstance(sub, ast.Name) and sub is not node.func and sub.id in assigned: return False
    if isinstance(sub, ast.Call) and not (isinstance(sub.func, ast.Name) and sub.func.id in PURE or _numpy_scalar(sub)): return False
    if isinstance(sub, ast.Attribute) and not _numpy_name(sub) or isinstance(sub, (ast.Subscript, ast.Lambda, ast.NamedExpr)): return False
  return True

def _numpy_name(node:ast.AST) -> bool:
  """`np.uint64` and the like: a name in numpy's namespace (a constant the generated code never rebinds)."""
  return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "np"

def _numpy_scalar(node:ast.Call) -> bool:
  """`np.uint64(16)`: a numpy scalar type applied to a literal (the shift counts and masks of bit-field reads)."""
  return _numpy_name(node.func) and not node.keywords and all(isinstance(a, ast.Constant) for a in node.args)

class _Replace(ast.NodeTransformer):
  def __init__(self, names:dict[str, str]): self.names = names
  def visit_Call(self, node:ast.Call):
    if (name := self.names.get(ast.dump(node))) is not None: return ast.copy_location(ast.Name(name, ast.Load()), node)
    return self.generic_visit(node)

def _function(fn:ast.FunctionDef) -> bool:
  """Hoist the repeated invariant calls of one op function (innermost first, so `sign(bits2f(S0, 32))` becomes `sign(_cse1)`);
  whether there were any."""
  block, loads = fn.body, 0   # after the mode dispatch and the `X = st.X` loads (inside `with np.errstate` when there is one)
  while loads < len(block) and (isinstance(s := block[loads], ast.Assign) and isinstance(s.value, ast.Attribute) or
                                isinstance(s, ast.If) and isinstance(s.body[0], ast.Return)): loads += 1
  # names the function assigns after its loads (the operands themselves are assigned once, by the loads)
  assigned = {t.id for n in fn.body[loads:] for t in ast.walk(n) if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)}
  if loads < len(block) and isinstance(block[loads], ast.With): block, loads = block[loads].body, 0
  k = 0
  while True:
    counts: dict[str, tuple[int, ast.Call]] = {}
    for node in ast.walk(ast.Module(block[loads:], [])):
      if _invariant(node, assigned): counts[d] = (counts.get(d := ast.dump(node), (0, node))[0] + 1, node)
    # the innermost repeated calls: those containing no other repeated call
    repeated = {d: node for d, (c, node) in counts.items() if c > 1}
    inner = {d: node for d, node in repeated.items()
             if not any(ast.dump(sub) in repeated for sub in ast.walk(node) if sub is not node and isinstance(sub, ast.Call))}
    if not inner: return k > 0
    names = {}
    for d, node in inner.items():
      k += 1
      names[d] = name = f"_cse{k}"
      block.insert(loads, ast.Assign([ast.Name(name, ast.Store())], node, lineno=0))
      loads += 1   # (the hoisted name is assigned once, before every use: an invariant too)
    block[loads:] = [_Replace(names).visit(s) for s in block[loads:]]

def eliminate(src:str) -> str:
  """`src` (the generated module of one vector op) with repeated invariant pure calls computed once per function (unchanged,
  formatting included, when there are none)."""
  tree = ast.parse(src)
  changed = [_function(fn) for fn in tree.body if isinstance(fn, ast.FunctionDef)]
  return ast.unparse(ast.fix_missing_locations(tree)) + "\n" if any(changed) else src
