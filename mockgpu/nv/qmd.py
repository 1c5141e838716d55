"""QMD (queue meta data, v3: 0x40 dwords, Ampere/Ada compute classes) decoding with the wheel's own field definitions
(tinygrad.runtime.autogen.nv_570's NVC6C0_QMDV03_00_* (hi, lo) bit ranges; indexed fields are functions of the index), so no
offset is hard-coded here. `Launch.read` gives what the compute engine needs to run one grid."""
from __future__ import annotations
from dataclasses import dataclass
from functools import cache

PREFIX = "NVC6C0_QMDV03_00_"
QMD_BYTES = 0x40 * 4

@cache
def fields() -> dict[str, tuple[int, int]]:
  """Field name (lower case, indexed ones with _<i> for i < 8) -> (hi bit, lo bit) of QMD v3."""
  from tinygrad.runtime.autogen import nv_570 as nv
  out = {}
  for name, v in vars(nv).items():
    if not name.startswith(PREFIX): continue
    key = name[len(PREFIX):].lower()
    if isinstance(v, tuple): out[key] = v
    elif callable(v):
      for i in range(8): out[f"{key}_{i}"] = v(i)
  return out

def field(qmd:bytes, name:str) -> int:
  """The value of QMD field `name` in the raw QMD bytes."""
  hi, lo = fields()[name]
  return (int.from_bytes(qmd[lo // 8: hi // 8 + 1], "little") >> (lo % 8)) & ((1 << (hi - lo + 1)) - 1)

@dataclass(frozen=True)
class Release:
  """A semaphore release the launch performs when it completes: `payload` at `address` (and the timestamp at +8)."""
  address: int
  payload: int

@dataclass(frozen=True)
class Launch:
  """One compute launch: program address (PTX text in mock mode), grid and block sizes, constant buffer 0 (address, bytes),
  the releases to perform after it and the QMD chained after it (its address, or None)."""
  program: int
  grid: tuple[int, int, int]
  block: tuple[int, int, int]
  cbuf0: tuple[int, int]
  releases: tuple[Release, ...]
  dependent: int | None

  @staticmethod
  def read(qmd:bytes) -> Launch:
    """Decode raw QMD bytes; ValueError (naming the field) for a QMD the mock cannot run."""
    if len(qmd) < QMD_BYTES: raise ValueError(f"a QMD is {QMD_BYTES} bytes, got {len(qmd)}")
    f = lambda n: field(qmd, n)  # noqa: E731
    if (ver := f("qmd_major_version")) != 3: raise ValueError(f"QMD major version {ver}: the mock reads version 3 (Ampere/Ada compute)")
    if not f("constant_buffer_valid_0"): raise ValueError("QMD constant buffer 0 is not valid (constant_buffer_valid_0 = 0)")
    releases = tuple(Release(f(f"release{i}_address_lower") | f(f"release{i}_address_upper") << 32,
                             f(f"release{i}_payload_lower") | f(f"release{i}_payload_upper") << 32) for i in range(2) if f(f"release{i}_enable"))
    return Launch(f("program_address_lower") | f("program_address_upper") << 32,
                  (f("cta_raster_width"), f("cta_raster_height"), f("cta_raster_depth")),
                  (f("cta_thread_dimension0"), f("cta_thread_dimension1"), f("cta_thread_dimension2")),
                  (f("constant_buffer_addr_lower_0") | f("constant_buffer_addr_upper_0") << 32, f("constant_buffer_size_shifted4_0")),
                  releases, f("dependent_qmd0_pointer") << 8 if f("dependent_qmd0_enable") else None)
