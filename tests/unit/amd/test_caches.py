"""The data-cache model (emu/amd/caches.py) on hand-worked access sequences: 128-byte lines, 16-way LRU sets, loads through
L0 -> GL1 -> L2, stores written through to the write-allocating L2, lanes coalesced per line, invalidations per level."""
import numpy as np
from emu.amd.caches import LINE, WAYS, Caches, Hierarchy, L2Counts, LineCache, lines_of

def counts(n=4): return L2Counts(np.zeros(n, np.int64), np.zeros(n, np.int64))

def test_a_set_keeps_its_16_most_recent_lines():
  c = LineCache(LINE * WAYS * 2)   # two sets: even lines in set 0
  lines = [2 * i for i in range(WAYS + 1)]
  assert not any(c.access(x) for x in lines)            # 17 cold misses into set 0: line 0, the oldest, is evicted
  assert not c.access(0) and c.access(4) and c.access(2 * WAYS)
  assert not c.access(1, allocate=False) and not c.access(1)   # a probe without allocation leaves it out

def test_loads_fill_every_level_and_stores_go_to_the_l2():
  h, n = Hierarchy(Caches(l0=4096, gl1=8192, scalar=1024, l2=1 << 20, channels=4)), counts()
  lines = np.array([0, 1, 2, 3, 4])
  h.vector(cu=0, array=0, lines=lines, write=False, counts=n)
  assert (n.misses.sum(), n.hits.sum()) == (5, 0) and n.misses.tolist() == [2, 1, 1, 1]   # channel = line % 4
  h.vector(0, 0, lines, False, n)   # the same CU: all in its L0
  h.vector(1, 0, lines, False, n)   # another CU of the same array: its GL1 has them
  assert (n.misses.sum(), n.hits.sum()) == (5, 0)
  h.vector(2, 1, lines, False, n)   # another array: L2 hits
  assert (n.misses.sum(), n.hits.sum()) == (5, 5)
  h.vector(0, 0, np.array([4, 9]), True, n)   # stores: through to L2, hitting 4, allocating 9
  assert (n.misses.sum(), n.hits.sum()) == (6, 6)
  h.vector(0, 0, np.array([9]), False, n)   # the store did not fill L0 or GL1: an L2 hit
  assert n.hits.sum() == 7

def test_invalidations_empty_only_the_levels_they_name():
  h, n = Hierarchy(Caches(l0=4096, gl1=0, scalar=1024, l2=1 << 20, channels=1)), counts(1)
  h.vector(0, 0, np.array([7]), False, n); h.scalar_load(0, np.array([8]), n)
  h.invalidate(l2=False, vector=True, scalar=False)
  h.vector(0, 0, np.array([7]), False, n); h.scalar_load(0, np.array([8]), n)   # L0 emptied: an L2 hit; scalar cache kept: nothing
  assert (n.misses[0], n.hits[0]) == (2, 1)
  h.invalidate(l2=True, vector=True, scalar=True)
  h.vector(0, 0, np.array([7]), False, n); h.scalar_load(0, np.array([8]), n)
  assert (n.misses[0], n.hits[0]) == (4, 1)

def test_lanes_are_coalesced_per_line_and_wave():
  lanes, line = np.arange(32), lambda x: x // LINE
  assert lines_of(0x1000 + 4 * lanes, [(0, 4)])[1].tolist() == [line(0x1000)]                # 32 floats: one line
  assert lines_of(0x1040 + 4 * lanes, [(0, 4)])[1].tolist() == [line(0x1000), line(0x1080)]   # half a line off: two
  assert len(lines_of(0x1000 + 16 * lanes, [(0, 16)])[1]) == 4                                # 32 x 16 bytes: four lines
  assert lines_of(np.array([0x107e]), [(0, 4)])[1].tolist() == [line(0x1000), line(0x1080)]   # one access across a line end
  # two waves' lanes at once: each wave's own lines (the same line in two waves counts for each), sorted by wave
  groups, lines = lines_of(np.array([0x1000, 0x1004, 0x1000, 0x2000]), [(0, 4), (256, 4)], np.array([0, 0, 1, 1]))
  assert list(zip(groups.tolist(), lines.tolist())) == [(0, line(0x1000)), (0, line(0x1100)), (1, line(0x1000)), (1, line(0x1100)),
                                                        (1, line(0x2000)), (1, line(0x2100))]
