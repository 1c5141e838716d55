"""The PTX forms NVRTC writes for tinygrad's CUDA renderer, beyond the PTX renderer's subset, on hand-written kernels. Expected
values are the PTX ISA's definitions worked by hand (funnel shifts, bit-field insert, leading zeros, set, cvta windows) or
IEEE/numpy arithmetic (cvt rounding modes, .ftz, bf16 rounded once)."""
import numpy as np
import pytest
from emu.common.memory import MemoryMap
from emu.nv import isa, ptx, simt
from emu.pcode import numerics as N
from test_ptx import kernel, run1

def run_module(text:str, threads:int) -> tuple[np.ndarray, MemoryMap]:
  """Run kernel k of a whole PTX module on `threads` threads, its one parameter a u32 per thread; (that array, the memory map)."""
  out = np.zeros(threads, np.uint32)
  mem = MemoryMap()
  mem.map(out.ctypes.data, out.nbytes, backing=out.view(np.uint8))
  simt.run(isa.parse(text).kernels["k"], (1,), (threads,), [out.ctypes.data], mem)
  return out, mem

def run_one(body:str, regs:str, nbytes:int=32) -> np.ndarray:
  """Run `body` on one thread with %out at an nbytes buffer (returned as uint32 words)."""
  out = np.zeros(nbytes // 4, np.uint32)
  mem = MemoryMap()
  mem.map(out.ctypes.data, out.nbytes, backing=out.view(np.uint8))
  simt.run(kernel("ld.param.u64 %out, [out+0];\n" + body, ".reg .u64 %out;\n" + regs), (1,), (1,), [out.ctypes.data], mem)
  return out

@pytest.mark.parametrize("mode,a,b,n,exp", [
  ("l.wrap", 0x89abcdef, 0x01234567, 8, 0x23456789),   # high word of {b:a} << 8
  ("l.wrap", 0x89abcdef, 0x01234567, 40, 0x23456789),  # .wrap: 40 mod 32 = 8
  ("l.clamp", 0x89abcdef, 0x01234567, 40, 0x89abcdef), # .clamp: 32 -> the whole of a
  ("r.wrap", 0x89abcdef, 0x01234567, 8, 0x6789abcd),   # low word of {b:a} >> 8
  ("r.clamp", 0x89abcdef, 0x01234567, 33, 0x01234567)])
def test_funnel_shift(mode, a, b, n, exp):
  got = run1(f"mov.b32 %a, {a};\nmov.b32 %b, {b};\nshf.{mode}.b32 %r, %a, %b, {n};\nst.global.u32 [%out+0], %r;", ".reg .b32 %a, %b, %r;", n=1)
  assert got[0] == exp

@pytest.mark.parametrize("a,b,pos,ln,exp", [(0b101, 0xffff0000, 4, 3, 0xffff0050), (0xff, 0x12345678, 28, 8, 0xf2345678),
                                            (0xff, 0x12345678, 32, 8, 0x12345678), (0x7, 0x0, 0, 0, 0x0)])
def test_bit_field_insert(a, b, pos, ln, exp):
  # bfi: b with bits [pos, pos+len) taken from a's low bits; a field past bit 31 is cut off; pos >= 32 or len 0 leaves b
  got = run1(f"mov.b32 %a, {a};\nmov.b32 %b, {b};\nbfi.b32 %r, %a, %b, {pos}, {ln};\nst.global.u32 [%out+0], %r;", ".reg .b32 %a, %b, %r;", n=1)
  assert got[0] == exp

def test_clz_popc_and_set():
  body = ("mov.b32 %a, 0x00f00000;\nclz.b32 %c, %a;\npopc.b32 %p, %a;\nmov.b64 %w, 1;\nclz.b64 %d, %w;\n"
          "set.lt.u32.s32 %s, -3, 2;\nset.gt.f32.f32 %f, 0f3f800000, 0f40000000;\n"
          "st.global.u32 [%out+0], %c;\nst.global.u32 [%out+4], %p;\nst.global.u32 [%out+8], %d;\nst.global.u32 [%out+12], %s;\n"
          "st.global.f32 [%out+16], %f;")
  got = run_one(body, ".reg .b32 %a, %c, %p, %d;\n.reg .b64 %w;\n.reg .u32 %s;\n.reg .f32 %f;")
  assert got[:4].tolist() == [8, 4, 63, 0xffffffff] and got[4] == 0   # set: all ones where true; 1.0 > 2.0 is false -> 0.0

@pytest.mark.parametrize("mode,exp_bits", [("rn", 0x3eaaaaab), ("rz", 0x3eaaaaaa), ("rm", 0x3eaaaaaa), ("rp", 0x3eaaaaab)])
def test_cvt_f64_to_f32_rounds_once_in_each_mode(mode, exp_bits):
  # 1/3 in f64 lies between the f32 neighbours 0x3eaaaaaa and 0x3eaaaaab, nearer the upper one
  got = run1(f"mov.f64 %d, 0d3FD5555555555555;\ncvt.{mode}.f32.f64 %f, %d;\nst.global.f32 [%out+0], %f;", ".reg .f64 %d;\n.reg .f32 %f;", n=1)
  assert got[0] == exp_bits

def test_ftz_flushes_subnormal_operands_and_results():
  tiny = 0x00000010   # an f32 subnormal
  body = (f"mov.b32 %a, {tiny};\nadd.f32 %x, %a, %a;\nadd.ftz.f32 %y, %a, %a;\nmul.ftz.f32 %z, %a, 0f3f800000;\n"
          "st.global.f32 [%out+0], %x;\nst.global.f32 [%out+4], %y;\nst.global.f32 [%out+8], %z;")
  got = run_one(body, ".reg .b32 %a;\n.reg .f32 %x, %y, %z;")
  assert got[:3].tolist() == [2 * tiny, 0, 0]

def test_bf16_fma_neg_and_conversions_round_once():
  # fma.rn.bf16 1.5 * 2 + 1 = 4 (0x4080); neg flips the sign bit; cvt.rn.bf16.f32 of 1 + 2^-8 + 2^-20 rounds up to 1 + 2^-7
  body = ("mov.b16 %a, 0x3fc0;\nmov.b16 %b, 0x4000;\nmov.b16 %c, 0x3f80;\nfma.rn.bf16 %r, %a, %b, %c;\nneg.bf16 %n, %r;\n"
          "mov.b32 %x, 0x3f808008;\ncvt.rn.bf16.f32 %v, %x;\ncvt.f32.bf16 %y, %n;\n"
          "st.global.u16 [%out+0], %r;\nst.global.u16 [%out+2], %n;\nst.global.u16 [%out+4], %v;\nst.global.f32 [%out+8], %y;")
  got = run_one(body, ".reg .b16 %a, %b, %c, %r, %n, %v;\n.reg .b32 %x;\n.reg .f32 %y;")
  assert got.view(np.uint16)[:3].tolist() == [0x4080, 0xc080, 0x3f81] and got.view(np.float32)[2] == -4.0

def test_bf16_fma_is_rounded_once_against_an_exact_reference():
  rng = np.random.default_rng(0)
  a, b, c = (N.f32_to_bf16((rng.standard_normal(400) * 2.0 ** rng.integers(-30, 30, 400)).astype(np.float32)) for _ in range(3))
  c[::3] = N.f32_to_bf16(-(N.bf16_to_f32(a[::3]) * N.bf16_to_f32(b[::3])))   # cancellation: the sum is the product's rounding error
  got = N.fma_bf16(a, b, c)
  from fractions import Fraction
  checked = 0
  for i in range(400):   # a slow exact check on a sample: the Fraction sum, rounded to nearest even by hand
    va, vb, vc = (float(N.bf16_to_f32(np.array([x[i]], np.uint16))[0]) for x in (a, b, c))
    if not all(np.isfinite([va, vb, vc])) or not np.isfinite(va * vb + vc): continue
    exact = Fraction(va) * Fraction(vb) + Fraction(vc)
    if not 2.0 ** -126 <= abs(exact) < 3.3e38: continue   # the hand rounding below covers the normal range
    assert float(N.bf16_to_f32(got[i:i + 1])[0]) == _round_bf16(exact), (hex(a[i]), hex(b[i]), hex(c[i]))
    checked += 1
  assert checked > 300

def _round_bf16(x) -> float:
  """x rounded to nearest-even bf16 (8 significant bits), by hand from its binary exponent (normal range)."""
  from fractions import Fraction
  import math
  if x == 0: return 0.0
  e = math.floor(math.log2(abs(x)))
  if Fraction(2) ** e > abs(x): e -= 1
  if Fraction(2) ** (e + 1) <= abs(x): e += 1
  ulp = Fraction(2) ** (max(e, -126) - 7)
  q, r = divmod(abs(x), ulp)
  q = int(q) + (1 if r > ulp / 2 or (r == ulp / 2 and int(q) % 2) else 0)
  return float(q * ulp) * (1 if x > 0 else -1)

def test_local_depot_generic_addressing_and_module_globals():
  # NVRTC's stack: .local storage addressed by %SPL (a local offset) and by %SP = cvta.local(%SPL) (a generic address);
  # a module-scope .global table read through its address
  text = (".version 8.8\n.target sm_89\n.address_size 64\n.global .align 4 .b8 table[8] = {1, 0, 0, 0, 7, 0, 0, 0};\n"
          ".visible .entry k(.param .u64 k_param_0)\n{\n.local .align 4 .b8 __local_depot0[8];\n.reg .b64 %SP, %SPL, %rd<4>;\n"
          ".reg .b32 %r<4>;\n.pragma \"nounroll\";\nmov.u64 %SPL, __local_depot0;\ncvta.local.u64 %SP, %SPL;\n"
          "ld.param.u64 %rd1, [k_param_0];\ncvta.to.global.u64 %rd1, %rd1;\nmov.u32 %r1, %tid.x;\n"
          "st.local.u32 [%SPL+4], %r1;\nld.u32 %r2, [%SP+4];\nmov.u64 %rd2, table;\nld.global.nc.u32 %r3, [%rd2+4];\n"
          "add.s32 %r2, %r2, %r3;\nmul.wide.u32 %rd3, %r1, 4;\nadd.s64 %rd3, %rd1, %rd3;\nst.global.u32 [%rd3+0], %r2;\nret;\n}\n")
  out, mem = run_module(text, 4)
  assert out.tolist() == [7, 8, 9, 10] and len(list(mem)) == 1   # tid + table[1]; the table is mapped only during the launch

def test_inline_asm_blocks_have_their_own_registers():
  # NVRTC's inline asm: `{ .reg .b16 c; ... }` declares names (without %) private to the block; two blocks may reuse them
  body = ("{ .reg .b16 c;\nmov.b16 c, 5;\ncvt.u32.u16 %a, c; }\n{ .reg .b16 c;\nmov.b16 c, 9;\ncvt.u32.u16 %b, c; }\n"
          "add.u32 %a, %a, %b;\nst.global.u32 [%out+-0], %a;")
  assert run1(body, ".reg .u32 %a, %b;", n=1)[0] == 14

def test_negative_offsets_and_integer_neg_abs():
  body = "add.u64 %p, %out, 8;\nmov.s32 %a, -2147483648;\nneg.s32 %n, %a;\nabs.s32 %m, -5;\nst.global.u32 [%p+-8], %n;\nst.global.u32 [%p+-4], %m;"
  got = run_one(body, ".reg .u64 %p;\n.reg .s32 %a, %n, %m;")
  assert got[:2].tolist() == [0x80000000, 5]   # -INT_MIN wraps to INT_MIN

@pytest.mark.parametrize("mode,exp", [("rzi", [2.0, -2.0, 2.0, -3.0]), ("rni", [2.0, -2.0, 2.0, -4.0]), ("rmi", [2.0, -3.0, 2.0, -4.0]),
                                      ("rpi", [3.0, -2.0, 3.0, -3.0])])
def test_cvt_between_floats_rounds_to_an_integral_value(mode, exp):
  # cvt.rzi.f64.f64 (NVRTC's trunc) and friends: 2.5, -2.5, 2.25, -3.5 to integers in the mode, staying f64 (rni: ties to even)
  body = ("mov.f64 %a, 0d4004000000000000;\nmov.f64 %b, 0dC004000000000000;\nmov.f64 %c, 0d4002000000000000;\nmov.f64 %d, 0dC00C000000000000;\n"
          + "".join(f"cvt.{mode}.f64.f64 %{r}, %{r};\nst.global.f64 [%out+{8 * i}], %{r};\n" for i, r in enumerate("abcd")))
  assert run_one(body, ".reg .f64 %a, %b, %c, %d;").view(np.float64).tolist() == exp

def test_the_f64_approx_forms_ptx_defines():
  # rcp.approx.ftz.f64 (NVRTC's seed for f64 division and log2) and rsqrt.approx.f64 exist; other .approx.f64 forms do not
  body = ("mov.f64 %a, 0d4010000000000000;\nrcp.approx.ftz.f64 %r, %a;\nrsqrt.approx.f64 %s, %a;\n"
          "st.global.f64 [%out+0], %r;\nst.global.f64 [%out+8], %s;")
  assert run_one(body, ".reg .f64 %a, %r, %s;").view(np.float64)[:2].tolist() == [0.25, 0.5]
  for bad in ("rcp.approx.f64 %r, %a;", "ex2.approx.f64 %r, %a;", "sqrt.approx.f64 %r, %a;"):
    with pytest.raises(ptx.PTXError, match="not defined on .f64|does not take .f64"): kernel(bad, ".reg .f64 %a, %r;")

def test_carry_chains_add_subtract_and_multiply_across_words():
  # 64-bit arithmetic on 32-bit halves, worked by hand: 0x1_ffffffff + 0x0_00000001 = 0x2_00000000 (carry out of the low word);
  # 0x1_00000000 - 0x0_00000001 = 0x0_ffffffff (borrow); lo/hi of 0xffffffff * 0xffffffff + 1 = 0xfffffffe_00000002 via mad.cc/madc
  body = ("add.cc.u32 %a, 0xffffffff, 1;\naddc.u32 %b, 1, 0;\nsub.cc.u32 %c, 0, 1;\nsubc.u32 %d, 1, 0;\n"
          "mov.u32 %x, 0xffffffff;\nmad.lo.cc.u32 %e, %x, %x, 1;\nmadc.hi.u32 %f, %x, %x, 0;\n"
          + "".join(f"st.global.u32 [%out+{4 * i}], %{r};\n" for i, r in enumerate("abcdef")))
  got = run_one(body, ".reg .u32 %a, %b, %c, %d, %e, %f, %x;")
  assert got[:6].tolist() == [0, 2, 0xffffffff, 0, 2, 0xfffffffe]

def test_func_calls_are_inlined_with_their_own_registers_labels_and_stack():
  # NVRTC's calls: arguments and results through .param storage in a { callseq } block, call.uni, a .func with its own
  # .local depot and labels; called twice (two sites, their registers and labels apart); triple(x) = x + x + x, abs first
  text = (".version 8.8\n.target sm_89\n.address_size 64\n.func (.param .b32 func_retval0) triple_abs\n(\n.param .b32 triple_abs_param_0\n)\n;\n"
          ".visible .entry k(.param .u64 k_param_0)\n{\n.reg .b32 %r<5>;\n.reg .b64 %rd<3>;\n"
          "ld.param.u64 %rd1, [k_param_0];\nmov.u32 %r1, %tid.x;\nsub.s32 %r1, %r1, 2;\n"
          "{\n.reg .b32 temp_param_reg;\n.param .b32 param0;\nst.param.b32 [param0+0], %r1;\n.param .b32 retval0;\n"
          "call.uni (retval0), triple_abs, (param0);\nld.param.b32 %r2, [retval0+0];\n}\n"
          "{\n.param .b32 param0;\nst.param.b32 [param0+0], %r2;\n.param .b32 retval0;\ncall.uni (retval0), triple_abs, (param0);\n"
          "ld.param.b32 %r3, [retval0+0];\n}\n"
          "mul.wide.u32 %rd2, %r1, 0;\nmov.u32 %r4, %tid.x;\nmul.wide.u32 %rd2, %r4, 4;\nadd.s64 %rd2, %rd1, %rd2;\n"
          "st.global.u32 [%rd2+0], %r3;\nret;\n}\n"
          ".func (.param .b32 func_retval0) triple_abs(\n.param .b32 triple_abs_param_0\n)\n{\n.local .align 4 .b8 __local_depot1[4];\n"
          ".reg .b32 %r<4>;\n.reg .b64 %SPL;\n.reg .pred %p<2>;\nmov.u64 %SPL, __local_depot1;\nld.param.b32 %r1, [triple_abs_param_0];\n"
          "setp.ge.s32 %p1, %r1, 0;\n@%p1 bra $L__POS;\nneg.s32 %r1, %r1;\n$L__POS:\nst.local.u32 [%SPL+0], %r1;\n"
          "ld.local.u32 %r2, [%SPL+0];\nadd.s32 %r3, %r2, %r2;\nadd.s32 %r3, %r3, %r2;\nst.param.b32 [func_retval0+0], %r3;\nret;\n}\n")
  assert run_module(text, 5)[0].tolist() == [18, 9, 0, 9, 18]   # 9 * |tid - 2|

@pytest.mark.parametrize("sel,exp", [(0x3210, 0x44332211), (0x7654, 0x88776655), (0x0000, 0x11111111), (0x4073, 0x55118844),
                                     (0x000f, 0x111111ff), (0x0008, 0x11111100)])
def test_prmt_selects_bytes_of_b_a(sel, exp):
  # {b:a} = 0x88776655_44332211: nibble i picks result byte i; bit 3 replicates the picked byte's sign (0x88 -> 0xff, 0x11 -> 0)
  body = f"mov.b32 %a, 0x44332211;\nmov.b32 %b, 0x88776655;\nprmt.b32 %r, %a, %b, {sel};\nst.global.u32 [%out+0], %r;"
  assert run1(body, ".reg .b32 %a, %b, %r;", n=1)[0] == exp

def test_dp4a_sums_byte_products_signed_or_unsigned():
  # a = bytes (1, 2, 3, 0xff), b = bytes (4, 5, 6, 2): unsigned 4 + 10 + 18 + 510 + 100 = 642; signed 0xff is -1: 4 + 10 + 18 - 2 + 100 = 130
  body = ("mov.b32 %a, 0xff030201;\nmov.b32 %b, 0x02060504;\ndp4a.u32.u32 %u, %a, %b, 100;\ndp4a.s32.s32 %s, %a, %b, 100;\n"
          "st.global.u32 [%out+0], %u;\nst.global.s32 [%out+4], %s;")
  assert run_one(body, ".reg .b32 %a, %b;\n.reg .u32 %u;\n.reg .s32 %s;")[:2].tolist() == [642, 130]

def test_dp2a_sums_half_by_byte_products_from_the_chosen_half_of_b():
  # a = halves (3, 0xfffe), b = bytes (4, 5, 6, 0xff): .lo uses bytes 4, 5; .hi bytes 6, 0xff
  # lo.u32.u32: 3*4 + 65534*5 + 10 = 327692; hi.s32.s32: 3*6 + (-2)*(-1) + 10 = 30; hi.s32.u32: 3*6 + (-2)*255 + 10 = -482
  body = ("mov.b32 %a, 0xfffe0003;\nmov.b32 %b, 0xff060504;\ndp2a.lo.u32.u32 %u, %a, %b, 10;\ndp2a.hi.s32.s32 %s, %a, %b, 10;\n"
          "dp2a.hi.s32.u32 %t, %a, %b, 10;\nst.global.u32 [%out+0], %u;\nst.global.s32 [%out+4], %s;\nst.global.s32 [%out+8], %t;")
  assert run_one(body, ".reg .b32 %a, %b;\n.reg .u32 %u;\n.reg .s32 %s, %t;")[:3].view(np.int32).tolist() == [327692, 30, -482]

def test_cvt_of_infinities_and_nan_to_integers_saturates():
  # float -> int saturates to the destination's range (infinities too) and gives 0 for NaN; found by ptx.float (it raised)
  body = ("mov.b32 %a, 0x7f800000;\nmov.b32 %b, 0xff800000;\nmov.b32 %c, 0x7fc00000;\ncvt.rzi.s32.f32 %x, %a;\ncvt.rzi.s32.f32 %y, %b;\n"
          "cvt.rzi.s32.f32 %z, %c;\ncvt.rni.u16.f32 %w, %a;\nst.global.s32 [%out+0], %x;\nst.global.s32 [%out+4], %y;\n"
          "st.global.s32 [%out+8], %z;\nst.global.u16 [%out+12], %w;")
  got = run_one(body, ".reg .f32 %a, %b, %c;\n.reg .s32 %x, %y, %z;\n.reg .u16 %w;")
  assert got[:3].view(np.int32).tolist() == [2**31 - 1, -2**31, 0] and got[3] & 0xffff == 0xffff

F32 = lambda v: f"0f{np.float32(v).view(np.uint32):08X}"  # noqa: E731
@pytest.mark.parametrize("form,a,b,exp", [
  # e4m3 (bias 7, 3 mantissa bits, S.1111.111 is NaN, max 448 = 0x7E); the first source goes to the upper byte
  ("rn.satfinite.e4m3x2.f32", 1.0, -2.5, 0x38C2),                 # 1.0 = 0.0111.000, -2.5 = -1.25 * 2^1 = 1.1000.010
  ("rn.satfinite.e4m3x2.f32", 1.0625, 1.1875, 0x383A),            # halfway cases round to the even mantissa (000, 010)
  ("rn.satfinite.e4m3x2.f32", 500.0, float("-inf"), 0x7EFE),       # .satfinite: overflow and infinities -> +-448
  ("rn.satfinite.e4m3x2.f32", float("nan"), 2.0**-9, 0x7F01),      # NaN stays NaN; 2^-9 is the smallest subnormal
  ("rn.satfinite.relu.e4m3x2.f32", -2.5, 3.0, 0x0044),            # .relu: a negative result is +0; 3.0 = 0.1000.100
  # e5m2 (bias 15, 2 mantissa bits, IEEE-style; max 57344 = 0x7B)
  ("rn.satfinite.e5m2x2.f32", 1.0, 60000.0, 0x3C7B),
  ("rn.satfinite.e5m2x2.f32", float("inf"), -1.5, 0x7BBE),        # inf -> max finite; -1.5 = 1.01111.10
  # f16x2 and bf16x2 from two f32: 65520 is halfway between 65504 and 2^16 and rounds to inf, unless .satfinite
  ("rn.f16x2.f32", 1.0, 65520.0, 0x3C007C00), ("rn.satfinite.f16x2.f32", 1.0, 65520.0, 0x3C007BFF),
  ("rn.bf16x2.f32", 1.01171875, -2.0, 0x3F82C000), ("rz.bf16x2.f32", 1.01171875, -2.0, 0x3F81C000)])   # 1 + 3/256: tie -> even
def test_packed_conversions_from_f32(form, a, b, exp):
  # PTX ISA cvt, packed forms (NVRTC's cuda_fp8.h / cuda_fp16.h use them): a -> the upper half of d, b -> the lower half
  wide = form.endswith("16x2.f32")
  got = run_one(f"mov.b32 %a, {F32(a)};\nmov.b32 %b, {F32(b)};\ncvt.{form} %d, %a, %b;\n" +
                ("st.global.b32 [%out+0], %d;" if wide else "st.global.b16 [%out+0], %d;"),
                f".reg .f32 %a, %b;\n.reg .b{32 if wide else 16} %d;")
  assert got[0] == exp

def test_packed_conversions_between_fp8_and_f16x2():
  # e4m3x2 0x38C2 = (1.0, -2.5) -> f16x2 (0x3C00, 0xC100), and back; e5m2x2 0x7C80 = (+inf, -0) -> f16x2 (0x7C00, 0x8000),
  # and back with .satfinite: inf becomes the largest finite e5m2, 0x7B
  body = ("mov.b16 %p, 0x38C2;\ncvt.rn.f16x2.e4m3x2 %h, %p;\nst.global.b32 [%out+0], %h;\ncvt.rn.satfinite.e4m3x2.f16x2 %q, %h;\n"
          "st.global.b16 [%out+4], %q;\nmov.b16 %p, 0x7C80;\ncvt.rn.f16x2.e5m2x2 %h, %p;\nst.global.b32 [%out+8], %h;\n"
          "cvt.rn.satfinite.e5m2x2.f16x2 %q, %h;\nst.global.b16 [%out+12], %q;")
  got = run_one(body, ".reg .b16 %p, %q;\n.reg .b32 %h;")
  assert [hex(v) for v in got[:4]] == [hex(0x3C00C100), hex(0x38C2), hex(0x7C008000), hex(0x7B80)]

@pytest.mark.parametrize("form,operands,why", [
  ("rn.e4m3x2.f32", "%p, %a, %a", "needs .satfinite"), ("rz.satfinite.e4m3x2.f32", "%p, %a, %a", "rounds with .rn"),
  ("rn.satfinite.e4m3x2.f32", "%p, %a", "takes 3 operands"), ("rn.e4m3x2.bf16", "%p, %p", "not a conversion the ISA defines"),
  ("rn.relu.f16.f32", "%p, %a", "not modelled")])
def test_packed_conversions_the_isa_does_not_define_are_refused(form, operands, why):
  with pytest.raises(ptx.PTXError, match=why): kernel(f"cvt.{form} {operands};", ".reg .b16 %p;\n.reg .f32 %a;")
