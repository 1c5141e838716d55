"""RDNA4 (gfx1201): the new memory encodings (VGLOBAL/VSCRATCH IOFFSET, SMEM IOFFSET), workgroup ids in TTMP9/TTMP7, VALU ops with an
SGPR destination, the split barrier and wait counters, and tinygrad-compiled gfx1201 kernels. Expected values are worked out by hand or
come from numpy."""
import warnings
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.rdna4.ins import (s, v, ttmp, NULL, global_load_b32, global_store_b32, s_load_b64, s_wait_kmcnt, s_wait_loadcnt,
                                                    s_wait_dscnt, s_wait_storecnt, v_s_exp_f32, s_barrier_wait, ds_store_b32,
                                                    ds_load_b32, v_lshlrev_b32_e32, v_mov_b32_e32, s_mov_b32, s_endpgm, s_sub_f16)
from tinygrad.runtime.autogen.amd.rdna4.enum import SOP1Op
from emu.amd import run_program
from emu.amd.api import Dispatch
from emu.amd.arch import get_spec
from emu.amd.decode import decode
from emu.amd.gpu import AMDGPU
from emu.amd.kernel import Buffers, compile_kernel, kernel_dispatch, llvm_available
from emu.common.memory import MemoryMap
from emu.amd.step_build import compile_step
from emu.amd.timing import classify

ARCH = "gfx1201"
BARRIER_SIGNAL = (0b101111101 << 23 | SOP1Op.S_BARRIER_SIGNAL.value << 8 | 193).to_bytes(4, "little")   # s_barrier_signal -1 (DSL rejects -1)
LANES = np.arange(32, dtype=np.uint32)

def mapped(*arrays) -> MemoryMap:
  mem = MemoryMap()
  for a in arrays: mem.map(a.ctypes.data, a.nbytes, backing=a.view(np.uint8).reshape(-1))
  return mem

def test_vglobal_load_store_negative_ioffset():
  # saddr + vaddr + IOFFSET (signed 24 bits): base points 1 KiB past src, ioffset -1024 + 4 reads src[1 + lane]
  src, dst = np.arange(64, dtype=np.uint32) * 7, np.zeros(32, dtype=np.uint32)
  prog = [global_load_b32(vdst=v[2], vaddr=v[0:1], saddr=s[2:3], ioffset=(-1020) & 0xffffff), s_wait_loadcnt(0),
          global_store_b32(vaddr=v[0:1], vsrc=v[2], saddr=s[4:5], ioffset=0), s_wait_storecnt(0)]
  run_program(prog, arch=ARCH, sgprs={2: src.ctypes.data + 1024, 4: dst.ctypes.data}, vgprs={0: LANES * 4}, memory=mapped(src, dst))
  assert (dst == (LANES + 1) * 7).all()

def test_smem_load_ioffset():
  data = np.array([11, 22, 33, 44], dtype=np.uint32)
  st = run_program([s_load_b64(sdata=s[6:7], sbase=s[2:3], ioffset=8, soffset=NULL), s_wait_kmcnt(0)], arch=ARCH, sgprs={2: data.ctypes.data},
                   memory=mapped(data))
  assert st.sgpr[0, 6] == 33 and st.sgpr[0, 7] == 44

def test_v_s_exp_f32_writes_an_sgpr():
  st = run_program([v_s_exp_f32(s[3], s[2])], arch=ARCH, sgprs={2: int(np.float32(3.0).view(np.uint32))}, vgprs={3: 5})
  assert st.sgpr[0, 3] == np.float32(8.0).view(np.uint32) and (st.vgpr[0, :, 3] == 5).all()

def test_nan_result_is_not_a_python_warning():
  # inf - inf is NaN by IEEE 754 (a quiet NaN: exponent all ones, mantissa non-zero); the emulator must not leak numpy's RuntimeWarning
  inf16 = int(np.float16(np.inf).view(np.uint16))
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    st = run_program([s_sub_f16(s[3], s[1], s[2])], arch=ARCH, sgprs={1: inf16, 2: inf16})
  r = int(st.sgpr[0, 3]) & 0xffff
  assert r & 0x7c00 == 0x7c00 and r & 0x3ff

def test_split_barrier_orders_lds_between_waves():
  # one workgroup of 64 threads = 2 waves. Wave 1 (v0 >= 32) branches to a store block placed after the end of the program: it stores
  # 100 + v0 at LDS (v0 % 32) * 4 and jumps back to the barrier. Wave 0 reaches the barrier at a lower PC, so the lowest-PC-first
  # scheduler would run its load first and read zeros unless s_barrier_signal / s_barrier_wait hold it until wave 1 has stored.
  out, ins = np.zeros(64, dtype=np.uint32), get_spec(ARCH).ins
  enc = lambda insts: b"".join(i if isinstance(i, bytes) else i.to_bytes() for i in insts)
  head = [ins.v_and_b32_e32(v[1], 31, v[0]), v_lshlrev_b32_e32(v[1], 2, v[1]), ins.v_add_nc_u32_e32(v[3], 100, v[0]),
          ins.s_mov_b32(s[10], ins.EXEC_LO), ins.v_cmpx_le_u32_e32(32, v[0])]
  mid = [ins.s_mov_b32(ins.EXEC_LO, s[10])]
  bar = [s_wait_dscnt(0), BARRIER_SIGNAL, s_barrier_wait(0xffff), ds_load_b32(vdst=v[2], addr=v[1]), s_wait_dscnt(0),
         v_lshlrev_b32_e32(v[4], 2, v[0]), global_store_b32(vaddr=v[4:5], vsrc=v[2], saddr=s[0:1], ioffset=0), s_endpgm()]
  store = [ds_store_b32(addr=v[1], data0=v[3]), ins.s_mov_b32(ins.EXEC_LO, s[10])]
  bar_at = len(enc(head)) + 4 + len(enc(mid))
  back = (bar_at - (bar_at + len(enc(bar)) + len(enc(store)) + 4)) // 4
  code = enc(head + [ins.s_cbranch_execnz(len(enc(mid + bar)) // 4)] + mid + bar + store + [ins.s_branch(back & 0xffff)])
  img = np.frombuffer(code + bytes(64), dtype=np.uint8).copy()
  AMDGPU(ARCH, mapped(out, img), timing=False).dispatch(Dispatch(code_addr=img.ctypes.data, grid=(1, 1, 1), workgroup=(64, 1, 1),
                                                                 user_sgprs=[out.ctypes.data & 0xffffffff, out.ctypes.data >> 32], rsrc2=2 << 1,
                                                                 lds_bytes=128))
  assert (out == np.tile(np.arange(32, 64, dtype=np.uint32) + 100, 2)).all()

def test_workgroup_ids_in_ttmp9_and_ttmp7():
  # each workgroup stores ttmp9 (x) and ttmp7 (y | z << 16) at out[2 * (x + 2 * y + 4 * z)]
  out = np.zeros(16, dtype=np.uint32)
  ins = get_spec(ARCH).ins
  code = [ins.s_and_b32(s[3], ttmp[7], 0xffff), ins.s_lshr_b32(s[4], ttmp[7], 16), ins.s_lshl_b32(s[3], s[3], 1), ins.s_lshl_b32(s[4], s[4], 2),
          ins.s_add_co_u32(s[5], ttmp[9], s[3]), ins.s_add_co_u32(s[5], s[5], s[4]), ins.s_lshl_b32(s[5], s[5], 3),
          v_mov_b32_e32(v[0], s[5]), v_mov_b32_e32(v[1], ttmp[9]), v_mov_b32_e32(v[2], ttmp[7]),
          global_store_b32(vaddr=v[0:1], vsrc=v[1], saddr=s[0:1], ioffset=0), global_store_b32(vaddr=v[0:1], vsrc=v[2], saddr=s[0:1], ioffset=4),
          s_endpgm()]
  img = np.frombuffer(b"".join(i.to_bytes() for i in code) + bytes(64), dtype=np.uint8).copy()
  mem = mapped(out, img)
  AMDGPU(ARCH, mem, timing=False).dispatch(Dispatch(code_addr=img.ctypes.data, grid=(2, 2, 2), workgroup=(1, 1, 1),
                                                     user_sgprs=[out.ctypes.data & 0xffffffff, out.ctypes.data >> 32], rsrc2=2 << 1))
  x, y, z = np.meshgrid(range(2), range(2), range(2), indexing="ij")
  idx = (x + 2 * y + 4 * z).reshape(-1)
  assert (out[2 * idx] == x.reshape(-1)).all() and (out[2 * idx + 1] == (y | z << 16).reshape(-1)).all()

def test_timing_classifies_split_waits_and_barrier():
  spec = get_spec(ARCH)
  info = lambda i: classify(compile_step(decode(i if isinstance(i, bytes) else i.to_bytes(), spec), spec, 0))
  assert info(s_wait_loadcnt(3)).waits == (("vm", 3),) and info(s_wait_storecnt(0)).waits == (("vs", 0),)
  assert info(s_wait_dscnt(1)).waits == (("ds", 1),) and info(s_wait_kmcnt(0)).waits == (("km", 0),)
  assert info(BARRIER_SIGNAL).cls == "barrier" and info(s_barrier_wait(0xffff)).cls == "delay"
  assert info(s_mov_b32(s[0], 1)).cls == "salu"

@pytest.mark.skipif(not llvm_available(), reason="needs libLLVM")
@pytest.mark.parametrize("name,fn,shapes", [
  ("matmul", lambda a, b: a @ b, [(32, 32), (32, 32)]),
  ("exp2 (v_s_exp_f32)", lambda a: a.exp2(), [(100,)]),
  ("max over rows", lambda a: a.max(1), [(16, 300)]),
])
def test_tinygrad_gfx1201_kernel(name, fn, shapes):
  rng = np.random.default_rng(1)
  ins = [rng.standard_normal(sh).astype(np.float32) for sh in shapes]
  ref = {"matmul": lambda a, b: a @ b, "exp2 (v_s_exp_f32)": np.exp2, "max over rows": lambda a: a.max(1)}[name](*ins)
  k = compile_kernel(fn, *shapes, arch=ARCH)
  out, bufs = np.zeros(ref.shape, dtype=np.float32), Buffers()
  stats = AMDGPU(ARCH, bufs.mem).dispatch(kernel_dispatch(k, ins, out, bufs))
  np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
  assert stats.cycles > 0 and stats.clock_mhz == 2970.0

@pytest.mark.parametrize("op, one, want, words", [("v_wmma_f32_16x16x16_f16", 0x3c00, 0x41400000, 8),        # f32 12.0 in 8 registers
                                                  ("v_wmma_bf16_16x16x16_bf16", 0x3f80, 0x41404140, 4)])  # bf16 12.0, two per register
def test_wmma_with_an_inline_constant_accumulator(op, one, want, words):
  # LLVM 19 compiles tinygrad's half matmul on gfx1201 to `v_wmma_f32_16x16x16_f16 v[8:15], v[16:19], v[36:39], 0`: C is the inline
  # constant in every element. A and B all 1.0 (two 16-bit halves per register), C = -4.0: every D element is 16 * 1 * 1 - 4 = 12.
  # D's registers start as NaN, so reading C from them (instead of the constant) shows.
  from tinygrad.runtime.autogen.amd.rdna4 import ins
  pair = one * 0x10001
  st = run_program([getattr(ins, op)(v[0:words - 1], v[8:11], v[12:15], -4.0)], arch=ARCH, lanes=32,
                   vgprs={**{r: 0x7fc00000 for r in range(8)}, **{r: pair for r in range(8, 16)}})
  assert (st.vgpr[0, :, :words] == want).all()

def test_wmma_accumulator_from_an_sgpr_is_illegal_and_rdna3_takes_no_constant():
  from tinygrad.runtime.autogen.amd.rdna3 import ins as ins3
  from tinygrad.runtime.autogen.amd.rdna4 import ins as ins4
  from emu.amd.api import GPUIllegalInstruction
  with pytest.raises(GPUIllegalInstruction, match="src2"):
    run_program([ins4.v_wmma_f32_16x16x16_f16(v[0:7], v[8:11], v[12:15], s[0:7])], arch=ARCH, lanes=32)
  with pytest.raises(GPUIllegalInstruction, match="src2"):   # RDNA3's WMMA reads C from VGPRs only
    run_program([ins3.v_wmma_f32_16x16x16_f16(ins3.v[0:7], ins3.v[8:15], ins3.v[16:23], 0)], arch="gfx1100", lanes=32)
