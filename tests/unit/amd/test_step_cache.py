"""emu.amd.step_cache: Steps read back from disk are the Steps a fresh build makes (every attribute, the very same pcode op objects),
a later process runs from the file without decoding, and nothing a file holds can make a wrong Step: unreadable files and
entries are misses, concurrent writers merge, steps holding an op it cannot name are not kept."""
import dataclasses, enum, os, pickle, random, subprocess, sys
import numpy as np
import pytest
from emu.amd import step_build as S, decode as D, step_cache
from emu.amd.api import GPUIllegalInstruction
from emu.amd.arch import ArchSpec, get_spec
from emu.amd.kernel import llvm_available
from emu.pcode.abi import CompiledOp
from fuzz import amd_exec

@pytest.fixture
def cache_at(tmp_path, monkeypatch):
  """A step cache in an empty folder, and this process's view of it emptied before and after the test."""
  monkeypatch.setenv("EMU_STEP_CACHE", str(tmp_path))
  step_cache.STEP_CACHE.forget()
  yield tmp_path
  step_cache.STEP_CACHE.forget()

def same(a, b, path="step") -> None:
  """a and b hold equal state all the way down; compiled ops, specs, enum members and functions must be the same objects."""
  assert type(a) is type(b), f"{path}: {type(a).__name__} vs {type(b).__name__}"
  if isinstance(a, (CompiledOp, ArchSpec, enum.Enum)) or callable(a) and not hasattr(a, "__dict__"): assert a is b, path
  elif isinstance(a, np.ndarray):
    assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b), path
  elif isinstance(a, dict):
    assert a.keys() == b.keys(), path
    for k in a: same(a[k], b[k], f"{path}[{k!r}]")
  elif isinstance(a, (list, tuple)):
    assert len(a) == len(b), path
    for i, (x, y) in enumerate(zip(a, b)): same(x, y, f"{path}[{i}]")
  elif isinstance(a, (set, frozenset, int, float, str, bytes, bool, type(None))): assert a == b, path
  elif hasattr(a, "__dict__") or hasattr(type(a), "__slots__"):
    slots = [s for c in type(a).__mro__ for s in getattr(c, "__slots__", ())]
    va = {**getattr(a, "__dict__", {}), **{s: getattr(a, s) for s in slots if hasattr(a, s)}}
    vb = {**getattr(b, "__dict__", {}), **{s: getattr(b, s) for s in slots if hasattr(b, s)}}
    same(va, vb, path)
  else: assert a == b, path

def corpus(arch:str, per_class:int=12) -> list[bytes]:
  """16 bytes of code per instruction: up to `per_class` opcodes of every encoding class the exec fuzzer draws (spread over the
  class's list), each with random fields; instructions the emulator rejects are left out by the caller."""
  family, out = get_spec(arch).family, []
  for cname in amd_exec.exec_classes(family) + amd_exec.more_classes(family):
    ops = amd_exec.usable_ops(family, cname)
    for op in ops[::max(1, len(ops) // per_class)]:
      case = amd_exec.generate(family, random.Random(f"{cname}.{op.name}"), classes=[cname], ops={op.name})
      out.append((amd_exec.code(case) + bytes(16))[:16])
  return out

@pytest.mark.parametrize("arch", ["gfx1100", "gfx1201", "gfx942", "gfx950"])
def test_every_step_reads_back_as_it_was_built(arch):
  spec, checked = get_spec(arch), 0
  for data in corpus(arch):
    try: built = S.compile_step(D.decode(data, spec), spec, 0)
    except GPUIllegalInstruction: continue
    same(built, step_cache.loads(step_cache.dumps(built)))
    checked += 1
  assert checked > 150, checked

@pytest.mark.skipif(not llvm_available(), reason="needs libLLVM")
@pytest.mark.parametrize("arch", ["gfx1100", "gfx1201", "gfx942"])
def test_a_tinygrad_kernels_steps_read_back_as_built(arch):
  from tests.unit.amd.test_decode_cache import code_of
  spec, code, pc, checked = get_spec(arch), code_of(lambda a, b: ((a * b).sin() + b.exp2()).sum(0), [(64, 48), (64, 48)], arch), 0, 0
  while pc < len(code) - 16 and (instr := D.decode(code[pc:pc + 16], spec)).name != "s_code_end":
    built = S.compile_step(instr, spec, pc)
    same(built, step_cache.loads(step_cache.dumps(built)))
    pc, checked = pc + built.size, checked + 1
  assert checked > 50

def test_an_instruction_is_not_taken_for_another_with_the_same_first_bytes(cache_at):
  # gfx950's V_MFMA_SCALE_* is one 16-byte instruction whose opcode sits in its third dword; its first dword followed by zeros is a
  # 4-byte v_cndmask_b32 (test_decode_cache). With that kept in the file, the MFMA must still be decoded as itself (an instruction
  # the emulator rejects), not found as the v_cndmask that starts with the same bytes.
  from tinygrad.runtime.autogen.amd.cdna import ins
  spec = get_spec("gfx950")
  x2 = D.encode_fields(ins.VOP3PX2, {"op": ins.VOP3PX2Op.V_MFMA_SCALE_F32_16X16X128_F8F6F4.value})
  assert x2[:4] == bytes(4)
  assert S.load_step(bytes(16), spec, 0).instr.name == "v_cndmask_b32_e32"
  step_cache.STEP_CACHE.write()
  step_cache.STEP_CACHE.forget()
  assert step_cache.STEP_CACHE.load(x2, spec) is None
  with pytest.raises(GPUIllegalInstruction, match="VOP3PX2"): S.load_step(x2, spec, 0)
  assert step_cache.STEP_CACHE.load(bytes(16), spec).instr.name == "v_cndmask_b32_e32"

PROGRAM = """
import sys, numpy as np
from emu.amd import step_build, decode
from emu.amd.runner import run_program
from tinygrad.runtime.autogen.amd.rdna3.ins import *
if sys.argv[1] == "no-decode":   # a process that must find every step in the file
  def fail(*a, **k): raise AssertionError("decoded although the step cache holds the instruction")
  step_build.decode = decode.decode = fail
st = run_program([v_mov_b32_e32(v[1], 7), v_add_nc_u32_e32(v[2], v[0], v[1]), v_mul_f32_e32(v[3], 2.0, v[4]),
                  s_add_u32(s[4], s[2], 3), s_cmp_lt_u32(s[4], 10), s_cselect_b32(s[5], 11, 22)],
                 vgprs={0: np.arange(32), 4: np.arange(32, dtype=np.float32)}, sgprs={2: 5})
print(st.vgpr[0, :, 1:4].sum(axis=0).tolist(), st.sgpr[0, 4:6].tolist())
"""

def test_a_later_process_runs_from_the_file_without_decoding(tmp_path):
  run = lambda mode, cache: subprocess.run([sys.executable, "-c", PROGRAM, mode], capture_output=True, text=True, timeout=120,
                                           env={**os.environ, "EMU_STEP_CACHE": cache}, check=True).stdout
  lanes = np.arange(32)
  want = f"{[7 * 32, int((lanes + 7).sum()), int((2.0 * lanes.astype(np.float32)).view(np.uint32).sum())]} [8, 11]\n"
  assert run("decode", "0") == want    # worked by hand: v1 = 7, v2 = lane + 7, v3 = f32 bits of 2.0 * float(lane); s4 = 5 + 3 < 10
  assert run("decode", str(tmp_path)) == want
  assert list(tmp_path.glob("gfx1100-*.pkl"))
  assert run("no-decode", str(tmp_path)) == want
  with pytest.raises(subprocess.CalledProcessError): run("no-decode", "0")   # the check itself can fail

def test_an_unreadable_file_or_entry_is_a_miss(cache_at):
  spec = get_spec("gfx1100")
  data = (amd_exec.code(amd_exec.generate("rdna3", random.Random(1), classes=["VOP2"])) + bytes(16))[:16]
  built = S.load_step(data, spec, 0)
  step_cache.STEP_CACHE.write()
  path = next(cache_at.glob("gfx1100-*.pkl"))
  step_cache.STEP_CACHE.forget()
  assert step_cache.STEP_CACHE.load(data, spec) is not None
  path.write_bytes(b"torn")
  step_cache.STEP_CACHE.forget()
  assert step_cache.STEP_CACHE.load(data, spec) is None
  path.write_bytes(pickle.dumps({D.own_key(data, spec, built.size): b"not a pickle"}))
  step_cache.STEP_CACHE.forget()
  assert step_cache.STEP_CACHE.load(data, spec) is None
  same(built, S.load_step(data, spec, 0))   # built again, and kept again
  step_cache.STEP_CACHE.write()
  step_cache.STEP_CACHE.forget()
  same(built, step_cache.STEP_CACHE.load(data, spec))

def instructions(n:int) -> list[bytes]:
  rng = random.Random(7)
  return list(dict.fromkeys((amd_exec.code(amd_exec.generate("rdna3", rng, classes=["VOP2", "SOP2"])) + bytes(16))[:16] for _ in range(n)))

def test_processes_writing_at_once_merge_their_entries_heat_and_compiled_regions(cache_at):
  spec, code = get_spec("gfx1100"), instructions(6)
  first, second = step_cache.StepCache(), step_cache.StepCache()   # two processes' views of one folder
  for cache, part in ((first, code[:3]), (second, code[3:])):
    for data in part: cache.keep(data, spec, S.compile_step(D.decode(data, spec), spec, 0))
  region = (32, 0, b"".join(code))
  first.warm(spec, region, 5); second.warm(spec, region, 7); second.warm(spec, region, 1)
  other = (64,) + region[1:]
  tail = bytes(range(16))
  first.keep_compiled(spec, region, (3, None, "a" * 24, "cpu", tail, (4, 4, 4), False, "full"))
  second.keep_compiled(spec, other, (2, 0, "b" * 24, "cpu", None, (4, 4), False, "quick"))
  assert first.compiled_at(spec, 32, 0, b"".join(code) + tail) == (region, first.compiled_region(spec, region))   # found in the writer at once
  first.write(); second.write()
  third = step_cache.StepCache()
  for data in code: same(S.compile_step(D.decode(data, spec), spec, 0), third.load(data, spec))
  assert third.heat(spec, region) == 13 and third.heat(spec, other) == 0   # heat adds up, per region key
  assert third.compiled_region(spec, region)[2] == "a" * 24 and third.compiled_region(spec, other)[2] == "b" * 24
  # found by its code and tail (what follows them does not matter), per (lanes, MODE); a record without a tail cannot be found so
  assert third.compiled_at(spec, 32, 0, b"".join(code) + tail + b"more code")[0] == region
  assert third.compiled_at(spec, 32, 1, b"".join(code) + tail) is None and third.compiled_at(spec, 64, 0, b"".join(code) + tail) is None
  # the same head and length, other bytes after it; the code cut short by the end of its mapping
  assert third.compiled_at(spec, 32, 0, b"".join(code) + bytes(16)) is None and third.compiled_at(spec, 32, 0, b"".join(code)) is None

def test_a_full_file_keeps_the_writers_entries(cache_at, monkeypatch):
  spec, code = get_spec("gfx1100"), instructions(5)
  old = step_cache.StepCache()
  for data in code[:3]: old.keep(data, spec, S.compile_step(D.decode(data, spec), spec, 0))
  old.write()
  monkeypatch.setattr(step_cache, "MAX_ENTRIES", 3)
  new = step_cache.StepCache()
  assert new.load(code[0], spec) is not None   # used by this process: stays
  for data in code[3:]: new.keep(data, spec, S.compile_step(D.decode(data, spec), spec, 0))
  new.write()
  later = step_cache.StepCache()
  assert [later.load(data, spec) is not None for data in code] == [True, False, False, True, True]

def test_a_step_holding_an_op_it_cannot_name_is_not_kept(cache_at):
  spec = get_spec("gfx1100")
  data = (amd_exec.code(amd_exec.generate("rdna3", random.Random(3), classes=["VOP1"])) + bytes(16))[:16]
  step = S.compile_step(D.decode(data, spec), spec, 0)
  odd = dataclasses.replace(step.op)   # equal, but not the memoised object a later process would get by its name
  step = type(step).__new__(type(step))
  step.__dict__.update(S.compile_step(D.decode(data, spec), spec, 0).__dict__, op=odd)
  with pytest.raises(pickle.PicklingError): step_cache.dumps(step)
  step_cache.STEP_CACHE.keep(data, spec, step)
  step_cache.STEP_CACHE.write()
  step_cache.STEP_CACHE.forget()
  assert step_cache.STEP_CACHE.load(data, spec) is None

def test_the_files_digest_follows_every_source_file(tmp_path):
  def digest():
    h = step_cache.hashlib.sha256()
    step_cache._hash_files(h, tmp_path, "**/*.py")
    return h.hexdigest()
  (tmp_path / "sub").mkdir()
  (tmp_path / "sub" / "a.py").write_text("x = 1\n")
  before = digest()
  (tmp_path / "sub" / "a.py").write_text("x = 2\n")
  assert digest() != before
  (tmp_path / "sub" / "a.py").write_text("x = 1\n")
  assert digest() == before
  (tmp_path / "b.py").write_text("")
  assert digest() != before
  assert step_cache.source_digest("rdna3") != step_cache.source_digest("cdna")

def test_off_keeps_nothing(tmp_path, monkeypatch):
  monkeypatch.setenv("EMU_STEP_CACHE", "0")
  step_cache.STEP_CACHE.forget()
  spec, data = get_spec("gfx1100"), instructions(1)[0]
  S.load_step(data, spec, 0)
  assert step_cache.STEP_CACHE.load(data, spec) is None
  step_cache.STEP_CACHE.write()
  assert not list(tmp_path.iterdir())
  step_cache.STEP_CACHE.forget()

def test_the_folder_keeps_the_newest_files_of_each_arch(cache_at):
  spec, data = get_spec("gfx1100"), instructions(1)[0]
  old = [cache_at / f"gfx1100-old{i:02d}.pkl" for i in range(10)]
  for i, f in enumerate(old):
    f.write_bytes(b"")
    os.utime(f, (1000 + i, 1000 + i))
  (cache_at / "gfx1201-other.pkl").write_bytes(b"")   # another arch's file is not this arch's to remove
  S.load_step(data, spec, 0)
  step_cache.STEP_CACHE.write()
  left = sorted(f.name for f in cache_at.glob("*.pkl"))
  assert len(left) == 1 + step_cache.KEEP_FILES and "gfx1201-other.pkl" in left
  assert [f.name for f in old[-(step_cache.KEEP_FILES - 1):]] == [n for n in left if "old" in n]   # the newest of the others

def test_a_dispatch_writes_when_enough_is_new_or_the_last_write_is_old(cache_at, monkeypatch):
  spec, code = get_spec("gfx1100"), instructions(3)
  monkeypatch.setattr(step_cache, "FLUSH_AT", 2)
  monkeypatch.setattr(step_cache, "FLUSH_S", 3600.0)
  cache = step_cache.StepCache()
  cache.keep(code[0], spec, S.compile_step(D.decode(code[0], spec), spec, 0))
  cache.dispatch_done()
  assert not list(cache_at.glob("*.pkl"))   # one new entry, last write recent: nothing yet
  cache.keep(code[1], spec, S.compile_step(D.decode(code[1], spec), spec, 0))
  cache.dispatch_done()
  assert step_cache.StepCache().load(code[1], spec) is not None   # FLUSH_AT reached
  cache.keep(code[2], spec, S.compile_step(D.decode(code[2], spec), spec, 0))
  monkeypatch.setattr(step_cache, "FLUSH_S", 0.0)
  cache.dispatch_done()
  assert step_cache.StepCache().load(code[2], spec) is not None   # the last write is old enough

def test_a_window_seen_before_in_this_process_is_answered_without_a_lookup(cache_at, monkeypatch):
  spec = get_spec("gfx1100")
  data = (amd_exec.code(amd_exec.generate("rdna3", random.Random(5), classes=["VOP2"])) + bytes(16))[:16]
  built = S.load_step(data, spec, 0)
  finds, real = [], step_cache._ArchFile.find
  monkeypatch.setattr(step_cache._ArchFile, "find", lambda self, d: finds.append(d) or real(self, d))
  assert S.load_step(data, spec, 0) is built and finds == []   # kept: remembered by its window
  step_cache.STEP_CACHE.write()
  step_cache.STEP_CACHE.forget()   # a new process: looked up (once) in the file
  loaded = S.load_step(data, spec, 0)
  assert finds == [data] and S.load_step(data, spec, 0) is loaded and finds == [data]
  same(built, loaded)

def test_the_file_keeps_region_images_within_their_budget_its_own_first(cache_at, monkeypatch):
  spec, code = get_spec("gfx1100"), instructions(4)
  monkeypatch.setattr(step_cache, "IMAGE_BUDGET", 250)
  record = lambda image: (1, 0, "k" * 24, "cpu", None, (4,), False, "quick", image)
  old = step_cache.StepCache()
  for i in range(2): old.keep_compiled(spec, (32, 0, code[i]), record(bytes(100)))
  old.write()
  new = step_cache.StepCache()
  for i in (2, 3): new.keep_compiled(spec, (32, 0, code[i]), record(bytes(100)))
  new.write()   # 400 bytes of images over a 250-byte budget: the other process's lose theirs, this one's stay
  kept = step_cache.StepCache()
  images = [kept.compiled_region(spec, (32, 0, code[i]))[8:] for i in range(4)]
  assert images == [(), (), (bytes(100),), (bytes(100),)]
