"""One AMD instruction executed on the emulator (emu.amd.run_program) from a JSON case: shared by the `exec.*` and `oracle.*` targets.

A case is an encoding case of fuzz.targets.encoding (`arch, cls, op, fields`: raw field values drawn by fuzz.amd_fields) plus the
wave it runs on: `lanes` (32 or 64), `exec` (mask), `scc`, and explicit register values for the registers the instruction's
source fields name (`sgprs` {n: value}, `vgprs` {reg: [value per lane]}), drawn from edge-value pools chosen by the operand's
format in operands.py. Every other register holds a background pattern (distinct per register and lane), so any write the
instruction makes is visible. Which registers an instruction may write is derived here from its fields and operands.py plus the
implicit destinations the ISA documents (SCC, VCC, EXEC), never from the emulator.

Memory instructions (SMEM, DS, FLAT/GLOBAL/SCRATCH, rdna4's VFLAT/VGLOBAL/VSCRATCH, CDNA's MUBUF) also carry `mem`: a global
buffer mapped at GLOBAL_BASE with seeded contents, the LDS size and the private (scratch) bytes per lane. Their address registers
are drawn so that most accesses land in those regions (aligned or not), some straddle or leave them; `model` computes from the
ISA's addressing rules which bytes each active lane touches, so the targets can check faults, writes and loaded values.
SOPP instructions run between marker instructions (`program`) so that where the PC went is visible in registers.

Everything that differs between the table sets is data: the emulator's CPU per table set (`CPU`: rdna3 gfx1100, rdna4 gfx1201,
cdna gfx942), that CPU's emu.amd.arch.ArchSpec (wave sizes, M0 and NULL numbers, addressable SGPRs, true16, AGPR count, FLAT
apertures), the formats each table set adds (`MORE_FORMATS`) and the memory encodings' field names and offset widths.
"""
from __future__ import annotations
import functools, random
from dataclasses import dataclass
from typing import Callable
import numpy as np
from tinygrad.renderer.amd.dsl import OPERANDS, VGPRField, SrcField
from tinygrad.runtime.autogen.amd.common import OpType
from emu.amd import run_program
from emu.amd.api import GPUFault
from emu.amd.arch import ArchSpec, get_spec
from emu.common.memory import MemoryMap
from emu.amd.wave import WaveState
from fuzz.llvm_mc import ARCH_CPU as CPU, Disassembler
from fuzz.amd_fields import inst_classes, ops_of, random_fields, encode_fields, scalar_reg
from fuzz.oracle import sx

FORMATS = ("VOP1", "VOP2", "VOP3", "VOP3SD", "VOP3P", "VOPC", "SOP1", "SOP2", "SOPC", "SOPK")  # base formats of VALU/SALU ops
SALU = ("SOP1", "SOP2", "SOPC", "SOPK")
MFMA = ("V_MFMA", "V_SMFMAC")   # CDNA matrix ops (name prefixes)
# the other formats each table set runs (rdna3's MUBUF/MTBUF/MIMG/EXP/LDSDIR, rdna4's VBUFFER/VIMAGE/VSAMPLE/VEXPORT/VDSDIR and cdna's
# MTBUF are not emulated: docs/emulator.md)
MORE_FORMATS = {"rdna3": ("SOPP", "VOPD", "VINTERP", "SMEM", "DS", "FLAT", "GLOBAL", "SCRATCH"),
                "rdna4": ("SOPP", "VOPD", "VINTERP", "SMEM", "DS", "VFLAT", "VGLOBAL", "VSCRATCH"),
                "cdna": ("SOPP", "SMEM", "DS", "FLAT", "GLOBAL", "SCRATCH", "MUBUF")}
MEMORY = {"SMEM": "smem", "DS": "ds", "FLAT": "flat", "GLOBAL": "global", "SCRATCH": "scratch", "VFLAT": "flat", "VGLOBAL": "global",
          "VSCRATCH": "scratch", "MUBUF": "mubuf"}
WAVE32_ONLY = ("VOPD",)   # RDNA dual issue exists in wave32 only
# ops that move the PC away from the one-instruction program (their effect is a jump, not registers): not executed. SOPP branches run
# between markers instead (`program`).
PC_OPS = ("S_SETPC_B64", "S_SWAPPC_B64", "S_RFE", "S_CALL_B64", "S_SUBVECTOR_LOOP_BEGIN", "S_SUBVECTOR_LOOP_END", "S_CBRANCH_JOIN",
          "S_CBRANCH_G_FORK", "S_CBRANCH_I_FORK")
N_SGPR, N_VGPR, VCC, EXEC, SCC_SRC = 128, 256, 106, 126, 253  # VCC and EXEC have the same numbers on every AMD arch
SREG_TYPES = tuple(t for t in OpType if t.name.startswith(("OPR_SREG", "OPR_SDST")))   # with their _NOVCC... variants

# edge values per operand format: zeros, infinities, quiet and signalling NaNs, denormals, extremes, ones, powers of two
F16 = (0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0x7d00, 0xfe01, 0x0001, 0x03ff, 0x8001, 0x0400, 0x7bff, 0xfbff, 0x3c00, 0xbc00, 0x3800, 0x6400)
F32 = (0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0x7fa00000, 0xffc00001, 0x00000001, 0x007fffff, 0x80000001, 0x00800000,
       0x7f7fffff, 0xff7fffff, 0x3f800000, 0xbf800000, 0x3f000000, 0x4b000000, 0x4f000000, 0xcf000000, 0x4f800000, 0x3effffff, 0x3fc00000)
F64 = (0, 1 << 63, 0x7ff0000000000000, 0xfff0000000000000, 0x7ff8000000000000, 0x7ff4000000000000, 0xfff8000000000001, 1, 0x000fffffffffffff,
       0x0010000000000000, 0x7fefffffffffffff, 0x3ff0000000000000, 0xbff0000000000000, 0x4330000000000000, 0x43e0000000000000, 0xc1e0000000000000,
       0x41dfffffffc00000, 0x3fe0000000000000, 0x380fffffe0000000, 0x47efffffe0000000)
I32 = (0, 1, 2, 0xffffffff, 0x7fffffff, 0x80000000, 0x7fff, 0x8000, 0xffff, 0x10000, 0xff, 0x80, 31, 32, 33, 63, 64, 0xfffffffe, 0x00800000,
       0x007fffff, 0xffff8000)
I64 = (0, 1, (1 << 64) - 1, (1 << 63) - 1, 1 << 63, 0xffffffff, 1 << 32, 63, 64, 31, (1 << 64) - 2, 0x80000000)

# ---- memory of a case: a global buffer at a fixed GPU address (mapped with a numpy backing, never host memory), LDS, scratch ----
GLOBAL_BASE, GLOBAL_SIZE, LDS_SIZE, SCRATCH_SIZE = 0x1000_0000_0000, 4096, 1024, 256
# field names of the FLAT/GLOBAL/SCRATCH encodings (rdna4: VFLAT/VGLOBAL/VSCRATCH): address VGPR, data VGPR, offset and its signed width
VMEM_FIELDS = {"rdna4": ("vaddr", "vsrc", "ioffset", 24)}
DEFAULT_VMEM_FIELDS = ("addr", "data", "offset", 13)
# FLAT-segment offsets that are unsigned: gfx10/gfx11 use the low 12 bits (LLVM: "MSB is ignored and forced to zero"), gfx9's field is
# 12 bits; gfx12 offsets are signed for every segment
FLAT_UNSIGNED = {"rdna3": 12, "cdna": 12}
SADDR_OFF = {"rdna3": 124, "rdna4": 124, "cdna": 0x7f}   # the SADDR value that means "no SGPR base": NULL on RDNA, 0x7f on gfx9
# the field whose bit 0 makes a FLAT/GLOBAL/MUBUF/SMEM atomic return the pre-op value: GLC, rdna4 TH[0] (TH_ATOMIC_RETURN), gfx940 SC0
RETURN_FIELD = {"rdna3": "glc", "rdna4": "th", "cdna": "sc0"}
SMEM_OFFSET = {"rdna3": ("offset", 21), "rdna4": ("ioffset", 24), "cdna": ("offset", 21)}   # immediate offset field, signed width

# opcode-name tokens: bytes per element, signedness of sub-dword loads, operations
SIZES = {"B8": 1, "U8": 1, "I8": 1, "BYTE": 1, "UBYTE": 1, "SBYTE": 1, "B16": 2, "U16": 2, "I16": 2, "SHORT": 2, "USHORT": 2, "SSHORT": 2,
         "PK": 4, "B32": 4, "U32": 4, "I32": 4, "F32": 4, "DWORD": 4, "B64": 8, "U64": 8, "I64": 8, "F64": 8, "DWORDX2": 8, "X2": 8,
         "B96": 12, "DWORDX3": 12, "B128": 16, "DWORDX4": 16, "B256": 32, "DWORDX8": 32, "B512": 64, "DWORDX16": 64}
SIGNED = {"I8", "I16", "SBYTE", "SSHORT"}
FORMAT_COMPONENTS = {"X": 1, "XY": 2, "XYZ": 3, "XYZW": 4}
LOADS, STORES = {"LOAD", "READ", "READ2", "READ2ST64"}, {"STORE", "WRITE", "WRITE2", "WRITE2ST64"}
TWO_ADDR = {"2ADDR", "READ2", "WRITE2", "READ2ST64", "WRITE2ST64", "WRXCHG2", "WRXCHG2ST64"}
STRIDE64 = {"STRIDE64", "READ2ST64", "WRITE2ST64", "WRXCHG2ST64"}
LANE_OPS = {"SWIZZLE", "PERMUTE", "BPERMUTE", "NOP"}   # DS ops that move data between lanes without touching LDS
COUNTERS = {"APPEND", "CONSUME"}
# not modelled (no memory or value checks): loads into LDS (M0 addressing), rdna4 block/transpose loads, BVH stacks, GWS/GDS, the GDS
# conditional exchange, gfx9 scalar scratch
UNMODELLED = {"LDS", "BLOCK", "TR", "BVH", "GWS", "ORDERED", "GS", "CONDXCHG32"}
NO_MEMORY = {"INV", "WB", "WBINV", "WBL2", "DCACHE", "GL0", "GL1", "ATC", "PREFETCH", "MEMTIME", "MEMREALTIME", "DISCARD"}

# ---- SOPP: the instruction runs between marker instructions s_movk_i32 s<i>, 0x100+i (SOPP_SLOTS before, SOPP_SLOTS after) ----
SOPP_SLOTS = 3
MARK_VALUE = 0x100
BRANCHES = {"S_BRANCH": lambda scc, vccz, execz: True, "S_CBRANCH_SCC0": lambda scc, vccz, execz: scc == 0,
            "S_CBRANCH_SCC1": lambda scc, vccz, execz: scc == 1, "S_CBRANCH_VCCZ": lambda scc, vccz, execz: vccz,
            "S_CBRANCH_VCCNZ": lambda scc, vccz, execz: not vccz, "S_CBRANCH_EXECZ": lambda scc, vccz, execz: execz,
            "S_CBRANCH_EXECNZ": lambda scc, vccz, execz: not execz}
WAVE_ENDS = ("S_ENDPGM", "S_ENDPGM_SAVED", "S_ENDPGM_ORDERED_PS_DONE", "S_SENDMSGHALT")

def pool(fmt_name:str, bits:int) -> tuple[int, ...]:
  """Edge values for an operand of format `fmt_name` and width `bits`."""
  if "F16" in fmt_name and "BF16" not in fmt_name: return F16 if bits == 16 else tuple(h | l << 16 for h in F16[:9] for l in F16[:9:4])
  if "F64" in fmt_name: return F64
  if "F32" in fmt_name: return F32
  if bits == 64: return I64
  if bits == 16: return tuple(v & 0xffff for v in I32) + F16
  return I32 + F32[:8]

def value(rng:random.Random, fmt_name:str, bits:int) -> int:
  """One operand value: mostly an edge value of the operand's format, sometimes another format's or random bits."""
  r, width = rng.random(), min(bits, 64) if bits > 16 else 32
  if r < 0.6: v = rng.choice(pool(fmt_name, bits))
  elif r < 0.75: v = rng.choice(rng.choice((F16, F32, F64, I32, I64)))
  else: v = rng.getrandbits(width)
  if bits == 16 and rng.random() < 0.5: v |= rng.choice(F16 + (0xffff,)) << 16  # the other half of the register: opsel may pick it
  return v & ((1 << width) - 1)

def exec_mask(rng:random.Random, lanes:int) -> int:
  """A random EXEC: all lanes, none, one, alternating, a prefix, or random bits."""
  full = (1 << lanes) - 1
  return rng.choice([full, full, 0, 1 << rng.randrange(lanes), 0x5555555555555555 & full, (1 << rng.randint(1, lanes)) - 1, rng.getrandbits(lanes)])

@functools.cache
def spec(arch:str) -> ArchSpec:
  """The emulator's ArchSpec of a table set's CPU."""
  return get_spec(CPU[arch])

def vgpr_file(arch:str) -> int:
  """Registers per lane in the emulator's VGPR file: 256 VGPRs, then the AGPRs (CDNA)."""
  return N_VGPR + spec(arch).n_agprs

def background(arch:str, lanes:int) -> tuple[np.ndarray, np.ndarray]:
  """The register file before explicit values: SGPR n = 0xb000_0000 | n << 8 | 0x5a, VGPR (lane, r) = 0xc000_0000 | r << 8 | lane
  (r counts on into the AGPRs)."""
  return ((np.uint32(0xb000005a) | (np.arange(N_SGPR, dtype=np.uint32) << 8)),
          (np.uint32(0xc0000000) | (np.arange(vgpr_file(arch), dtype=np.uint32)[None, :] << 8) | np.arange(lanes, dtype=np.uint32)[:, None]))

@dataclass(frozen=True)
class Operand:
  """A register operand of a case: field name, register file ('s' or 'v'), first register, register count, format name, bits."""
  name: str
  file: str
  reg: int
  count: int
  fmt: str
  bits: int

def base_format(cname:str) -> str:
  """The base format of an instruction class name (VOP3_SDST_LIT -> VOP3)."""
  return cname.split("_")[0]

def operand_info(info:dict, name:str) -> tuple|None:
  """operands.py's (format, bits, type) for class field `name`; the table sometimes names VGPR sources vsrcN where the field is srcN."""
  return info.get(name) or info.get(name.removeprefix("v")) or info.get("v" + name)

def case_op(case:dict):
  """The opcode enum member of a case."""
  return next(o for o in ops_of(inst_classes(case["arch"])[case["cls"]]) if o is not None and o.name == case["op"])

def vopd_halves(case:dict) -> list[tuple]:
  """(opcode, operand table keyed by this half's field names, real vdst) of the X and Y halves of a VOPD case. operands.py keys every
  VOPD opcode by the Y fields; VDSTY holds vdsty >> 1, bit 0 being the opposite of vdstx's (the ISA's bank rule)."""
  f = case["fields"]
  opy = dict(inst_classes(case["arch"])[case["cls"]]._fields)["opy"]._enum(f["opy"])
  vdsty = (f["vdsty"] << 1) | ((f["vdstx"] & 1) ^ 1)
  return [(op, {k.replace("y", h, 1): v for k, v in OPERANDS.get(op, {}).items()}, d) for h, op, d in (("x", case_op(case), f["vdstx"]),
                                                                                                     ("y", opy, vdsty))]

SDWA_SCALAR = {"vsrc0": "s0", "vsrc1": "s1"}   # gfx9 SDWA source field -> the bit that makes it an SGPR/constant code

def operands(case:dict) -> tuple[list[Operand], list[Operand]]:
  """(sources, destinations) the instruction names in its fields, with widths from operands.py; only register operands."""
  cls = inst_classes(case["arch"])[case["cls"]]
  if base_format(case["cls"]) == "VOPD":
    srcs, dsts = [], []
    for _, info, vdst in vopd_halves(case):
      for name, f in cls._fields:
        if (entry:=info.get(name)) is None or "dst" in name: continue
        code = case["fields"][name] + (0 if isinstance(f, VGPRField) else f._valid_range[0] - 256)
        if code >= 0: srcs.append(Operand(name, "v", code, 1, entry[0].name, 32))
        elif code + 256 < N_SGPR: srcs.append(Operand(name, "s", code + 256, 1, entry[0].name, 32))
      dsts.append(Operand("vdst", "v", vdst, 1, "FMT_NUM_F32", 32))
    return srcs, dsts
  info, lanes, srcs, dsts = OPERANDS.get(case_op(case), {}), case["lanes"], [], []
  for name, f in cls._fields:
    if not isinstance(f, SrcField) or (entry:=operand_info(info, name)) is None: continue
    fmt, bits, otype = entry
    raw, dst = case["fields"][name], "dst" in name
    if fmt.name == "FMT_NUM_M64": bits = lanes  # a lane mask is as wide as the wave
    count = max(1, bits // 32)
    if otype == OpType.OPR_EXEC: file, reg = "s", EXEC
    elif name in SDWA_SCALAR and case["fields"].get(SDWA_SCALAR[name]):   # gfx9 SDWA: S0/S1 make the field a scalar source code
      if raw >= N_SGPR: continue   # a constant
      file, reg = "s", raw
    elif isinstance(f, VGPRField): file, reg = ("s", raw) if otype in SREG_TYPES else ("v", raw)
    else:
      code = raw + f._valid_range[0]
      if code >= 256: file, reg = "v", code - 256
      elif code < N_SGPR: file, reg = "s", code
      else: continue  # constants, literal, SCC and other special sources
    (dsts if dst else srcs).append(Operand(name, file, reg, count, fmt.name, bits))
  return srcs, dsts

def usable_ops(arch:str, cname:str) -> list:
  """Opcodes of class `cname` the exec targets run: all but those that jump away (PC_OPS)."""
  return [o for o in ops_of(inst_classes(arch)[cname]) if o is not None and not o.name.startswith(PC_OPS)]

def exec_classes(arch:str) -> list[str]:
  """Instruction classes of VALU/SALU formats (base, literal, DPP16/DPP8 and SDST variants)."""
  return [n for n in sorted(inst_classes(arch)) if base_format(n) in FORMATS and usable_ops(arch, n)]

def more_classes(arch:str) -> list[str]:
  """Instruction classes of the table set's other formats (MORE_FORMATS: SOPP, VOPD, VINTERP and the memory formats)."""
  return [n for n in sorted(inst_classes(arch)) if base_format(n) in MORE_FORMATS[arch] and usable_ops(arch, n)]

def memory_kind(case:dict) -> str|None:
  """'smem', 'ds', 'flat', 'global', 'scratch' or 'mubuf' for a memory instruction, else None."""
  return MEMORY.get(base_format(case["cls"]))

def fill_registers(rng:random.Random, case:dict) -> dict:
  """Draw exec, scc, M0, VCC and the values of every register the case's source fields name; memory cases get their regions and
  addresses (`place`)."""
  lanes = case["lanes"]
  sg: dict[str, int] = {str(spec(case["arch"]).m0_reg): rng.choice([0, 1, 4, 0xffffffff, rng.getrandbits(8)]), str(VCC): exec_mask(rng, 32)}
  if lanes == 64: sg[str(VCC + 1)] = exec_mask(rng, 32)
  vg: dict[str, list[int]] = {}
  for o in operands(case)[0]:
    vals = [value(rng, o.fmt, o.bits) for _ in range(1 if o.file == "s" else lanes)]
    for i in range(o.count):
      words = [(v >> (32 * i)) & 0xffffffff for v in vals]
      if o.file == "s" and o.reg + i < N_SGPR and o.reg + i not in (EXEC, EXEC + 1): sg[str(o.reg + i)] = words[0]
      elif o.file == "v" and o.reg + i < N_VGPR: vg[str(o.reg + i)] = words
  case = {**case, "exec": exec_mask(rng, lanes), "scc": rng.getrandbits(1), "sgprs": sg, "vgprs": vg}
  return place(rng, case) if memory_kind(case) else case

def llvm_valid(case:dict) -> bool:
  """LLVM's MC disassembler for the emulator's CPU decodes the case's bytes as one instruction of exactly that length (for the
  MORE_FORMATS classes also without an invalid-register or alignment warning in its text)."""
  data = code(case)
  n, text = Disassembler.get(CPU[case["arch"]]).disasm(data)
  return n == len(data) and (base_format(case["cls"]) in FORMATS or not ("Invalid" in text or "Warning" in text))

EDGE_FIELDS = 0.3   # share of an edge case's operand fields that take an amd_fields.edge_value

def generate(arch:str, rng:random.Random, classes:list[str]|None=None, ops:set[str]|None=None, adjust:Callable|None=None, tries:int=50,
             edges:bool=False) -> dict:
  """A case LLVM accepts as a valid instruction (the wheel's tables allow some LLVM rejects, see the encoding targets): class and
  opcode (restricted to `classes`/`ops` when given; otherwise half the cases VALU/SALU, half the other formats), fields (passed
  through `adjust(rng, case)` when given), wave, registers and memory. `edges`: instead an encoding the wheel's tables allow
  with operands at the register files' edges or of kinds LLVM rejects (`edge: True` in the case; only the run itself can be
  judged: no host exception, determinism)."""
  for _ in range(tries):
    case = draw(arch, rng, classes, ops, EDGE_FIELDS if edges else 0.0)
    if adjust is not None: case = adjust(rng, case)
    if edges or llvm_valid(case): break
  return fill_registers(rng, {**case, "edge": True} if edges else case)

def draw(arch:str, rng:random.Random, classes:list[str]|None, ops:set[str]|None, edges:float=0.0) -> dict:
  """One encoding of an instruction (no register values yet); `edges`: see amd_fields.random_fields."""
  cname = rng.choice(classes or rng.choice([exec_classes(arch), more_classes(arch)]))
  cls, choices = inst_classes(arch)[cname], usable_ops(arch, cname)
  op = rng.choice([o for o in choices if ops is None or o.name in ops] or choices)
  fields = random_fields(rng, arch, cls, op, edges)
  info = OPERANDS.get(op, {})
  for name, f in cls._fields:  # SGPR destinations held in a VGPR-typed field (VOP3 compares): a valid SGPR, not a VGPR number
    if isinstance(f, VGPRField) and name in info and info[name][2] in SREG_TYPES and not (edges and rng.random() < edges):
      fields[name] = scalar_reg(rng, arch, max(1, info[name][1] // 32))
  fmt, waves = base_format(cname), spec(arch).wave_sizes
  if fmt == "SOPP" and op.name in BRANCHES: fields["simm16"] = rng.randint(-SOPP_SLOTS - 1, SOPP_SLOTS) & 0xffff  # targets among the markers
  if MEMORY.get(fmt) in ("flat", "global", "scratch") and (rng.random() < 0.5 or MEMORY[fmt] == "flat"):
    fields["saddr"] = 0 if (fmt, arch) == ("FLAT", "cdna") else SADDR_OFF[arch]   # gfx9 FLAT has no SADDR: LLVM wants the field 0
  case = {"arch": arch, "lanes": 32 if fmt in WAVE32_ONLY else rng.choice(waves + waves[:1]), "cls": cname, "op": op.name, "fields": fields}
  if MEMORY.get(fmt): case["mem"] = {"global": [GLOBAL_BASE, GLOBAL_SIZE], "lds": LDS_SIZE, "scratch": SCRATCH_SIZE, "seed": rng.getrandbits(32)}
  return case

def initial_state(case:dict) -> tuple[np.ndarray, np.ndarray]:
  """SGPRs (128,) and VGPRs (lanes, vgpr_file) before the instruction, EXEC included."""
  sgpr, vgpr = background(case["arch"], case["lanes"])
  for k, v in case["sgprs"].items(): sgpr[int(k)] = v
  for k, v in case["vgprs"].items(): vgpr[:, int(k)] = v
  sgpr[EXEC], sgpr[EXEC + 1] = case["exec"] & 0xffffffff, case["exec"] >> 32
  return sgpr, vgpr

def one_instruction(case:dict) -> bool:
  """The emulator decodes the case's bytes as one instruction of exactly their length (an edge encoding may decode shorter)."""
  from emu.amd.api import GPUIllegalInstruction
  from emu.amd.decode import decode
  data = code(case)
  try: return decode(data + bytes(16), spec(case["arch"])).size == len(data)
  except GPUIllegalInstruction: return True

def code(case:dict) -> bytes:
  """The instruction's bytes."""
  return encode_fields(inst_classes(case["arch"])[case["cls"]], case["fields"])

# ---- SOPP ----
def marker(arch:str, i:int) -> bytes:
  """Marker `i` (0 .. 2*SOPP_SLOTS-1): s_movk_i32 s<i>, MARK_VALUE + i."""
  cls = inst_classes(arch)["SOPK"]
  op = next(o for o in ops_of(cls) if o is not None and o.name == "S_MOVK_I32")
  return encode_fields(cls, {"op": op.value, "sdst": i, "simm16": MARK_VALUE + i})

def program(case:dict) -> list[bytes]:
  """The instructions run_program gets (it appends s_endpgm): the case's instruction, for SOPP between SOPP_SLOTS markers on each side."""
  if base_format(case["cls"]) != "SOPP": return [code(case)]
  marks = [marker(case["arch"], i) for i in range(2 * SOPP_SLOTS)]
  return marks[:SOPP_SLOTS] + [code(case)] + marks[SOPP_SLOTS:]

def sopp_outcome(case:dict) -> tuple[str, int]:
  """What the ISA says a SOPP case does: ('next', t) when execution continues at slot t after the instruction (1 = the next
  instruction, SOPP_SLOTS + 1 = the final s_endpgm: the markers t.. then run), ('hang', 0) for a taken branch back into the
  instruction or the markers before it (it loops until the watchdog), ('end', 0) for ops that end the wave, ('trap', 0) for s_trap.
  s_cbranch_cdbg* branch only under a debugger (WAVE_STATUS.COND_DBG_*), so like every other op they continue at slot 1."""
  name, f = case["op"], case["fields"]
  if name == "S_TRAP": return ("trap", 0)
  if name.startswith(WAVE_ENDS) or (name == "S_SETHALT" and f["simm16"] & 1): return ("end", 0)
  if name not in BRANCHES: return ("next", 1)
  sgpr, masks = initial_state(case)[0], range(case["lanes"] // 32)
  vccz, execz = all(int(sgpr[VCC + i]) == 0 for i in masks), case["exec"] == 0
  if not BRANCHES[name](case["scc"], vccz, execz): return ("next", 1)
  t = 1 + (f["simm16"] - 0x10000 if f["simm16"] & 0x8000 else f["simm16"])
  return ("next", t) if t >= 1 else ("hang", 0)

def marker_writes(case:dict) -> dict[int, int]:
  """SGPR -> value the markers leave when the case runs as `sopp_outcome` says (the markers before the instruction always run)."""
  kind, t = sopp_outcome(case)
  after = range(t, SOPP_SLOTS + 1) if kind == "next" else ()
  return {i: MARK_VALUE + i for i in [*range(SOPP_SLOTS), *(SOPP_SLOTS + s - 1 for s in after)]}

# ---- memory instructions ----
@dataclass(frozen=True)
class MemOp:
  """What a memory opcode does, from its name: bytes per element, elements (2 for two-address DS ops, whose second address is
  OFFSET1 elements on, times 64 for ST64/STRIDE64 forms), load/store/atomic, sign-extension of sub-dword loads, D16 half ('lo',
  'hi' or ''), a DS lane op or counter, no memory access, and whether `model` knows its addressing."""
  nbytes: int
  elems: int
  stride: int
  load: bool
  store: bool
  atomic: bool
  signed: bool
  d16: str
  lane_op: bool
  counter: bool
  no_memory: bool
  modelled: bool
  typed: bool   # MUBUF FORMAT ops: the element size depends on the descriptor's format (bytes is the 32-bit-per-component bound)

def mem_op(case:dict) -> MemOp:
  """The MemOp of a memory case's opcode."""
  kind, tokens = memory_kind(case), case["op"].split("_")
  toks = set(tokens)
  lane_op, counter = kind == "ds" and bool(toks & LANE_OPS), kind == "ds" and bool(toks & COUNTERS)
  no_memory = bool(toks & NO_MEMORY) or lane_op
  load, store = bool(toks & LOADS), bool(toks & STORES)
  atomic = "ATOMIC" in toks or (kind == "ds" and not (load or store or lane_op or counter))
  comps = next((FORMAT_COMPONENTS[t] for t in tokens if t in FORMAT_COMPONENTS), 0) if "FORMAT" in toks else 0
  nbytes = comps * (2 if "D16" in toks else 4) if comps else next((SIZES[t] for t in tokens if t in SIZES), 4 if atomic or counter else 0)
  two = kind == "ds" and bool(toks & TWO_ADDR)
  modelled = not (toks & UNMODELLED or (kind == "smem" and ("SCRATCH" in toks or (load and nbytes < 4))))
  return MemOp(nbytes, 2 if two else 1, 64 if toks & STRIDE64 else 1, load, store, atomic, bool(toks & SIGNED),
               ("hi" if "HI" in toks else "lo") if "D16" in toks else "", lane_op, counter, no_memory, modelled, bool(comps))

def vmem_fields(arch:str) -> tuple[str, str, str, int]:
  """(address field, data field, offset field, offset bits) of the arch's FLAT/GLOBAL/SCRATCH encodings."""
  return VMEM_FIELDS.get(arch, DEFAULT_VMEM_FIELDS)

def vmem_offset(case:dict) -> int:
  """The immediate offset of a FLAT/GLOBAL/SCRATCH case: signed, except FLAT-segment offsets where FLAT_UNSIGNED says so."""
  _, _, off_f, bits = vmem_fields(case["arch"])
  raw = case["fields"][off_f]
  if memory_kind(case) == "flat" and case["arch"] in FLAT_UNSIGNED: return raw & ((1 << FLAT_UNSIGNED[case["arch"]]) - 1)
  if "ADDTID" in case["op"]: return raw & 0xfff   # the ISA's GLOBAL_*_ADDTID address: SGPR_ADDR + INST_OFFSET[11:0] + laneId * 4
  return sx(raw, bits)

def smem_terms(case:dict, sgpr:np.ndarray) -> tuple[int, int]:
  """(immediate offset, SGPR offset value) of an SMEM case. gfx9: IMM=1 the OFFSET field is a signed immediate, IMM=0 its low 7 bits
  name an SGPR (unless SOFFSET_EN); SOFFSET_EN adds SGPR SOFFSET. RDNA: signed immediate plus SOFFSET (NULL: none)."""
  f, (off_f, bits) = case["fields"], SMEM_OFFSET[case["arch"]]
  if "imm" in f:
    imm = sx(f[off_f], bits) if f["imm"] else 0
    reg = f["soffset"] if f["soffset_en"] else None if f["imm"] else f[off_f] & 0x7f
    return imm, sreg(case, sgpr, reg) if reg is not None else 0
  return sx(f[off_f], bits), sreg(case, sgpr, f["soffset"])

def sreg(case:dict, sgpr:np.ndarray, reg:int, n:int=1) -> int:
  """SGPRs reg.. as one little-endian value (NULL reads 0)."""
  if reg == spec(case["arch"]).null_reg: return 0
  return sum(int(sgpr[reg + i]) << (32 * i) for i in range(n) if reg + i < N_SGPR)

def vreg(vgpr:np.ndarray, lane:int, reg:int, n:int=1) -> int:
  """VGPRs reg.. of one lane as one little-endian value."""
  return sum(int(vgpr[lane, reg + i]) << (32 * i) for i in range(n) if reg + i < vgpr.shape[1])

INLINE_F32 = {240: 0x3f000000, 241: 0xbf000000, 242: 0x3f800000, 243: 0xbf800000, 244: 0x40000000, 245: 0xc0000000, 246: 0x40800000,
              247: 0xc0800000, 248: 0x3e22f983}

def scalar_source(case:dict, sgpr:np.ndarray, code:int) -> int|None:
  """The 32-bit value of scalar source operand `code` (an SGPR or an inline constant); None for other sources."""
  if code < N_SGPR: return sreg(case, sgpr, code)
  if 128 <= code <= 208: return (code - 128 if code <= 192 else 192 - code) & 0xffffffff
  return INLINE_F32.get(code)

@dataclass(frozen=True)
class Access:
  """One access the ISA says a case makes: memory ('global', 'lds', 'scratch'), lane (-1: once per wave), byte address (LDS: in the
  workgroup's LDS; scratch: in the lane's private memory), bytes, whether it writes, element (0/1 of a two-address DS op), and
  the range rule of that memory: 'in', 'out' (LDS past its size, MUBUF past num_records: no access, loads read 0) or 'maybe'
  (straddles the limit, or two readings of the ISA disagree)."""
  mem: str
  lane: int
  addr: int
  nbytes: int
  write: bool
  part: int = 0
  rule: str = "in"

def lds_rule(addr:int, nbytes:int, size:int) -> str:
  """The LDS range rule of an access: past the end reads 0 and drops writes; straddling the end or wrapping past 2^32 (whether the
  dwords of a wide access wrap on their own is not documented) is 'maybe'."""
  return "in" if addr + nbytes <= size else "out" if size <= addr and addr + nbytes <= 1 << 32 else "maybe"

def active_lanes(case:dict) -> list[int]:
  """The lanes EXEC enables."""
  return [i for i in range(case["lanes"]) if case["exec"] >> i & 1]

def model(case:dict) -> list[Access]|None:
  """Every access of a memory case by the ISA's addressing rules (see the module docstring); None when the op is not modelled
  (MemOp.modelled) or a MUBUF descriptor swizzles."""
  m, kind, f, arch = mem_op(case), memory_kind(case), case["fields"], case["arch"]
  if not m.modelled: return None
  if m.no_memory: return []
  sgpr, vgpr = initial_state(case)
  lanes, mem = active_lanes(case), case["mem"]
  w = m.store or m.atomic or m.counter
  if kind == "smem":
    base = sreg(case, sgpr, f["sbase"] * 2, 2)
    imm, soff = smem_terms(case, sgpr)
    if "BUFFER" in case["op"]: base &= (1 << 48) - 1
    return [Access("global", -1, (base + imm + soff) & ((1 << 64) - 4), m.nbytes, w)]
  if kind == "ds":
    off16, m0 = f["offset0"] | f["offset1"] << 8, sreg(case, sgpr, spec(arch).m0_reg) & 0xffff
    if m.counter: return [Access("lds", -1, a := (m0 + off16) & 0xffffffff, 4, True, 0, lds_rule(a, 4, mem["lds"]))] if lanes else []
    out = []
    for ln in lanes:
      if "ADDTID" in case["op"]: addrs = [off16 + m0 + 4 * ln]
      elif m.elems == 2: addrs = [vreg(vgpr, ln, f["addr"]) + f[o] * m.nbytes * m.stride for o in ("offset0", "offset1")]
      else: addrs = [vreg(vgpr, ln, f["addr"]) + off16]
      out += [Access("lds", ln, a & 0xffffffff, m.nbytes, w, k, lds_rule(a & 0xffffffff, m.nbytes, mem["lds"])) for k, a in enumerate(addrs)]
    return out
  if kind == "mubuf": return mubuf_model(case, m, sgpr, vgpr, lanes)
  addr_f, _, _, _ = vmem_fields(arch)
  off, saddr = vmem_offset(case), f["saddr"]
  out = []
  for ln in lanes:
    if kind == "scratch":
      a = (vreg(vgpr, ln, f[addr_f]) if f["sve"] else 0) + (sreg(case, sgpr, saddr) if saddr != SADDR_OFF[arch] else 0) + off
      out.append(Access("scratch", ln, a & 0xffffffff, m.nbytes, w))
      continue
    if "ADDTID" in case["op"]: a = ((sreg(case, sgpr, saddr, 2) if saddr != SADDR_OFF[arch] else 0) + off + 4 * ln) & ((1 << 64) - 1)
    elif kind == "flat" or saddr == SADDR_OFF[arch]: a = (vreg(vgpr, ln, f[addr_f], 2) + off) & ((1 << 64) - 1)
    else: a = (sreg(case, sgpr, saddr, 2) + vreg(vgpr, ln, f[addr_f]) + off) & ((1 << 64) - 1)
    sp, low = spec(arch), a & 0xffffffff
    if kind == "flat" and sp.shared_aperture <= a < sp.shared_aperture + sp.aperture_size:
      out.append(Access("lds", ln, low, m.nbytes, w, 0, lds_rule(low, m.nbytes, mem["lds"])))
    elif kind == "flat" and sp.private_aperture <= a < sp.private_aperture + sp.aperture_size: out.append(Access("scratch", ln, low, m.nbytes, w))
    else: out.append(Access("global", ln, a, m.nbytes, w))
  return out

def mubuf_model(case:dict, m:MemOp, sgpr:np.ndarray, vgpr:np.ndarray, lanes:list[int]) -> list[Access]|None:
  """MUBUF (CDNA3 ISA "Buffer Addressing"): resource = 4 SGPRs at SRSRC (base 47:0, stride 61:48, swizzle bit 63, num_records, word 3
  bit 23 ADD_TID_ENABLE); index = VGPR (IDXEN) + lane id (ADD_TID), offset = VGPR (OFFEN; the next VGPR when IDXEN too) + OFFSET;
  address = base + SOFFSET + offset + index * stride. Range: stride 0 compares offset (+ bytes) with num_records, else index. Whether
  SOFFSET counts in the range check is read both ways; where the readings (or a straddle) disagree the rule is 'maybe'."""
  f = case["fields"]
  w = [sreg(case, sgpr, f["srsrc"] * 4 + i) for i in range(4)]
  base, stride, swizzle, records, add_tid = w[0] | (w[1] & 0xffff) << 32, (w[1] >> 16) & 0x3fff, w[1] >> 31, w[2], (w[3] >> 23) & 1
  soff = scalar_source(case, sgpr, f["soffset"])
  if swizzle or soff is None or f["lds"]: return None
  out = []
  for ln in lanes:
    index = (vreg(vgpr, ln, f["vaddr"]) if f["idxen"] else 0) + (ln if add_tid else 0)
    offset = (vreg(vgpr, ln, f["vaddr"] + f["idxen"]) if f["offen"] else 0) + f["offset"]
    def rule(o:int) -> str:
      if stride: return "out" if index >= records else "in" if o + m.nbytes <= stride else "maybe"
      return "in" if o + m.nbytes <= records else "out" if o >= records else "maybe"
    r = {rule(offset), rule(offset + soff)}
    out.append(Access("global", ln, (base + soff + offset + index * stride) & ((1 << 64) - 1), m.nbytes, m.store or m.atomic, 0,
                      r.pop() if len(r) == 1 else "maybe"))
  return out

def returns(case:dict) -> bool:
  """Whether a memory case writes its destination: loads, lane ops, counters and RTN DS atomics, and other atomics with the
  return bit (RETURN_FIELD); SMEM s_memtime/s_memrealtime."""
  m, f, name = mem_op(case), case["fields"], case["op"]
  if m.load or m.lane_op or m.counter or name in ("S_MEMTIME", "S_MEMREALTIME"): return True
  if not m.atomic: return False
  if memory_kind(case) == "ds": return "RTN" in name
  return bool(f.get("glc", f.get(RETURN_FIELD[case["arch"]], 0)) & 1)

def destination(case:dict) -> Operand|None:
  """The register a memory case writes (MUBUF: VDATA; SMEM: SDATA; else VDST, an AGPR when CDNA's ACC bit is set), None if none.
  Width: the loaded or returned bytes (D16 forms one register; MUBUF FORMAT loads: operands.py)."""
  if not returns(case): return None
  m, kind, f = mem_op(case), memory_kind(case), case["fields"]
  if m.lane_op or m.counter: count = 1
  elif m.typed: count = max(1, OPERANDS[case_op(case)]["vdata"][1] // 32)
  elif case["op"] in ("S_MEMTIME", "S_MEMREALTIME"): count = 2
  elif case["op"].endswith("_LOAD_BLOCK"): count = 32   # rdna4: up to 32 VGPRs from vdst on, the ones M0's set bits select
  else: count = 1 if m.d16 else max(1, -(-m.nbytes * m.elems // 4))
  if kind == "smem": return Operand("sdata", "s", f["sdata"], count, "", 32 * count)
  reg = f["vdata"] if kind == "mubuf" else f["vdst"]
  return Operand("vdst", "v", reg + (N_VGPR if f.get("acc") else 0), count, "", 32 * count)

def data_regs(case:dict) -> tuple[str, list[int]]:
  """(register file, first register per element) of a store's data: DS data0 (data1 for the second address), FLAT/GLOBAL/SCRATCH
  data (rdna4 vsrc), MUBUF vdata, SMEM sdata; AGPRs when the ACC bit is set."""
  kind, f = memory_kind(case), case["fields"]
  if kind == "smem": return "s", [f["sdata"]]
  acc = N_VGPR if f.get("acc") else 0
  if kind == "ds": return "v", [f["data0"] + acc, f["data1"] + acc]
  return "v", [f["vdata" if kind == "mubuf" else vmem_fields(case["arch"])[1]] + acc]

# ---- placing addresses ----
def targets(rng:random.Random, lanes:int, size:int, nbytes:int) -> list[int]:
  """Byte offsets into a region of `size` bytes per lane: all lanes one address, consecutive elements or random, aligned; sometimes
  unaligned, and sometimes one lane past the end, straddling it or far away."""
  align, hi = 1 << (max(1, nbytes).bit_length() - 1), max(0, size - max(1, nbytes))
  start = rng.randint(0, hi) // align * align
  pattern = rng.random()
  if pattern < 0.3: offs = [start] * lanes
  elif pattern < 0.7: offs = [(start + i * max(1, nbytes)) % (hi + 1) // align * align for i in range(lanes)]
  else: offs = [rng.randint(0, hi) // align * align for _ in range(lanes)]
  r = rng.random()
  if r < 0.1: offs = [o + rng.choice([1, 2, 3]) for o in offs]
  elif r < 0.25: offs[rng.randrange(lanes)] = rng.choice([size, size - 1, size + 64, -4, 1 << 20, 1 << 31])
  return offs

def put_s(case:dict, reg:int, val:int, n:int=1):
  """Set SGPRs reg.. (not EXEC, NULL or past the file) to a little-endian value."""
  for i in range(n):
    if reg + i < N_SGPR and reg + i not in (EXEC, EXEC + 1, spec(case["arch"]).null_reg): case["sgprs"][str(reg + i)] = (val >> (32 * i)) & 0xffffffff

def put_v(case:dict, reg:int, vals:list[int], n:int=1):
  """Set VGPRs reg.. of every lane to little-endian values (one per lane)."""
  for i in range(n):
    if reg + i < N_VGPR: case["vgprs"][str(reg + i)] = [(v >> (32 * i)) & 0xffffffff for v in vals]

def place(rng:random.Random, case:dict) -> dict:
  """Point a memory case's address registers at its regions (`targets` per lane): VGPR/SGPR addresses, M0 for DS counters and ADDTID,
  SMEM bases and buffer resources, MUBUF resources, indices and offsets. Overlapping registers are not avoided: `model` reads
  whatever the registers end up holding."""
  case = {**case, "sgprs": dict(case["sgprs"]), "vgprs": dict(case["vgprs"])}
  m, kind, f, arch, lanes, mem = mem_op(case), memory_kind(case), case["fields"], case["arch"], case["lanes"], case["mem"]
  small = lambda: rng.choice([0, 0, 4, 16, rng.randrange(64)])
  if kind == "ds":
    t, off16 = targets(rng, lanes, mem["lds"], m.nbytes), f["offset0"] | f["offset1"] << 8
    if m.counter or "ADDTID" in case["op"]: put_s(case, spec(arch).m0_reg, (t[0] - off16) & 0xffff if t[0] >= off16 else rng.getrandbits(16))
    elif not m.lane_op: put_v(case, f["addr"], [o - (f["offset0"] * m.nbytes * m.stride if m.elems == 2 else off16) for o in t])
  elif kind in ("flat", "global", "scratch"):
    addr_f, off = vmem_fields(arch)[0], vmem_offset(case)
    if kind == "scratch":
      t = targets(rng, lanes, mem["scratch"], m.nbytes)
      s = small() if f["sve"] else t[0] - off
      if f["saddr"] != SADDR_OFF[arch]: put_s(case, f["saddr"], s)
      else: s = 0
      if f["sve"]: put_v(case, f[addr_f], [o - s - off for o in t])
    else:
      region = rng.choice(["global", "global", "lds", "scratch"]) if kind == "flat" else "global"
      base = {"global": mem["global"][0], "lds": spec(arch).shared_aperture, "scratch": spec(arch).private_aperture}[region]
      t = targets(rng, lanes, {"global": mem["global"][1], "lds": mem["lds"], "scratch": mem["scratch"]}[region], m.nbytes)
      if "ADDTID" in case["op"]:   # one SGPR base for the wave: lane 0 at its target, the others 4 bytes apart
        if f["saddr"] != SADDR_OFF[arch]: put_s(case, f["saddr"], base + t[0] - off, 2)
      elif kind == "flat" or f["saddr"] == SADDR_OFF[arch]: put_v(case, f[addr_f], [base + o - off for o in t], 2)
      else:
        d = small()
        put_s(case, f["saddr"], base - off - d, 2)
        put_v(case, f[addr_f], [o + d for o in t])
  elif kind == "smem":
    t = targets(rng, 1, mem["global"][1], max(4, m.nbytes))[0] & ~3
    if "imm" in f and not f["soffset_en"] and not f["imm"]: put_s(case, f["offset"] & 0x7f, small())
    if f["soffset"] != spec(arch).null_reg: put_s(case, f["soffset"], small())
    imm, soff = smem_terms(case, initial_state(case)[0])
    base = mem["global"][0] + t - imm - soff
    if "BUFFER" in case["op"]: put_s(case, f["sbase"] * 2, base & ((1 << 48) - 1) | 0xffffffff << 64, 4)   # stride 0, num_records max
    else: put_s(case, f["sbase"] * 2, base, 2)
  elif kind == "mubuf":
    stride = rng.choice([0, 0, 0, 0, 4, 8, 16, 12, 2048])
    records = rng.choice([mem["global"][1], mem["global"][1] // 2, 64, 0, 0xffffffff]) // (stride or 1)
    add_tid, swizzle = int(rng.random() < 0.1), int(rng.random() < 0.05)
    put_s(case, f["srsrc"] * 4, mem["global"][0] | stride << 48 | swizzle << 63 | records << 64 | add_tid << 119, 4)
    if f["soffset"] < N_SGPR: put_s(case, f["soffset"], rng.choice([0, 0, 0, 4, rng.randrange(64)]))
    t = targets(rng, lanes, mem["global"][1], m.nbytes)
    idx = [rng.randrange(max(1, min(records, mem["global"][1] // max(1, stride)))) for _ in range(lanes)]
    if f["idxen"]: put_v(case, f["vaddr"], idx)
    if f["offen"]: put_v(case, f["vaddr"] + f["idxen"], [o - f["offset"] - (i * stride if f["idxen"] else 0) for o, i in zip(t, idx)])
  return case

# ---- running ----
def global_bytes(case:dict) -> np.ndarray:
  """The global buffer's contents before the instruction: seeded random bytes with a quarter of the dwords set to float/int edge values."""
  size, g = case["mem"]["global"][1], np.random.default_rng(case["mem"]["seed"])
  data = g.integers(0, 256, size, dtype=np.uint8)
  words, edge = data.view(np.uint32), np.array(F32 + I32, dtype=np.uint32)
  pick = np.nonzero(g.random(size // 4) < 0.25)[0]
  words[pick] = edge[g.integers(0, len(edge), len(pick))]
  return data

@dataclass
class Outcome:
  """What one execution left: the final WaveState and the final memories (global buffer, LDS, the wave's scratch (lanes, bytes)),
  or the defined fault it raised (then only the global buffer, which the case owns, is left to look at)."""
  state: WaveState|None
  fault: GPUFault|None
  glob: np.ndarray|None = None
  lds: np.ndarray|None = None
  scratch: np.ndarray|None = None

def watchdog(case:dict) -> int:
  """The instruction budget: a SOPP branch back into the program loops until it runs out."""
  return 200 if base_format(case["cls"]) == "SOPP" else 1000

def run(case:dict) -> Outcome:
  """Execute the case on one wave (its memory mapped when it has one). Anything but a GPUFault propagates."""
  sgpr, vgpr = initial_state(case)
  sgprs = {n: int(sgpr[n]) for n in range(N_SGPR) if n not in (EXEC, EXEC + 1)}
  mm, mem, glob = MemoryMap(), case.get("mem"), None
  if mem is not None:
    glob = global_bytes(case)
    mm.map(mem["global"][0], mem["global"][1], name="exec case buffer", backing=glob)
  try:
    st = run_program(program(case), arch=CPU[case["arch"]], lanes=case["lanes"], sgprs=sgprs, vgprs={r: vgpr[:, r] for r in range(vgpr.shape[1])},
                     exec_mask=case["exec"], scc=case["scc"], memory=mm, lds_bytes=mem["lds"] if mem else 0,
                     scratch_bytes=mem["scratch"] if mem else 0, watchdog=watchdog(case))
  except GPUFault as e: return Outcome(None, e, glob)
  return Outcome(st, None, glob, st.lds.copy() if mem else None, st.scratch[0].copy() if mem else None)
