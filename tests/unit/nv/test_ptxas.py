"""The emulator's PTX front end and NVIDIA's ptxas agree on what is valid PTX: tinygrad's PTX for a spread of programs (and the
hand-written kernels of the other tests) is accepted by both; `.approx` on f64, which the front end rejects, ptxas rejects too.

ptxas comes from PyPI's `nvidia-cuda-nvcc-cu12` (the `dev` extra `./bench.sh setup` installs), never from a system CUDA
toolkit: the bench must not depend on one. The emulator itself never needs ptxas."""
import subprocess
import pytest
from emu.nv import isa, ptx
from emu.nv.kernel import render
from mockgpu.nvrtc_path import pypi_ptxas

PTXAS = pypi_ptxas()
pytestmark = pytest.mark.skipif(PTXAS is None, reason="ptxas is not installed (PyPI nvidia-cuda-nvcc-cu12, in the dev extra)")

def ptxas_accepts(text:str, arch:str, tmp_path) -> tuple[bool, str]:
  src = tmp_path / "k.ptx"
  src.write_text(text)
  r = subprocess.run([PTXAS, f"-arch={arch}", str(src), "-o", str(tmp_path / "k.cubin")], capture_output=True, text=True, timeout=120)
  return r.returncode == 0, r.stderr

PROGRAMS = {
  "elementwise": (lambda a, b: a * b + 1, [(64,), (64,)], "float32"),
  "reduction": (lambda a: a.sum(1), [(33, 65)], "float32"),
  "matmul": (lambda a, b: a @ b, [(32, 48), (48, 16)], "float32"),
  "half matmul": (lambda a, b: a @ b, [(64, 64), (64, 64)], "float16"),
  "conv2d": (lambda x, w: x.conv2d(w), [(1, 3, 8, 8), (4, 3, 3, 3)], "float32"),
  "exp log recip": (lambda a: a.exp() + a.log() + a.reciprocal(), [(64,)], "float32"),
  "int8": (lambda a: (a * 3) // 2, [(64,)], "int8"),
  "int64": (lambda a: a * 3 + (a >> 2), [(64,)], "int64"),
  "softmax": (lambda a: a.softmax(-1), [(8, 40)], "float32"),
}

@pytest.mark.parametrize("name", PROGRAMS)
@pytest.mark.parametrize("arch", ["sm_86", "sm_89", "sm_90"])
def test_tinygrads_ptx_accepted_by_the_front_end_is_accepted_by_ptxas(name, arch, tmp_path):
  fn, shapes, dtype = PROGRAMS[name]
  rk = render(fn, *shapes, dtype=dtype, arch=arch)
  isa.parse(rk.ptx)   # the emulator accepts it (raises otherwise)
  ok, err = ptxas_accepts(rk.ptx, arch, tmp_path)
  assert ok, err

def test_approx_on_f64_is_rejected_by_both(tmp_path):
  text = (".version 7.8\n.target sm_89\n.address_size 64\n.visible .entry k(.param .u64 out)\n{\n.reg .f64 %d;\n.reg .u64 %a;\n"
          "ld.param.u64 %a, [out+0];\nld.global.f64 %d, [%a+0];\nsqrt.approx.f64 %d, %d;\nst.global.f64 [%a+0], %d;\nret;\n}\n")
  with pytest.raises(ptx.PTXError, match="approx"): isa.parse(text)
  ok, err = ptxas_accepts(text, "sm_89", tmp_path)
  assert not ok and "Illegal modifier '.approx'" in err, err

@pytest.mark.parametrize("inst,valid", [("rcp.approx.ftz.f64 %d, %d;", True), ("rsqrt.approx.f64 %d, %d;", True),
                                        ("rcp.approx.f64 %d, %d;", False), ("ex2.approx.f64 %d, %d;", False)])
def test_f64_approx_forms_agree_with_ptxas(inst, valid, tmp_path):
  text = (".version 7.8\n.target sm_89\n.address_size 64\n.visible .entry k(.param .u64 out)\n{\n.reg .f64 %d;\n.reg .u64 %a;\n"
          f"ld.param.u64 %a, [out+0];\nld.global.f64 %d, [%a+0];\n{inst}\nst.global.f64 [%a+0], %d;\nret;\n}}\n")
  try: isa.parse(text); ours = True
  except ptx.PTXError: ours = False
  assert ours == valid and ptxas_accepts(text, "sm_89", tmp_path)[0] == valid
