"""GC hub translation: page tables built by hand in VRAM, walked on invalidation, and the memory map the engines see.

Expected translations are worked from the RDNA PTE format (valid bit 0, system bit 1, writeable bit 6, address bits 12-47, leaf
bit 54 on GFX11 / 63 on GFX12 above the last level) and the 9-bit-per-level VA split."""
import ctypes, mmap
import numpy as np
import pytest
from pci_util import make_gpu, mc, rreg, wreg
from emu.amd.api import GPUMemoryFault

VA = 0x2000_0000_0000
ROOT, PDB1, PDB0, PTB = 0x100000, 0x101000, 0x102000, 0x103000
V, SYS, W = 1, 2, 1 << 6

def setup(arch="gfx1100"):
  gpu = make_gpu(arch)
  q = gpu.vram_q
  def entry(table, i, value): q[table // 8 + i] = value
  entry(ROOT, 0, PDB1 | V)          # VA bits 39-47 = 0
  entry(PDB1, 0, PDB0 | V)          # bits 30-38 = 0
  entry(PDB0, 0, PTB | V)           # bits 21-29 = 0: a table of 4 KB pages
  entry(PTB, 0, 0x200000 | V | W)
  entry(PTB, 1, 0x201000 | V | W)   # contiguous with the page before: one run of 8 KB
  entry(PTB, 2, 0x300000 | V)       # read-only
  leaf = (1 << 63) if arch == "gfx1201" else (1 << 54)
  entry(PDB0, 1, 0x400000 | V | W | leaf)   # VA + 2 MB: one 2 MB page
  wreg(gpu, "regGCVM_CONTEXT0_PAGE_TABLE_START_ADDR_LO32", (VA >> 12) & 0xffffffff)
  wreg(gpu, "regGCVM_CONTEXT0_PAGE_TABLE_START_ADDR_HI32", VA >> 44)
  wreg(gpu, "regGCVM_CONTEXT0_PAGE_TABLE_END_ADDR_LO32", 0xffffffff)
  wreg(gpu, "regGCVM_CONTEXT0_PAGE_TABLE_END_ADDR_HI32", 0xf)
  wreg(gpu, "regGCVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_LO32", ROOT | 1)
  wreg(gpu, "regGCVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_HI32", 0)
  wreg(gpu, "regGCVM_CONTEXT0_CNTL", enable_context=1, page_table_depth=3)
  return gpu, entry

def invalidate(gpu):
  wreg(gpu, "regGCVM_INVALIDATE_ENG17_REQ", per_vmid_invalidate_req=1, invalidate_l2_ptes=1)
  assert rreg(gpu, "regGCVM_INVALIDATE_ENG17_ACK") & 1

@pytest.mark.parametrize("arch", ["gfx1100", "gfx1201"])
def test_walk_maps_4k_pages_and_a_2m_page_with_their_permissions(arch):
  gpu, _ = setup(arch)
  gpu.vram[0x200ff8:0x201008] = np.arange(16, dtype=np.uint8)
  gpu.vram[0x401234] = 0x5a
  invalidate(gpu)
  assert gpu.memory.read(VA + 0xff8, 16) == bytes(range(16))            # across the two 4 KB pages: one contiguous run
  assert gpu.memory.read(VA + (2 << 20) + 0x1234, 1) == b"\x5a"          # the 2 MB page at VRAM 0x400000
  gpu.memory.write(VA + 0x10, b"\x01")
  assert gpu.vram[0x200010] == 1
  with pytest.raises(GPUMemoryFault): gpu.memory.write(VA + 0x2000, b"\x01")   # PTE without the writeable bit
  gpu.memory.read(VA + 0x2000, 4)
  with pytest.raises(GPUMemoryFault): gpu.memory.read(VA + 0x3000, 4)          # PTE 3 is not valid

def test_a_gfx11_leaf_bit_on_gfx12_is_not_a_leaf():
  gpu, entry = setup("gfx1201")
  entry(PDB0, 1, 0x400000 | V | W | (1 << 54))   # bit 54 is an MTYPE bit on GFX12: the entry points at a (zero) table
  invalidate(gpu)
  with pytest.raises(GPUMemoryFault): gpu.memory.read(VA + (2 << 20), 4)

def test_translation_is_cached_until_the_driver_invalidates():
  gpu, entry = setup()
  gpu.vram[0x200000], gpu.vram[0x500000] = 1, 2
  invalidate(gpu)
  entry(PTB, 0, 0x500000 | V | W)
  assert gpu.memory.read(VA, 1) == b"\x01"   # the hub still uses the translation it cached
  invalidate(gpu)
  assert gpu.memory.read(VA, 1) == b"\x02"

def test_system_pages_reach_host_memory_through_their_bus_frame():
  gpu, entry = setup()
  host = mmap.mmap(-1, 4096)
  addr = ctypes.addressof(ctypes.c_char.from_buffer(host))
  host[:4] = b"host"
  frame = gpu.bus.frames(addr >> 12, 1)[0]
  entry(PTB, 5, (frame << 12) | V | W | SYS)
  entry(PTB, 6, (0x7ff_0000_0000) | V | W | SYS)   # a bus address nothing answers: unmapped
  invalidate(gpu)
  assert gpu.memory.read(VA + 0x5000, 4) == b"host"
  with pytest.raises(GPUMemoryFault): gpu.memory.read(VA + 0x6000, 4)

def test_a_fault_latches_the_hub_status_and_posts_a_utcl2_entry_the_driver_decodes():
  from tinygrad.runtime.autogen.am import am
  gpu, _ = setup()
  invalidate(gpu)
  ring = 0x600000
  wreg(gpu, "regIH_RB_BASE", mc(ring) >> 8)
  wreg(gpu, "regIH_RB_BASE_HI", mc(ring) >> 40)
  wreg(gpu, "regIH_RB_CNTL", rb_enable=1, rb_size=14)   # 64 KB ring
  try: gpu.memory.write(VA + 0x3008, b"\0")
  except GPUMemoryFault as e: gpu.on_fault(None, e)
  entry = [int(x) for x in gpu.vram[ring:ring + 32].view(np.uint32)]
  assert am.SOC15_CLIENT_ID_FROM_IH_ENTRY(entry) == am.SOC21_IH_CLIENTID_GFX
  assert am.SOC15_SOURCE_ID_FROM_IH_ENTRY(entry) == am.GFX_11_0_0__SRCID__UTCL2_FAULT
  assert gpu.regs.reg("regIH_RB_WPTR").decode(rreg(gpu, "regIH_RB_WPTR"))["offset"] == 8   # one 32-byte entry, in dwords
  va_page = rreg(gpu, "regGCVM_L2_PROTECTION_FAULT_ADDR_LO32") | (rreg(gpu, "regGCVM_L2_PROTECTION_FAULT_ADDR_HI32") << 32)
  assert va_page << 12 == VA + 0x3000
  status = gpu.regs.reg("regGCVM_L2_PROTECTION_FAULT_STATUS").decode(rreg(gpu, "regGCVM_L2_PROTECTION_FAULT_STATUS"))
  assert status["mapping_error"] == 1 and status["rw"] == 1
  wreg(gpu, "regGCVM_L2_PROTECTION_FAULT_CNTL", clear_protection_fault_status_addr=1)
  assert rreg(gpu, "regGCVM_L2_PROTECTION_FAULT_STATUS") == 0

def test_the_bus_resolves_a_range_across_frame_runs_and_leaves_gaps_out():
  from mockgpu.pci.bus import FRAME_BASE, PAGE, PhysicalBus
  bus = PhysicalBus()
  a = bus.frames(0x1000, 2)          # virtual pages 0x1000-0x1001: frames f, f+1
  b = bus.frames(0x5000, 1)          # another buffer: the next frame, far away in virtual memory
  c = bus.frames(0x1002, 1)          # the page after the first buffer: frame f+3, contiguous virtual but not physical
  assert a == [FRAME_BASE // PAGE, FRAME_BASE // PAGE + 1] and b == [a[1] + 1] and c == [b[0] + 1]
  assert bus.resolve(a[0] * PAGE, 3 * PAGE) == [(0, 0x1000 * PAGE, 2 * PAGE), (2 * PAGE, 0x5000 * PAGE, PAGE)]
  assert bus.resolve((c[0] + 5) * PAGE, PAGE) == []   # no frame there
  assert bus.frames(0x1000, 3) == a + c                # frames stay bound to their pages

def test_pagemap_answers_frames_and_refuses_an_unbounded_read():
  import errno, struct
  import pytest
  from mockgpu.pci import driver
  data = driver._pagemap(0x1000 * 8, 16)   # two pages from virtual page 0x1000
  a, b = struct.unpack("<2Q", data)
  assert a >> 63 and b >> 63 and (b & ((1 << 55) - 1)) == (a & ((1 << 55) - 1)) + 1   # present, consecutive frames
  with pytest.raises(OSError) as e: driver._pagemap(0, 1 << 60)
  assert e.value.errno == errno.EINVAL
