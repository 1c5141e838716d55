"""The LLVM MC wrapper against encodings worked out by hand from the ISA's field layouts (not from the wheel's encoder)."""
import pytest
from fuzz import llvm_mc

def vop2(op:int, vdst:int, src0:int, vsrc1:int) -> bytes:
  """VOP2: bit31=0, op[30:25], vdst[24:17], vsrc1[16:9], src0[8:0] (VGPRs are 256+n in src0)."""
  return (op << 25 | vdst << 17 | vsrc1 << 9 | src0).to_bytes(4, "little")

def sop1(op:int, sdst:int, ssrc0:int) -> bytes:
  """SOP1: encoding 0b101111101 in [31:23], sdst[22:16], op[15:8], ssrc0[7:0]."""
  return (0b101111101 << 23 | sdst << 16 | op << 8 | ssrc0).to_bytes(4, "little")

# V_ADD_F32 is VOP2 opcode 3 on RDNA3/RDNA4 and opcode 1 on GFX9/CDNA; S_MOV_B32 is SOP1 opcode 0; S_ENDPGM is SOPP opcode 48
CASES = [("gfx1100", vop2(3, 1, 256 + 2, 3), "v_add_f32_e32 v1, v2, v3"), ("gfx1201", vop2(3, 1, 256 + 2, 3), "v_add_f32_e32 v1, v2, v3"),
         ("gfx942", vop2(1, 1, 256 + 2, 3), "v_add_f32_e32 v1, v2, v3"), ("gfx950", vop2(1, 1, 256 + 2, 3), "v_add_f32_e32 v1, v2, v3"),
         ("gfx1100", sop1(0, 0, 1), "s_mov_b32 s0, s1"), ("gfx1100", (0b101111111 << 23 | 48 << 16).to_bytes(4, "little"), "s_endpgm")]

@pytest.mark.parametrize("cpu,data,text", CASES)
def test_hand_encoded(cpu, data, text):
  if not llvm_mc.available(cpu): pytest.skip(f"no libLLVM with {cpu}")
  assert llvm_mc.Disassembler.get(cpu).disasm(data) == (4, text)

def test_rejects_garbage():
  # 0xffffffff is not a valid gfx1100 instruction word
  assert llvm_mc.Disassembler.get("gfx1100").disasm(b"\xff\xff\xff\xff") == (0, "")

def test_mnemonic():
  assert llvm_mc.mnemonic("v_add_f32_e32 v1, v2, v3") == "v_add_f32_e32" and llvm_mc.mnemonic("") == ""

def test_regression_llvm19_crashes_on_reserved_sdwa_sel():
  # found by encoding.cdna: LLVM 19 segfaults disassembling a gfx942 VOP2 SDWA word whose dst_sel is 7 (reserved); the generator
  # therefore keeps SDWA selects in 0..6. Run in a child process so the crash cannot take pytest down.
  import subprocess, sys
  if not llvm_mc.available("gfx942"): pytest.skip("no libLLVM with gfx942")
  code = "from fuzz import llvm_mc; print(llvm_mc.Disassembler.get('gfx942').disasm(bytes.fromhex('f9feff1dff0f0107')))"
  r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
  assert r.returncode != 0, f"LLVM no longer crashes (got {r.stdout.strip()}): reserved SDWA selects may be fuzzed again"
