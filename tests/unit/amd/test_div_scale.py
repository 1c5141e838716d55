"""V_DIV_SCALE_F32/F64 special cases, run through the executor on every arch (rdna3, rdna4, cdna).

The rule (docs/emulator.md, "Division"): DIV_SCALE scales S0 by 2**+-64 (f32; 2**+-128 for f64) so that the Newton steps of
LLVM's division see neither denormals nor overflow, and sets VCC when numerator and denominator are not scaled alike -- and for
the NaN a zero operand gives. Operands are flushed first when the MODE flushes input denormals, so a denormal is then a zero.
Expected values are worked by hand from that rule: 2**-120 * 2**64 = 2**-56, 0x1 * 2**64 = 2**-149 * 2**64 = 2**-85."""
import numpy as np
import pytest
from tinygrad.renderer.amd.dsl import s, v
from emu.amd import run_program
from emu.amd.arch import get_spec

HW_REG_MODE = 1
ARCHS = ["gfx1100", "gfx1201", "gfx942", "gfx950"]

def hwreg(reg:int, offset:int, size:int) -> int: return reg | (offset << 6) | ((size - 1) << 11)

def scale(arch:str, w:int, s0:float|int, d:float|int, n:float|int, denorm:int=0xf) -> tuple[int, int]:
  """(D0 bits, VCC bit of lane 0) of `v_div_scale_fW D, vcc, S0, d, n` after MODE.FP_DENORM := denorm. Ints are raw bits."""
  spec = get_spec(arch)
  lanes = 64 if spec.family == "cdna" else 32
  ft, ut, regs = (np.float32, np.uint32, 1) if w == 32 else (np.float64, np.uint64, 2)
  bits = lambda x: int(np.asarray(x, ut)) if isinstance(x, int) else int(np.asarray(x, ft).view(ut))  # noqa: E731
  vals = [bits(x) for x in (s0, d, n)]
  vgprs = {regs * i + k: (vals[i] >> (32 * k)) & 0xffffffff for i in range(3) for k in range(regs)}
  op = getattr(spec.ins, f"v_div_scale_f{w}")
  vcc = getattr(spec.ins, "VCC" if lanes == 64 else "VCC_LO")
  r = (lambda i: v[i]) if w == 32 else (lambda i: v[i:i + 1])
  st = run_program([spec.ins.s_setreg_imm32_b32(s[0], hwreg(HW_REG_MODE, 4, 4), denorm), op(r(8), vcc, r(0), r(regs), r(2 * regs))],
                   arch=arch, lanes=lanes, vgprs=vgprs, sgprs={106: 0})
  d0 = int(st.vgpr[0, 0, 8]) | (int(st.vgpr[0, 0, 9]) << 32 if w == 64 else 0)
  return d0, int(st.sgpr[0, 106]) & 1

def f(x, w:int=32) -> int: return int(np.asarray(x, np.float32 if w == 32 else np.float64).view(np.uint32 if w == 32 else np.uint64))
def is_nan(bits:int, w:int) -> bool:
  return bool(np.isnan(np.asarray(bits, np.uint32 if w == 32 else np.uint64).view(np.float32 if w == 32 else np.float64)))

@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("w", [32, 64])
@pytest.mark.parametrize("n,d", [(0.0, 3.0), (3.0, 0.0), (-0.0, 0.0)])
def test_zero_operand_gives_nan_and_sets_vcc(arch, w, n, d):
  for s0 in (n, d):
    got, vcc = scale(arch, w, s0, d, n)
    assert is_nan(got, w) and vcc == 1

@pytest.mark.parametrize("arch", ARCHS)
def test_denormal_denominator_flushed_is_a_zero(arch):
  # denormals kept: 0x1 (2**-149) is a denormal denominator; with n = 2**-100 (exponent fields 27 - 0 < 96: no overflow) both go up
  # by 2**64 (0x1 -> 2**-85, n -> 2**-36) and VCC stays 0
  assert scale(arch, 32, 0x1, 0x1, 2.0 ** -100) == (f(2.0 ** -85), 0)
  assert scale(arch, 32, 2.0 ** -100, 0x1, 2.0 ** -100) == (f(2.0 ** -36), 0)
  # with n = 1.0 (fields 127 - 0 >= 96) the quotient is near overflow instead: only the denominator goes up, VCC set
  assert scale(arch, 32, 0x1, 0x1, 1.0) == (f(2.0 ** -85), 1)
  # MODE.FP_DENORM f32 = 0 (flush): 0x1 reads as +0, a zero denominator: NaN with VCC set
  got, vcc = scale(arch, 32, 0x1, 0x1, 2.0 ** -100, denorm=0xc)
  assert is_nan(got, 32) and vcc == 1
  # the f16/f64 field (bits [7:6]) flushes f64 denormals; the f32 field does not. f64: 2**-1074 * 2**128 = 2**-946
  got, vcc = scale(arch, 64, 0x1, 0x1, 2.0 ** -1000, denorm=0x3)
  assert is_nan(got, 64) and vcc == 1
  assert scale(arch, 64, 0x1, 0x1, 2.0 ** -1000, denorm=0xc) == (f(2.0 ** -946, 64), 0)

@pytest.mark.parametrize("arch", ARCHS)
def test_tiny_numerator_scales_only_the_numerator_and_sets_vcc(arch):
  # n = 2**-120 (exponent field 7 <= 23), d = 1.0: n/d is normal, so it is the tiny-numerator case
  assert scale(arch, 32, 2.0 ** -120, 1.0, 2.0 ** -120) == (f(2.0 ** -56), 1)
  assert scale(arch, 32, 1.0, 1.0, 2.0 ** -120) == (f(1.0), 1)
  # f64: exponent field <= 53, e.g. 2**-1000 (field 23): scaled by 2**128
  assert scale(arch, 64, 2.0 ** -1000, 1.0, 2.0 ** -1000) == (f(2.0 ** -872, 64), 1)

@pytest.mark.parametrize("arch", ARCHS)
def test_ordinary_and_overflowing_quotients(arch):
  assert scale(arch, 32, 1.0, 3.0, 1.0) == (f(1.0), 0)                         # nothing to do: D0 = S0, VCC 0
  # n/d near overflow (exponent fields 254 - 127 >= 96): only the denominator goes up, VCC set
  assert scale(arch, 32, 1.0, 1.0, 3e38) == (f(2.0 ** 64), 1)
  assert scale(arch, 32, 3e38, 1.0, 3e38) == (f(3e38), 1)
  # n/d denormal (1e-40 / 3): only the numerator goes up, VCC set
  assert scale(arch, 32, 1e-40, 3.0, 1e-40) == (f(np.float32(1e-40) * np.float32(2.0 ** 64)), 1)
  assert scale(arch, 32, 3.0, 3.0, 1e-40) == (f(3.0), 1)

@pytest.mark.parametrize("arch", ["gfx942", "gfx950"])
def test_cdna_div_fixup_legacy_f16_gives_the_quotient_with_the_sign(arch):
  # V_DIV_FIXUP_LEGACY_F16 (S0 quotient, S1 denominator, S2 numerator), worked from its pcode: |S0| with sign(S1) ^ sign(S2), x/0 = inf;
  # OPSEL[3] puts the f16 in the high half and keeps the low one, else the high half is 0. The pcode reads its f64 temporary as
  # `tmp.f16` (the value: it used to take the temporary's low 16 bits, i.e. 0). 1.5 = 0x3e00, -2.5 = 0xc100, +inf = 0x7c00.
  spec = get_spec(arch)
  I = spec.ins
  h = lambda x: int(np.float16(x).view(np.uint16))  # noqa: E731
  for q, d, n, want in ((1.5, 3.0, 4.0, 0x3e00), (2.5, -3.0, 4.0, 0xc100), (1.5, 0.0, 4.0, 0x7c00)):
    for opsel, merged in ((0, want), (8, want << 16 | 0x5678)):
      inst = I.VOP3(I.VOP3Op.V_DIV_FIXUP_LEGACY_F16_E64, vdst=I.v[0], src0=s[0], src1=s[74], src2=s[40], opsel=opsel)
      st = run_program([inst], arch=arch, lanes=64, sgprs={0: h(q), 74: h(d), 40: h(n)}, vgprs={0: 0x12345678})
      assert int(st.vgpr[0, 0, 0]) == merged, (q, d, n, opsel)
