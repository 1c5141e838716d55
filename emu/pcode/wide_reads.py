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

# ---- scalar ops (Python ints): `T = MEM.read(A, 4)` then `T = ((T & M) | (MEM.read(((A + 4j)) & 0xff..ff, 4) << 32j))`, j = 1.. ----
M64 = (1 << 64) - 1

def _mem_read(v:ast.expr) -> tuple[str, ast.expr] | None:
  """(memory name, address) of `MEM.read(addr, 4)`, else None."""
  if not (isinstance(v, ast.Call) and isinstance(f := v.func, ast.Attribute) and f.attr == "read" and isinstance(f.value, ast.Name)): return None
  if len(v.args) != 2 or v.keywords or not (isinstance(c := v.args[1], ast.Constant) and c.value == 4): return None
  return f.value.id, v.args[0]

def _scalar_first(s:ast.stmt) -> tuple[str, str, ast.expr] | None:
  """(target, memory, address) of `T = MEM.read(addr, 4)`."""
  if not (isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(t := s.targets[0], ast.Name)): return None
  return None if (r := _mem_read(s.value)) is None else (t.id, *r)

def _scalar_next(s:ast.stmt, name:str, j:int) -> tuple[str, ast.expr] | None:
  """(memory, address before the 64-bit wrap) of `T = ((T & M) | (MEM.read((addr) & M64, 4) << 32j))` where M keeps T's bits below
  32j and clears those of dword j (T holds nothing above them: it is the run so far)."""
  if not (isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(t := s.targets[0], ast.Name) and t.id == name): return None
  v = s.value
  if not (isinstance(v, ast.BinOp) and isinstance(v.op, ast.BitOr) and isinstance(keep := v.left, ast.BinOp) and isinstance(keep.op, ast.BitAnd)):
    return None
  if not (isinstance(keep.left, ast.Name) and keep.left.id == name and isinstance(m := keep.right, ast.Constant) and type(m.value) is int):
    return None
  low = (1 << (32 * j)) - 1
  if m.value & low != low or m.value & (0xffffffff << (32 * j)): return None
  if not (isinstance(sh := v.right, ast.BinOp) and isinstance(sh.op, ast.LShift) and isinstance(c := sh.right, ast.Constant) and c.value == 32 * j):
    return None
  if (r := _mem_read(sh.left)) is None: return None
  a = r[1]
  if not (isinstance(a, ast.BinOp) and isinstance(a.op, ast.BitAnd) and isinstance(w := a.right, ast.Constant) and w.value == M64): return None
  return r[0], a.left

def _merge_scalar_block(body:list[ast.stmt]) -> bool:
  changed, i = False, 0
  while i < len(body):
    if (first := _scalar_first(body[i])) is None:
      for field in ("body", "orelse"):
        if isinstance(sub := getattr(body[i], field, None), list): changed |= _merge_scalar_block(sub)
      i += 1
      continue
    name, mem, addr = first
    key, _, off = _split(addr)
    j = i + 1
    while j < len(body) and (r := _scalar_next(body[j], name, j - i)) is not None and r[0] == mem and \
          _split(r[1])[0] == key and _split(r[1])[2] == off + 4 * (j - i): j += 1
    if j - i >= 2:
      call = ast.Call(ast.Name("sread_words", ast.Load()), [ast.Name(mem, ast.Load()), addr, ast.Constant(j - i)], [])
      body[i:j] = [ast.Assign([ast.Name(name, ast.Store())], call, lineno=0)]
      changed = True
    i += 1
  return changed

def merge_scalar(src:str) -> str:
  """`src` (the generated module of one scalar op) with its runs of dword reads into one value merged into one `sread_words`
  (runtime.sread_words: same value, bytes counted and first fault as the reads it replaces); unchanged when it has none."""
  if ".read(" not in src: return src
  tree = ast.parse(src)
  changed = [_merge_scalar_block(fn.body) for fn in tree.body if isinstance(fn, ast.FunctionDef)]
  return ast.unparse(ast.fix_missing_locations(tree)) + "\n" if any(changed) else src

def merge(src:str) -> str:
  """`src` (the generated module of one vector op) with its runs of column dword reads merged (unchanged, formatting included,
  when it has none)."""
  if "mread(" not in src: return src
  tree = ast.parse(src)
  changed = [_merge_block(fn.body) for fn in tree.body if isinstance(fn, ast.FunctionDef)]
  return ast.unparse(ast.fix_missing_locations(tree)) + "\n" if any(changed) else src
