"""The generated-code disk cache (emu.pcode.cache): a later process loads an op's bytecode instead of compiling its source again,
and bytecode that does not load, or belongs to other source, is never used."""
import marshal
from pathlib import Path
import pytest
from tinygrad.runtime.autogen.amd.rdna3.enum import VOP2Op
from emu.pcode import cache, compiler

@pytest.fixture
def fresh(tmp_path, monkeypatch):
  """An empty cache folder, and compile() spied on (the source compilations the cache makes)."""
  monkeypatch.setenv("EMU_PCODE_CACHE", str(tmp_path / "pcode"))
  compiler.compile_op.cache_clear()
  compiled = []
  monkeypatch.setattr(cache, "compile", lambda *a: compiled.append(a[1]) or compile(*a), raising=False)
  yield tmp_path / "pcode", compiled
  compiler.compile_op.cache_clear()

def _add(op) -> int:
  """S0 + S1 as the op computes it (numpy over two lanes)."""
  import numpy as np
  from emu.pcode.abi import OpState
  st = OpState(n=2, S0=np.array([3, 0xffffffff], dtype=np.uint64), S1=np.array([4, 2], dtype=np.uint64))
  op.fn(st)
  return [int(x) & 0xffffffff for x in st.D0]

def test_a_later_process_loads_the_bytecode(fresh):
  # the process that generates the source compiles it (not through the cache: no second file to write); the next compiles it
  # once more and keeps the bytecode; every later one loads it
  folder, compiled = fresh
  assert _add(compiler.compile_op("gfx1100", VOP2Op.V_ADD_NC_U32_E32)) == [7, 1] and compiled == []
  assert not (folder / "bytecode").exists()
  for _ in range(3):
    compiler.compile_op.cache_clear()   # a new process
    assert _add(compiler.compile_op("gfx1100", VOP2Op.V_ADD_NC_U32_E32)) == [7, 1]
  assert compiled == ["<pcode rdna3 V_ADD_NC_U32_E32>"]

def test_bytecode_that_does_not_load_is_compiled_again(fresh):
  folder, compiled = fresh
  for _ in range(2):   # generated, then compiled and kept
    compiler.compile_op.cache_clear()
    compiler.compile_op("gfx1100", VOP2Op.V_ADD_NC_U32_E32)
  [kept] = list((folder / "bytecode").glob("*.marshal"))
  kept.write_bytes(b"\x00torn")
  compiler.compile_op.cache_clear()
  assert _add(compiler.compile_op("gfx1100", VOP2Op.V_ADD_NC_U32_E32)) == [7, 1] and len(compiled) == 2
  marshal.loads(kept.read_bytes())   # written again, whole

def test_bytecode_is_keyed_by_its_source(fresh):
  folder, compiled = fresh
  a = cache.code_object("x = 1\n", "<t>")
  b = cache.code_object("x = 2\n", "<t>")
  ns_a, ns_b = {}, {}
  exec(a, ns_a), exec(b, ns_b)
  assert (ns_a["x"], ns_b["x"]) == (1, 2) and len(list(Path(folder, "bytecode").glob("*.marshal"))) == 2
