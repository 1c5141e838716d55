"""Consecutive dword reads into the columns of one wide operand, merged into one read of several dwords, on the generated source of
a vector op. The pcode moves a B96/B128 load (and DS_LOAD_2ADDR's halves) a dword at a time:

    VDATA[:, 0] = mread(MEM, ADDR, 4, n)
    VDATA[:, 1] = mread(MEM, ADDR + 4, 4, n)     ...

and each such read is a pass over every lane's address. A run of them, columns k, k+1, ... at addresses base, base + 4, ... of one
memory, becomes `VDATA[:, k:k + K] = mread_words(MEM, base, K, n)` (runtime.mread_words): a memory that can read K dwords at once
(mem_access.Located) does, any other is read a dword at a time in the original order, so the result, the bytes counted and the
first fault are the ones the unmerged code gives. Nothing between the reads of a run can change memory (they are consecutive
statements), so reading them together changes nothing else either."""
from __future__ import annotations
import ast

def _column_read(s:ast.stmt):
  """(target name, column, memory name, address expression) of `T[:, k] = mread(MEM, addr, 4, n)`, else None."""
  if not (isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(t := s.targets[0], ast.Subscript)): return None
  if not (isinstance(t.value, ast.Name) and isinstance(t.slice, ast.Tuple) and len(t.slice.elts) == 2): return None
  rows, col = t.slice.elts
  if not (isinstance(rows, ast.Slice) and rows.lower is rows.upper is rows.step is None and isinstance(col, ast.Constant) and type(col.value) is int):
    return None
  v = s.value
  if not (isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == "mread" and len(v.args) == 4 and not v.keywords): return None
  mem, addr, size, n = v.args
  if not (isinstance(mem, ast.Name) and isinstance(size, ast.Constant) and size.value == 4 and isinstance(n, ast.Name)): return None
  return t.value.id, col.value, mem.id, addr

def _split(addr:ast.expr) -> tuple[str, ast.expr, int]:
  """An address as (its base's dump, the base, a constant byte offset): `ADDR + _cse1 + 4` is ADDR + _cse1 and 4."""
  if isinstance(addr, ast.BinOp) and isinstance(addr.op, ast.Add) and isinstance(addr.right, ast.Constant) and type(addr.right.value) is int:
    return ast.dump(addr.left), addr.left, addr.right.value
  return ast.dump(addr), addr, 0

def _merge_block(body:list[ast.stmt]) -> bool:
  changed, i = False, 0
  while i < len(body):
    first = _column_read(body[i])
    if first is None:
      for field in ("body", "orelse"):
        if isinstance(sub := getattr(body[i], field, None), list): changed |= _merge_block(sub)
      i += 1
      continue
    name, col, mem, addr = first
    key, base, off = _split(addr)
    j = i + 1
    while j < len(body) and (r := _column_read(body[j])) is not None and r[:3] == (name, col + j - i, mem) and \
          _split(r[3])[0] == key and _split(r[3])[2] == off + 4 * (j - i): j += 1
    if j - i >= 2:
      start = ast.BinOp(base, ast.Add(), ast.Constant(off)) if off else base
      cols = ast.Tuple([ast.Slice(), ast.Slice(ast.Constant(col), ast.Constant(col + j - i))], ast.Load())
      target = ast.Subscript(ast.Name(name, ast.Load()), cols, ast.Store())
      call = ast.Call(ast.Name("mread_words", ast.Load()), [ast.Name(mem, ast.Load()), start, ast.Constant(j - i), body[i].value.args[3]], [])
      body[i:j] = [ast.Assign([target], call, lineno=0)]
      changed = True
    i += 1
  return changed

def merge(src:str) -> str:
  """`src` (the generated module of one vector op) with its runs of column dword reads merged (unchanged, formatting included,
  when it has none)."""
  if "mread(" not in src: return src
  tree = ast.parse(src)
  changed = [_merge_block(fn.body) for fn in tree.body if isinstance(fn, ast.FunctionDef)]
  return ast.unparse(ast.fix_missing_locations(tree)) + "\n" if any(changed) else src
