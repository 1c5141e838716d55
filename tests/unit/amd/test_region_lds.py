"""DS (LDS) loads and stores inside native regions (emu.amd.regions): every plain DS load and store op of rdna3, rdna4 and CDNA (gfx942, gfx950) gives
the numpy path's registers and LDS bytes (EMU_REGIONS=0 is the reference; hand-worked values for the dword forms): addresses are
the low 32 bits of ADDR + offset, an access past the workgroup's LDS reads 0 and writes nothing, inactive lanes touch nothing,
lanes whose writes overlap write in lane order (the last one wins) and waves in wave order; a DS load never joins a region after
a store (every wave's stores come before any wave's later loads, as in the numpy path's lockstep); each wave reaches its own
workgroup's LDS; EMU_REGIONS=check compares LDS."""
import importlib
import numpy as np
import pytest
from emu import native
from emu.amd import region_ir, regions, run_program
from emu.amd.api import Dispatch, GPUEmulatorError
from emu.amd.exec_vmem import VmemStep
from emu.amd.gpu import AMDGPU
from emu.amd.kernel import Buffers
from emu.amd.semantics import get_op

pytestmark = pytest.mark.skipif(not native.available(), reason=f"no native code here: {native.NATIVE.why}")
FAMILY = {"gfx1100": "rdna3", "gfx1201": "rdna4", "gfx942": "cdna", "gfx950": "cdna"}
STORE_B128 = {"gfx1100": "DS_STORE_B128", "gfx1201": "DS_STORE_B128", "gfx942": "DS_WRITE_B128", "gfx950": "DS_WRITE_B128"}
LOAD_B32 = {"gfx1100": "DS_LOAD_B32", "gfx1201": "DS_LOAD_B32", "gfx942": "DS_READ_B32", "gfx950": "DS_READ_B32"}
STORE_B32 = {"gfx1100": "DS_STORE_B32", "gfx1201": "DS_STORE_B32", "gfx942": "DS_WRITE_B32", "gfx950": "DS_WRITE_B32"}

def _mod(arch): return importlib.import_module(f"tinygrad.runtime.autogen.amd.{FAMILY[arch]}.ins")

def ds(arch, op, vdst:int=0, addr:int=0, data0:int=0, data1:int=0, offset0:int=0, offset1:int=0):
  """The DS instruction `op` (an enum member or its name) with each VGPR operand as wide as the op reads or writes it."""
  mod = _mod(arch)
  if isinstance(op, str): op = getattr(mod.DSOp, op)
  widths = get_op(arch, op).widths
  regs = lambda r, name: mod.v[r:r + max(1, -(-widths.get(name, 32) // 32)) - 1]
  return mod.DS(op, vdst=regs(vdst, "RETURN_DATA"), addr=mod.v[addr], data0=regs(data0, "DATA"), data1=regs(data1, "DATA2"),
                offset0=offset0, offset1=offset1)

def ds_ops(arch, test) -> list:
  """The DS ops of `arch` that regions take by `test` (regions.plain_ds_load / plain_ds_store's op half)."""
  out = []
  for op in _mod(arch).DSOp:
    try: c = get_op(arch, op)
    except Exception: continue
    if c.kind == "vector" and c.fn is not None and "M0" not in c.reads and test(c): out.append(op)
  return out

def plain_loads(arch): return ds_ops(arch, lambda c: c.mem == "r" and not c.mem_rmw and c.writes == {"RETURN_DATA"} and
                                     c.reads <= regions.DS_READS | {"RETURN_DATA"} and c.widths.get("RETURN_DATA", 32) in (16, 32, 64, 96, 128))
def plain_stores(arch): return ds_ops(arch, lambda c: c.mem == "w" and not c.mem_rmw and not c.writes and c.reads <= regions.DS_READS)

def _lanes(arch) -> int: return 64 if FAMILY[arch] == "cdna" else 32
def _two_addresses(op) -> bool: return any(k in op.name for k in ("2ADDR", "READ2", "WRITE2"))   # (OFFSET0 and OFFSET1 apart)

def _run_both(monkeypatch, prog, **kw):
  """(native state, numpy-path state) of prog; registers, SCC and LDS bytes must agree."""
  got = run_program(prog, **kw)
  with monkeypatch.context() as m:
    m.setenv("EMU_REGIONS", "0")
    want = run_program(prog, **kw)
  for name in ("vgpr_store", "sgpr", "scc", "status", "lds"): np.testing.assert_array_equal(getattr(got, name), getattr(want, name), err_msg=name)
  return got, want

@pytest.mark.parametrize("arch", sorted(FAMILY))
def test_every_plain_ds_load_op_matches_the_numpy_path(monkeypatch, native_runs, arch):
  lanes = _lanes(arch)
  ops = plain_loads(arch)
  assert len(ops) >= 16, [o.name for o in ops]   # b32 b64 b96 b128, u8 i8 u16 i16, the two 2ADDR / READ2 forms, six D16 forms
  lds_bytes = 16 * lanes + 64
  rng = np.random.default_rng(3)
  data = {10 + j: rng.integers(0, 1 << 32, lanes, dtype=np.uint64) for j in range(4)}
  # load addresses: unaligned, out of lane order, one access running past the LDS, one far past it, two inactive lanes pointing past it
  addr = (np.arange(lanes) * 7 % (16 * lanes)).astype(np.uint64)
  addr[5], addr[6], addr[3], addr[lanes - 2] = lds_bytes - 2, 0xfffffff0, 0xffffff00, lds_bytes
  exec_mask = (1 << lanes) - 1 - (1 << 3) - (1 << (lanes - 2))
  image = np.zeros(lds_bytes, dtype=np.uint8)   # what the store writes: each active lane's four dwords at 16 lane
  rows = np.stack([data[10 + j] for j in range(4)], axis=1).astype(np.uint32)
  rows[[3, lanes - 2]] = 0
  image[:16 * lanes] = rows.view(np.uint8).reshape(-1)
  for op in ops:
    native_runs.clear()
    prog = [ds(arch, STORE_B128[arch], addr=1, data0=10), ds(arch, op, vdst=20, addr=2, offset0=4, offset1=2 if _two_addresses(op) else 0)]
    got, _ = _run_both(monkeypatch, prog, arch=arch, lanes=lanes, lds_bytes=lds_bytes, exec_mask=exec_mask,
                       vgprs={**data, 1: 16 * np.arange(lanes), 2: addr, 20: 0x5a5a5a5a})
    assert native_runs == [1, 1], op.name   # the store's region, then the load's
    np.testing.assert_array_equal(got.lds, image, err_msg=op.name)
    if op.name == LOAD_B32[arch]:   # worked by hand: the dword at addr + 4 when it lies inside the LDS, else 0; inactive lanes keep theirs
      want = [int.from_bytes(image[a + 4:a + 8].tobytes(), "little") if a + 8 <= lds_bytes else 0 for a in addr.tolist()]
      want = np.where([(exec_mask >> i) & 1 for i in range(lanes)], want, 0x5a5a5a5a)
      np.testing.assert_array_equal(got.vgpr[0, :, 20], want)

@pytest.mark.parametrize("arch", sorted(FAMILY))
def test_every_plain_ds_store_op_matches_the_numpy_path(monkeypatch, native_runs, arch):
  lanes = _lanes(arch)
  ops = plain_stores(arch)
  assert len(ops) >= 10, [o.name for o in ops]   # b8 b16 b32 b64 b96 b128, the d16_hi and 2ADDR / WRITE2 forms
  lds_bytes = 4 * lanes + 32
  rng = np.random.default_rng(4)
  data = {10 + j: rng.integers(0, 1 << 32, lanes, dtype=np.uint64) for j in range(8)}
  addr = (np.arange(lanes) * 3).astype(np.uint64)   # every lane's write overlaps its neighbours'
  addr[5], addr[6], addr[3] = lds_bytes - 2, 0xfffffff0, 0   # past the end in part and far past; an inactive lane over lane 0's bytes
  exec_mask = (1 << lanes) - 1 - (1 << 3)
  for op in ops:
    native_runs.clear()
    prog = [ds(arch, op, addr=2, data0=10, data1=14, offset0=1, offset1=3 if _two_addresses(op) else 0)]
    got, _ = _run_both(monkeypatch, prog, arch=arch, lanes=lanes, lds_bytes=lds_bytes, exec_mask=exec_mask, vgprs={**data, 2: addr})
    assert native_runs == [1], op.name
    if op.name == STORE_B32[arch]:   # worked by hand: lane by lane (inactive lane 3 skipped), the last write to a byte wins
      want = np.zeros(lds_bytes, dtype=np.uint8)
      for i in range(lanes):
        a = int(addr[i]) + 1
        if i != 3 and a + 4 <= lds_bytes: want[a:a + 4] = np.frombuffer(int(data[10][i]).to_bytes(4, "little"), np.uint8)
      np.testing.assert_array_equal(got.lds, want)

def test_waves_of_a_workgroup_store_in_wave_order_and_load_only_after_every_store(monkeypatch, native_runs):
  # both waves store their own value at LDS 0, then load it: each load must see wave 1's value, as in the numpy path's lockstep
  # (a load joining the store's region would run wave by wave and give wave 0 its own value)
  mod = _mod("gfx1100")
  prog = [mod.v_mov_b32_e32(mod.v[1], mod.s[20]), ds("gfx1100", "DS_STORE_B32", addr=0, data0=1), ds("gfx1100", "DS_LOAD_B32", vdst=2, addr=0)]
  got, _ = _run_both(monkeypatch, prog, waves=2, lds_bytes=64, sgprs={20: [111, 222]}, vgprs={0: 0})
  assert (got.vgpr[:, :, 2] == 222).all() and (got.vgpr[:, :, 1] == np.array([[111], [222]])).all()
  assert native_runs == [2, 2]   # [v_mov, store] for both waves, then [load] for both

def test_each_workgroup_reads_its_own_lds(monkeypatch, regions_at_once):
  # 64 workgroups of one wave: lane i stores wg * 1000 + i at 4 i, then (after a barrier) loads lane 31 - i's and stores it to out
  mod = _mod("gfx1100")
  prog = [mod.s_mul_i32(mod.s[5], mod.s[4], 1000), mod.v_add_nc_u32_e32(mod.v[1], mod.s[5], mod.v[0]),
          mod.v_lshlrev_b32_e32(mod.v[2], 2, mod.v[0]), ds("gfx1100", "DS_STORE_B32", addr=2, data0=1),
          mod.s_waitcnt(0), mod.s_barrier(), mod.v_sub_nc_u32_e32(mod.v[3], 124, mod.v[2]), ds("gfx1100", "DS_LOAD_B32", vdst=4, addr=3),
          mod.s_lshl_b32(mod.s[6], mod.s[4], 7), mod.v_add_nc_u32_e32(mod.v[5], mod.s[6], mod.v[2]), mod.s_waitcnt(0),
          mod.global_store_b32(addr=mod.v[5], data=mod.v[4], saddr=mod.s[2:3], offset=0), mod.s_endpgm()]
  n_wg = 64
  ds_on_numpy, real = [], VmemStep.execute
  def spy(self, m, ws):
    if self.fmt == "DS": ds_on_numpy.append(len(ws))
    return real(self, m, ws)
  monkeypatch.setattr(VmemStep, "execute", spy)
  outs = []
  for flag in ("1", "0"):
    monkeypatch.setenv("EMU_REGIONS", flag)
    bufs = Buffers()
    code = bufs.add(np.frombuffer(b"".join(i.to_bytes() for i in prog) + bytes(64), dtype=np.uint8).copy(), "code", writable=False)
    out = bufs.add(np.zeros((n_wg, 32), dtype=np.uint32), "out")
    d = Dispatch(code_addr=code, grid=(n_wg, 1, 1), workgroup=(32, 1, 1), user_sgprs=[0, 0, out & 0xffffffff, out >> 32],
                 rsrc2=(4 << 1) | (1 << 7), lds_bytes=128)   # (workgroup id x in s4)
    AMDGPU("gfx1100", bufs.mem, timing=False).dispatch(d)
    outs.append(bufs.keep[-1].copy())
    if flag == "1": assert not ds_on_numpy   # every DS access ran natively
  want = np.arange(n_wg)[:, None] * 1000 + (31 - np.arange(32))[None, :]
  np.testing.assert_array_equal(outs[0], want)
  np.testing.assert_array_equal(outs[1], want)

def test_check_mode_compares_lds(monkeypatch, native_runs):
  """EMU_REGIONS=check runs each batch natively and on the numpy path: a native DS store that writes other bytes is reported."""
  prog = [ds("gfx1100", "DS_STORE_B32", addr=2, data0=10)]
  kw = dict(lds_bytes=128, vgprs={2: 4 * np.arange(32), 10: np.arange(32) + 7})
  monkeypatch.setattr(regions, "CHECK", True)
  st = run_program(prog, **kw)   # the same bytes: no complaint
  assert (st.lds.view(np.uint32) == np.arange(32) + 7).all() and native_runs == [1]
  wrong = region_ir.STORE_HELPERS.replace("%v4 = trunc i64 %val to i32", "%v4.x = trunc i64 %val to i32\n  %v4 = xor i32 %v4.x, 1")
  monkeypatch.setattr(region_ir, "STORE_HELPERS", wrong)   # dword stores flip bit 0
  monkeypatch.setattr(regions, "_built", {})   # (a region of these bytes compiled with the helper flipped stays out of later tests)
  with pytest.raises(GPUEmulatorError, match="stores differ from the numpy path.s at LDS byte 0"): run_program(prog, **kw)
