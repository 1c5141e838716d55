"""LLVM AMDGPU assembly text -> tinygrad's instruction DSL (`tinygrad.renderer.amd.dsl`, per-arch `runtime/autogen/amd/*/ins.py`).

tinygrad 0.14.0 assembles AMD code only from Python objects (`v_add_f32_e32(v[1], v[2], v[3])`, `Inst.to_bytes()`,
`renderer.amd.elf.assemble_linear`); it has no text parser. `Translator(arch).translate(line)` turns one line of LLVM's syntax
(what LLVM's MC disassembler or `llc` prints) into the DSL object the arch's `ins.py` would build for it, so that the DSL's bytes can
be compared with LLVM's. `Translator.assemble(text)` does a listing with `label:` lines and branches to labels.

Syntax handled: registers (v1, v[2:3], s4, s[4:5], ttmp9, vcc/vcc_lo/vcc_hi, exec/exec_lo/exec_hi, m0, null, off, scc),
integer inline constants and literals (decimal or 0x...), float inline constants (0.5 ... -4.0, 1/(2*pi)), source modifiers
(-x, |x|, -|x|, neg(x), abs(x), sext(x)), VOP3 clamp/mul:N/div:2/op_sel, VOP3P op_sel/op_sel_hi/neg_lo/neg_hi, VOPD pairs
(`x :: y`), DPP16 (quad_perm, row_*, wave_*, row_mask, bank_mask, bound_ctrl, fi), DPP8, SDWA (dst_sel, dst_unused, src0_sel,
src1_sel, SGPR/constant sources), memory modifiers (offset:N, offset0/offset1, glc/slc/dlc, sc0/sc1/nt, th/scope, gds), SMEM
offsets and soffset, s_waitcnt counters (gfx9 and gfx10/11 layouts), s_delay_alu, s_sendmsg, hwreg(), SOPP immediates and branch
offsets (raw simm16, or a label in `assemble`). Anything else raises `Untranslatable` naming the line.
"""
from __future__ import annotations
import functools, importlib, math, re
from typing import Any
from tinygrad.renderer.amd.dsl import Inst, Reg, src as SRC, v as VGPR, s as SGPR, ttmp as TTMP, OPERANDS

FAMILY = {"gfx1100": "rdna3", "gfx1151": "rdna3", "gfx1201": "rdna4", "gfx942": "cdna", "gfx950": "cdna"}

class Untranslatable(Exception):
  """A line the translator cannot express in the DSL (a coverage gap of this module, not a tinygrad bug)."""
  def __init__(self, line:str, reason:str):
    self.line, self.reason = line, reason
    self.mnemonic = line.split(None, 1)[0] if line.strip() else ""
    super().__init__(f"cannot translate {line!r}: {reason}")

# special operand names -> 9-bit source encodings (same on every family, except that CDNA has M0 at 124 and no NULL)
_NAMED = {"vcc_lo": 106, "vcc_hi": 107, "exec_lo": 126, "exec_hi": 127, "flat_scratch_lo": 102, "flat_scratch_hi": 103,
          "scc": 253, "src_scc": 253, "src_vccz": 251, "vccz": 251, "src_execz": 252, "execz": 252, "src_lds_direct": 254,
          "src_shared_base": 235, "src_shared_limit": 236, "src_private_base": 237, "src_private_limit": 238,
          "src_pops_exiting_wave_id": 239}
_PAIRS = {"vcc": 106, "exec": 126, "flat_scratch": 102}
_FLOATS = {0.5, -0.5, 1.0, -1.0, 2.0, -2.0, 4.0, -4.0}
_INV_2PI = 0.15915494309189532
_FLAGS = {"glc", "slc", "dlc", "sc0", "sc1", "nt", "clamp", "gds", "offen", "idxen", "lds", "tfe", "nv"}
# s_delay_alu / SDWA / DPP names (RDNA3 ISA S_DELAY_ALU; GCN SDWA_SEL, DST_UNUSED; DPP_CTRL)
_DELAY_ID = {"NO_DEP": 0, "VALU_DEP_1": 1, "VALU_DEP_2": 2, "VALU_DEP_3": 3, "VALU_DEP_4": 4, "TRANS32_DEP_1": 5, "TRANS32_DEP_2": 6,
             "TRANS32_DEP_3": 7, "FMA_ACCUM_CYCLE_1": 8, "SALU_CYCLE_1": 9, "SALU_CYCLE_2": 10, "SALU_CYCLE_3": 11}
_DELAY_SKIP = {"SAME": 0, "NEXT": 1, "SKIP_1": 2, "SKIP_2": 3, "SKIP_3": 4, "SKIP_4": 5}
_SDWA_SEL = {"BYTE_0": 0, "BYTE_1": 1, "BYTE_2": 2, "BYTE_3": 3, "WORD_0": 4, "WORD_1": 5, "DWORD": 6}
_SDWA_UNUSED = {"UNUSED_PAD": 0, "UNUSED_SEXT": 1, "UNUSED_PRESERVE": 2}
_DPP_ROW = {"row_shl": 0x100, "row_shr": 0x110, "row_ror": 0x120, "row_share": 0x150, "row_xmask": 0x160}
_DPP_FIXED = {"wave_shl:1": 0x130, "wave_rol:1": 0x134, "wave_shr:1": 0x138, "wave_ror:1": 0x13c, "row_mirror": 0x140,
              "row_half_mirror": 0x141, "row_bcast:15": 0x142, "row_bcast:31": 0x143}
# s_waitcnt fields: name -> (shift, width) pieces; gfx9 splits vmcnt in two (bits 3:0 and 15:14)
_WAITCNT = {"cdna": {"vmcnt": ((0, 4), (14, 2)), "expcnt": ((4, 3),), "lgkmcnt": ((8, 4),)},
            "rdna3": {"vmcnt": ((10, 6),), "expcnt": ((0, 3),), "lgkmcnt": ((4, 6),)}}
_SENDMSG = {"MSG_INTERRUPT": 1, "MSG_DEALLOC_VGPRS": 3}
_HWREG = {"HW_REG_MODE": 1, "HW_REG_STATUS": 2, "HW_REG_TRAPSTS": 3, "HW_REG_HW_ID": 4, "HW_REG_GPR_ALLOC": 5, "HW_REG_LDS_ALLOC": 6,
          "HW_REG_IB_STS": 7}
# LLVM mnemonics the wheel's tables name differently (same opcode)
_ALIASES = {"cdna": {"v_fma_mix_f32": "v_mad_mix_f32", "v_fma_mixlo_f16": "v_mad_mixlo_f16", "v_fma_mixhi_f16": "v_mad_mixhi_f16",
                     "v_accvgpr_read_b32": "v_accvgpr_read", "v_accvgpr_write_b32": "v_accvgpr_write"}}

def _split(text:str, seps:str) -> list[str]:
  """Split at `seps` characters outside brackets/parentheses; empty pieces dropped."""
  out, depth, cur = [], 0, ""
  for ch in text:
    depth += (ch in "([") - (ch in ")]")
    if ch in seps and depth == 0:
      if cur.strip(): out.append(cur.strip())
      cur = ""
    else: cur += ch
  if cur.strip(): out.append(cur.strip())
  return out

def _int(tok:str) -> int:
  neg = tok.startswith("-")
  body = tok[1:] if neg else tok
  val = int(body, 16) if body.lower().startswith("0x") else int(body)
  return -val if neg else val

def _bits(tok:str) -> int:
  """`[1,0,1]` -> 0b101 (element i is bit i)."""
  return sum(int(b) << i for i, b in enumerate(tok.strip("[]").split(",")))

class Operand:
  """One parsed source/destination: a register (Reg with modifiers), an integer, or a float inline constant; `sext` is SDWA's sext()."""
  def __init__(self, val:Any, sext:bool=False):
    self.val, self.sext = val, sext
  @property
  def code(self) -> int:
    """The 9-bit source encoding of the operand (registers and inline constants; 255 for a literal)."""
    if isinstance(self.val, Reg): return self.val.offset
    if isinstance(self.val, float): return {0.5: 240, -0.5: 241, 1.0: 242, -1.0: 243, 2.0: 244, -2.0: 245, 4.0: 246, -4.0: 247}[self.val]
    return 128 + self.val if 0 <= self.val <= 64 else 192 - self.val if -16 <= self.val < 0 else 255

class Translator:
  """LLVM assembly -> DSL instructions for one arch (gfx1100, gfx1151, gfx1201, gfx942, gfx950)."""
  def __init__(self, arch:str):
    if arch not in FAMILY: raise ValueError(f"unknown arch {arch}")
    self.arch, self.family = arch, FAMILY[arch]
    self.ins = importlib.import_module(f"tinygrad.runtime.autogen.amd.{self.family}.ins")
    self.cdna = self.family == "cdna"

  # ** operands
  def reg(self, name:str) -> Reg|None:
    """A register name (no modifiers) as a DSL Reg, or None when `name` is no register."""
    if m := re.fullmatch(r"v(\d+)\.([lh])", name): return VGPR[int(m[1])].h if m[2] == "h" else VGPR[int(m[1])]  # true16 halves
    if m := re.fullmatch(r"([vsa]|ttmp)(\d+)", name): base, lo, hi = m[1], int(m[2]), int(m[2])
    elif m := re.fullmatch(r"([vsa]|ttmp)\[(\d+):(\d+)\]", name): base, lo, hi = m[1], int(m[2]), int(m[3])
    elif name in _NAMED: return SRC[_NAMED[name]]
    elif name in _PAIRS: return SRC[_PAIRS[name]:_PAIRS[name] + 1]
    elif name == "m0": return SRC[124 if self.cdna else 125]
    elif name == "null" and not self.cdna: return SRC[124]
    else: return None
    if base == "a": raise ValueError("AGPR operands are not translated")
    file = {"v": VGPR, "s": SGPR, "ttmp": TTMP}[base]
    return file[lo] if lo == hi else file[lo:hi]  # the DSL reads a slice [0:0] as the whole file

  def operand(self, tok:str) -> Operand:
    """Parse one operand token with its modifiers (-x, |x|, -|x|, neg(x), abs(x), sext(x))."""
    t, neg, absm, sext = tok, False, False, False
    while m := re.fullmatch(r"(neg|abs|sext)\((.*)\)", t):
      neg, absm, sext, t = neg or m[1] == "neg", absm or m[1] == "abs", sext or m[1] == "sext", m[2]
    if t.startswith("-") and not re.fullmatch(r"-(0x[0-9a-fA-F]+|[\d.]+(e[-+]?\d+)?)", t): neg, t = True, t[1:]  # -x, not -5 / -0.5
    if t.startswith("|") and t.endswith("|"): absm, t = True, t[1:-1]
    if (r := self.reg(t)) is not None:
      if neg: r = -r
      if absm: r = abs(r)
      return Operand(r, sext)
    if neg or absm: raise ValueError(f"modifier on constant {tok}")
    if re.fullmatch(r"-?(0x[0-9a-fA-F]+|\d+)", t): return Operand(_int(t))
    if re.fullmatch(r"-?\d+\.\d*(e[-+]?\d+)?", t):
      f = float(t)
      if f in _FLOATS: return Operand(f)
      if math.isclose(f, _INV_2PI, rel_tol=1e-6): return Operand(SRC[248])
    raise ValueError(f"unknown operand {tok!r}")

  # ** lookup
  def lookup(self, mnem:str):
    """The wheel's constructor (functools.partial(Class, Op)) for an LLVM mnemonic, or None."""
    name = _ALIASES.get(self.family, {}).get(mnem, mnem)
    for cand in (name, name + "_e32", name + "_e64", name.removesuffix("_e64"), name.removesuffix("_e32")):
      if isinstance(f := getattr(self.ins, cand, None), functools.partial): return f
    return None

  def _variant(self, cls, suffix:str):
    return getattr(self.ins, cls.__name__.removesuffix("_LIT") + suffix, None)

  # ** entry points
  def translate(self, line:str) -> Inst:
    """One LLVM assembly line -> a DSL Inst (raises Untranslatable)."""
    text = line.split(";")[0].split("//")[0].strip()
    try: return self._translate(text)
    except Untranslatable: raise
    except (ValueError, KeyError, IndexError) as e: raise Untranslatable(text, str(e)) from None

  def assemble(self, text:str) -> list[Inst]:
    """A listing (one instruction per line, `label:` lines, `.directive` lines ignored, branches to labels) -> DSL instructions with
    resolved branch offsets (simm16 = (target - pc - 4) / 4)."""
    labels: dict[str, int] = {}
    out: list[Inst] = []
    pending: list[tuple[int, int, str, str]] = []
    for ln in (l.split(";")[0].split("//")[0].strip() for l in text.splitlines()):
      if ln.endswith(":"): labels[ln[:-1]] = sum(len(i.to_bytes()) for i in out)
      if not ln or ln.endswith(":") or ln.startswith("."): continue
      parts = ln.split(None, 1)
      if parts[0].startswith(("s_branch", "s_cbranch")) and len(parts) == 2 and not re.fullmatch(r"-?(0x[0-9a-fA-F]+|\d+)", parts[1]):
        pending.append((len(out), sum(len(i.to_bytes()) for i in out), parts[0], parts[1].strip()))
        ln = parts[0] + " 0"
      out.append(self.translate(ln))
    for i, at, mnem, label in pending:
      if label not in labels: raise Untranslatable(f"{mnem} {label}", "unknown label")
      out[i] = self.translate(f"{mnem} {((labels[label] - at - 4) // 4) & 0xffff}")
    return out

  def _translate(self, text:str) -> Inst:
    if "::" in text: return self._vopd(text)
    mnem, _, rest = text.partition(" ")
    if mnem == "s_waitcnt" and not re.fullmatch(r"\s*(0x[0-9a-f]+|\d+)\s*", rest): return self._waitcnt(text, rest)
    base = mnem
    form = next((f for f in ("_sdwa", "_dpp8", "_dpp") if mnem.endswith(f)), None)
    if form: base = mnem[:-len(form)]
    if (ctor := self.lookup(base)) is None: raise Untranslatable(text, f"no DSL instruction {base} for {self.family}")
    cls, op = ctor.func, ctor.args[0]
    mods: dict[str, Any] = {}
    ops: list[str] = []
    for w in _split(rest, ", "):   # operands, then modifiers: flags (glc), key:value (offset:8) and DPP controls without a value
      if w in _FLAGS: mods[w] = 1
      elif w in _DPP_FIXED: mods["dpp_ctrl"] = str(_DPP_FIXED[w])
      elif re.fullmatch(r"[a-z_0-9]+:.*", w):
        k, _, val = w.partition(":")
        mods[k] = val
      else: ops.append(w)
    fmt = cls.__name__.removesuffix("_LIT").removesuffix("_SDST")
    handler = getattr(self, f"_{fmt.lower()}", None)
    if handler is None: raise Untranslatable(text, f"format {cls.__name__} not handled")
    return handler(text, mnem, cls, op, ops, mods, form)

  # ** helpers
  def _fields(self, op, names:list[str]) -> list[str]:
    """The operand fields of `op` among `names` (in LLVM's print order), from the wheel's operand tables."""
    have = OPERANDS.get(op, {})
    return [n for n in names if n in have]

  def _src_value(self, o:Operand, op, field:str) -> Any:
    """An operand as the DSL wants it for a source field: Regs as-is (the 1/(2*pi) constant sized like the operand), ints and
    float constants as Python values (the DSL picks inline or literal)."""
    info = OPERANDS.get(op, {})
    spec = info.get(field) or info.get("v" + field)  # rdna4's tables call VOP3 src0 `vsrc0`
    if isinstance(o.val, Reg) and o.val.offset == 248: return Reg(248, max(1, (spec or (0, 32))[1] // 32))
    if isinstance(o.val, int) and o.code == 255 and spec and spec[1] == 16 and "F16" not in spec[0].name and 0x8000 <= o.val < 0x10000:
      return o.val - 0x10000  # LLVM stores a 16-bit integer literal sign-extended (it prints 0xff93, encodes 0xffffff93)
    return o.val

  @staticmethod
  def _build(cls, op, kw:dict, lit:int|None=None) -> Inst:
    if lit is not None:
      cls = getattr(importlib.import_module(cls.__module__), cls.__name__.removesuffix("_LIT") + "_LIT")
      kw["literal"] = lit & 0xffffffff
    return cls(op, **kw)

  def _vop3_mods(self, kw:dict, mods:dict, cls) -> None:
    names = {n for n, _ in cls._fields}
    if "clamp" in mods: kw["clmp"] = 1
    if "mul" in mods: kw["omod"] = {"2": 1, "4": 2}[mods["mul"]]
    if "div" in mods: kw["omod"] = {"2": 3}[mods["div"]]
    if "op_sel" in mods and "opsel" in names: kw["opsel"] = kw.get("opsel", 0) | _bits(mods["op_sel"])
    if "bitop3" in mods:  # gfx950 v_bitop3_*: the 8-bit truth table sits in the NEG (bits 2:0), ABS (5:3) and OMOD (7:6) fields
      b = _int(mods["bitop3"])
      kw.update(neg=b & 7, abs=(b >> 3) & 7, omod=b >> 6)
    unknown = set(mods) - {"clamp", "mul", "div", "op_sel", "bitop3"}
    if unknown: raise ValueError(f"modifiers {sorted(unknown)}")

  # ** scalar formats
  def _sop1(self, text, mnem, cls, op, ops, mods, form):
    names = self._fields(op, ["sdst", "ssrc0"])
    if mods or len(ops) != len(names): raise ValueError(f"{len(ops)} operands for {names}")
    return self._build(cls, op, {n: self.operand(t).val for n, t in zip(names, ops)})

  def _sop2(self, text, mnem, cls, op, ops, mods, form):
    names, lit = self._fields(op, ["sdst", "ssrc0", "ssrc1"]), None
    if mnem in ("s_fmamk_f32", "s_fmaak_f32") and len(ops) == 4:  # gfx12 SALU float: the K literal is not a source field
      k = 2 if mnem == "s_fmamk_f32" else 3
      ops, lit = ops[:k] + ops[k + 1:], _int(ops[k])
    if mods or len(ops) != len(names): raise ValueError(f"{len(ops)} operands for {names}")
    return self._build(cls, op, {n: self.operand(t).val for n, t in zip(names, ops)}, lit)

  _sopc = _sop2

  def _sopk(self, text, mnem, cls, op, ops, mods, form):
    if mods: raise ValueError(f"modifiers {mods}")
    hw = [o for o in ops if o.startswith("hwreg(")]
    if hw:  # s_getreg_b32 sdst, hwreg(...) / s_setreg_b32 hwreg(...), ssrc
      reg = next(o for o in ops if o not in hw)
      return self._build(cls, op, {"sdst": self.operand(reg).val, "simm16": self._hwreg(hw[0])})
    names = self._fields(op, ["sdst", "simm16"])
    if "sdst" not in names and len(ops) == 2: names = ["sdst", "simm16"]
    if len(ops) != len(names): raise ValueError(f"{len(ops)} operands for {names}")
    kw = {n: (self.operand(t).val if n == "sdst" else _int(t) & 0xffff) for n, t in zip(names, ops)}
    return self._build(cls, op, kw)

  def _hwreg(self, tok:str) -> int:
    args = [a.strip() for a in tok[len("hwreg("):-1].split(",")]
    reg = _HWREG[args[0]] if args[0] in _HWREG else _int(args[0])
    offset, size = (_int(args[1]), _int(args[2])) if len(args) == 3 else (0, 32)
    return reg | offset << 6 | (size - 1) << 11

  def _sopp(self, text, mnem, cls, op, ops, mods, form):
    if mods: raise ValueError(f"modifiers {mods}")
    rest = text.partition(" ")[2].strip()
    if not rest: return cls(op)
    if mnem == "s_delay_alu":
      val = 0
      for part in (p.strip() for p in rest.split("|")):
        m = re.fullmatch(r"(instid0|instskip|instid1)\((\w+)\)", part)
        if not m: raise ValueError(f"bad s_delay_alu field {part}")
        val |= {"instid0": lambda n: _DELAY_ID[n], "instskip": lambda n: _DELAY_SKIP[n] << 4, "instid1": lambda n: _DELAY_ID[n] << 7}[m[1]](m[2])
      return cls(op, simm16=val)
    if m := re.fullmatch(r"sendmsg\((\w+)(?:,\s*(\w+))?(?:,\s*(\w+))?\)", rest):
      if m[2] or m[1] not in _SENDMSG: raise ValueError(f"message {rest}")
      return cls(op, simm16=_SENDMSG[m[1]])
    return cls(op, simm16=_int(rest) & 0xffff)

  def _waitcnt(self, text:str, rest:str) -> Inst:
    layout = _WAITCNT.get(self.family)
    if layout is None: raise Untranslatable(text, f"s_waitcnt counters on {self.family}")
    val = sum(((1 << w) - 1) << sh for pieces in layout.values() for sh, w in pieces)
    for name, cnt in re.findall(r"(\w+)\((\d+)\)", rest):
      if name not in layout: raise Untranslatable(text, f"counter {name}")
      n, at = int(cnt), 0
      for sh, w in layout[name]:
        val = (val & ~(((1 << w) - 1) << sh)) | (((n >> at) & ((1 << w) - 1)) << sh)
        at += w
    return self.ins.s_waitcnt(simm16=val)

  def _smem(self, text, mnem, cls, op, ops, mods, form):
    names = self._fields(op, ["sdata", "sbase"])
    kw = {n: self.operand(t).val for n, t in zip(names, ops)}
    off_field = "ioffset" if self.family == "rdna4" else "offset"
    rest = ops[len(names):]
    if len(rest) > 1: raise ValueError(f"{len(ops)} operands")
    imm = _int(mods.pop("offset")) if "offset" in mods else None
    for k in ("glc", "dlc", "nv"):
      if k in mods: kw[k] = mods.pop(k)
    if self.family == "rdna4":
      for k in ("th", "scope"):
        if k in mods: raise ValueError(f"modifier {k}")
    if mods: raise ValueError(f"modifiers {sorted(mods)}")
    if rest and re.fullmatch(r"-?(0x[0-9a-fA-F]+|\d+)", rest[0]):
      if imm is not None: raise ValueError("two offsets")
      imm, rest = _int(rest[0]), []
    sreg = self.operand(rest[0]).val if rest else None
    if self.cdna:  # gfx9: imm=1 -> offset is an immediate; imm=0 -> offset holds an SGPR number; soffset_en adds soffset
      if sreg is not None and imm is None: kw.update(offset=sreg.offset)
      elif sreg is not None: kw.update(imm=1, soffset_en=1, soffset=sreg, offset=imm & 0x1fffff)
      else: kw.update(imm=1, offset=(imm or 0) & 0x1fffff)
    else:
      if sreg is not None: kw["soffset"] = sreg
      if imm is not None: kw[off_field] = imm & (0xffffff if self.family == "rdna4" else 0x1fffff)
    return self._build(cls, op, kw)

  # ** vector ALU
  def _vop1(self, text, mnem, cls, op, ops, mods, form):
    names = self._fields(op, ["vdst", "src0"])
    if form: return self._dpp_sdwa(text, cls, op, names, ops, mods, form)
    if mods: raise ValueError(f"modifiers {sorted(mods)}")
    if len(ops) != len(names): raise ValueError(f"{len(ops)} operands for {names}")
    return self._vop_e32(cls, op, names, ops)

  def _vop_e32(self, cls, op, names, ops, lit:int|None=None) -> Inst:
    vals = {n: self.operand(t) for n, t in zip(names, ops)}
    kw = {n: self._src_value(o, op, n) for n, o in vals.items()}
    return self._build(cls, op, kw, lit)

  def _vop2(self, text, mnem, cls, op, ops, mods, form):
    name = op.name.lower()
    carry_out = "_co_" in name and ops and ops[1] in ("vcc", "vcc_lo")
    carry_in = any(k in name for k in ("_ci_", "addc", "subb", "cndmask")) and ops and ops[-1] in ("vcc", "vcc_lo")
    if carry_out: ops = ops[:1] + ops[2:]
    if carry_in: ops = ops[:-1]
    names = ["vdst", "src0", "vsrc1"]
    if form: return self._dpp_sdwa(text, cls, op, names, ops, mods, form)
    if mods: raise ValueError(f"modifiers {sorted(mods)}")
    if "fmamk" in name or "madmk" in name:  # vdst, src0, K, vsrc1
      if len(ops) != 4: raise ValueError("fmamk needs 4 operands")
      return self._vop_e32(cls, op, names, [ops[0], ops[1], ops[3]], lit=_int(ops[2]))
    if "fmaak" in name or "madak" in name:  # vdst, src0, vsrc1, K
      if len(ops) != 4: raise ValueError("fmaak needs 4 operands")
      return self._vop_e32(cls, op, names, ops[:3], lit=_int(ops[3]))
    if len(ops) != 3: raise ValueError(f"{len(ops)} operands for {names}")
    return self._vop_e32(cls, op, names, ops)

  def _vopc(self, text, mnem, cls, op, ops, mods, form):
    if form == "_sdwa" and ops and ops[0] not in ("vcc", "vcc_lo") and len(ops) == 3:
      sd = self.operand(ops[0]).val
      return self._dpp_sdwa(text, cls, op, ["src0", "vsrc1"], ops[1:], mods, form, sdst=sd)
    if len(ops) == 3: ops = ops[1:]  # vcc (or the SDWA default vcc) is implicit
    if form: return self._dpp_sdwa(text, cls, op, ["src0", "vsrc1"], ops, mods, form)
    if mods: raise ValueError(f"modifiers {sorted(mods)}")
    if len(ops) != 2: raise ValueError(f"{len(ops)} operands")
    return self._vop_e32(cls, op, ["src0", "vsrc1"], ops)

  def _vop3(self, text, mnem, cls, op, ops, mods, form):
    if form: raise Untranslatable(text, f"VOP3 {form[1:]} form")
    # destinations first (vdst, then sdst for VOP3SD), then up to three sources; the wheel's operand tables are not used for the
    # count because rdna4's tables name VOP3 src0 `vsrc0`
    dsts = ["vdst", "sdst"] if cls.__name__.startswith("VOP3SD") else ["vdst"]
    kw: dict[str, Any] = {}
    if "cmpx" in op.name.lower() and not self.cdna:  # v_cmpx_*_e64 on gfx10+: EXEC_LO is the destination and is not printed
      kw["vdst"], dsts = SRC[126], []
    srcs = ["src0", "src1", "src2"][:len(ops) - len(dsts)]
    if len(ops) < len(dsts) or len(ops) > len(dsts) + 3: raise ValueError(f"{len(ops)} operands")
    for n, t in zip(dsts, ops): kw[n] = self.operand(t).val
    lit = None
    for n, t in zip(srcs, ops[len(dsts):]):
      o = self.operand(t)
      if not isinstance(o.val, Reg) and o.code == 255:
        if lit is not None and lit != o.val & 0xffffffff: raise ValueError("two different literals")
        lit = o.val & 0xffffffff
      kw[n] = self._src_value(o, op, n)
    if cls.__name__.startswith("VOP3P"): self._vop3p_mods(kw, mods, "_mix" in op.name.lower())
    else: self._vop3_mods(kw, mods, cls)
    return self._build(cls, op, kw)

  _vop3sd = _vop3p = _vop3

  def _vop3p_mods(self, kw:dict, mods:dict, mix:bool) -> None:
    if "op_sel" in mods: kw["opsel"] = _bits(mods.pop("op_sel"))
    # v_fma_mix*/v_mad_mix*: op_sel_hi picks f16 (1) or f32 (0) per source and LLVM's text omits it when all are f32, while the
    # DSL's VOP3P default is the packed-math one (all 1s)
    if mix and "op_sel_hi" not in mods: kw["opsel_hi"], kw["opsel_hi2"] = 0, 0
    if "op_sel_hi" in mods:  # two entries for two-source ops: src2's bit keeps its default (1), as LLVM encodes it
      sel = mods.pop("op_sel_hi")
      b = _bits(sel)
      kw["opsel_hi"] = b & 3
      if sel.count(",") == 2: kw["opsel_hi2"] = (b >> 2) & 1
    if "neg_lo" in mods: kw["neg"] = _bits(mods.pop("neg_lo"))
    if "neg_hi" in mods: kw["neg_hi"] = _bits(mods.pop("neg_hi"))
    if "clamp" in mods: kw["clmp"] = mods.pop("clamp")
    if mods: raise ValueError(f"modifiers {sorted(mods)}")

  def _dpp_sdwa(self, text:str, cls, op, names:list[str], ops:list[str], mods:dict, form:str, sdst:Reg|None=None) -> Inst:
    """VOP1/VOP2/VOPC in DPP16, DPP8 (RDNA) or SDWA (CDNA) form: src0 is the variant's marker and the real operands move to the
    variant's own fields."""
    if len(ops) != len(names): raise ValueError(f"{len(ops)} operands for {names}")
    vals = {n: self.operand(t) for n, t in zip(names, ops)}
    kw: dict[str, Any] = {}
    if "vdst" in vals: kw["vdst"] = vals["vdst"].val
    s0, s1 = vals["src0"], vals.get("vsrc1")
    base = cls.__name__
    if form == "_sdwa":
      suffix = "_SDWA_SDST" if base == "VOPC" else "_SDWA"
      var = self._variant(cls, suffix)
      if var is None: raise Untranslatable(text, f"no {base}{suffix} class")
      for i, o in ((0, s0), (1, s1)):
        if o is None: continue
        code = o.code
        if code == 255: raise ValueError("literal in SDWA")
        r = o.val if isinstance(o.val, Reg) else None
        kw[f"vsrc{i}"] = VGPR[code - 256] if code >= 256 else VGPR[code]   # an SGPR/constant source sets the S bit
        kw[f"s{i}"] = int(code < 256)
        if r is not None and r.neg: kw[f"src{i}_neg"] = 1
        if r is not None and r.abs_: kw[f"src{i}_abs"] = 1
        if o.sext: kw[f"src{i}_sext"] = 1
      for k in ("dst_sel", "src0_sel", "src1_sel")[1 if base == "VOPC" else 0:2 if base == "VOP1" else 3]:
        kw[k] = _SDWA_SEL[mods.pop(k)] if k in mods else 6
      if "dst_unused" in mods: kw["dst_unused"] = _SDWA_UNUSED[mods.pop("dst_unused")]
      if "clamp" in mods: kw["clmp"] = mods.pop("clamp")
      if "mul" in mods: kw["omod"] = {"2": 1, "4": 2}[mods.pop("mul")]
      if "div" in mods: kw["omod"] = {"2": 3}[mods.pop("div")]
      if sdst is not None: kw.update(sd=1, sdst=sdst)
      if mods: raise ValueError(f"modifiers {sorted(mods)}")
      kw["src0"] = SRC[249]
      return var(op, **kw)
    if s0.code < 256: raise ValueError("DPP src0 must be a VGPR")
    if s1 is not None: kw["vsrc1"] = s1.val if s1.code >= 256 else VGPR[s1.code]
    kw["vsrc0"] = Reg(s0.val.offset, s0.val.sz)
    if form == "_dpp8":
      var = self._variant(cls, "_DPP8")
      sel = [int(x) for x in mods.pop("dpp8").strip("[]").split(",")]
      for i, x in enumerate(sel): kw[f"lane_sel_{i}"] = x
      fi = int(mods.pop("fi", "0"))
      if mods or var is None: raise ValueError(f"DPP8 {sorted(mods)}")
      kw["src0"] = SRC[234 if fi else 233]
      return var(op, **kw)
    var = self._variant(cls, "_DPP16")
    if var is None: raise Untranslatable(text, f"no {base}_DPP16 class")
    ctrl = None
    if "quad_perm" in mods: ctrl = sum(int(x) << (2 * i) for i, x in enumerate(mods.pop("quad_perm").strip("[]").split(",")))
    for k, b in _DPP_ROW.items():
      if k in mods: ctrl = b + _int(mods.pop(k))
    for k in ("wave_shl", "wave_rol", "wave_shr", "wave_ror", "row_bcast"):
      if k in mods: ctrl = _DPP_FIXED[f"{k}:{mods.pop(k)}"]
    if "dpp_ctrl" in mods: ctrl = int(mods.pop("dpp_ctrl"))
    if ctrl is None: raise ValueError("no DPP control")
    kw.update(dpp=ctrl, row_mask=_int(mods.pop("row_mask", "0xf")), bank_mask=_int(mods.pop("bank_mask", "0xf")))
    if "bound_ctrl" in mods: kw["bc"], _ = 1, mods.pop("bound_ctrl")   # LLVM prints bound_ctrl:1 (older syntax: bound_ctrl:0)
    if "fi" in mods: kw["fi"] = int(mods.pop("fi"))
    for i, o in ((0, s0), (1, s1)):
      if o is not None and isinstance(o.val, Reg):
        if o.val.neg: kw[f"src{i}_neg"] = 1
        if o.val.abs_: kw[f"src{i}_abs"] = 1
    if mods: raise ValueError(f"modifiers {sorted(mods)}")
    kw["src0"] = SRC[250]
    return var(op, **kw)

  def _vopd(self, text:str) -> Inst:
    halves = [h.strip() for h in text.split("::")]
    if len(halves) != 2: raise ValueError("VOPD needs two halves")
    kw: dict[str, Any] = {}
    lit = None
    for half, (d, s0, s1) in zip(halves, (("vdstx", "srcx0", "vsrcx1"), ("vdsty", "srcy0", "vsrcy1"))):
      mnem, _, rest = half.partition(" ")
      ops = _split(rest, ", ")
      ctor = getattr(self.ins, mnem, None)
      if not isinstance(ctor, functools.partial): raise Untranslatable(text, f"no VOPD op {mnem}")
      kw["opx" if d == "vdstx" else "opy"] = ctor.args[0]
      if "fmamk" in mnem: ops, k = [ops[0], ops[1], ops[3]], ops[2]
      elif "fmaak" in mnem: ops, k = ops[:3], ops[3]
      else: k = None
      if k is not None:
        if lit is not None and lit != _int(k) & 0xffffffff: raise ValueError("two different literals")
        lit = _int(k) & 0xffffffff
      if not 2 <= len(ops) <= 3: raise ValueError(f"{len(ops)} operands in {half}")
      kw[d] = self.operand(ops[0]).val
      o = self.operand(ops[1])
      if o.code == 255:
        if lit is not None and lit != o.val & 0xffffffff: raise ValueError("two different literals")
        lit = o.val & 0xffffffff
      kw[s0] = o.val
      if len(ops) == 3: kw[s1] = self.operand(ops[2]).val
    cls = self.ins.VOPD_LIT if lit is not None else self.ins.VOPD
    if lit is not None: kw["literal"] = lit
    return cls(**kw)

  # ** memory
  def _ds(self, text, mnem, cls, op, ops, mods, form):
    names = self._fields(op, ["vdst", "addr", "data0", "data1"])
    if len(ops) != len(names): raise ValueError(f"{len(ops)} operands for {names}")
    kw: dict[str, Any] = {n: self.operand(t).val for n, t in zip(names, ops)}
    if "offset" in mods:
      off = _int(mods.pop("offset"))
      kw.update(offset0=off & 0xff, offset1=off >> 8)
    for k in ("offset0", "offset1"):
      if k in mods: kw[k] = _int(mods.pop(k))
    if "gds" in mods: kw["gds"] = mods.pop("gds")
    if mods: raise ValueError(f"modifiers {sorted(mods)}")
    return self._build(cls, op, kw)

  def _flat(self, text, mnem, cls, op, ops, mods, form):
    have = OPERANDS.get(op, {})
    names = [n for n in ("vdst", "addr", "data", "saddr") if n in have or n == "saddr" and cls.__name__ != "FLAT"]
    if cls.__name__ == "FLAT": names = [n for n in names if n != "saddr"]
    if len(ops) != len(names): raise ValueError(f"{len(ops)} operands for {names}")
    kw: dict[str, Any] = {}
    for n, t in zip(names, ops): kw[n] = SRC[124] if t == "off" else self.operand(t).val
    if "offset" in mods: kw["offset"] = _int(mods.pop("offset"))
    for k in ("glc", "slc", "dlc", "sc0", "sc1", "nt"):
      if k in mods: kw[k] = mods.pop(k)
    if mods: raise ValueError(f"modifiers {sorted(mods)}")
    return self._build(cls, op, kw)

  _global = _flat
  _scratch = _flat

  def _vglobal(self, text, mnem, cls, op, ops, mods, form):
    have = OPERANDS.get(op, {})
    names = [n for n in ("vdst", "vaddr", "vsrc", "saddr") if n in have or n == "saddr" and cls.__name__ != "VFLAT"]
    if len(ops) != len(names): raise ValueError(f"{len(ops)} operands for {names}")
    kw: dict[str, Any] = {n: SRC[124] if t == "off" else self.operand(t).val for n, t in zip(names, ops)}
    if "offset" in mods: kw["ioffset"] = _int(mods.pop("offset")) & 0xffffff
    if mods: raise ValueError(f"modifiers {sorted(mods)}")
    return self._build(cls, op, kw)

  _vflat = _vglobal
  _vscratch = _vglobal
