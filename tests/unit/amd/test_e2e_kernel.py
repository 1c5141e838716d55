"""End to end: kernels compiled by tinygrad's own LLVM pipeline for gfx1100, loaded from their ELF, run via AMDGPU.dispatch."""
import ctypes, os, struct
import numpy as np
import pytest
from emu.amd.api import Dispatch
from emu.amd.gpu import AMDGPU

LLVM = "/usr/lib/x86_64-linux-gnu/libLLVM-19.so"
pytestmark = pytest.mark.skipif(not os.path.exists(os.environ.get("LLVM_PATH", LLVM)), reason="needs libLLVM for the AMDGPU backend")

def compile_kernel(fn, *shapes, dtype="float32"):
  """Render fn(*tensors) for AMD:LLVM:gfx1100; returns (elf bytes, ProgramInfo, order) where order[i] is the input index bound
  to kernel parameter i (-1: the output)."""
  os.environ.setdefault("LLVM_PATH", LLVM)
  from tinygrad import Tensor, dtypes
  from tinygrad.uop.ops import Ops
  from tinygrad.helpers import Target, DEV
  if not DEV.device: DEV.value = "PYTHON"   # constants in the graph need a default device; nothing runs on it
  from tinygrad.renderer.llvmir import AMDLLVMRenderer
  from tinygrad.codegen import to_program
  ts = [Tensor.empty(*s, dtype=getattr(dtypes, dtype), device="PYTHON") for s in shapes]
  lin = fn(*ts).schedule_linear()
  call = [c for c in lin.src if c.op is Ops.CALL][-1]
  prg = to_program(call.src[0], AMDLLVMRenderer(Target("AMD", "LLVM", "gfx1100")))
  order = [next((i for i, t in enumerate(ts) if p in (t.uop, t.uop.base)), -1) for p in call.src[1:]]
  return prg.to_elf().lib, prg.arg, order

def load_kernel(lib:bytes, bufs):
  """Place the ELF image like tinygrad's AMDProgram does; returns (code address, rsrc1, rsrc2, rsrc3, wave32, lds bytes)."""
  from tinygrad.runtime.support.elf import elf_loader
  image, sections, relocs = elf_loader(lib)
  rodata = next(sh.header.sh_addr for sh in sections if sh.name == ".rodata")
  for off, sym, typ, addend in relocs:
    assert typ == 5
    image[off:off+8] = struct.pack("<q", sym - off + addend)
  img = np.frombuffer(bytes(image) + b"\0" * 256, dtype=np.uint8).copy()
  base = bufs.add(img, "code", writable=False)
  kd = bytes(img[rodata:rodata+64])
  group, _, _ = struct.unpack_from("<III", kd, 0)
  entry = struct.unpack_from("<q", kd, 16)[0]
  rsrc3, rsrc1, rsrc2, props = struct.unpack_from("<IIIH", kd, 44)
  lds = ((group + 511) // 512) & 0x1ff
  return base + rodata + entry, rsrc1, rsrc2 | (lds << 15), rsrc3, bool(props & 0x400)

def run(kernel, inputs, out, bufs):
  """Dispatch a compiled kernel on numpy arrays (out is written in place); returns DispatchStats."""
  lib, info, order = kernel
  arrays = [out if i < 0 else inputs[i] for i in order]
  code, rsrc1, rsrc2, rsrc3, wave32 = load_kernel(lib, bufs)
  addrs = [bufs.add(a, f"arg{i}") for i, a in enumerate(arrays)]
  kernargs = np.frombuffer(b"".join(struct.pack("<Q", a) for a in addrs), dtype=np.uint8).copy()
  ka = bufs.add(kernargs, "kernargs", writable=False)
  gsz, lsz = [int(x) for x in info.global_size], [int(x) for x in (info.local_size or (1, 1, 1))]
  d = Dispatch(code_addr=code, grid=tuple(gsz), workgroup=tuple(lsz), user_sgprs=[ka & 0xffffffff, ka >> 32], rsrc1=rsrc1, rsrc2=rsrc2,
               rsrc3=rsrc3, wave32=wave32)
  return AMDGPU("gfx1100", bufs.mem).dispatch(d)

def test_elementwise_fma(bufs):
  k = compile_kernel(lambda a, b: a * b + a, (1000,), (1000,))
  rng = np.random.default_rng(0)
  a, b = rng.standard_normal(1000).astype(np.float32), rng.standard_normal(1000).astype(np.float32)
  out = np.zeros(1000, dtype=np.float32)
  stats = run(k, [a, b], out, bufs)
  np.testing.assert_allclose(out, a * b + a, rtol=1e-6, atol=1e-6)
  assert stats.waves == stats.workgroups > 0 and stats.wave_instructions > 0 and stats.cycles > 0
  assert stats.bytes_written == 4000

def test_reduce_sum_rows(bufs):
  k = compile_kernel(lambda a: a.sum(axis=1), (64, 100))
  a = np.random.default_rng(1).standard_normal((64, 100)).astype(np.float32)
  out = np.zeros(64, dtype=np.float32)
  run(k, [a], out, bufs)
  np.testing.assert_allclose(out, a.sum(axis=1), rtol=1e-4, atol=1e-4)

def test_matmul_small(bufs):
  k = compile_kernel(lambda a, b: a @ b, (32, 48), (48, 16))
  rng = np.random.default_rng(2)
  a, b = rng.standard_normal((32, 48)).astype(np.float32), rng.standard_normal((48, 16)).astype(np.float32)
  out = np.zeros((32, 16), dtype=np.float32)
  run(k, [a, b], out, bufs)
  np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-4)

def test_unary_exp_sqrt(bufs):
  k = compile_kernel(lambda a: (a.abs() + 1).sqrt() + a.exp2(), (300,))
  a = np.linspace(-3, 3, 300).astype(np.float32)
  out = np.zeros(300, dtype=np.float32)
  run(k, [a], out, bufs)
  np.testing.assert_allclose(out, np.sqrt(np.abs(a) + 1) + np.exp2(a), rtol=1e-5, atol=1e-5)

def test_kernel_ctypes_buffers_are_host_memory(bufs):
  """The MemoryMap views host memory in place: a ctypes buffer written by the kernel is visible through ctypes."""
  k = compile_kernel(lambda a, b: a + b, (64,), (64,))
  out = (ctypes.c_float * 64)()
  arr = np.ctypeslib.as_array(out)
  a, b = np.arange(64, dtype=np.float32), np.full(64, 0.5, dtype=np.float32)
  run(k, [a, b], arr, bufs)
  assert list(out)[:3] == [0.5, 1.5, 2.5]
