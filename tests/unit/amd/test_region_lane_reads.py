"""v_readfirstlane and v_readlane in native regions (emu.amd.regions.lane_read): the whole-wave op's Python-int pcode lowered per
wave (lanes_ir's python_ints) gives the numpy path's registers (`both`), runs inside one region with the VALU code around it, and
reads the lane the ISA names: the lowest lane set in EXEC as the region left it (lane 0 when EXEC is 0), or the lane an SGPR or
constant selects, modulo the wave size."""
import importlib
import numpy as np
import pytest
from emu import native

pytestmark = pytest.mark.skipif(not native.available(), reason=f"no native code here: {native.NATIVE.why}")
LANES = np.arange(64)
ISA = {"gfx1100": "rdna3", "gfx1201": "rdna4", "gfx942": "cdna"}

def _ins(arch:str): return importlib.import_module(f"tinygrad.runtime.autogen.amd.{ISA[arch]}.ins")

def _add(ins, *a): return (ins.v_add_u32_e32 if hasattr(ins, "v_add_u32_e32") else ins.v_add_nc_u32_e32)(*a)

def _sdst(arch:str, ins, k:int):
  """SGPR k as a lane read's destination: the cdna DSL types that field as a VGPR, and its number names the SGPR (decode.py)."""
  return ins.v[k] if arch == "gfx942" else ins.s[k]

def _first(mask:int) -> int: return (mask & -mask).bit_length() - 1 if mask else 0

CASES = [(arch, lanes, ex) for arch, waves in (("gfx1100", (32, 64)), ("gfx1201", (32, 64)), ("gfx942", (64,))) for lanes in waves
         for ex in (0, 1, 1 << 5, 1 << (lanes - 1), 0xf0f0f0f0 & ((1 << lanes) - 1), (1 << lanes) - 1 - 1)]

@pytest.mark.parametrize("arch,lanes,ex", CASES)
@pytest.mark.parametrize("form", ["e32", "e64"])
def test_lane_reads_join_the_region_and_read_the_lane_the_isa_names(native_runs, region_calls, both, arch, lanes, ex, form):
  ins = _ins(arch)
  first = getattr(ins, f"v_readfirstlane_b32_{form}")
  s, v = ins.s, ins.v
  prog = [_add(ins, v[2], v[1], v[1]),          # v2 written in the region: the lane read sees the region's value
          first(_sdst(arch, ins, 5), v[2]),
          ins.v_readlane_b32(_sdst(arch, ins, 6), v[1], s[9]),   # lane s9 = 77: 77 mod the wave size
          ins.v_readlane_b32(_sdst(arch, ins, 7), v[1], 3),
          _add(ins, v[3], s[5], v[1])]         # the SGPR result read by a VALU op of the same region
  base = (LANES[:lanes] * 7 + 3).astype(np.uint32)
  st = both(prog, arch=arch, lanes=lanes, vgprs={1: base, 2: 0xdead, 3: 0xbeef}, sgprs={9: 77}, exec_mask=ex)
  assert region_calls == [(5, 1)], "the five instructions in one native region"
  on = np.array([(ex >> i) & 1 for i in range(lanes)], dtype=bool)
  doubled = np.where(on, 2 * base, 0xdead)
  assert int(st.sgpr[0, 5]) == int(doubled[_first(ex)])
  assert int(st.sgpr[0, 6]) == int(base[77 % lanes]) and int(st.sgpr[0, 7]) == int(base[3])
  assert (st.vgpr[0, :, 3] == np.where(on, (int(doubled[_first(ex)]) + base.astype(np.int64)) & 0xffffffff, 0xbeef)).all()

@pytest.mark.parametrize("lanes", [32, 64])
def test_readfirstlane_after_the_region_narrows_exec(native_runs, region_calls, both, lanes):
  """EXEC written by a scalar op of the region (s_and_saveexec) is the one the lane read looks at, per wave (two waves, two masks)."""
  ins = _ins("gfx1100")
  s, v = ins.s, ins.v
  saveexec = ins.s_and_saveexec_b64(s[20:21], s[10:11]) if lanes == 64 else ins.s_and_saveexec_b32(s[20], s[10])
  masks = [0xff00ff00 << (lanes - 32), 0x30]
  prog = [saveexec, ins.v_readfirstlane_b32_e32(s[5], v[1]), _add(ins, v[2], s[5], v[1])]
  base = (LANES[:lanes] * 5 + 1).astype(np.uint32)
  st = both(prog, lanes=lanes, waves=2, vgprs={1: base, 2: 0}, sgprs={10: masks}, exec_mask=(1 << lanes) - 1 - 1)
  assert region_calls == [(3, 2)]
  for w, mask in enumerate(masks):
    want = int(base[_first(mask & ((1 << lanes) - 2))])
    assert int(st.sgpr[w, 5]) == want
    assert st.get_mask(w, 126) == mask & ((1 << lanes) - 2)   # (EXEC: s126)
