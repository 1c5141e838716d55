"""Vector memory executors: DS (LDS), GLOBAL/FLAT and SCRATCH.

The executor computes each lane's address (DS: the address VGPR, the op adds OFFSET*; GLOBAL: VGPR64, or SGPR64 base +
VGPR32, plus the signed 13-bit offset; SCRATCH: optional VGPR32 + optional SGPR + offset into the lane's private
memory) and hands the pcode op a memory accessor. FLAT is treated as GLOBAL (no LDS/scratch apertures are modelled).
Atomics run in rounds so that no two lanes of one call share an address (lane order is kept within an address).
"""
from __future__ import annotations
import numpy as np
from emu.amd.arch import ArchSpec
from emu.amd.decode import Instr
from emu.amd.exec_valu import rawf
from emu.amd.operands import Src, write_vgpr_lanes
from emu.amd.semantics import get_op
from emu.amd.step import Machine, Step
from emu.pcode.abi import OpState

U64 = np.uint64

def alias_rounds(key:np.ndarray) -> np.ndarray:
  """Round number of each lane: the k-th lane (in lane order) using an address goes in round k."""
  n = len(key)
  order = np.argsort(key, kind="stable")
  sk = key[order]
  start = np.r_[True, sk[1:] != sk[:-1]] if n else np.zeros(0, dtype=bool)
  first = np.maximum.accumulate(np.where(start, np.arange(n), 0)) if n else np.zeros(0, dtype=np.int64)
  rank = np.empty(n, dtype=np.int64)
  rank[order] = np.arange(n) - first
  return rank

class VmemStep(Step):
  """One DS / GLOBAL / FLAT / SCRATCH instruction."""
  def __init__(self, instr:Instr, spec:ArchSpec):
    super().__init__(instr, spec)
    inst, fmt = instr.inst, instr.fmt
    self.op = op = get_op(spec.family, instr.op, raw=instr.raw)
    self.fmt, self.addr, self.vdst = fmt, rawf(inst, "addr"), rawf(inst, "vdst")
    w = lambda name, default=32: op.widths.get(name, default)
    if fmt == "DS":
      self.fields = {"OFFSET": inst.offset0 | (inst.offset1 << 8), "OFFSET0": inst.offset0, "OFFSET1": inst.offset1}
      self.data = {"DATA": Src("vgpr", rawf(inst, "data0"), w("DATA")), "DATA2": Src("vgpr", rawf(inst, "data1"), w("DATA2"))}
      name = instr.op.name
      self.returns = not (name.startswith("DS_STORE") or (op.mem_rmw and "RTN" not in name))   # non-RTN atomics return nothing
    else:
      off = inst.offset
      self.offset = off - (1 << 13) if off & (1 << 12) else off
      self.saddr, self.sve = rawf(inst, "saddr"), bool(inst.sve)
      data = rawf(inst, "data")
      self.data = {"DATA": Src("vgpr", data, w("DATA")), "DATA2": Src("vgpr", data + w("DATA") // 32, w("DATA2")),
                   "VDATA": Src("vgpr", self.vdst if "VDATA" in op.writes else data, w("VDATA"))}
      self.fields = {"OFFSET": self.offset}
      self.returns = bool(inst.glc)
    self.fields = {k: v for k, v in self.fields.items() if k in op.reads}
    self.mem_name = "lds" if fmt == "DS" else "scratch" if fmt == "SCRATCH" else "gmem"

  def _addresses(self, st, wv:np.ndarray, ln:np.ndarray) -> np.ndarray:
    null = self.spec.null_reg
    if self.fmt == "DS": return Src("vgpr", self.addr, 32).read_lanes(st, wv, ln)
    if self.fmt == "SCRATCH":
      a = Src("vgpr", self.addr, 32).read_lanes(st, wv, ln) if self.sve else np.zeros(len(wv), dtype=U64)
      if self.saddr != null: a = a + Src("sgpr", self.saddr, 32).read_lanes(st, wv, ln)
      return (a + U64(self.offset & 0xffffffff)) & U64(0xffffffff)
    if self.saddr in (null, self.spec.m0_reg): a = Src("vgpr", self.addr, 64).read_lanes(st, wv, ln)
    else: a = Src("sgpr", self.saddr, 64).read_lanes(st, wv, ln) + Src("vgpr", self.addr, 32).read_lanes(st, wv, ln)
    return a + U64(self.offset & 0xffffffffffffffff)

  def execute(self, m:Machine, ws:np.ndarray):
    st, op = m.st, self.op
    if op.kind == "wave": return self._wave(m, ws)
    wi, ln = np.nonzero(st.exec_bits(ws))
    wv = ws[wi]
    if len(wv) == 0: return
    inputs = {"laneId": ln.astype(U64), "ADDR": self._addresses(st, wv, ln)}
    for name, src in self.data.items():
      if name in op.reads: inputs[name] = src.read_lanes(st, wv, ln)
    if "RETURN_DATA" in op.reads: inputs["RETURN_DATA"] = Src("vgpr", self.vdst, op.widths.get("RETURN_DATA", 32)).read_lanes(st, wv, ln)
    mem = getattr(m, self.mem_name)
    base = m.lds_base(wv) if self.fmt == "DS" else m.scratch_base(wv, ln) if self.fmt == "SCRATCH" else None
    key = inputs["ADDR"].astype(np.int64) + (base if base is not None else 0)
    rounds = alias_rounds(key) if op.mem_rmw else np.zeros(len(wv), dtype=np.int64)
    outs: dict[str, np.ndarray] = {}
    for r in range(int(rounds.max()) + 1):
      sel = rounds == r if op.mem_rmw else slice(None)
      o = OpState(n=len(key[sel]), MEM=mem, WAVE32=st.lanes == 32, WAVE64=st.lanes == 64, **self.fields, **{k: v[sel] for k, v in inputs.items()})
      if base is not None: mem.base = base[sel]
      op.fn(o)
      for name in op.writes & {"VDATA", "RETURN_DATA"}:
        val = np.asarray(getattr(o, name))
        if name not in outs: outs[name] = np.zeros((len(wv),) + val.shape[1:], dtype=val.dtype)
        outs[name][sel] = val
    if "VDATA" in outs: write_vgpr_lanes(st, wv, ln, self.vdst, op.widths.get("VDATA", 32), outs["VDATA"])
    if "RETURN_DATA" in outs and self.returns: write_vgpr_lanes(st, wv, ln, self.vdst, op.widths.get("RETURN_DATA", 32), outs["RETURN_DATA"])

  def _wave(self, m:Machine, ws:np.ndarray):
    """Whole-wave DS ops (ds_permute/bpermute, ds_swizzle): one call per wave with the VGPR file and register numbers."""
    st, inst = m.st, self.instr.inst
    regs = {"VDST": self.vdst, "ADDR": self.addr, "DATA0": rawf(inst, "data0"), "DATA1": rawf(inst, "data1")} if self.fmt == "DS" else {}
    for w in (int(x) for x in ws):
      o = OpState(VGPR=st.vgpr[w], EXEC=st.get_mask(w, self.spec.exec_lo), WAVE32=st.lanes == 32, WAVE64=st.lanes == 64, MEM=m.lds,
                  OFFSET0=inst.offset0, OFFSET1=inst.offset1, OFFSET=inst.offset0 | (inst.offset1 << 8), **regs)
      self.op.fn(o)
