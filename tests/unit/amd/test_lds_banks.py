"""The LDS bank model (emu/amd/lds_banks.py) on hand-worked access patterns: 32 banks of 4 bytes, 32 lanes served together, each
bank one dword per cycle, lanes on one dword sharing it; conflict cycles are those beyond distinct dwords / 32."""
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.rdna3 import ins as I
from emu.amd import run_program
from emu.amd.lds_banks import LdsBanks, group_cycles, instruction_cycles

LANES = np.arange(32)

@pytest.mark.parametrize("dwords, want", [
  (LANES, (1, 0)),                     # consecutive dwords: one per bank
  (np.zeros(32, int), (1, 0)),         # every lane on one dword: broadcast
  (LANES * 32, (32, 31)),              # every lane on bank 0, each its own dword: one at a time
  (LANES * 2, (2, 1)),                 # stride 2: the even banks, two dwords each
  (LANES % 16 * 2, (1, 0)),            # stride 2 but lanes 16-31 repeat lanes 0-15's dwords: shared
  (np.stack([LANES * 2, LANES * 2 + 1], 1), (2, 0)),   # a B64 access: 64 dwords fill the 32 banks twice, no conflict
  (np.array([], int), (0, 0)),
])
def test_a_group_takes_its_busiest_banks_distinct_dwords(dwords, want):
  assert group_cycles(dwords) == want

def test_wave64_lanes_are_served_in_two_groups_and_each_access_of_a_2addr_op_counts():
  lanes = np.arange(64)
  assert instruction_cycles(lanes * 4, lanes, [(0, 4)]) == (2, 0)                 # two conflict-free groups
  assert instruction_cycles(LANES * 4, LANES, [(0, 4), (256, 4)]) == (2, 0)     # ds_load_2addr: two accesses of one cycle
  assert instruction_cycles(LANES * 128, LANES, [(0, 8)]) == (32, 30)           # B64 at a 128-byte stride: banks 0 and 1 only
  assert instruction_cycles(LANES * 4, LANES, [(0, 4), (0, 4)]) == (1, 0)       # an atomic's read and write: one access

def test_ds_instructions_run_by_the_emulator_report_their_cycles_per_wave():
  # wave 0: ds_store_b32 at lane * 4 (1 cycle), then ds_load_b32 at lane * 128 (every lane on bank 0: 32 cycles, 31 conflicts)
  banks = LdsBanks()
  run_program([I.ds_store_b32(addr=I.v[0], data0=I.v[1]), I.ds_load_b32(vdst=I.v[2], addr=I.v[3])],
              vgprs={0: LANES * 4, 1: 7, 3: LANES * 128}, lds_bytes=32 * 128, waves=2, exec_mask=(1 << 32) - 1, watch=(banks,))
  cycles, conflicts = banks.of([0, 1])
  assert cycles.tolist() == [33, 33] and conflicts.tolist() == [31, 31]

def test_inactive_lanes_touch_no_bank():
  banks = LdsBanks()
  run_program([I.ds_load_b32(vdst=I.v[2], addr=I.v[3])], vgprs={3: LANES * 128}, lds_bytes=32 * 128, exec_mask=0b1011, watch=(banks,))
  assert banks.of([0])[0].tolist() == [3] and banks.of([0])[1].tolist() == [2]   # three lanes on bank 0
