"""DPP16 controls per arch family, run through the executor: `v_mov_b32_dpp v1, v0` with v0 = lane id, so v1 of lane i is the lane
it read. Expected lanes are worked by hand from the control's definition (docs/emulator.md, "DPP controls"):
row_share:n / row_newbcast:n: lane i reads (i & ~15) + n; RDNA3's 0x142: lane i reads i & ~15 (an outside suite's hardware
observation); controls an arch does not define are illegal instructions."""
import numpy as np
import pytest
from emu.amd import run_program
from emu.amd.api import GPUIllegalInstruction
from emu.amd.arch import get_spec

def dpp_mov(arch:str, ctrl:int) -> list[int]:
  spec = get_spec(arch)
  lanes = 64 if spec.family == "cdna" else 32
  I = spec.ins
  inst = I.VOP1_DPP16(I.VOP1Op.V_MOV_B32_E32, vdst=I.v[1], src0=I.src[250], vsrc0=I.v[0], dpp=ctrl, row_mask=0xf, bank_mask=0xf)
  st = run_program([inst], arch=arch, lanes=lanes, vgprs={0: np.arange(lanes), 1: 0xdead})
  return [int(x) for x in st.vgpr[0, :, 1]]

@pytest.mark.parametrize("arch", ["gfx1100", "gfx1201", "gfx942", "gfx950"])
@pytest.mark.parametrize("n", [0, 3, 15])
def test_row_share_and_row_newbcast_read_lane_n_of_the_row(arch, n):
  # RDNA's row_share:n and gfx90a+'s row_newbcast:n (0x150 + n; LLVM disassembles both on these targets)
  got = dpp_mov(arch, 0x150 + n)
  assert got == [(i & ~15) + n for i in range(len(got))]

def test_rdna3_executes_0x142_reading_each_rows_first_lane():
  assert dpp_mov("gfx1100", 0x142) == [i & ~15 for i in range(32)]

@pytest.mark.parametrize("arch,ctrl", [("gfx1201", 0x142), ("gfx1100", 0x143), ("gfx1201", 0x143), ("gfx1100", 0x100), ("gfx1100", 0x130),
                                       ("gfx1100", 0x144), ("gfx942", 0x160), ("gfx942", 0x110), ("gfx950", 0x144)])
def test_undefined_controls_are_illegal(arch, ctrl):
  with pytest.raises(GPUIllegalInstruction, match=f"{ctrl:#x}"): dpp_mov(arch, ctrl)

def test_gfx9_row_bcast_15():
  # row_bcast:15 (gfx942): rows 1-3 read the last lane of the row before; row 0 has no source (bound_ctrl 0: keeps its old value)
  got = dpp_mov("gfx942", 0x142)
  assert got[:16] == [0xdead] * 16 and got[16:] == [(i & ~15) - 1 for i in range(16, 64)]
