"""Target `encoding.{rdna3,rdna4,cdna}`: random valid encodings of every format and opcode in the wheel's AMD tables.

Properties, per case (raw field values of one instruction class):
  decode_inst(bytes) gives the generated opcode  (else `wheel-decode-error` / `wheel-wrong-op`: the wheel's decoder or tables)
  decode -> to_bytes is byte-identical           (else `wheel-roundtrip`)
  LLVM's MC disassembler accepts the bytes       (else `llvm-rejects`: unencodable per LLVM, or an opcode LLVM lacks)
  LLVM consumes the same number of bytes         (else `size-mismatch`)
  LLVM's mnemonic names the same opcode          (else `mnemonic-mismatch`)
  LLVM's register operands are the wheel's        (else `operand-mismatch`: LLVM's text, assembled back through tinygrad's DSL by
                                                   fuzz.amd_asm and decoded, names other registers in the operand-table fields)
LLVM is asked for the emulator's CPU (gfx1100, gfx1201, gfx942) and, if that disagrees, for the sibling whose ISA the tables also
describe (gfx1151: RDNA3.5 SALU float ops; gfx950: CDNA4 ops); agreement with either passes.
"""
from __future__ import annotations
import functools, random, re
from tinygrad.renderer.amd import decode_inst
from tinygrad.renderer.amd.dsl import OPERANDS, FixedBitField
from fuzz import llvm_mc
from fuzz.amd_asm import Translator, Untranslatable
from fuzz.amd_exec import operand_info
from fuzz.amd_fields import ARCHS, inst_classes, ops_of, random_fields, encode_fields, canonical, default_raw, is_marker
from fuzz.finding import Finding
from fuzz.registry import Target, register
from fuzz.shrink import greedy

CPUS = {"rdna3": ("gfx1100", "gfx1151"), "rdna4": ("gfx1201",), "cdna": ("gfx942", "gfx950")}
SUFFIXES = ("_e64_dpp", "_e32", "_e64", "_dpp", "_sdwa")

def generate(arch:str, rng:random.Random) -> dict:
  """A case: {arch, cls, op, fields} with one class and opcode drawn uniformly, operands edge-biased."""
  cls = inst_classes(arch)[cname:=rng.choice(sorted(inst_classes(arch)))]
  op = rng.choice(ops_of(cls))
  return {"arch": arch, "cls": cname, "op": op.name if op is not None else None, "fields": random_fields(rng, arch, cls, op)}

def case_bytes(case:dict) -> bytes:
  """The instruction bytes a case encodes."""
  return encode_fields(inst_classes(case["arch"])[case["cls"]], case["fields"])

def strip_suffix(m:str) -> str:
  """A mnemonic without its encoding suffix (_e32/_e64/_dpp/_sdwa): LLVM drops _e32 on DPP forms, the wheel's names keep _e32/_e64."""
  return next((m[:-len(s)] for s in SUFFIXES if m.endswith(s)), m)

def llvm_name(text:str) -> str:
  """LLVM's opcode name for a disassembly line; VOPD gives 'x::y'."""
  if "::" in text: return "::".join(llvm_name(part.strip()) for part in text.split("::"))
  return strip_suffix(llvm_mc.mnemonic(text))

def wheel_name(inst) -> str:
  """The decoded instruction's opcode name(s), spelled as llvm_name spells them."""
  if hasattr(inst, "opx"): return f"{strip_suffix(inst.opx.name.lower())}::{strip_suffix(inst.opy.name.lower())}"
  return strip_suffix(inst.op.name.lower())

def check(case:dict) -> None:
  """Raise a Finding when the decoder, the encoder and LLVM do not all agree on the case's bytes."""
  arch, cname, data = case["arch"], case["cls"], case_bytes(case)
  where = f"{arch} {cname} {case['op']} bytes={data.hex()}"
  try: inst = decode_inst(data, arch)
  except Exception as e: raise Finding("wheel-decode-error", f"{where}: {type(e).__name__}: {e}", key=(arch, cname)) from None
  if case["op"] is not None and getattr(inst, "op", getattr(inst, "opx", None)).name != case["op"]:
    raise Finding("wheel-wrong-op", f"{where}: decoded as {type(inst).__name__} {wheel_name(inst)}", key=(arch, cname, type(inst).__name__))
  if (enc:=inst.to_bytes()) != data:
    raise Finding("wheel-roundtrip", f"{where}: decoded as {type(inst).__name__}, re-encoded {enc.hex()}", key=(arch, cname, type(inst).__name__))
  answers = [(cpu, *llvm_mc.Disassembler.get(cpu).disasm(data)) for cpu in CPUS[arch]]
  agree = [(c, t) for c, n, t in answers if n == len(data) and llvm_name(t) == wheel_name(inst)]
  if agree: return check_operands(case, data, inst, *agree[0])
  cpu, n, text = answers[0]
  said = "; ".join(f"{c}: {t or 'rejected'} ({k} bytes)" for c, k, t in answers)
  if all(k == 0 for _, k, _ in answers):
    plain = encode_fields(cls:=inst_classes(arch)[cname], canonical(cls, case["fields"]))
    if any(llvm_mc.Disassembler.get(c).disasm(plain)[0] for c in CPUS[arch]):
      raise Finding("llvm-rejects-operands", f"{where}: wheel {wheel_name(inst)}; LLVM {said}; accepts plain {plain.hex()}", key=(arch, cname))
    raise Finding("llvm-rejects-opcode", f"{where}: wheel {wheel_name(inst)}; LLVM {said}, plain {plain.hex()} too", key=(arch, cname))
  if all(k in (0, len(data)) for _, k, _ in answers):
    cpu, n, text = next(a for a in answers if a[1])
    raise Finding("mnemonic-mismatch", f"{where}: wheel {wheel_name(inst)}; LLVM {said}", key=(arch, wheel_name(inst), llvm_name(text)))
  raise Finding("size-mismatch", f"{where}: wheel {len(data)} bytes {wheel_name(inst)}; LLVM {said}", key=(arch, cname))

@functools.cache
def translator(cpu:str) -> Translator: return Translator(cpu)

def registers(inst) -> dict[str, int]:
  """The register operands of a decoded instruction: field -> register code (SGPR/VCC/TTMP/M0/EXEC below 128, VGPRs from 256) of
  the fields its opcode's operand table lists (fields an opcode ignores may hold anything); constants and literals left out (LLVM
  prints their value, which may re-encode as another constant code)."""
  info, out = OPERANDS.get(getattr(inst, "op", None), {}), {}
  for name, f in inst._fields:
    if isinstance(f, FixedBitField) or name in ("op", "opx", "opy") or operand_info(info, name) is None: continue
    v = getattr(inst, name)
    code = getattr(v, "offset", None)
    if code is not None and (code < 128 or code >= 256): out[name] = code
  return out

def check_operands(case:dict, data:bytes, inst, cpu:str, text:str) -> None:
  """LLVM's register operands agree with the wheel's fields: LLVM's text, assembled back by tinygrad's DSL (fuzz.amd_asm) and
  decoded, names the same registers in the same fields (else `operand-mismatch`). Lines the translator cannot express, and operands
  the DSL cannot build (tinygrad bugs the asm.* targets report), are not judged here."""
  if "Warning" in text: return   # LLVM flags the encoding itself (unaligned register tuples the hardware rounds down)
  if re.search(r"v\d+\.h\b", text): return   # the DSL drops `.h` on true16 e32 sources (tests/fuzz/test_asm.py): no round trip
  try: back = decode_inst(translator(cpu).translate(text).to_bytes(), case["arch"])
  except (Untranslatable, TypeError, ValueError, AssertionError, AttributeError): return
  want, got = registers(inst), registers(back)
  if case["op"].startswith("V_CMPX_"): want.pop("vdst", None); got.pop("vdst", None)   # e64 v_cmpx writes EXEC; VDST is ignored
  if case["arch"] == "cdna" and "SMEM" in case["cls"]:   # gfx9 SMEM: LLVM prints one offset operand for the IMM/SOFFSET_EN forms
    want.pop("soffset", None); got.pop("soffset", None)
  if (diff := sorted(k for k in want.keys() | got.keys() if want.get(k) != got.get(k))):
    raise Finding("operand-mismatch", f"{case['arch']} {case['cls']} {case['op']} bytes={data.hex()}: LLVM ({cpu}) `{text}`: "
                  + ", ".join(f"{k} wheel {want.get(k)} LLVM {got.get(k)}" for k in diff), key=(case["arch"], case["cls"], *diff))

def simpler(case:dict):
  """Candidates with one field moved to its default or zero (the opcode and variant markers stay)."""
  cls, fields = inst_classes(case["arch"])[case["cls"]], case["fields"]
  for name, f in cls._fields:
    if isinstance(f, FixedBitField) or name in ("op", "opx") or is_marker(cls, name, fields[name]): continue
    for val in (default_raw(f), 0):
      if fields[name] != val: yield {**case, "fields": {**fields, name: val}}

def minimise(case:dict, fails) -> dict:
  """Zero fields one at a time while the same finding persists."""
  return greedy(case, fails, simpler)

for _arch in ARCHS:
  register(Target(f"encoding.{_arch}", lambda rng, a=_arch: generate(a, rng), check, minimise,
                  doc=f"{_arch} encodings: decode/encode round trip and LLVM MC ({', '.join(CPUS[_arch])}) mnemonic and register agreement"))
