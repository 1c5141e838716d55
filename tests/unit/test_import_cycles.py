"""No import cycles among this repository's modules (emu, mockgpu, fuzz): the layers of docs/design.md import downward only, and
a deferred import inside a function counts too (it hides a cycle, it does not remove one). Imports under `if TYPE_CHECKING:` are
annotations only and do not count."""
import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGES = ("emu", "mockgpu", "fuzz")


def _modules() -> dict[str, pathlib.Path]:
  out = {}
  for pkg in PACKAGES:
    for f in (ROOT / pkg).rglob("*.py"):
      parts = f.relative_to(ROOT).with_suffix("").parts
      out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = f
  return out


def _imports(tree: ast.AST, modules: dict) -> set[str]:
  found = set()
  def visit(node):
    if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
      for n in node.orelse: visit(n)
      return
    if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
      found.update(f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module for a in node.names)
    elif isinstance(node, ast.Import): found.update(a.name for a in node.names)
    for child in ast.iter_child_nodes(node): visit(child)
  visit(tree)
  return {m for m in found if m in modules}


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
  """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
  index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
  for root in graph:
    if root in index: continue
    work = [(root, iter(sorted(graph[root])))]
    index[root] = low[root] = counter[0]; counter[0] += 1; stack.append(root); on.add(root)
    while work:
      v, it = work[-1]
      w = next(it, None)
      if w is not None:
        if w not in index:
          index[w] = low[w] = counter[0]; counter[0] += 1; stack.append(w); on.add(w)
          work.append((w, iter(sorted(graph[w]))))
        elif w in on: low[v] = min(low[v], index[w])
        continue
      work.pop()
      if work: low[work[-1][0]] = min(low[work[-1][0]], low[v])
      if low[v] == index[v]:
        comp = []
        while (w := stack.pop()) != v: on.discard(w); comp.append(w)
        on.discard(v); comp.append(v)
        if len(comp) > 1: out.append(sorted(comp))
  return out


def test_the_checker_finds_a_cycle():
  assert import_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
  assert import_cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles():
  modules = _modules()
  graph = {name: _imports(ast.parse(f.read_text()), modules) - {name} for name, f in modules.items()}
  assert import_cycles(graph) == []
