"""CDNA (gfx942/gfx950) semantics reached through tinygrad's own kernels: VOP3 encodings of VOP1 ops (the cdna wheel has pseudocode
for the VOP1 forms only), gfx950's V_BITOP3 and V_PK_MOV_B32, and MFMA with an inline-constant C. Expected values are worked out
by hand from the ISA."""
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.cdna import ins
from tinygrad.runtime.autogen.amd.cdna.enum import VOP1Op, VOP3Op
from emu.amd import run_program
from emu.amd.api import GPUIllegalInstruction
from emu.amd.semantics import get_op
from emu.amd.wave import AGPR_BASE

def f64_halves(x:float) -> tuple[np.ndarray, np.ndarray]:
  w = np.full(64, x, np.float64).view(np.uint32).reshape(64, 2)
  return w[:, 0].copy(), w[:, 1].copy()

@pytest.mark.parametrize("arch", ["gfx942", "gfx950"])
def test_vop3_encoding_of_a_vop1_op_runs_with_modifiers(arch):
  # v_trunc_f64_e64 v[2:3], -v[0:1] (tinygrad's float64 trunc): trunc(-(-2.7)) = 2.0
  lo, hi = f64_halves(-2.7)
  st = run_program([ins.v_trunc_f64_e64(ins.v[2:3], ins.v[0:1], neg=1)], arch=arch, lanes=64, vgprs={0: lo, 1: hi})
  assert (st.vgpr[0, :, 2:4].copy().view(np.float64) == 2.0).all()

def test_every_vop3_form_of_a_vop1_op_has_semantics():
  # the wheel's cdna table lacks V_*_E64 pseudocode for all VOP1 ops; each one runs its VOP1 twin's semantics
  twins = [(o, VOP1Op[o.name[:-4] + "_E32"]) for o in VOP3Op if o.name.endswith("_E64") and o.name[:-4] + "_E32" in VOP1Op.__members__]
  assert len(twins) > 70
  for e64, e32 in twins:
    try: want = get_op("gfx942", e32)
    except GPUIllegalInstruction: continue   # no semantics for the VOP1 form either (V_NOP, V_CLREXCP, ...): nothing to share
    got = get_op("gfx942", e64)
    assert (got.kind, got.reads, got.writes) == (want.kind, want.reads, want.writes), e64.name

def test_v_bitop3_b32_truth_table_and():
  # v_bitop3_b32 v2, v4, v5, v6 bitop3:0x80 (OMOD=2 is table bits 7:6): only the S0 & S1 & S2 minterm, 0b1100 & 0b1010 & 0b1110
  st = run_program([ins.v_bitop3_b32(ins.v[2], ins.v[4], ins.v[5], ins.v[6], omod=2)], arch="gfx950", lanes=64,
                   vgprs={2: 0xdead, 4: 0b1100, 5: 0b1010, 6: 0b1110})
  assert (st.vgpr[0, :, 2] == 0b1000).all()

def test_v_pk_mov_b32_op_sel_takes_the_high_dword():
  # v_pk_mov_b32 v[2:3], v[4:5], v[6:7] op_sel:[1,0]: D.lo = S0[63:32] = v5, D.hi = S1[31:0] = v6
  st = run_program([ins.v_pk_mov_b32(ins.v[2:3], ins.v[4:5], ins.v[6:7], opsel=1)], arch="gfx950", lanes=64,
                   vgprs={4: 0x44, 5: 0x55, 6: 0x66, 7: 0x77})
  assert (st.vgpr[0, :, 2] == 0x55).all() and (st.vgpr[0, :, 3] == 0x66).all()

@pytest.mark.parametrize("arch", ["gfx942", "gfx950"])
@pytest.mark.parametrize("acc_cd", [0, 1])
def test_mfma_with_an_inline_constant_accumulator(arch, acc_cd):
  # v_mfma_f32_16x16x16_f16 v[0:3], v[4:5], v[6:7], -4.0 (LLVM 22 writes `..., 0` for a zero C): C is -4.0 in every element.
  # Lane l holds A row l % 16, k = 4 * (l // 16) + e (e = 0..3); A's elements on lane l are l // 16 + 1, so A[i][k] = k // 4 + 1;
  # B is all 1.0. D[0][0] (lane 0, d register 0) = sum_k (k // 4 + 1) - 4 = 4 * (1 + 2 + 3 + 4) - 4 = 36, and so is every element.
  a = np.repeat(np.array([0x3c00, 0x4000, 0x4200, 0x4400], np.uint32), 16) * 0x10001   # two f16 of 1.0, 2.0, 3.0, 4.0 per lane group
  st = run_program([ins.v_mfma_f32_16x16x16_f16(ins.v[0:3], ins.v[4:5], ins.v[6:7], -4.0, acc_cd=acc_cd)], arch=arch, lanes=64,
                   vgprs={4: a, 5: a, 6: 0x3c003c00, 7: 0x3c003c00, 0: 0x7fc00000, 1: 0x7fc00000, 2: 0x7fc00000, 3: 0x7fc00000})
  d = st.vgpr[0, :, (AGPR_BASE if acc_cd else 0) + np.arange(4)].view(np.float32)
  assert d[0, 0] == 36.0 and (d == 36.0).all()

def test_mfma_with_an_sgpr_accumulator_is_illegal():
  # C may be a VGPR, AGPR or inline constant; an SGPR there is no instruction the ISA defines
  with pytest.raises(GPUIllegalInstruction, match="src2"):
    run_program([ins.v_mfma_f32_16x16x16_f16(ins.v[0:3], ins.v[4:5], ins.v[6:7], ins.s[0:3])], arch="gfx950", lanes=64)
