"""Decoded instructions are cached by their own bytes (and the bits of the next dwords the wheel's format detection reads), not by
the 16 bytes of code in view: the same instruction followed by other code must decode exactly as a fresh decode would."""
import numpy as np
import pytest
from tinygrad.runtime.support.elf import elf_loader
from emu.amd import decode as D
from emu.amd.arch import get_spec
from emu.amd.kernel import compile_kernel, llvm_available

def fresh(data:bytes, spec):
  saved = dict(D._cache), dict(D._sizes)
  D._cache.clear(); D._sizes.clear()
  try: return D.decode(data, spec)
  finally: D._cache.update(saved[0]); D._sizes.update(saved[1])

def view(i) -> tuple: return (i.fmt, i.variant, i.sdst_dest, i.size, i.raw, repr(i.inst))

def code_of(fn, shapes, arch) -> bytes:
  image, sections, _ = elf_loader(compile_kernel(fn, *shapes, arch=arch).lib)
  text = next(s for s in sections if s.name == ".text")
  return bytes(image[text.header.sh_addr:text.header.sh_addr + text.header.sh_size]) + b"\0" * 16

@pytest.mark.skipif(not llvm_available(), reason="needs libLLVM")
@pytest.mark.parametrize("arch", ["gfx1100", "gfx1201", "gfx942"])
def test_an_instruction_decodes_the_same_whatever_code_follows_it(arch):
  spec, rng = get_spec(arch), np.random.default_rng(0)
  code = code_of(lambda a, b: ((a * b).sin() + b.exp2()).sum(0), [(64, 48), (64, 48)], arch)
  pc, checked = 0, 0
  while pc < len(code) - 16:
    here = D.decode(code[pc:pc + 16], spec)   # cached with what really follows it
    if here.name == "s_code_end": break
    other = here.raw + rng.integers(0, 256, 16 - here.size, dtype=np.uint8).tobytes()
    assert view(D.decode(other, spec)) == view(fresh(other, spec)), here
    pc, checked = pc + here.size, checked + 1
  assert checked > 50

def test_cdna_detection_reads_the_next_instructions_third_dword():
  # gfx950's V_MFMA_SCALE_* is one 16-byte VOP3PX2 instruction: an 8-byte VOP3P word pair whose third dword holds the MFMA's
  # opcode and encoding. Its first 8 bytes followed by anything else decode as a VOP3P instruction of their own, and neither may be
  # taken for the other from the cache.
  from tinygrad.runtime.autogen.amd.cdna import ins
  spec = get_spec("gfx950")
  x2 = D.encode_fields(ins.VOP3PX2, {"op": ins.VOP3PX2Op.V_MFMA_SCALE_F32_16X16X128_F8F6F4.value})
  alone = x2[:8] + bytes(8)
  for first, second in ((x2, alone), (alone, x2)):
    D._cache.clear(); D._sizes.clear()
    D.decode(first, spec)
    assert view(D.decode(second, spec)) == view(fresh(second, spec))
  assert D.decode(x2, spec).size == 16 and D.decode(alone, spec).size < 16
