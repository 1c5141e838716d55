"""Global and scalar loads inside native regions (emu.amd.regions): every plain GLOBAL load op of rdna3, rdna4 and CDNA in both
address forms, and every scalar (SMEM) load op of all four archs in each address form, gives the numpy path's registers and traffic
bit for bit (EMU_REGIONS=0 is the reference, hand-computed values where they are simple), inactive lanes' addresses are never
touched, and every access the native table cannot vouch for (out of range, across two mappings, host memory the process may unmap,
a mapping gone since the last run) takes the numpy path: the same values or the same fault, never a host crash."""
import importlib
import numpy as np
import pytest
from emu import native
from emu.amd import regions, run_program
from emu.amd.api import GPUMemoryFault
from emu.common.memory import MemoryMap
from emu.amd.semantics import get_op
from emu.amd.steps import Program
from emu.amd.arch import get_spec

pytestmark = pytest.mark.skipif(not native.available(), reason=f"no native code here: {native.NATIVE.why}")
ISA = {"gfx1100": ("rdna3", "GLOBAL", "GLOBALOp", "addr", "offset"), "gfx1201": ("rdna4", "VGLOBAL", "VGLOBALOp", "vaddr", "ioffset"),
       "gfx942": ("cdna", "GLOBAL", "GLOBALOp", "addr", "offset")}
NO_SADDR = {"gfx1100": "NULL", "gfx1201": "NULL", "gfx942": "EXEC_HI"}   # no SGPR base: NULL on RDNA, 0x7f (off) on gfx9

def _ins(arch):
  family, cls, enum, addr_f, off_f = ISA[arch]
  mod = importlib.import_module(f"tinygrad.runtime.autogen.amd.{family}.ins")
  return mod, getattr(mod, cls), getattr(mod, enum), addr_f, off_f

def load(arch, op, vdst:int, addr:int, saddr:int|None, offset:int):
  """The GLOBAL instruction `op` (the DSL checks register counts: VDATA's, and the address's 64 or 32 bits as it sees them)."""
  mod, cls, _, addr_f, off_f = _ins(arch)
  width = max(1, get_op(arch, op).widths.get("VDATA", 32) // 32)
  base = mod.s[saddr:saddr + 1] if saddr is not None else getattr(mod, NO_SADDR[arch])
  for n in (2, 1):
    try: return cls(op, vdst=mod.v[vdst:vdst + width - 1], saddr=base, **{addr_f: mod.v[addr:addr + n - 1], off_f: offset})
    except TypeError:
      if n == 1: raise

def global_ops(arch, keep) -> list:
  """The GLOBAL ops of `arch` (enum members) whose compiled op `keep(op, compiled)` accepts (those that compile)."""
  _, _, enum, _, _ = _ins(arch)
  out = []
  for op in enum:
    try: c = get_op(arch, op)
    except Exception: continue
    if keep(op, c): out.append(op)
  return out

def plain_loads(arch) -> list:
  """The load ops regions take (regions.plain_load's op test), by enum member."""
  return global_ops(arch, lambda op, c: c.kind == "vector" and c.mem == "r" and not c.mem_rmw and c.writes == {"VDATA"} and
                    c.reads <= regions.LOAD_READS)

def _buffer(mem:MemoryMap, nbytes:int, seed:int=0, **kw) -> np.ndarray:
  buf = np.random.default_rng(seed).integers(0, 256, nbytes).astype(np.uint8)
  mem.map(buf.ctypes.data, buf.nbytes, name="data", backing=buf, **kw)
  return buf

@pytest.mark.parametrize("arch", sorted(ISA))
@pytest.mark.parametrize("sgpr_base", [False, True])
def test_every_plain_load_op_matches_the_numpy_path(monkeypatch, native_runs, arch, sgpr_base, both):
  lanes = 64 if arch == "gfx942" else 32
  ops = plain_loads(arch)
  assert len(ops) >= 13, [o.name for o in ops]   # u8 i8 u16 i16 b32 b64 b96 b128 and the six d16 forms
  mem = MemoryMap()
  buf = _buffer(mem, 64 * lanes + 64)
  off = (np.arange(lanes) * 37 % (48 * lanes)).astype(np.uint64)   # unaligned, out of lane order
  addr = np.uint64(buf.ctypes.data) + off
  exec_mask = (1 << lanes) - 1 - (1 << 3) - (1 << (lanes - 2))
  vgprs = {2: (addr & np.uint64(0xffffffff)).astype(np.uint32), 3: (addr >> np.uint64(32)).astype(np.uint32), 10: 0xabcd1234,
           11: 0x5a5a5a5a, 12: 0x01020304, 13: 0xfedcba98}
  for lane in (3, lanes - 2):   # inactive lanes point nowhere: never read
    vgprs[2][lane], vgprs[3][lane] = 0x1000, 0
  sgprs = {}
  if sgpr_base:
    sgprs = {20: buf.ctypes.data}
    vgprs[2] = np.where(np.isin(np.arange(lanes), (3, lanes - 2)), 0xfff00000, off).astype(np.uint32)   # inactive: past the buffer
  for op in ops:
    native_runs.clear()
    prog = [load(arch, op, 10, 2, 20 if sgpr_base else None, 8)]
    st = both(prog, arch=arch, lanes=lanes, memory=mem, vgprs=vgprs, sgprs=sgprs, exec_mask=exec_mask)
    assert native_runs == [1], op.name
    assert st.stats.bytes_read > 0
    if op.name in ("GLOBAL_LOAD_B128", "GLOBAL_LOAD_DWORDX4"):   # four little-endian dwords at each active lane's address + 8
      words = np.stack([buf[int(o) + 8:int(o) + 24].view(np.uint32) for o in off])
      on = np.array([(exec_mask >> i) & 1 == 1 for i in range(lanes)])
      np.testing.assert_array_equal(st.vgpr[0, on, 10:14], words[on])
      assert (st.vgpr[0, ~on, 10:14] == [0xabcd1234, 0x5a5a5a5a, 0x01020304, 0xfedcba98]).all()
      assert st.stats.bytes_read == 16 * int(on.sum())
    if op.name in ("GLOBAL_LOAD_I16", "GLOBAL_LOAD_SSHORT"):
      want = buf[off[0] + 8: off[0] + 10].view(np.int16)[0].astype(np.int32).astype(np.uint32)
      assert st.vgpr[0, 0, 10] == want

def test_loads_and_arithmetic_share_one_region(monkeypatch, native_runs, both):
  from tinygrad.runtime.autogen.amd.rdna3.ins import v, v_add_nc_u32_e32, v_lshlrev_b32_e32, v_add_co_u32, v_add_co_ci_u32, s, v_mul_f32_e32
  mem = MemoryMap()
  data = np.arange(256, dtype=np.float32) * 0.25
  mem.map(data.ctypes.data, data.nbytes, backing=data.view(np.uint8))
  from tinygrad.runtime.autogen.amd.rdna3.enum import GLOBALOp
  prog = [v_lshlrev_b32_e32(v[4], 3, v[1]),                                  # byte offset 8 * lane
          v_add_co_u32(v[6], s[10], s[20], v[4]), v_add_co_ci_u32(v[7], s[10], s[21], 0, s[10]),
          load("gfx1100", GLOBALOp.GLOBAL_LOAD_B32, 8, 6, None, 4),
          v_mul_f32_e32(v[9], 2.0, v[8]), v_add_nc_u32_e32(v[5], 1, v[1])]
  st = both(prog, memory=mem, vgprs={1: np.arange(32)}, sgprs={20: data.ctypes.data}, waves=2)
  assert native_runs == [2]   # the whole program is one native region for both waves
  assert (st.vgpr[:, :, 9].view(np.float32) == 2 * data[2 * np.arange(32) + 1]).all()

def test_accesses_the_table_cannot_vouch_for_take_the_numpy_path(monkeypatch, native_runs, both):
  from tinygrad.runtime.autogen.amd.rdna3.enum import GLOBALOp
  mem = MemoryMap()
  whole = np.arange(256, dtype=np.uint32)
  a, b = whole[:64], whole[128:192]   # b above a: a 32-bit offset from a's address reaches it
  mem.map(a.ctypes.data, a.nbytes, backing=a.view(np.uint8))
  userptr = mem.map(b.ctypes.data, b.nbytes, backing=b.view(np.uint8), present=lambda: True)   # host memory: not in the table
  assert [r[0] for r in mem.native_table()] == [a.ctypes.data]
  prog = [load("gfx1100", GLOBALOp.GLOBAL_LOAD_B64, 10, 2, 20, 0)]
  lanes = np.arange(32)
  split = np.where(lanes < 16, 8 * lanes, b.ctypes.data - a.ctypes.data + 4 * lanes).astype(np.uint32)   # half in a, half in b
  st = both(prog, memory=mem, vgprs={2: split}, sgprs={20: a.ctypes.data})
  assert native_runs == [1]   # the region ran: the wave itself went the numpy way
  lo = np.where(lanes < 16, 2 * lanes, 128 + lanes)
  assert (st.vgpr[0, :, 10] == lo).all()
  for gone in (False, True):   # an address past `a` faults as on the numpy path, also once `b` is unmapped under the table
    if gone: mem.unmap(userptr.addr)
    faults = []
    for flag in ("1", "0"):
      monkeypatch.setenv("EMU_REGIONS", flag)
      with pytest.raises(GPUMemoryFault) as e: run_program(prog, memory=mem, vgprs={2: np.where(lanes == 7, 256 - 4, 0)}, sgprs={20: a.ctypes.data})
      faults.append(str(e.value))
    assert faults[0] == faults[1]

@pytest.mark.parametrize("first_high", [False, True])
def test_lanes_in_two_mappings_with_different_host_addresses_each_read_their_own(native_runs, both, first_high):
  # two buffers mapped at adjacent GPU addresses, each backed by host memory elsewhere: the row of the first active lane must not
  # serve a lane in the other one (below it or above it), whose bytes lie at another host address
  from tinygrad.runtime.autogen.amd.rdna3.enum import GLOBALOp
  low, high, va = np.arange(64, dtype=np.uint32), np.arange(1000, 1064, dtype=np.uint32), 0x7000_0000_0000
  mem = MemoryMap()
  mem.map(va, 256, backing=low.view(np.uint8))
  mem.map(va + 256, 256, backing=high.view(np.uint8))
  lanes = np.arange(32)
  in_high = (lanes % 2 == 0) if first_high else (lanes % 2 == 1)   # lane 0 in the high buffer, or in the low one
  off = np.where(in_high, 256 + 4 * lanes, 4 * lanes).astype(np.uint32)
  st = both([load("gfx1100", GLOBALOp.GLOBAL_LOAD_B32, 10, 2, 20, 0)], memory=mem, vgprs={2: off}, sgprs={20: va})
  assert native_runs == [1]
  np.testing.assert_array_equal(st.vgpr[0, :, 10], np.where(in_high, 1000 + lanes, lanes))

def test_a_load_span_across_two_adjacent_mappings_reads_both(native_runs, both):
  from tinygrad.runtime.autogen.amd.rdna3.enum import GLOBALOp
  whole = np.arange(128, dtype=np.uint32)
  mem = MemoryMap()
  mem.map(whole.ctypes.data, 256, backing=whole[:64].view(np.uint8))
  mem.map(whole.ctypes.data + 256, 256, backing=whole[64:].view(np.uint8))
  prog = [load("gfx1100", GLOBALOp.GLOBAL_LOAD_B128, 10, 2, 20, 0)]
  st = both(prog, memory=mem, vgprs={2: np.full(32, 248)}, sgprs={20: whole.ctypes.data})   # dwords 62..65
  assert (st.vgpr[0, :, 10:14] == [62, 63, 64, 65]).all()

def test_regions_take_only_plain_global_loads():
  from tinygrad.runtime.autogen.amd.rdna3.enum import GLOBALOp
  spec, mem = get_spec("gfx1100"), MemoryMap()
  prog = Program(spec, mem)
  code = b"".join(i.to_bytes() for i in [load("gfx1100", GLOBALOp.GLOBAL_LOAD_B32, 1, 2, None, 0),
                                         load("gfx1100", GLOBALOp.GLOBAL_ATOMIC_ADD_U32, 1, 2, None, 0)]) + b"\0" * 16
  arr = np.frombuffer(code, dtype=np.uint8).copy()
  mem.map(arr.ctypes.data, arr.size, backing=arr, writable=False)
  assert regions.plain_load(prog.at(arr.ctypes.data)) and not regions.plain_load(prog.at(arr.ctypes.data + 8))

SMEM_ISA = {"gfx1100": "rdna3", "gfx1201": "rdna4", "gfx942": "cdna", "gfx950": "cdna"}

def plain_scalar_loads(arch) -> list:
  """The SMEM load ops regions take (regions.plain_smem's op test), by enum member."""
  enum = importlib.import_module(f"tinygrad.runtime.autogen.amd.{SMEM_ISA[arch]}.enum").SMEMOp
  out = []
  for op in enum:
    try: c = get_op(arch, op)
    except Exception: continue
    if c.mem == "r" and c.reads <= {"ADDR", "MEM"} and c.writes == {"SDATA"}: out.append(op)
  return out

def scalar_load(arch, op, sdata:int, sbase:int|None, offset:int, soffset:int|None):
  """The SMEM instruction `op`: base SGPRs at `sbase` (a pair, four for buffer loads; None: NULL), an immediate offset, SOFFSET an
  SGPR or None (gfx9: IMM=1 with SOFFSET_EN when there is one)."""
  mod = importlib.import_module(f"tinygrad.runtime.autogen.amd.{SMEM_ISA[arch]}.ins")
  k = max(1, get_op(arch, op).widths["SDATA"] // 32)
  base = mod.NULL if sbase is None else mod.s[sbase:sbase + (3 if "BUFFER" in op.name else 1)]
  off = mod.s[soffset] if soffset is not None else mod.NULL
  if SMEM_ISA[arch] == "rdna4": return mod.SMEM(op, sdata=mod.s[sdata:sdata + k - 1], sbase=base, soffset=off, ioffset=offset)
  if SMEM_ISA[arch] == "rdna3": return mod.SMEM(op, sdata=mod.s[sdata:sdata + k - 1], sbase=base, soffset=off, offset=offset)
  return mod.SMEM(op, sdata=mod.s[sdata:sdata + k - 1], sbase=base, soffset=off if soffset is not None else mod.s[0], offset=offset,
                  imm=1, soffset_en=int(soffset is not None))

@pytest.mark.parametrize("arch", sorted(SMEM_ISA))
@pytest.mark.parametrize("soffset", [None, 30])
def test_every_plain_scalar_load_op_matches_the_numpy_path(monkeypatch, native_runs, arch, soffset, both):
  from emu.amd.exec_salu import SmemStep
  numpy_runs, real = [], SmemStep.run
  monkeypatch.setattr(SmemStep, "run", lambda self, m, ws: (numpy_runs.append(len(ws)), real(self, m, ws))[1])
  lanes = 64 if SMEM_ISA[arch] == "cdna" else 32
  mem = MemoryMap()
  buf = _buffer(mem, 256, seed=3)
  # a raw buffer resource: base, stride 4 (bits 48-61: not part of the base), num_records, LLVM's word3
  resource = buf.ctypes.data | (4 << 48) | (256 << 64) | (0x27000 << 96)
  for op in plain_scalar_loads(arch):
    native_runs.clear(), numpy_runs.clear()
    sgprs = {20: resource if "BUFFER" in op.name else buf.ctypes.data, 30: 24}
    st = both([scalar_load(arch, op, 40, 20, 6, soffset), scalar_load(arch, op, 60, 20, 70, None)], arch=arch,
              lanes=lanes, waves=2, memory=mem, sgprs=sgprs)
    assert native_runs == [2] and numpy_runs == [2, 2], op.name   # no wave fell back: the numpy path ran only for the reference
    width = get_op(arch, op).widths["SDATA"]
    nbytes = {"8": 1, "16": 2}[op.name.rsplit("_", 1)[1][1:]] if op.name.rsplit("_", 1)[1][0] in "IU" else width // 8
    assert st.stats.bytes_read == 2 * 2 * nbytes, op.name   # both waves, both loads
    if nbytes >= 4:   # dword loads ignore ADDR[1:0]: base + 6 (+ 24) reads from base + 4 (+ 28)
      start = (6 + (24 if soffset is not None else 0)) & ~3
      np.testing.assert_array_equal(st.sgpr[:, 40:40 + width // 32], np.tile(buf[start:start + width // 8].view(np.uint32), (2, 1)), op.name)

def test_a_scalar_load_outside_the_table_faults_as_on_the_numpy_path(monkeypatch, native_runs):
  from tinygrad.runtime.autogen.amd.rdna3.enum import SMEMOp
  from tinygrad.runtime.autogen.amd.rdna3.ins import v, v_mov_b32_e32
  mem = MemoryMap()
  buf = _buffer(mem, 64)
  prog = [v_mov_b32_e32(v[1], 5), scalar_load("gfx1100", SMEMOp.S_LOAD_B128, 8, 20, 0, 30), v_mov_b32_e32(v[2], 7)]
  faults = []
  for flag in ("1", "0"):
    monkeypatch.setenv("EMU_REGIONS", flag)
    with pytest.raises(GPUMemoryFault) as e: run_program(prog, memory=mem, sgprs={20: buf.ctypes.data, 30: 56})   # 16 bytes at 56 of 64
    faults.append(str(e.value))
  assert faults[0] == faults[1] and native_runs == []
