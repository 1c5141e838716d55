"""Masked if/else arms of vector ops are skipped when no lane takes them (codegen.Gen.masked_arm): every op with such a guard
computes exactly what the same op without guards computes (results, and memory writes in order), on random, special and
lane-uniform operands (uniform ones leave most arms to no lane), in every float mode."""
import numpy as np
import pytest
from emu.pcode import codegen, compiler, overrides
from emu.pcode.abi import OpState
from emu.pcode.helpers import namespace

SPECIAL = np.array([0, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0x7fa00000, 1, 0x807fffff, 0x3f800000, 0x7e00, 0x7c01, 0xfc00,
                    0x7ff0000000000000, 0x7ff8000000000001, 0x8000000000000000, 0x0c0c0004, 0x05040100], np.uint64)

class Mem:
  """Reads give an address hash; writes are logged."""
  def __init__(self): self.log = []
  def read(self, a, nb): return (np.asarray(a, np.uint64) * np.uint64(2654435761)) & np.uint64((1 << (8 * nb)) - 1)
  def write(self, a, v, nb): self.log.append((np.asarray(a).tolist(), np.asarray(v).tolist(), nb))

def _operand(rng, w:int, kind:int, n:int):
  if w > 64: return rng.integers(0, 1 << 32, (n, w // 32), dtype=np.uint64).astype(np.uint32)
  v = [lambda: rng.integers(0, 1 << 63, n, dtype=np.uint64) * np.uint64(2) + rng.integers(0, 2, n, dtype=np.uint64),
       lambda: rng.standard_normal(n).astype(np.float32).view(np.uint32).astype(np.uint64) if w <= 32 else rng.standard_normal(n).view(np.uint64),
       lambda: rng.choice(SPECIAL, n), lambda: np.full(n, rng.choice(SPECIAL), np.uint64)][kind]()
  return v & np.uint64((1 << w) - 1) if w < 64 else v

def _run(src:str, kw:dict):
  ns = namespace()
  exec(compile(src, "op", "exec"), ns)
  st = OpState(MEM=Mem(), **{k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in kw.items()})
  ns["op"](st)
  return st

@pytest.mark.parametrize("arch", ["rdna3", "rdna4", "cdna"])
def test_guarded_arms_change_no_result(arch, monkeypatch):
  rng, n, checked = np.random.default_rng(2), 64, 0
  for op in compiler.ops_for(arch):
    if overrides.lookup(arch, op, arch) is not None: continue
    fixed = overrides.fixed_pcode(op, arch)
    if (text := fixed[1] if fixed else compiler.pcode_table(arch).get(op)) is None: continue
    try: guarded, meta = compiler.generate(arch, op, text)
    except compiler.Unsupported: continue
    if meta["kind"] != "vector" or ".any():" not in guarded: continue
    with monkeypatch.context() as mp:
      mp.setattr(codegen, "guard_arm", lambda *a: False)
      plain, _ = compiler.generate(arch, op, text)
    checked += 1
    for trial in range(4):
      kw = dict(n=n, laneId=np.arange(n, dtype=np.uint64), WAVE32=True, WAVE64=False, MODE_IEEE=trial % 2, MODE_DENORM32=(3, 0)[trial % 2],
                MODE_DENORM16=(3, 0)[trial // 2], MODE_ROUND32=(0, 1, 2, 0)[trial], MODE_ROUND16=0, ROUND_MODE=0)
      for k in meta["reads"]:
        if k in kw or k in ("MEM",): continue
        kw[k] = rng.integers(0, 2, n, dtype=np.uint64) if k in meta["lane_masks"] else \
          _operand(rng, meta["widths"].get(k, 32), trial, n) if k in meta["widths"] else int(rng.integers(0, 4))
      a, b = _run(plain, kw), _run(guarded, kw)
      for w in meta["writes"]: assert np.array_equal(np.asarray(getattr(a, w)), np.asarray(getattr(b, w))), (op.name, trial, w)
      assert a.MEM.log == b.MEM.log, (op.name, trial)
  assert checked > 50
