"""Code kept between dispatches (emu.amd.steps.ProgramCache): a dispatch of unchanged code fetches nothing again, and any change to
the code it fetched (bytes rewritten in place, the mapping replaced, bytes changed while a dispatch ran) makes the next dispatch
decode afresh, so a stale instruction never runs."""
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.rdna3.ins import s, v, v_mov_b32_e32, v_add_nc_u32_e32, global_store_b32, s_endpgm
from emu.amd.api import Dispatch
from emu.amd.gpu import AMDGPU
from emu.amd.kernel import Buffers
from emu.amd.steps import Program, ProgramCache

def _code(value:int) -> np.ndarray:
  """v1 = value + lane; out[lane] = v1 (user SGPRs s[0:1] = out)."""
  prog = [v_mov_b32_e32(v[1], value), v_add_nc_u32_e32(v[1], v[1], v[0]), v_add_nc_u32_e32(v[2], v[0], v[0]), v_add_nc_u32_e32(v[2], v[2], v[2]),
          global_store_b32(addr=v[2], data=v[1], saddr=s[0:1], offset=0), s_endpgm()]
  return np.frombuffer(b"".join(i.to_bytes() for i in prog) + bytes(64), dtype=np.uint8).copy()

@pytest.fixture
def fetches(monkeypatch):
  """The PCs fetched (Program._load) since the list was last cleared."""
  pcs, real = [], Program._load
  monkeypatch.setattr(Program, "_load", lambda self, pc: (pcs.append(pc), real(self, pc))[1])
  return pcs

def _setup(value:int):
  bufs = Buffers()
  code = bufs.add(_code(value), "code")
  out = bufs.add(np.zeros(32, dtype=np.uint32), "out")
  gpu = AMDGPU("gfx1100", bufs.mem, timing=False)
  d = Dispatch(code_addr=code, grid=(1, 1, 1), workgroup=(32, 1, 1), user_sgprs=[out & 0xffffffff, out >> 32], rsrc2=2 << 1)
  return gpu, d, bufs.keep[0], bufs.keep[1]

def test_unchanged_code_is_not_fetched_again(fetches):
  gpu, d, _, out = _setup(5)
  gpu.dispatch(d)
  assert len(fetches) == 6 and (out == 5 + np.arange(32)).all()
  fetches.clear(), out.fill(0)
  gpu.dispatch(d)
  assert fetches == [] and (out == 5 + np.arange(32)).all()

def test_code_rewritten_in_place_is_decoded_again(fetches):
  gpu, d, code, out = _setup(5)
  gpu.dispatch(d)
  code[:] = _code(9)   # the same mapping, other bytes: v_mov_b32 v1, 9
  fetches.clear()
  gpu.dispatch(d)
  assert len(fetches) == 6 and (out == 9 + np.arange(32)).all()

def test_a_new_mapping_at_the_same_address_is_decoded_again(fetches):
  gpu, d, code, out = _setup(5)
  gpu.dispatch(d)
  replacement = _code(11)
  gpu.memory.unmap(d.code_addr)
  gpu.memory.map(d.code_addr, code.nbytes, name="code again", backing=replacement)
  fetches.clear()
  gpu.dispatch(d)
  assert len(fetches) == 6 and (out == 11 + np.arange(32)).all()

def test_code_changed_while_a_dispatch_ran_is_not_kept():
  # a step decoded from bytes that are gone by the end of the dispatch: the Program cannot be checked later, so it is dropped
  gpu, d, code, _ = _setup(5)
  cache = ProgramCache(gpu.spec, gpu.memory)
  p = cache.get(key := (d.code_addr, 32, 0))
  p.at(d.code_addr)
  code[0] ^= 1
  cache.done(key, p)
  assert cache.get(key) is not p
  p2 = cache.get(key)
  p2.at(d.code_addr)
  cache.done(key, p2)
  assert cache.get(key) is p2   # checked: kept

def test_the_cache_keeps_the_most_recent_programs(monkeypatch):
  gpu, d, _, _ = _setup(5)
  monkeypatch.setattr(ProgramCache, "MAX", 2)
  cache = ProgramCache(gpu.spec, gpu.memory)
  progs = {}
  for k in range(3):
    progs[k] = cache.get((d.code_addr, 32, k))
    progs[k].at(d.code_addr)
    cache.done((d.code_addr, 32, k), progs[k])
  assert cache.get((d.code_addr, 32, 0)) is not progs[0] and cache.get((d.code_addr, 32, 2)) is progs[2]
