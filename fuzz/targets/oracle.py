"""Targets `oracle.{rdna3,rdna4,cdna}`: differential test of emu.amd against fuzz/oracle.py, a reference model written from the ISA's meaning.

A case is an `exec.*` case (fuzz.amd_exec) restricted to the opcodes `fuzz.oracle.ORACLE` covers, in plain or literal encodings
(VOP1/VOP2/VOP3/VOP3SD/VOP3P/VOPC/SOP1/SOP2/SOPC/SOPK, no DPP/SDWA), with sources the oracle can read on its own: SGPRs, VCC, M0,
EXEC, NULL, VGPRs, integer inline constants, float inline constants on float operands, 32-bit literals on 16/32-bit operands and on
64-bit float operands (the high half); a lane-mask source (carry-in, V_CNDMASK's select) is an SGPR (pair), VCC, EXEC, NULL or an
integer constant. Modifiers are drawn where the ISA defines them (`draw_modifiers`): neg/abs on float sources, clamp on ops
with a float result or an integer clamp, omod on float results, op_sel on the 16-bit operands of RDNA VOP3 (register sources
only: the high half of a constant is not defined) and op_sel/op_sel_hi/neg_lo/neg_hi on VOP3P (on every source: an inline constant
is its value in the low half and 0 in the high half, a literal is its 32 bits). 16-bit operands of RDNA e32 encodings v128+ name
the high half of v(n-128) (true16).

Results compared on the active lanes: the destination VGPR (the 16-bit half op_sel or true16 names; whole packed registers; any NaN
matches any NaN; approximate ops by the oracle's tolerance), the carry-out bit (VCC for e32, SDST for VOP3SD), the compare bit (VCC,
the e64 SGPR destination, or EXEC for v_cmpx, which also clears inactive lanes), the SALU destination (its low 16 bits for 16-bit
results) and SCC. Kind: `oracle-mismatch`. Key: (arch, op), or (arch, modifier field, format and result type) when the modifier is the
cause (`cause`), or (arch, 'true16 e32 v128+') when the case uses such an operand.

Per table set, as data: the oracle's (RDNA3) name of renamed opcodes (`ALIASES`: RDNA4's S_ADD_CO_U32 is S_ADD_U32, CDNA's
V_ADD_U32 is V_ADD_NC_U32, V_ADDC_CO_U32 is V_ADD_CO_CI_U32, V_FFBH_U32 is V_CLZ_I32_U32, S_ANDN2 is S_AND_NOT1, ...), the readable
SGPRs and the NULL number (from the emulator's ArchSpec: CDNA has M0 at 124 and no NULL), and whether e32 16-bit operands v128+
name high halves and VOP3 has op_sel on 16-bit operands (RDNA true16 only).
"""
from __future__ import annotations
import functools, random
from tinygrad.renderer.amd.dsl import OPERANDS, VGPRField, SrcField
from fuzz import amd_exec, oracle
from fuzz.amd_exec import EXEC, VCC, N_SGPR, base_format, operand_info, spec
from fuzz.amd_fields import inst_classes, ops_of, default_raw, scalar_reg, MODIFIERS, INLINE_CONSTS
from fuzz.finding import Finding
from fuzz.registry import Target, register
from fuzz.targets import exec as exec_target
from emu.amd.arch import FAMILIES as ARCHS

CLASSES = ("VOP1", "VOP1_LIT", "VOP2", "VOP2_LIT", "VOP3", "VOP3_LIT", "VOP3_SDST", "VOP3_SDST_LIT", "VOP3SD", "VOP3SD_LIT", "VOP3P",
           "VOP3P_LIT", "VOPC", "VOPC_LIT", "SOP1", "SOP1_LIT", "SOP2", "SOP2_LIT", "SOPC", "SOPC_LIT", "SOPK")
E32, E64 = ("VOP1", "VOP2", "VOPC"), ("VOP3", "VOP3SD")
FLOAT_CONSTS = {240: 0.5, 241: -0.5, 242: 1.0, 243: -1.0, 244: 2.0, 245: -2.0, 246: 4.0, 247: -4.0}
INV_2PI = {16: 0x3118, 32: 0x3e22f983, 64: 0x3fc45f306dc9c882}  # 1/(2*pi) as the ISA's tables give it per width
IMM_TYPES = ("OPR_SIMM16", "OPR_SIMM32")
ALIASES = {
  "rdna3": {},
  "rdna4": {"S_ADD_CO_U32": "S_ADD_U32", "S_SUB_CO_U32": "S_SUB_U32", "S_ADD_CO_CI_U32": "S_ADDC_U32", "S_SUB_CO_CI_U32": "S_SUBB_U32",
            "S_ADD_CO_I32": "S_ADD_I32", "S_SUB_CO_I32": "S_SUB_I32", "S_ADDK_CO_I32": "S_ADDK_I32", "V_MAD_CO_U64_U32": "V_MAD_U64_U32",
            "V_MAD_CO_I64_I32": "V_MAD_I64_I32"},
  "cdna": {"V_MAD_MIX_F32": "V_FMA_MIX_F32", "V_MAD_MIXLO_F16": "V_FMA_MIXLO_F16", "V_MAD_MIXHI_F16": "V_FMA_MIXHI_F16",   # fused on gfx942/950
           "V_ADD_U32": "V_ADD_NC_U32", "V_SUB_U32": "V_SUB_NC_U32", "V_SUBREV_U32": "V_SUBREV_NC_U32", "V_ADD_U16": "V_ADD_NC_U16",
           "V_SUB_U16": "V_SUB_NC_U16", "V_SUBREV_U16": "V_SUBREV_NC_U16", "V_ADD_I32": "V_ADD_NC_I32", "V_SUB_I32": "V_SUB_NC_I32",
           "V_ADD_I16": "V_ADD_NC_I16", "V_SUB_I16": "V_SUB_NC_I16", "V_ADDC_CO_U32": "V_ADD_CO_CI_U32", "V_SUBB_CO_U32": "V_SUB_CO_CI_U32",
           "V_SUBBREV_CO_U32": "V_SUBREV_CO_CI_U32", "V_FFBH_U32": "V_CLZ_I32_U32", "V_FFBL_B32": "V_CTZ_I32_B32", "V_FFBH_I32": "V_CLS_I32",
           "V_CVT_FLR_I32_F32": "V_CVT_FLOOR_I32_F32", "V_CVT_PKRTZ_F16_F32": "V_CVT_PK_RTZ_F16_F32", "S_FLBIT_I32_B32": "S_CLZ_I32_U32",
           "S_FLBIT_I32_B64": "S_CLZ_I32_U64", "S_FF1_I32_B32": "S_CTZ_I32_B32", "S_FF1_I32_B64": "S_CTZ_I32_B64", "S_FLBIT_I32": "S_CLS_I32",
           "S_FLBIT_I32_I64": "S_CLS_I32_I64", "S_ANDN2_B32": "S_AND_NOT1_B32", "S_ANDN2_B64": "S_AND_NOT1_B64", "S_ORN2_B32": "S_OR_NOT1_B32",
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
  """Opcode names of the oracle classes whose base name has an oracle."""
  return frozenset(o.name for c in CLASSES if c in inst_classes(arch) for o in ops_of(inst_classes(arch)[c])
                   if o is not None and base_name(arch, o.name) in oracle.ORACLE)

@functools.cache
def covered_classes(arch:str) -> list[str]:
  """The oracle classes that carry at least one covered opcode."""
  return [c for c in CLASSES if c in inst_classes(arch) and any(o.name in covered_ops(arch) for o in ops_of(inst_classes(arch)[c]))]

def float_width(fmt:str) -> int:
  """16/32/64 for float operand formats, 0 otherwise."""
  return next((w for w in (16, 32, 64) if f"F{w}" in fmt and "BF16" not in fmt), 0)

def _op(case:dict):
  return next(o for o in ops_of(inst_classes(case["arch"])[case["cls"]]) if o.name == case["op"])

def value_sources(case:dict) -> list[tuple[str, int, str]]:
  """(field, bits, format name) of the value sources in field order (without immediates and an e64 lane-mask source)."""
  cls, ref = inst_classes(case["arch"])[case["cls"]], oracle.ORACLE[base_name(case["arch"], case["op"])]
  info = OPERANDS[_op(case)]
  srcs = [(n, ref.src_bits or e[1], e[0].name) for n, _ in cls._fields
          if "dst" not in n and (e:=operand_info(info, n)) is not None and e[2].name not in IMM_TYPES]
  return srcs[:-1] if "mask" in ref.reads and base_format(case["cls"]) in E64 else srcs

def true16_e32(case:dict) -> bool:
  """16-bit operands of this case's encoding name a high half with v128+ (RDNA VOP1/VOP2/VOPC)."""
  return base_format(case["cls"]) in E32 and spec(case["arch"]).true16

def vop3_opsel(case:dict) -> bool:
  """op_sel selects 16-bit halves of VOP3 operands (RDNA; gfx9 VOP3 has op_sel only for a few ops)."""
  return base_format(case["cls"]) == "VOP3" and spec(case["arch"]).true16

def draw_modifiers(rng:random.Random, case:dict, fields:dict) -> None:
  """Modifier fields of the case drawn where the ISA defines them for its op (see the module docstring); the rest at defaults."""
  cls, ref = inst_classes(case["arch"])[case["cls"]], oracle.ORACLE[base_name(case["arch"], case["op"])]
  names = dict(cls._fields)
  for n in MODIFIERS & names.keys(): fields[n] = default_raw(names[n])
  srcs, fmt = value_sources({**case, "fields": fields}), base_format(case["cls"])
  on_regs = sum(1 << i for i, (n, _, _) in enumerate(srcs) if _register({**case, "fields": fields}, n))
  if fmt == "VOP3P": fields["opsel_hi"], fields["opsel_hi2"] = on_regs & 3, on_regs >> 2 & 1   # register halves hi, constants lo
  if rng.random() < 0.4: return
  lane = ref.lane_op if ref.kind == "pk" else ref
  fl = sum(1 << i for i, w in enumerate(lane.fsrc) if w and i < len(srcs))
  def rnd(mask:int) -> int: return rng.getrandbits(3) & mask
  if "neg" in names: fields["neg"] = rnd(fl)
  if "abs" in names: fields["abs"] = rnd(fl)
  if "neg_hi" in names: fields["neg_hi"] = rnd(fl)
  if "clmp" in names and lane.clamp: fields["clmp"] = rng.getrandbits(1)
  if "omod" in names and ref.fout and ref.kind == "valu": fields["omod"] = rng.choice((0, 0, 1, 2, 3))
  if fmt == "VOP3P":   # constants too: an inline constant's high half is 0, a literal's is its high 16 bits
    every = (1 << len(srcs)) - 1
    hi = rnd(every)
    fields["opsel"], fields["opsel_hi"], fields["opsel_hi2"] = rnd(every), hi & 3, hi >> 2
  elif "opsel" in names and vop3_opsel(case):
    half = sum(1 << i for i, (_, b, _) in enumerate(srcs) if b == 16 and on_regs >> i & 1)
    dst16 = (e:=operand_info(OPERANDS[_op(case)], "vdst")) is not None and e[1] == 16 and ref.kind == "valu"
    fields["opsel"] = rnd(half) | (rng.getrandbits(1) << 3 if dst16 else 0)

def _register(case:dict, name:str) -> bool:
  """Source field `name` names a register (SGPR or VGPR), not a constant or literal."""
  f = dict(inst_classes(case["arch"])[case["cls"]]._fields)[name]
  code = case["fields"][name] + (0 if isinstance(f, VGPRField) else f._valid_range[0])
  return isinstance(f, VGPRField) or code < N_SGPR or code >= 256

def adjust(rng:random.Random, case:dict) -> dict:
  """Every source to something the oracle reads itself, a lane-mask source to a scalar mask, modifiers drawn (module docstring)."""
  cls, fields = inst_classes(case["arch"])[case["cls"]], dict(case["fields"])
  info = OPERANDS.get(_op(case), {})
  for name, f in cls._fields:
    if not isinstance(f, SrcField) or "dst" in name or (entry:=operand_info(info, name)) is None or isinstance(f, VGPRField): continue
    fmt, bits, _ = entry
    code = fields[name] + f._valid_range[0]
    if fmt.name == "FMT_NUM_M64":   # a lane mask: a scalar register (pair) or an integer constant
      if not ((code in readable_sgprs(case["arch"]) and code + 1 < N_SGPR) or 128 <= code <= 208):
        fields[name] = scalar_reg(rng, case["arch"], 2) if rng.random() < 0.8 else rng.choice(INLINE_CONSTS[:6]) - f._valid_range[0]
      continue
    ok = (code in readable_sgprs(case["arch"]) and code + (bits == 64) < N_SGPR) or 128 <= code <= 208 \
      or (code in (*FLOAT_CONSTS, 248) and float_width(fmt.name)) \
      or (code == 255 and (bits <= 32 or float_width(fmt.name) == 64)) or 256 <= code < 256 + 256 - (bits == 64)
    if not ok: fields[name] = (rng.choice(INLINE_CONSTS[:6]) if f._valid_range[1] < 256 else 256 + rng.randrange(255)) - f._valid_range[0]
  case = {**case, "fields": fields}
  draw_modifiers(rng, case, fields)
  return case

def source(case:dict, name:str, bits:int, fmt:str, lane:int, sgpr, vgpr, hi:bool=False) -> int:
  """Raw bits of source field `name` in `lane`, resolved from the case's initial registers and the ISA's constant tables; `hi`: the
  high 16 bits of a register (op_sel), and on true16 e32 encodings a 16-bit VGPR operand v128+ is the high half of v(n-128)."""
  cls = inst_classes(case["arch"])[case["cls"]]
  f, raw = dict(cls._fields)[name], case["fields"][name]
  code = 256 + raw if isinstance(f, VGPRField) else raw + f._valid_range[0]
  mask, fw = (1 << bits) - 1, float_width(fmt)
  if bits == 16 and code >= 256 + 128 and true16_e32(case): code, hi = code - 128, True
  if code >= 256: v = int(vgpr[lane, code - 256]) | (int(vgpr[lane, code - 255]) << 32 if bits == 64 else 0)
  elif code == spec(case["arch"]).null_reg: v = 0
  elif code < N_SGPR: v = int(sgpr[code]) | (int(sgpr[code + 1]) << 32 if bits == 64 else 0)
  elif code <= 192: return (code - 128) & mask
  elif code <= 208: return (192 - code) & mask
  elif code == 248: return INV_2PI[fw]
  elif code in FLOAT_CONSTS: return oracle.round_to(oracle.Fraction(FLOAT_CONSTS[code]), fw)
  else: return (case["fields"]["literal"] << 32 if bits == 64 else case["fields"]["literal"]) & mask
  return (v >> 16 if hi else v) & mask

def _mods(case:dict) -> dict:
  f = case["fields"]
  return {"neg": f.get("neg", 0), "abs_": f.get("abs", 0), "clamp": bool(f.get("clmp", 0)), "opsel": f.get("opsel", 0),
          "opsel_hi": f.get("opsel_hi", 0) | f.get("opsel_hi2", 0) << 2, "neg_hi": f.get("neg_hi", 0)}

def compare(case:dict, st) -> tuple[str, int, int, int|None, list[int]]|None:
  """The first disagreement between the emulator's final state `st` and the oracle: (what, want, got, lane, sources), or None."""
  arch, name, fmt = case["arch"], case["op"], base_format(case["cls"])
  ref, fields = oracle.ORACLE[base_name(arch, name)], case["fields"]
  srcs, mods = value_sources(case), _mods(case)
  sgpr0, vgpr0 = amd_exec.initial_state(case)
  dsts = {d.name: d for d in amd_exec.operands(case)[1]}
  lanes, exec0, opsel3 = case["lanes"], case["exec"], vop3_opsel(case) and bool(mods["opsel"] >> 3 & 1)
  def wide(regs, r:int, bits:int) -> int: return int(regs[r]) | (int(regs[r + 1]) << 32 if bits == 64 else 0)
  def vals(lane:int) -> list[int]:
    return [source(case, n, b, fm, lane, sgpr0, vgpr0, hi=vop3_opsel(case) and b == 16 and bool(mods["opsel"] >> i & 1))
            for i, (n, b, fm) in enumerate(srcs)]
  if ref.kind == "salu":
    d = dsts.get("sdst")
    k = fields["simm16"] if "simm16" in fields else fields.get("literal", 0)
    v = vals(0)
    d0 = wide(sgpr0, d.reg, ref.width) if d is not None and "d0" in ref.reads and d.reg != spec(arch).null_reg else 0
    out = oracle.evaluate(ref, v, scc=case["scc"], d0=d0, k=k)
    if "D0" in out and d is not None and d.reg != spec(arch).null_reg and ref.width:
      got = wide(st.sgpr[0], d.reg, ref.width) & ((1 << ref.width) - 1)
      if not oracle.accepts(ref, out, got): return f"s{d.reg}", out["D0"], got, None, v
    if out.get("SCC") is not None and int(st.scc[0]) != out["SCC"]: return "SCC", out["SCC"], int(st.scc[0]), None, v
    return None
  vcc0 = wide(sgpr0[:], VCC, 64) if lanes == 64 else int(sgpr0[VCC])
  mask0 = vcc0
  if "mask" in ref.reads and fmt in E64: mask0 = source(case, (m:=_mask_source(case))[0], lanes, m[1], 0, sgpr0, vgpr0)
  if ref.kind == "cmp" or ref.carry:
    reg = EXEC if "CMPX" in name else dsts["sdst"].reg if "sdst" in dsts else dsts["vdst"].reg if ref.kind == "cmp" and "vdst" in dsts else VCC
    bits_out = wide(st.sgpr[0], reg, lanes) if reg != spec(arch).null_reg else None
  d = dsts.get("vdst")
  dreg, dhi = (d.reg, opsel3 and ref.width == 16) if d is not None else (0, False)
  if d is not None and ref.width == 16 and dreg >= 128 and true16_e32(case): dreg, dhi = dreg - 128, True
  for lane in range(lanes):
    if not exec0 >> lane & 1: continue
    v = vals(lane)
    old = wide(vgpr0[lane], dreg, ref.width) >> (16 if dhi else 0) if d is not None else 0
    out = oracle.evaluate(ref, v, **mods, mask=mask0 >> lane & 1, vcc=vcc0 >> lane & 1, d0=old & ((1 << ref.width) - 1), k=fields.get("literal", 0),
                          lane=lane)
    if ref.kind == "cmp":
      if bits_out is not None and bits_out >> lane & 1 != out["D0"]: return f"compare bit of s{reg}", out["D0"], bits_out >> lane & 1, lane, v
      continue
    got = (wide(st.vgpr[0, lane], dreg, ref.width) >> (16 if dhi else 0)) & ((1 << ref.width) - 1)
    if not oracle.accepts(ref, out, got): return f"v{dreg}{'.h' if dhi else ''}", out["D0"], got, lane, v
    if ref.carry and bits_out is not None and out["CO"] is not None and bits_out >> lane & 1 != out["CO"]:
      return f"carry-out bit of s{reg}", out["CO"], bits_out >> lane & 1, lane, v
  if ref.kind == "cmp" and "CMPX" in name and bits_out & ~exec0: return "EXEC bits of inactive lanes", 0, bits_out & ~exec0, None, []
  return None

def _mask_source(case:dict) -> tuple[str, str]:
  """(field, format name) of an e64 op's lane-mask source: its last source (src2)."""
  cls, info = inst_classes(case["arch"])[case["cls"]], OPERANDS[_op(case)]
  return next((n, e[0].name) for n, _ in reversed(cls._fields) if "dst" not in n and (e:=operand_info(info, n)) is not None)

CAUSE_ORDER = ("omod", "clmp", "opsel", "opsel_hi", "neg", "neg_hi", "abs")

def cause(case:dict, st) -> tuple:
  """What a mismatch is keyed by. Modifier fields are tried in CAUSE_ORDER, each zeroed in the case: omod (which the oracle
  ignores) and clamp are the cause when the case then passes (omod is dropped before the next tries either way); the others when
  the case then passes and the emulator leaves the same registers (it ignored the field). Else a true16 e32 high-half operand,
  else the op. Modifier keys name the field, the format and the result type: one finding per modifier bug, whatever the op."""
  names, ref = dict(inst_classes(case["arch"])[case["cls"]]._fields), oracle.ORACLE[base_name(case["arch"], case["op"])]
  regs = lambda s: (s.sgpr.tobytes(), s.vgpr.tobytes(), s.scc.tobytes())
  what = f"{base_format(case['cls'])} {ref.kind} {ref.width}-bit{' float' if ref.fout or (ref.lane_op and ref.lane_op.fout) else ''}"
  for n in (n for n in CAUSE_ORDER if n in names and case["fields"][n] != default_raw(names[n])):
    plain = {**case, "fields": {**case["fields"], n: default_raw(names[n])}}
    if n == "opsel_hi": plain["fields"]["opsel_hi2"] = default_raw(names["opsel_hi2"])
    if (again:=exec_target.execute(plain).state) is None: continue
    if compare(plain, again) is None and (n in ("omod", "clmp") or regs(again) == regs(st)): return (case["arch"], n, what)
    if n == "omod": case, st = plain, again
  if true16_e32(case) and any(o.bits == 16 and o.file == "v" and o.reg >= 128 for o in sum(amd_exec.operands(case), [])):
    return (case["arch"], "true16 e32 v128+")
  return (case["arch"], case["op"])

def check(case:dict) -> None:
  """Run the case on the emulator (exec.* properties included) and compare every active lane with the oracle."""
  if (st:=exec_target.checked_run(case)) is None: return
  if (bad:=compare(case, st)) is None: return
  what, want, got, lane, vals = bad
  names = dict(inst_classes(case["arch"])[case["cls"]]._fields)
  mods = {k: v for k, v in case["fields"].items() if k in MODIFIERS and v != default_raw(names[k])}
  raise Finding("oracle-mismatch", f"{case['op']} ({case['cls']}, wave{case['lanes']}){'' if lane is None else f' lane {lane}'}: {what} want "
                f"{want:#x} got {got:#x}; sources {[hex(v) for v in vals]}, scc {case['scc']}, modifiers {mods}", key=cause(case, st))

def generate(arch:str, rng:random.Random) -> dict:
  """An exec case of an op the oracle covers, sources and modifiers adjusted so the oracle can read them."""
  return amd_exec.generate(arch, rng, classes=covered_classes(arch), ops=covered_ops(arch), adjust=adjust)

for _arch in ARCHS:
  register(Target(f"oracle.{_arch}", lambda rng, a=_arch: generate(a, rng), check, exec_target.minimise,
                  doc=f"{_arch} arithmetic ops on emu.amd vs fuzz/oracle.py, a reference written from the ISA text"))
