"""`python -m emu.amd.card ARCH MNEMONIC`: one instruction's card: every encoding of the mnemonic on the arch as its
emu.amd.facts record (bytes with all fields zero, LLVM's disassembly, executor ownership and why, the step that runs it, the
timing model's class, port, cost and waits, the SQTT packet, native-region candidacy); then where its semantics come from
(the vendor pcode, a corrected text with the reason, a replacement, or the executor) and the generated code's operands (how
it reads each source, the integer clamp rule). Everything is read from the tables the emulator itself runs on."""
from __future__ import annotations
import argparse, sys
from emu.amd.arch import get_spec
from emu.amd.disasm import instruction_text
from emu.amd.facts import Facts, latency, of_mnemonic
from emu.amd.mnemonic import parse
from emu.amd.operands import int_clamp_formula

def record_lines(f:Facts) -> list[str]:
  """One encoding's lines of the card: bytes, disassembly, executor ownership, step, timing, SQTT packet, region candidacy."""
  lines = [f"--- encoding {f.encoding} {type(f.op).__name__}.{f.name} ({len(f.raw) * 8} bits, fields 0): {f.raw.hex()}"]
  if f.owned is not None: lines.append(f"    executor-owned ({f.owned.effect}): {f.owned.reason}")
  if f.problem: return lines + [f"    (with all fields 0 this encoding does not run: {f.problem})"]
  t = f.timing
  extra = "".join(f", {k} {getattr(t, k)}" for k in ("width", "dwords", "lds_cycles", "counter", "waits", "delay") if getattr(t, k))
  wait = latency(t, get_spec(f.arch).family)
  extra += f"; {wait[0]} issues {wait[1]} cycles after it" if wait else ""
  return lines + [f"    {instruction_text(f.instr, f.arch)}",
                  f"    step {type(f.step).__name__}; timing: class {t.cls}, port {t.port}, cost {t.cost}{extra}",
                  f"    SQTT: {f.sqtt or 'never reported'}; native regions: "
                  f"{'a candidate (its op may still lack a lowering)' if f.region else 'never (numpy path)'}"]

def oracle_entry(arch:str, name:str) -> str:
  """Which fuzz target holds the opcode to an independent reference (the fuzzers sit above emu: imported only here)."""
  from fuzz import oracle
  from fuzz.targets.oracle import base_name, covered_ops
  arch = get_spec(arch).family   # the fuzzers name the ISA family
  if name not in covered_ops(arch): return "no ISA-text oracle (the exec and stream targets hold it to fuzz.amd_exec's reference executor)"
  group = next(g for g, names in oracle.ORACLE_COVERAGE.items() if base_name(arch, name) in names)
  return f"oracle.{arch} holds it to fuzz/oracle.py ({group})"

def card(arch:str, mnemonic:str) -> str:
  """The card's text (see the module docstring); names the archs' encodings when the mnemonic has none here."""
  spec = get_spec(arch)
  m = parse(mnemonic)
  lines, ops = [f"=== {arch} ({spec.family}) {mnemonic.upper()}: prefix {m.prefix}, operation {m.operation}, types {', '.join(m.types) or '-'}"
                + (f", shape {'x'.join(map(str, m.shape))}" if m.shape else "")], {}
  found = of_mnemonic(arch, mnemonic)
  if not found: return lines[0] + f"\n(no encoding of {mnemonic.upper()} on {arch})"
  for f in found:
    lines += record_lines(f)
    ops.setdefault(f.name, f)
  from emu.pcode import compile_op
  for name, f in ops.items():
    lines.append(f"--- semantics of {name}: {f.semantics}")
    if f.semantics.startswith("none ("): continue
    c = compile_op(arch, f.op)
    lines.append(f"    {c.kind} op; reads {sorted(c.reads)}; writes {sorted(c.writes)}; widths {c.widths}")
    if c.views: lines.append("    operands viewed as " + ", ".join(f"{n} {'/'.join(sorted(k))}" for n, k in sorted(c.views.items()))
                             + " (a float-format source read only as an integer takes no neg/abs; one read only as a float is passed as"
                             " 32-bit bits)")
    lines.append(f"    fuzzing: {oracle_entry(arch, name)}")
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
