"""decode.code reads a register field's operand code from the instruction bits without the wheel's attribute read (which also
sizes the register from the operand table): it must give what the wheel's `getattr(inst, name).offset` gives for every field of
every encoding class of every family, including the aligned SGPR fields (SMEM's sbase, MUBUF's srsrc: stored shifted) and VOPD's
vdsty (stored halved, its low bit from vdstx). The wheel's attribute read is the reference."""
import random
import pytest
from tinygrad.renderer.amd.dsl import EnumBitField, FixedBitField, Inst, Reg
from emu.amd.arch import get_spec
from emu.amd.decode import code

def classes(family_arch:str) -> list[type[Inst]]:
  ins = get_spec(family_arch).ins
  return [c for c in vars(ins).values() if isinstance(c, type) and issubclass(c, Inst) and c is not Inst and c._fields]

def random_instruction(cls:type[Inst], rng:random.Random) -> Inst:
  """An instance of `cls` with random bits, its fixed fields at their values and its opcode fields at opcodes it allows."""
  raw = rng.getrandbits(8 * cls._base_size)
  for _, f in cls._fields:
    if isinstance(f, FixedBitField): val = f.default
    elif isinstance(f, EnumBitField): val = rng.choice(sorted(f.allowed or list(f._enum), key=lambda e: e.value)).value
    else: continue
    raw = (raw & ~(f.mask << f.lo)) | ((val & f.mask) << f.lo)
  inst = object.__new__(cls)
  inst._raw = raw
  return inst

@pytest.mark.parametrize("arch", ["gfx1100", "gfx1201", "gfx942"])
def test_code_is_the_wheels_register_offset(arch):
  rng, checked = random.Random(arch), set()
  for cls in classes(arch):
    for _ in range(40):
      inst = random_instruction(cls, rng)
      for name, _ in cls._fields:
        try: want = getattr(inst, name)
        except (ValueError, KeyError, RuntimeError): continue   # a field value the wheel's decoder refuses: nothing to compare
        want = want.offset if isinstance(want, Reg) else None
        assert code(inst, name) == want, f"{cls.__name__}.{name} raw={inst._raw:#x}"
        if want is not None: checked.add((cls.__name__, name))
  kinds = {n for _, n in checked}
  assert {"src0", "vdst", "sbase"} <= kinds and (arch != "gfx1100" or "vdsty" in kinds) and (arch != "gfx942" or "srsrc" in kinds)

def test_code_of_a_field_the_encoding_lacks_is_none():
  inst = random_instruction(get_spec("gfx1100").ins.SOPP, random.Random(0))
  assert code(inst, "vdst") is None and code(inst, "simm16") is None
