"""emu.native: the CPU's fused multiply-add (compiled at run time through libLLVM) agrees bit for bit with numerics' numpy paths
(TwoSum and round-to-odd, themselves checked against exact rational arithmetic in test_numerics) on random values of every
magnitude, constructed rounding ties, overflow, signed zeros, infinities and NaNs (whose payloads the numpy path decides)."""
import os, subprocess, sys
import numpy as np
import pytest
from emu import native
from emu.pcode import numerics as N

pytestmark = pytest.mark.skipif(not native.available(), reason=f"no native kernels on this machine: {native.NATIVE.why}")

def _operands(dt, n=200_000, seed=0):
  rng = np.random.default_rng(seed)
  it, bits = (np.uint32, 32) if dt == np.float32 else (np.uint64, 64)
  raw = [rng.integers(0, 1 << bits, n, dtype=np.uint64).astype(it).view(dt) for _ in range(3)]   # every exponent, NaNs included
  normal = [rng.standard_normal(n).astype(dt) for _ in range(3)]
  # ties: a*b exact, c chosen so that a*b + c lies halfway between two neighbours of the format (and just off it)
  mant = 24 if dt == np.float32 else 53
  a = (1 + rng.integers(1, 1 << 10, n) * 2.0 ** -11).astype(dt)
  b = (1 + rng.integers(1, 1 << 10, n) * 2.0 ** -11).astype(dt)
  c = (-(a.astype(np.float64) * b) + 2.0 ** (1 - mant) * rng.integers(-3, 4, n)).astype(dt)
  special = np.array([0.0, -0.0, np.inf, -np.inf, 1.0, -1.0, np.finfo(dt).max, np.finfo(dt).tiny, np.finfo(dt).smallest_subnormal], dt)
  grid = np.stack(np.meshgrid(special, special, special), axis=0).reshape(3, -1)
  return [np.concatenate([r, m, t, g]) for r, m, t, g in zip(raw, normal, (a, b, c), grid)]

@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
def test_native_fma_equals_the_numpy_path(dt, monkeypatch):
  a, b, c = _operands(dt)
  fma = N.fma_f32 if dt == np.float32 else N.fma_f64
  got = fma(a, b, c)
  monkeypatch.setattr(native, "fma", lambda *x: None)   # numerics' own path
  want = fma(a, b, c)
  it = np.uint32 if dt == np.float32 else np.uint64
  assert got.dtype == want.dtype and got.shape == want.shape
  bad = np.nonzero(got.view(it) != want.view(it))[0]
  assert len(bad) == 0, [(a[i], b[i], c[i], got[i], want[i]) for i in bad[:5]]

def test_scalars_broadcast_and_keep_their_shape():
  assert native.fma(np.float32(2), np.float32(3), np.float32(1))[0].shape == ()
  r, some_nan = native.fma(np.float64(2), np.arange(4.0), 1.0)
  assert r.tolist() == [1.0, 3.0, 5.0, 7.0] and not some_nan
  assert native.fma(np.arange(3, dtype=np.int64), 1, 1) is None   # integers: not a float fma

@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
def test_the_nan_flag_says_whether_any_result_is_nan(dt):
  # each NaN source (an operand NaN, inf * 0, inf - inf) in one lane of many, and in none
  x = np.ones(1000, dt)
  assert native.fma(x, x, x)[1] is False
  for lane, (a, b, c) in enumerate([(np.nan, 1, 1), (np.inf, 0, 1), (np.inf, 1, -np.inf), (1, 1, np.nan)]):
    av, bv, cv = x.copy(), x.copy(), x.copy()
    av[lane * 250 + 3], bv[lane * 250 + 3], cv[lane * 250 + 3] = a, b, c
    r, some_nan = native.fma(av, bv, cv)
    assert some_nan is True and np.isnan(r).sum() == 1

@pytest.mark.parametrize("name", native.LIBM)
def test_libm_is_the_c_librarys_function(name):
  # what numerics and native regions both compute for exp2/log2: the C library's double function, as Python's math module calls it
  import math
  rng = np.random.default_rng(1)
  x = np.concatenate([rng.uniform(-1000, 1000, 20_000), rng.standard_normal(20_000), 2.0 ** rng.integers(-1074, 1023, 5_000),
                      [0.0, -0.0, 1.0, 1024.0, -1075.0, np.inf, -np.inf, np.nan, -1.0, 5e-324]])
  got = native.libm(name, x)
  def c_library(t):
    try: return getattr(math, name)(t)
    except OverflowError: return math.inf   # (exp2 past the largest double: the C function's result)
    except ValueError: return math.nan       # (log2 of a negative: NaN; of zero, -inf below)
  want = np.array([-math.inf if name == "log2" and t == 0 else c_library(t) for t in x])
  same = (got == want) | (np.isnan(got) & np.isnan(want))
  assert same.all(), [(x[i], got[i], want[i]) for i in np.nonzero(~same)[0][:5]]
  assert native.libm(name, np.float64(3.0)).shape == () and native.libm(name, x.astype(np.float32)) is None   # float64 only

def test_numerics_exp2_and_log2_compute_through_the_c_library(monkeypatch):
  # numpy's own loops may be another library's on some CPUs (a vector library's): the numpy path takes native.libm's results (here a
  # stand-in library's, 3.0 for everything) so that it agrees with native regions, and numpy's only where native.libm gives none
  x = np.array([1.5, -3.25, 100.0], np.float32)
  monkeypatch.setattr(native, "libm", lambda name, v: np.full(np.shape(v), 3.0))
  assert N.exp2(x).tolist() == [3.0] * 3 and N.log2(x).tolist() == [3.0] * 3
  monkeypatch.setattr(native, "libm", lambda name, v: None)
  assert N.exp2(x).tolist() == np.exp2(x.astype(np.float64)).astype(np.float32).tolist()

def test_emu_native_0_turns_the_kernels_off():
  code = "from emu import native; print(native.available(), native.NATIVE.why)"
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, "EMU_NATIVE": "0"}, check=True).stdout
  assert out.strip() == "False EMU_NATIVE=0"

TABLE_IR = """@table = private unnamed_addr constant [4 x i64] [i64 11, i64 -22, i64 33, i64 4000000000]
define i64 @pick(i64 %i) {
  %j = and i64 %i, 3
  %p = getelementptr inbounds [4 x i64], ptr @table, i64 0, i64 %j
  %v = load i64, ptr %p
  ret i64 %v
}
"""
SIN_IR = """declare double @sin(double)
define double @f(double %x) {
  %y = call double @sin(double %x)
  ret double %y
}
"""

def _far_from_libm(n) -> bool:
  """Whether the next object placed may lie too far from libm's `sin` for a PC-relative call (x86-64: +-2 GB)."""
  import ctypes, mmap
  if not n._mems or n._used + (1 << 16) > len(n._mems[-1]): n._arena(1 << 16)   # (where the next objects go)
  here = ctypes.addressof(ctypes.c_char.from_buffer(n._mems[-1]))
  sin = ctypes.cast(n._c_library().sin, ctypes.c_void_p).value
  return abs(here - sin) > (1 << 31) - 2 * native.ARENA_BYTES - native.IMAGE_PROBE - mmap.PAGESIZE

def test_an_object_loaded_again_uses_its_kept_image_only_when_it_does_not_depend_on_its_address(tmp_path, monkeypatch):
  # the table's address is relative to the code (a PC-relative relocation): its image is kept and copied as it is by later loads;
  # a call into libm is not (the image holds where libm is): it is loaded from its object every time
  import ctypes
  monkeypatch.setenv("EMU_PCODE_CACHE", str(tmp_path / "pcode"))
  n = native.NATIVE
  pick, f = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64), ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_double)
  for ir, sig, args, want, kept in ((TABLE_IR, pick, range(8), [11, -22, 33, 4000000000] * 2, True),
                                    (SIN_IR, f, [0.5, -2.0], [float(np.sin(0.5)), float(np.sin(-2.0))], False)):
    if ir is SIN_IR and _far_from_libm(n):   # (found by the CI: a worker that has mapped much memory places later arenas far off)
      pytest.skip("this process's code arena lies over 2 GB from libm: a direct call's 32-bit relocation cannot reach it (the "
                  "native code the emulator makes calls libm through LIBM's table, never directly)")
    key = n.key(ir)
    assert (fn := n.function(ir, sig)) is not None, n.failure
    assert [fn(x) for x in args] == want   # compiled (the object kept, and its image where it may be)
    assert (n.kept_image(key) is not None) == kept   # (what a region's record carries)
    placed = []
    monkeypatch.setattr(type(n), "_place_image", lambda self, image, real=type(n)._place_image: placed.append(1) or real(self, image))
    for _ in range(2):   # loaded by key: from its image where one was kept, else from the object each time
      fn = n.function_by_key(key, sig)
      assert [fn(x) for x in args] == want
    assert (tmp_path / "native" / f"{key}.img").exists() == kept and placed == ([1, 1] if kept else [])
    monkeypatch.undo()
    monkeypatch.setenv("EMU_PCODE_CACHE", str(tmp_path / "pcode"))
