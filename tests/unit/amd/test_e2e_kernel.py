"""End to end: kernels compiled by tinygrad's own LLVM pipeline for gfx1100, loaded from their ELF, run via AMDGPU.dispatch."""
import ctypes
import numpy as np
import pytest
from emu.amd.kernel import compile_kernel, llvm_available, run_kernel

pytestmark = pytest.mark.skipif(not llvm_available(), reason="needs libLLVM for the AMDGPU backend")

def test_elementwise_fma(bufs):
  k = compile_kernel(lambda a, b: a * b + a, (1000,), (1000,))
  rng = np.random.default_rng(0)
  a, b = rng.standard_normal(1000).astype(np.float32), rng.standard_normal(1000).astype(np.float32)
  out = np.zeros(1000, dtype=np.float32)
  stats = run_kernel(k, [a, b], out, bufs)
  np.testing.assert_allclose(out, a * b + a, rtol=1e-6, atol=1e-6)
  assert stats.waves == stats.workgroups > 0 and stats.wave_instructions > 0 and stats.cycles > 0
  assert stats.bytes_written == 4000

def test_reduce_sum_rows(bufs):
  k = compile_kernel(lambda a: a.sum(axis=1), (64, 100))
  a = np.random.default_rng(1).standard_normal((64, 100)).astype(np.float32)
  out = np.zeros(64, dtype=np.float32)
  run_kernel(k, [a], out, bufs)
  np.testing.assert_allclose(out, a.sum(axis=1), rtol=1e-4, atol=1e-4)

def test_matmul_small(bufs):
  k = compile_kernel(lambda a, b: a @ b, (32, 48), (48, 16))
  rng = np.random.default_rng(2)
  a, b = rng.standard_normal((32, 48)).astype(np.float32), rng.standard_normal((48, 16)).astype(np.float32)
  out = np.zeros((32, 16), dtype=np.float32)
  run_kernel(k, [a, b], out, bufs)
  np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-4)

def test_unary_exp_sqrt(bufs):
  k = compile_kernel(lambda a: (a.abs() + 1).sqrt() + a.exp2(), (300,))
  a = np.linspace(-3, 3, 300).astype(np.float32)
  out = np.zeros(300, dtype=np.float32)
  run_kernel(k, [a], out, bufs)
  np.testing.assert_allclose(out, np.sqrt(np.abs(a) + 1) + np.exp2(a), rtol=1e-5, atol=1e-5)

def test_kernel_ctypes_buffers_are_host_memory(bufs):
  """The MemoryMap views host memory in place: a ctypes buffer written by the kernel is visible through ctypes."""
  k = compile_kernel(lambda a, b: a + b, (64,), (64,))
  out = (ctypes.c_float * 64)()
  arr = np.ctypeslib.as_array(out)
  a, b = np.arange(64, dtype=np.float32), np.full(64, 0.5, dtype=np.float32)
  run_kernel(k, [a, b], arr, bufs)
  assert list(out)[:3] == [0.5, 1.5, 2.5]
