"""The NVIDIA boards the mock can be: one per SM version DEV may name (`MOCK+NV:PTX:sm_89`), default sm_89.

Per-SM limits (resident warps, shared memory) are compute-capability facts from the CUDA C++ Programming Guide's
"Technical Specifications per Compute Capability" table (also in NVIDIA's CCCL `cuda/experimental/__device/arch_traits.cuh`).
GPC/TPC/SM counts, memory size, PCI device id and boost clock are facts of the named product (NVIDIA's architecture
whitepapers: GA102, AD102, GH100). `tpc_per_gpc` is the chip's full ("litter") value, as RM's GR_INFO LITTER_NUM_TPC_PER_GPC
reports it; `gpcs` and `sms` are the product's enabled units.

Class lists: RM offers each engine's own class plus the older classes it stays compatible with; tinygrad picks the newest it
knows (ops_nv.py setup_usermode). Hopper's own GPFIFO/compute/copy classes are not in tinygrad's lists, so an sm_90 board runs
tinygrad on the Ampere channel, compute (AMPERE_COMPUTE_B, QMD v3) and copy classes it also offers. Blackwell (QMD v5) is not
modelled.
"""
from __future__ import annotations
from dataclasses import dataclass
from tinygrad.runtime.autogen import nv_570 as nv

@dataclass(frozen=True)
class Board:
  """One emulated NVIDIA GPU model."""
  arch: str                # sm_XY, as tinygrad names it
  name: str
  sm_version: int          # GR_INFO SM_VERSION (0xXYY: sm_89 is 0x809)
  gpcs: int
  tpc_per_gpc: int
  sm_per_tpc: int
  sms: int
  max_warps_per_sm: int
  shared_per_sm: int       # bytes
  vram_bytes: int
  pci_device_id: int
  boost_mhz: int
  classes: tuple[int, ...]

COMMON = (nv.NV01_ROOT_CLIENT, nv.NV01_DEVICE_0, nv.NV20_SUBDEVICE_0, nv.NV01_MEMORY_VIRTUAL, nv.NV01_MEMORY_SYSTEM_OS_DESCRIPTOR,
          nv.NV1_MEMORY_USER, nv.NV1_MEMORY_SYSTEM, nv.FERMI_VASPACE_A, nv.KEPLER_CHANNEL_GROUP_A, nv.FERMI_CONTEXT_SHARE_A,
          nv.GT200_DEBUGGER, nv.AMPERE_CHANNEL_GPFIFO_A, nv.AMPERE_DMA_COPY_B, nv.TURING_USERMODE_A)
GiB = 1 << 30

BOARDS = {b.arch: b for b in (
  Board("sm_86", "NVIDIA GeForce RTX 3090", 0x806, gpcs=7, tpc_per_gpc=6, sm_per_tpc=2, sms=82, max_warps_per_sm=48,
        shared_per_sm=100 << 10, vram_bytes=24 * GiB, pci_device_id=0x2204, boost_mhz=1695,
        classes=COMMON + (nv.AMPERE_COMPUTE_B,)),
  Board("sm_89", "NVIDIA GeForce RTX 4090", 0x809, gpcs=11, tpc_per_gpc=6, sm_per_tpc=2, sms=128, max_warps_per_sm=48,
        shared_per_sm=100 << 10, vram_bytes=24 * GiB, pci_device_id=0x2684, boost_mhz=2520,
        classes=COMMON + (nv.AMPERE_COMPUTE_B, nv.ADA_COMPUTE_A)),
  Board("sm_90", "NVIDIA H100 80GB HBM3", 0x900, gpcs=8, tpc_per_gpc=9, sm_per_tpc=2, sms=132, max_warps_per_sm=64,
        shared_per_sm=228 << 10, vram_bytes=80 * GiB, pci_device_id=0x2330, boost_mhz=1980,
        classes=COMMON + (nv.AMPERE_COMPUTE_B, nv.HOPPER_COMPUTE_A, nv.HOPPER_USERMODE_A)),
)}
DEFAULT_ARCH = "sm_89"

def board(arch:str) -> Board:
  """The board for `arch` ('' means the default); ValueError naming the choices for anything else."""
  if (b := BOARDS.get(arch or DEFAULT_ARCH)) is None:
    raise ValueError(f"mockgpu: no emulated NVIDIA board for arch {arch!r} (DEV=MOCK+NV:<renderer>:<arch>); choose one of "
                     f"{', '.join(BOARDS)} (Blackwell's QMD v5 and pre-Ampere compute classes are not modelled)")
  return b
