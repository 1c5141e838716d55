"""decode.detect is the wheel's format detection (tinygrad.renderer.amd.detect_format) read as data: for any bytes it must pick the
class the wheel picks, or fail where the wheel fails. Checked on instructions of every encoding class of each family (their fixed
fields and an allowed opcode set, the rest random; src0 also at the SDWA/DPP16 markers), on truncated ones, and on random words.
The wheel's detect_format is the reference."""
import random
import pytest
from tinygrad.renderer.amd import detect_format
from emu.amd.decode import detect
from test_field_codes import classes, random_instruction

def wheel(data:bytes, family:str):
  try: return detect_format(data, family)
  except (ValueError, AssertionError): return None

def ours(data:bytes, family:str):
  try: return detect(data, family)
  except ValueError: return None

@pytest.mark.parametrize("arch,family", [("gfx1100", "rdna3"), ("gfx1201", "rdna4"), ("gfx942", "cdna")])
def test_detect_picks_the_wheels_class(arch, family):
  rng, seen = random.Random(family), set()
  cases = [rng.getrandbits(128).to_bytes(16, "little") for _ in range(2000)]
  for cls in classes(arch):
    for _ in range(30):
      data = bytearray(random_instruction(cls, rng)._raw.to_bytes(cls._base_size, "little") + rng.getrandbits(128).to_bytes(16, "little"))
      if rng.random() < 0.3: data[0], data[1] = rng.choice((0xf9, 0xfa)), data[1] & 0xfe   # src0 at a variant marker
      cases += [bytes(data[:16]), bytes(data[:rng.choice((4, 8, 12))])]
  for data in cases:
    want = wheel(data, family)
    assert ours(data, family) is want, f"{family} {data.hex()}: wheel {want}"
    seen.add(want)
  assert len(seen) > 15   # most of the family's classes were picked by some case
