"""The RM class list of each emulated NVIDIA board (the hardware facts are emu.nv.boards').

RM offers each engine's own class plus the older classes it stays compatible with; tinygrad picks the newest it knows
(ops_nv.py setup_usermode). Hopper's own GPFIFO/compute/copy classes are not in tinygrad's lists, so an sm_90 board runs
tinygrad on the Ampere channel, compute (AMPERE_COMPUTE_B, QMD v3) and copy classes it also offers.
"""
from __future__ import annotations
from tinygrad.runtime.autogen import nv_570 as nv
from emu.nv.boards import BOARDS, Board

COMMON = (nv.NV01_ROOT_CLIENT, nv.NV01_DEVICE_0, nv.NV20_SUBDEVICE_0, nv.NV01_MEMORY_VIRTUAL, nv.NV01_MEMORY_SYSTEM_OS_DESCRIPTOR,
          nv.NV1_MEMORY_USER, nv.NV1_MEMORY_SYSTEM, nv.FERMI_VASPACE_A, nv.KEPLER_CHANNEL_GROUP_A, nv.FERMI_CONTEXT_SHARE_A,
          nv.GT200_DEBUGGER, nv.AMPERE_CHANNEL_GPFIFO_A, nv.AMPERE_DMA_COPY_B, nv.TURING_USERMODE_A)
CLASSES = {"sm_86": COMMON + (nv.AMPERE_COMPUTE_B,), "sm_89": COMMON + (nv.AMPERE_COMPUTE_B, nv.ADA_COMPUTE_A),
           "sm_90": COMMON + (nv.AMPERE_COMPUTE_B, nv.HOPPER_COMPUTE_A, nv.HOPPER_USERMODE_A)}
assert set(CLASSES) == set(BOARDS)

def classes(b:Board) -> tuple[int, ...]:
  """The classes RM offers on board `b`."""
  return CLASSES[b.arch]


