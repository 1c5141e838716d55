"""The thread-trace (SQTT) stream formats of the emulated GPUs, as tinygrad's decoder (`tinygrad.renderer.amd.sqtt`) reads them.

One `Layout` per ISA family: RDNA3 (gfx11, SQTT layout 3), RDNA4 (gfx12, layout 4) and CDNA (gfx9, the pre-layout format the
decoder selects when a blob does not start with a layout 3/4 header). A layout knows its stream writer (packet framing and how
time gaps are carried), its wave start/end packets, the packet hardware reports for each instruction issue, and the
token-mask register semantics. Packet bit layouts come from the decoder's own packet classes (`pack` sets their fields), so the
encoder and the decoder cannot disagree on a layout.

Instruction classes follow what the real captures report (tests/timing/test_sqtt_encode.py checks them against the gfx1100 and
gfx1200 captures); where no capture shows an instruction kind, the decoder's op names decide (each such choice says so below).
"""
from __future__ import annotations
from enum import Enum
from typing import Protocol
from tinygrad.renderer.amd import sqtt
from emu.amd.mnemonic import parse
from emu.amd.timing import MATRIX_OPS, OpInfo

TAIL_BYTES = 8             # the decoder reads a 16-nibble window: 8 bytes must follow the last packet's start
WPTR_UNIT = 32             # the trace write pointer counts 32-byte units
SHORT_DELTA = (4, 19)      # RDNA TS_DELTA_SHORT carries 4..19 cycles
CDNA_TICK = 4              # CDNA timestamps advance in 4-cycle units (CDNA_MISC.delta counts them, the decoder multiplies by 4)
# the largest CDNA_MISC step written: the all-ones delta means a saturated gap on hardware (a timestamp follows to resync it,
# traces.packets), so a chain of steps stops one tick short of it
CDNA_MISC_MAX = (sqtt.CDNA_MISC.delta.mask - 1) * CDNA_TICK
CDNA_MISC_RUN = 4          # gaps up to this many CDNA_MISC packets' worth go in CDNA_MISC packets, longer ones in a CDNA_TIMESTAMP

# RDNA SQ_THREAD_TRACE_TOKEN_MASK.token_exclude bits (gfx11 SQ_TT_TOKEN_EXCLUDE_*_SHIFT; gfx12 keeps them) of the packets emitted
EXCLUDE_VALUINST, EXCLUDE_WAVESTARTEND, EXCLUDE_IMMEDIATE, EXCLUDE_INST = 1 << 2, 1 << 4, 1 << 5, 1 << 8
# gfx9 SQ_THREAD_TRACE_TOKEN_MASK.token_mask bits (tokens included) of the packets emitted
INCLUDE_WAVE_START, INCLUDE_WAVE_END, INCLUDE_INST = 1 << 3, 1 << 6, 1 << 10

def pack(cls:type[sqtt.PacketType], **fields:int) -> int:
  """The raw bits of one packet of the decoder's packet class `cls` with the given field values (ValueError if one does not fit)."""
  raw = cls.encoding.default
  for name, value in fields.items():
    f = getattr(cls, name)
    if not 0 <= value <= f.mask: raise ValueError(f"{cls.__name__}.{name}={value} does not fit in {f.hi - f.lo + 1} bits")
    raw |= value << f.lo
  return raw

class Writer(Protocol):
  """One shader engine's stream: packets appended at absolute, non-decreasing cycle times."""
  time: int
  def packet(self, t:int, cls:type[sqtt.PacketType], **fields:int): ...
  def data(self) -> bytes: ...

def _framed(nibbles:bytes) -> bytes:
  """Nibbles packed low-first into bytes, zero padded (a no-op packet on every layout) to whole write-pointer units plus the tail."""
  nib = nibbles + b"\0" * (len(nibbles) & 1)
  body = bytes(lo | (hi << 4) for lo, hi in zip(nib[0::2], nib[1::2]))
  return body + b"\0" * (-(len(body) + TAIL_BYTES) % WPTR_UNIT + TAIL_BYTES)

class _Nibbles:
  """Packets as nibbles; `time` is the stream's (decoded) time, `last` the cycle of the last packet appended."""
  def __init__(self): self.nibbles, self.time, self.last = bytearray(), 0, 0
  def put(self, cls:type[sqtt.PacketType], raw:int):
    self.nibbles.extend((raw >> (4 * i)) & 0xf for i in range(cls._size_nibbles))  # type: ignore[attr-defined]
  def check(self, t:int):
    if t < self.last: raise ValueError(f"SQTT packets must be appended in time order ({t} < {self.last})")
    self.last = t
  def data(self) -> bytes: return _framed(bytes(self.nibbles))

class StreamWriter(_Nibbles):
  """An RDNA stream: a LAYOUT_HEADER, then packets whose own delta fields carry small gaps; longer gaps go into TS_DELTA_SHORT /
  the layout's TS_DELTA_OR_MARK packets first."""
  def __init__(self, header:int, long_delta:type[sqtt.PacketType]):
    super().__init__()
    self.long_delta = long_delta
    self.put(sqtt.LAYOUT_HEADER, header)

  def packet(self, t:int, cls:type[sqtt.PacketType], **fields:int):
    """Append a packet stamped at cycle `t`."""
    self.check(t)
    gap, dmax = t - self.time, cls.delta.mask
    while gap > dmax:
      if gap <= SHORT_DELTA[1] + dmax:
        step = max(SHORT_DELTA[0], gap - dmax)
        self.put(sqtt.TS_DELTA_SHORT, pack(sqtt.TS_DELTA_SHORT, delta=step - SHORT_DELTA[0]))
      else:
        step = min(self.long_delta.delta.mask, gap - dmax)
        self.put(self.long_delta, pack(self.long_delta, delta=step))
      gap -= step
    self.put(cls, pack(cls, delta=gap, **fields))
    self.time = t

class CDNAWriter(_Nibbles):
  """A CDNA stream, as the hardware writes it to the buffer (tinygrad prepends a layout-0 header when it reads it out).

  Packets other than CDNA_MISC carry no time: CDNA_MISC packets advance it in 4-cycle ticks and an absolute CDNA_TIMESTAMP sets it.
  The stream starts with a CDNA_TIMESTAMP of 0 at cycle 0 (the decoder anchors later timestamps on the first), and packets are
  stamped at their cycle rounded down to a tick."""
  def __init__(self):
    super().__init__()
    self.put(sqtt.CDNA_TIMESTAMP, pack(sqtt.CDNA_TIMESTAMP))

  def packet(self, t:int, cls:type[sqtt.PacketType], **fields:int):
    """Append a packet stamped at cycle `t` (`t` rounded down to a multiple of 4)."""
    self.check(t)
    t -= t % CDNA_TICK
    gap = t - self.time
    if gap > CDNA_MISC_RUN * CDNA_MISC_MAX:   # the decoder puts an absolute timestamp T at cycle T - 4
      self.put(sqtt.CDNA_TIMESTAMP, pack(sqtt.CDNA_TIMESTAMP, timestamp=t + CDNA_TICK))
      gap = 0
    while gap:
      step = min(gap, CDNA_MISC_MAX)
      self.put(sqtt.CDNA_MISC, pack(sqtt.CDNA_MISC, delta=step // CDNA_TICK))
      gap -= step
    self.put(cls, pack(cls, **fields))
    self.time = t

Issue = tuple[type[sqtt.PacketType], Enum | None]

class Layout:
  """One family's SQTT format. `unit` fields are (shader engine, array, WGP (RDNA) / CU (CDNA), SIMD)."""
  name = ""
  wave_start: type[sqtt.PacketType]
  wave_end: type[sqtt.PacketType]
  cus_per_wgp = 2          # model CUs (timing-model placement units) per WGP / CU field of the wave packets
  token_include = False    # the token register lists included packets (gfx9) instead of excluded ones (gfx11/12)
  tick = 1                 # cycles per timestamp unit
  has_pc = True            # instruction packets locate their instruction (RDNA); CDNA's carry no PC
  token_bits: dict[type[sqtt.PacketType], int] = {}

  def writer(self) -> Writer: raise NotImplementedError
  def wave_fields(self, sa:int, wgp:int, simd:int, slot:int) -> dict[str, int]:
    """Fields of this layout's WAVESTART/WAVEEND packets for a wave in `slot` of a SIMD."""
    return {"sa": sa, "wgp": wgp, "simd": simd, "wave": slot}
  def inst_fields(self, simd:int, slot:int) -> dict[str, int]:
    """Fields (besides the op) of the instruction packets of a wave in `slot` of `simd`."""
    return {"wave": slot}
  def issue(self, info:OpInfo, instr, taken:bool) -> Issue | None:
    """(packet class, op) hardware reports for an instruction, None: no packet.

    `info` is its timing view (emu.amd.timing.classify: class, data width, dwords sent, whether it writes memory), `instr` the
    decoded instruction (emu.amd.decode.Instr), `taken` whether a branch was taken."""
    raise NotImplementedError
  def emits(self, pcls:type[sqtt.PacketType], tokens:int) -> bool:
    """Whether packets of class `pcls` go into a stream whose token register field reads `tokens`."""
    return bool(tokens & self.token_bits[pcls]) == self.token_include

def _saddr_null(instr) -> bool:
  saddr = getattr(instr.inst, "saddr", None)
  return saddr is None or saddr.offset >= 124

def _dwords(info:OpInfo) -> int:
  """Dwords of data per lane a memory instruction sends (at least 1)."""
  return max(1, info.dwords)

def _message(instr) -> bool: return parse(instr.op.name).words[0] in ("SENDMSG", "SENDMSGHALT")   # s_sendmsg, s_sendmsg_rtn_*, s_sendmsghalt

class RDNA3(Layout):
  """gfx11 (layout 3), as the gfx1100 captures show it: VALUINST for VALU, IMMEDIATE for immediate SOPP instructions (s_waitcnt,
  s_clause, s_nop, ...), INST with the issue class for the rest. 64-bit VALU ops are reported as VALUINST (not VALUB_*)."""
  name = "rdna3"
  layout, header_fields = 3, {"sel_a": 6}    # LAYOUT_HEADER as gfx1100 hardware writes it
  wave_start, wave_end, inst, long_delta, ops = sqtt.WAVESTART, sqtt.WAVEEND, sqtt.INST, sqtt.TS_DELTA_OR_MARK, sqtt.InstOp
  smem_op, barrier_op = "SMEM_RD", "BARRIER"
  token_bits = {sqtt.WAVESTART: EXCLUDE_WAVESTARTEND, sqtt.WAVEEND: EXCLUDE_WAVESTARTEND, sqtt.VALUINST: EXCLUDE_VALUINST,
                sqtt.IMMEDIATE: EXCLUDE_IMMEDIATE, sqtt.INST: EXCLUDE_INST}

  def writer(self) -> Writer:
    return StreamWriter(pack(sqtt.LAYOUT_HEADER, layout=self.layout, **self.header_fields), self.long_delta)

  def valu(self, info:OpInfo, instr) -> Issue:
    if parse(instr.op.name).words[0] == "CMPX": return self.inst, self.ops.VALU1_WR_EXEC
    return (self.inst, self.ops.VALUT_4) if info.cls == "trans" else (sqtt.VALUINST, None)

  def salu(self, instr) -> Enum: return self.ops.SALU_WR_EXEC if parse(instr.op.name).has("SAVEEXEC") else self.ops.SALU

  def memory(self, info:OpInfo, instr, saddr_null:bool) -> Enum:
    store = info.cls == "vmem_store"
    if instr.fmt == "FLAT": return self.ops[f"FLAT_WR_{min(6, 2 + _dwords(info))}"] if store else self.ops.FLAT_RD_2
    if store: return self.ops[f"SGMEM_WR_{min(6, 1 + _dwords(info) + saddr_null)}"]
    return self.ops.SGMEM_RD_2 if saddr_null else self.ops.SGMEM_RD_1

  def issue(self, info:OpInfo, instr, taken:bool) -> Issue | None:
    op, cls = self.ops, info.cls
    if cls in ("valu", "trans"): return self.valu(info, instr)
    if cls == "salu": return self.inst, self.salu(instr)
    if cls == "branch": return self.inst, (op.JUMP if taken else op.JUMP_NO)
    if cls == "smem": return self.inst, op[self.smem_op]
    if cls == "barrier": return self.inst, op[self.barrier_op]
    if cls in ("vmem_load", "vmem_store"): return self.inst, self.memory(info, instr, _saddr_null(instr))
    if cls == "lds":   # an instruction that writes LDS (stores, atomics) reports its data size; the rest read
      return self.inst, op[f"LDS_WR_{min(5, 1 + _dwords(info))}"] if info.writes else op.LDS_RD
    if cls == "other" and _message(instr): return self.inst, op.MESSAGE
    if cls in ("waitcnt", "nop", "other"): return sqtt.IMMEDIATE, None
    return None  # 'end' is the WAVEEND, 'delay' (s_delay_alu, s_wait_alu, s_barrier_wait) is never issued

class RDNA4(RDNA3):
  """gfx12 (layout 4), as the gfx1200 captures show it: like RDNA3 (same VALUINST / IMMEDIATE, memory ops keep their values under
  the VMEM_* names) but INST_RDNA4 ops, wider WGP fields, BARRIER_SIGNAL for s_barrier_signal, VALUB_2 for 64-bit shifts, VALUB_4
  for 64-bit multiply-adds, VALU_SCL_TRANS for v_s_* transcendentals, WMMA_8 (iu8) / WMMA_16 (f16), SALU_2 for s_mul_i32. Not in
  the captures, extended by analogy or from the decoder's op names: VALUB_2 for the other 64-bit integer VALU ops, the WMMA width
  by input type (16-bit: WMMA_16, 8/4-bit: WMMA_8), SALU_2 for every s_mul_*, VALU_DPFP for f64 VALU ops, SALU_FLOAT_3 for SALU
  float ops."""
  name = "rdna4"
  layout, header_fields = 4, {"sel_a": 6, "sel_b": 4, "flag4": 1}   # LAYOUT_HEADER as gfx1200 hardware writes it
  wave_start, wave_end, inst, long_delta, ops = (sqtt.WAVESTART_RDNA4, sqtt.WAVEEND_RDNA4, sqtt.INST_RDNA4, sqtt.TS_DELTA_OR_MARK_RDNA4,
                                                 sqtt.InstOpRDNA4)
  smem_op, barrier_op = "SMEM", "BARRIER_SIGNAL"
  token_bits = {sqtt.WAVESTART_RDNA4: EXCLUDE_WAVESTARTEND, sqtt.WAVEEND_RDNA4: EXCLUDE_WAVESTARTEND, sqtt.VALUINST: EXCLUDE_VALUINST,
                sqtt.IMMEDIATE: EXCLUDE_IMMEDIATE, sqtt.INST_RDNA4: EXCLUDE_INST}

  def valu(self, info:OpInfo, instr) -> Issue:
    op, m = self.ops, parse(instr.op.name)
    if m.words[0] == "CMPX": return super().valu(info, instr)
    if info.cls == "trans": return self.inst, (op.VALU_SCL_TRANS if m.prefix == "V_S" else op.VALUT_4)
    if m.words[0] in MATRIX_OPS: return self.inst, (op.WMMA_16 if m.type_bits()[1] == 16 else op.WMMA_8)   # by the input type
    if info.width: return self.inst, {"f64": op.VALU_DPFP, "mad64": op.VALUB_4, "b64": op.VALUB_2}[info.width]
    return super().valu(info, instr)

  def salu(self, instr) -> Enum:
    m = parse(instr.op.name)
    if {"F32", "F16"} & set(m.types): return self.ops.SALU_FLOAT_3
    if m.words[0] == "MUL": return self.ops.SALU_2
    return super().salu(instr)

  def memory(self, info:OpInfo, instr, saddr_null:bool) -> Enum:
    if instr.fmt == "FLAT": return super().memory(info, instr, saddr_null)
    if info.cls == "vmem_store": return self.ops[f"VMEM_WR_{min(6, 1 + _dwords(info) + saddr_null)}"]
    return self.ops.VMEM_RD_2 if saddr_null else self.ops.VMEM_RD_1

class CDNA(Layout):
  """gfx9 (CDNA): CDNA_WAVESTART / CDNA_WAVEEND, and a CDNA_INST with the issue type for each instruction of the traced CU (all
  SIMDs its MASK.simd_en enables). No gfx9 capture here traces instructions, so the types come from the decoder's InstOpCDNA
  names: SALU_32/64, VALU_32/64 (64-bit operands), VALU_MAI (MFMA), SMEM_RD/WR, VMEM_RD/WR, FLAT_RD/WR, LDS, JUMP (taken) /
  NEXT (not taken), OTHER_MSG (s_sendmsg). Instructions without a type (s_waitcnt, s_nop, s_barrier, other immediate SOPP) are
  not reported; s_endpgm is the CDNA_WAVEEND. The wave packets' `count` is 0 (the timeline has no lane counts)."""
  name = "cdna"
  wave_start, wave_end = sqtt.CDNA_WAVESTART, sqtt.CDNA_WAVEEND
  cus_per_wgp, token_include, tick, has_pc = 1, True, CDNA_TICK, False
  token_bits = {sqtt.CDNA_WAVESTART: INCLUDE_WAVE_START, sqtt.CDNA_WAVEEND: INCLUDE_WAVE_END, sqtt.CDNA_INST: INCLUDE_INST}

  def writer(self) -> Writer: return CDNAWriter()
  def wave_fields(self, sa:int, wgp:int, simd:int, slot:int) -> dict[str, int]: return {"sh": sa, "cu": wgp, "simd": simd, "wave": slot}
  def inst_fields(self, simd:int, slot:int) -> dict[str, int]: return {"simd": simd, "wave": slot}

  def issue(self, info:OpInfo, instr, taken:bool) -> Issue | None:
    op, m, cls, wide = sqtt.InstOpCDNA, parse(instr.op.name), info.cls, info.width != ""
    if cls in ("valu", "trans"):
      return sqtt.CDNA_INST, op.VALU_MAI if m.words[0] in ("MFMA", "SMFMAC") else op.VALU_64 if wide else op.VALU_32
    if cls == "salu": return sqtt.CDNA_INST, op.SALU_64 if wide else op.SALU_32
    if cls == "branch": return sqtt.CDNA_INST, op.JUMP if taken else op.NEXT
    if cls == "smem": return sqtt.CDNA_INST, op.SMEM_WR if info.writes else op.SMEM_RD
    if cls in ("vmem_load", "vmem_store"):
      store = cls == "vmem_store"
      return sqtt.CDNA_INST, (op.FLAT_WR if store else op.FLAT_RD) if instr.fmt == "FLAT" else (op.VMEM_WR if store else op.VMEM_RD)
    if cls == "lds": return sqtt.CDNA_INST, op.LDS
    if cls == "other" and _message(instr): return sqtt.CDNA_INST, op.OTHER_MSG
    return None

RDNA3_LAYOUT, RDNA4_LAYOUT, CDNA_LAYOUT = RDNA3(), RDNA4(), CDNA()
LAYOUTS: dict[str, Layout] = {lay.name: lay for lay in (RDNA3_LAYOUT, RDNA4_LAYOUT, CDNA_LAYOUT)}   # by emu.amd.arch.ArchSpec.family
