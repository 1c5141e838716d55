"""Vector ALU executors: VOP1, VOP2, VOP3, VOP3SD, VOP3P, VOPC, VINTERP (incl. DPP16/DPP8 forms) and VOPD dual issue.

Semantics come from the pcode op; this module resolves operands (constants, 16-bit halves, neg/abs/opsel), routes DPP
lanes, gathers the active lanes of all waves in the batch into one flat call, and writes results back under EXEC.
"""
from __future__ import annotations
import numpy as np
from tinygrad.renderer.amd.dsl import SrcField
from tinygrad.runtime.autogen.amd.common import Fmt
from emu.amd.api import GPUIllegalInstruction
from emu.amd.arch import ArchSpec
from emu.amd.decode import Instr, code, rawf
from emu.amd import cdna_operands
from emu.amd.dpp import dpp16_control, dpp16_route, dpp16_write_enable, dpp8_route
from emu.amd.operands import (Src, dest_bits, resolve_src, float_kind, modifier_float_kind, apply_neg_abs, packed_halves, apply_omod_clamp,
                              omod_applies, int_clamp, inline_constant, write_vgpr_lanes, read_vgpr_lanes, write_sgpr, operand_fmt)
from emu.amd.semantics import get_op
from emu.amd.step import Lanes, Machine, Step
from emu.amd.wave import AGPR_BASE, MODE_INPUTS
from emu.pcode.abi import InvalidField, OpState

U64 = np.uint64
SRC_FIELDS = {"VOP1": {"S0": "src0"}, "VOP2": {"S0": "src0", "S1": "vsrc1"}, "VOPC": {"S0": "src0", "S1": "vsrc1"},
              "VOP3": {"S0": "src0", "S1": "src1", "S2": "src2"}, "VOP3SD": {"S0": "src0", "S1": "src1", "S2": "src2"},
              "VOP3P": {"S0": "src0", "S1": "src1", "S2": "src2"}, "VINTERP": {"S0": "src0", "S1": "src1", "S2": "src2"}}
E32 = ("VOP1", "VOP2", "VOPC")      # encodings whose 16-bit VGPR operands use bit 7 of the register number as the high-half select
OWN_MODIFIER_FIELDS = {"OPSEL", "OPSEL_HI", "NEG", "NEG_HI", "ABS"}
# modifier fields an op may read that some of its encodings lack (VOP1/VOP2/VOPC have no OPSEL ...): there the ISA value is 0
ABSENT_FIELD_VALUES = dict.fromkeys(("OPSEL", "OPSEL_HI", "NEG", "NEG_HI", "ABS", "OMOD"), 0)

def mask_lane_bits(st, ws:np.ndarray, lanes:Lanes, reg:int, literal:int|None=None) -> np.ndarray:
  """The lane-mask operand `reg` of waves ws, one bit per pair of `lanes`, as uint64 0/1: an SGPR (reg+1 for lanes 32-63), or any
  other source code (an inline constant or literal carry-in/select mask, NULL ...) as a constant mask as wide as the wave."""
  if reg < 128 and reg != st.spec.null_reg:
    bits = st.mask_bits(ws, reg)
    return (bits.reshape(-1) if lanes.dense is not None else bits[lanes.wi, lanes.ln]).astype(U64)
  return (resolve_src(reg, st.lanes, None, literal, st.spec).read_waves(st, lanes.wv) >> lanes.ln.astype(U64)) & U64(1)

class VgprFile:
  """VGPR[lanes, reg] of one wave for pcode that picks registers by value (V_MOVREL*, V_SWAPREL_B32, V_INTERP_*: M0-relative or
  computed numbers). Registers past the file follow the ISA's out-of-range rule: a read returns v0, a write is dropped."""
  def __init__(self, regs:np.ndarray): self.regs = regs
  def __getitem__(self, key):
    lanes, reg = key
    reg = np.asarray(reg, dtype=np.int64)
    return self.regs[lanes, np.where(reg < self.regs.shape[1], reg, 0)]
  def __setitem__(self, key, value):
    lanes, reg, value = np.broadcast_arrays(*(np.asarray(x, dtype=np.int64) for x in key), np.asarray(value))
    ok = reg < self.regs.shape[1]
    self.regs[lanes[ok], reg[ok]] = value[ok]

def store_lane_bits(st, ws:np.ndarray, lanes:Lanes, reg:int, bits:np.ndarray):
  """Write a lane mask for waves ws: each active lane's bit from `bits`, every other lane 0 (inactive lanes write 0)."""
  if reg == st.spec.null_reg: return
  b = np.asarray(bits).astype(U64) & U64(1) != 0
  if lanes.dense is not None: full = b.reshape(len(ws), st.lanes)
  else:
    full = np.zeros((len(ws), st.lanes), dtype=bool)
    full[lanes.wi, lanes.ln] = b
  st.store_mask_bits(ws, reg, full)

SOURCE_WRITES = frozenset({"S0", "S1", "S2"})   # pcode results that go back to a source operand's register

def float_only(op, name:str, src:Src) -> bool:
  """Whether source `name` of `op` is a plain 32-bit VGPR the pcode reads only as a float: it may be passed as uint32 bits (abi.py)."""
  return src.kind == "vgpr" and src.bits == 32 and not src.hi and op.views.get(name) == {"f"}

class SrcSpec:
  """A source operand plus the per-operand modifiers of its encoding; `narrow`: read as uint32 bits (`float_only`)."""
  def __init__(self, src:Src, fkind:int, neg:bool=False, abs_:bool=False, packed:tuple|None=None, narrow:bool=False):
    self.src, self.fkind, self.neg, self.abs, self.packed = src, fkind, neg, abs_, packed
    self.narrow = narrow and not (neg or abs_ or packed)
  def read(self, st, wv, ln, dense:slice|None=None) -> np.ndarray:
    if self.narrow: return self.src.read_lanes32(st, wv, ln, dense)
    v = self.src.read_lanes(st, wv, ln, dense)
    if self.packed is not None: return packed_halves(v, self.src.bits // 2, self.fkind, self.packed)
    # neg/abs act on the sign bit of the operand's float type, not of the register width (an SDWA f16 source reads the whole dword)
    return apply_neg_abs(v, self.fkind, self.neg, self.abs) if self.fkind and (self.neg or self.abs) else v

def matrix_c_const(code:int, fmt:Fmt|None) -> int | None:
  """A matrix op's C (src2 `code`) when it is an inline constant (CDNA's MFMA, RDNA4's dense WMMA): the raw bits of one C element
  (64 bits for f64 accumulators, else 32; a bf16 element's float constant is the top half of the f32's), broadcast by the op
  (abi.py's C_CONST); None when C is a register."""
  if code >= 256: return None
  bits = inline_constant(code, 64 if float_kind(fmt) == 64 else 32, float_kind(fmt))
  is_float = bits is not None and not 128 <= code <= 208   # (integer constants are the integer's bits at any type)
  return bits >> 16 if is_float and fmt is not None and "BF16" in fmt.name else bits

class ValuStep(Step):
  """One VALU instruction (any VOP encoding except VOPD)."""
  def __init__(self, instr:Instr, spec:ArchSpec):
    super().__init__(instr, spec)
    inst = instr.inst
    self.op = op = get_op(spec.name, instr.op, raw=instr.raw)
    own_mods = not (OWN_MODIFIER_FIELDS & op.reads)
    # gfx9's VOP1/VOP2 ops have no op_sel in their VOP3 form and zero the high half of a 16-bit result (cdna_operands)
    legacy = cdna_operands.legacy_16bit(spec, instr.op)
    opsel = 0 if legacy else getattr(inst, "opsel", 0) or 0
    self.srcs = self._sources(instr, spec, own_mods, opsel)
    self._destination(instr, spec, own_mods, opsel, legacy)
    self._lane_masks(instr, spec)
    self.fields = self._fields(inst, op.reads)
    if "C_CONST" in op.reads: self.fields["C_CONST"] = matrix_c_const(code(inst, "src2"), operand_fmt(instr.operands, "src2"))
    if op.kind == "wave" or "VGPR" in op.reads | op.writes: self._check_register_operands()
    self.per_wave = "VGPR" in op.reads or "VGPR" in op.writes
    self.mode_dep = bool(op.reads & MODE_INPUTS) or bool(self.omod and self.d_float)   # omod_applies reads the MODE
    # what every batch asks of the op, decided once: the lane masks it reads and writes, the sources it writes back, whether it
    # reads and writes D0 as a value (not a lane mask)
    self.mask_reads, self.mask_writes = tuple(op.lane_masks & op.reads), tuple(op.lane_masks & op.writes)
    self.source_writes = tuple(SOURCE_WRITES & op.writes)
    self.reads_d0, self.writes_d0 = ("D0" in op.reads and "D0" not in op.lane_masks), ("D0" in op.writes and "D0" not in op.lane_masks)
    # rdna4 V_S_EXP_F32 & co.: VALU ops with scalar sources and an SGPR destination, computed once per wave (on lane 0, whatever EXEC)
    self.scalar_dst = instr.sdst_dest and op.kind == "vector" and self.writes_d0
    self.dpp = self._dpp(instr, spec)

  def _sources(self, instr:Instr, spec:ArchSpec, own_mods:bool, opsel:int) -> dict[str, SrcSpec]:
    """The op's source operands with their encoding's modifiers (true16 halves, op_sel, SDWA selects, packed halves, neg/abs)."""
    inst, fmt, op = instr.inst, instr.fmt, self.op
    operands, bits = instr.operands, inst.op_bits
    neg, abs_ = getattr(inst, "neg", 0) or 0, getattr(inst, "abs", 0) or 0
    if instr.variant in ("DPP16", "SDWA") and fmt in E32:
      neg, abs_ = inst.src0_neg | (inst.src1_neg << 1), inst.src0_abs | (inst.src1_abs << 1)
    srcs: dict[str, SrcSpec] = {}
    for i, (name, field) in enumerate(SRC_FIELDS[fmt].items()):
      if name not in op.reads or field not in operands and name == "S2": continue
      num = code(inst, "vsrc0" if field == "src0" and instr.variant in ("DPP16", "DPP8", "SDWA") else field)
      fm = operand_fmt(operands, field)
      w = op.widths.get(name, bits.get(field, 32))
      hi = w == 16 and fmt in E32 and spec.true16 and num >= 256 + 128   # true16 e32: v128+ is the high half of v(n-128)
      if hi: num -= 128
      pk = fm is not None and fm.name.startswith("FMT_NUM_PK2") and w in (32, 64)
      src = resolve_src(num, w, fm, instr.literal, spec)
      if w > 64 and src.kind != "vgpr":   # a 128-bit source (v_mqsad_u32_u8's S2) has only the VGPR register class
        raise GPUIllegalInstruction(0, instr.raw, f"{instr.op.name}: {field} is a {w}-bit operand and must be a VGPR")
      # VOP3 op_sel: bit i picks the high half of a 16-bit register source (VGPR or SGPR; a constant has no high half)
      if w == 16 and fmt not in E32 and own_mods and src.kind in ("vgpr", "sgpr"): hi = hi or bool((opsel >> i) & 1)
      if hi: src = Src(src.kind, src.reg, 16, src.value, hi=True)
      if instr.variant == "SDWA": src = cdna_operands.sdwa_source(inst, i, w, fm, instr.literal, spec)
      packed = None
      if fmt == "VOP3P" and pk and own_mods:
        ohi = (inst.opsel_hi >> i) & 1 if i < 2 else inst.opsel_hi2
        packed = ((opsel >> i) & 1, ohi, (inst.neg >> i) & 1, (inst.neg_hi >> i) & 1)
      srcs[name] = SrcSpec(src, modifier_float_kind(op, i, fm), bool((neg >> i) & 1) and own_mods and packed is None,
                           bool((abs_ >> i) & 1) and own_mods, packed, instr.variant in ("", "LIT") and float_only(op, name, src))
    for name in SOURCE_WRITES & op.writes:   # a source the op writes back must be a plain VGPR of this lane (no SDWA select, no DPP)
      if not (isinstance(srcs[name].src, Src) and srcs[name].src.kind == "vgpr") or instr.variant in ("DPP16", "DPP8", "SDWA"):
        raise GPUIllegalInstruction(0, instr.raw, f"{instr.op.name}: {name} is written back, so it must be a VGPR without DPP or SDWA")
    if "S2" in op.reads and "src2" not in operands:   # FMAC forms (V_FMAC_DX9_ZERO_F32): the accumulator S2 is the destination VGPR
      srcs["S2"] = SrcSpec(Src("vgpr", rawf(inst, "vdst"), op.widths.get("S2", 32)), 0)
    return srcs

  def _destination(self, instr:Instr, spec:ArchSpec, own_mods:bool, opsel:int, legacy:bool):
    """Where and how the result is stored: register, width and half, output modifiers, float/integer clamp, SDWA destination select."""
    inst, fmt, operands = instr.inst, instr.fmt, instr.operands
    dfmt = operands.get("vdst", (None,))[0]
    self.d_bits = dest_bits(self.op.widths, inst.op_bits, "vdst")
    self.d_hi = False
    self.vdst = rawf(inst, "vdst", 0)
    if self.d_bits == 16 and fmt in E32 and spec.true16 and self.vdst >= 128: self.vdst, self.d_hi = self.vdst - 128, True
    elif self.d_bits == 16 and fmt in ("VOP3", "VOP3SD", "VINTERP") and own_mods: self.d_hi = bool((opsel >> 3) & 1)
    self.store_bits = 32 if legacy and self.d_bits == 16 else self.d_bits   # the zero-extended result over the whole VGPR
    self.d_float = float_kind(dfmt) if dfmt is not None else 0
    self.d_packed = fmt == "VOP3P" and dfmt is not None and dfmt.name.startswith("FMT_NUM_PK2")   # clamp each half
    self.omod, self.clamp = getattr(inst, "omod", 0) or 0, bool(getattr(inst, "clmp", 0))
    self.sdwa_dst = (cdna_operands.check_sel(inst.dst_sel, "destination"), inst.dst_unused) \
      if instr.variant == "SDWA" and hasattr(inst, "dst_sel") else None
    self.int_clamp = int_clamp(instr.op.name) if self.clamp and not self.d_float else None
    self.d0 = Src("vgpr", self.vdst, self.d_bits, hi=self.d_hi)   # the destination's old value (an accumulator, or merged into)
    self.d0_narrow = instr.variant in ("", "LIT") and float_only(self.op, "D0", self.d0)
    if self.int_clamp is not None and fmt not in ("VOP3", "VOP3SD", "VOP3P"): self.int_clamp = None

  def _lane_masks(self, instr:Instr, spec:ArchSpec):
    """The registers the op's lane masks (VCC, EXEC, carry-outs) are read from and written to."""
    inst, fmt, operands = instr.inst, instr.fmt, instr.operands
    vcc, sdst = spec.vcc_lo, rawf(inst, "sdst") if fmt == "VOP3SD" or getattr(inst, "sd", 0) else spec.vcc_lo   # SDWA: SD picks SDST
    # e64 V_CNDMASK / V_*_CO_CI take the lane mask from src2; ops that read S2 as a value (V_DIV_FMAS) read VCC itself
    src2 = code(inst, "src2") if fmt in ("VOP3", "VOP3SD") and "src2" in operands and "S2" not in self.op.reads else None
    self.mask_read = {"VCC": src2 if src2 is not None else vcc, "EXEC": spec.exec_lo, "D0": vcc}
    if src2 is not None and src2 >= 128: resolve_src(src2, 64, None, instr.literal, spec)   # a reserved code fails now, not per lane
    self.mask_write = {"VCC": sdst, "EXEC": spec.exec_lo, "D1": sdst, "D0": self.vdst if fmt == "VOP3" else
                       sdst if instr.variant == "SDWA" else vcc}

  @staticmethod
  def _dpp(instr:Instr, spec:ArchSpec) -> tuple | None:
    """The DPP16/DPP8 lane routing of the encoding (None without DPP); a control this arch lacks raises now, not when it runs."""
    inst = instr.inst
    if instr.variant == "DPP16":
      dpp16_control(inst.dpp, spec.family)
      return ("16", inst.dpp, bool(getattr(inst, "fi", 0)), bool(inst.bc), inst.row_mask, inst.bank_mask)   # gfx9 has no FI
    if instr.variant == "DPP8": return ("8", [getattr(inst, f"lane_sel_{i}") for i in range(8)], inst.dpp8_fi)
    return None

  def _check_register_operands(self):
    """Whole-wave ops (WMMA, v_permlane*, v_readlane ...) and ops that read or write VGPRs by number (v_movrels, v_movreld, v_swaprel) take
    their register operands as numbers (abi.py): a DPP form, or a constant, literal or SGPR where the op reads a VGPR by number
    (src_n without the value S_n), is no instruction the ISA defines."""
    name, bad = self.instr.op.name, [f"src{i}" for i in range(3) if f"SRC{i}" in self.op.reads and f"S{i}" not in self.op.reads and
                                     self.fields[f"SRC{i}"] < 0 and not (i == 2 and self.fields.get("C_CONST") is not None)]
    if self.instr.variant in ("DPP16", "DPP8"): raise GPUIllegalInstruction(0, self.instr.raw, f"{name}: no {self.instr.variant} form")
    if bad: raise GPUIllegalInstruction(0, self.instr.raw, f"{name}: {', '.join(bad)} must be a VGPR, not a constant, literal or SGPR")

  def _fields(self, inst, reads:frozenset) -> dict:
    """The encoding fields the op reads (`reads`), by their pcode names; only those are fetched (decoding a field costs)."""
    f = {n: v for name, bf in inst._fields
         if (n := name.upper()) in reads and not isinstance(bf, SrcField) and isinstance(v := getattr(inst, name), int)}
    if "SIMM32" in reads: f["SIMM32"] = self.instr.literal or 0
    if "SIMM16" in reads: f["SIMM16"] = (self.instr.literal or 0) & 0xffff   # gfx9 V_MADAK/MADMK_F16: the K literal
    f.update({n: 0 if (c := code(inst, field)) is None else c - 256 for n, field in (("SRC0", "src0"), ("VDST", "vdst")) if n in reads})
    if "CLAMP" in reads: f["CLAMP"] = getattr(inst, "clmp", 0) or 0
    f.update({n: c - 256 for i in (1, 2) if (n := f"SRC{i}") in reads and (c := code(inst, f"src{i}")) is not None})   # WMMA's B, C
    if "OPSEL_HI" in f: f["OPSEL_HI"] = inst.opsel_hi | (inst.opsel_hi2 << 2)
    return {**{n: v for n, v in ABSENT_FIELD_VALUES.items() if n in reads}, **f}

  def _route(self, st, ws:np.ndarray, act:np.ndarray):
    """Apply DPP: returns (active lanes, source lane per lane, lanes that read 0)."""
    if self.dpp[0] == "16":
      _, ctrl, fi, bc, row_mask, bank_mask = self.dpp
      src, valid = dpp16_route(ctrl, st.lanes, self.spec.family)
      act = act & dpp16_write_enable(row_mask, bank_mask, st.lanes)
    else:
      src, fi, bc, valid = dpp8_route(self.dpp[1], st.lanes), self.dpp[2], True, np.ones(st.lanes, dtype=bool)
    ok = valid[None, :] & (fi | st.exec_bits(ws)[:, src])
    return act & (ok | bc), src, ~ok

  def execute(self, m:Machine, ws:np.ndarray):
    st = m.st
    if self.op.kind == "wave": return self._wave(m, ws)
    if self.scalar_dst: return self._batch(m, ws, Lanes(ws, np.arange(st.lanes)[None, :].repeat(len(ws), 0) == 0, None), None, None)
    if self.dpp is None and not self.per_wave: return self._batch(m, ws, m.active(ws), None, None)
    act, src_lane, zero = st.exec_bits(ws), None, None
    if self.dpp is not None: act, src_lane, zero = self._route(st, ws, act)
    if self.per_wave:
      for i in range(len(ws)): self._batch(m, ws[i:i+1], Lanes(ws[i:i+1], act[i:i+1], None), src_lane, None if zero is None else zero[i:i+1])
    else: self._batch(m, ws, Lanes(ws, act, None), src_lane, zero)

  def _batch(self, m:Machine, ws, lanes:Lanes, src_lane, zero):
    st, op = m.st, self.op
    wi, ln, wv, dense = lanes.wi, lanes.ln, lanes.wv, lanes.dense
    if len(wv) == 0:
      for name in self.mask_writes: store_lane_bits(st, ws, lanes, self.mask_write[name], np.zeros(0, dtype=U64))
      return
    o = OpState(n=len(wv), laneId=lanes.lane_id, WAVE32=st.lanes == 32, WAVE64=st.lanes == 64, **st.mode(int(ws[0])), **self.fields)
    for name, s in self.srcs.items():
      if name == "S0" and src_lane is not None:
        v = s.read(st, wv, src_lane[ln])
        o.S0 = np.where(zero[wi, ln], U64(0), v)
      else: setattr(o, name, s.read(st, wv, ln, dense))
    for name in self.mask_reads: setattr(o, name, mask_lane_bits(st, ws, lanes, self.mask_read[name], self.instr.literal))
    if self.reads_d0: o.D0 = self.d0.read_lanes32(st, wv, ln, dense) if self.d0_narrow else self.d0.read_lanes(st, wv, ln, dense)
    if "M0" in op.reads: o.M0 = st.sgpr[wv, self.spec.m0_reg].astype(U64)
    if "SCC" in op.reads: o.SCC = st.scc[wv].astype(U64)
    if "EXEC" in op.reads and "EXEC" not in op.lane_masks: o.EXEC = mask_lane_bits(st, ws, lanes, self.spec.exec_lo)
    if self.per_wave: o.VGPR = VgprFile(st.vgpr[int(ws[0]), :, :AGPR_BASE])
    carry_in = np.array(o.VCC, copy=True) if self.int_clamp is not None and "VCC" in self.mask_reads else None
    op.fn(o)
    for name in self.mask_writes: store_lane_bits(st, ws, lanes, self.mask_write[name], getattr(o, name))
    for name in self.source_writes:   # the pcode assigns a source operand (V_SWAP_B32/B16): its register is written back
      src = self.srcs[name].src
      write_vgpr_lanes(st, wv, ln, src.reg, src.bits, np.asarray(getattr(o, name), dtype=U64), src.hi, dense)
    if self.writes_d0:
      omod = self.omod if self.omod and omod_applies(st.mode(int(ws[0])), self.d_bits, self.spec.ieee_mode) else 0
      d = o.D0
      if self.d_float and (omod or self.clamp): d = apply_omod_clamp(np.asarray(d, dtype=U64), self.d_bits, omod, self.clamp, self.d_packed)
      if self.int_clamp is not None:
        d = self.int_clamp([getattr(o, n) for n in ("S0", "S1", "S2") if n in self.srcs] + ([carry_in] if carry_in is not None else []), d)
      if self.sdwa_dst is not None:   # SDWA: the result lands in a byte/word of the 32-bit destination
        d = cdna_operands.sdwa_merge(read_vgpr_lanes(st, wv, ln, self.vdst, 32, dense=dense), d, *self.sdwa_dst)
      if self.scalar_dst: write_sgpr(st, wv, self.vdst, self.d_bits, np.asarray(d, dtype=U64))
      else: write_vgpr_lanes(st, wv, ln, self.vdst, 32 if self.sdwa_dst is not None else self.store_bits, d, self.d_hi, dense)

  def _wave(self, m:Machine, ws:np.ndarray):
    """Whole-wave ops (v_readlane, v_writelane, v_readfirstlane, v_permlane*): one call per wave with Python ints; ops that take
    many waves at once (CompiledOp.waves_at_once: WMMA, MFMA) one call per run of consecutive waves, on a view of their VGPRs."""
    st, op = m.st, self.op
    if op.waves_at_once:
      for run in np.split(ws, np.flatnonzero(np.diff(ws) != 1) + 1):
        w, end = int(run[0]), int(run[-1]) + 1
        o = OpState(WAVE32=st.lanes == 32, WAVE64=st.lanes == 64, VGPR=st.vgpr[w:end, :, :AGPR_BASE], **self.fields)
        if "AGPR" in op.reads: o.AGPR = st.vgpr[w:end, :, AGPR_BASE:]   # CDNA MFMA: the accumulation registers, updated in place
        self._call(st, w, o)
      return
    for w in (int(x) for x in ws):
      o = OpState(WAVE32=st.lanes == 32, WAVE64=st.lanes == 64, VGPR=st.vgpr[w, :, :AGPR_BASE], EXEC=st.get_mask(w, self.spec.exec_lo),
                  M0=int(st.sgpr[w, self.spec.m0_reg]), **self.fields)
      if "AGPR" in op.reads: o.AGPR = st.vgpr[w, :, AGPR_BASE:]   # CDNA MFMA: the accumulation registers, updated in place
      for name, s in self.srcs.items(): setattr(o, name, s.src.read_int(st, w) if s.src.kind != "vgpr" else 0)
      if "D0" in op.reads: o.D0 = int(st.sgpr[w, self.vdst]) if self.instr.sdst_dest else 0
      self._call(st, w, o)
      if "D0" in op.writes and self.instr.sdst_dest: write_sgpr(st, w, self.vdst, 32, int(o.D0))
      if "EXEC" in op.writes: st.set_mask(w, self.spec.exec_lo, int(o.EXEC))

  def _call(self, st, w:int, o:OpState):
    """Run the op on `o` (wave w's, or the run of waves from w); a field the op rejects is an illegal instruction at w's PC."""
    try: self.op.fn(o)
    except InvalidField as e: raise GPUIllegalInstruction(int(st.pc[w]), self.instr.raw, f"{self.instr.op.name}: {e}") from None

def _vopd_op(spec:ArchSpec, dual):
  """The VOP1/VOP2/VOP3 opcode a VOPD half performs (V_DUAL_X -> V_X_E32)."""
  name = "V_" + dual.name[len("V_DUAL_"):]
  for enum_name in ("VOP2Op", "VOP1Op", "VOP3Op"):
    e = getattr(spec.enum, enum_name)
    for cand in (name + "_E32", name, name + "_E64"):
      if cand in e.__members__: return e[cand]
  raise KeyError(name)

class VopdStep(Step):
  """VOPD: two VOP2/VOP1-class ops issued together; both read their sources before either writes."""
  def __init__(self, instr:Instr, spec:ArchSpec):
    super().__init__(instr, spec)
    inst, lit = instr.inst, instr.literal
    self.halves = []
    for opf, s0f, s1f, df in (("opx", "srcx0", "vsrcx1", "vdstx"), ("opy", "srcy0", "vsrcy1", "vdsty")):
      op = get_op(spec.name, _vopd_op(spec, getattr(inst, opf)), raw=instr.raw)
      srcs = {"S0": resolve_src(code(inst, s0f), 32, Fmt.FMT_NUM_F32, lit, spec), "S1": Src("vgpr", code(inst, s1f) - 256, 32)}
      srcs = {k: v for k, v in srcs.items() if k in op.reads}
      if "D0" in op.reads: srcs["D0"] = Src("vgpr", code(inst, df) - 256, 32)   # V_DUAL_FMAC's accumulator
      self.halves.append((op, srcs, code(inst, df) - 256, {k for k, v in srcs.items() if float_only(op, k, v)}))
    self.mode_dep = any(op.reads & MODE_INPUTS for op, _, _, _ in self.halves)

  def execute(self, m:Machine, ws:np.ndarray):
    st, lanes = m.st, m.active(ws)
    wv, ln, dense = lanes.wv, lanes.ln, lanes.dense
    if len(wv) == 0: return
    states = []
    for op, srcs, vdst, narrow in self.halves:
      o = OpState(n=len(wv), laneId=lanes.lane_id, WAVE32=st.lanes == 32, WAVE64=st.lanes == 64, **st.mode(int(ws[0])),
                  SIMM32=self.instr.literal or 0)
      for name, s in srcs.items(): setattr(o, name, s.read_lanes32(st, wv, ln, dense) if name in narrow else s.read_lanes(st, wv, ln, dense))
      if "VCC" in op.reads: o.VCC = mask_lane_bits(st, ws, lanes, self.spec.vcc_lo)
      states.append(o)
    for (op, _, _, _), o in zip(self.halves, states): op.fn(o)
    for (op, _, vdst, _), o in zip(self.halves, states): write_vgpr_lanes(st, wv, ln, vdst, 32, np.asarray(o.D0, dtype=U64), dense=dense)
