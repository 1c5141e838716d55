"""V_SWAP_B32 / V_SWAP_B16: the ISA's pseudocode assigns both operands (tmp = D0; D0 = S0; S0 = tmp), so the source register is
written too. Expected values worked by hand from that text; inactive lanes keep both registers."""
import pytest
from emu.amd import run_program
from emu.amd.arch import get_spec
from fuzz.amd_fields import encode_fields, inst_classes

@pytest.mark.parametrize("arch", ["gfx1100", "gfx1201", "gfx942", "gfx950"])
def test_v_swap_b32_writes_both_registers(arch):
  ins, lanes = get_spec(arch).ins, 32 if arch.startswith("gfx1") else 64
  st = run_program([ins.v_swap_b32_e32(ins.v[0], ins.v[1])], arch=arch, lanes=lanes, vgprs={0: 42, 1: 99}, exec_mask=0b1011)
  assert list(st.vgpr[0, :4, 0]) == [99, 99, 42, 99] and list(st.vgpr[0, :4, 1]) == [42, 42, 99, 42]   # lane 2 is off

def swap_b16(arch:str, vdst:int, src0:int) -> bytes:
  """v_swap_b16_e32 from raw fields: true16 VGPR numbers 128+ name the high half of v(n-128) (the DSL drops .h on e32 sources)."""
  family = get_spec(arch).family
  cls = inst_classes(family)["VOP1"]
  op = next(o.value for o in dict(cls._fields)["op"]._enum if o.name == "V_SWAP_B16_E32")
  return encode_fields(cls, {"op": op, "vdst": vdst, "src0": 256 + src0})

@pytest.mark.parametrize("arch", ["gfx1100", "gfx1201"])
@pytest.mark.parametrize("vdst,src0,want0,want1", [(0, 1, 0xAAAA2222, 0xBBBB1111),      # v0.l <-> v1.l
                                                    (128, 1, 0x22221111, 0xBBBBAAAA),    # v0.h <-> v1.l
                                                    (0, 129, 0xAAAABBBB, 0x1111_2222)])  # v0.l <-> v1.h
def test_v_swap_b16_writes_both_halves_it_names(arch, vdst, src0, want0, want1):
  st = run_program([swap_b16(arch, vdst, src0)], arch=arch, vgprs={0: 0xAAAA1111, 1: 0xBBBB2222})
  assert (int(st.vgpr[0, 0, 0]), int(st.vgpr[0, 0, 1])) == (want0, want1)
