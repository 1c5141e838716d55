"""DPP16 and DPP8 lane routing: which lane each lane's src0 comes from, and which lanes may write. The DPP16 controls are data per
arch family (`DPP16_CONTROLS`): all have quad_perm, row_shl/shr/ror 1-15, row_mirror and row_half_mirror; gfx9 (CDNA) adds
wave_shl/rol/shr/ror:1, row_bcast:15/31 (emu/amd/cdna.py's docstring) and gfx90a+'s row_newbcast:0-15, RDNA row_share:0-15 and
row_xmask:0-15. RDNA3 also executes 0x142 (gfx9's row_bcast:15, which LLVM rejects from GFX10 on): each lane reads the first lane
of its row, as an outside suite validated on RDNA3 hardware observed (docs/emulator.md, "DPP controls"). Every other control is an
illegal instruction: LLVM's disassembler calls them invalid and there is no hardware data for them."""
from __future__ import annotations
from typing import Callable
import numpy as np

# (first ctrl, last ctrl, route): route(ctrl, lane, lanes) -> (source lane, source valid) per lane
Control = tuple[int, int, Callable[[int, np.ndarray, int], tuple]]
_COMMON: tuple[Control, ...] = (
  (0x000, 0x0ff, lambda c, lane, n: ((lane & ~3) | ((c >> (2 * (lane & 3))) & 3), True)),            # quad_perm
  (0x101, 0x10f, lambda c, lane, n: (lane + (c & 15), (lane & 15) + (c & 15) < 16)),                  # row_shl: read lane i+n
  (0x111, 0x11f, lambda c, lane, n: (lane - (c & 15), (lane & 15) >= (c & 15))),                      # row_shr: read lane i-n
  (0x121, 0x12f, lambda c, lane, n: ((lane & ~15) | (((lane & 15) - (c & 15)) & 15), True)),         # row_ror
  (0x140, 0x140, lambda c, lane, n: ((lane & ~15) | (15 - (lane & 15)), True)),                       # row_mirror
  (0x141, 0x141, lambda c, lane, n: ((lane & ~7) | (7 - (lane & 7)), True)),                          # row_half_mirror
)
_ROW_SHARE: Control = (0x150, 0x15f, lambda c, lane, n: ((lane & ~15) | (c & 15), True))   # row_share / row_newbcast: lane c of the row
_RDNA: tuple[Control, ...] = _COMMON + (
  _ROW_SHARE,
  (0x160, 0x16f, lambda c, lane, n: ((lane & ~15) | ((lane & 15) ^ (c & 15)), True)),         # row_xmask
)
DPP16_CONTROLS: dict[str, tuple[Control, ...]] = {
  "cdna": _COMMON + (
    (0x130, 0x130, lambda c, lane, n: (lane + 1, lane + 1 < n)),                                      # wave_shl:1
    (0x134, 0x134, lambda c, lane, n: ((lane + 1) % n, True)),                                        # wave_rol:1
    (0x138, 0x138, lambda c, lane, n: (lane - 1, lane >= 1)),                                         # wave_shr:1
    (0x13c, 0x13c, lambda c, lane, n: ((lane - 1) % n, True)),                                        # wave_ror:1
    (0x142, 0x142, lambda c, lane, n: ((lane & ~15) - 1, lane >= 16)),                                # row_bcast:15
    (0x143, 0x143, lambda c, lane, n: (np.full(n, 31), lane >= 32)),                                  # row_bcast:31
    _ROW_SHARE,                                                                                       # row_newbcast (gfx90a+)
  ),
  "rdna3": _RDNA + ((0x142, 0x142, lambda c, lane, n: (lane & ~15, True)),),                          # observed: the row's lane 0
  "rdna4": _RDNA,
}

def dpp16_control(ctrl:int, family:str) -> Callable:
  """The route of a DPP16 `dpp_ctrl` on an arch family ('rdna3', 'rdna4', 'cdna'). Raises ValueError for controls the family
  does not define (an illegal instruction)."""
  for first, last, route in DPP16_CONTROLS[family]:
    if first <= ctrl <= last: return route
  raise ValueError(f"DPP control {ctrl:#x} does not exist on {family}")

def dpp16_route(ctrl:int, lanes:int, family:str) -> tuple[np.ndarray, np.ndarray]:
  """(source lane, source valid) per lane for a DPP16 `dpp_ctrl` on an arch family (see dpp16_control)."""
  lane = np.arange(lanes)
  src, ok = dpp16_control(ctrl, family)(ctrl, lane, lanes)
  valid = np.ones(lanes, dtype=bool) & ok
  return np.where(valid, src, lane) % lanes, valid

def dpp16_write_enable(row_mask:int, bank_mask:int, lanes:int) -> np.ndarray:
  """Lanes allowed to write: their row (16 lanes) in row_mask and their bank (4 lanes of a row) in bank_mask."""
  lane = np.arange(lanes)
  return (((row_mask >> (lane >> 4)) & 1) & ((bank_mask >> ((lane & 15) >> 2)) & 1)).astype(bool)

def dpp8_route(sels:list[int], lanes:int) -> np.ndarray:
  """Source lane per lane for DPP8: lane i reads lane (i & ~7) | sel[i & 7]."""
  lane = np.arange(lanes)
  return (lane & ~7) | np.array(sels)[lane & 7]
