"""The instruction trace: dispatch selection (EMU_TRACE syntax), LLVM disassembly with the DSL repr as fallback."""
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.rdna3.ins import v, v_mov_b32_e32, v_fma_f32, s_endpgm
from emu.amd.api import Dispatch
from emu.amd.arch import get_spec
from emu.amd.decode import decode
from emu.amd.disasm import disassemble, instruction_text
from emu.amd.gpu import AMDGPU
from emu.amd.kernel import Buffers, llvm_available
from emu.amd.trace import TraceFilter
from emu.amd import disasm

def test_trace_filter_syntax():
  assert TraceFilter("1").wants(7) and TraceFilter("all").wants(0, "x") and TraceFilter(True).wants(3)
  assert not TraceFilter("0").wants(0, "E_4") and not TraceFilter("").wants(0) and not TraceFilter(False).wants(0)
  f = TraceFilter("@2, r_16")
  assert f.wants(2) and f.wants(5, "r_16_4n1") and not f.wants(1, "E_4") and not f.wants(3)

def _dispatch(name:str, bufs:Buffers) -> Dispatch:
  code = b"".join(i.to_bytes() for i in [v_mov_b32_e32(v[1], 3), s_endpgm()]) + bytes(64)
  return Dispatch(code_addr=bufs.add(np.frombuffer(code, dtype=np.uint8).copy(), "code", writable=False), grid=(1, 1, 1), workgroup=(32, 1, 1),
                  user_sgprs=[], name=name)

@pytest.mark.parametrize("sel, traced", [("@1", [False, True, False]), ("E_3", [False, False, True]), ("1", [True] * 3), ("0", [False] * 3)])
def test_amdgpu_traces_selected_dispatches(capsys, sel, traced):
  bufs = Buffers()
  gpu = AMDGPU("gfx1100", bufs.mem, trace=sel, timing=False)
  for i in range(3):
    gpu.dispatch(_dispatch(f"E_{i + 1}", bufs))
    assert ("v1[0:0x3" in capsys.readouterr().out) == traced[i]

def test_emu_trace_env_selects(monkeypatch, capsys):
  monkeypatch.setenv("EMU_TRACE", "@0")
  bufs = Buffers()
  gpu = AMDGPU("gfx1100", bufs.mem, timing=False)
  gpu.dispatch(_dispatch("a", bufs))
  gpu.dispatch(_dispatch("b", bufs))
  assert capsys.readouterr().out.count("v1[0:0x3") == 1

@pytest.mark.skipif(not llvm_available(), reason="needs libLLVM")
def test_disassemble_uses_llvm_mc():
  assert disassemble(v_fma_f32(v[1], v[2], v[3], 1.0).to_bytes()) == "v_fma_f32 v1, v2, v3, 1.0"
  assert disassemble(s_endpgm().to_bytes()) == "s_endpgm"

def test_instruction_text_falls_back_to_dsl_repr(monkeypatch):
  monkeypatch.setattr(disasm, "disassemble", lambda raw, cpu="gfx1100": None)
  instr = decode(v_mov_b32_e32(v[1], 3).to_bytes(), get_spec("gfx1100"))
  assert instruction_text(instr) == repr(instr.inst)
