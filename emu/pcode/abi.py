"""The contract between compiled pcode ops and the executor that calls them (emu/amd).

Getting an op
-------------
`emu.pcode.compile_op(arch, op) -> CompiledOp` compiles one opcode (an enum member from
tinygrad.runtime.autogen.amd.<arch>.enum, e.g. VOP2Op.V_ADD_F32_E32) of arch 'rdna3' | 'rdna4' | 'cdna'
(aliases: gfx1100/gfx1151 -> rdna3, gfx1200/gfx1201 -> rdna4, gfx942/gfx950 -> cdna). Where gfx942 and gfx950 differ (fp8/bf8
in MFMA and the VALU conversions: FNUZ on gfx942, OCP on gfx950) pass the gfx name: compile_op('gfx942', op); plain 'cdna' means
gfx950. Results are memoised per process
and the generated source is cached on disk. It raises `Unsupported` (with `.category` and `.reason`) when the op
cannot be compiled. Ops whose behaviour belongs to the executor (branches on the wave's PC are *not* among them:
S_BRANCH etc. compile; waits, barriers, S_ENDPGM, S_NOP, S_SLEEP, messages are) come back with
`kind == 'executor'` and `fn is None`. `emu.pcode.ops_for(arch)` lists every opcode that has pcode or an override.

Calling an op
-------------
`op.fn(st)` takes one `OpState` (any object with the attributes below works) and returns nothing: it reads the
attributes named in `op.reads` and sets the attributes named in `op.writes`. The executor fills only what the op
reads and takes back only what it writes. One `OpState` may be reused between calls.

There are three kinds of op:

'vector'  per-lane ops (VOP1/2/3/3P/C, VINTERP, DS, FLAT/GLOBAL/SCRATCH, MUBUF/MTBUF). Called once per batch of
          active lanes (any number of lanes, from any number of waves that run in lockstep).
          - `n`: batch size; `laneId`: uint64 (n,) lane index of each row within its wave.
          - operands <= 64 bits (S0 S1 S2 D0 DATA DATA2 ADDR RETURN_DATA VDATA ...): numpy uint64 (n,) raw bits,
            zero-extended. Operands wider than 64 bits (`op.widths[name] > 64`, e.g. VDATA of *_B96/B128 loads,
            DATA of B128 stores): numpy uint32 (n, width/32), dword 0 first. Writes follow the same layout.
            A 32-bit source, or a 32-bit D0 the op reads (V_FMAC's accumulator), that the pcode reads only as a float
            (`op.views[name] == {'f'}`) may instead be uint32 (n,), possibly read-only (a view of the register file): the results
            are the same bit for bit, and the executor skips a widening.
          - D0 (and any other written operand listed in `op.reads`) must be preloaded with the destination's old
            value: partial writes (`D0[31:16] = ...`, `D0.f16 = ...` keeps bits 63:16) merge into it.
            The op writes D0 zero-extended to `op.widths['D0']` bits; the executor stores that many bits.
          - lane-mask registers (`op.lane_masks`, e.g. VCC, EXEC, D0 of VOPC, D1 carry-out of V_MAD_U64_U32):
            numpy uint64 (n,) of 0/1, the bit of this lane. The executor extracts them from the SGPR mask before
            the call and packs them back into bit `laneId` after it (for EXEC writes by V_CMPX as well).
          - instruction fields are Python ints: OFFSET OFFSET0 OFFSET1 SRC0 VDST OPSEL SIMM16 SIMM32 ...
          - wave-wide values that are the same for all lanes (M0, SCC) may be Python ints.
          - ADDR: for DS ops the lane's address VGPR (no instruction offset: the op adds OFFSET/OFFSET0/OFFSET1);
            for every other memory op the final effective byte address the executor computed (vaddr + saddr +
            offset, buffer resource, scratch swizzle). Calc*Addr(...) helpers in the pcode evaluate to ADDR whatever their
            arity and argument names (rdna4: vgpr_a/v_addr/s_saddr/sgpr_o/flat_scratch/sgpr_base/offset; cdna: VADDR/SADDR/
            SRSRC/SBASE/SOFFSET), so rdna3, rdna4 and cdna memory ops take the same inputs; a CalcDsAddr with an offset
            argument, and every DS entry that never names the offset (rdna3 atomics, byte/short loads and stores), use
            ADDR + OFFSET (OFFSET = offset0 | offset1 << 8), so DS ops read OFFSET whenever the hardware adds it.
          - ops that read VGPR[laneId][SRC0] or write VGPR[laneId][VDST] bits (rdna4 V_CVT_F32_FP8 with OPSEL byte select,
            V_CVT_PK_FP8_F32 / V_CVT_SR_FP8_F32 and cdna V_CVT_SCALEF32_* that keep the other destination bytes) list
            'VGPR' in reads/writes and work like V_INTERP_* (one wave per call, VGPR[lanes, reg]).
          - MEM: a `VectorMemory` (see below): LDS for DS ops, global memory otherwise.
          - VGPR (only when 'VGPR' in op.reads/op.writes, e.g. V_INTERP_*): 2-D uint32 array indexed VGPR[lanes, reg]
            with lanes a uint64 array of in-wave lane indices of this batch's wave (the executor calls such ops one
            wave at a time).
'scalar'  SOP1/2/K/C/P and SMEM. Called once per wave with Python ints: S0 S1 D0 SDATA (raw bits; SDATA may be up
          to 512 bits as one int), SCC (0/1), VCC/EXEC (full mask ints, low 32 bits in wave32), M0, PC (byte address of
          this instruction; if 'PC' in op.writes the op set the next PC, else the executor advances normally),
          SIMM16/SIMM32 raw bits, ADDR (int), MEM a `ScalarMemory`, SGPR (indexable SGPR[i] -> 32-bit int, settable)
          for S_MOVREL*, HW_REGISTERS (indexable) for S_GETREG/S_SETREG.
'wave'    VALU ops that work on the whole wave (V_READLANE, V_WRITELANE, V_READFIRSTLANE, V_PERMLANE*): called once
          per wave with Python ints like 'scalar' plus VGPR (2-D uint32 array, VGPR[lane, reg]), SRC0/VDST register
          numbers, EXEC as an int mask. SRC0/SRC1/SRC2/VDST of a 'wave' op are always 0-based register numbers (the
          instruction's src0/src1/src2/vdst register offset - 256), never operand values.
          WMMA (V_WMMA_*, rdna3 wave32, semantics hand-written: emu.pcode.handwritten) is a 'wave' op too: it reads exactly
          VGPR, SRC0 SRC1 SRC2 VDST (0-based VGPR numbers of A, B, C and D), OPSEL, NEG (the VOP3P neg bits: signedness of
          A/B for IU8/IU4) and CLAMP (all ints, all required), and writes the 8 D registers of all 32 lanes in VGPR. Every
          RDNA WMMA/SWMMAC is `waves_at_once` (CompiledOp): VGPR may be a (waves, lanes, registers) array, each wave's D computed
          from its own registers (the executor passes a batch's consecutive waves as one view).
          rdna4 V_WMMA_* (F16/BF16/IU8/IU4/FP8/BF8 inputs, 16x16x16 and IU4 16x16x32) take the same inputs in the RDNA4
          wave32 layout (no lane duplication; f16/bf16 D packed in 4 registers, f32/i32 D in 8: see emu.pcode.handwritten),
          and C_CONST as MFMA's below (LLVM 19 writes `..., 0` for a zero accumulator on gfx12; a 16-bit C element takes the
          constant's low half).
          rdna4 V_SWMMAC_* (sparse A) take the same inputs with other meanings: SRC2 is the VGPR holding the sparsity index,
          OPSEL[1:0] the index key (which index set of that VGPR), and C is read from the D registers (VDST, in place).
MFMA (cdna V_MFMA_* of every shape: single- and multi-block (_2B/_4B/_16B), f64/f32/xf32/f16/bf16/i8/fp8/bf8 and gfx950's
          F8F6F4; V_SMFMAC_*; hand-written, wave64 layout in emu.pcode.handwritten) is a 'wave' op reading VGPR, AGPR (the
          wave's accumulation registers, 2-D uint32 AGPR[lane, reg] like VGPR; on gfx90a+ the unified file from ACCUM_OFFSET),
          SRC0 SRC1 SRC2 VDST (register numbers), ACC (bit 0: A in AGPRs, bit 1: B in AGPRs), ACC_CD (C and D in AGPRs), CBSZ
          ABID BLGP (must be 0: InvalidField otherwise, except: *_F8F6F4 take the A/B formats from CBSZ/BLGP (0-4; ABID 0); V_SMFMAC_*
          take SRC2 as the VGPR holding the sparsity index, ABID as the index set (CBSZ/BLGP 0) and C from VDST); it writes VGPR
          or AGPR (listed in writes as both; the arrays are updated in place). Every V_MFMA_* also reads C_CONST: None (or
          absent) when C is the registers at SRC2, else the raw bits of the inline constant src2 encodes (the ISA allows one for
          C: LLVM 22 writes `..., 0` for a zero accumulator), one C element's worth (32 bits; 64 for F64), which every element of C
          takes. gfx950 V_MFMA_SCALE_F32_*_F8F6F4 (VOP3PX2) also
          read SCALE_SRC0 and SCALE_SRC1 (the scale operands' 32-bit values per lane: uint32/uint64 (64,) arrays, an SGPR or
          constant broadcast by the executor) and OPSEL / OPSEL_HI (ints: the scale byte select, A: OPSEL[0] | OPSEL_HI[0] << 1,
          B: OPSEL[1] | OPSEL_HI[1] << 1). Every MFMA/SMFMAC but the SCALE ones is `waves_at_once` like WMMA: VGPR and AGPR
          may be (waves, lanes, registers) arrays.
          V_ACCVGPR_READ / V_ACCVGPR_WRITE / V_ACCVGPR_MOV_B32 (cdna) are 'wave' ops reading VGPR, AGPR, SRC0, VDST, EXEC and
          S0 (None when src0 is a VGPR/AGPR, else the scalar/constant value as an int) and updating EXEC lanes in place.
V_BITOP3_B16/B32 (cdna) read the instruction fields OMOD, ABS and NEG as ints (their bits form the truth table).
Scalar S_MOVRELD*/S_MOVRELSD* also read SDST (the destination SGPR number); vector V_MOVREL*/V_SWAPREL* read SRC0/VDST
register numbers and VGPR like V_INTERP_* (and may write VGPR[lanes, reg], one wave per call).

Every kind may read `WAVE32`/`WAVE64` (bools) and the wave's MODE register fields: `MODE_IEEE` (bool, WAVE_MODE.IEEE),
`ROUND_MODE` (int, the FP_ROUND mode of f32, 0 = round to nearest even), and the ints `MODE_ROUND32` / `MODE_ROUND16`
(MODE.FP_ROUND[1:0] for f32, [3:2] for f16 and f64: 0 nearest even, 1 toward +inf, 2 toward -inf, 3 toward zero) and
`MODE_DENORM32` / `MODE_DENORM16` (MODE.FP_DENORM[1:0] for f32, [3:2] for f16 and f64: bit 0 set keeps denormal inputs, bit 1
set keeps denormal results; 0 flushes both, 3 neither); an OpState without the MODE_* fields means their defaults. A float op
never raises or warns. With every mode field at its IEEE
default (`MODE_DEFAULTS`: nearest even, denormals kept) float results follow numpy's IEEE arithmetic. Otherwise an op whose
generated code does float work runs its mode variant: float operands of a flushed format are flushed to zero of the same sign
as they are read, float results as they are written, and +, -, *, /, fma, sqrt and the rounding conversions round in the mode
of their result's format (transcendentals, min/max and the integer conversions do not round by mode). The mode does not
apply to memory ops (atomics), V_CMP_CLASS_* (a bit test), bf16/fp8 values, hand-written ops (WMMA, MFMA) and overrides,
except the division helpers (V_DIV_SCALE/FMAS/FIXUP), which read FP_DENORM themselves.
Ops whose pcode names ROUND_MODE (V_CVT_PK_RTZ_F16_F32 sets it to round-toward-zero, cdna V_CVT_PK_F16_F32 / *_SR_* to
nearest-even) read it and round their conversions in the mode in scope; they never write it back (the pcode restores it).

Memory
------
`op.mem` is '' (no memory), 'r', 'w' or 'rw'. `op.mem_rmw` is True for read-modify-write ops (atomics): their
vectorised body is only correct if no two lanes of one call share an address; the executor must split a batch with
aliasing addresses (one lane per call is always correct, in lane order).
"""
from __future__ import annotations
from dataclasses import dataclass, field
from typing import Callable, Protocol
import numpy as np

ARCH_ALIASES = {"rdna3": "rdna3", "gfx1100": "rdna3", "gfx1151": "rdna3", "rdna4": "rdna4", "gfx1200": "rdna4", "gfx1201": "rdna4",
                "cdna": "cdna", "gfx942": "cdna", "gfx950": "cdna"}
KINDS = ("vector", "scalar", "wave", "executor")
# fp8/bf8 encodings per gfx target: gfx942 reads them as FNUZ (no infinities, one NaN, bias one higher), later targets as OCP
FP8_FNUZ = {"gfx942": True, "gfx950": False}
MODE_DEFAULTS = {"MODE_ROUND32": 0, "MODE_ROUND16": 0, "MODE_DENORM32": 3, "MODE_DENORM16": 3}   # IEEE: nearest even, denormals kept

class Unsupported(Exception):
  """An opcode the pcode compiler cannot turn into an op. `category` groups reasons in reports ('no pcode', 'parse error',
  'missing helper', 'codegen', ...); `reason` says what exactly."""
  def __init__(self, category:str, reason:str, op:str=""):
    self.category, self.reason, self.op = category, reason, op
    super().__init__(f"{op}: {category}: {reason}" if op else f"{category}: {reason}")

class InvalidField(ValueError):
  """A hand-written op (MFMA, SWMMAC) met an instruction field value it does not define or model (MFMA CBSZ/ABID/BLGP broadcast,
  an out-of-range index set). The executor reports it as an illegal instruction naming the op."""

class VectorMemory(Protocol):
  """Memory as a vector op sees it. Addresses are uint64 (n,) arrays of byte addresses, one per lane."""
  def read(self, addrs:np.ndarray, nbytes:int) -> np.ndarray:
    """Little-endian load of `nbytes` (1, 2, 4 or 8) per lane; returns uint64 (n,) zero-extended values."""
  def write(self, addrs:np.ndarray, values:np.ndarray, nbytes:int) -> None:
    """Store the low `nbytes` (1, 2, 4 or 8) of each uint64 value little-endian at its lane's address, lanes in order."""

class ScalarMemory(Protocol):
  """Memory as a scalar (SMEM) op sees it: one address, Python ints."""
  def read(self, addr:int, nbytes:int) -> int:
    """Little-endian load of `nbytes` (1, 2, 4 or 8) at addr."""
  def write(self, addr:int, value:int, nbytes:int) -> None:
    """Store the low `nbytes` of value little-endian at addr."""

class OpState:
  """The attribute bag an op reads and writes (see the module docstring for each attribute). Any object will do."""
  def __init__(self, **kw): self.__dict__.update(kw)
  def __repr__(self): return f"OpState({', '.join(f'{k}={v!r}' for k, v in self.__dict__.items())})"

@dataclass
class CompiledOp:
  """One opcode's executable semantics.

  fn(st) runs the op on an `OpState` (None for kind 'executor'). `reads`/`writes` name the OpState attributes it uses;
  `widths` gives the bit width of each operand it touches (S0/S1/S2/D0/D1/DATA/DATA2/ADDR/VDATA/SDATA/RETURN_DATA ...);
  `lane_masks` names the lane-mask registers a vector op accesses as one bit per lane. `source` is the generated Python,
  `pcode` the vendor text it came from, `override` the reason when the semantics come from the override table; `views` the type
  kinds ('u' 'i' 'b' 'f' 'bf') the pcode reads or writes each of S0/S1/S2/D0 as (empty for ops it does not compile).
  `waves_at_once`: a 'wave' op whose fn also takes VGPR as a (waves, lanes, registers) array and runs every wave of it in one call
  (it reads no per-wave scalar: no EXEC, M0 or SGPR source), each wave's result as a call of its own would give."""
  arch: str
  name: str
  kind: str
  fn: Callable[[OpState], None] | None
  reads: frozenset[str] = frozenset()
  writes: frozenset[str] = frozenset()
  widths: dict[str, int] = field(default_factory=dict)
  lane_masks: frozenset[str] = frozenset()
  mem: str = ""
  mem_rmw: bool = False
  source: str = ""
  pcode: str = ""
  override: str = ""
  views: dict[str, frozenset[str]] = field(default_factory=dict)
  waves_at_once: bool = False
