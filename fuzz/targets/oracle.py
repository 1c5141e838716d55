"""Targets `oracle.{rdna3,rdna4,cdna}`: differential test of emu.amd against fuzz/oracle.py, a reference model written from the ISA's meaning.

A case is an `exec.*` case (fuzz.amd_exec) restricted to the opcodes `fuzz.oracle.ORACLE` covers, in plain or literal encodings
(VOP1/VOP2/VOP3/VOP3_SDST/VOPC/SOP1/SOP2/SOPC, no DPP), with modifiers (neg/abs/omod/clamp/opsel) at zero and sources the
oracle can read on its own: SGPRs, VCC, M0, EXEC, NULL, VGPRs, integer inline constants, float inline constants on float
operands, 32-bit literals on 16/32-bit operands and on 64-bit float operands (the high half). 16-bit operands of e32 encodings
use v0-v127 (v128+ would name high halves). The source values are read from the case's initial registers by this module,
not by the emulator. Results compared on the active lanes: the destination VGPR (its low 16 bits for 16-bit results; any NaN
matches any NaN), the compare bit (VCC, the e64 SGPR destination, or EXEC for v_cmpx, which also clears inactive lanes), the
SALU destination and SCC. Kind: `oracle-mismatch` (key: op).

Per table set, as data: the oracle's (RDNA3) name of renamed opcodes (`ALIASES`: RDNA4's S_ADD_CO_U32 is S_ADD_U32, CDNA's
V_ADD_U32 is V_ADD_NC_U32, S_ANDN2 is S_AND_NOT1, V_CMP_TRU is V_CMP_T, ...), the readable SGPRs and the NULL number (from the
emulator's ArchSpec: CDNA has M0 at 124 and no NULL), and whether e32 16-bit operands v128+ name high halves (RDNA true16 only).
RDNA4's V_MIN_NUM/V_MAX_NUM have their own oracle entries (IEEE 754-2019 minimumNumber).
"""
from __future__ import annotations
import functools, random
from tinygrad.renderer.amd.dsl import OPERANDS, VGPRField, SrcField
from fuzz import amd_exec, oracle
from fuzz.amd_exec import EXEC, VCC, N_SGPR, base_format, operands, operand_info, spec
from fuzz.amd_fields import inst_classes, ops_of, default_raw, MODIFIERS, INLINE_CONSTS
from fuzz.finding import Finding
from fuzz.registry import Target, register
from fuzz.targets import exec as exec_target

ARCHS = ("rdna3", "rdna4", "cdna")
CLASSES = ("VOP1", "VOP1_LIT", "VOP2", "VOP2_LIT", "VOP3", "VOP3_LIT", "VOP3_SDST", "VOP3_SDST_LIT", "VOPC", "VOPC_LIT",
           "SOP1", "SOP1_LIT", "SOP2", "SOP2_LIT", "SOPC", "SOPC_LIT")
FLOAT_CONSTS = {240: 0.5, 241: -0.5, 242: 1.0, 243: -1.0, 244: 2.0, 245: -2.0, 246: 4.0, 247: -4.0}
INV_2PI = {16: 0x3118, 32: 0x3e22f983, 64: 0x3fc45f306dc9c882}  # 1/(2*pi) as the ISA's tables give it per width
ALIASES = {
  "rdna3": {},
  "rdna4": {"S_ADD_CO_U32": "S_ADD_U32", "S_SUB_CO_U32": "S_SUB_U32", "S_ADD_CO_CI_U32": "S_ADDC_U32", "S_SUB_CO_CI_U32": "S_SUBB_U32",
            "S_ADD_CO_I32": "S_ADD_I32", "S_SUB_CO_I32": "S_SUB_I32"},
  "cdna": {"V_ADD_U32": "V_ADD_NC_U32", "V_SUB_U32": "V_SUB_NC_U32", "V_SUBREV_U32": "V_SUBREV_NC_U32", "V_ADD_U16": "V_ADD_NC_U16",
           "V_SUB_U16": "V_SUB_NC_U16", "S_ANDN2_B32": "S_AND_NOT1_B32", "S_ANDN2_B64": "S_AND_NOT1_B64", "S_ORN2_B32": "S_OR_NOT1_B32",
           "S_ORN2_B64": "S_OR_NOT1_B64", **{f"V_CMP_TRU_F{w}": f"V_CMP_T_F{w}" for w in (16, 32, 64)}},
}

def readable_sgprs(arch:str) -> tuple[int, ...]:
  """Scalar source numbers the oracle reads from the initial registers: the SGPRs, VCC, M0, NULL and EXEC."""
  sp = spec(arch)
  return (*range(sp.n_sgprs), VCC, VCC + 1, sp.m0_reg, sp.null_reg, EXEC, EXEC + 1)

def base_name(arch:str, op:str) -> str:
  """Oracle key of an opcode name: without _E32/_E64, v_cmpx as v_cmp, renamed opcodes under their RDNA3 name."""
  for s in ("_E32", "_E64"): op = op.removesuffix(s)
  op = op.replace("V_CMPX_", "V_CMP_")
  return ALIASES[arch].get(op, op)

@functools.cache
def covered_ops(arch:str) -> frozenset[str]:
  """Opcode names of the oracle classes whose base name has an oracle (v_cndmask e64 reads its mask from src2, the oracle from VCC)."""
  return frozenset(o.name for c in CLASSES if c in inst_classes(arch) for o in ops_of(inst_classes(arch)[c])
                   if o is not None and base_name(arch, o.name) in oracle.ORACLE and o.name != "V_CNDMASK_B32_E64")

@functools.cache
def covered_classes(arch:str) -> list[str]:
  """The oracle classes that carry at least one covered opcode."""
  return [c for c in CLASSES if c in inst_classes(arch) and any(o.name in covered_ops(arch) for o in ops_of(inst_classes(arch)[c]))]

def float_width(fmt:str) -> int:
  """16/32/64 for float operand formats, 0 otherwise."""
  return next((w for w in (16, 32, 64) if f"F{w}" in fmt and "BF16" not in fmt), 0)

def adjust(rng:random.Random, case:dict) -> dict:
  """Modifiers to zero and every source to something the oracle reads itself (see the module docstring)."""
  cls, fields = inst_classes(case["arch"])[case["cls"]], dict(case["fields"])
  op = next(o for o in ops_of(cls) if o.name == case["op"])
  info, halves = OPERANDS.get(op, {}), base_format(case["cls"]) in ("VOP1", "VOP2", "VOPC") and spec(case["arch"]).true16
  for name, f in cls._fields:
    if name in MODIFIERS: fields[name] = default_raw(f)
    if not isinstance(f, SrcField) or "dst" in name or (entry:=operand_info(info, name)) is None: continue
    fmt, bits, _ = entry
    lo_vgpr = 128 if bits == 16 and halves else 256
    if isinstance(f, VGPRField):
      fields[name] %= lo_vgpr
      continue
    code = fields[name] + f._valid_range[0]
    ok = (code in readable_sgprs(case["arch"]) and code + (bits == 64) < N_SGPR) or 128 <= code <= 208 \
      or (code in (*FLOAT_CONSTS, 248) and float_width(fmt.name)) \
      or (code == 255 and (bits <= 32 or float_width(fmt.name) == 64)) or 256 <= code < 256 + lo_vgpr - (bits == 64)
    if not ok: fields[name] = (rng.choice(INLINE_CONSTS[:6]) if f._valid_range[1] < 256 else 256 + rng.randrange(lo_vgpr - 1)) - f._valid_range[0]
  return {**case, "fields": fields}

def source(case:dict, name:str, bits:int, fmt:str, lane:int, sgpr, vgpr) -> int:
  """Raw bits of source field `name` in `lane`, resolved from the case's initial registers and the ISA's constant tables."""
  cls = inst_classes(case["arch"])[case["cls"]]
  f, raw = dict(cls._fields)[name], case["fields"][name]
  code = 256 + raw if isinstance(f, VGPRField) else raw + f._valid_range[0]
  mask, fw = (1 << bits) - 1, float_width(fmt)
  if code >= 256: v = int(vgpr[lane, code - 256]) | (int(vgpr[lane, code - 255]) << 32 if bits == 64 else 0)
  elif code == spec(case["arch"]).null_reg: v = 0
  elif code < N_SGPR: v = int(sgpr[code]) | (int(sgpr[code + 1]) << 32 if bits == 64 else 0)
  elif code <= 192: v = code - 128
  elif code <= 208: v = (192 - code) & mask
  elif code == 248: v = INV_2PI[fw]
  elif code in FLOAT_CONSTS: v = oracle.round_to(oracle.Fraction(FLOAT_CONSTS[code]), fw)
  else: v = case["fields"]["literal"] << 32 if bits == 64 else case["fields"]["literal"]
  return v & mask

def same(want:int, got:int, width:int, float_result:bool) -> bool:
  """Equal bits, or both NaN for a float result."""
  return want == got or (float_result and width in (16, 32, 64) and oracle.is_nan(want, width) and oracle.is_nan(got, width))

def check(case:dict) -> None:
  """Run the case on the emulator (exec.* properties included) and compare every active lane with the oracle."""
  if (st:=exec_target.checked_run(case)) is None: return
  name, cls = case["op"], inst_classes(case["arch"])[case["cls"]]
  ref = oracle.ORACLE[base_name(case["arch"], name)]
  op = next(o for o in ops_of(cls) if o.name == name)
  info = OPERANDS[op]
  srcs = [(n, e[1], e[0].name) for n, _ in cls._fields if "dst" not in n and (e:=operand_info(info, n)) is not None
          and e[2].name not in ("OPR_SIMM16", "OPR_SIMM32")]
  sgpr0, vgpr0 = amd_exec.initial_state(case)
  dsts = {d.name: d for d in operands(case)[1]}
  lanes, scc_in = case["lanes"], case["scc"]
  fres = "vdst" in info and bool(float_width(info["vdst"][0].name))
  def fail(what:str, want:int, got:int, lane:int|None, vals:list[int]):
    at = "" if lane is None else f" lane {lane}"
    raise Finding("oracle-mismatch", f"{name} ({case['cls']}, wave{lanes}){at}: {what} want {want:#x} got {got:#x}; "
                  f"sources {[hex(v) for v in vals]}, scc {scc_in}", key=(case["arch"], name))
  if ref.kind == "salu":
    vals = [source(case, n, b, fm, 0, sgpr0, vgpr0) for n, b, fm in srcs]
    out = ref.fn(*vals, scc_in=scc_in) if ref.reads_scc else ref.fn(*vals)
    d = dsts.get("sdst")
    if "D0" in out and d is not None and d.reg != 124:
      got = int(st.sgpr[0, d.reg]) | (int(st.sgpr[0, d.reg + 1]) << 32 if ref.width == 64 else 0)
      if got != out["D0"]: fail(f"s{d.reg}", out["D0"], got, None, vals)
    if out.get("SCC") is not None and int(st.scc[0]) != out["SCC"]: fail("SCC", out["SCC"], int(st.scc[0]), None, vals)
    return
  exec0 = case["exec"]
  vcc0 = int(sgpr0[VCC]) | (int(sgpr0[VCC + 1]) << 32 if lanes == 64 else 0)
  if ref.kind == "cmp":
    reg = EXEC if "CMPX" in name else dsts["vdst"].reg if "vdst" in dsts else VCC
    mask = int(st.sgpr[0, reg]) | (int(st.sgpr[0, reg + 1]) << 32 if lanes == 64 else 0)
  for lane in range(lanes):
    if not exec0 >> lane & 1: continue
    vals = [source(case, n, b, fm, lane, sgpr0, vgpr0) for n, b, fm in srcs]
    out = ref.fn(*vals, vcc=vcc0 >> lane & 1) if ref.reads_vcc else ref.fn(*vals)
    if ref.kind == "cmp":
      if mask >> lane & 1 != out["D0"]: fail(f"compare bit of s{reg}", out["D0"], mask >> lane & 1, lane, vals)
      continue
    r = dsts["vdst"].reg
    got = int(st.vgpr[0, lane, r]) | (int(st.vgpr[0, lane, r + 1]) << 32 if ref.width == 64 else 0)
    got &= (1 << ref.width) - 1
    if not same(out["D0"], got, ref.width, fres): fail(f"v{r}", out["D0"], got, lane, vals)
  if ref.kind == "cmp" and "CMPX" in name and mask & ~exec0: fail("EXEC bits of inactive lanes", 0, mask & ~exec0, None, [])

def generate(arch:str, rng:random.Random) -> dict:
  """An exec case of an op the oracle covers, sources adjusted so the oracle can read them."""
  return amd_exec.generate(arch, rng, classes=covered_classes(arch), ops=covered_ops(arch), adjust=adjust)

for _arch in ARCHS:
  register(Target(f"oracle.{_arch}", lambda rng, a=_arch: generate(a, rng), check, exec_target.minimise,
                  doc=f"{_arch} arithmetic ops on emu.amd vs fuzz/oracle.py, a reference written from the ISA text"))
