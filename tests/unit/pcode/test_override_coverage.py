"""Every override entry (emu.pcode.overrides: EXECUTOR_OWNED, PCODE_FIXES and the per-arch fix tables; emu.pcode.handwritten's
tables) is exercised by a test that names it, or belongs to a family whose test runs every member against an independent
expectation (FAMILIES), and names an opcode of some arch (an entry no table has is dead: an upstream rename would leave it
silently unused)."""
import importlib, pathlib, re
from emu.pcode import handwritten as H
from emu.pcode import overrides as O
from emu.amd_ops import effect

TESTS = pathlib.Path(__file__).resolve().parents[2]
# family -> (which entries, the test module that runs all of them and its test function)
FAMILIES = {
  "matrix ops": (lambda table, name: re.match(r"V_S?(MFMA|WMMA|SWMMAC|SMFMAC)", name) is not None, "unit/pcode/test_matrix_family.py",
                 "test_every_"),
  "executor no-ops": (lambda table, name: table == "EXECUTOR_OWNED" and effect(name) == "none", "unit/amd/test_executor_owned.py",
                      "test_no_effect_ops_change_nothing"),
  "wave ends": (lambda table, name: table == "EXECUTOR_OWNED" and effect(name) in ("end", "halt"), "unit/amd/test_executor_owned.py",
                "test_wave_ending_ops_end_the_wave"),
  "unmodelled executor ops": (lambda table, name: table == "EXECUTOR_OWNED", "unit/amd/test_executor_owned.py",
                              "test_unmodelled_executor_ops_are_illegal_instructions"),
}

def entries() -> list[tuple[str, str]]:
  tables = {"EXECUTOR_OWNED": O.EXECUTOR_OWNED, "EXECUTOR_RUN": O.EXECUTOR_RUN, "PCODE_FIXES": O.PCODE_FIXES, "HANDWRITTEN": H.HANDWRITTEN,
            "HANDWRITTEN_RDNA3": H.HANDWRITTEN_RDNA3,
            "HANDWRITTEN_RDNA4": H.HANDWRITTEN_RDNA4,
            **{f"ARCH_PCODE_FIXES.{a}": t for a, t in O.ARCH_PCODE_FIXES.items()},
            **{f"HANDWRITTEN_CDNA.{t}": d for t, d in H.HANDWRITTEN_CDNA.items()}}
  return [(t, n) for t, d in tables.items() for n in d]

def base(name:str) -> str: return re.sub(r"_E(32|64)$", "", name)

def test_every_override_entry_is_named_by_a_test_or_run_by_its_family_test():
  own = pathlib.Path(__file__).resolve()
  text = "\n".join(p.read_text() for p in TESTS.rglob("*.py") if p.resolve() != own).lower()
  for _, (_, path, fn) in FAMILIES.items(): assert f"def {fn}" in (TESTS / path).read_text(), (path, fn)
  missing = [(t, n) for t, n in entries() if base(n).lower() not in text and not any(pred(t.split(".")[0], n) for pred, _, _ in FAMILIES.values())]
  assert not missing, f"{len(missing)} override entries no test names: {missing[:10]}"

def test_no_override_entry_is_dead():
  # an entry is alive if some arch's enums have the opcode (the tables are shared across archs, so check the union)
  names = {op.name for f in ("rdna3", "rdna4", "cdna") for e in vars(importlib.import_module(f"tinygrad.runtime.autogen.amd.{f}.enum")).values()
           if isinstance(e, type) and hasattr(e, "__members__") for op in e}
  dead = sorted({n for t, n in entries() if n not in names and base(n) not in names and f"{n}_E32" not in names and f"{n}_E64" not in names})
  assert not dead, dead
