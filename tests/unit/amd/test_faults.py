"""The emulator's fault contract: whatever the code or the launch, `AMDGPU.dispatch` / `run_program` return or raise a GPUFault
subclass (never IndexError, MemoryError ...), within bounded time, with a message naming the PC, the instruction and the wave.
Encodings are built from raw fields (fuzz.amd_fields.encode_fields) because the assembler DSL refuses most of them."""
import time, tracemalloc
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.rdna3.ins import s_cmp_eq_u32, s_cbranch_scc1, global_load_b32, v
from tinygrad.renderer.amd.dsl import NULL
from emu.amd import run_program
from emu.amd.api import Dispatch, GPUEmulatorError, GPUHangFault, GPUIllegalInstruction, GPUInvalidDispatch, GPUMemoryFault
from emu.amd.gpu import AMDGPU
from emu.common.memory import MemoryMap
from emu.amd.runner import assemble
from emu.amd.exec_salu import ControlStep
from fuzz.amd_fields import encode_fields, inst_classes

def raw(family:str, cls:str, **fields) -> bytes: return encode_fields(inst_classes(family)[cls], fields)
def op(family:str, cls:str, name:str) -> int:
  f = dict(inst_classes(family)[cls]._fields).get("op")
  return next(o.value for o in f._enum if o.name == name)

LOOP = [s_cmp_eq_u32(0, 0), s_cbranch_scc1(-2 & 0xffff)]   # spins forever

@pytest.mark.parametrize("waves", [1, 16])
def test_wall_clock_watchdog_bounds_a_runaway_loop_whatever_its_width(waves):
  t = time.perf_counter()
  with pytest.raises(GPUHangFault, match="0.5 s wall clock") as e: run_program(LOOP, waves=waves, watchdog_s=0.5)
  took = time.perf_counter() - t
  assert 0.5 <= took < 20, took   # one wave used to run 50M wave-instructions (about 36 minutes) before its hang fault
  assert e.value.pc is not None and e.value.wave is not None

def test_instruction_watchdog_is_deterministic():
  with pytest.raises(GPUHangFault) as a: run_program(LOOP, watchdog=999, watchdog_s=0)
  with pytest.raises(GPUHangFault) as b: run_program(LOOP, watchdog=999, watchdog_s=0)
  assert a.value.executed == b.value.executed == 1000 and "999 wave-instructions" in str(a.value)

def test_cancel_from_another_thread_stops_the_dispatch():
  import threading
  code = np.frombuffer(assemble(LOOP) + bytes(16), dtype=np.uint8).copy()
  mem = MemoryMap()
  mem.map(code.ctypes.data, code.size, "code", writable=False, backing=code)
  gpu = AMDGPU("gfx1100", mem, timing=False, watchdog_s=0)
  threading.Timer(0.2, gpu.cancel, ("test reset",)).start()
  with pytest.raises(GPUHangFault, match="was reset: test reset"):
    gpu.dispatch(Dispatch(code_addr=code.ctypes.data, grid=(1, 1, 1), workgroup=(32, 1, 1), user_sgprs=[]))

def test_failure_inside_an_instruction_is_an_emulator_error_naming_pc_instruction_and_wave(monkeypatch):
  # make s_endpgm's step fail the way an emulator bug would
  monkeypatch.setattr(ControlStep, "execute", lambda self, m, ws: [][1])
  with pytest.raises(GPUEmulatorError) as e: run_program([], waves=2)
  err = e.value
  assert isinstance(err.error, IndexError) and err.pc is not None and err.wave == (0, 0, 0, 0)
  assert f"pc={err.pc:#x}" in str(err) and "s_endpgm" in str(err) and "IndexError" in str(err)

@pytest.mark.parametrize("arch,family,code,what", [
  # s_lshr_b64 s[0:1], s[127:128], 1: a 64-bit source at EXEC_HI runs past the scalar operands
  ("gfx1100", "rdna3", lambda: raw("rdna3", "SOP2", op=op("rdna3", "SOP2", "S_LSHR_B64"), sdst=0, ssrc0=127, ssrc1=129), "s[127:128]"),
  # v_lshlrev_b64 v[255:256], 1, v[0:1]: a 64-bit destination at the last VGPR
  ("gfx1100", "rdna3", lambda: raw("rdna3", "VOP3", op=op("rdna3", "VOP3", "V_LSHLREV_B64"), vdst=255, src0=129, src1=256, src2=128), "v[255:256]"),
  # gfx942 v_cmp_eq_u32_e64 with SDST field 254: no SGPR (the wheel calls it LDS_DIRECT)
  ("gfx942", "cdna", lambda: raw("cdna", "VOP3_SDST", op=op("cdna", "VOP3_SDST", "V_CMP_EQ_U32_E64"), vdst=254, src0=256, src1=257),
   "SGPR destination"),
  # gfx942 SDWA source select 7 (reserved)
  ("gfx942", "cdna", lambda: raw("cdna", "VOP2_SDWA", op=op("cdna", "VOP2_SDWA", "V_ADD_F32_E32"), vdst=0, vsrc0=1, vsrc1=2, src0=249,
                                 dst_sel=6, dst_unused=0, src0_sel=7, src1_sel=6), "select 7 is reserved"),
])
def test_impossible_operands_are_illegal_instructions(arch, family, code, what):
  with pytest.raises(GPUIllegalInstruction, match=what.replace("[", r"\[").replace("]", r"\]")) as e:
    run_program([code()], arch=arch, lanes=64)
  assert e.value.pc is not None and e.value.wave == (0, 0, 0, 0) and "wave=(0, 0, 0, 0)" in str(e.value)

@pytest.mark.parametrize("arch", ["gfx942", "gfx950"])
def test_gfx9_vop3_with_a_literal_source_is_illegal(arch):
  # gfx9 has no VOP3 literal (LLVM: FeatureVOP3Literal is gfx10+): source code 255 used to read a literal of 0 and run the next
  # dword as code. The DSL writes the 8-byte encoding with src0 = 255.
  from emu.amd.arch import get_spec
  ins = get_spec(arch).ins
  for inst in (ins.v_add_f32_e64(v[1], 0x12345678, v[2]), ins.v_pk_add_f16(v[1], 0x3c003c00, v[2])):
    with pytest.raises(GPUIllegalInstruction, match="take no literal"): run_program([inst], arch=arch, lanes=64)

def test_a_fault_message_survives_an_instruction_the_wheel_cannot_print():
  # v_cndmask_b16 with src0 = 223 (a reserved source code): the wheel's own repr of it raises; the fault must still be reported
  data = raw("rdna3", "VOP3", op=op("rdna3", "VOP3", "V_CNDMASK_B16"), vdst=0, src0=223, src1=256, src2=106)
  with pytest.raises(GPUIllegalInstruction) as e: run_program([data])
  assert "pc=0x" in str(e.value)

@pytest.mark.parametrize("change,what", [(dict(workgroup=(2048, 1, 1)), "2048 threads"), (dict(lds_bytes=1 << 20), "bytes of LDS"),
                                         (dict(scratch_per_lane=1 << 20), "scratch per lane")])
def test_impossible_launches_are_invalid_dispatches_not_memory_errors(change, what):
  code = np.frombuffer(assemble([]) + bytes(16), dtype=np.uint8).copy()
  mem = MemoryMap()
  mem.map(code.ctypes.data, code.size, "code", writable=False, backing=code)
  d = Dispatch(**{"code_addr": code.ctypes.data, "grid": (1, 1, 1), "workgroup": (64, 1, 1), "user_sgprs": [], **change})
  with pytest.raises(GPUInvalidDispatch, match=what): AMDGPU("gfx1100", mem).dispatch(d)

def test_a_grid_of_millions_of_workgroups_is_bounded_in_memory_and_time():
  code = np.frombuffer(assemble([]) + bytes(16), dtype=np.uint8).copy()
  mem = MemoryMap()
  mem.map(code.ctypes.data, code.size, "code", writable=False, backing=code)
  tracemalloc.start()
  try:
    with pytest.raises(GPUHangFault, match="wall clock"):
      AMDGPU("gfx1100", mem, watchdog_s=1).dispatch(Dispatch(code_addr=code.ctypes.data, grid=(4 << 20, 1, 1), workgroup=(32, 1, 1), user_sgprs=[]))
    peak = tracemalloc.get_traced_memory()[1]
  finally: tracemalloc.stop()
  assert peak < 64 << 20, peak   # the workgroup list alone used to take about 110 bytes per workgroup (440 MB here) before any wave ran

def test_an_access_that_wraps_past_the_top_of_the_address_space_is_a_memory_fault():
  buf = np.zeros(64, dtype=np.uint8)
  mem = MemoryMap()
  mem.map(buf.ctypes.data, buf.size, "buf", backing=buf)
  with pytest.raises(GPUMemoryFault) as e:   # v[0:1] = 2**64 - 2: a 4-byte load whose end wraps to 2 (it used to index memory at -2)
    run_program([global_load_b32(vdst=v[2], addr=v[0:1], saddr=NULL, offset=0)], vgprs={0: 0xfffffffe, 1: 0xffffffff}, memory=mem)
  assert e.value.addr == 2**64 - 2
