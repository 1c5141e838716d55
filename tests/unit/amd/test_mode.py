"""The wave's MODE register: start value from COMPUTE_PGM_RSRC1, s_setreg/s_getreg on HW_REG_MODE, s_round_mode, s_denorm_mode,
and its effect on float results within one program."""
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.rdna3.ins import s, v, s_getreg_b32, s_setreg_imm32_b32, s_setreg_b32, s_round_mode, s_denorm_mode, \
  v_add_f32_e32, s_mov_b32
from emu.amd import run_program
from emu.amd.arch import get_spec
from emu.amd.kernel import compile_kernel, llvm_available, load_kernel, run_kernel
from emu.amd.wave import HWREG_MODE, WaveState, mode_from_rsrc1

HW_REG_MODE = 1
DENORM = np.float32(2.0 ** -140)

def hwreg(reg:int, offset:int, size:int) -> int: return reg | (offset << 6) | ((size - 1) << 11)
def f32(x) -> np.ndarray: return np.asarray(x, dtype=np.float32).view(np.uint32)
def as_f32(x) -> np.ndarray: return np.asarray(x, dtype=np.uint32).view(np.float32)

def test_run_program_starts_in_ieee_mode():
  st = run_program([s_getreg_b32(s[5], hwreg(HW_REG_MODE, 0, 32))])
  mode = int(st.sgpr[0, 5])
  assert mode & 0xff == 0xf0 and mode >> 9 & 1   # nearest even (f32, f16/f64), denormals kept (both), IEEE

def test_setreg_round_and_denorm_mode_change_later_results():
  third = np.float32(1 / 3)
  prog = [v_add_f32_e32(v[10], v[1], v[2]), v_add_f32_e32(v[11], v[3], v[4]),
          s_setreg_imm32_b32(s[0], hwreg(HW_REG_MODE, 0, 8), 0x00),     # nearest even, flush all denormals
          v_add_f32_e32(v[12], v[1], v[2]), v_add_f32_e32(v[13], v[3], v[4]),
          s_round_mode(0x3), s_denorm_mode(0xf),                         # toward zero (f32 and f16/f64), keep denormals
          v_add_f32_e32(v[14], v[1], v[2]), v_add_f32_e32(v[15], v[3], v[4]),
          s_mov_b32(s[6], 0xf1), s_setreg_b32(s[6], hwreg(HW_REG_MODE, 0, 8)),   # toward +inf for f32
          v_add_f32_e32(v[16], v[3], v[4]), s_getreg_b32(s[7], hwreg(HW_REG_MODE, 0, 8))]
  st = run_program(prog, vgprs={1: f32(DENORM), 2: f32(0.0), 3: f32(1.0), 4: f32(third)})
  exact_sum = 1.0 + float(third)                        # (f64 holds the exact sum of these two f32 values)
  down, up = np.float32(exact_sum), np.nextafter(np.float32(exact_sum), np.float32(np.inf))
  if float(down) > exact_sum: down, up = np.nextafter(down, np.float32(-np.inf)), down
  r = {reg: as_f32(st.vgpr[0, 0, reg]) for reg in range(10, 17)}
  assert r[10] == DENORM and r[11] == np.float32(1.0) + third   # IEEE start
  assert r[12] == 0 and r[13] == np.float32(1.0) + third        # denormal flushed
  assert r[14] == DENORM and r[15] == down                      # round toward zero
  assert r[16] == up and int(st.sgpr[0, 7]) == 0xf1
  assert down != up

def test_mode_groups_split_waves_with_different_modes():
  st = WaveState(get_spec("gfx1100"), 4, 32, 8)
  ws = np.arange(4)
  assert [g.tolist() for g in st.mode_groups(ws)] == [[0, 1, 2, 3]]
  st.hwreg[[1, 3], HWREG_MODE] = 0x3
  assert sorted(g.tolist() for g in st.mode_groups(ws)) == [[0, 2], [1, 3]]
  assert st.mode(1)["MODE_ROUND32"] == 3 and st.mode(0)["MODE_DENORM32"] == 3

@pytest.mark.parametrize("arch,rsrc1,mode", [("gfx1100", 0xaf0000, 0x3f0), ("gfx1100", 0x2c3000, 0x1c3), ("gfx942", 0x800000, 0x200),
                                             ("gfx1201", 0x8f0000, 0x2f0)])
def test_mode_from_rsrc1(arch, rsrc1, mode):
  assert mode_from_rsrc1(get_spec(arch), rsrc1) == mode

@pytest.mark.skipif(not llvm_available(), reason="needs libLLVM for the AMDGPU backend")
def test_tinygrad_kernel_rsrc1_keeps_ieee_denormals(bufs):
  k = compile_kernel(lambda a, b: a + b, (64,), (64,))
  lk = load_kernel(k.lib, bufs)
  mode = mode_from_rsrc1(get_spec("gfx1100"), lk.rsrc1)
  assert mode & 0xff == 0xf0 and mode >> 9 & 1   # LLVM's compute defaults: nearest even, denormals kept, IEEE
  a = np.full(64, DENORM, np.float32) * np.arange(64, dtype=np.float32)
  b = np.where(np.arange(64) % 2 == 0, np.float32(0.0), -DENORM / 2).astype(np.float32)
  out = np.zeros(64, np.float32)
  run_kernel(k, [a, b], out, bufs, timing=False)
  assert out.view(np.uint32).tolist() == (a + b).view(np.uint32).tolist() and (out[1:] != 0).any()

@pytest.mark.parametrize("arch", ["gfx1100", "gfx1201"])
def test_setreg_at_a_nonzero_offset_writes_only_its_field(arch):
  # MODE starts at 0x3f0 (FP_DENORM [7:4] = 0xf, DX10_CLAMP [8], IEEE [9]). FP_DENORM := 0x3 gives 0x330; bits [9:8] := 0b10 clears
  # DX10_CLAMP only: 0x230. Reading back the [7:4] field gives 0x3.
  I = __import__(f"tinygrad.runtime.autogen.amd.{'rdna4' if arch == 'gfx1201' else 'rdna3'}.ins", fromlist=["ins"])
  st = run_program([I.s_setreg_imm32_b32(I.s[0], hwreg(HW_REG_MODE, 4, 4), 0x3), I.s_mov_b32(I.s[6], 0x2),
                    I.s_setreg_b32(I.s[6], hwreg(HW_REG_MODE, 8, 2)), I.s_getreg_b32(I.s[5], hwreg(HW_REG_MODE, 0, 32)),
                    I.s_getreg_b32(I.s[7], hwreg(HW_REG_MODE, 4, 4))], arch=arch)
  assert int(st.sgpr[0, 5]) == 0x230 and int(st.sgpr[0, 7]) == 0x3

# ---- omod follows the MODE (operands.omod_applies): ignored in IEEE mode and when output denormals are kept ----
def omod_sum(mode:int, omod:int, arch:str="gfx1100") -> float:
  """1.0 + 2.0 with VOP3 omod after `s_setreg MODE[9:0] = mode` (gfx12 has no IEEE bit: only the denormal field counts there)."""
  from tinygrad.runtime.autogen.amd import rdna3, rdna4
  I = rdna4.ins if arch == "gfx1201" else rdna3.ins
  st = run_program([I.s_setreg_imm32_b32(I.s[0], hwreg(HW_REG_MODE, 0, 10), mode), I.v_add_f32_e64(I.v[1], I.v[2], I.v[3], omod=omod)],
                   arch=arch, vgprs={2: f32(1.0), 3: f32(2.0)})
  return float(as_f32(st.vgpr[0, 0, 1]))

def test_omod_is_ignored_in_llvms_compute_mode():
  assert omod_sum(0x3f0, 1) == 3.0   # IEEE, denormals kept: what LLVM's kernels run with

def test_omod_scales_with_ieee_off_and_output_denormals_flushed():
  assert (omod_sum(0x100, 1), omod_sum(0x100, 2), omod_sum(0x100, 3)) == (6.0, 12.0, 1.5)   # *2, *4, /2
  assert omod_sum(0x1d0, 1) == 6.0    # f32 denormal field 1: inputs kept, outputs flushed

def test_omod_is_ignored_when_output_denormals_are_kept():
  assert omod_sum(0x120, 1) == 3.0    # IEEE off, f32 denormal field 2: outputs kept

def test_omod_on_gfx12_depends_on_the_denormal_mode_only():
  assert omod_sum(0x000, 1, "gfx1201") == 6.0 and omod_sum(0x0f0, 1, "gfx1201") == 3.0
