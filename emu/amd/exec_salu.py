"""Scalar executors: SOP1, SOP2, SOPC, SOPK, SOPP (pcode branches and executor-owned control) and SMEM.

Scalar pcode ops run once per wave on Python ints. Ops the pcode leaves to the executor (kind 'executor': s_endpgm,
s_barrier, s_waitcnt*, s_nop, s_delay_alu, s_sleep, s_sendmsg ...) are `ControlStep`s; the dispatcher reacts to their
`effect` ('end', 'barrier').
"""
from __future__ import annotations
import numpy as np
from emu.amd.api import GPUIllegalInstruction
from emu.amd.arch import ArchSpec
from emu.amd.decode import Instr
from emu.amd.exec_valu import rawf
from emu.amd.operands import resolve_src, write_sgpr
from emu.amd.semantics import get_op
from emu.amd.step import Machine, Step
from emu.amd.wave import ENDED, BARRIER
from emu.pcode.abi import OpState

SRC_FIELDS = {"SOP1": {"S0": "ssrc0"}, "SOP2": {"S0": "ssrc0", "S1": "ssrc1"}, "SOPC": {"S0": "ssrc0", "S1": "ssrc1"}, "SOPK": {}, "SOPP": {},
              "SMEM": {}}
ENDS = {"S_ENDPGM", "S_ENDPGM_SAVED", "S_ENDPGM_ORDERED_PS_DONE", "S_SENDMSGHALT", "S_SETHALT"}
NO_EFFECT = {"S_NOP", "S_WAITCNT", "S_WAITCNT_VSCNT", "S_WAITCNT_VMCNT", "S_WAITCNT_EXPCNT", "S_WAITCNT_LGKMCNT", "S_WAITCNT_DEPCTR",
             "S_DELAY_ALU", "S_CLAUSE", "S_SLEEP", "S_SENDMSG", "S_SET_INST_PREFETCH_DISTANCE", "S_WAIT_IDLE", "S_WAIT_EVENT", "S_ICACHE_INV",
             "S_SETPRIO", "S_TTRACEDATA", "S_TTRACEDATA_IMM", "S_INCPERFLEVEL", "S_DECPERFLEVEL", "S_WAKEUP", "S_SETKILL", "S_ROUND_MODE",
             "S_DENORM_MODE", "S_VERSION", "S_BARRIER_WAIT", "S_WAIT_LOADCNT", "S_WAIT_STORECNT", "S_WAIT_KMCNT", "S_WAIT_DSCNT"}

class RegView:
  """SGPR[i] / HW_REGISTERS[i] for scalar pcode: 32-bit Python ints, settable, backed by one wave's row."""
  def __init__(self, row:np.ndarray): self.row = row
  def __getitem__(self, i): return int(self.row[int(i)])
  def __setitem__(self, i, v): self.row[int(i)] = int(v) & 0xffffffff

class ControlStep(Step):
  """An executor-owned SOPP/SOPK instruction; `effect` is 'end', 'barrier' or None (a no-op for the functional model)."""
  def __init__(self, instr:Instr, spec:ArchSpec):
    super().__init__(instr, spec)
    name = instr.op.name
    if name in ENDS: self.effect = "end"
    elif name == "S_BARRIER": self.effect = "barrier"
    elif name in NO_EFFECT: self.effect = None
    else: raise GPUIllegalInstruction(0, instr.raw, f"{name} is not implemented (executor-owned op without emulation)")
  def execute(self, m:Machine, ws:np.ndarray):
    if self.effect == "end": m.st.status[ws] = ENDED
    elif self.effect == "barrier": m.st.status[ws] = BARRIER

class SaluStep(Step):
  """SOP1/SOP2/SOPC/SOPK and pcode SOPP ops (branches, s_getpc ...): one pcode call per wave."""
  writes_pc = True
  def __init__(self, instr:Instr, spec:ArchSpec, op=None):
    super().__init__(instr, spec)
    inst, fmt = instr.inst, instr.fmt
    self.op = op = op or get_op(spec.family, instr.op, raw=instr.raw)
    bits, operands = inst.op_bits, inst.operands
    self.srcs = {n: resolve_src(getattr(inst, f).offset, op.widths.get(n, bits.get(f, 32)), operands.get(f, (None,))[0], instr.literal, spec)
                 for n, f in SRC_FIELDS[fmt].items() if n in op.reads}
    self.sdst = rawf(inst, "sdst") if hasattr(inst, "sdst") else spec.null_reg
    if fmt == "SOPK" and "S0" in op.reads: self.srcs["S0"] = resolve_src(self.sdst, 32, None, None, spec)
    self.d_bits = op.widths.get("D0", bits.get("sdst", 32))
    self.fields = {"SIMM16": getattr(inst, "simm16", 0), "SIMM32": instr.literal or 0}

  def execute(self, m:Machine, ws:np.ndarray):
    st, op, spec = m.st, self.op, self.spec
    for w in (int(x) for x in ws):
      o = OpState(PC=int(st.pc[w]), SCC=int(st.scc[w]), WAVE32=st.lanes == 32, WAVE64=st.lanes == 64, MODE_IEEE=True, ROUND_MODE=0,
                  VCC=st.get_mask(w, spec.vcc_lo), EXEC=st.get_mask(w, spec.exec_lo), M0=int(st.sgpr[w, spec.m0_reg]),
                  SGPR=RegView(st.sgpr[w]), HW_REGISTERS=RegView(st.hwreg[w]), **self.fields)
      for name, src in self.srcs.items(): setattr(o, name, src.read_int(st, w))
      o.VCCZ, o.EXECZ = int(o.VCC == 0), int(o.EXEC == 0)
      if "D0" in op.reads: o.D0 = resolve_src(self.sdst, self.d_bits, None, None, spec).read_int(st, w)
      self.extra(m, w, o)
      op.fn(o)
      if "D0" in op.writes: write_sgpr(st, w, self.sdst, self.d_bits, int(o.D0))
      if "SCC" in op.writes: st.scc[w] = int(o.SCC) & 1
      if "VCC" in op.writes: st.set_mask(w, spec.vcc_lo, int(o.VCC))
      if "EXEC" in op.writes: st.set_mask(w, spec.exec_lo, int(o.EXEC))
      if "M0" in op.writes: st.sgpr[w, spec.m0_reg] = int(o.M0) & 0xffffffff
      self.writeback(m, w, o)
      st.pc[w] = int(o.PC) if "PC" in op.writes else st.pc[w] + self.size

  def extra(self, m:Machine, w:int, o:OpState): """Hook for formats with more inputs (SMEM)."""
  def writeback(self, m:Machine, w:int, o:OpState): """Hook for formats with more outputs (SMEM)."""

class SmemStep(SaluStep):
  """SMEM loads/stores: ADDR = base (SGPR pair, or a buffer resource's base) + signed offset + SGPR soffset."""
  def __init__(self, instr:Instr, spec:ArchSpec):
    super().__init__(instr, spec)
    inst = instr.inst
    self.sbase, self.sdata = rawf(inst, "sbase") << 1, rawf(inst, "sdata")
    self.soffset = rawf(inst, "soffset")
    self.offset = inst.offset - (1 << 21) if inst.offset & (1 << 20) else inst.offset
    self.sdata_bits = self.op.widths.get("SDATA", inst.op_bits.get("sdata", 32))
    self.buffer = "BUFFER" in instr.op.name

  def extra(self, m:Machine, w:int, o:OpState):
    st = m.st
    base = int(st.sgpr[w, self.sbase]) | (int(st.sgpr[w, self.sbase + 1]) << 32)
    if self.buffer: base &= (1 << 48) - 1
    soff = int(st.sgpr[w, self.soffset]) if self.soffset != self.spec.null_reg else 0
    o.ADDR, o.MEM = (base + self.offset + soff) & ~3 & ((1 << 64) - 1), m.smem
    if "SDATA" in self.op.reads: o.SDATA = resolve_src(self.sdata, self.sdata_bits, None, None, self.spec).read_int(st, w)

  def writeback(self, m:Machine, w:int, o:OpState):
    if "SDATA" in self.op.writes: write_sgpr(m.st, w, self.sdata, self.sdata_bits, int(o.SDATA))
