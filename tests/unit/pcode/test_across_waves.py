"""compile_across_waves: every pure SALU op of every arch, compiled as numpy code with one lane per wave, gives what the per-wave
Python code (compile_op, the reference the SALU executor ran before) gives on random and small inputs, branches included."""
import numpy as np
import pytest
from emu.pcode import compiler
from emu.pcode.abi import OpState

ACROSS = {"S0", "S1", "D0", "SCC", "VCC", "EXEC", "M0", "PC", "VCCZ", "EXECZ", "WAVE32", "WAVE64", "SIMM16", "SIMM32", "SDST", "SRC0"}

def _pure_salu(arch):
  for op in compiler.ops_for(arch):
    if type(op).__name__ not in ("SOP1Op", "SOP2Op", "SOPCOp", "SOPKOp", "SOPPOp"): continue
    try: c = compiler.compile_op(arch, op)
    except compiler.Unsupported: continue
    if c.kind == "scalar" and not c.mem and not c.override and (c.reads | c.writes) <= ACROSS: yield op, c

@pytest.mark.parametrize("arch", ["rdna3", "rdna4", "cdna"])
def test_across_waves_equals_the_per_wave_code(arch):
  rng, n, seen = np.random.default_rng(0), 48, 0
  for op, c in _pure_salu(arch):
    across = compiler.compile_across_waves(arch, op)
    assert across is not None, op.name
    seen += 1
    for small in (False, True):
      cols = {k: rng.integers(0, 1 << min(c.widths.get(k, 64 if k in ("EXEC", "VCC", "PC") else 32), 63), n, dtype=np.uint64)
              for k in c.reads if k in ("S0", "S1", "D0", "VCC", "EXEC", "M0", "PC")}
      if small: cols = {k: v & np.uint64(7) for k, v in cols.items()}
      cols |= {k: rng.integers(0, 2, n, dtype=np.uint64) for k in ("SCC", "VCCZ", "EXECZ") if k in c.reads}
      fields = {k: int(rng.integers(0, 1 << 16)) for k in ("SIMM16", "SIMM32", "SDST", "SRC0") if k in c.reads}
      want = {w: [] for w in c.writes}
      for i in range(n):
        o = OpState(**{"PC": 0, **{k: int(v[i]) for k, v in cols.items()}}, **fields, WAVE32=True, WAVE64=False)
        c.fn(o)
        for w in c.writes: want[w].append(int(getattr(o, w)) & (2 ** 64 - 1))
      st = OpState(**{"PC": np.zeros(n, np.uint64), **cols}, **fields, n=n, WAVE32=True, WAVE64=False)
      across.fn(st)
      for w in c.writes:
        got = np.broadcast_to(np.asarray(getattr(st, w)).astype(np.uint64), (n,))
        assert got.tolist() == want[w], (op.name, w, small)
  assert seen > 100

def test_vector_ops_do_not_compile_across_waves():
  op = next(o for o in compiler.ops_for("rdna3") if o.name == "V_ADD_F32_E32")
  assert compiler.compile_across_waves("rdna3", op) is None
