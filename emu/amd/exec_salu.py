"""Scalar executors: SOP1, SOP2, SOPC, SOPK, SOPP (pcode branches and executor-owned control) and SMEM.

Scalar pcode ops take Python ints; a batch of waves calls a register-only op once per distinct input row and scatters the
results (uniform code: one call per batch), SMEM loads once per distinct address, anything else once per wave. Ops the
pcode leaves to the executor (kind 'executor': s_endpgm, s_barrier, s_trap, s_waitcnt*, s_nop, s_delay_alu, s_sleep,
s_sendmsg ...) are `ControlStep`s (the dispatcher reacts to their `effect`: 'end', 'barrier'; 'trap' faults), and
s_sendmsg_rtn_* is a `MessageStep`.
"""
from __future__ import annotations
import functools
import numpy as np
from emu import amd_ops
from emu.amd.api import GPUIllegalInstruction, GPUMemoryFault, GPUTrapFault
from emu.amd.arch import ArchSpec
from emu.amd.decode import Instr, code, rawf
from emu.amd.mem_access import footprint, locate
from emu.amd.mnemonic import parse
from emu.amd.operands import Src, dest_bits, resolve_src, write_sgpr
from emu.amd.semantics import get_across, get_op
from emu.amd.step import Machine, Step
from emu.amd.wave import ENDED, BARRIER, HWREG_MODE, MODE_INPUTS
from emu.pcode.abi import OpState

U64 = np.uint64
MASK64 = (1 << 64) - 1
# what a pure SALU op may read or write to run as one numpy call over waves whose inputs differ (besides its encoding fields)
ACROSS_INPUTS = {"S0", "S1", "D0", "SCC", "VCC", "EXEC", "M0", "PC", "VCCZ", "EXECZ", "WAVE32", "WAVE64"}

SRC_FIELDS = {"SOP1": {"S0": "ssrc0"}, "SOP2": {"S0": "ssrc0", "S1": "ssrc1"}, "SOPC": {"S0": "ssrc0", "S1": "ssrc1"}, "SOPK": {}, "SOPP": {},
              "SMEM": {}}
class RegView:
  """SGPR[i] / HW_REGISTERS[i] for scalar pcode: 32-bit Python ints, settable, backed by one wave's row, of which the first `size`
  are addressable. Out of range (relative addressing past the file: s_movrel* with a large M0) follows the ISA's out-of-range
  rule: a read returns register 0, a write is dropped."""
  def __init__(self, row:np.ndarray, size:int): self.row, self.size = row, size
  def __getitem__(self, i): return int(self.row[int(i)]) if 0 <= int(i) < self.size else int(self.row[0])
  def __setitem__(self, i, v):
    if 0 <= int(i) < self.size: self.row[int(i)] = int(v) & 0xffffffff

class ControlStep(Step):
  """An executor-owned instruction (SOPP/SOPK/SOP1 control, cache and prefetch hints of any format) by its emu.amd_ops.OWNED entry:
  `effect` is 'end', 'barrier', 'trap' or None (no effect on compute results: waits, hints, s_sleep, s_sendmsg); an op the
  emulator does not model is an illegal instruction naming it."""
  def __init__(self, instr:Instr, spec:ArchSpec):
    super().__init__(instr, spec)
    name, owned = instr.op.name, amd_ops.effect(instr.op.name)
    if owned == "end" or owned == "halt" and instr.inst.simm16 & 1: self.effect = "end"
    elif owned in ("barrier", "trap"): self.effect = owned
    elif owned in ("none", "halt"): self.effect = None
    else:
      why = amd_ops.OWNED[name].reason if owned else "not an executor-owned op"
      raise GPUIllegalInstruction(0, instr.raw, f"{name} is not implemented (executor-owned op without emulation: {why})")
  def execute(self, m:Machine, ws:np.ndarray):
    if self.effect == "end": m.st.status[ws] = ENDED
    elif self.effect == "barrier": m.st.status[ws] = BARRIER
    elif self.effect == "trap":
      w = int(ws[0])
      raise GPUTrapFault(int(m.st.pc[w]), self.instr.inst.simm16 & 0xff, m.st.wave_id[w])

# s_sendmsg_rtn message ids (gfx11) -> what the emulator returns; GET_REALTIME is the dispatch's wave-instruction count so far
# (a deterministic clock), the others name state no emulated wave has (doorbell, debug ids, trap handler addresses): 0.
RTN_MESSAGES = {128: "GET_DOORBELL", 129: "GET_DDID", 130: "GET_TMA", 131: "GET_REALTIME", 132: "SAVE_WAVE", 133: "GET_TBA"}

class ModeStep(Step):
  """S_ROUND_MODE / S_DENORM_MODE (RDNA): SIMM16[3:0] replaces MODE.FP_ROUND (bits 3:0) / MODE.FP_DENORM (bits 7:4)."""
  def __init__(self, instr:Instr, spec:ArchSpec):
    super().__init__(instr, spec)
    self.shift, self.value = 0 if instr.op.name == "S_ROUND_MODE" else 4, instr.inst.simm16 & 0xf
  def execute(self, m:Machine, ws:np.ndarray):
    hw = m.st.hwreg
    hw[ws, HWREG_MODE] = (hw[ws, HWREG_MODE] & ~np.uint32(0xf << self.shift)) | np.uint32(self.value << self.shift)

class MessageStep(Step):
  """S_SENDMSG_RTN_B32/B64: a message whose reply lands in SDST."""
  def __init__(self, instr:Instr, spec:ArchSpec):
    super().__init__(instr, spec)
    self.msg, self.sdst = rawf(instr.inst, "ssrc0"), rawf(instr.inst, "sdst")   # the message id is the raw SSRC0 field
    if self.msg == 255 and instr.literal is not None: self.msg = instr.literal      # (or a literal, as the wheel's DSL encodes it)
    if self.msg not in RTN_MESSAGES: raise GPUIllegalInstruction(0, instr.raw, f"s_sendmsg_rtn message {self.msg} does not exist")
    self.bits = parse(instr.op.name).type_bits()[0]   # B32 / B64
  def execute(self, m:Machine, ws:np.ndarray):
    value = m.stats.wave_instructions if RTN_MESSAGES[self.msg] == "GET_REALTIME" else 0
    write_sgpr(m.st, ws, self.sdst, self.bits, value)

class SaluStep(Step):
  """SOP1/SOP2/SOPC/SOPK and pcode SOPP ops (branches, s_getpc ...): one pcode call per distinct input row, or per wave."""
  writes_pc = True
  def __init__(self, instr:Instr, spec:ArchSpec, op=None):
    super().__init__(instr, spec)
    inst, fmt = instr.inst, instr.fmt
    self.op = op = op or get_op(spec.name, instr.op, raw=instr.raw)
    bits, operands = inst.op_bits, instr.operands
    self.srcs = {n: resolve_src(code(inst, f), op.widths.get(n, bits.get(f, 32)), operands.get(f, (None,))[0], instr.literal, spec)
                 for n, f in SRC_FIELDS[fmt].items() if n in op.reads}
    self.sdst = rawf(inst, "sdst", spec.null_reg)
    # SRC0/SDST: the raw register numbers s_movrel* index from
    self.fields = {"SIMM16": getattr(inst, "simm16", 0), "SIMM32": instr.literal or 0, "SDST": self.sdst,
                   "SRC0": rawf(inst, "ssrc0", 0)}
    if fmt == "SOPK":   # RDNA pcode names the immediate SIMM16 and S0 the SGPR; CDNA's names it S0 when the SGPR is D0 (s_movk,
      imm = Src("const", bits=16, value=self.fields["SIMM16"])   # s_addk), else S1 (s_cmpk: S0 is the SGPR)
      if "S0" in op.reads: self.srcs["S0"] = imm if "D0" in op.writes else resolve_src(self.sdst, 32, None, None, spec)
      if "S1" in op.reads: self.srcs["S1"] = imm
    self.d_bits = dest_bits(op.widths, bits, "sdst")
    self.d0 = resolve_src(self.sdst, self.d_bits, None, None, spec)
    self.outputs = [n for n in ("D0", "SCC", "VCC", "EXEC", "M0", "PC") if n in op.writes]
    touched = op.reads | op.writes
    self.mode_dep = bool(op.reads & MODE_INPUTS)
    self.pure = (type(self) is SaluStep and not op.mem and not touched & {"SGPR", "HW_REGISTERS"} and
                 all(op.widths.get(n, 32) <= 64 for n in touched & {"S0", "S1", "D0"}))
    # the same op as numpy code over waves (one lane per wave), for batches whose waves' inputs differ
    self.across = get_across(spec.name, instr.op) if self.pure and touched <= ACROSS_INPUTS | set(self.fields) else None

  def execute(self, m:Machine, ws:np.ndarray):
    if self.pure: self._grouped(m, ws)
    else:
      for w in (int(x) for x in ws): self._one(m, w)

  def _state(self, st, w:int, vals:dict, pc=None) -> OpState:
    """The op's inputs for wave w (its PC unless `pc` is given, and its MODE) and `vals` (ints, or arrays over waves)."""
    o = OpState(PC=int(st.pc[w]) if pc is None else pc, WAVE32=st.lanes == 32, WAVE64=st.lanes == 64, **st.mode(w), **self.fields, **vals)
    zero = lambda v: (v == 0).astype(U64) if isinstance(v, np.ndarray) else int(v == 0)
    if "VCCZ" in self.op.reads: o.VCCZ = zero(vals.get("VCC", 0))
    if "EXECZ" in self.op.reads: o.EXECZ = zero(vals.get("EXEC", 0))
    return o

  def _grouped(self, m:Machine, ws:np.ndarray):
    """Pure ops (registers in, registers out): one pcode call per distinct input row across the waves, results scattered back."""
    st, op, spec = m.st, self.op, self.spec
    cols = {name: src.read_waves(st, ws) for name, src in self.srcs.items()}
    if "SCC" in op.reads: cols["SCC"] = st.scc[ws].astype(U64)
    if op.reads & {"VCC", "VCCZ"}: cols["VCC"] = st.get_masks(ws, spec.vcc_lo)
    if op.reads & {"EXEC", "EXECZ"}: cols["EXEC"] = st.get_masks(ws, spec.exec_lo)
    if "M0" in op.reads: cols["M0"] = st.sgpr[ws, spec.m0_reg].astype(U64)
    if "D0" in op.reads: cols["D0"] = self.d0.read_waves(st, ws)
    names, pc, n = list(cols), int(st.pc[ws[0]]), len(ws)
    same = n == 1 or all((c == c[0]).all() for c in cols.values())
    if not same and self.across is not None:   # one numpy call over the waves
      o = self._state(st, int(ws[0]), cols, st.pc[ws].astype(U64) if "PC" in op.reads else None)
      o.n = n
      self.across.fn(o)
      res = {name: v if isinstance(v := getattr(o, name), np.ndarray) and v.dtype == U64 and v.shape == (n,) else
             np.broadcast_to(np.asarray(v).astype(U64), (n,)) for name in self.outputs}
    else:   # one Python call per distinct input row
      rows = np.stack([cols[k] for k in names], axis=1) if names else np.zeros((n, 0), dtype=U64)
      uniq, inv = (rows[:1], None) if same else np.unique(rows, axis=0, return_inverse=True)
      outs: dict[str, list[int]] = {name: [] for name in self.outputs}
      for row in uniq.tolist():
        o = self._state(st, int(ws[0]), dict(zip(names, row)))
        op.fn(o)
        for name in self.outputs: outs[name].append(int(getattr(o, name)) & MASK64)
      res = {name: (np.array(v, dtype=U64) if inv is None else np.array(v, dtype=U64)[inv.reshape(-1)]) for name, v in outs.items()}
    if "D0" in res: write_sgpr(st, ws, self.sdst, self.d_bits, res["D0"])
    if "SCC" in res: st.scc[ws] = (res["SCC"] & U64(1)).astype(np.uint32)
    if "VCC" in res: st.set_mask(ws, spec.vcc_lo, res["VCC"])
    if "EXEC" in res: st.set_mask(ws, spec.exec_lo, res["EXEC"])
    if "M0" in res: st.sgpr[ws, spec.m0_reg] = res["M0"] & U64(0xffffffff)
    st.pc[ws] = res["PC"].astype(np.int64) if "PC" in res else pc + self.size

  def _one(self, m:Machine, w:int):
    """One wave, Python ints: ops that touch memory, SGPRs by index or hardware registers (and SMEM's hooks)."""
    st, op, spec = m.st, self.op, self.spec
    o = self._state(st, w, dict(SCC=int(st.scc[w]), VCC=st.get_mask(w, spec.vcc_lo), EXEC=st.get_mask(w, spec.exec_lo),
                                            M0=int(st.sgpr[w, spec.m0_reg]), SGPR=RegView(st.sgpr[w], spec.n_sgprs),
                                            HW_REGISTERS=RegView(st.hwreg[w], st.hwreg.shape[1])))
    for name, src in self.srcs.items(): setattr(o, name, src.read_int(st, w))
    if "D0" in op.reads: o.D0 = self.d0.read_int(st, w)
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
  """SMEM loads/stores: ADDR = base (SGPR pair, or a buffer resource's base) + signed offset + SGPR soffset (gfx9: IMM and SOFFSET_EN
  choose which of the two are present), aligned down to the access size up to a dword: dword and wider accesses ignore ADDR[1:0],
  gfx12's s_load_u16/i16 ADDR[0], s_load_u8/i8 nothing (the size is the op's `footprint`). A store the pcode moves in several writes
  (s_store_dwordx2/x4) checks its whole span first, so a fault writes nothing."""
  def __init__(self, instr:Instr, spec:ArchSpec):
    super().__init__(instr, spec)
    inst = instr.inst
    self.sbase, self.sdata = rawf(inst, "sbase") << 1, rawf(inst, "sdata")
    self.soffset = rawf(inst, "soffset")
    off, bits = (inst.ioffset, 24) if hasattr(inst, "ioffset") else (inst.offset, 21)   # rdna4: IOFFSET, signed 24 bits
    self.offset = off - (1 << bits) if off & (1 << (bits - 1)) else off
    if hasattr(inst, "soffset_en"):   # gfx9: IMM=1 the offset is an immediate, IMM=0 it names an SGPR (unless SOFFSET_EN); SOFFSET_EN adds SOFFSET
      reg_off = None if inst.imm or inst.soffset_en else inst.offset & 0x7f
      self.soffset = rawf(inst, "soffset") if inst.soffset_en else reg_off if reg_off is not None else spec.null_reg
      if not inst.imm: self.offset = 0
    self.sdata_bits = self.op.widths.get("SDATA", inst.op_bits.get("sdata", 32))
    self.buffer = "BUFFER" in instr.op.name
    fp = footprint(self.op, True)
    self.align, self.span = min(max(fp.size, 1), 4), (fp.lo, fp.size) if "w" in self.op.mem and fp.writes > 1 else None
    # loads of waves at different addresses: the op as numpy code over waves; a multi-dword one reads each wave's span located once
    self.across = get_across(spec.name, instr.op) if self.op.mem == "r" and self.op.reads <= {"ADDR", "MEM"} else None
    self.window = (fp.lo, fp.size, False) if fp.size > 4 else None

  def lane_addresses(self, st, ws:np.ndarray) -> np.ndarray:
    """Each wave's (of `ws`) byte address, as the op sees ADDR."""
    return self._addresses(st, ws)

  @functools.cached_property
  def accesses(self) -> list[tuple[int, int]]:
    """Each memory access the op makes, in order, as (byte offset from ADDR, bytes): its footprint (made once, on first use)."""
    return footprint(self.op, True).accesses

  def _addresses(self, st, ws:np.ndarray) -> np.ndarray:
    base = st.sgpr[ws, self.sbase].astype(U64) | (st.sgpr[ws, self.sbase + 1].astype(U64) << U64(32))
    if self.sbase == self.spec.null_reg: base = np.zeros(len(ws), dtype=U64)   # SBASE = NULL reads 0 (not NULL's and M0's storage)
    if self.buffer: base &= U64((1 << 48) - 1)
    soff = st.sgpr[ws, self.soffset].astype(U64) if self.soffset != self.spec.null_reg else U64(0)
    return (base + U64(self.offset & MASK64) + soff) & U64(MASK64 & ~(self.align - 1))

  def execute(self, m:Machine, ws:np.ndarray):
    """Loads whose waves read different addresses run as the op's numpy code over the waves (one lane per wave, as a vector load
    reads its lanes); others once per distinct (address, old SDATA) across the waves (traffic still counted per wave); stores, and
    a batch of one wave (Python ints cost less there than arrays), per wave."""
    st, op = m.st, self.op
    if len(ws) == 1 or op.mem != "r" or not op.reads <= {"ADDR", "MEM", "SDATA"}: return super().execute(m, ws)
    addrs = self._addresses(st, ws)
    # every wave at one address (a kernel's arguments) is the common case
    if self.across is not None and not (addrs == addrs[0]).all():
      before = m.stats.bytes_read
      o = OpState(n=len(ws), ADDR=addrs, MEM=locate(m.gmem, addrs, *self.window) if self.window is not None else m.gmem)
      try: self.across.fn(o)
      except GPUMemoryFault:   # report it as a scalar load does (its address, not a 'lane' that is a wave): again per address
        m.stats.bytes_read = before
      else:
        write_sgpr(st, ws, self.sdata, self.sdata_bits, o.SDATA)
        st.pc[ws] += self.size
        return
    self._per_address(m, ws, addrs)

  def _per_address(self, m:Machine, ws:np.ndarray, addrs:np.ndarray):
    st, op = m.st, self.op
    k = max(1, self.sdata_bits // 32)
    rows = np.concatenate([addrs[:, None], st.sgpr[ws, self.sdata:self.sdata + k].astype(U64)], axis=1)
    # np.unique over rows costs ~0.5 ms at 512 waves
    same = bool((rows == rows[0]).all())
    uniq, inv = (rows[:1], np.zeros(len(ws), dtype=np.intp)) if same else np.unique(rows, axis=0, return_inverse=True)
    for g, row in enumerate(uniq.tolist()):
      sel, before = ws[inv.reshape(-1) == g], m.stats.bytes_read
      o = self._state(st, int(ws[0]), {"ADDR": row[0], "MEM": m.smem, "SDATA": sum(x << (32 * i) for i, x in enumerate(row[1:]))})
      op.fn(o)
      m.stats.bytes_read += (m.stats.bytes_read - before) * (len(sel) - 1)
      write_sgpr(st, sel, self.sdata, self.sdata_bits, int(o.SDATA))
    st.pc[ws] += self.size

  def extra(self, m:Machine, w:int, o:OpState):
    o.ADDR, o.MEM = int(self._addresses(m.st, np.array([w]))[0]), m.smem
    if self.span is not None: m.smem.check((o.ADDR + self.span[0]) & MASK64, self.span[1], True)
    if "SDATA" in self.op.reads: o.SDATA = resolve_src(self.sdata, self.sdata_bits, None, None, self.spec).read_int(m.st, w)
    if "DATA" in self.op.reads: o.DATA = resolve_src(self.sdata, self.op.widths["DATA"], None, None, self.spec).read_int(m.st, w)  # gfx9 atomics

  def writeback(self, m:Machine, w:int, o:OpState):
    if "SDATA" in self.op.writes: write_sgpr(m.st, w, self.sdata, self.sdata_bits, int(o.SDATA))
    # gfx9 scalar atomics return the pre-op value into SDATA only with GLC
    if "RETURN_DATA" in self.op.writes and self.instr.inst.glc: write_sgpr(m.st, w, self.sdata, self.op.widths["RETURN_DATA"], int(o.RETURN_DATA))
