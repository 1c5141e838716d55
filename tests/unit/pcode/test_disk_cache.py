"""The generated-code disk cache (emu.pcode.cache): a later process loads an op compiled (one record of its source, meta and
bytecode) instead of reading its source and compiling it again, and a record that does not load, or belongs to other pcode text
or another generator, is never used."""
import marshal
import pytest
from tinygrad.runtime.autogen.amd.rdna3.enum import VOP2Op
from emu.pcode import cache, compiler

@pytest.fixture
def fresh(tmp_path, monkeypatch):
  """An empty cache folder, and compile() spied on (the source compilations the compiler makes)."""
  monkeypatch.setenv("EMU_PCODE_CACHE", str(tmp_path / "pcode"))
  compiler.compile_op.cache_clear()
  compiled = []
  monkeypatch.setattr(compiler, "compile", lambda *a: compiled.append(a[1]) or compile(*a), raising=False)
  yield tmp_path / "pcode", compiled
  compiler.compile_op.cache_clear()

def _add(op) -> int:
  """S0 + S1 as the op computes it (numpy over two lanes)."""
  import numpy as np
  from emu.pcode.abi import OpState
  st = OpState(n=2, S0=np.array([3, 0xffffffff], dtype=np.uint64), S1=np.array([4, 2], dtype=np.uint64))
  op.fn(st)
  return [int(x) & 0xffffffff for x in st.D0]

def test_a_later_process_loads_the_compiled_op(fresh):
  # the process that generates the source compiles it and writes no record (one write is enough for it); the next reads the
  # source, compiles it once more and keeps the record; every later one loads the record and compiles nothing
  folder, compiled = fresh
  assert _add(compiler.compile_op("gfx1100", VOP2Op.V_ADD_NC_U32_E32)) == [7, 1] and len(compiled) == 1
  assert not (folder / "bytecode").exists()
  for _ in range(3):
    compiler.compile_op.cache_clear()   # a new process
    assert _add(compiler.compile_op("gfx1100", VOP2Op.V_ADD_NC_U32_E32)) == [7, 1]
  assert compiled == ["<pcode rdna3 V_ADD_NC_U32_E32>"] * 2 and len(list((folder / "bytecode").glob("*.marshal"))) == 1

def test_a_record_that_does_not_load_is_compiled_again(fresh):
  folder, compiled = fresh
  for _ in range(2):   # generated, then compiled and kept
    compiler.compile_op.cache_clear()
    compiler.compile_op("gfx1100", VOP2Op.V_ADD_NC_U32_E32)
  [kept] = list((folder / "bytecode").glob("*.marshal"))
  for torn in (b"\x00torn", marshal.dumps(("src", {}, "not code")), marshal.dumps([1, 2, 3])):
    kept.write_bytes(torn)
    compiler.compile_op.cache_clear()
    n = len(compiled)
    assert _add(compiler.compile_op("gfx1100", VOP2Op.V_ADD_NC_U32_E32)) == [7, 1] and len(compiled) == n + 1
    assert cache.load_compiled("rdna3", VOP2Op.V_ADD_NC_U32_E32, compiler.pcode_table("rdna3")[VOP2Op.V_ADD_NC_U32_E32],
                               compiler.GENERATOR_VERSION) is not None   # written again, whole

def test_a_record_is_keyed_by_its_pcode_and_generator(fresh):
  op, code = VOP2Op.V_ADD_NC_U32_E32, compile("def op(st): pass\n", "<t>", "exec")
  cache.keep_compiled("rdna3", op, "D0 = S0 + S1", "g1", "def op(st): pass\n", {"kind": "vector"}, code)
  assert cache.load_compiled("rdna3", op, "D0 = S0 - S1", "g1") is None and cache.load_compiled("rdna3", op, "D0 = S0 + S1", "g2") is None
  assert cache.load_compiled("rdna4", op, "D0 = S0 + S1", "g1") is None
  src, meta, back = cache.load_compiled("rdna3", op, "D0 = S0 + S1", "g1")
  assert (src, meta, back.co_filename) == ("def op(st): pass\n", {"kind": "vector"}, "<t>")
