"""One AMD instruction executed on the emulator (emu.amd.run_program) from a JSON case: shared by the `exec.*` and `oracle.*` targets.

A case is an encoding case of fuzz.targets.encoding (`arch, cls, op, fields`: raw field values drawn by fuzz.amd_fields) plus the
wave it runs on: `lanes` (32 or 64), `exec` (mask), `scc`, and explicit register values for the registers the instruction's
source fields name (`sgprs` {n: value}, `vgprs` {reg: [value per lane]}), drawn from edge-value pools chosen by the operand's
format in operands.py. Every other register holds a background pattern (distinct per register and lane), so any write the
instruction makes is visible. Which registers an instruction may write is derived here from its fields and operands.py plus the
implicit destinations the ISA documents (SCC, VCC, EXEC), never from the emulator.

Everything that differs between the table sets is data: the emulator's CPU per table set (`CPU`: rdna3 gfx1100, rdna4 gfx1201,
cdna gfx942) and that CPU's emu.amd.arch.ArchSpec (wave sizes, M0 and NULL numbers, addressable SGPRs, true16, AGPR count).
"""
from __future__ import annotations
import functools, random
from dataclasses import dataclass
from typing import Callable
import numpy as np
from tinygrad.renderer.amd.dsl import OPERANDS, VGPRField, SrcField
from tinygrad.runtime.autogen.amd.common import OpType
from emu.amd import run_program
from emu.amd.arch import ArchSpec, get_spec
from emu.amd.wave import WaveState
from fuzz.llvm_mc import ARCH_CPU as CPU, Disassembler
from fuzz.amd_fields import inst_classes, ops_of, random_fields, encode_fields, scalar_reg

FORMATS = ("VOP1", "VOP2", "VOP3", "VOP3SD", "VOP3P", "VOPC", "SOP1", "SOP2", "SOPC", "SOPK")  # base formats of VALU/SALU ops
SALU = ("SOP1", "SOP2", "SOPC", "SOPK")
# ops that move the PC away from the one-instruction program (their effect is a jump, not registers): not executed
PC_OPS = ("S_SETPC_B64", "S_SWAPPC_B64", "S_RFE", "S_CALL_B64", "S_SUBVECTOR_LOOP_BEGIN", "S_SUBVECTOR_LOOP_END", "S_CBRANCH_")
N_SGPR, N_VGPR, VCC, EXEC, SCC_SRC = 128, 256, 106, 126, 253  # VCC and EXEC have the same numbers on every AMD arch
SREG_TYPES = (OpType.OPR_SREG, OpType.OPR_SDST)

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

def operands(case:dict) -> tuple[list[Operand], list[Operand]]:
  """(sources, destinations) the instruction names in its fields, with widths from operands.py; only register operands."""
  cls = inst_classes(case["arch"])[case["cls"]]
  op = next(o for o in ops_of(cls) if o.name == case["op"])
  info, lanes, srcs, dsts = OPERANDS.get(op, {}), case["lanes"], [], []
  for name, f in cls._fields:
    if not isinstance(f, SrcField) or (entry:=operand_info(info, name)) is None: continue
    fmt, bits, otype = entry
    raw, dst = case["fields"][name], "dst" in name
    if fmt.name == "FMT_NUM_M64": bits = lanes  # a lane mask is as wide as the wave
    count = max(1, bits // 32)
    if otype == OpType.OPR_EXEC: file, reg = "s", EXEC
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

def fill_registers(rng:random.Random, case:dict) -> dict:
  """Draw exec, scc, M0, VCC and the values of every register the case's source fields name."""
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
  return {**case, "exec": exec_mask(rng, lanes), "scc": rng.getrandbits(1), "sgprs": sg, "vgprs": vg}

def llvm_valid(case:dict) -> bool:
  """LLVM's MC disassembler for the emulator's CPU decodes the case's bytes as one instruction of exactly that length."""
  data = code(case)
  return Disassembler.get(CPU[case["arch"]]).disasm(data)[0] == len(data)

def generate(arch:str, rng:random.Random, classes:list[str]|None=None, ops:set[str]|None=None, adjust:Callable|None=None, tries:int=50) -> dict:
  """A case LLVM accepts as a valid instruction (the wheel's tables allow some LLVM rejects, see the encoding targets): class and
  opcode of the VALU/SALU formats (restricted to `classes`/`ops` when given), fields (passed through `adjust(rng, case)` when
  given), wave and registers."""
  for _ in range(tries):
    case = draw(arch, rng, classes, ops)
    if adjust is not None: case = adjust(rng, case)
    if llvm_valid(case): break
  return fill_registers(rng, case)

def draw(arch:str, rng:random.Random, classes:list[str]|None, ops:set[str]|None) -> dict:
  """One encoding of a VALU/SALU instruction (no register values yet)."""
  cname = rng.choice(classes or exec_classes(arch))
  cls, choices = inst_classes(arch)[cname], usable_ops(arch, cname)
  op = rng.choice([o for o in choices if ops is None or o.name in ops] or choices)
  fields = random_fields(rng, arch, cls, op)
  info = OPERANDS.get(op, {})
  for name, f in cls._fields:  # SGPR destinations held in a VGPR-typed field (VOP3 compares): a valid SGPR, not a VGPR number
    if isinstance(f, VGPRField) and name in info and info[name][2] in SREG_TYPES: fields[name] = scalar_reg(rng, arch, max(1, info[name][1] // 32))
  waves = spec(arch).wave_sizes
  return {"arch": arch, "lanes": rng.choice(waves + waves[:1]), "cls": cname, "op": op.name, "fields": fields}

def initial_state(case:dict) -> tuple[np.ndarray, np.ndarray]:
  """SGPRs (128,) and VGPRs (lanes, vgpr_file) before the instruction, EXEC included."""
  sgpr, vgpr = background(case["arch"], case["lanes"])
  for k, v in case["sgprs"].items(): sgpr[int(k)] = v
  for k, v in case["vgprs"].items(): vgpr[:, int(k)] = v
  sgpr[EXEC], sgpr[EXEC + 1] = case["exec"] & 0xffffffff, case["exec"] >> 32
  return sgpr, vgpr

def code(case:dict) -> bytes:
  """The instruction's bytes."""
  return encode_fields(inst_classes(case["arch"])[case["cls"]], case["fields"])

def run(case:dict, watchdog:int=1000) -> WaveState:
  """Execute the case's instruction on one wave; raises the emulator's GPUFault subclasses for defined faults."""
  sgpr, vgpr = initial_state(case)
  sgprs = {n: int(sgpr[n]) for n in range(N_SGPR) if n not in (EXEC, EXEC + 1)}
  return run_program([code(case)], arch=CPU[case["arch"]], lanes=case["lanes"], sgprs=sgprs,
                     vgprs={r: vgpr[:, r] for r in range(vgpr.shape[1])}, exec_mask=case["exec"], scc=case["scc"], watchdog=watchdog)
