"""Per-arch operand tables: the wheel's rdna4 table names most VOP3/VOP3P ops' src0 'vsrc0' (rdna3 calls it 'src0'), and the
executor must still find its float format there, or the neg/abs/packed input modifiers of src0 are silently dropped (tinygrad's
int8/int16 division and argmin on gfx1201 use `v_fma_f32 v7, -v6, v5, v8` and `v_cmp_* |v|` forms). Expected values are worked
out by hand from the ISA's modifier semantics."""
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.rdna3 import ins as rdna3
from tinygrad.runtime.autogen.amd.rdna4 import ins as rdna4
from emu.amd import run_program

def f32(x:float) -> int: return int(np.float32(x).view(np.uint32))
def pk_f16(lo:float, hi:float) -> int: return int(np.array([lo, hi], np.float16).view(np.uint32)[0])
def as_f32(x) -> float: return float(np.uint32(x).view(np.float32))

RDNA = pytest.mark.parametrize("arch,isa", [("gfx1100", rdna3), ("gfx1201", rdna4)], ids=["gfx1100", "gfx1201"])

@RDNA
def test_vop3_src0_neg(arch, isa):
  # v_fma_f32 v7, -v6, v5, v8: -(7 * 6) + 47 = 5 (89 if the neg on src0 is lost)
  st = run_program([isa.v_fma_f32(isa.v[7], isa.v[6], isa.v[5], isa.v[8], neg=1)], arch=arch, vgprs={6: f32(7.0), 5: f32(6.0), 8: f32(47.0)})
  assert as_f32(st.vgpr[0, 0, 7]) == 5.0

@RDNA
def test_vop3_src0_abs_in_a_compare(arch, isa):
  # v_cmp_gt_f32_e64 s[4], |v1|, v2 with v1 = -3, v2 = 2: |-3| > 2 on every lane (false if the abs is lost)
  st = run_program([isa.v_cmp_gt_f32_e64(isa.s[4], isa.v[1], isa.v[2], abs=1)], arch=arch, vgprs={1: f32(-3.0), 2: f32(2.0)})
  assert st.sgpr[0, 4] == 0xffffffff

@RDNA
def test_vop3p_packed_src0_neg_lo(arch, isa):
  # v_dot2_f32_f16 v3, v1, v2, v4 neg_lo:[1,0,0]: -(2 * 5) + 3 * 7 + 1 = 12 (32 without the low-half neg)
  st = run_program([isa.v_dot2_f32_f16(isa.v[3], isa.v[1], isa.v[2], isa.v[4], neg=1)], arch=arch,
                   vgprs={1: pk_f16(2.0, 3.0), 2: pk_f16(5.0, 7.0), 4: f32(1.0)})
  assert as_f32(st.vgpr[0, 0, 3]) == 12.0
