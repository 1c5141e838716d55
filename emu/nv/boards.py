"""The NVIDIA GPUs the emulator models: one `Board` per SM version (sm_86, sm_89 default, sm_90), every hardware fact in one
place, each from a named source.

- Per-SM limits (resident warps and CTAs, shared memory) are compute-capability facts: the CUDA C++ Programming Guide's
  "Technical Specifications per Compute Capability" table (also NVIDIA's CCCL `cuda/experimental/__device/arch_traits.cuh`).
- GPC/TPC/SM counts, memory size and bandwidth, PCI device id and boost clock are facts of the named product (NVIDIA's
  GA102, AD102 and GH100 architecture whitepapers and product specifications). `tpc_per_gpc` is the chip's full ("litter")
  value, as RM's GR_INFO reports it; `gpcs` and `sms` are the product's enabled units.
- Execution rates per SM sub-partition (four per SM on all three): FP32 lanes and INT32 lanes are the whitepapers' per-SM
  datapath counts / 4 (GA102/AD102: 128 FP32, 64 INT32; GH100: 128 FP32, 64 INT32); FP64 is the whitepapers' ratio to FP32
  (1/64 on GA102/AD102, 1/2 on GH100); `mma_cycles` (one m16n8k16 f16 mma with f32 accumulation, 2048 FMAs, on one
  sub-partition) is derived from the products' published dense FP16-with-FP32-accumulate tensor TFLOPS:
  flops / (2 x SMs x boost clock) FMAs per SM per cycle, a quarter per sub-partition.
"""
from __future__ import annotations
from dataclasses import dataclass

@dataclass(frozen=True)
class Board:
  """One emulated NVIDIA GPU model."""
  arch: str                # sm_XY, as tinygrad names it
  name: str
  sm_version: int          # RM GR_INFO SM_VERSION (0xXYY: sm_89 is 0x809)
  gpcs: int
  tpc_per_gpc: int
  sm_per_tpc: int
  sms: int
  max_warps_per_sm: int
  max_ctas_per_sm: int
  shared_per_sm: int       # bytes
  vram_bytes: int
  dram_bytes_per_s: float
  pci_device_id: int
  boost_mhz: int
  int32_cycles: int        # cycles one sub-partition needs per warp-instruction of 32-bit integer work (32 lanes / INT32 lanes)
  fp64_cycles: int         # the same for FP64
  mma_cycles: int          # the same for one m16n8k16 mma

GiB = 1 << 30
BOARDS = {b.arch: b for b in (
  # RTX 3090: 71 dense FP16/FP32-acc tensor TFLOPS at 1.695 GHz on 82 SMs -> 255 FMA/clk/SM -> 2048 / 64 = 32 cycles
  Board("sm_86", "NVIDIA GeForce RTX 3090", 0x806, gpcs=7, tpc_per_gpc=6, sm_per_tpc=2, sms=82, max_warps_per_sm=48, max_ctas_per_sm=16,
        shared_per_sm=100 << 10, vram_bytes=24 * GiB, dram_bytes_per_s=936e9, pci_device_id=0x2204, boost_mhz=1695,
        int32_cycles=2, fp64_cycles=64, mma_cycles=32),
  # RTX 4090: 165.2 dense FP16/FP32-acc tensor TFLOPS at 2.52 GHz on 128 SMs -> 256 FMA/clk/SM -> 32 cycles
  Board("sm_89", "NVIDIA GeForce RTX 4090", 0x809, gpcs=11, tpc_per_gpc=6, sm_per_tpc=2, sms=128, max_warps_per_sm=48, max_ctas_per_sm=24,
        shared_per_sm=100 << 10, vram_bytes=24 * GiB, dram_bytes_per_s=1008e9, pci_device_id=0x2684, boost_mhz=2520,
        int32_cycles=2, fp64_cycles=64, mma_cycles=32),
  # H100 SXM5: 989 dense FP16 tensor TFLOPS at 1.98 GHz on 132 SMs -> ~1900 FMA/clk/SM (2048 by design) -> 4 cycles
  Board("sm_90", "NVIDIA H100 80GB HBM3", 0x900, gpcs=8, tpc_per_gpc=9, sm_per_tpc=2, sms=132, max_warps_per_sm=64, max_ctas_per_sm=32,
        shared_per_sm=228 << 10, vram_bytes=80 * GiB, dram_bytes_per_s=3.35e12, pci_device_id=0x2330, boost_mhz=1980,
        int32_cycles=2, fp64_cycles=2, mma_cycles=4),
)}
DEFAULT_ARCH = "sm_89"

def board(arch:str) -> Board:
  """The board for `arch` ('' means the default); ValueError naming the choices for anything else."""
  if (b := BOARDS.get(arch or DEFAULT_ARCH)) is None:
    raise ValueError(f"mockgpu: no emulated NVIDIA board for arch {arch!r} (DEV=MOCK+NV:<renderer>:<arch>); choose one of "
                     f"{', '.join(BOARDS)} (Blackwell's QMD v5 and pre-Ampere compute classes are not modelled)")
  return b
