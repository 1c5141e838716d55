"""What only CDNA (gfx9: gfx942, gfx950) has: accumulation VGPRs, gfx9 DPP controls, SDWA operand selects and MUBUF.

AGPRs. Every lane has a second file of 256 accumulation registers a0..a255 (`ArchSpec.n_agprs`). They live in the same
`WaveState.vgpr` array after the VGPRs: a[i] is index `wave.AGPR_BASE` + i. On gfx90a+ hardware both files are carved from one unified
register file (RSRC3.ACCUM_OFFSET says where the AGPRs start); that only affects allocation (occupancy), not what a[i] names.
v_accvgpr_read/write/mov are plain 32-bit moves (the wheel has no pcode for them): `AccMoveStep`. Memory instructions with
the ACC bit read their store data from / load into AGPRs (exec_vmem adds AGPR_BASE).

gfx9 DPP (`emu.amd.dpp.DPP16_CONTROLS['cdna']`): quad_perm, row_shl/shr/ror 1-15, wave_shl/rol/shr/ror by one lane, row_mirror,
row_half_mirror, row_bcast:15 (rows 1-3 read the last lane of the row before), row_bcast:31 (rows 2 and 3 read lane 31) and
gfx90a's row_newbcast:0-15 (every lane reads lane n of its row). There is no FI bit and no DPP8.

SDWA (VOP1/VOP2/VOPC with src0 = 0xf9): each source is a byte or word of its register (SRC*_SEL 0-3 bytes, 4-5 words, 6
dword), zero- or sign-extended (SEXT); S0/S1 bits make a source an SGPR or constant instead of a VGPR. The result goes to the
byte/word DST_SEL of VDST, the other bits zeroed (DST_UNUSED 0), sign-extended from the field (1) or kept (2).

MUBUF (`MubufStep`): the buffer resource (4 SGPRs at SRSRC) gives base (48 bits), stride, num_records, swizzle (word1 bit 31,
ELEMENT_SIZE word3[20:19], INDEX_STRIDE word3[22:21]) and ADD_TID_ENABLE (word3 bit 23). index = VGPR (IDXEN) + lane id
(ADD_TID), offset = VGPR (OFFEN, the next VGPR when both) + OFFSET; address = base + SOFFSET + offset + index * stride, or the
swizzled form. Out of range (stride 0: offset + size > num_records; else index >= num_records; size = the bytes the op moves, its
`mem_access.footprint`: 1 for buffer_load_ubyte, 4 for a 32-bit cmpswap): loads read 0, stores and atomics are dropped (CDNA3 ISA,
"Buffer Addressing"). The op still runs for such lanes with memory that reads 0 (`InRange`), so a D16 load merges the 0 into its
half and keeps the other. A store the pcode moves in several writes checks the whole span of its in-range lanes first.
"""
from __future__ import annotations
import numpy as np
from emu.amd.arch import ArchSpec
from emu.amd.decode import Instr
from emu.amd.exec_vmem import alias_rounds
from emu.amd.mem_access import InRange, footprint
from emu.amd.mnemonic import parse
from emu.amd.decode import code
from emu.amd.operands import Src, resolve_src, write_vgpr_lanes
from emu.amd.semantics import get_op
from emu.amd.step import Machine, Step
from emu.amd.wave import AGPR_BASE
from emu.pcode.abi import OpState

U64 = np.uint64

# ---- AGPR moves ----
class AccMoveStep(Step):
  """v_accvgpr_read_b32 (AGPR -> VGPR), v_accvgpr_write_b32 (VGPR/SGPR/constant -> AGPR), v_accvgpr_mov_b32 (AGPR -> AGPR)."""
  def __init__(self, instr:Instr, spec:ArchSpec):
    super().__init__(instr, spec)
    inst, move = instr.inst, parse(instr.op.name).words[1]   # V_ACCVGPR_READ / _WRITE / _MOV
    num = code(inst, "src0")
    from_agpr, to_agpr = move in ("READ", "MOV"), move in ("WRITE", "MOV")
    self.src = Src("vgpr", num - 256 + AGPR_BASE, 32) if from_agpr else resolve_src(num, 32, None, instr.literal, spec)
    self.dst = code(inst, "vdst") - 256 + (AGPR_BASE if to_agpr else 0)
  def execute(self, m:Machine, ws:np.ndarray):
    lanes = m.active(ws)
    if len(lanes) == 0: return
    write_vgpr_lanes(m.st, lanes.wv, lanes.ln, self.dst, 32, self.src.read_lanes(m.st, lanes.wv, lanes.ln, lanes.dense), dense=lanes.dense)

# ---- MUBUF ----
class MubufStep(Step):
  """One MUBUF instruction (buffer loads, stores, atomics) through a buffer resource; see the module docstring."""
  def __init__(self, instr:Instr, spec:ArchSpec):
    super().__init__(instr, spec)
    inst = instr.inst
    self.op = op = get_op(spec.name, instr.op, raw=instr.raw)
    self.vaddr, self.srsrc, self.offset = code(inst, "vaddr") - 256, code(inst, "srsrc"), inst.offset
    self.soffset = resolve_src(code(inst, "soffset"), 32, None, instr.literal, spec)
    self.offen, self.idxen = bool(inst.offen), bool(inst.idxen)
    self.vdata = code(inst, "vdata") - 256 + (AGPR_BASE if inst.acc else 0)
    fp = footprint(op, False)
    self.nbytes, self.multi_write = fp.size, "w" in op.mem and fp.writes > 1
    self.returns = "VDATA" in op.writes or ("RETURN_DATA" in op.writes and bool(inst.sc0))

  def _addresses(self, m:Machine, lanes) -> tuple[np.ndarray, np.ndarray]:
    """(byte address, in range) per lane."""
    st, wv, ln = m.st, lanes.wv, lanes.ln
    rsrc = st.sgpr[wv[:, None], self.srsrc + np.arange(4)].astype(U64)
    base = rsrc[:, 0] | ((rsrc[:, 1] & U64(0xffff)) << U64(32))
    stride, swizzle, records = (rsrc[:, 1] >> U64(16)) & U64(0x3fff), (rsrc[:, 1] >> U64(31)) & U64(1), rsrc[:, 2]
    w3 = rsrc[:, 3]
    elem, istride, add_tid = U64(2) << ((w3 >> U64(19)) & U64(3)), U64(8) << ((w3 >> U64(21)) & U64(3)), (w3 >> U64(23)) & U64(1)
    vreg = lambda k: Src("vgpr", self.vaddr + k, 32).read_lanes(st, wv, ln)
    index = (vreg(0) if self.idxen else U64(0)) + np.where(add_tid != 0, lanes.lane_id, U64(0))
    offset = (vreg(int(self.idxen)) if self.offen else U64(0)) + U64(self.offset)
    linear = offset + index * stride
    swz = (index // istride * stride + offset // elem * elem) * istride + index % istride * elem + offset % elem
    addr = base + self.soffset.read_lanes(st, wv, ln) + np.where(swizzle != 0, swz, linear)
    ok = np.where(stride == 0, offset + U64(self.nbytes) <= records, index < records)
    return addr, ok

  def execute(self, m:Machine, ws:np.ndarray):
    st, op, lanes = m.st, self.op, m.active(ws)
    if len(lanes) == 0: return
    addr, ok = self._addresses(m, lanes)
    if self.multi_write: m.gmem.check(addr[ok], self.nbytes, True)
    mem = m.gmem if ok.all() else InRange(m.gmem, ok)
    o = OpState(n=len(lanes), MEM=mem, ADDR=addr, WAVE32=False, WAVE64=True)
    for name in ("VDATA", "DATA", "DATA2"):
      if name in op.reads:
        reg = self.vdata + (op.widths.get("DATA", 32) // 32 if name == "DATA2" else 0)
        setattr(o, name, Src("vgpr", reg, op.widths[name]).read_lanes(st, lanes.wv, lanes.ln))
    if op.mem_rmw:   # atomics: no two lanes of one call may share an address
      rounds = alias_rounds(addr.astype(np.int64))
      res = np.zeros(len(lanes), dtype=U64)
      for r in range(int(rounds.max()) + 1):
        sel = rounds == r
        sub = OpState(**{k: (v[sel] if isinstance(v, np.ndarray) else v) for k, v in o.__dict__.items()})
        sub.n, sub.MEM = int(sel.sum()), mem if mem is m.gmem else mem.select(sel)
        op.fn(sub)
        if "RETURN_DATA" in op.writes: res[sel] = np.asarray(sub.RETURN_DATA, dtype=U64)
      o.RETURN_DATA = res
    else: op.fn(o)
    if not self.returns: return
    name = "VDATA" if "VDATA" in op.writes else "RETURN_DATA"
    write_vgpr_lanes(st, lanes.wv, lanes.ln, self.vdata, op.widths[name], np.asarray(getattr(o, name)))
