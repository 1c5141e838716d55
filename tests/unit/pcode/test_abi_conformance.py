"""Every compiled vector op of every arch, run on random operands, keeps the ABI's representations (abi.py): written operands
<= 64 bits are uint64 (n,) arrays (lane masks too, even constant ones such as V_CMP_T), wider ones uint32 (n, width/32), and
nothing raises or warns (a uint64 + int64 mix silently promoting to float64 is the typical failure)."""
import warnings
import numpy as np
import pytest
from emu.pcode import OpState, Unsupported, compile_op, ops_for

LANE_DATA = {"S0", "S1", "S2", "S3", "D0", "D1", "DATA", "DATA2", "ADDR", "VDATA", "RETURN_DATA", "SRC0_LANE"}
# IMAGE_* take resource/sampler descriptors and *_BLOCK VGPR numbers the random operands do not model
SKIP = ("IMAGE_", "GLOBAL_LOAD_BLOCK", "GLOBAL_STORE_BLOCK", "SCRATCH_LOAD_BLOCK", "SCRATCH_STORE_BLOCK")

class Mem:
  """Reads give an address hash; writes are dropped."""
  def read(self, a, nb): return (np.asarray(a, np.uint64) * np.uint64(2654435761)) & np.uint64((1 << (8 * nb)) - 1)
  def write(self, a, v, nb): pass

def _state(c, n:int, rng) -> OpState:
  st = OpState(n=n, laneId=np.arange(n, dtype=np.uint64), MEM=Mem(), WAVE32=True, WAVE64=False, MODE_IEEE=True, ROUND_MODE=0)
  for r in c.reads - {"n", "laneId", "MEM"}:
    w = c.widths.get(r, 32)
    if r in c.lane_masks: v = rng.integers(0, 2, n).astype(np.uint64)
    elif r == "VGPR": v = rng.integers(0, 2**32, (64, 256)).astype(np.uint32)
    elif w > 64: v = rng.integers(0, 2**32, (n, w // 32)).astype(np.uint32)
    elif r in LANE_DATA: v = rng.integers(0, 2**63, n, dtype=np.uint64) & np.uint64((1 << min(w, 63)) - 1)
    else: v = 1 if r in ("M0", "SCC") else int(rng.integers(0, 4))
    setattr(st, r, v)
  if "ADDR" in c.reads: st.ADDR = st.ADDR & np.uint64(0xfffff)
  return st

@pytest.mark.parametrize("arch", ["rdna3", "rdna4", "cdna"])
def test_vector_ops_keep_uint64_lane_arrays(arch):
  rng, bad = np.random.default_rng(0), []
  for opc in ops_for(arch):
    if opc.name.startswith(SKIP): continue
    try: c = compile_op(arch, opc)
    except Unsupported: continue
    if c.kind != "vector": continue
    st = _state(c, 4, rng)
    try:
      with warnings.catch_warnings():
        warnings.simplefilter("error")
        c.fn(st)
    except Exception as e:  # every failure is collected and reported together
      bad.append(f"{opc.name}: {type(e).__name__}: {e}")
      continue
    for name in c.writes - {"VGPR", "MEM"}:
      v, w = getattr(st, name), c.widths.get(name, 32)
      want = (np.uint32, (4, w // 32)) if w > 64 else (np.uint64, (4,))
      if not (isinstance(v, np.ndarray) and (v.dtype, v.shape) == want): bad.append(f"{opc.name}: {name} is {v!r}")
  assert not bad, "\n".join(bad)

def test_reads_exclude_operands_written_before_use():
  # S_MIN_I32 sets SCC then selects with it; loads write VDATA / RETURN_DATA whole before merging the upper dword
  from tinygrad.runtime.autogen.amd.rdna3.enum import DSOp, GLOBALOp, SOP2Op
  assert "SCC" not in compile_op("rdna3", SOP2Op.S_MIN_I32).reads and "SCC" not in compile_op("rdna3", SOP2Op.S_MAX_U32).reads
  assert "VDATA" not in compile_op("rdna3", GLOBALOp.GLOBAL_LOAD_B64).reads
  assert "RETURN_DATA" not in compile_op("rdna3", DSOp.DS_LOAD_B64).reads
  assert "D0" in compile_op("rdna3", SOP2Op.S_CSELECT_B32).writes and "SCC" in compile_op("rdna3", SOP2Op.S_CSELECT_B32).reads

F32_SPECIAL = np.array([0, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0x7fa00000, 0xffc00001, 1, 0x807fffff, 0x00800000, 0x3f800000,
                        0xbf800000, 0x7f7fffff, 0xffffffff, 0x4b800000, 0x3effffff], np.uint64)

@pytest.mark.parametrize("arch", ["rdna3", "rdna4", "cdna"])
def test_float_only_sources_may_come_as_uint32(arch):
  # abi.py: a 32-bit source (or read D0) the pcode reads only as a float (views == {'f'}) may be passed as uint32 bits (the executor does so);
  # every such op must compute bit for bit what it computes from the canonical uint64 form, in every float mode
  rng, checked, bad = np.random.default_rng(5), 0, []
  n = 64
  for opc in ops_for(arch):
    try: c = compile_op(arch, opc)
    except Unsupported: continue
    narrow = [s for s in ("S0", "S1", "S2", "D0") if c.kind == "vector" and s in c.reads and c.views.get(s) == {"f"} and c.widths.get(s) == 32]
    if not narrow: continue
    checked += 1
    for trial in range(4):
      st = _state(c, n, rng)
      for s in narrow:
        pick = rng.integers(0, 3, n)
        normal = (rng.standard_normal(n) * 10.0 ** rng.integers(-6, 7)).astype(np.float32).view(np.uint32).astype(np.uint64)
        setattr(st, s, np.where(pick == 0, rng.integers(0, 2**32, n, dtype=np.uint64), np.where(pick == 1, normal, rng.choice(F32_SPECIAL, n))))
      modes = dict(MODE_IEEE=bool(trial % 2), MODE_DENORM32=(3, 0, 1, 3)[trial], MODE_ROUND32=(0, 1, 2, 3)[trial], MODE_DENORM16=3, MODE_ROUND16=0)
      wide, thin = (OpState(**{**st.__dict__, **modes}) for _ in range(2))
      for s in narrow: setattr(thin, s, np.asarray(getattr(st, s)).astype(np.uint32))
      c.fn(wide); c.fn(thin)
      for w in c.writes:
        a, b = np.asarray(getattr(wide, w)), np.asarray(getattr(thin, w))
        if a.dtype != b.dtype or not np.array_equal(a, b): bad.append((opc.name, trial, w))
  assert checked > 100 and not bad, bad[:10]
