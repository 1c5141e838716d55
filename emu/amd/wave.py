"""Register state of a batch of waves, stored as arrays so that waves sharing a PC execute as one numpy operation.

Scalar registers are kept at their operand numbers (s0..s105, VCC 106/107, TTMP 108-123, NULL 124, M0 125, EXEC 126/127 on
RDNA), so operand decoding is a plain index. VGPRs are indexed [wave, lane, reg]: `vgpr[w]` is the VGPR[lane][reg] view
the pcode's whole-wave ops use. They are stored [reg, wave, lane] (`vgpr` is a transposed view), so that one register of
consecutive waves -- what a lockstep VALU op reads and writes -- is one contiguous run: a float operand is passed as a view of
it, and results are stored with one copy.
"""
from __future__ import annotations
import mmap, sys, threading, weakref
from functools import cache
import numpy as np
from emu.amd.api import IllegalOperand
from emu.amd.arch import ArchSpec

RUNNING, BARRIER, ENDED = 0, 1, 2
AGPR_BASE = 256   # CDNA accumulation register a[i] is vgpr index AGPR_BASE + i (arrays have MAX_VGPRS + ArchSpec.n_agprs regs)
N_SREGS = 128
HWREG_MODE, HWREG_STATUS, HWREG_GPR_ALLOC, HWREG_LDS_ALLOC, HWREG_HW_ID1, HWREG_HW_ID2 = 1, 2, 5, 6, 23, 24
# MODE (HW_REG_MODE): FP_ROUND [3:0] (f32 [1:0], f16/f64 [3:2]), FP_DENORM [7:4] (f32 [5:4], f16/f64 [7:6]), DX10_CLAMP [8], IEEE [9]
MODE_IEEE = 1 << 9
MODE_DEFAULT = 0xf0 | (1 << 8) | MODE_IEEE   # nearest even, denormals kept, DX10 clamp, IEEE: what LLVM's compute kernels set

def mode_from_rsrc1(spec:ArchSpec, rsrc1:int) -> int:
  """The MODE a wave starts with: COMPUTE_PGM_RSRC1.FLOAT_ROUND_MODE_32/_16_64 and FLOAT_DENORM_MODE_32/_16_64 (bits 19:12), and up
  to gfx11 ENABLE_DX10_CLAMP (bit 21) and ENABLE_IEEE_MODE (bit 23). gfx12 has neither (those bits mean other things there) and
  behaves as in IEEE mode."""
  fp = (rsrc1 >> 12) & 0xff
  return fp | ((rsrc1 >> 21) & 1) << 8 | ((rsrc1 >> 23) & 1) << 9 if spec.ieee_mode else fp | MODE_IEEE

@cache
def mode_state(mode:int) -> dict:
  """The pcode ABI's mode inputs (emu/pcode/abi.py) for a MODE register value: one dict per value, shared (read it, never change
  it)."""
  return {"MODE_ROUND32": mode & 3, "MODE_ROUND16": (mode >> 2) & 3, "MODE_DENORM32": (mode >> 4) & 3, "MODE_DENORM16": (mode >> 6) & 3,
          "MODE_IEEE": bool(mode & MODE_IEEE), "ROUND_MODE": mode & 3}

MODE_INPUTS = frozenset(mode_state(MODE_DEFAULT))   # the op inputs that depend on the wave's MODE

LAZY_ZERO_BYTES = 1 << 20   # arrays from this size on live on anonymous mappings (`zeroed`)
PAGE = mmap.PAGESIZE

class _ZeroMappings:
  """Large zero-filled arrays on anonymous mappings, reused once no array sees them any more.

  A fresh mapping costs nothing for pages never touched (a VGPR file of which a kernel uses a few registers), but every page
  touched faults on first use (~1-5 us each, the kernel clearing it): 224 pages per 512-wave chunk of an elementwise kernel
  writing 14 VGPRs, a third of its time. A mapping given back is made zero again in place: its first `hot_bytes` (what its user
  expected to touch) are cleared and stay mapped, so the next user does not fault on them; the rest is dropped with MADV_DONTNEED,
  which costs next to nothing for pages never touched and leaves any that were zero again. (np.zeros is no alternative at these
  sizes: calloc must clear all of a block it serves from its heap, 16 MiB per chunk.) Linux only (elsewhere MADV_DONTNEED need
  not zero): other systems get fresh mappings."""
  def __init__(self, keep:int=4):
    self.keep, self.free = keep, []   # free: zeroed mappings, most recently given back last
    self.recycle, self.lock = sys.platform == "linux", threading.Lock()   # (GPUs may dispatch from several threads)

  def array(self, shape:tuple, dtype, hot_bytes:int) -> np.ndarray:
    """A zero array of `shape` on a mapping of its own (a free one of its size if there is one); `hot_bytes`: how much of it
    (from the start) the caller expects to touch."""
    dt = np.dtype(dtype)
    nbytes = int(np.prod(shape)) * dt.itemsize
    with self.lock:
      if (mm := next((m for m in reversed(self.free) if len(m) == nbytes), None)) is not None: self.free.remove(mm)
    if mm is None: mm = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)   # (not MAP_SHARED: DONTNEED keeps shmem)
    root = np.frombuffer(mm, dtype=np.uint8)   # every array made from it, views included, keeps it alive
    if self.recycle: weakref.finalize(root, self._give_back, mm, hot_bytes).atexit = False
    return root.view(dt).reshape(shape)

  def _give_back(self, mm:mmap.mmap, hot_bytes:int):
    """Called when the last array over `mm` is gone: make it zero again and keep it (the `keep` most recent)."""
    hot = min(len(mm), -(-hot_bytes // PAGE) * PAGE)
    if hot: np.frombuffer(mm, dtype=np.uint8, count=hot)[:] = 0
    if hot < len(mm): mm.madvise(mmap.MADV_DONTNEED, hot, len(mm) - hot)
    with self.lock:
      self.free.append(mm)
      if len(self.free) > self.keep: self.free.pop(0)

ZERO_MAPPINGS = _ZeroMappings()

def zeroed(shape:tuple, dtype, hot_bytes:int=0) -> np.ndarray:
  """np.zeros(shape, dtype); large ones on an anonymous mapping of their own, recycled (`_ZeroMappings`; `hot_bytes`: how much
  of the array, from its start, is expected to be touched)."""
  if int(np.prod(shape)) * np.dtype(dtype).itemsize < LAZY_ZERO_BYTES: return np.zeros(shape, dtype=dtype)
  return ZERO_MAPPINGS.array(shape, dtype, hot_bytes)

class WaveState:
  """State of `n` waves of `lanes` lanes each. Per-wave arrays are indexed by wave number 0..n-1."""
  def __init__(self, spec:ArchSpec, n:int, lanes:int, n_vgprs:int, scratch_bytes:int=0, vgprs_used:int=0):
    """`vgprs_used`: how many VGPRs (from v0) the code is expected to touch (the kernel's RSRC1 allocation; only a hint for
    reusing memory: any register may be used)."""
    self.spec, self.n, self.lanes, self.n_vgprs = spec, n, lanes, n_vgprs
    self.sgpr = np.zeros((n, N_SREGS), dtype=np.uint32)
    # the storage, [reg, wave, lane] (native regions index it)
    self.vgpr_store = zeroed((n_vgprs, n, lanes), np.uint32, min(vgprs_used, n_vgprs) * n * lanes * 4)
    self.vgpr = self.vgpr_store.transpose(1, 2, 0)
    self.scc = np.zeros(n, dtype=np.uint32)
    self.pc = np.zeros(n, dtype=np.int64)
    self.status = np.full(n, RUNNING, dtype=np.int8)
    self.wg = np.zeros(n, dtype=np.int64)           # workgroup index (into the LDS array) of each wave
    self.wave_id = [(0, 0, 0, 0)] * n                # (wg x, wg y, wg z, wave in wg) for fault reports and traces
    self.hwreg = np.zeros((n, 64), dtype=np.uint32)  # s_getreg/s_setreg view (MODE, STATUS, HW_ID ...), by the 6-bit HWREG id
    self.hwreg[:, HWREG_MODE] = MODE_DEFAULT
    self.scratch = zeroed((n, lanes, scratch_bytes), np.uint8)
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
    if reg + self.mask_regs > self.sgpr.shape[1]: raise IllegalOperand(f"a wave{self.lanes} lane mask at s{reg} runs past EXEC_HI")
    packed = np.packbits(np.asarray(bits, dtype=bool).reshape(len(bits), self.lanes), axis=1, bitorder="little")
    self.sgpr[ws, reg:reg + self.mask_regs] = packed.view("<u4")

  def exec_bits(self, ws:np.ndarray) -> np.ndarray: return self.mask_bits(ws, self.spec.exec_lo)

  def mode_groups(self, ws:np.ndarray) -> list[np.ndarray]:
    """ws split into groups of waves with equal MODE registers (just [ws] when they agree, the common case)."""
    if len(ws) == 1: return [ws]
    w0 = int(ws[0])   # ws is sorted and unique: consecutive waves read a slice of the column, not a gather
    modes = self.hwreg[w0:w0 + len(ws), HWREG_MODE] if int(ws[-1]) - w0 + 1 == len(ws) else self.hwreg[ws, HWREG_MODE]
    if (modes == modes[0]).all(): return [ws]
    return [ws[modes == v] for v in np.unique(modes)]

  def mode(self, w:int) -> dict:
    """The pcode ABI's mode inputs of wave w."""
    return mode_state(int(self.hwreg[w, HWREG_MODE]))
