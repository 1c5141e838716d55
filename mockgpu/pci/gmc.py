"""The memory controller's VM hubs: page-table walks, the translation they cache, invalidation, and fault status.

Each hub (GC: shaders, the command processor and SDMA; MM: the multimedia hub) has VM context 0's registers (page-table base,
start/end, depth) and invalidation engine 17 (SEM/REQ/ACK). A store to REQ walks the context's page tables in VRAM as the
hub's L2 would and replaces its translation cache; until the next invalidation the hub keeps using what it cached, so a PTE
the driver changes without invalidating has no effect, as on the hardware. A walk yields `Run`s: contiguous GPU-VA ranges that
map contiguous VRAM or bus (system) addresses with one permission. The PCI GPU turns the GC hub's runs into the MemoryMap its
engines and shader emulator use, which is the one place GPU VA becomes host memory on this path.

Page-table format (RDNA, 4 levels below a 48-bit VA, 512 entries per 4 KB table, VA relative to the context's start address):
bit 0 valid, bit 1 system, bit 6 writeable, bits 12-47 the address; an entry above the last level is a leaf (a 2 MB or 1 GB
page) when its PDE-is-PTE bit is set: bit 54 on GFX10/11, bit 63 on GFX12.
"""
from __future__ import annotations
from dataclasses import dataclass
import numpy as np
from mockgpu.pci.registers import PCIDeviceError, RegisterFile

ADDR_MASK = 0x0000_FFFF_FFFF_F000
LEVEL_SHIFTS = (39, 30, 21, 12)   # bits of VA one entry covers at each level, root (PDB2) first

@dataclass(frozen=True, order=True)
class Run:
  """GPU VA [va, va+size) maps to `phys` (a VRAM offset, or a bus address when `system`)."""
  va: int
  size: int
  phys: int
  system: bool
  writable: bool

class Hub:
  """One VM hub; `prefix` is 'GC' or 'MM'. `vram_q` is VRAM as uint64 (page tables live there); `on_invalidate(hub)` runs after
  the translation cache was refilled."""
  def __init__(self, regs:RegisterFile, prefix:str, gfx12:bool, vram_q:np.ndarray, on_invalidate=None):
    self.regs, self.prefix, self.vram_q, self.on_invalidate = regs, prefix, vram_q, on_invalidate
    self.leaf_bit = np.uint64(1 << 63) if gfx12 else np.uint64(1 << 54)
    self.runs: list[Run] = []
    regs.set(f"reg{prefix}VM_INVALIDATE_ENG17_SEM", semaphore=1)
    regs.on_write(f"reg{prefix}VM_INVALIDATE_ENG17_REQ", self._request)
    regs.on_write(f"reg{prefix}VM_INVALIDATE_ENG17_SEM", self._semaphore)

  def _r(self, name:str) -> int: return self.regs.get(f"reg{self.prefix}{name}")
  def _pair(self, name:str) -> int: return self._r(f"{name}_LO32") | (self._r(f"{name}_HI32") << 32)

  def _semaphore(self, value:int):
    # the driver releases engine 17's semaphore with a write of 0; it is free again, so the next read acquires it
    self.regs.set(f"reg{self.prefix}VM_INVALIDATE_ENG17_SEM", semaphore=1)

  def _request(self, value:int):
    vmids = self.regs.reg(f"reg{self.prefix}VM_INVALIDATE_ENG17_REQ").decode(value)["per_vmid_invalidate_req"]
    if vmids & ~1: raise PCIDeviceError(f"{self.regs.name}: {self.prefix}VM_INVALIDATE_ENG17_REQ for VMIDs {vmids:#x}: only VMID 0 is emulated")
    self.runs = self.walk()
    self.regs.set(f"reg{self.prefix}VM_INVALIDATE_ENG17_ACK", per_vmid_invalidate_ack=vmids)
    if self.on_invalidate is not None: self.on_invalidate(self)

  def walk(self) -> list[Run]:
    """Walk context 0's page tables (nothing when the context is disabled)."""
    cntl = self.regs.fields(f"reg{self.prefix}VM_CONTEXT0_CNTL")
    if not cntl["enable_context"]: return []
    base = self._pair("VM_CONTEXT0_PAGE_TABLE_BASE_ADDR")
    start, end = self._pair("VM_CONTEXT0_PAGE_TABLE_START_ADDR") << 12, (self._pair("VM_CONTEXT0_PAGE_TABLE_END_ADDR") + 1) << 12
    depth = cntl["page_table_depth"]
    if depth > 3: raise PCIDeviceError(f"{self.regs.name}: {self.prefix}VM_CONTEXT0_CNTL.page_table_depth={depth}: at most 3 levels below the root")
    runs: list[Run] = []
    self._table(base & ADDR_MASK, 3 - depth, start, runs)
    return _merge(sorted(r for r in runs if r.va < end))

  def _table(self, paddr:int, level:int, va0:int, out:list[Run]):
    if paddr + 0x1000 > self.vram_q.size * 8:
      raise PCIDeviceError(f"{self.regs.name}: {self.prefix} hub page-table walk reached table {paddr:#x}, beyond VRAM")
    ents = self.vram_q[paddr // 8 : paddr // 8 + 512]
    idx = np.nonzero(ents & np.uint64(1))[0]
    if not idx.size: return
    cover = 1 << LEVEL_SHIFTS[level]
    leaf = np.ones(idx.size, bool) if level == 3 else (ents[idx] & self.leaf_bit) != 0
    for i in idx[~leaf]:
      if int(ents[i]) & 2: raise PCIDeviceError(f"{self.regs.name}: {self.prefix} hub: directory entry {int(ents[i]):#x} points at system memory")
      self._table(int(ents[i]) & ADDR_MASK, level + 1, va0 + int(i) * cover, out)
    li = idx[leaf]
    if not li.size: return
    e = ents[li]
    phys, system, writable = e & np.uint64(ADDR_MASK), (e >> np.uint64(1)) & np.uint64(1), (e >> np.uint64(6)) & np.uint64(1)
    brk = np.nonzero((np.diff(li) != 1) | (np.diff(phys.astype(np.int64)) != cover) | (np.diff(system) != 0) | (np.diff(writable) != 0))[0] + 1
    for s, t in zip(np.concatenate([[0], brk]), np.concatenate([brk, [li.size]])):
      out.append(Run(va0 + int(li[s]) * cover, int(t - s) * cover, int(phys[s]), bool(system[s]), bool(writable[s])))

  # ---- faults ----
  def record_fault(self, va:int, write:bool, mapped:bool):
    """Latch a protection fault in the hub's status/address registers (the driver reads them when the IH reports it)."""
    status = "regGCVM_L2_PROTECTION_FAULT_STATUS" + ("_LO32" if "regGCVM_L2_PROTECTION_FAULT_STATUS_LO32" in self.regs.defs else "")
    self.regs.set(status, more_faults=0, mapping_error=int(not mapped), permission_faults=4 if mapped else 0, rw=int(write), vmid=0)
    self.regs.set("regGCVM_L2_PROTECTION_FAULT_ADDR_LO32", (va >> 12) & 0xffffffff)
    self.regs.set("regGCVM_L2_PROTECTION_FAULT_ADDR_HI32", va >> 44)

def _merge(runs:list[Run]) -> list[Run]:
  out: list[Run] = []
  for r in runs:
    if out and (p:=out[-1]).va + p.size == r.va and p.phys + p.size == r.phys and (p.system, p.writable) == (r.system, r.writable):
      out[-1] = Run(p.va, p.size + r.size, p.phys, p.system, p.writable)
    else: out.append(r)
  return out
