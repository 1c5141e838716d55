"""Wait instructions as facts: which of a wave's counters each one waits on and where its immediate holds each count, and
the instructions the instruction buffer consumes without issuing them. This module imports nothing, so every layer reads it:
the pcode overrides (these ops are the executor's), the executors (no architectural effect: emulated memory completes at
once), the timing model (what an instruction waits for, which instructions it never issues) and `python -m emu.amd.card`.
Counter layouts from LLVM's AMDGPU waitcnt encoding (AMDGPUWaitcnt.cpp: 6-bit load, store, sample and DS counts, 3-bit BVH,
5-bit scalar-memory; the combined gfx12 waits hold load or store count in bits 13:8 and DS count in bits 5:0)."""

# counters by the timing model's names: 'vm' vector-memory loads (RDNA4: loads, samples and BVH), 'vs' vector stores, 'lgkm'
# LDS + scalar memory + messages (before RDNA4), 'ds' LDS and 'km' scalar memory (RDNA4). None: a counter the model does not
# keep (exports; the dependency counters of s_waitcnt_depctr). Each field is (counter, low bit, width) of the 16-bit immediate.
COUNTER_WAITS: dict[str, tuple[tuple[str | None, int, int], ...]] = {
  "S_WAITCNT_VMCNT": (("vm", 0, 6),), "S_WAITCNT_VSCNT": (("vs", 0, 6),), "S_WAITCNT_LGKMCNT": (("lgkm", 0, 6),),
  "S_WAITCNT_EXPCNT": ((None, 0, 3),), "S_WAITCNT_DEPCTR": ((None, 0, 16),),
  "S_WAIT_LOADCNT": (("vm", 0, 6),), "S_WAIT_SAMPLECNT": (("vm", 0, 6),), "S_WAIT_BVHCNT": (("vm", 0, 3),),
  "S_WAIT_STORECNT": (("vs", 0, 6),), "S_WAIT_DSCNT": (("ds", 0, 6),), "S_WAIT_KMCNT": (("km", 0, 5),), "S_WAIT_EXPCNT": ((None, 0, 3),),
  "S_WAIT_LOADCNT_DSCNT": (("vm", 8, 6), ("ds", 0, 6)), "S_WAIT_STORECNT_DSCNT": (("vs", 8, 6), ("ds", 0, 6)),
}
PACKED_WAIT = "S_WAITCNT"   # several counters packed per arch (emu.amd.arch.ArchSpec.waitcnt)
OTHER_WAITS = {"S_WAIT_IDLE", "S_WAIT_EVENT"}   # wait for the wave's own outstanding work or an event: nothing outstanding here
UNISSUED = {"S_DELAY_ALU", "S_WAIT_ALU", "S_BARRIER_WAIT"}   # consumed by the instruction buffer, never issued (nor traced)


def counts(name:str, simm16:int) -> tuple[tuple[str, int], ...]:
  """The (counter, most outstanding) limits a single-purpose wait's immediate encodes, for the counters the model keeps."""
  return tuple((counter, (simm16 >> lo) & ((1 << width) - 1)) for counter, lo, width in COUNTER_WAITS[name] if counter)
