"""DPP16 and DPP8 lane routing (RDNA): which lane each lane's src0 comes from, and which lanes may write."""
from __future__ import annotations
import numpy as np

def dpp16_route(ctrl:int, lanes:int) -> tuple[np.ndarray, np.ndarray]:
  """(source lane, source valid) per lane for a DPP16 `dpp_ctrl` value. Raises ValueError for controls RDNA lacks."""
  lane = np.arange(lanes)
  row, l = lane & ~15, lane & 15
  valid = np.ones(lanes, dtype=bool)
  if ctrl <= 0xff: src = (lane & ~3) | ((ctrl >> (2 * (lane & 3))) & 3)
  elif 0x101 <= ctrl <= 0x10f: src, valid = lane + (ctrl & 15), l + (ctrl & 15) < 16                 # row_shl: read lane i+n
  elif 0x111 <= ctrl <= 0x11f: src, valid = lane - (ctrl & 15), l >= (ctrl & 15)                     # row_shr: read lane i-n
  elif 0x121 <= ctrl <= 0x12f: src = row | ((l - (ctrl & 15)) & 15)                                  # row_ror
  elif ctrl == 0x140: src = row | (15 - l)                                                           # row_mirror
  elif ctrl == 0x141: src = (lane & ~7) | (7 - (lane & 7))                                           # row_half_mirror
  elif 0x150 <= ctrl <= 0x15f: src = row | (ctrl & 15)                                               # row_share
  elif 0x160 <= ctrl <= 0x16f: src = row | (l ^ (ctrl & 15))                                         # row_xmask
  else: raise ValueError(f"DPP control {ctrl:#x} does not exist on RDNA")
  return np.where(valid, src, lane) % lanes, valid

def dpp16_write_enable(row_mask:int, bank_mask:int, lanes:int) -> np.ndarray:
  """Lanes allowed to write: their row (16 lanes) in row_mask and their bank (4 lanes of a row) in bank_mask."""
  lane = np.arange(lanes)
  return (((row_mask >> (lane >> 4)) & 1) & ((bank_mask >> ((lane & 15) >> 2)) & 1)).astype(bool)

def dpp8_route(sels:list[int], lanes:int) -> np.ndarray:
  """Source lane per lane for DPP8: lane i reads lane (i & ~7) | sel[i & 7]."""
  lane = np.arange(lanes)
  return (lane & ~7) | np.array(sels)[lane & 7]
