"""Per-architecture data: register numbering, wave sizes, launch-state placement and ISA table modules.

Everything that differs between AMD generations lives here as data, so executors never test `arch == ...`.
"""
from __future__ import annotations
import importlib
from dataclasses import dataclass
from emu.amd.api import ARCHS

@dataclass(frozen=True)
class ArchSpec:
  """Facts about one gfx target the executors need."""
  name: str               # gfx target, e.g. 'gfx1100'
  family: str             # ISA table family in the wheel: 'rdna3' | 'rdna4' | 'cdna'
  null_reg: int           # scalar operand number of NULL (reads 0, writes dropped)
  m0_reg: int
  vcc_lo: int
  exec_lo: int
  n_sgprs: int            # addressable SGPRs s0..s(n-1)
  wave_sizes: tuple[int, ...]
  lds_granule: int        # bytes per RSRC2.LDS_SIZE unit
  max_lds: int            # LDS bytes per workgroup
  vgpr_granule32: int     # VGPRs per RSRC1.VGPRS unit in wave32 (wave64 halves it)
  wg_ids_in_ttmp: bool    # gfx12: workgroup ids in TTMP9/TTMP7 instead of SGPRs after the user SGPRs
  supported: bool         # the executors implement this arch
  # FLAT apertures (amdkfd's layout for gfx9+): 4 GiB windows of the flat address space that reach LDS / scratch
  shared_aperture: int = 1 << 48
  private_aperture: int = 2 << 48
  aperture_size: int = 1 << 32

  def aperture_values(self) -> dict[int, int]:
    """The 64-bit values of the source operands SRC_SHARED_BASE/LIMIT (235/236) and SRC_PRIVATE_BASE/LIMIT (237/238)."""
    return {235: self.shared_aperture, 236: self.shared_aperture + self.aperture_size - 1, 237: self.private_aperture,
            238: self.private_aperture + self.aperture_size - 1}

  @property
  def ins(self):
    """The wheel's instruction-format module (Inst subclasses and DSL helpers) for this arch."""
    return importlib.import_module(f"tinygrad.runtime.autogen.amd.{self.family}.ins")

  @property
  def enum(self):
    """The wheel's opcode enum module for this arch."""
    return importlib.import_module(f"tinygrad.runtime.autogen.amd.{self.family}.enum")

_RDNA = dict(null_reg=124, m0_reg=125, vcc_lo=106, exec_lo=126, n_sgprs=106, wave_sizes=(32, 64))
SPECS: dict[str, ArchSpec] = {
  "gfx1100": ArchSpec("gfx1100", "rdna3", **_RDNA, lds_granule=512, max_lds=65536, vgpr_granule32=8, wg_ids_in_ttmp=False, supported=True),
  "gfx1151": ArchSpec("gfx1151", "rdna3", **_RDNA, lds_granule=512, max_lds=65536, vgpr_granule32=8, wg_ids_in_ttmp=False, supported=True),
  "gfx1201": ArchSpec("gfx1201", "rdna4", **_RDNA, lds_granule=512, max_lds=65536, vgpr_granule32=8, wg_ids_in_ttmp=True, supported=False),
  "gfx942": ArchSpec("gfx942", "cdna", null_reg=125, m0_reg=124, vcc_lo=106, exec_lo=126, n_sgprs=102, wave_sizes=(64,), lds_granule=512,
                     max_lds=65536, vgpr_granule32=8, wg_ids_in_ttmp=False, supported=False),
  "gfx950": ArchSpec("gfx950", "cdna", null_reg=125, m0_reg=124, vcc_lo=106, exec_lo=126, n_sgprs=102, wave_sizes=(64,), lds_granule=512,
                     max_lds=163840, vgpr_granule32=8, wg_ids_in_ttmp=False, supported=False),
}
assert set(ARCHS) <= set(SPECS)

def get_spec(arch:str) -> ArchSpec:
  """The ArchSpec of a gfx target; raises ValueError for unknown or not-yet-implemented targets."""
  if (spec := SPECS.get(arch)) is None: raise ValueError(f"unknown AMD arch {arch!r}; known: {', '.join(SPECS)}")
  if not spec.supported: raise NotImplementedError(f"the AMD emulator does not implement {arch} ({spec.family}) yet")
  return spec
