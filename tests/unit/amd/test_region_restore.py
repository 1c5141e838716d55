"""Native regions an earlier process compiled (emu.amd.steps.Program.region, regions.restored): found by their code bytes and the
16 bytes after them, they run natively without their steps being loaded; the steps load only when something needs them (a wave
handed back to the numpy path), code that differs anywhere in those bytes is not taken for them, and a dispatch whose code was
rewritten in place does not reuse them."""
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.rdna3.ins import s, v, v_add_f32_e32, v_mul_f32_e32, v_add_nc_u32_e32, v_mov_b32_e32, global_store_b32, s_endpgm
from emu import native
from emu.amd import step_build, regions, run_program
from emu.amd.step_cache import STEP_CACHE

pytestmark = pytest.mark.skipif(not native.available(), reason=f"no native code here: {native.NATIVE.why}")
LANES = np.arange(32)
# inf + inf, then 0 * inf = NaN; v4 = lane + 7, v6 = lane + 10, v7 = 2 v6 (20 bytes: more than the 16 it is first looked up by)
PROG = [v_add_f32_e32(v[2], v[1], v[1]), v_mul_f32_e32(v[3], 0, v[2]), v_add_nc_u32_e32(v[4], 7, v[0]), v_add_nc_u32_e32(v[6], 3, v[4]),
        v_add_nc_u32_e32(v[7], v[6], v[6])]

def f32(x) -> np.ndarray: return np.asarray(x, dtype=np.float32).view(np.uint32)

@pytest.fixture
def loaded(monkeypatch):
  """The instruction names whose steps were loaded (step_build.load_step: fetched for the numpy path, or a stand-in's) since cleared."""
  names, real = [], step_build.load_step
  monkeypatch.setattr(step_build, "load_step", lambda data, spec, pc: (s := real(data, spec, pc), names.append(s.instr.name.upper()))[0])
  return names

@pytest.fixture
def sizes(monkeypatch):
  """The instruction counts of the regions that ran natively, in order."""
  counts, real = [], regions.Region.run
  monkeypatch.setattr(regions.Region, "run", lambda self, m, ws, *a: (r := real(self, m, ws, *a), r is not None and counts.append(self.count))[0])
  return counts

def _compile_in_an_earlier_process(fresh_process, cache:str, prog:list):
  fresh_process(cache)
  run_program(prog, vgprs={0: LANES, 1: f32(1.0)})
  STEP_CACHE.write()
  fresh_process(cache)

def test_a_later_process_runs_it_without_loading_its_steps(native_runs, fresh_process, tmp_path, loaded, sizes):
  _compile_in_an_earlier_process(fresh_process, str(tmp_path), PROG)
  native_runs.clear(), sizes.clear(), loaded.clear()
  st = run_program(PROG, waves=2, vgprs={0: LANES, 1: f32(LANES)})
  assert native_runs == [2] and sizes == [5] and loaded == ["S_ENDPGM"]   # only the instruction after it was loaded
  assert (st.vgpr[:, :, 3] == 0).all() and (st.vgpr[:, :, 7] == 2 * (LANES + 10)).all()
  # a NaN in lane 5 of each wave: the steps load and run on the numpy path for those waves, giving what EMU_REGIONS=0 gives
  loaded.clear()
  nan_in = {0: LANES, 1: f32(np.where(LANES == 5, np.float32(np.inf), np.float32(1.0)))}
  st = run_program(PROG, waves=2, vgprs=nan_in)
  assert sorted(loaded) == ["S_ENDPGM", "V_ADD_F32_E32"] + ["V_ADD_NC_U32_E32"] * 3 + ["V_MUL_F32_E32"]
  with pytest.MonkeyPatch.context() as m:
    m.setenv("EMU_REGIONS", "0")
    want = run_program(PROG, waves=2, vgprs=nan_in)
  np.testing.assert_array_equal(st.vgpr_store, want.vgpr_store)
  assert np.isnan(st.vgpr[0, 5, 3].view(np.float32))

def test_code_that_goes_on_past_it_is_not_taken_for_it(native_runs, fresh_process, tmp_path, sizes):
  # the same five instructions followed by a sixth that joins: another candidate run (the 16 bytes after the five differ), so the
  # five-instruction region is not restored for it; it becomes a six-instruction region of its own
  _compile_in_an_earlier_process(fresh_process, str(tmp_path), PROG)
  sizes.clear()
  longer = PROG + [v_add_nc_u32_e32(v[5], 1, v[7])]
  st = run_program(longer, vgprs={0: LANES, 1: f32(1.0)})
  assert sizes == [6] and (st.vgpr[0, :, 5] == 2 * (LANES + 10) + 1).all()

def _kernel(value:int) -> np.ndarray:
  """v1 = value + lane; out[lane] = v1 (user SGPRs s[0:1] = out)."""
  prog = [v_mov_b32_e32(v[1], value), v_add_nc_u32_e32(v[1], v[1], v[0]), v_add_nc_u32_e32(v[2], v[0], v[0]), v_add_nc_u32_e32(v[2], v[2], v[2]),
          global_store_b32(addr=v[2], data=v[1], saddr=s[0:1], offset=0), s_endpgm()]
  return np.frombuffer(b"".join(i.to_bytes() for i in prog) + bytes(64), dtype=np.uint8).copy()

def test_code_rewritten_in_place_after_a_dispatch_is_not_reused(native_runs, fresh_process, tmp_path, loaded):
  # the next dispatch checks every byte the restored region was found by (Program.seal), not only the steps it loaded
  from emu.amd.api import Dispatch
  from emu.amd.gpu import AMDGPU
  from emu.amd.kernel import Buffers
  def dispatch_once(value:int | None=None) -> np.ndarray:
    if value is not None: code[:] = _kernel(value)
    out.fill(0)
    gpu.dispatch(Dispatch(code_addr=addr, grid=(1, 1, 1), workgroup=(32, 1, 1), user_sgprs=[out_addr & 0xffffffff, out_addr >> 32], rsrc2=2 << 1))
    return out.copy()
  for process in range(2):   # the first compiles the region, the second restores it
    fresh_process(str(tmp_path))
    bufs = Buffers()
    addr, out_addr = bufs.add(_kernel(5), "code"), bufs.add(np.zeros(32, dtype=np.uint32), "out")
    code, out = bufs.keep
    gpu = AMDGPU("gfx1100", bufs.mem, timing=False)
    loaded.clear()
    assert (dispatch_once() == 5 + LANES).all()
    STEP_CACHE.write()
  assert "V_MOV_B32" not in loaded and native_runs == [1, 1]   # restored, not fetched
  assert (dispatch_once(9) == 9 + LANES).all() and native_runs == [1, 1, 1]

def test_a_restored_region_times_as_the_numpy_path_does(native_runs, fresh_process, tmp_path, loaded, monkeypatch):
  # the timing model classifies a restored region's stand-in steps when it replays: the same cycles and instruction count as
  # without regions
  from emu.amd.api import Dispatch
  from emu.amd.gpu import AMDGPU
  from emu.amd.kernel import Buffers
  def dispatch() -> tuple[int, int]:
    bufs = Buffers()
    addr, out_addr = bufs.add(_kernel(5), "code"), bufs.add(np.zeros(32, dtype=np.uint32), "out")
    stats = AMDGPU("gfx1100", bufs.mem, timing=True).dispatch(
      Dispatch(code_addr=addr, grid=(1, 1, 1), workgroup=(32, 1, 1), user_sgprs=[out_addr & 0xffffffff, out_addr >> 32], rsrc2=2 << 1))
    assert (bufs.keep[1] == 5 + LANES).all()
    return stats.cycles, stats.wave_instructions
  fresh_process(str(tmp_path))
  dispatch()
  STEP_CACHE.write()
  fresh_process(str(tmp_path))
  native_runs.clear(), loaded.clear()
  restored = dispatch()
  assert native_runs == [1] and "V_MOV_B32_E32" in loaded   # run natively, its steps loaded for the replay only
  monkeypatch.setenv("EMU_REGIONS", "0")
  assert restored == dispatch()

def test_a_restored_region_leaves_its_stores_to_the_numpy_path_where_the_table_cannot_vouch_for_them(native_runs, fresh_process, tmp_path, loaded):
  # compiled with its store in an earlier process; restored where the output is host memory the process may unmap (not in the
  # native table): every wave falls back from its store's check, its steps load, and the numpy path runs them (stores last)
  from emu.common.memory import MemoryMap
  prog = [v_add_nc_u32_e32(v[1], 5, v[0]), v_add_nc_u32_e32(v[2], v[0], v[0]), v_add_nc_u32_e32(v[2], v[2], v[2]),
          global_store_b32(addr=v[2], data=v[1], saddr=s[0:1], offset=0)]
  for host in (False, True):
    fresh_process(str(tmp_path))
    out, mem = np.zeros(32, dtype=np.uint32), MemoryMap()
    mem.map(out.ctypes.data, out.nbytes, backing=out.view(np.uint8), present=(lambda: True) if host else None)
    native_runs.clear(), loaded.clear()
    st = run_program(prog, memory=mem, sgprs={0: out.ctypes.data}, vgprs={0: LANES}, waves=2)
    assert (out == LANES + 5).all() and st.stats.bytes_written == 2 * 4 * 32 and native_runs == [2]
    STEP_CACHE.write()
  assert all(isinstance(x, regions.LazyStep) for r in regions._built.values() if r for _, x in r.steps)   # restored, not rebuilt
  assert sorted(loaded) == ["GLOBAL_STORE_B32", "S_ENDPGM"] + ["V_ADD_NC_U32_E32"] * 3   # its stand-ins loaded once needed
