"""`python -m emu.amd.card ARCH MNEMONIC`: one instruction's card: every encoding of the mnemonic on the arch, with its
bytes (all fields zero), LLVM's disassembly, the executor step that runs it and the timing model's class, port and cost; then
where its semantics come from (the vendor pcode, a corrected text with the reason, a replacement, or the executor) and the
generated code's operands (how it reads each source, the integer clamp rule). Everything is read from the tables the emulator itself runs on."""
from __future__ import annotations
import argparse, sys
from tinygrad.renderer.amd.dsl import EnumBitField, Inst
from emu.amd import regions
from emu.amd.arch import get_spec
from emu.amd.decode import decode, encode_fields
from emu.amd.disasm import instruction_text
from emu.amd.mnemonic import parse
from emu.amd.operands import int_clamp_formula
from emu.amd.step_build import compile_step
from emu.amd.timing import classify

VARIANTS = ("_LIT", "DPP", "SDWA")   # encodings that only change how operands are given (shown once, through the base class)

def encodings(arch:str, mnemonic:str) -> list[tuple[str, type[Inst], object]]:
  """(class name, class, opcode) of every base encoding that carries `mnemonic` (or its _E32/_E64 form)."""
  spec, want = get_spec(arch), mnemonic.upper()
  out = []
  for cname, cls in sorted(vars(spec.ins).items()):
    if not (isinstance(cls, type) and issubclass(cls, Inst) and cls is not Inst) or any(v in cname for v in VARIANTS): continue
    f = dict(cls._fields).get("op")
    if not isinstance(f, EnumBitField): continue
    for op in (f.allowed if f.allowed is not None else f._enum):
      if op.name in (want, f"{want}_E32", f"{want}_E64") and op.value <= f.mask: out.append((cname, cls, op))
  return out

def card(arch:str, mnemonic:str) -> str:
  """The card's text (see the module docstring); names the archs' encodings when the mnemonic has none here."""
  from emu.pcode.__main__ import semantics
  spec = get_spec(arch)
  m = parse(mnemonic)
  lines, ops = [f"=== {arch} ({spec.family}) {mnemonic.upper()}: prefix {m.prefix}, operation {m.operation}, types {', '.join(m.types) or '-'}"
                + (f", shape {'x'.join(map(str, m.shape))}" if m.shape else "")], {}
  found = encodings(arch, mnemonic)
  if not found: return lines[0] + f"\n(no encoding of {mnemonic.upper()} on {arch})"
  for cname, cls, op in found:
    raw = encode_fields(cls, {"op": op.value})
    lines.append(f"--- encoding {cname} {type(op).__name__}.{op.name} ({len(raw) * 8} bits, fields 0): {raw.hex()}")
    try:
      instr = decode(raw, spec)
      step = compile_step(instr, spec, 0)
      t = classify(step)
      lines.append(f"    {instruction_text(instr, arch)}")
      extra = "".join(f", {k} {getattr(t, k)}" for k in ("width", "dwords", "lds_cycles", "counter", "waits") if getattr(t, k))
      lines.append(f"    step {type(step).__name__}; timing: class {t.cls}, port {t.port}, cost {t.cost}{extra}; "
                   f"native regions: {'a candidate (its op may still lack a lowering)' if regions.joins(step) else 'never (numpy path)'}")
    except Exception as e: lines.append(f"    (with all fields 0 this encoding does not run: {type(e).__name__}: {str(e).splitlines()[0][:120]})")
    ops.setdefault(op.name, op)
  from emu.pcode import compile_op
  for name, op in ops.items():
    c = compile_op(arch, op)
    lines.append(f"--- semantics of {name}: {semantics(arch, op, c)}")
    lines.append(f"    {c.kind} op; reads {sorted(c.reads)}; writes {sorted(c.writes)}; widths {c.widths}")
    if c.views: lines.append("    operands viewed as " + ", ".join(f"{n} {'/'.join(sorted(k))}" for n, k in sorted(c.views.items()))
                             + " (a float-format source read only as an integer takes no neg/abs; one read only as a float is passed as"
                             " 32-bit bits)")
    if (formula := int_clamp_formula(name)) is not None:
      lines.append(f"    integer clamp (CLMP): the exact {formula} saturated to {parse(name).types[0]} (emu.amd.operands.INT_CLAMP_OPS)")
  return "\n".join(lines)

def main(argv=None) -> int:
  ap = argparse.ArgumentParser(prog="python -m emu.amd.card", description=__doc__.split("\n\n")[0])
  ap.add_argument("arch")
  ap.add_argument("mnemonic")
  a = ap.parse_args(argv)
  print(card(a.arch, a.mnemonic))
  return 0

if __name__ == "__main__": sys.exit(main())
