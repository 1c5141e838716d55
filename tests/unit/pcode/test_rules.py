"""The generator's rewrite rules (emu.pcode.rules) fire on the vendor notations they stand for, and nowhere else. The values the
rewritten ops compute are checked against IEEE arithmetic in test_fixes_oracle.py, test_overrides.py and tests/unit/amd/test_executor_ops.py."""
from emu.pcode import compiler, rules
from emu.pcode.parser import parse

def used(text:str) -> set:
  rules.apply(parse(text), out := set())
  return out

def test_each_rule_fires_on_the_vendor_text_of_its_ops_on_every_arch():
  want = {"V_LDEXP_F32": {"ldexp"}, "V_LDEXP_F16_E32": {"ldexp"}, "V_SIN_F32_E32": {"revolutions"}, "V_COS_F16_E32": {"revolutions"},
          "V_RSQ_F32_E32": {"rsq"}, "V_RSQ_F16_E32": {"rsq"}, "V_RNDNE_F32_E32": {"round-half-even"}, "V_RNDNE_F64_E32": {"round-half-even"},
          "V_FREXP_MANT_F32_E32": {"frexp_mant"}, "V_FREXP_MANT_F64_E32": {"frexp_mant"}, "V_FREXP_EXP_I32_F32_E32": {"frexp_exp"},
          "V_FREXP_EXP_I16_F16_E32": {"frexp_exp"}, "V_FREXP_EXP_I32_F64_E32": {"frexp_exp"}}
  carry = {"rdna3": ("V_MAD_U64_U32", "V_MAD_I64_I32"), "rdna4": ("V_MAD_CO_U64_U32", "V_MAD_CO_I64_I32"), "cdna": ("V_MAD_U64_U32", "V_MAD_I64_I32")}
  for arch in ("rdna3", "rdna4", "cdna"):
    table = {op.name: text for op, text in compiler.pcode_table(arch).items()}
    for name, rule in want.items(): assert used(table[name]) == rule, (arch, name)
    for name in carry[arch]: assert used(table[name]) == {"carry-out-mad"}, (arch, name)

def test_rules_leave_other_notations_alone():
  assert used("D0.f32 = S0.f32 * 3.0F ** S1.i32") == set()            # not a power of two
  assert used("D0.f64 = 1.0 / sqrt(S0.f64)") == set()                  # f64 computes in f64 already
  assert used("D0.f32 = sin(S0.f32 * 32'F(PI * 3.0))") == set()        # not whole revolutions
  assert used("D0.f32 = 2.0F / sqrt(S0.f32)") == set()
  assert used("D0.f32 = floor(S0.f32 + 0.5F)") == set()              # plain round-half-up, without the even correction
  assert used("{ D1.u1, D0.u64 } = 65'B(65'U(S0.u64) * 65'U(S1.u32) + 65'U(S2.u64))") == set()   # a 64-bit factor: can pass 64 bits
  assert used("{ D1.u1, D0.u64 } = 65'B(65'U(S0.u32) * 65'U(S1.u32) - 65'U(S2.u64))") == set()   # a difference, not a sum
  assert used("D0.u32 = 32'U(mantissa(S0.f32))") == set()             # the fraction field in an integer context (V_CVT_SR_FP8)
  assert used("D0.i32 = exponent(S0.f32) - 127") == set()              # the unbiased field, not frexp's exponent
  assert used("D0.i32 = exponent(S0.f32) - 15 + 1") == set()           # another format's bias
