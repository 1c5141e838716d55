"""emu.pcode.wide_reads: every generated op of the three ISAs that reads a wide operand through `mread_words` gives what the same
op gives with each merged read written out as the dword reads it stands for (`T[:, k + i] = mread(MEM, base + 4 i, 4, n)`, in
order): the same results, the same memory calls in the same order where the memory reads a dword at a time, the same results and
byte counts where it reads several at once (mem_access.Located), also when lanes are not at one offset of their spans."""
import ast
import numpy as np
import pytest
from emu.amd.api import DispatchStats
from emu.amd.mem_access import GlobalMemory, Located, locate
from emu.common.memory import MemoryMap
from emu.pcode import compiler
from emu.pcode.abi import OpState
from emu.pcode.helpers import namespace
from emu.pcode.wide_reads import merge

N = 64

def _expanded(src:str) -> str:
  """`src` with each `T[:, a:b] = mread_words(MEM, base, K, n)` written out as K dword reads (the definition, independently)."""
  tree = ast.parse(src)
  class Expand(ast.NodeTransformer):
    def visit_Assign(self, node):
      v = node.value
      if not (isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == "mread_words"): return node
      mem, base, k, n = v.args
      col0 = node.targets[0].slice.elts[1].lower.value
      return [ast.Assign([ast.Subscript(node.targets[0].value, ast.Tuple([ast.Slice(), ast.Constant(col0 + i)], ast.Load()), ast.Store())],
                         ast.Call(ast.Name("mread", ast.Load()), [mem, ast.BinOp(base, ast.Add(), ast.Constant(4 * i)) if i else base,
                                                                  ast.Constant(4), n], []), lineno=0) for i in range(k.value)]
  return ast.unparse(ast.fix_missing_locations(Expand().visit(tree))) + "\n"

def _fn(src:str, name:str):
  ns = dict(namespace())
  exec(compile(src, f"<{name}>", "exec"), ns)
  return ns["op"]

def _merged_ops(kind:str="vector", helper:str="mread_words"):
  """(name, CompiledOp) of each distinct generated source of the three ISAs' `kind` ops that calls `helper`."""
  seen = set()
  for arch in ("rdna3", "rdna4", "cdna"):
    for op in compiler.ops_for(arch):
      try: c = compiler.compile_op(arch, op)
      except Exception: continue
      if c.kind == kind and helper in c.source and c.source not in seen:
        seen.add(c.source)
        yield f"{arch} {op.name}", c

class Recorder:
  """A memory that reads one value per call (no read_words): every lane's value is derived from its address; calls are logged."""
  def __init__(self): self.calls = []
  def read(self, addrs, nbytes):
    self.calls.append((np.asarray(addrs).tolist(), nbytes))
    a = np.asarray(addrs, dtype=np.uint64)
    return (a * np.uint64(0x9E3779B1) + np.uint64(nbytes)) & np.uint64((1 << (8 * nbytes)) - 1)

def _state(c, mem, addr):
  ins = dict(n=N, MEM=mem, ADDR=addr, laneId=np.arange(N, dtype=np.uint64) % np.uint64(32), WAVE32=True, WAVE64=False)
  ins.update(OFFSET=8, OFFSET0=3, OFFSET1=5)   # dword-aligned byte offsets (the 2-address forms scale theirs)
  for name in c.reads - set(ins) - {"n"}: ins[name] = np.zeros(N, dtype=np.uint64)
  return OpState(**ins)

def test_merged_ops_exist_and_match_their_dword_reads():
  ops = list(_merged_ops())
  assert len(ops) >= 10, [n for n, _ in ops]   # distinct sources: B96/B128 global, flat, scratch and DS loads, DS 2-address loads
  buf = np.arange(1 << 14, dtype=np.uint32)
  mm = MemoryMap()
  base = buf.ctypes.data
  mm.map(base, buf.nbytes, backing=buf.view(np.uint8).reshape(-1))
  rng = np.random.default_rng(3)
  for name, c in ops:
    merged, expanded = _fn(c.source, name), _fn(_expanded(c.source), name + " expanded")
    assert merge(_expanded(c.source)) == c.source   # merging the written-out form gives the generated source back
    outs = [n for n in sorted(c.writes) if n in ("VDATA", "RETURN_DATA")]
    addr = np.uint64(base) + (rng.integers(0, 2000, N) * 4).astype(np.uint64)
    for make in (Recorder, lambda: GlobalMemory(mm, DispatchStats())):
      a, b = make(), make()
      sa, sb = _state(c, a, addr.copy()), _state(c, b, addr.copy())
      merged(sa); expanded(sb)
      for o in outs: np.testing.assert_array_equal(getattr(sa, o), getattr(sb, o), err_msg=name)
      if isinstance(a, Recorder): assert a.calls == b.calls, name
      else: assert a.stats.bytes_read == b.stats.bytes_read, name
    for size, at_once in ((4096, True), (4, False)):   # Located: spans that hold every read (read at once), spans that do not
      results, fast = [], []
      real = Located.read_words
      def spy(self, addrs, k):
        fast.append((r := real(self, addrs, k)) is not None)
        return r
      Located.read_words = spy
      try:
        for fn in (merged, expanded):
          g = GlobalMemory(mm, DispatchStats())
          mem = locate(g, addr, 0, size, False)
          assert isinstance(mem, Located)
          st = _state(c, mem, addr.copy())
          fn(st)
          results.append(([np.asarray(getattr(st, o)).copy() for o in outs], g.stats.bytes_read))
      finally: Located.read_words = real
      assert fast and all(f == at_once for f in fast), (name, fast)
      for x, y in zip(results[0][0], results[1][0]): np.testing.assert_array_equal(x, y, err_msg=name)
      assert results[0][1] == results[1][1], name

HEAD = "def op(st):\n  V = np.zeros((n, 2), np.uint32)\n"

@pytest.mark.parametrize("reads", ["V[:, 0] = mread(MEM, A, 4, n)\n  V[:, 1] = mread(MEM, B + 4, 4, n)",         # another base
                                   "V[:, 0] = mread(MEM, A, 4, n)\n  V[:, 1] = mread(MEM, A + 8, 4, n)",         # a gap
                                   "V[:, 1] = mread(MEM, A, 4, n)\n  V[:, 0] = mread(MEM, A + 4, 4, n)",         # columns out of order
                                   "V[:, 0] = mread(MEM, A, 4, n, m)\n  V[:, 1] = mread(MEM, A + 4, 4, n, m)"])  # masked reads
def test_reads_that_are_not_one_run_stay_apart(reads):
  src = HEAD + "  " + reads + "\n"
  assert merge(src) == src

# ---- scalar ops: `T = sread_words(MEM, A, K)` against the K dword reads it stands for ----
from emu.amd.api import GPUMemoryFault  # noqa: E402
from emu.amd.mem_access import ScalarMemory  # noqa: E402
from emu.pcode.wide_reads import merge_scalar  # noqa: E402

M64 = (1 << 64) - 1

def _scalar_expanded(src:str) -> str:
  """`src` with each `T = sread_words(MEM, A, K)` written out as the dword reads it stands for: T = MEM.read(A, 4), then
  T = (T & low bits) | (MEM.read((A + 4 j) & M64, 4) << 32 j)."""
  class Expand(ast.NodeTransformer):
    def visit_Assign(self, node):
      v = node.value
      if not (isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == "sread_words"): return node
      mem, base, k = v.args
      t = node.targets[0].id
      read = lambda a: ast.Call(ast.Attribute(mem, "read", ast.Load()), [a, ast.Constant(4)], [])   # noqa: E731
      out = [ast.Assign([ast.Name(t, ast.Store())], read(base), lineno=0)]
      for j in range(1, k.value):
        word = ast.BinOp(read(ast.BinOp(ast.BinOp(base, ast.Add(), ast.Constant(4 * j)), ast.BitAnd(), ast.Constant(M64))), ast.LShift(),
                         ast.Constant(32 * j))
        keep = ast.BinOp(ast.Name(t, ast.Load()), ast.BitAnd(), ast.Constant((1 << (32 * j)) - 1))
        out.append(ast.Assign([ast.Name(t, ast.Store())], ast.BinOp(keep, ast.BitOr(), word), lineno=0))
      return out
  return ast.unparse(ast.fix_missing_locations(Expand().visit(ast.parse(src)))) + "\n"

class ScalarRecorder:
  """A scalar memory without read_dwords: each dword derived from its address; calls are logged."""
  def __init__(self): self.calls = []
  def read(self, addr, nbytes):
    self.calls.append((addr, nbytes))
    return (addr * 0x9E3779B1 + nbytes) & ((1 << (8 * nbytes)) - 1)

def _run_scalar(fn, c, mem, addr):
  st = OpState(ADDR=addr, MEM=mem, **{n: 0 for n in c.reads - {"ADDR", "MEM"}})
  try: fn(st)
  except GPUMemoryFault as e: return ("fault", e.addr)
  return tuple(int(getattr(st, n)) for n in sorted(c.writes))

def test_merged_scalar_reads_match_their_dword_reads():
  ops = list(_merged_ops("scalar", "sread_words"))
  assert len(ops) >= 8, [n for n, _ in ops]   # distinct sources: s_load of 2-16 dwords on every ISA (s_buffer_load shares them)
  a_buf, b_buf = np.arange(256, dtype=np.uint32), np.arange(1000, 1256, dtype=np.uint32)
  one, two = MemoryMap(), MemoryMap()
  one.map(0x10000, 1024, backing=a_buf.view(np.uint8).reshape(-1))
  two.map(0x10000, 1024, backing=a_buf.view(np.uint8).reshape(-1))
  two.map(0x10400, 1024, backing=b_buf.view(np.uint8).reshape(-1))   # adjacent: a run may straddle the two mappings
  for name, c in ops:
    merged, expanded = _fn(c.source, name), _fn(_scalar_expanded(c.source), name + " expanded")
    assert merge_scalar(_scalar_expanded(c.source)) == c.source, name
    a, b = ScalarRecorder(), ScalarRecorder()
    assert _run_scalar(merged, c, a, 0x10040) == _run_scalar(expanded, c, b, 0x10040) and a.calls == b.calls, name
    for mm, addr in ((one, 0x10040), (two, 0x103f8), (one, 0x103f8), (one, 0x20000)):   # inside, straddling, running off, unmapped
      sa, sb = ScalarMemory(mm, DispatchStats()), ScalarMemory(mm, DispatchStats())
      assert _run_scalar(merged, c, sa, addr) == _run_scalar(expanded, c, sb, addr), (name, hex(addr))
      assert sa.stats.bytes_read == sb.stats.bytes_read, (name, hex(addr))
