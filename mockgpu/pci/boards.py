"""The PCI parts DEV=MOCKPCI+AMD can present: one RDNA3 and one RDNA4 board, with the facts tinygrad's AM driver reads.

Shader counts, LDS, clocks and VRAM come from the KFD board table (`mockgpu.amd.boards`), so both paths describe the same part.
Here: the IP versions IP discovery reports for every block the AM driver programs (they name the register modules, SMU
message tables and firmware files tinygrad loads: amdgpu's IP discovery of a 7900 XTX / 9070 XT reports these), the BAR
layout of those cards (VRAM behind a resizable BAR, 2 MB of doorbells, 1 MB of MMIO registers) and the SMU's DPM levels.
CDNA parts are not offered on this path: their AM support needs XCC partitions and AIDs this mock does not model.
"""
from __future__ import annotations
from dataclasses import dataclass
from mockgpu.amd.boards import BOARDS as KFD_BOARDS, Board

# tinygrad.runtime.autogen.am.am *_HWID: the hardware ids IP discovery files blocks under
MP1, GC, MMHUB, ATHUB, OSSSYS, HDP, SDMA0, SDMA1, NBIF, MP0 = 1, 11, 34, 35, 40, 41, 42, 43, 108, 255
# the navi_offsets constant prefix (tinygrad.runtime.autogen.am.navi_offsets *_BASE__INST0_SEGn) of each block's register bases
BASE_NAMES = {GC: "GC", HDP: "HDP", MMHUB: "MMHUB", MP0: "MP0", MP1: "MP1", NBIF: "NBIO", OSSSYS: "OSSSYS", SDMA0: "SDMA0", SDMA1: "SDMA1",
              ATHUB: "ATHUB"}

@dataclass(frozen=True)
class PCIBoard:
  """One PCI part: its KFD-side facts plus what only the PCI path shows."""
  arch: str
  kfd: Board
  ip_versions: dict          # hwid -> (major, minor, revision), every block in the discovery table
  doorbell_bar: int = 2 << 20
  mmio_bar: int = 1 << 20
  dpm_mhz: tuple = ()        # (PPCLK index, levels in MHz) the SMU reports per clock

  @property
  def device_id(self) -> int: return self.kfd.device_id
  @property
  def gc_version(self) -> tuple[int, int, int]: return self.ip_versions[GC]

# PPCLK_GFXCLK, SOCCLK, UCLK, FCLK are 0, 1, 2, 3 in both SMU message tables (smu_13_0_0, smu_14_0_2)
BOARDS: dict[str, PCIBoard] = {
  "gfx1100": PCIBoard("gfx1100", KFD_BOARDS["gfx1100"],
    {GC: (11, 0, 0), SDMA0: (6, 0, 0), SDMA1: (6, 0, 0), MMHUB: (3, 0, 0), ATHUB: (3, 0, 0), NBIF: (4, 3, 0), MP0: (13, 0, 0), MP1: (13, 0, 0),
     HDP: (6, 0, 0), OSSSYS: (6, 0, 0)},
    dpm_mhz=((0, (500, 1500, 2500)), (1, (500, 1200)), (2, (96, 456, 772, 1250)), (3, (400, 1300, 1900)))),
  "gfx1201": PCIBoard("gfx1201", KFD_BOARDS["gfx1201"],
    {GC: (12, 0, 1), SDMA0: (7, 0, 1), SDMA1: (7, 0, 1), MMHUB: (4, 1, 0), ATHUB: (4, 1, 0), NBIF: (6, 3, 1), MP0: (14, 0, 3), MP1: (14, 0, 3),
     HDP: (7, 0, 0), OSSSYS: (7, 0, 0)},
    dpm_mhz=((0, (600, 1800, 2970)), (1, (500, 1200)), (2, (96, 456, 1000, 1259)), (3, (400, 1400, 2000)))),
}

def board(arch:str, iface:str="MOCKPCI") -> PCIBoard:
  """The PCI board for `arch` (DEV=`iface`+AMD: MOCKPCI, or MOCKUSB behind the USB bridge); a clear error for archs the PCI path
  does not offer."""
  if arch not in BOARDS:
    raise RuntimeError(f"mockgpu: DEV={iface}+AMD emulates {', '.join(BOARDS)} only, not {arch!r} "
                       "(CDNA over PCI needs XCC partitions the mock does not model; use DEV=MOCKKFD+AMD for it)")
  return BOARDS[arch]
