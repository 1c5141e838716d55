"""Helpers shared by the test_semantics_* files (on top of test_ops' run/u32/f32bits/asf32/Mem), and checks of the helpers
themselves so a broken helper cannot make the semantic tests pass vacuously."""
import struct
from fractions import Fraction
import numpy as np
from test_ops import asf32, f32bits, u32

def f16bits(*v): return np.array(v, dtype=np.float16).view(np.uint16).astype(np.uint64)
def f64bits(*v): return np.array(v, dtype=np.float64).view(np.uint64)
def asf16(b): return (np.asarray(b).astype(np.uint64) & 0xffff).astype(np.uint16).view(np.float16)
def asf64(b): return np.asarray(b).astype(np.uint64).view(np.float64)
def bits(*v): return np.array([x & (2**64 - 1) for x in v], dtype=np.uint64)
def fb32(x): return struct.unpack("<I", struct.pack("<f", x))[0]
def fb64(x): return struct.unpack("<Q", struct.pack("<d", x))[0]
def lanes(*v): return np.array(v, dtype=np.uint64)
def sx(v, w): return (v & ((1 << w) - 1)) - ((v >> (w - 1) & 1) << w)

F32_SNAN, F32_QNAN, F16_SNAN, F16_QNAN = 0x7f800001, 0x7fc00000, 0x7c01, 0x7e00
F64_SNAN, F64_QNAN = 0x7ff0000000000001, 0x7ff8000000000000

def round_fraction(q:Fraction, dt) -> float:
  """Round an exact rational to the nearest `dt` (np.float16/32/64), ties to even, by bracketing with nextafter."""
  with np.errstate(over="ignore"): x = dt(float(q))  # float(q) is correctly rounded to f64; re-round only via the neighbours below
  if not np.isfinite(x): return x  # beyond dt's range: callers that need the exact overflow boundary check it themselves
  lo, hi = (x, np.nextafter(x, dt(np.inf))) if Fraction(float(x)) <= q else (np.nextafter(x, dt(-np.inf)), x)
  if not (np.isfinite(lo) and np.isfinite(hi)): return x
  dlo, dhi = q - Fraction(float(lo)), Fraction(float(hi)) - q
  if dlo != dhi: return lo if dlo < dhi else hi
  return lo if int(np.array(lo).view({np.float16: np.uint16, np.float32: np.uint32, np.float64: np.uint64}[dt])) % 2 == 0 else hi

def fma_ref(a, b, c, dt):
  """Correctly rounded a*b+c in dt for finite a, b, c (the exact-zero sign follows IEEE: -0 only if both addends are -0)."""
  q = Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
  if q == 0: return dt(a) * dt(b) + dt(c)
  return round_fraction(q, dt)

def test_helpers_round_trip():
  assert list(asf32(f32bits(1.5, -2.0))) == [1.5, -2.0] and list(asf16(f16bits(0.5))) == [0.5] and list(asf64(f64bits(1e300))) == [1e300]
  assert fb32(1.0) == 0x3f800000 and fb64(-2.0) == 0xc000000000000000 and list(u32(-1)) == [0xffffffff] and sx(0xff, 8) == -1
  assert round_fraction(Fraction(1) + Fraction(1, 2**24), np.float32) == np.float32(1.0)  # tie -> even
  assert round_fraction(Fraction(1) + Fraction(3, 2**24), np.float32) == np.float32(1 + 2**-22)
  assert fma_ref(np.float32(1 + 2**-23), np.float32(1 + 2**-23), np.float32(-1), np.float32) == np.float32(2**-22 + 2**-46)

def test_shifts_over_lanes_follow_python_integer_shifts():
  # shl/shr over uint64 lanes, with the amount one number (int, numpy scalar) or an array, against Python ints: shifts of 64 or
  # more give 0 (unsigned) or the sign (signed); a 0-d x keeps its shape
  import numpy as np
  from emu.pcode.runtime import shl, shr
  rng = np.random.default_rng(5)
  xs = np.concatenate([rng.integers(0, 1 << 64, 64, dtype=np.uint64), np.array([0, 1, (1 << 63), (1 << 64) - 1], dtype=np.uint64)])
  signed = lambda v: v - (1 << 64) if v >> 63 else v
  for k in (0, 1, 31, 32, 63, 64, 65, 200):
    want_l = [(int(x) << k) & ((1 << 64) - 1) for x in xs]
    want_r = [int(x) >> k for x in xs]
    want_a = [(signed(int(x)) >> k) & ((1 << 64) - 1) for x in xs]
    for amount in (k, np.uint64(k), np.full(len(xs), k, dtype=np.uint64)):
      assert shl(xs, amount).tolist() == want_l, (k, type(amount))
      assert shr(xs, amount).tolist() == want_r, (k, type(amount))
      assert shr(xs, amount, signed=True).tolist() == want_a, (k, type(amount))
  assert int(shr(np.asarray(np.uint64(1 << 40)), 8)) == 1 << 32 and shr(np.asarray(np.uint64(1 << 40)), 8).shape == ()
