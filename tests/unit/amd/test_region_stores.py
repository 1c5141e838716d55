"""Global stores inside native regions (emu.amd.regions): every plain GLOBAL store op of rdna3, rdna4 and CDNA in both address forms
writes what the numpy path writes (EMU_REGIONS=0 is the reference, hand-computed values where they are simple), byte for byte,
with lanes whose spans overlap (the numpy path's order: each of the op's writes for every lane in turn, the last lane winning),
inactive lanes' addresses never touched, and the same bytes counted; a store the writable native table cannot vouch for (read-only,
host memory, across two mappings, out of range) leaves every store of the batch to the numpy path: the same memory or the same
fault, with memory untouched. Stores end a region (they write once every wave has run), and EMU_REGIONS=check compares memory."""
import numpy as np
import pytest
from emu import native
from emu.amd import region_ir, regions, run_program
from emu.amd.api import GPUEmulatorError, GPUMemoryFault
from emu.common.memory import MemoryMap
from emu.amd.semantics import get_op
from test_region_loads import ISA, _ins, global_ops, load

pytestmark = pytest.mark.skipif(not native.available(), reason=f"no native code here: {native.NATIVE.why}")

def plain_stores(arch) -> list:
  """The store ops regions take (regions.plain_store's op test), by enum member."""
  return global_ops(arch, lambda op, c: c.kind == "vector" and c.mem == "w" and not c.mem_rmw and not c.writes and
                    c.reads <= regions.STORE_READS and "ADDTID" not in op.name and "BLOCK" not in op.name)

def store(arch, op, data:int, addr:int, saddr:int|None, offset:int):
  """The GLOBAL store `op` of VGPRs data.. to the address in addr.. (+ the SGPR pair saddr), + offset."""
  mod, cls, _, addr_f, off_f = _ins(arch)
  width = max(1, get_op(arch, op).widths.get("VDATA", 32) // 32)
  data_f = "vsrc" if arch == "gfx1201" else "data"
  base = mod.s[saddr:saddr + 1] if saddr is not None else getattr(mod, {"gfx942": "EXEC_HI"}.get(arch, "NULL"))
  for n in (2, 1):
    try: return cls(op, saddr=base, **{data_f: mod.v[data:data + width - 1], addr_f: mod.v[addr:addr + n - 1], off_f: offset})
    except TypeError:
      if n == 1: raise

def stored(monkeypatch, prog, make_memory, **kw):
  """Run prog with native regions and on the numpy path (EMU_REGIONS=0), each on fresh memory from make_memory() -> (MemoryMap,
  [arrays its ranges view], run_program arguments that depend on it); registers, memory and traffic must agree byte for byte.
  (state, copies of the arrays after it) of the native run."""
  out = []
  for flag in ("1", "0"):
    monkeypatch.setenv("EMU_REGIONS", flag)
    mem, arrays, more = make_memory()
    out.append((run_program(prog, memory=mem, **kw, **more), [a.copy() for a in arrays]))   # (copies: the arrays may be shared)
  (got, got_mem), (want, want_mem) = out
  for name in ("vgpr_store", "sgpr", "scc", "status"): np.testing.assert_array_equal(getattr(got, name), getattr(want, name), err_msg=name)
  for a, b in zip(got_mem, want_mem): np.testing.assert_array_equal(a, b, err_msg="memory")
  assert (got.stats.bytes_read, got.stats.bytes_written) == (want.stats.bytes_read, want.stats.bytes_written)
  monkeypatch.delenv("EMU_REGIONS")
  return out[0]


@pytest.mark.parametrize("arch", sorted(ISA))
@pytest.mark.parametrize("sgpr_base", [False, True])
def test_every_plain_store_op_matches_the_numpy_path(monkeypatch, native_runs, arch, sgpr_base):
  lanes = 64 if arch == "gfx942" else 32
  ops = plain_stores(arch)
  assert len(ops) >= 8, [o.name for o in ops]   # b8 b16 b32 b64 b96 b128 and the two d16_hi forms
  rng = np.random.default_rng(1)
  off = (np.arange(lanes) * 7 % (6 * lanes)).astype(np.uint64)   # unaligned, out of lane order, spans overlapping their neighbours'
  exec_mask = (1 << lanes) - 1 - (1 << 3) - (1 << (lanes - 2))
  data = {10 + j: rng.integers(0, 1 << 32, lanes, dtype=np.uint64).astype(np.uint32) for j in range(4)}
  buf = np.zeros(8 * lanes + 64, dtype=np.uint8)   # one buffer at one address for both runs (the registers hold it)
  for op in ops:
    def memory():
      mem = MemoryMap()
      buf[:] = np.random.default_rng(0).integers(0, 256, buf.size)
      mem.map(buf.ctypes.data, buf.nbytes, name="data", backing=buf)
      addr = np.uint64(buf.ctypes.data) + off
      vgprs = {**data, 2: (addr & np.uint64(0xffffffff)).astype(np.uint32), 3: (addr >> np.uint64(32)).astype(np.uint32)}
      if sgpr_base: vgprs[2] = off.astype(np.uint32)
      for lane in (3, lanes - 2):   # inactive lanes point nowhere: never written
        vgprs[2][lane], vgprs[3][lane] = 0xfff00000, 0
      return mem, [buf], {"vgprs": vgprs, "sgprs": {20: buf.ctypes.data} if sgpr_base else {}}
    native_runs.clear()
    prog = [store(arch, op, 10, 2, 20 if sgpr_base else None, 8)]
    st, (buf,) = stored(monkeypatch, prog, memory, arch=arch, lanes=lanes, exec_mask=exec_mask)
    assert native_runs == [1], op.name
    on = [i for i in range(lanes) if (exec_mask >> i) & 1]
    assert st.stats.bytes_written > 0
    if op.name in ("GLOBAL_STORE_B128", "GLOBAL_STORE_DWORDX4"):   # dword j of every lane in turn: the last lane to reach a byte wins
      assert st.stats.bytes_written == 16 * len(on)
      want = np.random.default_rng(0).integers(0, 256, 8 * lanes + 64).astype(np.uint8)
      for j in range(4):
        for i in on: want[int(off[i]) + 8 + 4 * j:int(off[i]) + 12 + 4 * j] = np.array([data[10 + j][i]], dtype="<u4").view(np.uint8)
      np.testing.assert_array_equal(buf, want)

def test_loads_arithmetic_and_stores_share_one_region(native_runs, monkeypatch):
  from tinygrad.runtime.autogen.amd.rdna3.ins import v, s, v_lshlrev_b32_e32, v_add_co_u32, v_add_co_ci_u32, v_mul_f32_e32, v_add_nc_u32_e32
  from tinygrad.runtime.autogen.amd.rdna3.enum import GLOBALOp
  x, out = np.arange(128, dtype=np.float32) * 0.5, np.zeros(128, dtype=np.float32)
  def memory():
    mem = MemoryMap()
    out[:] = 0
    mem.map(x.ctypes.data, x.nbytes, backing=x.view(np.uint8), writable=False)
    mem.map(out.ctypes.data, out.nbytes, backing=out.view(np.uint8))
    return mem, [out], {"sgprs": {20: x.ctypes.data, 22: out.ctypes.data}}
  prog = [v_lshlrev_b32_e32(v[4], 4, v[1]), v_add_co_u32(v[6], s[10], s[20], v[4]), v_add_co_ci_u32(v[7], s[10], s[21], 0, s[10]),
          load("gfx1100", GLOBALOp.GLOBAL_LOAD_B32, 8, 6, None, 4), v_mul_f32_e32(v[9], 2.0, v[8]),
          store("gfx1100", GLOBALOp.GLOBAL_STORE_B32, 9, 4, 22, 0), store("gfx1100", GLOBALOp.GLOBAL_STORE_B32, 8, 4, 22, 4),
          v_add_nc_u32_e32(v[9], 1, v[1]), store("gfx1100", GLOBALOp.GLOBAL_STORE_B32, 9, 4, 22, 8)]   # v9 again, after its store
  st, (out,) = stored(monkeypatch, prog, memory, vgprs={1: np.arange(32)})
  assert native_runs == [1, 1]   # a VALU op after a store starts another region (stores write once every wave has run)
  lanes = np.arange(32)
  assert (out[4 * lanes] == 2 * x[4 * lanes + 1]).all() and (out[4 * lanes + 1] == x[4 * lanes + 1]).all()
  assert (out.view(np.uint32)[4 * lanes + 2] == lanes + 1).all()
  assert st.stats.bytes_written == 3 * 4 * 32

@pytest.mark.parametrize("case", ["read-only", "host memory", "two mappings", "out of range"])
def test_stores_the_table_cannot_vouch_for_take_the_numpy_path(monkeypatch, native_runs, case):
  from tinygrad.runtime.autogen.amd.rdna3.enum import GLOBALOp
  whole = np.zeros(256, dtype=np.uint32)
  def memory():
    mem = MemoryMap()
    whole[:] = 0
    a, b = whole[:64], whole[64:128]   # adjacent
    mem.map(a.ctypes.data, a.nbytes, backing=a.view(np.uint8), writable=case != "read-only")
    mem.map(b.ctypes.data, b.nbytes, backing=b.view(np.uint8), present=(lambda: True) if case == "host memory" else None)
    return mem, [whole], {"sgprs": {20: a.ctypes.data}}
  lanes = np.arange(32)
  at = {"read-only": 4 * lanes, "host memory": 256 + 8 * lanes, "two mappings": 128 + 8 * lanes, "out of range": 4 * lanes}[case]
  prog = [store("gfx1100", GLOBALOp.GLOBAL_STORE_B64, 10, 2, 20, 0)]
  kw = dict(vgprs={2: at.astype(np.uint32), 10: lanes + 100, 11: lanes + 200}, waves=2)
  if case in ("read-only",):
    faults = []
    for flag in ("1", "0"):
      monkeypatch.setenv("EMU_REGIONS", flag)
      mem, _, more = memory()
      with pytest.raises(GPUMemoryFault) as e: run_program(prog, memory=mem, **more, **kw)
      faults.append(str(e.value))
      assert not whole.any()   # nothing moved
    assert faults[0] == faults[1] and "write" in faults[0]
    return
  if case == "out of range":   # a region before the store moves every lane 1 MiB past both mappings
    from tinygrad.runtime.autogen.amd.rdna3.ins import v, s, v_add_nc_u32_e32
    prog = [v_add_nc_u32_e32(v[2], s[30], v[2])] + prog
    faults = []
    for flag in ("1", "0"):
      monkeypatch.setenv("EMU_REGIONS", flag)
      mem, _, more = memory()
      with pytest.raises(GPUMemoryFault) as e: run_program(prog, memory=mem, sgprs={**more["sgprs"], 30: 0x100000}, **kw)
      faults.append(str(e.value))
      assert not whole.any()   # the fault leaves memory untouched
    assert faults[0] == faults[1]
    return
  _, (mem_after,) = stored(monkeypatch, prog, memory, **kw)
  assert native_runs == [2]   # the region ran: its stores went the numpy way
  got = mem_after[at[0] // 4:at[0] // 4 + 64].reshape(-1)
  assert (got.reshape(32, 2)[:, 0] == lanes + 100).all()

def test_check_mode_compares_what_stores_write(monkeypatch, native_runs):
  """EMU_REGIONS=check runs each batch natively and on the numpy path: a native store that writes other bytes is reported."""
  from tinygrad.runtime.autogen.amd.rdna3.enum import GLOBALOp
  out = np.zeros(32, dtype=np.uint32)
  mem = MemoryMap()
  mem.map(out.ctypes.data, out.nbytes, backing=out.view(np.uint8))
  prog = [store("gfx1100", GLOBALOp.GLOBAL_STORE_B32, 10, 2, 20, 0)]
  kw = dict(memory=mem, sgprs={20: out.ctypes.data}, vgprs={2: 4 * np.arange(32), 10: np.arange(32) + 7})
  monkeypatch.setattr(regions, "CHECK", True)
  run_program(prog, **kw)   # the same bytes: no complaint
  assert (out == np.arange(32) + 7).all() and native_runs == [1]
  wrong = region_ir.STORE_HELPERS.replace("%v4 = trunc i64 %val to i32", "%v4.x = trunc i64 %val to i32\n  %v4 = xor i32 %v4.x, 1")
  monkeypatch.setattr(region_ir, "STORE_HELPERS", wrong)   # dword stores flip bit 0
  monkeypatch.setattr(regions, "_built", {})   # (a region of these bytes compiled with the helper flipped stays out of later tests)
  with pytest.raises(GPUEmulatorError, match=f"stores differ from the numpy path.s at address {out.ctypes.data:#x}"): run_program(prog, **kw)
