"""V_FMA_MIX_F32 / V_FMA_MIXLO_F16 / V_FMA_MIXHI_F16 (gfx9 table: V_MAD_MIX_*): each input is an f32 (OPSEL_HI[i] = 0) or the f16 half
OPSEL[i] picks, then NEG_HI[i] takes its absolute value and NEG[i] negates it (the vendor text omits both modifiers; LLVM encodes abs
in neg_hi for these ops). Expected values are exact small-integer arithmetic worked by hand."""
import numpy as np
import pytest
from tinygrad.renderer.amd.dsl import v
from emu.amd import run_program
from emu.amd.arch import get_spec

def f32(x): return int(np.float32(x).view(np.uint32))
def f16(x): return int(np.float16(x).view(np.uint16))
def asf32(b): return float(np.uint32(b).view(np.float32))

NAMES = {"rdna": ("v_fma_mix_f32", "v_fma_mixlo_f16", "v_fma_mixhi_f16"), "cdna": ("v_mad_mix_f32", "v_mad_mixlo_f16", "v_mad_mixhi_f16")}

def mix(arch:str, which:int, **mods):
  ins = get_spec(arch).ins
  return getattr(ins, NAMES["cdna" if get_spec(arch).family == "cdna" else "rdna"][which])(v[3], v[0], v[1], v[2], **mods)

ARCHS = ["gfx1100", "gfx1201", "gfx942", "gfx950"]

@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("neg,neg_hi,want", [(0, 0, 5.0), (0, 0b100, 7.0), (0b001, 0, -7.0), (0b101, 0b100, -7.0), (0b100, 0b100, 5.0)])
def test_mix_f32_applies_neg_and_abs_per_source(arch, neg, neg_hi, want):
  # f32 sources (op_sel_hi 0): 2 * 3 + (-1) with |.| (neg_hi) and -(.) (neg) per source
  lanes = 32 if arch.startswith("gfx1") else 64
  st = run_program([mix(arch, 0, neg=neg, neg_hi=neg_hi, opsel_hi=0, opsel_hi2=0)], arch=arch, lanes=lanes,
                   vgprs={0: f32(2.0), 1: f32(3.0), 2: f32(-1.0)})
  assert asf32(st.vgpr[0, 0, 3]) == want

@pytest.mark.parametrize("arch", ARCHS)
def test_mix_modifiers_apply_after_the_f16_half_is_selected(arch):
  # src0 = f16 high half (-2), src1 = f32 3, src2 = f16 low half (-1): |-2| * 3 + -(-1) = 7
  lanes = 32 if arch.startswith("gfx1") else 64
  st = run_program([mix(arch, 0, opsel=0b001, opsel_hi=0b01, opsel_hi2=1, neg=0b100, neg_hi=0b001)], arch=arch, lanes=lanes,
                   vgprs={0: f16(-2.0) << 16 | f16(9.0), 1: f32(3.0), 2: f16(5.0) << 16 | f16(-1.0)})
  assert asf32(st.vgpr[0, 0, 3]) == 7.0

@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("which,shift", [(1, 0), (2, 16)])
def test_mixlo_mixhi_write_their_half_with_modifiers(arch, which, shift):
  lanes = 32 if arch.startswith("gfx1") else 64
  st = run_program([mix(arch, which, neg=0b010, opsel_hi=0, opsel_hi2=0)], arch=arch, lanes=lanes,
                   vgprs={0: f32(2.0), 1: f32(3.0), 2: f32(1.0), 3: 0xabcdabcd})
  d = int(st.vgpr[0, 0, 3])
  assert (d >> shift) & 0xffff == f16(-5.0) and (d >> (16 - shift)) & 0xffff == 0xabcd   # 2 * -3 + 1; the other half is kept

@pytest.mark.parametrize("arch", ARCHS)
def test_mix_f32_rounds_once(arch):
  # a = b = 1 + 2**-12, c = -(1 + 2**-11): a*b = 1 + 2**-11 + 2**-24 exactly. Fused: 2**-24. Rounding the product first (a tie, to
  # even: 1 + 2**-11) would give 0. gfx942/gfx950's opcode is the fused V_FMA_MIX_F32 (LLVM's name there), gfx9's text the unfused mad.
  lanes = 32 if arch.startswith("gfx1") else 64
  st = run_program([mix(arch, 0, opsel_hi=0, opsel_hi2=0)], arch=arch, lanes=lanes,
                   vgprs={0: f32(1 + 2**-12), 1: f32(1 + 2**-12), 2: f32(-(1 + 2**-11))})
  assert asf32(st.vgpr[0, 0, 3]) == 2.0**-24
