"""Every hand-written matrix op of every table (rdna3 WMMA, rdna4 WMMA/SWMMAC, gfx942/gfx950 MFMA/SMFMAC), on one input that
needs no knowledge of how K is spread over lanes and registers: every row of A holds one value a_i along K, every column of B
one value b_j, so D[i][j] = K' * a_i * b_j + C[i][j] whatever the K order (K' = K; sparse ops: K / 2, two of every four A
elements). What the test does need is where a lane's row/column and C/D elements live, and each format's codes; both come from
the ISA guides (layouts: test_matrix_more.py, test_rdna4_cdna.py, and the RDNA3 guide's WMMA section quoted below) and the
OCP/FNUZ float8 definitions, not from emu.pcode. The op's name gives M, K, blocks and formats (parsed here)."""
import re
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.cdna import enum as cdna
from tinygrad.runtime.autogen.amd.rdna3 import enum as rdna3
from tinygrad.runtime.autogen.amd.rdna4 import enum as rdna4
from emu.pcode import OpState, compile_op
from emu.pcode.handwritten import HANDWRITTEN_CDNA, HANDWRITTEN_RDNA3, HANDWRITTEN_RDNA4
from test_matrix_more import run_mfma, run_sparse
from test_rdna4_cdna import pack_rdna4_acc

ROW_VALUES, COL_VALUES = (1, 2, 3, 1, 2, 1, 3, 2, 1, 1, 2, 3, 2, 1, 3, 1), (2, 1, 1, 3, 2, 1, 2, 3, 1, 2, 1, 1, 3, 2, 1, 2)

def f8(v:float, ebits:int, mbits:int, bias:int) -> int:
  """The code of a small positive integer in a float8 format of the given exponent/mantissa bits and bias."""
  e = int(np.floor(np.log2(v)))
  return ((e + bias) << mbits) | int(round((v / 2.0 ** e - 1) * (1 << mbits)))

def code(v:float, fmt:str, fnuz:bool) -> tuple[int, int]:
  """(bits, code) of value v in a source format (gfx942's float8 are FNUZ: biases 8 and 16; OCP: 7 and 15)."""
  if fmt in ("F32", "XF32"): return 32, int(np.float32(v).view(np.uint32))
  if fmt == "F64": return 64, int(np.float64(v).view(np.uint64))
  if fmt == "F16": return 16, int(np.float16(v).view(np.uint16))
  if fmt == "BF16": return 16, int(np.float32(v).view(np.uint32)) >> 16
  if fmt in ("I8", "IU8"): return 8, int(v)
  if fmt == "IU4": return 4, int(v)
  if fmt == "FP8": return 8, f8(v, 4, 3, 8 if fnuz else 7)
  if fmt == "BF8": return 8, f8(v, 5, 2, 16 if fnuz else 15)
  raise ValueError(fmt)

SPARSE_INDEX = 0x44444444   # every run of four K: its two A elements at positions 0 and 1 (2-bit indices 0, 1)

def repeated(c:int, w:int) -> int:
  """A 32-bit register full of the w-bit code c (w = 64: the low word of a register pair is handled by the caller)."""
  return sum(c << (w * i) for i in range(32 // w)) if w < 32 else c

NAME = re.compile(r"V_(S?)(MFMA|WMMA|SWMMAC|MFMAC)_(SCALE_)?(F32|I32|F64|F16|BF16)_(\d+)X(\d+)X(\d+)(?:_(\d+)B)?_(\w+)")

def parse(name:str) -> dict:
  m = NAME.fullmatch(name)
  srcs = m[9].split("_")
  return {"sparse": m[1] == "S" or m[2] == "SWMMAC", "scaled": bool(m[3]), "dst": m[4], "m": int(m[5]), "k": int(m[7]),
          "blocks": int(m[8] or 1), "a": srcs[0], "b": srcs[-1]}

def expected(p:dict, c:np.ndarray) -> np.ndarray:
  keff = p["k"] // 2 if p["sparse"] else p["k"]
  a = np.array(ROW_VALUES * 4)[:p["m"]].astype(np.float64)
  b = np.array(COL_VALUES * 4)[:p["m"]].astype(np.float64)
  return keff * a[:, None] * b[None, :] + c

# ---- CDNA (wave64): run_mfma / run_sparse place A's rows, B's columns and C/D as the CDNA3 guide lays them out ----
CDNA_OPS = [(t, n) for t in ("gfx942", "gfx950") for n in HANDWRITTEN_CDNA[t] if "MFMA" in n]

@pytest.mark.parametrize("target,name", CDNA_OPS, ids=[f"{t}-{n}" for t, n in CDNA_OPS])
def test_every_cdna_matrix_op_computes_k_products_per_element(target, name):
  p, fnuz = parse(name), target == "gfx942"
  if p["a"] == "F8F6F4": p["a"] = p["b"] = "FP8"   # CBSZ = BLGP = 0: fp8 (E4M3) A and B
  m, k, blocks = p["m"], p["k"], p["blocks"]
  (wa, _), (wb, _) = code(1, p["a"], fnuz), code(1, p["b"], fnuz)
  a_codes = np.array([[[code(ROW_VALUES[i % 16], p["a"], fnuz)[1]] * k for i in range(m)]] * blocks)
  b_codes = np.array([[[code(COL_VALUES[j % 16], p["b"], fnuz)[1] for j in range(m)]] * k] * blocks)
  rng = np.random.default_rng(len(name))
  c = rng.integers(-4, 5, (blocks, m, m)).astype(np.float64)
  dst = {"I32": "I32", "F64": "F64"}.get(p["dst"], "F32")
  op = getattr(cdna.VOP3PX2Op if p["scaled"] else cdna.VOP3POp, name)
  if p["sparse"]:
    a_regs = np.full((64, 8), repeated(a_codes[0, 0, 0], wa), np.uint32)   # compressed A: every element a_i in each lane's row
    for lane in range(64): a_regs[lane] = repeated(a_codes[0, lane % m, 0], wa)
    got = run_sparse(target, op, a_regs, b_codes, c, m, k, wa, dst, np.full(64, SPARSE_INDEX, np.uint32), 0)[None]
  else:
    extra = {"SCALE_SRC0": np.full(64, 0x7f7f7f7f, np.uint64), "SCALE_SRC1": np.full(64, 0x7f7f7f7f, np.uint64), "OPSEL": 0,
             "OPSEL_HI": 0} if p["scaled"] else {}
    got = run_mfma(target, op, a_codes, b_codes, c, m, k, blocks, wa, dst, wb=wb, **extra)
  want = np.stack([expected(p, c[bl]) for bl in range(blocks)])
  np.testing.assert_array_equal(got, want.astype({"F64": np.float64, "I32": np.int32}.get(dst, np.float32)))

# ---- RDNA4 (wave32, no lane duplication): lane l holds row (A) / column (B) l % 16; C/D as test_rdna4_cdna.pack_rdna4_acc ----
RDNA4_OPS = sorted(HANDWRITTEN_RDNA4)

def rdna4_d(vgpr:np.ndarray, base:int, packed:bool) -> np.ndarray:
  out = np.zeros((16, 16), np.uint64)
  for lane in range(32):
    for v in range(8):
      out[v + 8 * (lane // 16), lane % 16] = (int(vgpr[lane, base + v // 2]) >> (16 * (v % 2))) & 0xffff if packed else vgpr[lane, base + v]
  return out

def as_values(bits:np.ndarray, dst:str) -> np.ndarray:
  if dst == "F32": return bits.astype(np.uint32).view(np.float32).astype(np.float64)
  if dst == "I32": return bits.astype(np.uint32).view(np.int32).astype(np.float64)
  if dst == "F16": return bits.astype(np.uint16).view(np.float16).astype(np.float64)
  return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)   # BF16

def c_bits(c:np.ndarray, dst:str) -> np.ndarray:
  if dst in ("F32", "I32"): return c.astype(np.float32 if dst == "F32" else np.int32).view(np.uint32)
  if dst == "F16": return c.astype(np.float16).view(np.uint16)
  return c.astype(np.float32).view(np.uint32) >> 16

@pytest.mark.parametrize("name", RDNA4_OPS)
def test_every_rdna4_matrix_op_computes_k_products_per_element(name):
  p = parse(name)
  packed = p["dst"] in ("F16", "BF16")
  c = np.random.default_rng(len(name)).integers(-4, 5, (16, 16)).astype(np.float64)
  vgpr = np.zeros((32, 40), np.uint32)
  for lane in range(32):
    vgpr[lane, 0:8] = repeated(code(ROW_VALUES[lane % 16], p["a"], False)[1], code(1, p["a"], False)[0])   # A: v0..v7
    vgpr[lane, 8:16] = repeated(code(COL_VALUES[lane % 16], p["b"], False)[1], code(1, p["b"], False)[0])  # B: v8..v15
  vgpr[:, 16] = SPARSE_INDEX
  acc = pack_rdna4_acc(c_bits(c, p["dst"]), packed)
  vgpr[:, 24:24 + acc.shape[1]] = acc
  st = OpState(VGPR=vgpr, SRC0=0, SRC1=8, SRC2=16 if p["sparse"] else 24, VDST=24, OPSEL=0, NEG=0, CLAMP=0)
  compile_op("rdna4", getattr(rdna4.VOP3POp, name)).fn(st)
  np.testing.assert_array_equal(as_values(rdna4_d(st.VGPR, 24, packed), p["dst"]), expected(p, c))

# ---- RDNA3 (wave32): lane i and i + 16 hold row i of A / column i of B; register v of lane l holds D[2v + l // 16][l % 16]
# (f32/i32 whole, f16/bf16 in the low half) -- the RDNA3 guide's "WMMA" matrix layout ----
RDNA3_OPS = sorted(HANDWRITTEN_RDNA3)

@pytest.mark.parametrize("name", RDNA3_OPS)
def test_every_rdna3_wmma_computes_k_products_per_element(name):
  p = parse(name)
  c = np.random.default_rng(len(name)).integers(-4, 5, (16, 16)).astype(np.float64)
  vgpr = np.zeros((32, 48), np.uint32)
  for lane in range(32):
    vgpr[lane, 0:8] = repeated(code(ROW_VALUES[lane % 16], p["a"], False)[1], code(1, p["a"], False)[0])
    vgpr[lane, 8:16] = repeated(code(COL_VALUES[lane % 16], p["b"], False)[1], code(1, p["b"], False)[0])
    for v in range(8): vgpr[lane, 16 + v] = int(c_bits(c, p["dst"])[2 * v + lane // 16, lane % 16])
  st = OpState(VGPR=vgpr, SRC0=0, SRC1=8, SRC2=16, VDST=32, OPSEL=0, NEG=0, CLAMP=0)
  compile_op("rdna3", getattr(rdna3.VOP3POp, name)).fn(st)
  d = np.array([[st.VGPR[lane, 32 + v] & (0xffff if p["dst"] in ("F16", "BF16") else 0xffffffff) for v in range(8)] for lane in range(32)])
  got = np.zeros((16, 16), np.uint64)
  for lane in range(32):
    for v in range(8): got[2 * v + lane // 16, lane % 16] = d[lane, v]
  np.testing.assert_array_equal(as_values(got, p["dst"]), expected(p, c))

# ---- many waves in one call (CompiledOp.waves_at_once: the executor's batches) ----
MANY = [("rdna3", n) for n in RDNA3_OPS] + [("rdna4", n) for n in RDNA4_OPS] + [(t, n) for t, n in CDNA_OPS if "SCALE" not in n]

@pytest.mark.parametrize("arch,name", MANY)
def test_matrix_ops_on_many_waves_at_once_give_each_waves_own_result(arch, name):
  """Three waves of random register bits (NaN and infinity codes included) in one call equal three one-wave calls bit for bit,
  and the registers outside D are left as they were. CDNA: A and B from VGPRs, C and D in AGPRs (ACC_CD), and A/B from AGPRs."""
  cdna_op = arch.startswith("gfx")
  enum, lanes = (cdna, 64) if cdna_op else (rdna3 if arch == "rdna3" else rdna4, 32)
  op = compile_op(arch, getattr(enum.VOP3POp, name))
  assert op.waves_at_once
  rng = np.random.default_rng(len(name))
  regs = rng.integers(0, 1 << 32, (2, 3, lanes, 160), dtype=np.uint64).astype(np.uint32)   # VGPR, AGPR
  regs[:, :, :, 64] &= 0x55555555   # (a sparse op's index sets: two distinct positions per run of four)
  sparse = "SWMMAC" in name or "SMFMAC" in name
  fields = dict(SRC0=0, SRC1=16, SRC2=64 if sparse else 32, VDST=96, OPSEL=0, NEG=0, CLAMP=0)
  settings = [dict(ACC=0, ACC_CD=1), dict(ACC=3, ACC_CD=0)] if cdna_op else [{}]
  for extra in settings:
    if cdna_op: extra |= dict(CBSZ=0, ABID=0, BLGP=0)
    want, got = regs.copy(), regs.copy()
    with np.errstate(all="ignore"):
      for w in range(3): op.fn(OpState(VGPR=want[0, w], AGPR=want[1, w], **fields, **extra))
      op.fn(OpState(VGPR=got[0], AGPR=got[1], **fields, **extra))
    np.testing.assert_array_equal(got, want)
    d = 1 if extra.get("ACC_CD") else 0
    assert (got[1 - d] == regs[1 - d]).all() and (got[d, :, :, :96] == regs[d, :, :, :96]).all() and not (got[d] == regs[d]).all()
