"""LDS bank conflicts: how many cycles each DS instruction of a dispatch keeps the LDS busy, from the addresses its lanes touch.

The LDS of every emulated arch has 32 banks of 4 bytes (dword address mod 32 picks the bank; AMD's RDNA and CDNA ISA guides,
"Local Data Share"), and serves 32 lanes at a time: a wave32 at once, a wave64 (and every CDNA wave) half by half. Within one
such group and one access of the instruction (a 2ADDR op makes two, a B64 access two dwords per lane), each bank delivers one
dword per cycle and lanes reading the same dword share it, so the group takes as many cycles as its busiest bank has distinct
dwords. The fewest it could take is its distinct dwords / 32 (a B64 or B128 access fills the banks 2 or 4 times over without
any conflict); the cycles beyond that are bank-conflict cycles. The PMC counters read both (`*_LDS_IDX_ACTIVE`: all cycles,
`*_LDS_BANK_CONFLICT`: the conflict ones).

`LdsBanks` is a dispatch observer that reads the waves' registers (so native regions step aside while it watches): before each
DS instruction it takes the active lanes' addresses, and adds the instruction's cycles and conflict cycles to its wave.
Lane-crossing DS ops (ds_permute/bpermute, ds_swizzle, ds_append/consume) and the ADDTID forms (lane i at M0 + 4i: consecutive
dwords) take one cycle per group of lanes, conflict-free.
"""
from __future__ import annotations
import collections
import numpy as np
from emu.amd.exec_vmem import VmemStep
from emu.amd.observe import DispatchObserver

BANKS = 32          # 4-byte banks
GROUP = 32          # lanes the LDS serves together

def group_cycles(dwords:np.ndarray) -> tuple[int, int]:
  """(cycles, conflict cycles) of one group of lanes making one access: `dwords` the dword addresses it touches (any shape)."""
  d = np.unique(np.asarray(dwords, dtype=np.int64).reshape(-1))
  if not len(d): return 0, 0
  cycles = int(np.bincount(d % BANKS, minlength=BANKS).max())
  return cycles, cycles - -(-len(d) // BANKS)

def instruction_cycles(addrs:np.ndarray, lanes:np.ndarray, accesses:list[tuple[int, int]]) -> tuple[int, int]:
  """(cycles, conflict cycles) of one wave's DS instruction: active lanes `lanes` (lane ids) at byte addresses `addrs`, each
  making the op's `accesses` ((byte offset from the address, bytes), as footprint records them)."""
  total = conflicts = 0
  groups = lanes // GROUP
  for g in np.unique(groups):
    a = addrs[groups == g].astype(np.int64)
    for off, nbytes in dict.fromkeys(accesses):   # (an atomic's read and write of one dword are one access)
      lo, hi = (a + off) // 4, (a + off + nbytes - 1) // 4   # each lane's first and last dword
      c, k = group_cycles(np.minimum(lo[:, None] + np.arange(int((hi - lo).max()) + 1)[None, :], hi[:, None]))
      total, conflicts = total + c, conflicts + k
  return total, conflicts

class LdsBanks(DispatchObserver):
  """Per wave (dispatch-wide number) of the dispatches it watches: LDS cycles and bank-conflict cycles of its DS instructions."""
  reads_registers = True
  def __init__(self):
    self.cycles: collections.Counter[int] = collections.Counter()
    self.conflicts: collections.Counter[int] = collections.Counter()

  def of(self, waves:list[int]) -> tuple[np.ndarray, np.ndarray]:
    """(cycles, conflict cycles) of `waves`, as arrays in that order."""
    return np.array([self.cycles[w] for w in waves], np.int64), np.array([self.conflicts[w] for w in waves], np.int64)

  def before(self, st, ws:np.ndarray, step, pc:int, first_wave:int):
    name = step.instr.op.name if hasattr(step, "instr") else ""
    if not name.startswith("DS_"): return
    # lane-crossing and ADDTID ops: a cycle per group of lanes with any active one
    if not (isinstance(step, VmemStep) and step.op.kind != "wave" and step.block is None and "M0" not in step.op.reads):
      active = st.exec_bits(ws)
      for i, w in enumerate(ws.tolist()): self.cycles[w + first_wave] += len(np.unique(np.nonzero(active[i])[0] // GROUP))
      return
    wv, ln, addrs = step.active_addresses(st, ws)
    for i in np.unique(wv).tolist():
      mine = wv == i
      c, k = instruction_cycles(addrs[mine], ln[mine], step.accesses)
      self.cycles[int(ws[i]) + first_wave] += c
      self.conflicts[int(ws[i]) + first_wave] += k
