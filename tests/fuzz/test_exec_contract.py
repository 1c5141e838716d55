"""The executor contract (fuzz/exec_contract.py) can fail: each mutation of a correct run below is the kind of executor bug it is
there to catch, and the check must report it. The sweep over every opcode of every arch (tests/fuzz/test_exec_every_op.py) runs
the contract as one of the exec properties; these tests show that passing it means something."""
import random
import pytest
from fuzz import amd_exec, exec_contract
from fuzz.finding import Finding
from fuzz.targets import exec as exec_target

def case_of(arch:str, cname:str, op:str, **fields) -> dict:
  """A valid case of `op`; with `fields`, those fields, registers drawn for them and every lane active."""
  for seed in range(200):
    case = amd_exec.generate(arch, random.Random(seed), classes=[cname], ops={op})
    if case["op"] == op and amd_exec.llvm_valid(case := {**case, "fields": {**case["fields"], **fields}}): break
  else: raise AssertionError(f"no valid {op} case with {fields} in 200 draws")
  if not fields: return case
  case = amd_exec.fill_registers(random.Random(1), {k: v for k, v in case.items() if k not in ("sgprs", "vgprs")})
  return {**case, "exec": (1 << case["lanes"]) - 1}

def mutated(transform):
  """execute() whose result the mutation `transform(case, outcome)` edits (a stand-in for a broken executor step)."""
  def run(case):
    out = exec_target.execute(case)
    if out.state is not None: transform(case, out)
    return out
  return run

def test_a_correct_run_passes():
  case = case_of("rdna3", "VOP2", "V_ADD_NC_U32_E32", vdst=5, src0=256 + 3, vsrc1=4)
  exec_contract.check(case, exec_target.execute(case), exec_target.execute, "v_add")

def test_reading_a_register_the_instruction_does_not_name_is_reported():
  # v_add_nc_u32 whose step also adds v200 (like the ADDTID load that read an address VGPR the encoding has no field for)
  case = case_of("rdna3", "VOP2", "V_ADD_NC_U32_E32", vdst=5, src0=256 + 3, vsrc1=4)
  d = 5
  def add_v200(c, out): out.state.vgpr[0, :, d] += amd_exec.initial_state(c)[1][:, 200]
  bad = mutated(add_v200)
  with pytest.raises(Finding, match="contract-unnamed-read"): exec_contract.check(case, bad(case), bad, "v_add")

def test_a_destination_written_only_sometimes_is_reported():
  # a load whose step leaves the destination as it was (the ADDTID load wrote it only with GLC set)
  case = case_of("rdna3", "GLOBAL", "GLOBAL_LOAD_B32")
  dst = amd_exec.destination(case)
  def keep_old(c, out): out.state.vgpr[0, :, dst.reg] = amd_exec.initial_state(c)[1][:, dst.reg]
  bad = mutated(keep_old)
  with pytest.raises(Finding, match="contract-unnamed-read.*vdst"): exec_contract.check(case, bad(case), bad, "global_load")

def test_a_source_the_step_ignores_is_reported():
  # v_add_nc_u32 computed as a move of src0: vsrc1 never reaches the result
  case = case_of("rdna3", "VOP2", "V_ADD_NC_U32_E32", vdst=5, src0=256 + 3, vsrc1=4)
  def drop_src1(c, out): out.state.vgpr[0, :, 5] -= amd_exec.initial_state(c)[1][:, 4]   # (v3 + v4) - v4
  bad = mutated(drop_src1)
  with pytest.raises(Finding, match="contract-ignored-source"): exec_contract.check(case, bad(case), bad, "v_add")
