"""The emulator's disk caches under a test suite's concurrency: two processes filling one cache folder at once lose nothing of
each other's work, and a writer killed in the middle of a cache write (its temp file half written, the move into place not
done) never makes a later run wrong. Every cache is exercised: the step cache (merged under a lock), the generated pcode and its
compiled records, and native region objects (EMU_REGIONS=eager compiles each region before its first run). A later process
must compute the hand-worked values, and where the surviving writer's work should be on disk it must find it there: it runs
with decoding (and, for the regions, LLVM) made to fail."""
import os, shutil, subprocess, sys
import numpy as np
import pytest
from emu.native import NATIVE

pytestmark = pytest.mark.skipif(NATIVE.fns() is None, reason="native code cannot run here (emu.native: no libLLVM or no executable memory)")

CHILD = """
import os, signal, sys, numpy as np
kill_at, writes = int(os.environ.get("KILL_AT_WRITE", "0")), [0]
real_replace = os.replace
def replace(src, dst):   # every cache write ends in os.replace(temp file, its place)
  writes[0] += 1
  if writes[0] == kill_at:   # die mid-write: the temp file half written, nothing moved into place
    with open(src, "r+b") as f: f.truncate(os.path.getsize(src) // 2)
    os.kill(os.getpid(), signal.SIGKILL)
  return real_replace(src, dst)
os.replace = replace
from emu.amd import step_build, decode
from emu.amd.runner import run_program
from emu.amd.step_cache import STEP_CACHE
from emu.native import NATIVE
from tinygrad.runtime.autogen.amd.rdna3.ins import *
attempted = []
if "found" in sys.argv[2:]:   # a process that must find every step and every region object on disk
  def fail(*a, **k):
    attempted.append(a)
    raise AssertionError("decoded or compiled although the caches hold it")
  step_build.decode = decode.decode = NATIVE._compiler = fail
lanes = np.arange(32)
if sys.argv[1] == "a":
  st = run_program([v_mov_b32_e32(v[1], 7), v_add_nc_u32_e32(v[2], v[0], v[1]), v_mul_f32_e32(v[3], 2.0, v[4]), s_add_u32(s[4], s[2], 3)],
                   vgprs={0: lanes, 4: lanes.astype(np.float32)}, sgprs={2: 5})
  got = st.vgpr[0, :, 1:4].sum(axis=0).tolist() + [int(st.sgpr[0, 4])]
else:
  st = run_program([v_subrev_nc_u32_e32(v[1], 3, v[0]), v_and_b32_e32(v[2], 12, v[0]), v_max_i32_e32(v[3], 9, v[0]), s_mul_i32(s[4], s[2], 6)],
                   vgprs={0: lanes}, sgprs={2: 7})
  got = st.vgpr[0, :, 1:4].astype(np.int64).sum(axis=0).tolist() + [int(st.sgpr[0, 4])]
STEP_CACHE.write()
NATIVE.wait_idle()
assert not attempted, "decoded or compiled although the caches hold it"   # (a failed compile only sends the region to numpy)
print(got, writes[0])
"""

# worked by hand from each program: a: v1 = 7, v2 = lane + 7, v3 = 2.0 * float(lane) as f32 bits, s4 = 5 + 3;
# b: v1 = lane - 3 (mod 2**32), v2 = lane & 12, v3 = max(lane, 9), s4 = 7 * 6
LANES = np.arange(32)
WANT = {"a": [7 * 32, int((LANES + 7).sum()), int((2.0 * LANES.astype(np.float32)).view(np.uint32).astype(np.int64).sum()), 8],
        "b": [int(((LANES - 3) % 2 ** 32).sum()), int((LANES & 12).sum()), int(np.maximum(LANES, 9).sum()), 42]}

def start(program:str, folder, *flags:str, kill_at:int=0) -> subprocess.Popen:
  env = {**os.environ, "EMU_STEP_CACHE": str(folder / "steps"), "EMU_PCODE_CACHE": str(folder / "pcode"), "EMU_REGIONS": "eager",
         "KILL_AT_WRITE": str(kill_at)}
  return subprocess.Popen([sys.executable, "-c", CHILD, program, *flags], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

def result(p:subprocess.Popen) -> tuple[int, list, int]:
  """(exit status, the values it computed, the cache writes it made); values and writes None when it printed none."""
  out, err = p.communicate(timeout=300)
  line = out.strip().splitlines()[-1] if out.strip() else ""
  if not line: return p.returncode, None, None
  values, writes = line.rsplit(" ", 1)
  return p.returncode, eval(values), int(writes)

def test_two_writers_at_once_lose_nothing(tmp_path):
  a, b = start("a", tmp_path), start("b", tmp_path)
  (ra, va, wa), (rb, vb, _) = result(a), result(b)
  assert (ra, va, rb, vb) == (0, WANT["a"], 0, WANT["b"]) and wa > 3   # steps, pcode sources and records, native objects
  for program in "ab":   # each writer's steps and region objects are on disk, the other's merge and moves notwithstanding
    assert result(start(program, tmp_path, "found"))[:2] == (0, WANT[program])
  assert result(start("a", tmp_path / "elsewhere", "found"))[0] != 0   # (the check can fail: nothing on disk there)

@pytest.mark.parametrize("where", ["first", "middle", "last"])
def test_a_writer_killed_mid_write_leaves_nothing_that_makes_a_later_run_wrong(tmp_path, where):
  shared = tmp_path / "shared"
  assert result(start("b", shared))[:2] == (0, WANT["b"])
  shutil.copytree(shared, tmp_path / "count")   # the same caches: a makes there the writes it will make in `shared`
  writes = result(start("a", tmp_path / "count"))[2]
  kill_at = {"first": 1, "middle": max(1, writes // 2), "last": writes}[where]   # (the last is its step cache merge, under the lock)
  ra, va, _ = result(start("a", shared, kill_at=kill_at))
  assert ra == -9 and va is None   # a died in its write
  assert list(shared.rglob("*.tmp"))   # (the killed write's half-written temp file is still there)
  assert result(start("b", shared, "found"))[:2] == (0, WANT["b"])   # b's work survived a's death
  assert result(start("a", shared))[:2] == (0, WANT["a"])   # and a's half-done work made nothing wrong: built again where missing
  assert result(start("a", shared, "found"))[:2] == (0, WANT["a"])   # and now kept
