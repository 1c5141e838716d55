"""Vector memory executors: DS (LDS), GLOBAL/FLAT and SCRATCH.

The executor computes each lane's address (DS: the address VGPR, the op adds OFFSET*; GLOBAL: VGPR64, or SGPR64 base +
VGPR32, plus the signed 13-bit offset; SCRATCH: optional VGPR32 + optional SGPR + offset into the lane's private
memory) and hands the pcode op a memory accessor. FLAT addresses are global unless they fall in the shared or private aperture
(ArchSpec.shared_aperture / private_aperture), which reach the workgroup's LDS or the lane's scratch.
Atomics run in rounds so that no two lanes of one call share an address (lane order is kept within an address).
A store the pcode moves in several writes (B64/B96/B128), or one whose lanes reach several memories (FLAT), first checks every lane's
whole footprint (`mem_access.footprint`): a fault leaves memory unchanged.
rdna4 *_LOAD_BLOCK / *_STORE_BLOCK move dword i of the block at the lane's address + 4*i to / from VGPR vdst/vsrc + i for each set bit i
of M0 (holes skipped in both, as the vendor text says); its pcode indexes VGPR[laneId][ADDR] as if ADDR were a register number, so the
executor runs them (`_block`). Registers past v255 are not part of the block.
"""
from __future__ import annotations
import functools
import numpy as np
from emu.amd.arch import ArchSpec
from emu.amd.decode import Instr, rawf
from emu.amd.mem_access import footprint, locate
from emu.amd.mnemonic import parse
from emu.amd.operands import SADDR_OFF, Src, write_vgpr_lanes
from emu.amd.semantics import get_op
from emu.amd.wave import AGPR_BASE
from emu.amd.step import Machine, Step
from emu.pcode.abi import OpState

U64 = np.uint64
# field names of the FLAT/GLOBAL/SCRATCH encodings per ISA family (rdna4: VFLAT/VGLOBAL/VSCRATCH): address VGPR, data VGPR, offset
# field and its signed width, and the bit that makes an atomic return its pre-op value (rdna4: TH[0], TH_ATOMIC_RETURN)
MEM_FIELDS = {"rdna4": ("vaddr", "vsrc", "ioffset", 24, lambda inst: inst.th & 1)}
DEFAULT_MEM_FIELDS = ("addr", "data", "offset", 13, lambda inst: inst.glc if hasattr(inst, "glc") else inst.sc0)   # gfx940+: GLC is SC0
# FLAT-segment offsets are unsigned: gfx10/gfx11 use the low 12 bits of the 13-bit field (LLVM's assembler: "MSB is ignored and forced to
# zero"), gfx9's field is 12 bits; gfx12's 24-bit offsets are signed for every segment
FLAT_UNSIGNED_BITS = {"rdna3": 12, "cdna": 12}

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
    self.op = op = get_op(spec.name, instr.op, raw=instr.raw)
    acc = AGPR_BASE if getattr(inst, "acc", 0) else 0   # CDNA ACC bit: data and destination are AGPRs
    self.fmt, self.vdst = fmt, rawf(inst, "vdst") + acc
    w = lambda name, default=32: op.widths.get(name, default)
    m = parse(instr.op.name)
    self.block, self.block_store = None, m.words[0] == "STORE"   # block moves: the first VGPR of the block; a store or a load
    self.addtid = False
    if fmt == "DS":
      self.addr = rawf(inst, "addr")
      self.fields = {"OFFSET": inst.offset0 | (inst.offset1 << 8), "OFFSET0": inst.offset0, "OFFSET1": inst.offset1}
      self.data = {"DATA": Src("vgpr", rawf(inst, "data0") + acc, w("DATA")), "DATA2": Src("vgpr", rawf(inst, "data1") + acc, w("DATA2"))}
      self.returns = not op.mem_rmw or m.has("RTN")   # DS atomics return their pre-op value only in their _RTN forms
    else:
      addr_f, data_f, off_f, off_bits, returns = MEM_FIELDS.get(spec.family, DEFAULT_MEM_FIELDS)
      off = getattr(inst, off_f)
      if fmt == "FLAT" and spec.family in FLAT_UNSIGNED_BITS: self.offset = off & ((1 << FLAT_UNSIGNED_BITS[spec.family]) - 1)
      else: self.offset = off - (1 << off_bits) if off & (1 << (off_bits - 1)) else off
      self.addr, self.saddr, self.sve = rawf(inst, addr_f), rawf(inst, "saddr"), bool(inst.sve)
      # GLOBAL/FLAT: the SGPR pair a 32-bit VGPR offset adds to, or None for a 64-bit VGPR address (FLAT has none: gfx9 encodes
      # its SADDR field as 0, RDNA as NULL; GLOBAL without one says NULL, or 0x7f on gfx9)
      self.sgpr_base = None if fmt == "FLAT" or self.saddr in (spec.null_reg, spec.m0_reg, SADDR_OFF) else self.saddr
      data = rawf(inst, data_f) + acc
      self.data = {"DATA": Src("vgpr", data, w("DATA")), "DATA2": Src("vgpr", data + w("DATA") // 32, w("DATA2")),
                   "VDATA": Src("vgpr", self.vdst if "VDATA" in op.writes else data, w("VDATA"))}
      # GLOBAL_*_ADDTID: the pcode adds INST_OFFSET[11:0] (the raw field) and laneId * 4 to SGPR_ADDR, so ADDR is the SGPR base alone
      self.addtid = "INST_OFFSET" in op.reads
      self.fields = {"OFFSET": self.offset, "INST_OFFSET": off}
      self.returns = bool(returns(inst)) if op.mem_rmw else True   # an atomic returns its pre-op value only when asked
      if m.has("BLOCK"): self.block = data if self.block_store else self.vdst   # rdna4 block moves of up to 32 VGPRs (M0 mask)
    self.fields = {k: v for k, v in self.fields.items() if k in op.reads}
    # stores that may fault after writing part of their data: the span [lo, hi) around ADDR every lane's accesses cover
    self.span = self.window = None
    if fmt != "DS" and self.block is None and op.kind != "wave":
      fp = footprint(op, False, **self.fields)
      if "w" in op.mem: self.span, self.multi_write = (fp.lo, fp.size), fp.writes > 1
      # global loads and stores of several dwords (B64/B96/B128): each lane's span is located once for all of the op's accesses
      if op.mem in ("r", "w") and fmt in ("GLOBAL", "FLAT") and fp.reads + fp.writes > 1: self.window = (fp.lo, fp.size, op.mem == "w")

  def _addresses(self, st, wv:np.ndarray, ln:np.ndarray, dense:slice|None=None) -> np.ndarray:
    null = self.spec.null_reg
    if self.fmt == "DS": return Src("vgpr", self.addr, 32).read_lanes(st, wv, ln, dense)
    if self.fmt == "SCRATCH":
      a = Src("vgpr", self.addr, 32).read_lanes(st, wv, ln, dense) if self.sve else np.zeros(len(wv), dtype=U64)
      if self.saddr not in (null, SADDR_OFF): a = a + Src("sgpr", self.saddr, 32).read_lanes(st, wv, ln)
      return (a + U64(self.offset & 0xffffffff)) & U64(0xffffffff)
    if self.addtid: return np.zeros(len(wv), dtype=U64) if self.saddr in (null, SADDR_OFF) else Src("sgpr", self.saddr, 64).read_lanes(st, wv, ln)
    return self.global_address(lambda src: src.read_lanes(st, wv, ln, dense if src.kind == "vgpr" else None))

  def active_addresses(self, st, ws:np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ADDR each active lane of waves `ws` gives the op (a DS op's LDS byte address, a global one's full address): (index
    into `ws`, lane, address) per active lane."""
    wv, ln = np.nonzero(st.exec_bits(ws))
    return wv, ln, self._addresses(st, ws[wv], ln)

  @functools.cached_property
  def accesses(self) -> list[tuple[int, int]]:
    """Each memory access the op makes, in order, as (byte offset from ADDR, bytes): its footprint (made once, on first use)."""
    return footprint(self.op, False, **self.fields).accesses

  def global_address(self, read):
    """A GLOBAL/FLAT instruction's per-lane byte address from `read(Src)` (the lanes' uint64 values, or lanes_ir.Bits in a native
    region): a VGPR pair, or an SGPR pair plus a 32-bit VGPR, plus the instruction's offset (a bit rule: see operands.apply_neg_abs)."""
    if self.sgpr_base is None: a = read(Src("vgpr", self.addr, 64))
    else: a = read(Src("sgpr", self.sgpr_base, 64)) + read(Src("vgpr", self.addr, 32))
    return a + (self.offset & 0xffffffffffffffff)

  def _regions(self, m:Machine, wv:np.ndarray, ln:np.ndarray, addr:np.ndarray) -> list[tuple]:
    """(lanes, memory, per-lane base or None, addresses the op sees) for each memory the lanes reach. FLAT addresses inside the
    shared / private aperture go to LDS / the lane's scratch at their offset in the aperture; all others are global."""
    if self.fmt == "DS": return [(slice(None), m.lds, m.lds_base(wv), addr)]
    if self.fmt == "SCRATCH": return [(slice(None), m.scratch, m.scratch_base(wv, ln), addr)]
    if self.fmt == "FLAT":
      spec, low = self.spec, U64(0xffffffff)
      inside = lambda base: (addr >= U64(base)) & (addr < U64(base + spec.aperture_size))
      shared, private = inside(spec.shared_aperture), inside(spec.private_aperture)
      if shared.any() or private.any():
        g, s, p = np.nonzero(~(shared | private))[0], np.nonzero(shared)[0], np.nonzero(private)[0]
        return [r for r in ((g, m.gmem, None, addr[g]), (s, m.lds, m.lds_base(wv[s]), addr[s] & low),
                            (p, m.scratch, m.scratch_base(wv[p], ln[p]), addr[p] & low)) if len(r[0])]
    return [(slice(None), m.gmem, None, addr)]

  def _check(self, regions:list[tuple]):
    """Fault before anything moves if any lane's whole span leaves its memory."""
    lo, size = self.span
    for _, mem, _, addr in regions: mem.check(addr + U64(lo), size, True)

  def execute(self, m:Machine, ws:np.ndarray):
    st, op = m.st, self.op
    if op.kind == "wave": return self._wave(m, ws)
    if self.block is not None: return self._block(m, ws)
    lanes = m.active(ws)
    wv, ln, dense = lanes.wv, lanes.ln, lanes.dense
    if len(wv) == 0: return
    inputs = {"laneId": lanes.lane_id, "ADDR": self._addresses(st, wv, ln, dense)}
    for name, src in self.data.items():
      if name in op.reads: inputs[name] = src.read_lanes(st, wv, ln, dense)
    if "M0" in op.reads: inputs["M0"] = st.sgpr[wv, self.spec.m0_reg].astype(U64)   # DS_*_ADDTID: M0[15:0] is part of the address
    if "RETURN_DATA" in op.reads: inputs["RETURN_DATA"] = Src("vgpr", self.vdst, op.widths.get("RETURN_DATA", 32)).read_lanes(st, wv, ln)
    regions = self._regions(m, wv, ln, inputs["ADDR"])
    if self.span is not None and (self.multi_write or len(regions) > 1): self._check(regions)
    if len(regions) == 1 and isinstance(regions[0][0], slice) and not op.mem_rmw: outs = self._whole(m, regions[0], inputs, len(wv))
    else: outs = self._by_region(m, regions, inputs, len(wv))
    if "VDATA" in outs: write_vgpr_lanes(st, wv, ln, self.vdst, op.widths.get("VDATA", 32), outs["VDATA"], dense=dense)
    if "RETURN_DATA" in outs and self.returns:
      write_vgpr_lanes(st, wv, ln, self.vdst, op.widths.get("RETURN_DATA", 32), outs["RETURN_DATA"], dense=dense)

  def _whole(self, m:Machine, region:tuple, inputs:dict, n:int) -> dict[str, np.ndarray]:
    """The common case, every lane in one memory and no atomic: one call over all lanes (a multi-dword global load `locate`d once)."""
    _, mem, base, addr = region
    if base is not None: mem = mem.at(base)
    elif self.window is not None and mem is m.gmem: mem = locate(mem, addr, *self.window)
    o = OpState(n=n, MEM=mem, WAVE32=m.st.lanes == 32, WAVE64=m.st.lanes == 64, **self.fields, **inputs | {"ADDR": addr})
    self.op.fn(o)
    return {name: np.asarray(getattr(o, name)) for name in self.op.writes & {"VDATA", "RETURN_DATA"}}

  def _by_region(self, m:Machine, regions:list[tuple], inputs:dict, n:int) -> dict[str, np.ndarray]:
    """One call per memory the lanes reach; atomics in rounds of lanes with distinct addresses (lane order kept per address)."""
    op, st, outs = self.op, m.st, {}
    for sel, mem, base, addr in regions:
      sub = {k: v[sel] for k, v in inputs.items()} | {"ADDR": addr}
      key = addr.astype(np.int64) + (base if base is not None else 0)
      rounds = alias_rounds(key) if op.mem_rmw else np.zeros(len(key), dtype=np.int64)
      for r in range(int(rounds.max()) + 1):
        rs = rounds == r if op.mem_rmw else slice(None)
        view = mem.at(base[rs]) if base is not None else mem
        o = OpState(n=len(key[rs]), MEM=view, WAVE32=st.lanes == 32, WAVE64=st.lanes == 64, **self.fields, **{k: v[rs] for k, v in sub.items()})
        op.fn(o)
        for name in op.writes & {"VDATA", "RETURN_DATA"}:
          val = np.asarray(getattr(o, name))
          if name not in outs: outs[name] = np.zeros((n,) + val.shape[1:], dtype=val.dtype)
          outs[name][np.arange(n)[sel][rs]] = val
    return outs

  def _block(self, m:Machine, ws:np.ndarray):
    """*_LOAD_BLOCK / *_STORE_BLOCK: every (lane, set bit i of its wave's M0) pair is one 4-byte access at the lane's address + 4*i, all
    of them in one read or write call per memory (so a fault moves nothing)."""
    st, lanes = m.st, m.active(ws)
    if len(lanes) == 0: return
    m0 = st.sgpr[lanes.wv, self.spec.m0_reg].astype(np.int64)
    bit = np.arange(32)
    on = ((m0[:, None] >> bit) & 1).astype(bool) & (self.block + bit < AGPR_BASE)
    li, i = np.nonzero(on)   # lane-major: lane order is kept for stores to one address
    if len(li) == 0: return
    wv, ln = lanes.wv[li], lanes.ln[li]
    addr = self._addresses(st, lanes.wv, lanes.ln, lanes.dense)[li] + U64(4) * i.astype(U64)
    store, reg = self.block_store, self.block + i
    for sel, mem, base, a in self._regions(m, wv, ln, addr):
      if base is not None: mem = mem.at(base)
      if store: mem.write(a, st.vgpr[wv[sel], ln[sel], reg[sel]].astype(U64), 4)
      else: st.vgpr[wv[sel], ln[sel], reg[sel]] = mem.read(a, 4).astype(np.uint32)

  def _wave(self, m:Machine, ws:np.ndarray):
    """Whole-wave DS ops (ds_permute/bpermute, ds_swizzle): one call per wave with the VGPR file and register numbers."""
    st, inst = m.st, self.instr.inst
    acc = self.vdst - rawf(inst, "vdst")   # AGPR_BASE with CDNA's ACC bit: data0 is an AGPR too
    regs = {"VDST": self.vdst, "ADDR": self.addr, "DATA": rawf(inst, "data0") + acc, "DATA1": rawf(inst, "data1") + acc} if self.fmt == "DS" else {}
    for w in (int(x) for x in ws):
      o = OpState(VGPR=st.vgpr[w], EXEC=st.get_mask(w, self.spec.exec_lo), WAVE32=st.lanes == 32, WAVE64=st.lanes == 64, MEM=m.lds,
                  OFFSET0=inst.offset0, OFFSET1=inst.offset1, OFFSET=inst.offset0 | (inst.offset1 << 8), **regs)
      self.op.fn(o)
