"""decode.detect is the wheel's format detection (tinygrad.renderer.amd.detect_format) read as data: for any bytes it must pick the
class the wheel picks, or fail where the wheel fails. Checked on instructions of every encoding class of each family (their fixed
fields and an allowed opcode set, the rest random; src0 also at the SDWA/DPP16 markers), on truncated ones, and on random words.
decode.from_bytes must build the instruction (class and bits) the wheel's Inst.from_bytes builds, moving a class to its literal or
DPP/SDWA variant exactly when the wheel does. The wheel's detect_format and from_bytes are the references."""
import random
import pytest
from tinygrad.renderer.amd import detect_format
from tinygrad.renderer.amd.dsl import SrcField
from emu.amd.decode import detect, from_bytes
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

@pytest.mark.parametrize("arch", ["gfx1100", "gfx1201", "gfx942"])
def test_from_bytes_builds_the_wheels_instruction(arch):
  # every class (variants too), with the marker codes (255 literal, 250 DPP16, 249 DPP8/SDWA) in random source fields
  rng, moved = random.Random(arch), set()
  for cls in classes(arch):
    srcs = [f for _, f in cls._fields if isinstance(f, SrcField)]
    for _ in range(30):
      raw = random_instruction(cls, rng)._raw
      for f in rng.sample(srcs, min(len(srcs), rng.choice((0, 1, 2)))):
        raw = (raw & ~(f.mask << f.lo)) | (((rng.choice((249, 250, 255)) - f._valid_range[0]) & f.mask) << f.lo)
      data = raw.to_bytes(cls._base_size, "little") + rng.getrandbits(64).to_bytes(8, "little")
      want, got = cls.from_bytes(data), from_bytes(cls, data)
      assert (type(got), got._raw) == (type(want), want._raw), f"{cls.__name__} {data.hex()}"
      if type(want) is not cls: moved.add(type(want).__name__)
  assert any(n.endswith("_LIT") for n in moved) and any(n.endswith(("_DPP16", "_SDWA")) for n in moved)
