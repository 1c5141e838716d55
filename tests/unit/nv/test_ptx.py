"""The PTX front end and the SIMT executor on hand-written PTX: errors name the line and token, faults and runaway loops end in
the emulator's defined faults, and instruction numerics match the PTX ISA text worked by hand."""
import numpy as np
import pytest
from emu.amd.api import GPUHangFault, GPUInvalidDispatch, GPUMemoryFault, GPUMisalignedAccess, GPUTrapFault
from emu.common.watchdog import Watchdog
from emu.common.memory import MemoryMap
from emu.nv import isa, ptx, simt

HEAD = ".version 7.8\n.target sm_89\n.address_size 64\n"

def kernel(body:str, regs:str, params:str=".param .u64 out") -> ptx.Kernel:
  return isa.parse(HEAD + f".visible .entry k({params})\n{{\n{regs}\n{body}\n}}\n").kernels["k"]

def run1(body:str, regs:str, out_dtype=np.uint32, n:int=4) -> np.ndarray:
  """Run `body` on n threads; it stores its result through %out (the lane's slot of a u32/u64 array)."""
  out = np.zeros(n, out_dtype)
  mem = MemoryMap()
  mem.map(out.ctypes.data, out.nbytes, backing=out.view(np.uint8))
  w = out.itemsize
  prologue = f"ld.param.u64 %out, [out+0];\nmov.u32 %t, %tid.x;\nmul.wide.u32 %o, %t, {w};\nadd.u64 %out, %out, %o;\n"
  simt.run(kernel(prologue + body, ".reg .u64 %out, %o;\n.reg .u32 %t;\n" + regs), (1,), (n,), [out.ctypes.data], mem)
  return out

def test_errors_name_the_line_and_token():
  with pytest.raises(ptx.PTXError, match="line 7 at 'frobnicate.u32'|line 7 at 'frobnicate'"):
    kernel("frobnicate.u32 %r, %r;", ".reg .u32 %r;")
  with pytest.raises(ptx.PTXError, match="line 7 at '%nope': register not declared"): kernel("mov.u32 %r, %nope;", ".reg .u32 %r;")
  with pytest.raises(ptx.PTXError, match="approx is not defined on .f64"): kernel("sqrt.approx.f64 %d, %d;", ".reg .f64 %d;")
  with pytest.raises(ptx.PTXError, match="unknown label"): kernel("bra NOWHERE;", "")
  with pytest.raises(ptx.PTXError, match="expected"): isa.parse(HEAD + ".visible .entry k(\n")

def test_shifts_clamp_the_amount_to_the_width():
  # PTX ISA shl/shr: shift amounts greater than the width are clamped to it: shl -> 0, shr.u -> 0, shr.s -> all sign bits
  got = run1("mov.b32 %a, 0x80000001;\nshl.b32 %b, %a, 40;\nshr.u32 %c, %a, 40;\nshr.s32 %d, %a, 40;\nshl.b32 %e, %a, 1;\n"
             "add.u32 %b, %b, %c;\nxor.b32 %b, %b, %d;\nadd.u32 %b, %b, %e;\nst.global.u32 [%out+0], %b;",
             ".reg .b32 %a, %b, %c, %d, %e;")
  assert got.tolist() == [((0 + 0) ^ 0xffffffff) + 2 & 0xffffffff] * 4   # 0xffffffff + 0x00000002 wraps to 1

def test_cvt_float_to_int_saturates_and_nan_is_zero():
  # cvt.rzi.s32.f32: 3.7 -> 3, -3.7 -> -3, 1e10 -> INT_MAX, NaN -> 0 (PTX ISA cvt: saturate to the range, NaN -> 0)
  body = ("setp.eq.u32 %p, %t, 0;\n@%p mov.b32 %f, 0f406CCCCD;\nsetp.eq.u32 %p, %t, 1;\n@%p mov.b32 %f, 0fC06CCCCD;\n"
          "setp.eq.u32 %p, %t, 2;\n@%p mov.b32 %f, 0f501502F9;\nsetp.eq.u32 %p, %t, 3;\n@%p mov.b32 %f, 0f7FC00000;\n"
          "cvt.rzi.s32.f32 %r, %f;\nst.global.s32 [%out+0], %r;")
  got = run1(body, ".reg .f32 %f;\n.reg .s32 %r;\n.reg .pred %p;", np.int32)
  assert got.tolist() == [3, -3, 2**31 - 1, 0]

def test_mul_hi_and_wide():
  # 0xffffffff * 0xffffffff = 0xfffffffe_00000001: .hi = 0xfffffffe, .lo = 1; mul.wide gives the 64-bit product
  got = run1("mov.u32 %a, 0xffffffff;\nmul.hi.u32 %h, %a, %a;\nmul.lo.u32 %l, %a, %a;\nmul.wide.u32 %w, %a, %a;\n"
             "cvt.u64.u32 %x, %h;\nshl.b64 %x, %x, 32;\ncvt.u64.u32 %y, %l;\nor.b64 %x, %x, %y;\nsub.u64 %x, %x, %w;\n"
             "st.global.u64 [%out+0], %x;", ".reg .u32 %a, %h, %l;\n.reg .u64 %w, %x, %y;", np.uint64)
  assert got.tolist() == [0] * 4

def test_divergent_loop_reconverges():
  # lane t loops t times adding 2: 0, 2, 4, 6; every lane then stores (they meet again after the loop)
  body = ("mov.u32 %i, 0;\nmov.u32 %s, 0;\nLOOP:\nsetp.ge.u32 %p, %i, %t;\n@%p bra DONE;\nadd.u32 %s, %s, 2;\nadd.u32 %i, %i, 1;\n"
          "bra LOOP;\nDONE:\nst.global.u32 [%out+0], %s;")
  assert run1(body, ".reg .u32 %i, %s;\n.reg .pred %p;").tolist() == [0, 2, 4, 6]

def test_out_of_bounds_store_faults_and_runaway_loop_hangs():
  k = kernel("ld.param.u64 %a, [out+0];\nst.global.u32 [%a+4096], 1;", ".reg .u64 %a;")
  buf = np.zeros(4, np.uint32)
  mem = MemoryMap()
  mem.map(buf.ctypes.data, buf.nbytes, backing=buf.view(np.uint8))
  with pytest.raises(GPUMemoryFault, match=r"write of unmapped address .* at pc=0x1 \(k: st.global.u32 \(line"):
    simt.run(k, (1,), (1,), [buf.ctypes.data], mem)
  loop = kernel("L:\nbra L;", "")
  with pytest.raises(GPUHangFault, match="1000 wave-instructions"):
    simt.run(loop, (1,), (1,), [0], MemoryMap(), watchdog=armed(Watchdog(instructions=1000)))
  dog = armed(Watchdog())
  dog.cancel("its channel was reset")
  with pytest.raises(GPUHangFault, match="was reset: its channel was reset"): simt.run(loop, (1,), (1,), [0], MemoryMap(), watchdog=dog)

def armed(dog:Watchdog) -> Watchdog:
  dog.arm()
  return dog

@pytest.mark.parametrize("t,a,b,q,r", [("s32", -7, 2, -3, -1), ("s32", 7, -2, -3, 1), ("s32", -2**31, -1, -2**31, 0),
                                       ("u32", 7, 2, 3, 1), ("s64", -2**63, 3, -3074457345618258602, -2), ("s32", 5, 0, -1, 5)])
def test_integer_division_truncates_toward_zero(t, a, b, q, r):
  # C semantics (the PTX ISA's div/rem on integers): quotient rounded toward zero, remainder with the dividend's sign;
  # INT_MIN / -1 wraps to INT_MIN; a zero divisor: quotient all ones, remainder the dividend (the emulator's fixed choice)
  from emu.nv.isa import DTYPES, trunc_divmod
  got_q, got_r = trunc_divmod(np.array([a], DTYPES[t]), np.array([b], DTYPES[t]), t)
  assert int(got_q[0]) == (q if t != "u32" else q & 0xffffffff) and int(got_r[0]) == r

def test_cvt_64_bit_saturation_and_int_to_float_rounding():
  # cvt.rzi.s64.f32 of 1e30 saturates to INT64_MAX and of -1e30 to INT64_MIN; cvt.rn.f32.s64 of 2**60 + 2**36 + 1 rounds once to
  # nearest: 2**60 + 2**37 (the value is just above the halfway point 2**60 + 2**36 between f32 neighbours 2**37 apart)
  from emu.nv.isa import convert
  got = convert(np.array([1e30, -1e30, np.nan], np.float32), "f32", "s64", ("rzi",))
  assert got.tolist() == [2**63 - 1, -2**63, 0]
  v = np.array([2**60 + 2**36 + 1], np.int64)
  assert int(convert(v, "s64", "f32", ("rn",))[0]) == 2**60 + 2**37

def test_wrong_operand_counts_are_rejected_and_emulator_failures_are_named(monkeypatch):
  with pytest.raises(ptx.PTXError, match="add takes 3 operands, got 2"): kernel("add.u32 %r, %r;", ".reg .u32 %r;")
  # an exception inside an opcode's semantics (an emulator bug) ends as GPUEmulatorError naming the instruction and its line
  from emu.amd.api import GPUEmulatorError
  from emu.nv import isa
  k = kernel("add.u32 %r, %r, 1;", ".reg .u32 %r;")
  from dataclasses import replace
  monkeypatch.setitem(isa.OPS, "add", replace(isa.OPS["add"], fn=lambda *a: 1 / 0))
  with pytest.raises(GPUEmulatorError, match="add.u32 \\(line 7\\).*ZeroDivisionError"): simt.run(k, (1,), (1,), [0], MemoryMap())

def test_a_signed_load_into_a_wider_register_is_sign_extended():
  # the PTX renderer keeps int8 values in .s16 registers: ld.global.s8 of 0xfd (-3) must read back as -3 at .s16 (PTX ISA, ld:
  # the value is sign-extended to the destination register's size), so -3 < 0 holds; an unsigned load stays zero-extended (253)
  k = kernel("ld.param.u64 %a, [out+0];\nld.global.s8 %v, [%a+0];\nld.global.u8 %w, [%a+0];\nsetp.lt.s16 %p, %v, 0;\n"
             "selp.b16 %r, 1, 0, %p;\nst.global.u16 [%a+2], %r;\nst.global.u16 [%a+4], %v;\nst.global.u16 [%a+6], %w;",
             ".reg .u64 %a;\n.reg .s16 %v, %w, %r;\n.reg .pred %p;")
  buf = np.array([0xfd, 0, 0, 0, 0, 0, 0, 0], np.uint8)
  mem = MemoryMap()
  mem.map(buf.ctypes.data, buf.nbytes, backing=buf)
  simt.run(k, (1,), (1,), [buf.ctypes.data], mem)
  assert buf[2:].view(np.int16).tolist() == [1, -3, 253]

@pytest.mark.parametrize("grid,block,why", [
  ((0xffffffff, 0xffff, 0xffff), (1, 1, 1), r"grid x = 4294967295 is outside 1..2147483647"),   # 2^64 blocks: overflowed int64 once
  ((1, 65536, 1), (1, 1, 1), r"grid y = 65536 is outside 1..65535"), ((0, 1, 1), (32, 1, 1), r"grid x = 0"),
  ((1, 1, 1), (0, 1, 1), r"block x = 0 is outside 1..1024"), ((1, 1, 1), (1, 1, 65), r"block z = 65 is outside 1..64"),
  ((1, 1, 1), (64, 32, 1), r"a block of 2048 threads")])
def test_launches_past_the_hardware_limits_are_refused_before_anything_runs(grid, block, why):
  # CUDA's limits for compute capability 5.0+: grid (2^31 - 1, 65535, 65535), block (1024, 1024, 64) and 1024 threads
  buf = np.zeros(4, np.uint32)
  mem = MemoryMap()
  mem.map(buf.ctypes.data, buf.nbytes, backing=buf.view(np.uint8))
  k = kernel("ld.param.u64 %a, [out+0];\nst.global.u32 [%a+0], 1;", ".reg .u64 %a;")
  with pytest.raises(GPUInvalidDispatch, match=why): simt.run(k, grid, block, [buf.ctypes.data], mem)
  assert buf[0] == 0

def test_a_grid_of_many_short_blocks_is_stopped_by_the_watchdog_and_by_a_cancel():
  # 2^31 - 1 one-instruction blocks: 32,768 batches of 65,536 CTAs, each a single lockstep step; the clock is read per batch
  import threading, time
  k = kernel("ret;", "")
  t = time.monotonic()
  with pytest.raises(GPUHangFault, match="watchdog budget of 0.5 s wall clock"):
    simt.run(k, (2**31 - 1,), (1,), [0], MemoryMap(), watchdog=armed(Watchdog(seconds=0.5)))
  assert time.monotonic() - t < 5
  dog = armed(Watchdog(seconds=600))
  threading.Timer(0.3, lambda: dog.cancel("Ctrl-C")).start()
  t = time.monotonic()
  with pytest.raises(GPUHangFault, match="was reset: Ctrl-C"): simt.run(k, (2**31 - 1,), (1,), [0], MemoryMap(), watchdog=dog)
  assert time.monotonic() - t < 5

@pytest.mark.parametrize("body,why", [
  ("st.global.u32 [%a+2], 1;", "4-byte write of global address 0x.*2 at pc=0x1"),
  ("ld.global.u16 %h, [%a+1];", "2-byte read of global"),
  ("ld.global.v4.u32 {%r, %r, %r, %r}, [%a+4];", "16-byte read of global"),   # a vector's alignment is its whole size
  ("st.global.v2.u32 [%a+12], {%r, %r};", "8-byte write of global"),
  ("st.shared.u32 [s+2], 1;", "4-byte write of shared address 0x2"),
  ("st.local.u64 [l+4], 1;", "8-byte write of local address 0x4"),
  ("cvta.shared.u64 %g, s;\nst.u32 [%g+6], 1;", "4-byte write of shared address 0x6")])   # generic: the window it lands in
def test_misaligned_accesses_fault_and_apply_nothing(body, why):
  # PTX ISA ld/st: "the address must be naturally aligned to a multiple of the access size"; hardware stops the warp with a
  # misaligned-address error; no byte of the access is written
  buf = np.zeros(8, np.uint32)
  mem = MemoryMap()
  mem.map(buf.ctypes.data, buf.nbytes, backing=buf.view(np.uint8))
  k = isa.parse(HEAD + ".visible .entry k(.param .u64 out)\n{\n.reg .u64 %a, %g;\n.reg .u32 %r;\n.reg .u16 %h;\n"
                ".shared .align 8 .b8 s[16];\n.local .align 8 .b8 l[16];\nld.param.u64 %a, [out+0];\n" + body + "\n}\n").kernels["k"]
  with pytest.raises(GPUMisalignedAccess, match=why): simt.run(k, (1,), (1,), [buf.ctypes.data], mem)
  assert not buf.any()

def test_ptx_trap_is_a_trap_fault_naming_the_instruction():
  with pytest.raises(GPUTrapFault, match=r"GPU trap: k: PTX trap \(line 7\) at pc=0x0"): simt.run(kernel("trap;", ""), (1,), (1,), [0], MemoryMap())

def test_a_signed_result_in_a_wider_register_is_sign_extended_for_every_instruction():
  # PTX ISA, operand size exceeding the instruction type (destination): a .s8 result in an .s16 register is sign-extended,
  # so max.s16 of it and 0 is 0 for -12 (tinygrad's PTX renderer casts int64 -> int8 with cvt.s8.s64 into .s16 registers; a
  # zero-extended 0x00f4 read as 244 made relu(int8(-12)) come out -12); an unsigned result is zero-extended
  k = kernel("ld.param.u64 %a, [out+0];\nmov.b64 %w, -12;\ncvt.s8.s64 %v, %w;\nmax.s16 %r, %v, 0;\nst.global.s16 [%a+0], %r;\n"
             "st.global.s16 [%a+2], %v;\ncvt.u8.s64 %u, %w;\nst.global.u16 [%a+4], %u;",
             ".reg .u64 %a;\n.reg .s64 %w;\n.reg .s16 %v, %r;\n.reg .u16 %u;")
  buf = np.zeros(4, np.int16)
  mem = MemoryMap()
  mem.map(buf.ctypes.data, buf.nbytes, backing=buf.view(np.uint8))
  simt.run(k, (1,), (1,), [buf.ctypes.data], mem)
  assert buf[:3].tolist() == [0, -12, 244]
