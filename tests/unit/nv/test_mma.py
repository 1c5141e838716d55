"""mma.sync.aligned on the PTX emulator, every form it runs, against numpy over the logical matrices.

Each lane's fragment registers are packed here from the PTX ISA's own per-figure formulas (section 9.7.14.5, "Matrix
Fragments for mma.mMnNkK"), transcribed below operand by operand and independent of emu.nv.mma's single rule: a kernel
loads them, runs one mma and stores D; D's elements are put back in place with the ISA's accumulator formula and compared
with A @ B + C. Values are small dyadic numbers (or integers), so the exact result is representable and the comparison is
exact, and they are distinct enough that any misplaced element changes the answer."""
import numpy as np
import pytest
from emu.common.memory import MemoryMap
from emu.nv import isa, ptx, simt

HEAD = ".version 8.7\n.target sm_90\n.address_size 64\n"
BITS = {"f16": 16, "bf16": 16, "tf32": 32, "e4m3": 8, "e5m2": 8, "s8": 8, "u8": 8, "s4": 4, "u4": 4}

def isa_a(shape:str, t:str, g:int, tig:int, i:int) -> tuple[int, int]:
  """(row, col) of element a_i, the ISA's formula for this shape and type."""
  if shape == "m16n8k4": return (g if i == 0 else g + 8), tig
  if shape == "m16n8k8" and t == "tf32": return (g if i in (0, 2) else g + 8), (tig if i in (0, 1) else tig + 4)
  if shape == "m16n8k8": return (g if i < 2 else g + 8), tig * 2 + (i & 1)
  if shape == "m16n8k16" and BITS[t] == 16:
    return (g if 0 <= i < 2 or 4 <= i < 6 else g + 8), (tig * 2 + (i & 1) if i < 4 else tig * 2 + (i & 1) + 8)
  if shape == "m16n8k16": return (g if i < 4 else g + 8), tig * 4 + (i & 3)
  if shape == "m16n8k32" and BITS[t] == 8:
    return (g if 0 <= i < 4 or 8 <= i < 12 else g + 8), (tig * 4 + (i & 3) if i < 8 else tig * 4 + (i & 3) + 16)
  if shape == "m16n8k32": return (g if i < 8 else g + 8), tig * 8 + (i & 7)
  if shape == "m16n8k64":
    return (g if 0 <= i < 8 or 16 <= i < 24 else g + 8), (tig * 8 + (i & 7) if i < 16 else tig * 8 + (i & 7) + 32)
  if shape == "m8n8k16": return g, tig * 4 + i
  if shape == "m8n8k32": return g, tig * 8 + i
  raise AssertionError(shape)

def isa_b(shape:str, t:str, g:int, tig:int, i:int) -> tuple[int, int]:
  """(row, col) of element b_i."""
  if shape == "m16n8k4": return tig, g
  if shape == "m16n8k8" and t == "tf32": return (tig if i == 0 else tig + 4), g
  if shape == "m16n8k8": return tig * 2 + i, g
  if shape == "m16n8k16" and BITS[t] == 16: return (tig * 2 + (i & 1) if i < 2 else tig * 2 + (i & 1) + 8), g
  if shape == "m16n8k16": return tig * 4 + i, g
  if shape == "m16n8k32" and BITS[t] == 8: return (tig * 4 + (i & 3) if i < 4 else tig * 4 + (i & 3) + 16), g
  if shape == "m16n8k32": return tig * 8 + i, g
  if shape == "m16n8k64": return (tig * 8 + (i & 7) if i < 8 else tig * 8 + (i & 7) + 32), g
  if shape == "m8n8k16": return tig * 4 + i, g
  if shape == "m8n8k32": return tig * 8 + i, g
  raise AssertionError(shape)

def isa_c(m:int, g:int, tig:int, i:int) -> tuple[int, int]:
  """(row, col) of element c_i / d_i."""
  if m == 8: return g, tig * 2 + i
  return (g if i < 2 else g + 8), tig * 2 + (i & 1)

def fp8_table(t:str) -> np.ndarray:
  """The value of every byte in OCP e4m3 (bias 7, no infinities, S.1111.111 NaN) or e5m2 (bias 15, IEEE-style), by the format's
  definition."""
  e_bits, m_bits, bias = (4, 3, 7) if t == "e4m3" else (5, 2, 15)
  out = np.zeros(256)
  for b in range(256):
    s, e, m = b >> 7, (b >> m_bits) & ((1 << e_bits) - 1), b & ((1 << m_bits) - 1)
    if t == "e4m3" and e == 15 and m == 7 or t == "e5m2" and e == 31: v = np.nan
    elif e == 0: v = m / (1 << m_bits) * 2.0 ** (1 - bias)
    else: v = (1 + m / (1 << m_bits)) * 2.0 ** (e - bias)
    out[b] = -v if s else v
  return out

def draw(t:str, shape:tuple, rng) -> tuple[np.ndarray, np.ndarray]:
  """(values, raw bits) of a random matrix of type t with small dyadic (or integer) entries."""
  if t in ("s8", "u8", "s4", "u4"):
    lo, hi = {"s8": (-128, 128), "u8": (0, 256), "s4": (-8, 8), "u4": (0, 16)}[t]
    v = rng.integers(lo, hi, shape)
    return v, v & ((1 << BITS[t]) - 1)
  if t in ("e4m3", "e5m2"):
    table = fp8_table(t)
    ok = np.nonzero(np.isfinite(table) & (np.abs(table) <= 8))[0]
    b = rng.choice(ok, shape)
    return table[b], b
  v = rng.integers(-64, 64, shape) / 16.0   # exact in f16, bf16 (7 bits of mantissa suffice) and tf32
  if t == "f16": return v, v.astype(np.float16).view(np.uint16).astype(np.int64)
  if t == "bf16": return v, (v.astype(np.float32).view(np.uint32) >> 16).astype(np.int64)
  return v, v.astype(np.float32).view(np.uint32).astype(np.int64)   # tf32 (and f32 accumulators)

def pack(bits:np.ndarray, where, t:str, per_lane:int, m:int) -> np.ndarray:
  """(32, registers) u32 words: lane L's element i is bits[where(g, tig, i)], P elements a register, low bits first."""
  width = BITS.get(t, 32)
  per = 32 // width
  words = np.zeros((32, per_lane // per), np.uint64)
  for lane in range(32):
    for i in range(per_lane):
      r, c = where(lane >> 2, lane % 4, i)
      words[lane, i // per] |= np.uint64(int(bits[r, c]) & ((1 << width) - 1)) << np.uint64(width * (i % per))
  return words.astype(np.uint32)

def run_mma(mods:str, d_regs:int, a_regs:int, b_regs:int, c_regs:int, a:np.ndarray, b:np.ndarray, c:np.ndarray) -> np.ndarray:
  """One warp per leading index of `a`/`b`/`c` ((warps, 32, registers) u32 words); returns D's words the same way."""
  warps = a.shape[0]
  bufs = [np.ascontiguousarray(x.reshape(-1)) for x in (a, b, c)] + [np.zeros(warps * 32 * d_regs, np.uint32)]
  mem = MemoryMap()
  for x in bufs: mem.map(x.ctypes.data, x.nbytes, backing=x.view(np.uint8))
  vec = lambda p, n: "{" + ", ".join(f"%{p}{i}" for i in range(n)) + "}"  # noqa: E731
  body = ["mov.u32 %t, %tid.x;"]
  for name, n in (("a", a_regs), ("b", b_regs), ("c", c_regs), ("d", d_regs)):
    body += [f"ld.param.u64 %p{name}, [{name}+0];", f"mul.wide.u32 %o, %t, {4 * n};", f"add.u64 %p{name}, %p{name}, %o;"]
    if name != "d": body += [f"ld.global.b32 %{name}{i}, [%p{name}+{4 * i}];" for i in range(n)]
  body.append(f"mma.sync.aligned.{mods} {vec('d', d_regs)}, {vec('a', a_regs)}, {vec('b', b_regs)}, {vec('c', c_regs)};")
  body += [f"st.global.b32 [%pd+{4 * i}], %d{i};" for i in range(d_regs)]
  regs = (".reg .u32 %t;\n.reg .u64 %o, %pa, %pb, %pc, %pd;\n" +
          "".join(f".reg .b32 {vec(p, n)[1:-1]};\n" for p, n in (("a", a_regs), ("b", b_regs), ("c", c_regs), ("d", d_regs))))
  src = HEAD + ".visible .entry k(.param .u64 a, .param .u64 b, .param .u64 c, .param .u64 d)\n{\n" + regs + "\n".join(body) + "\n}\n"
  simt.run(isa.parse(src).kernels["k"], (1,), (32 * warps,), [x.ctypes.data for x in bufs], mem)
  return bufs[3].reshape(warps, 32, d_regs)

FORMS = [("m16n8k4", "tf32", "tf32", "f32"), ("m16n8k8", "f16", "f16", "f32"), ("m16n8k8", "f16", "f16", "f16"),
         ("m16n8k8", "bf16", "bf16", "f32"), ("m16n8k8", "tf32", "tf32", "f32"), ("m16n8k16", "f16", "f16", "f32"),
         ("m16n8k16", "f16", "f16", "f16"), ("m16n8k16", "bf16", "bf16", "f32"), ("m16n8k16", "e4m3", "e4m3", "f32"),
         ("m16n8k16", "e5m2", "e4m3", "f32"), ("m16n8k16", "s8", "s8", "s32"), ("m16n8k16", "u8", "s8", "s32"),
         ("m16n8k32", "e4m3", "e4m3", "f32"), ("m16n8k32", "e5m2", "e5m2", "f32"), ("m16n8k32", "e4m3", "e4m3", "f16"),
         ("m16n8k32", "s8", "u8", "s32"), ("m16n8k32", "s4", "s4", "s32"), ("m16n8k64", "u4", "s4", "s32"),
         ("m8n8k16", "s8", "s8", "s32"), ("m8n8k32", "u4", "u4", "s32")]

@pytest.mark.parametrize("shape,at,bt,acc", FORMS)
def test_every_form_matches_numpy_over_the_isa_fragment_layouts(shape, at, bt, acc):
  m, n, k = (int(x) for x in shape[1:].replace("n", " ").replace("k", " ").split())
  rng = np.random.default_rng(hash((shape, at, bt, acc)) % 2**32)
  warps = 2   # two warps with different matrices: each warp's lanes must only see their own
  per_a, per_b, per_c = m * k // 32, k * n // 32, m * n // 32
  words, exp = {"a": [], "b": [], "c": []}, []
  for _ in range(warps):
    (av, ab), (bv, bb) = draw(at, (m, k), rng), draw(bt, (k, n), rng)
    cv = rng.integers(-1000, 1000, (m, n)) if acc == "s32" else rng.integers(-64, 64, (m, n)) / 8.0
    cb = (cv & 0xffffffff) if acc == "s32" else (cv.astype(np.float16).view(np.uint16).astype(np.int64) if acc == "f16" else
                                                  cv.astype(np.float32).view(np.uint32).astype(np.int64))
    words["a"].append(pack(ab, lambda g, tig, i: isa_a(shape, at, g, tig, i), at, per_a, m))
    words["b"].append(pack(bb, lambda g, tig, i: isa_b(shape, bt, g, tig, i), bt, per_b, m))
    words["c"].append(pack(cb, lambda g, tig, i: isa_c(m, g, tig, i), "f16" if acc == "f16" else "f32", per_c, m))
    exp.append(av @ bv + cv)
  c_regs = per_c // 2 if acc == "f16" else per_c
  got_words = run_mma(f"{shape}.row.col.{acc}.{at}.{bt}.{acc}", c_regs, per_a * BITS[at] // 32, per_b * BITS[bt] // 32, c_regs,
                      *(np.stack(words[x]) for x in "abc"))
  for w in range(warps):
    got = np.zeros((m, n))
    for lane in range(32):
      for i in range(per_c):
        r, col = isa_c(m, lane >> 2, lane % 4, i)
        word = int(got_words[w, lane, i // 2 if acc == "f16" else i])
        if acc == "f16": got[r, col] = np.uint16((word >> (16 * (i % 2))) & 0xffff).view(np.float16)
        elif acc == "s32": got[r, col] = np.uint32(word).view(np.int32)
        else: got[r, col] = np.uint32(word).view(np.float32)
    want = exp[w].astype({"f16": np.float16, "f32": np.float32, "s32": np.int64}[acc])   # the exact sum, rounded once
    assert np.array_equal(got, want.astype(np.float64)), f"warp {w}: {np.argwhere(got != want)[:8].tolist()}"

def test_integer_accumulators_wrap_or_saturate():
  # all-ones A (s8 127) and B (s8 127) over k = 16: each product sum is 16 * 127^2 = 258064; with C = 2^31 - 100000 the sum
  # passes INT_MAX: it wraps to negative without .satfinite and clamps to INT_MAX with it (PTX ISA mma, .satfinite)
  a = np.full((1, 32, 2), 0x7f7f7f7f, np.uint32)
  b = np.full((1, 32, 1), 0x7f7f7f7f, np.uint32)
  c = np.full((1, 32, 4), 2**31 - 100000, np.uint32)
  total = 2**31 - 100000 + 16 * 127 * 127
  wrapped = run_mma("m16n8k16.row.col.s32.s8.s8.s32", 4, 2, 1, 4, a, b, c).view(np.int32)
  assert (wrapped == total - 2**32).all()
  clamped = run_mma("m16n8k16.row.col.satfinite.s32.s8.s8.s32", 4, 2, 1, 4, a, b, c).view(np.int32)
  assert (clamped == 2**31 - 1).all()

@pytest.mark.parametrize("mods,operands,why", [
  ("m16n8k16.row.col.f32.tf32.tf32.f32", "{%a0,%a1,%a2,%a3}, {%a0,%a1}, {%a0,%a1,%a2,%a3}", "does not take .tf32"),
  ("m16n8k8.row.col.f32.f16.f16.f32", "{%a0,%a1,%a2,%a3}, {%a0}, {%a0,%a1,%a2,%a3}", "operand a is a vector of 2 registers"),
  ("m16n8k8.row.col.f32.f16.f16.f32", "{%a0,%a1}, {%a0,%a1}, {%a0,%a1,%a2,%a3}", "operand b is a vector of 1 registers"),
  ("m16n8k16.row.col.f16.bf16.bf16.f32", "{%a0,%a1}, {%a0,%a1,%a2,%a3}, {%a0,%a1}, {%a0,%a1,%a2,%a3}", "accumulates in f32"),
  ("m16n8k16.col.row.f32.f16.f16.f32", "{%a0,%a1,%a2,%a3}, {%a0,%a1,%a2,%a3}, {%a0,%a1}, {%a0,%a1,%a2,%a3}", "exactly .row.col"),
  ("m16n8k16.row.col.f32.f16.bf16.f32", "{%a0,%a1,%a2,%a3}, {%a0,%a1,%a2,%a3}, {%a0,%a1}, {%a0,%a1,%a2,%a3}", "multiply .f16 by .bf16"),
  ("m8n8k4.row.col.f32.f16.f16.f32", "{%a0,%a1,%a2,%a3}, {%a0,%a1}, {%a0,%a1}, {%a0,%a1,%a2,%a3}", "not modelled"),
  ("m16n8k8.row.col.f64.f64.f64.f64", "{%a0,%a1,%a2,%a3}, {%a0,%a1,%a2,%a3}, {%a0,%a1}, {%a0,%a1,%a2,%a3}", "not modelled"),
  ("m16n8k16.row.col.satfinite.f32.f16.f16.f32", "{%a0,%a1,%a2,%a3}, {%a0,%a1,%a2,%a3}, {%a0,%a1}, {%a0,%a1,%a2,%a3}", "satfinite"),
])
def test_forms_the_isa_does_not_define_are_refused_by_name(mods, operands, why):
  if operands.count("{") == 3: operands = "{%a0,%a1,%a2,%a3}, " + operands
  src = HEAD + f".visible .entry k()\n{{\n.reg .b32 %a<4>;\nmma.sync.aligned.{mods} {operands};\n}}\n"
  with pytest.raises(ptx.PTXError, match=why): isa.parse(src)
