"""Every opcode of every table set, once: one exec case per (class, opcode) the exec targets run, drawn from a seed derived from
the names, checked against all exec properties (no host exception, determinism, only declared destinations written, inactive
lanes kept, swaps exchange, faults and memory as the ISA says). Random fuzzing reaches an opcode only by chance; this sweep
reaches each one on every run. Encodings LLVM rejects (the generator could not find a valid one for the forced opcode) are
left out (mostly class/opcode pairs that do not exist, such as SOPK_LIT forms of the SOPK ops without a literal); the sweep must
still cover most of them (measured: rdna3 3,595 of 4,055 pairs, rdna4 3,466 of 4,042, cdna 2,411 of 2,696)."""
import random, zlib
import pytest
from fuzz import amd_exec
from fuzz.finding import Finding
from fuzz.targets import exec as exec_target

@pytest.mark.parametrize("arch", exec_target.ARCHS)
def test_every_opcode_passes_the_exec_properties_once(arch):
  checked, skipped, findings = 0, 0, []
  for cname in amd_exec.exec_classes(arch) + amd_exec.more_classes(arch):
    for op in amd_exec.usable_ops(arch, cname):
      case = amd_exec.generate(arch, random.Random(zlib.crc32(f"{cname}.{op.name}".encode())), classes=[cname], ops={op.name})
      if case["op"] != op.name or not amd_exec.llvm_valid(case):
        skipped += 1
        continue
      checked += 1
      try: exec_target.check(case)
      except Finding as f: findings.append(f"{cname} {op.name}: {f}")
  assert not findings, findings[:10]
  assert checked >= 0.8 * (checked + skipped), (checked, skipped)
