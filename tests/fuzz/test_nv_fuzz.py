"""The NV fuzz targets: seeded smoke runs of ptx.int, ptx.float, ptxas.agree, kernel.nv and kernel.cuda; the independent PTX
reference checked against values worked by hand; the check is not vacuous (a wrong emulator result is a finding)."""
import random
import pytest
from fuzz import ptx_oracle as O, registry, runner
from fuzz.finding import Finding
from fuzz.targets import ptx as ptx_target

@pytest.mark.parametrize("name, execs", [("ptx.int", 300), ("ptx.float", 300), ("ptxas.agree", 40)])
def test_smoke_finds_nothing(name, execs, tmp_path):
  if name == "ptxas.agree" and name not in registry.load_all(): pytest.skip("ptxas is not installed (PyPI nvidia-cuda-nvcc-cu12)")
  st = runner.run(registry.get(name), seconds=20, seed=1, findings_dir=tmp_path, progress=None, max_execs=execs)
  assert st.execs > 0 and not st.findings, [str(p) for p in st.findings.values()]

def test_reference_rounding_by_hand():
  # f32: 1 + 2^-24 is a tie between 1 and 1 + 2^-23: even -> 1.0; 1 + 3*2^-25 rounds up; the smallest subnormal; overflow
  from fractions import Fraction
  assert O.encode(1 + Fraction(1, 2 ** 24), "f32") == 0x3f800000
  assert O.encode(1 + Fraction(3, 2 ** 25), "f32") == 0x3f800001
  assert O.encode(Fraction(1, 2 ** 149), "f32") == 0x00000001
  assert O.encode(Fraction(2) ** 128, "f32") == 0x7f800000
  assert O.decode(0x3c00, "f16") == 1 and O.decode(0xfc00, "f16") < 0
  assert O.ORACLE["add"][2]([], "f32", 0x80000000, 0x80000000) == 0x80000000   # (-0) + (-0) = -0
  assert O.ORACLE["add"][2]([], "f32", 0x3f800000, 0xbf800000) == 0x00000000   # 1 + (-1) = +0
  assert O.ORACLE["mad"][2](["hi"], "u32", 0xffffffff, 0xffffffff, 1) == 0xfffffffe + 1   # hi(a*b) + c
  assert O.ORACLE["setp"][2](["ne"], "f32", 0x7fc00000, 0) == 0 and O.ORACLE["setp"][2](["neu"], "f32", 0x7fc00000, 0) == 1
  # cvt: 1/3 (f64) to f32 toward zero and to nearest; +inf to s32 saturates; 65535.996 (f32) to f16 overflows (rn) or stops at 65504 (rz)
  assert [O.cvt(["rz"], "f32", "f64", 0x3FD5555555555555), O.cvt(["rn"], "f32", "f64", 0x3FD5555555555555)] == [0x3eaaaaaa, 0x3eaaaaab]
  assert O.cvt(["rzi"], "s32", "f32", 0x7f800000) == 0x7fffffff and O.cvt(["rzi"], "u16", "f32", 0x7fc00000) == 0
  assert [O.cvt(["rn"], "f16", "f32", 0x477fffff), O.cvt(["rz"], "f16", "f32", 0x477fffff)] == [0x7c00, 0x7bff]

def test_a_wrong_emulator_result_is_a_finding(monkeypatch):
  import emu.nv.isa as isa
  real = isa.OPS["add"]
  monkeypatch.setitem(isa.OPS, "add", real.__class__(real.types, real.mods, lambda ctx, inst, t: ctx.write(
    inst.operands[0], ctx.read(inst.operands[1], t), t), real.timing, real.operands))   # add that ignores its second operand
  case = ptx_target.generate(random.Random(0), floats=False)
  case.update(op="add", type="u32", mods=[], active=0xffffffff, lanes=[[1, 2, 0]] * 32)
  with pytest.raises(Finding) as f: ptx_target.check(case)
  assert f.value.kind == "ptx-mismatch"

@pytest.mark.parametrize("name", ["kernel.nv", "kernel.cuda"])
def test_kernel_targets_smoke(name, tmp_path):
  st = runner.run(registry.get(name), seconds=60, seed=1, findings_dir=tmp_path, progress=None, max_execs=3)
  assert st.execs > 0 and all(p.exists() for p in st.findings.values())
