"""The `encoding.*` targets: seeded smoke runs, a known-good case, and regressions for the wheel bugs the fuzzer found."""
import random
import pytest
from fuzz import registry, runner
from fuzz.amd_fields import ARCHS, inst_classes, encode_fields
from fuzz.finding import Finding
from fuzz.targets import encoding

@pytest.mark.parametrize("arch", ARCHS)
def test_smoke(arch, tmp_path):
  st = runner.run(registry.get(f"encoding.{arch}"), seconds=3, seed=1, findings_dir=tmp_path, progress=None, max_execs=300)
  assert st.execs > 50
  assert all(p.exists() for p in st.findings.values())

def test_generation_is_seeded():
  t = registry.get("encoding.rdna3")
  assert [t.generate(random.Random(7)) for _ in range(3)] == [t.generate(random.Random(7)) for _ in range(3)]

def test_v_add_f32_passes():
  # v_add_f32_e32 v1, v2, v3 built from raw fields: decoder, encoder and LLVM agree
  case = {"arch": "rdna3", "cls": "VOP2", "op": "V_ADD_F32_E32", "fields": {"op": 3, "vdst": 1, "src0": 258, "vsrc1": 3}}
  assert encoding.case_bytes(case) == (0x06020702).to_bytes(4, "little")  # VOP2 op=3 vdst=1 vsrc1=3 src0=v2, by hand
  encoding.check(case)

def test_regression_rdna_dpp8_not_decoded():
  # RDNA DPP8 is selected by src0=233 (0xe9); the wheel's decoder upgrades to _DPP8 only for src0=249 (the CDNA SDWA marker), so a
  # DPP8 instruction decodes as plain VOP1 and loses its second dword. Fails while the wheel has this bug.
  fields = {"op": 1, "vdst": 1, "src0": 233, "vsrc0": 2, **{f"lane_sel_{i}": i for i in range(8)}}
  case = {"arch": "rdna3", "cls": "VOP1_DPP8", "op": "V_MOV_B32_E32", "fields": fields}
  assert encoding.case_bytes(case) == encode_fields(inst_classes("rdna3")["VOP1_DPP8"], fields)
  with pytest.raises(Finding) as e: encoding.check(case)
  assert e.value.kind == "wheel-roundtrip"

def test_regression_mubuf_not_decodable():
  # rdna3 MUBUF/MTBUF/MIMG/EXP/LDSDIR classes exist in ins.py but decode_inst's format list lacks them
  case = {"arch": "rdna3", "cls": "MUBUF", "op": "BUFFER_LOAD_B32", "fields": {"op": 20, "soffset": 124}}
  with pytest.raises(Finding) as e: encoding.check(case)
  assert e.value.kind == "wheel-decode-error"

def test_llvm_register_operands_agree():
  # v_add_f32_e32 v1, s5, v3: LLVM's text assembled back through the DSL names the same registers in the same fields
  case = {"arch": "rdna3", "cls": "VOP2", "op": "V_ADD_F32_E32", "fields": {"op": 3, "vdst": 1, "src0": 5, "vsrc1": 3}}
  encoding.check(case)
  inst = __import__("tinygrad.renderer.amd", fromlist=["decode_inst"]).decode_inst(encoding.case_bytes(case), "rdna3")
  assert encoding.registers(inst) == {"vdst": 257, "src0": 5, "vsrc1": 259}

def test_regression_cdna_set_gpr_idx_on_mode_is_not_a_register():
  # gfx9 s_set_gpr_idx_on's SSRC1 field holds the 4-bit index mode (the vendor text: "the direct content of raw S1 field"); the
  # wheel's operand table types it as a register source, so it decodes s101 where LLVM prints the immediate 0x65. Fails while the
  # wheel has this bug.
  case = {"arch": "cdna", "cls": "SOPC", "op": "S_SET_GPR_IDX_ON", "fields": {"op": 17, "ssrc0": 0, "ssrc1": 0x65}}
  assert encoding.case_bytes(case) == bytes.fromhex("006511bf")   # SOPC: ssrc0 | ssrc1 << 8 | op << 16 | 0x17e << 23, by hand
  with pytest.raises(Finding) as e: encoding.check(case)
  assert e.value.kind == "operand-mismatch" and "ssrc1" in e.value.key
