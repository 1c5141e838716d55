"""MemoryMap's per-lane loads and stores (emu/common/memory.py): the word path (every lane one aligned word of one mapping) and the
byte path give the same little-endian values, lanes are written in order, and faults move nothing. Expected bytes worked by
hand from the little-endian layout."""
import numpy as np
import pytest
from emu.amd.api import GPUMemoryFault
from emu.common.memory import MemoryMap

def mapped(n=64, offset=0):
  buf = np.arange(n, dtype=np.uint8)
  mem = MemoryMap()
  mem.map(0x1000 + offset, n, "buf", backing=buf)
  return mem, buf

@pytest.mark.parametrize("nbytes", [1, 2, 4, 8])
@pytest.mark.parametrize("shift", [0, 1])   # 0: aligned lanes (word path); 1: every lane one byte further (byte path)
def test_load_is_little_endian_either_way(nbytes, shift):
  mem, _ = mapped()
  addrs = np.array([0x1000 + shift + nbytes * i for i in range(4)], dtype=np.uint64)
  want = [int.from_bytes(bytes(range(shift + nbytes * i, shift + nbytes * (i + 1))), "little") for i in range(4)]
  assert mem.load(addrs, nbytes).tolist() == want

def test_a_mapping_not_starting_on_a_word_takes_the_byte_path():
  mem, _ = mapped(offset=2)   # 0x1002: 4-byte words of it are not naturally aligned
  assert mem.load(np.array([0x1004], dtype=np.uint64), 4).tolist() == [int.from_bytes(bytes([2, 3, 4, 5]), "little")]

@pytest.mark.parametrize("shift", [0, 1])
def test_store_writes_in_lane_order(shift):
  mem, buf = mapped()
  a = 0x1000 + 8 + shift
  mem.store(np.array([a, a + 4, a], dtype=np.uint64), np.array([0x11223344, 0x55667788, 0xaabbccdd], dtype=np.uint64), 4)
  assert buf[8 + shift:16 + shift].tolist() == [0xdd, 0xcc, 0xbb, 0xaa, 0x88, 0x77, 0x66, 0x55]   # the third lane wins at a

def test_lanes_in_two_mappings_and_a_faulting_store():
  mem, buf = mapped()
  other = np.zeros(16, dtype=np.uint8)
  mem.map(0x2000, 16, "other", backing=other)
  mem.store(np.array([0x1000, 0x2000], dtype=np.uint64), np.array([0x0102, 0x0304], dtype=np.uint64), 2)
  assert buf[:2].tolist() == [2, 1] and other[:2].tolist() == [4, 3]
  before = buf.copy()
  with pytest.raises(GPUMemoryFault): mem.store(np.array([0x1000, 0x3000], dtype=np.uint64), np.array([7, 7], dtype=np.uint64), 4)
  assert (buf == before).all()

def test_located_span_reads_equal_the_memory_reads():
  # a span located once (emu/amd/mem_access.py Located) answers reads at one offset for all lanes from the mapping's dwords, and
  # hands any other read (lane-dependent offsets, outside the span, unaligned) to the memory: the same values and traffic either way
  from emu.amd.api import DispatchStats
  from emu.amd.mem_access import GlobalMemory, Located, locate
  mem, _ = mapped()
  gm = GlobalMemory(mem, DispatchStats())
  addrs = np.array([0x1000, 0x1010, 0x1008, 0x1020], dtype=np.uint64)
  view = locate(gm, addrs, 0, 16, False)
  assert isinstance(view, Located)
  word = lambda o: int.from_bytes(bytes(range(o, o + 4)), "little")
  for delta, nbytes in ((0, 4), (4, 4), (8, 8), (12, 4)):
    want = [word(a - 0x1000 + delta) | (word(a - 0x1000 + delta + 4) << 32 if nbytes == 8 else 0) for a in addrs.tolist()]
    assert view.read(addrs + np.uint64(delta), nbytes).tolist() == want
  assert gm.stats.bytes_read == 4 * (4 + 4 + 8 + 4)
  for other in (addrs + np.array([0, 4, 0, 4], dtype=np.uint64), addrs + np.uint64(2), addrs + np.uint64(16)):
    assert view.read(other, 4).tolist() == mem.load(other, 4).tolist()

def test_locate_leaves_faulting_unaligned_or_split_spans_to_the_memory():
  from emu.amd.api import DispatchStats
  from emu.amd.mem_access import GlobalMemory, locate
  mem, _ = mapped()
  mem.map(0x2000, 16, "other", backing=np.zeros(16, dtype=np.uint8))
  gm = GlobalMemory(mem, DispatchStats())
  for addrs in ([0x1000, 0x1038], [0x1000, 0x1002], [0x1000, 0x2000]):   # past the end, unaligned, two mappings
    assert locate(gm, np.array(addrs, dtype=np.uint64), 0, 16, False) is gm

def test_located_span_writes_in_lane_order_and_count_traffic():
  from emu.amd.api import DispatchStats
  from emu.amd.mem_access import GlobalMemory, Located, locate
  mem, buf = mapped()
  gm = GlobalMemory(mem, DispatchStats())
  addrs = np.array([0x1000, 0x1004], dtype=np.uint64)   # overlapping 16-byte spans
  view = locate(gm, addrs, 0, 16, True)
  assert isinstance(view, Located)
  view.write(addrs + np.uint64(4), np.array([0x1111111122222222, 0x3333333344444444], dtype=np.uint64), 8)
  # lane 0 writes dwords at 0x1004 (lo) and 0x1008 (hi), then lane 1 at 0x1008 and 0x100c: lane 1's low dword wins at 0x1008
  assert buf[4:16].view("<u4").tolist() == [0x22222222, 0x44444444, 0x33333333] and gm.stats.bytes_written == 16
  ro = MemoryMap()
  ro.map(0x1000, 64, "ro", writable=False, backing=np.zeros(64, dtype=np.uint8))
  assert not isinstance(locate(GlobalMemory(ro, DispatchStats()), addrs, 0, 16, True), Located)   # read-only: the memory's own store faults

def test_scalar_reads_and_writes_run_across_adjacent_mappings_and_fault_whole_at_a_gap():
  # one buffer whose two pages the page tables map to separate runs (the AM driver's VRAM): an SDMA copy or a packet read across the
  # page boundary reaches both, as the hardware's per-page translation does
  lo, hi = np.zeros(4096, np.uint8), np.zeros(4096, np.uint8)
  mem = MemoryMap()
  mem.map(0x10000, 4096, "page 0", backing=lo)
  mem.map(0x11000, 4096, "page 1", backing=hi)
  mem.write(0x10ffe, bytes([1, 2, 3, 4]))
  assert lo[-2:].tolist() == [1, 2] and hi[:2].tolist() == [3, 4] and mem.read(0x10ffe, 4) == bytes([1, 2, 3, 4])
  mem.map(0x13000, 4096, "after a gap", backing=np.zeros(4096, np.uint8))
  with pytest.raises(GPUMemoryFault) as e: mem.write(0x11ffe, bytes(8))   # 0x12000 is not mapped: no byte moves
  assert e.value.addr == 0x12000 and hi[-2:].tolist() == [0, 0]
  ro = MemoryMap()
  ro.map(0x10000, 4096, "rw", backing=lo)
  ro.map(0x11000, 4096, "ro", writable=False, backing=hi)
  with pytest.raises(GPUMemoryFault): ro.write(0x10fff, bytes([9, 9]))
  assert lo[-1] == 2

def test_lane_accesses_run_across_adjacent_mappings_byte_by_byte_in_lane_order():
  lo, hi = np.zeros(4096, np.uint8), np.zeros(4096, np.uint8)
  mem = MemoryMap()
  mem.map(0x10000, 4096, "page 0", backing=lo)
  mem.map(0x11000, 4096, "page 1", backing=hi)
  # lane 0 stores 4 bytes across the page boundary, lane 1 overlaps its last two bytes: the later lane wins there
  mem.store(np.array([0x10ffe, 0x11000], dtype=np.uint64), np.array([0x44332211, 0x88776655], dtype=np.uint64), 4)
  assert lo[-2:].tolist() == [0x11, 0x22] and hi[:4].tolist() == [0x55, 0x66, 0x77, 0x88]
  assert mem.load(np.array([0x10ffe, 0x10ffc], dtype=np.uint64), 4).tolist() == [0x66552211, 0x22110000]
  assert mem.gather(np.array([0x10fff], dtype=np.uint64), 2).tolist() == [[0x22, 0x55]]
  mem.check(np.array([0x10ffe], dtype=np.uint64), 4, True)   # (no fault)
  gap = MemoryMap()
  gap.map(0x10000, 4096, "page 0", backing=lo)
  with pytest.raises(GPUMemoryFault): gap.store(np.array([0x10000, 0x10ffe], dtype=np.uint64), np.array([9, 9], dtype=np.uint64), 4)
  assert lo[0] == 0   # the faulting store moved nothing

def test_the_native_tables_follow_every_map_and_unmap():
  # kept row by row: after each change they must be what the mappings say, sorted by unsigned start (host addresses and
  # addresses past 2**63 alike), host memory the process may unmap (present) left out, the write table only writable ranges
  rng, mem, live, backing = np.random.default_rng(3), MemoryMap(), {}, np.zeros(64, dtype=np.uint8)
  starts = [0x1000 * k for k in range(1, 40)] + [(1 << 63) + 0x1000 * k for k in range(1, 20)]
  for _ in range(300):
    addr = int(rng.choice(starts))
    if addr in live: mem.unmap(addr); del live[addr]
    else: live[addr] = mem.map(addr, 64, writable=bool(rng.integers(2)), backing=backing, present=(lambda: True) if rng.integers(4) == 0 else None)
    for write in (False, True):
      want = [m.native_row for a, m in sorted(live.items()) if m.present is None and (m.writable or not write)]
      assert [tuple(r) for r in mem.native_table(write).tolist()] == want
  mem.clear()
  assert mem.native_table().shape == mem.native_table(True).shape == (0, 3)

def test_scalar_reads_and_writes_of_host_memory_the_process_may_unmap_still_fault_once_it_is_gone():
  mem, buf, there = MemoryMap(), np.zeros(16, dtype=np.uint8), [True]
  mem.map(0x4000, 16, backing=buf, present=lambda: there[0])
  mem.write(0x4004, b"\1\2\3\4")
  assert mem.read(0x4003, 3) == b"\0\1\2" and buf[4:8].tolist() == [1, 2, 3, 4]
  there[0] = False
  with pytest.raises(GPUMemoryFault, match="unmapped"): mem.read(0x4004, 4)
  with pytest.raises(GPUMemoryFault, match="unmapped"): mem.write(0x4004, b"\0")
