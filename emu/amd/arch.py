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
  n_cus: int              # compute units of the board the arch stands for (one CPX partition on CDNA)
  clock_mhz: float        # its peak shader clock
  lds_per_cu: int         # LDS bytes per CU (what workgroups resident on one CU share)
  llvm_min: int           # the oldest LLVM whose AMDGPU processor table knows the target (to compile for it or disassemble it)
  ieee_mode: bool = True  # RSRC1 ENABLE_DX10_CLAMP (bit 21) / ENABLE_IEEE_MODE (bit 23) and MODE.IEEE exist (gfx6-gfx11, not gfx12)
  # FLAT apertures (amdkfd's layout for gfx9+): 4 GiB windows of the flat address space that reach LDS / scratch
  shared_aperture: int = 1 << 48
  private_aperture: int = 2 << 48
  aperture_size: int = 1 << 32
  # CDNA (gfx9) differences; the defaults are RDNA's
  simd_lanes: int = 32    # lanes one VALU pass covers: SIMD32 on RDNA, SIMD16 on CDNA (a wave64 VALU op takes 4 passes)
  dpp: str = "rdna"       # DPP flavour: 'rdna' (DPP16 + DPP8) or 'gfx9' (row/wave shifts, row broadcasts, no DPP8; plus SDWA)
  true16: bool = True     # VOP1/VOP2/VOPC 16-bit operands: v128+ name the high half of v0+ (RDNA); gfx9 has no such encoding
  n_agprs: int = 0        # accumulation VGPRs per lane (CDNA: 256, a separate file addressed by the acc bits and v_accvgpr_*)
  vop3_literal: bool = True   # VOP3/VOP3SD/VOP3P sources may be a literal dword (gfx10+); gfx9 has no such form (LLVM: FeatureVOP3Literal)
  zeroes_high16: bool = False  # gfx9: VOP1/VOP2/VOPC 16-bit results zero bits 31:16 (LLVM: zeroesHigh16BitsOfDest; cdna_operands.legacy_16bit)
  buffer_ops: bool = False     # MUBUF loads/stores/atomics are emulated (CDNA; RDNA3's MUBUF carries only cache invalidations here)
  # s_waitcnt simm16 layout: counter -> (bit offset, width) pieces, low bits first. gfx9 has no store counter of its own: its
  # vmcnt also counts stores, so the store counter 'vs' reads the same bits
  waitcnt: tuple = (("vm", ((10, 6),)), ("lgkm", ((4, 6),)), ("exp", ((0, 3),)))

  def aperture_values(self) -> dict[int, int]:
    """The 64-bit values of the source operands SRC_SHARED_BASE/LIMIT (235/236) and SRC_PRIVATE_BASE/LIMIT (237/238)."""
    return {235: self.shared_aperture, 236: self.shared_aperture + self.aperture_size - 1, 237: self.private_aperture,
            238: self.private_aperture + self.aperture_size - 1}

  def waitcnt_counts(self, simm16:int) -> dict[str, int]:
    """The counter limits an s_waitcnt immediate encodes, by counter name ('vm', 'lgkm', 'exp')."""
    return {name: sum(((simm16 >> lo) & ((1 << w) - 1)) << sum(pw for _, pw in pieces[:i]) for i, (lo, w) in enumerate(pieces))
            for name, pieces in self.waitcnt}

  @property
  def ins(self):
    """The wheel's instruction-format module (Inst subclasses and DSL helpers) for this arch."""
    return importlib.import_module(f"tinygrad.runtime.autogen.amd.{self.family}.ins")

  @property
  def enum(self):
    """The wheel's opcode enum module for this arch."""
    return importlib.import_module(f"tinygrad.runtime.autogen.amd.{self.family}.enum")

_RDNA = dict(null_reg=124, m0_reg=125, vcc_lo=106, exec_lo=126, n_sgprs=106, wave_sizes=(32, 64))
# gfx9: M0 is 124 and there is no NULL register (125 is reserved; LLVM never encodes it, so it reads 0 here); s102/s103 are
# FLAT_SCRATCH and s104/s105 XNACK_MASK. VGPRs are allocated in granules of 8 (wave64: RSRC1.VGPRS counts 8-register units).
_CDNA = dict(null_reg=125, m0_reg=124, vcc_lo=106, exec_lo=126, n_sgprs=102, wave_sizes=(64,), lds_granule=512, vgpr_granule32=16,
             wg_ids_in_ttmp=False, supported=True, simd_lanes=16, dpp="gfx9", true16=False, n_agprs=256, vop3_literal=False, zeroes_high16=True,
             buffer_ops=True,
             waitcnt=(("vm", ((0, 4), (14, 2))), ("vs", ((0, 4), (14, 2))), ("lgkm", ((8, 4),)), ("exp", ((4, 3),))))
# boards: RX 7900 XTX (96 CUs, 2.5 GHz); Strix Halo (40, 2.9 GHz); RX 9070 XT (64, 2.97 GHz); one CPX partition of MI300X (38 CUs,
# 2.1 GHz) and of MI355X (32 CUs, 2.4 GHz, 160 KiB of LDS per CU)
SPECS: dict[str, ArchSpec] = {
  "gfx1100": ArchSpec("gfx1100", "rdna3", **_RDNA, lds_granule=512, max_lds=65536, vgpr_granule32=8, wg_ids_in_ttmp=False, supported=True,
                      n_cus=96, clock_mhz=2500.0, lds_per_cu=65536, llvm_min=16),
  "gfx1151": ArchSpec("gfx1151", "rdna3", **_RDNA, lds_granule=512, max_lds=65536, vgpr_granule32=8, wg_ids_in_ttmp=False, supported=True,
                      n_cus=40, clock_mhz=2900.0, lds_per_cu=65536, llvm_min=19),
  "gfx1201": ArchSpec("gfx1201", "rdna4", **_RDNA, lds_granule=512, max_lds=65536, vgpr_granule32=8, wg_ids_in_ttmp=True, supported=True,
                      ieee_mode=False, n_cus=64, clock_mhz=2970.0, lds_per_cu=65536, llvm_min=19),
  "gfx942": ArchSpec("gfx942", "cdna", **_CDNA, max_lds=65536, n_cus=38, clock_mhz=2100.0, lds_per_cu=65536, llvm_min=18),
  "gfx950": ArchSpec("gfx950", "cdna", **_CDNA, max_lds=163840, n_cus=32, clock_mhz=2400.0, lds_per_cu=163840, llvm_min=20),
}
assert set(ARCHS) <= set(SPECS)
FAMILIES = tuple(dict.fromkeys(SPECS[a].family for a in ARCHS))   # the wheel's ISA families of the emulated boards: rdna3, rdna4, cdna

def get_spec(arch:str) -> ArchSpec:
  """The ArchSpec of a gfx target; raises ValueError for unknown or not-yet-implemented targets."""
  if (spec := SPECS.get(arch)) is None: raise ValueError(f"unknown AMD arch {arch!r}; known: {', '.join(SPECS)}")
  if not spec.supported: raise NotImplementedError(f"the AMD emulator does not implement {arch} ({spec.family}) yet")
  return spec
