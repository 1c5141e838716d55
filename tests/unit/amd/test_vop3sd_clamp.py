"""VOP3 clamp on the carry-in integer ops (V_ADD_CO_CI_U32, V_SUB_CO_CI_U32, V_SUBREV_CO_CI_U32; gfx9's V_ADDC_CO_U32,
V_SUBB_CO_U32, V_SUBBREV_CO_U32): with clamp the unsigned result saturates instead of wrapping, as for the other clamped integer
adds. Expected values worked by hand: the exact sum S0 + S1 + carry (or difference) clipped to [0, 2**32 - 1]."""
import pytest
from tinygrad.renderer.amd.dsl import s, v
from emu.amd import run_program
from emu.amd.arch import get_spec

CASES = [("add", 0xffffffff, 1, 0, 0xffffffff), ("add", 0xffffffff, 0, 1, 0xffffffff), ("add", 3, 4, 1, 8),
         ("sub", 5, 7, 1, 0), ("sub", 9, 7, 1, 1), ("subrev", 5, 7, 1, 1), ("subrev", 7, 5, 0, 0)]
NAMES = {"rdna": {"add": "v_add_co_ci_u32", "sub": "v_sub_co_ci_u32", "subrev": "v_subrev_co_ci_u32"},
         "cdna": {"add": "v_addc_co_u32", "sub": "v_subb_co_u32", "subrev": "v_subbrev_co_u32"}}

@pytest.mark.parametrize("arch", ["gfx1100", "gfx1201", "gfx942", "gfx950"])
@pytest.mark.parametrize("kind,a,b,carry,want", CASES)
def test_clamped_carry_in_op_saturates(arch, kind, a, b, carry, want):
  spec = get_spec(arch)
  fn = getattr(spec.ins, NAMES["cdna" if spec.family == "cdna" else "rdna"][kind])
  lanes = 32 if arch.startswith("gfx1") else 64
  mask = (lambda r: s[r]) if lanes == 32 else (lambda r: s[r:r + 1])   # a lane mask is one SGPR in wave32, a pair in wave64
  st = run_program([fn(v[2], mask(10), v[0], v[1], mask(4), clmp=1)], arch=arch, lanes=lanes, vgprs={0: a, 1: b},
                   sgprs={4: (1 << lanes) - 1 if carry else 0})
  assert int(st.vgpr[0, 0, 2]) == want
  exact = a + b + carry if kind == "add" else a - b - carry if kind == "sub" else b - a - carry
  assert int(st.sgpr[0, 10]) & 1 == int(not 0 <= exact < 2**32)   # the carry/borrow out still reports the unclamped overflow
