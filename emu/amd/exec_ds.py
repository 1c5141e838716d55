"""DS ops the pcode leaves to the executor (kind 'executor'): DS_SWIZZLE_B32 and the LDS counters DS_APPEND / DS_CONSUME.

DS_SWIZZLE_B32 moves the ADDR VGPR between lanes without touching LDS; OFFSET (offset1:offset0) selects the pattern (ISA "DS_SWIZZLE"):
  offset >= 0xe000  FFT: lane i reads lane bitreverse5(i) >> popcount(mask) | (i & mask), mask = offset[4:0]
  offset >= 0xc000  rotate: lane i reads (i & mask) | ((i + r) & ~mask) within its 32 lanes, r = offset[9:5], negated when
                    offset[10] is set (rotate right), mask = offset[4:0]
  offset[15] = 1    quad permute: lane i reads lane (i & ~3) + offset[2*(i&3)+1 : 2*(i&3)]
  offset[15] = 0    bit masks: lane i reads ((i & and_mask) | or_mask) ^ xor_mask within its 32 lanes, masks offset[4:0],
                    offset[9:5], offset[14:10]
A lane whose source lane is inactive (EXEC) reads 0; inactive lanes keep their destination.

DS_APPEND / DS_CONSUME: a 32-bit counter in LDS at M0[15:0] + OFFSET; every active lane gets the counter's old value and the
counter grows (append) or shrinks (consume) by the number of active lanes, once per wave. GDS forms are not emulated.
"""
from __future__ import annotations
import numpy as np
from emu.amd.api import GPUIllegalInstruction
from emu.amd.arch import ArchSpec
from emu.amd.decode import Instr, rawf
from emu.amd.step import Machine, Step
from emu.amd.wave import AGPR_BASE

U64 = np.uint64

def _bitrev5(x:np.ndarray) -> np.ndarray: return sum(((x >> b) & 1) << (4 - b) for b in range(5))

def swizzle_sources(offset:int, lanes:int) -> np.ndarray:
  """Source lane of every lane for DS_SWIZZLE_B32 with `offset` (see the module docstring)."""
  i = np.arange(lanes)
  half, lo = i & 0x20, i & 0x1f
  mask = offset & 0x1f
  if offset >= 0xe000: return (_bitrev5(lo) >> bin(mask).count("1")) | (lo & mask) | half
  if offset >= 0xc000:
    r = (offset >> 5) & 0x1f
    r = -r if offset & (1 << 10) else r
    return (lo & mask) | ((lo + r) & 0x1f & ~mask) | half
  if offset & 0x8000: return (i & ~3) | ((offset >> (2 * (i & 3))) & 3)
  return (((lo & mask) | ((offset >> 5) & 0x1f)) ^ ((offset >> 10) & 0x1f)) | half

class DsSwizzleStep(Step):
  """DS_SWIZZLE_B32: vdst = the ADDR VGPR of the source lane that the offset pattern picks (0 from inactive lanes)."""
  def __init__(self, instr:Instr, spec:ArchSpec):
    super().__init__(instr, spec)
    inst = instr.inst
    # the source is the ADDR field's VGPR (LLVM: `ds_swizzle_b32 vdst, addr`; the ISA's operand table lists addr and vdst only); CDNA's ACC
    # bit makes the destination an AGPR
    acc = AGPR_BASE if getattr(inst, "acc", 0) else 0
    self.vdst, self.data0, self.offset = rawf(inst, "vdst") + acc, rawf(inst, "addr"), inst.offset0 | (inst.offset1 << 8)

  def execute(self, m:Machine, ws:np.ndarray):
    st = m.st
    src, act = swizzle_sources(self.offset, st.lanes), st.exec_bits(ws)
    data = st.vgpr[ws, :, self.data0]
    out = np.where(act[:, src], data[:, src], np.uint32(0))
    st.vgpr[ws, :, self.vdst] = np.where(act, out, st.vgpr[ws, :, self.vdst])

class DsCounterStep(Step):
  """DS_APPEND / DS_CONSUME: the wave's active lanes reserve (or release) that many entries of an LDS counter at M0 + OFFSET."""
  def __init__(self, instr:Instr, spec:ArchSpec):
    super().__init__(instr, spec)
    inst = instr.inst
    if getattr(inst, "gds", 0): raise GPUIllegalInstruction(0, instr.raw, f"{instr.op.name} on GDS is not emulated")
    self.vdst, self.offset = rawf(inst, "vdst") + (AGPR_BASE if getattr(inst, "acc", 0) else 0), inst.offset0 | (inst.offset1 << 8)
    self.sign = 1 if instr.op.name == "DS_APPEND" else -1

  def execute(self, m:Machine, ws:np.ndarray):
    st = m.st
    for w in (int(x) for x in ws):
      act = st.exec_bits(np.array([w]))[0]
      if not act.any(): continue
      lds = m.lds.at(m.lds_base(np.array([w])))
      addr = np.array([(int(st.sgpr[w, self.spec.m0_reg]) & 0xffff) + self.offset], dtype=U64)
      old = int(lds.read(addr, 4)[0])
      lds.write(addr, np.array([(old + self.sign * int(act.sum())) & 0xffffffff], dtype=U64), 4)
      st.vgpr[w, act, self.vdst] = old
