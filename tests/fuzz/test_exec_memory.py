"""exec.* on the memory, SOPP, VOPD and VINTERP formats: seeded smoke runs per arch, and the new properties' inputs worked out by hand
(the ISA's addresses and allowed bytes of stores, loads' extension and range rules, SOPP next PCs, VOPD destinations)."""
import random
import numpy as np
import pytest
from fuzz import amd_exec, registry, runner
from fuzz.amd_exec import Access, GLOBAL_BASE, MORE_FORMATS, base_format
from fuzz.amd_fields import inst_classes, ops_of
from fuzz.finding import Finding
from fuzz.targets import exec as exec_target

def case(arch:str, cls:str, op:str, lanes:int=32, exec_:int|None=None, sgprs:dict|None=None, vgprs:dict|None=None, scc:int=0, **fields) -> dict:
  """A case by hand: every field 0 unless given, the op's opcode, the standard memory regions for memory formats."""
  c = inst_classes(arch)[cls]
  code = next(o for o in ops_of(c) if o is not None and o.name == op).value
  f = {n: 0 for n, bf in c._fields if type(bf).__name__ != "FixedBitField"} | {"opx" if cls.startswith("VOPD") else "op": code} | fields
  out = {"arch": arch, "lanes": lanes, "cls": cls, "op": op, "fields": f, "exec": (1 << lanes) - 1 if exec_ is None else exec_, "scc": scc,
         "sgprs": {str(k): v for k, v in (sgprs or {}).items()},
         "vgprs": {str(k): v if isinstance(v, list) else [v] * lanes for k, v in (vgprs or {}).items()}}
  if amd_exec.MEMORY.get(base_format(cls)): out["mem"] = {"global": [GLOBAL_BASE, 4096], "lds": 1024, "scratch": 256, "seed": 7}
  assert amd_exec.llvm_valid(out), amd_exec.code(out).hex()
  return out

def lo_hi(addrs:list[int]) -> tuple[list[int], list[int]]:
  """Per-lane 64-bit addresses as the low and high VGPR of a pair."""
  return [a & 0xffffffff for a in addrs], [a >> 32 for a in addrs]

@pytest.mark.parametrize("arch", ["rdna3", "rdna4", "cdna"])
def test_generation_covers_every_new_format(arch):
  rng = random.Random(1)
  cases = [amd_exec.generate(arch, rng, classes=amd_exec.more_classes(arch)) for _ in range(120)]
  assert {base_format(c["cls"]) for c in cases} == set(MORE_FORMATS[arch])
  assert all("mem" in c for c in cases if amd_exec.memory_kind(c)) and all(c["lanes"] == 32 for c in cases if base_format(c["cls"]) == "VOPD")

@pytest.mark.parametrize("arch", ["rdna3", "rdna4", "cdna"])
def test_smoke(arch, tmp_path):
  st = runner.run(registry.get(f"exec.{arch}"), seconds=5, seed=2, findings_dir=tmp_path, progress=None, max_execs=40)
  assert st.execs > 0

def test_global_store_allowed_bytes_by_hand():
  # global_store_b32 v0, v1, s[2:3] offset:4 with EXEC lanes 0 and 3: lane l writes data[l] at s[2:3] + v0[l] + 4, nothing else
  lanes = list(range(32))
  c = case("rdna3", "GLOBAL", "GLOBAL_STORE_B32", exec_=0b1001, sgprs={2: GLOBAL_BASE & 0xffffffff, 3: GLOBAL_BASE >> 32},
           vgprs={0: [16 * l for l in lanes], 1: [0xa0000000 + l for l in lanes]}, addr=0, data=1, saddr=2, offset=4)
  assert amd_exec.model(c) == [Access("global", 0, GLOBAL_BASE + 4, 4, True), Access("global", 3, GLOBAL_BASE + 52, 4, True)]
  out = amd_exec.run(c)
  want = amd_exec.global_bytes(c)
  want[4:8], want[52:56] = np.frombuffer((0xa0000000).to_bytes(4, "little"), np.uint8), np.frombuffer((0xa0000003).to_bytes(4, "little"), np.uint8)
  assert (out.glob == want).all()
  exec_target.checked_run(c)
  out.glob[100] ^= 1   # a byte no lane addresses
  with pytest.raises(Finding, match="unexpected-memory-write"): exec_target.check_memory(c, out, "")
  out.glob[100] ^= 1
  out.glob[5] ^= 1     # an addressed byte with the wrong value
  with pytest.raises(Finding, match="store-mismatch"): exec_target.check_memory(c, out, "")

def test_sub_dword_loads_extend_by_hand():
  # global_load_i8 sign-extends, global_load_d16_hi_u8 puts the zero-extended byte in bits 31:16 and keeps bits 15:0
  data = amd_exec.global_bytes(case("rdna3", "GLOBAL", "GLOBAL_LOAD_I8"))
  off = int(np.nonzero(data >= 0x80)[0][0])
  lo, hi = lo_hi([GLOBAL_BASE + off] * 32)
  i8 = case("rdna3", "GLOBAL", "GLOBAL_LOAD_I8", vgprs={0: lo, 1: hi}, addr=0, vdst=2, saddr=124)
  assert int(exec_target.checked_run(i8).vgpr[0, 5, 2]) == 0xffffff00 | int(data[off])
  d16 = case("rdna3", "GLOBAL", "GLOBAL_LOAD_D16_HI_U8", vgprs={0: lo, 1: hi, 2: 0x1234abcd}, addr=0, vdst=2, saddr=124)
  assert int(exec_target.checked_run(d16).vgpr[0, 5, 2]) == int(data[off]) << 16 | 0xabcd

def test_ds_two_address_stride64_and_lds_range_by_hand():
  # ds_store_2addr_stride64_b32 v0, v1, v2 offset0:1 offset1:2: addresses v0 + 1*64*4 and v0 + 2*64*4
  c = case("rdna3", "DS", "DS_STORE_2ADDR_STRIDE64_B32", exec_=1, vgprs={0: 8, 1: 0x11, 2: 0x22}, addr=0, data0=1, data1=2, offset0=1, offset1=2)
  assert amd_exec.model(c) == [Access("lds", 0, 264, 4, True, 0), Access("lds", 0, 520, 4, True, 1)]
  lds = amd_exec.run(c).lds.view(np.uint32)
  assert lds[66] == 0x11 and lds[130] == 0x22 and np.count_nonzero(lds) == 2
  exec_target.checked_run(c)
  # past the 1024-byte LDS: the load reads 0 (rule 'out'), the store is dropped
  load = case("rdna3", "DS", "DS_LOAD_B32", vgprs={0: 1024, 1: 0x5555}, addr=0, vdst=1)
  assert {a.rule for a in amd_exec.model(load)} == {"out"} and (exec_target.checked_run(load).vgpr[0, :, 1] == 0).all()
  store = case("rdna3", "DS", "DS_STORE_B32", vgprs={0: 2000, 1: 7}, addr=0, data0=1)
  out = amd_exec.run(store)
  assert not out.lds.any()
  exec_target.checked_run(store)

def test_flat_shared_aperture_reaches_lds():
  # an address in the shared aperture (ArchSpec.shared_aperture) + 16 is LDS byte 16
  lo, hi = lo_hi([amd_exec.spec("rdna3").shared_aperture + 16] * 32)
  c = case("rdna3", "FLAT", "FLAT_STORE_B32", exec_=1, vgprs={0: lo, 1: hi, 2: 0xdeadbeef}, addr=0, data=2, saddr=124)
  assert amd_exec.model(c) == [Access("lds", 0, 16, 4, True)]
  assert amd_exec.run(c).lds[16:20].view(np.uint32)[0] == 0xdeadbeef
  exec_target.checked_run(c)

def test_global_past_the_buffer_must_fault():
  lo, hi = lo_hi([GLOBAL_BASE + 4094] * 32)   # 4 bytes at 4094 straddle the 4096-byte buffer's end
  c = case("rdna3", "GLOBAL", "GLOBAL_LOAD_B32", vgprs={0: lo, 1: hi}, addr=0, vdst=2, saddr=124)
  assert exec_target.expect_fault(c, amd_exec.model(c)) is True
  assert amd_exec.run(c).fault is not None
  exec_target.checked_run(c)

def test_mubuf_num_records_by_hand():
  # raw buffer (stride 0), num_records 8: offsets 0 and 4 are in range, 8 is out (loads 0), 6 straddles (either reading)
  rsrc = GLOBAL_BASE | 8 << 64
  c = case("cdna", "MUBUF", "BUFFER_LOAD_DWORD", lanes=64, exec_=0b1111, sgprs={4 + i: (rsrc >> (32 * i)) & 0xffffffff for i in range(4)},
           vgprs={0: [0, 4, 8, 6] + [0] * 60}, vaddr=0, vdata=1, srsrc=1, soffset=128, offen=1)
  acc = amd_exec.model(c)
  assert [(a.lane, a.addr - GLOBAL_BASE, a.rule) for a in acc] == [(0, 0, "in"), (1, 4, "in"), (2, 8, "out"), (3, 6, "maybe")]
  st = exec_target.checked_run(c)
  assert int(st.vgpr[0, 2, 1]) == 0 and int(st.vgpr[0, 1, 1]) == int(amd_exec.global_bytes(c)[4:8].view(np.uint32)[0])

def test_cdna_smem_imm0_names_an_sgpr_offset():
  # gfx9 s_load_dword with IMM=0: OFFSET[6:0] = 6 names s6, whose value 8 is the offset; the address is dword aligned
  c = case("cdna", "SMEM", "S_LOAD_DWORD", lanes=64, sgprs={0: GLOBAL_BASE & 0xffffffff, 1: GLOBAL_BASE >> 32, 6: 9}, sdata=4, sbase=0, offset=6)
  assert amd_exec.model(c) == [Access("global", -1, GLOBAL_BASE + 8, 4, False)]
  assert int(exec_target.checked_run(c).sgpr[0, 4]) == int(amd_exec.global_bytes(c)[8:12].view(np.uint32)[0])

@pytest.mark.parametrize("op, simm16, scc, want", [
  ("S_CBRANCH_SCC1", 1, 1, ("next", 2)), ("S_CBRANCH_SCC1", 1, 0, ("next", 1)), ("S_BRANCH", 3, 0, ("next", 4)),
  ("S_BRANCH", 0xffff, 0, ("hang", 0)), ("S_CBRANCH_SCC0", 0xfffd, 0, ("hang", 0)), ("S_NOP", 5, 0, ("next", 1)),
  ("S_ENDPGM", 0, 0, ("end", 0)), ("S_TRAP", 2, 0, ("trap", 0))])
def test_sopp_next_pc_by_hand(op, simm16, scc, want):
  # PC_next = PC + 4 + 4 * simm16 when taken: slot 1 is the next instruction, SOPP_SLOTS + 1 = 4 the final s_endpgm, <= 0 loops back.
  # Markers s0-s2 run before the instruction, s3-s5 are slots 1-3 after it.
  c = case("rdna3", "SOPP", op, scc=scc, simm16=simm16)
  assert amd_exec.sopp_outcome(c) == want
  if want[0] == "next": assert sorted(amd_exec.marker_writes(c)) == [0, 1, 2, *range(2 + want[1], 6)]
  exec_target.checked_run(c)

def test_vopd_destinations_by_hand():
  # VDSTY holds vdsty >> 1; its bit 0 is the opposite of vdstx's: vdstx = v5, VDSTY = 3 -> v6
  c = case("rdna3", "VOPD", "V_DUAL_MOV_B32", opy=8, vdstx=5, vdsty=3, srcx0=256 + 1, srcy0=256 + 2)
  assert [(d.file, d.reg) for d in amd_exec.operands(c)[1]] == [("v", 5), ("v", 6)]
  st = exec_target.checked_run(c)
  assert (st.vgpr[0, :, 5] == st.vgpr[0, :, 1]).all() and (st.vgpr[0, :, 6] == st.vgpr[0, :, 2]).all()

# emulator bugs the fuzzers found, fixed since (docs/fuzzing.md; unit tests in tests/unit/amd/test_fixes_memory.py): each case must
# now pass every check. A new open finding goes in as a strict xfail that expects its Finding kind.
FIXED = {
  "rdna3 ds_permute with an address >= 2^31": lambda: case("rdna3", "DS", "DS_PERMUTE_B32", vgprs={0: 0xfffffffc}, addr=0, vdst=1, data0=2),
  "cdna buffer_load_short_d16 out of range clears the high half": lambda: case(
    "cdna", "MUBUF", "BUFFER_LOAD_SHORT_D16", lanes=64, exec_=1, sgprs={4: GLOBAL_BASE & 0xffffffff, 5: GLOBAL_BASE >> 32, 6: 8},
    vgprs={0: 64, 1: 0x12340000}, vaddr=0, vdata=1, srsrc=1, soffset=128, offen=1),
  "cdna buffer_load_ubyte of the last byte in range": lambda: case(
    "cdna", "MUBUF", "BUFFER_LOAD_UBYTE", lanes=64, exec_=1, sgprs={4: GLOBAL_BASE & 0xffffffff, 5: GLOBAL_BASE >> 32, 6: 8},
    vgprs={0: 7}, vaddr=0, vdata=1, srsrc=1, soffset=128, offen=1),
  "cdna s_store_dwordx2 straddling the buffer end": lambda: case(
    "cdna", "SMEM", "S_STORE_DWORDX2", lanes=64, sgprs={0: (GLOBAL_BASE + 4092) & 0xffffffff, 1: GLOBAL_BASE >> 32}, sdata=4, sbase=0, imm=1),
  "rdna4 global_load_block": lambda: case("rdna4", "VGLOBAL", "GLOBAL_LOAD_BLOCK", sgprs={125: 1}, vdst=8, saddr=124),
}

@pytest.mark.parametrize("name", sorted(FIXED))
def test_fixed_findings(name):
  exec_target.check(FIXED[name]())
