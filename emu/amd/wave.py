"""Register state of a batch of waves, stored as arrays so that waves sharing a PC execute as one numpy operation.

Scalar registers are kept at their operand numbers (s0..s105, VCC 106/107, TTMP 108-123, NULL 124, M0 125, EXEC 126/127 on
RDNA), so operand decoding is a plain index. VGPRs are laid out [wave, lane, reg]: `vgpr[w]` is the VGPR[lane][reg] view
the pcode's whole-wave ops use.
"""
from __future__ import annotations
import numpy as np
from emu.amd.arch import ArchSpec

RUNNING, BARRIER, ENDED = 0, 1, 2
AGPR_BASE = 256   # CDNA accumulation register a[i] is vgpr index AGPR_BASE + i (arrays have MAX_VGPRS + ArchSpec.n_agprs regs)
N_SREGS = 128
HWREG_MODE, HWREG_STATUS, HWREG_GPR_ALLOC, HWREG_LDS_ALLOC, HWREG_HW_ID1, HWREG_HW_ID2 = 1, 2, 5, 6, 23, 24

class WaveState:
  """State of `n` waves of `lanes` lanes each. Per-wave arrays are indexed by wave number 0..n-1."""
  def __init__(self, spec:ArchSpec, n:int, lanes:int, n_vgprs:int, scratch_bytes:int=0):
    self.spec, self.n, self.lanes, self.n_vgprs = spec, n, lanes, n_vgprs
    self.sgpr = np.zeros((n, N_SREGS), dtype=np.uint32)
    self.vgpr = np.zeros((n, lanes, n_vgprs), dtype=np.uint32)
    self.scc = np.zeros(n, dtype=np.uint32)
    self.pc = np.zeros(n, dtype=np.int64)
    self.status = np.full(n, RUNNING, dtype=np.int8)
    self.wg = np.zeros(n, dtype=np.int64)           # workgroup index (into the LDS array) of each wave
    self.wave_id = [(0, 0, 0, 0)] * n                # (wg x, wg y, wg z, wave in wg) for fault reports and traces
    self.hwreg = np.zeros((n, 32), dtype=np.uint32)  # s_getreg/s_setreg view (MODE, STATUS, HW_ID ...)
    self.scratch = np.zeros((n, lanes, scratch_bytes), dtype=np.uint8)
    self.lane_ids = np.arange(lanes, dtype=np.uint64)

  # ---- lane masks (EXEC, VCC, any SGPR pair) as Python ints / numpy ----
  @property
  def mask_regs(self) -> int: return 1 if self.lanes == 32 else 2

  def get_mask(self, w:int, reg:int) -> int:
    """The lane mask held in SGPR `reg` (and reg+1 in wave64) of wave w."""
    lo = int(self.sgpr[w, reg])
    return lo | (int(self.sgpr[w, reg + 1]) << 32) if self.lanes == 64 else lo

  def get_masks(self, ws:np.ndarray, reg:int) -> np.ndarray:
    """The lane masks of waves ws as uint64 (n,)."""
    lo = self.sgpr[ws, reg].astype(np.uint64)
    return lo | (self.sgpr[ws, reg + 1].astype(np.uint64) << np.uint64(32)) if self.lanes == 64 else lo

  def set_mask(self, w, reg:int, value):
    """Store a lane mask into SGPR `reg` (and reg+1 in wave64): w a wave and value an int, or ws an array and value uint64 (n,)."""
    self.sgpr[w, reg] = value & 0xffffffff
    if self.lanes == 64: self.sgpr[w, reg + 1] = (value >> 32) & 0xffffffff

  def mask_bits(self, ws:np.ndarray, reg:int) -> np.ndarray:
    """(len(ws), lanes) bool array of the lane mask in SGPR `reg` (and reg+1 in wave64) for waves ws."""
    words = np.ascontiguousarray(self.sgpr[ws, reg:reg + self.mask_regs]).astype("<u4", copy=False)
    return np.unpackbits(words.view(np.uint8).reshape(len(words), -1), axis=1, bitorder="little").view(bool)

  def store_mask_bits(self, ws:np.ndarray, reg:int, bits:np.ndarray):
    """Pack a (len(ws), lanes) bool array into SGPR `reg` (and reg+1) of waves ws."""
    packed = np.packbits(np.asarray(bits, dtype=bool).reshape(len(bits), self.lanes), axis=1, bitorder="little")
    self.sgpr[ws, reg:reg + self.mask_regs] = packed.view("<u4")

  def exec_bits(self, ws:np.ndarray) -> np.ndarray: return self.mask_bits(ws, self.spec.exec_lo)
