"""The CU replay compiled (emu/amd/cu_replay.c): `cu_model.simulate_cu`'s rules in C, ~20-40x faster.

The library is built with the machine's C compiler (`clang`, else `cc`; tinygrad's CPU device needs clang, so a bench setup
has it) in a background thread the first time a replay asks for it, and kept next to the pcode disk cache, keyed by the source,
the compiler's version and the machine, so a later process only loads it (~30 ms, most of it asking the compiler its version).
Until it is ready, or where it cannot be built, or with EMU_NATIVE_REPLAY=0 (or EMU_NATIVE=0), `replay` answers None and callers
replay in Python: the same numbers, more time. A Ctrl-C takes effect when the CU workload being replayed is done (a C call
holds no Python frame to interrupt); at ~41 ns per replayed wave-instruction that is milliseconds for common workloads.
cu_model.py stays the model's reference (the C mirrors it rule by rule; tests/unit/amd/test_cu_native.py compares both on every
issue time of hand-made and random workloads).
"""
from __future__ import annotations
import ctypes, hashlib, os, platform, shutil, subprocess, tempfile, threading
from pathlib import Path
import numpy as np
from emu.amd.cu_model import ROW, Stream

SOURCE = Path(__file__).with_name("cu_replay.c")
FLAGS = ("-O2", "-std=c11", "-shared", "-fPIC")
PARAM_FIELDS = ("simds_per_cu", "passes", "wg_slots", "fetch", "valu_dep", "trans_dep", "vgpr_to_mem", "smem_lat", "vmem_load_lat",
                "vmem_store_lat", "store_next", "lds_lat", "barrier_release", "branch_dep", "branch_taken", "matrix_start", "matrix_queue",
                "matrix_drain", "matrix_buffer")   # cu_replay.c's Params
STREAM_FIELDS = 8   # cu_replay.c's StreamIn: index, n, table, rows, dep_off, dep_k, dep_code, n_deps
NONE = -(1 << 63)   # an issue time of an instruction consumed without issue
ERRORS, UNSUPPORTED = {-1: "out of memory", -2: "inconsistent input"}, -3   # cu_replay.c's error codes

class _Library:
  """The compiled replay: built or loaded once per process, in a background thread."""
  def __init__(self):
    self.fn, self.failure, self.thread, self.lock = None, None, None, threading.Lock()
    if hasattr(os, "register_at_fork"): os.register_at_fork(after_in_child=self._after_fork)

  def _after_fork(self):   # a build thread does not exist in the child: it starts its own when asked
    self.lock = threading.Lock()
    if self.fn is None and self.failure is None: self.thread = None

  @staticmethod
  def disabled() -> str | None:
    for var in ("EMU_NATIVE_REPLAY", "EMU_NATIVE"):
      if os.environ.get(var, "1") == "0": return f"{var}=0"
    return None

  def get(self, wait:bool=False):
    """The replay function, or None (being built: `wait` for it; or unavailable: `failure` says why)."""
    if self.disabled(): return None
    if self.fn is not None or self.failure is not None: return self.fn
    with self.lock:
      if self.thread is None:
        self.thread = threading.Thread(target=self._build, name="cu-replay-build", daemon=True)
        try: self.thread.start()
        except RuntimeError as e:   # (no new threads once the interpreter is shutting down: replay in Python)
          self.failure = f"cannot start the build: {e}"
          return None
      t = self.thread
    if wait: t.join()
    return self.fn

  def _build(self):
    try: self.fn = self._load(self._object())
    except Exception as e: self.failure = f"{type(e).__name__}: {e}"

  @staticmethod
  def _object() -> str:
    """The shared library's path: from the disk cache, else compiled into it."""
    cc = next((c for c in (os.environ.get("CC"), "clang", "cc") if c and shutil.which(c)), None)
    if cc is None: raise RuntimeError("no C compiler (clang or cc) on PATH")
    version = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=60).stdout
    source = SOURCE.read_bytes()
    key = hashlib.sha256(b"\0".join([source, version.encode(), " ".join(FLAGS).encode(), platform.machine().encode()])).hexdigest()[:24]
    from emu.pcode.cache import cache_dir
    folder = Path(cache_dir()).parent / "native_replay"
    if (path := folder / f"cu_replay-{key}.so").exists(): return str(path)
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix=".so", dir=folder)
    os.close(fd)
    try:
      done = subprocess.run([cc, *FLAGS, "-o", tmp, str(SOURCE)], capture_output=True, text=True, timeout=120)
      if done.returncode: raise RuntimeError(f"{cc} failed: {done.stderr.strip()[-500:]}")
      os.replace(tmp, path)   # (atomic: a process racing to build it finds a whole file or none)
    finally:
      if os.path.exists(tmp): os.unlink(tmp)
    return str(path)

  @staticmethod
  def _load(path:str):
    lib = ctypes.CDLL(path)
    sizes = np.zeros(3, dtype=np.int64)
    lib.layout(ctypes.c_void_p(sizes.ctypes.data))
    if sizes.tolist() != (want := [ROW.itemsize, 8 * STREAM_FIELDS, 8 * len(PARAM_FIELDS)]):
      raise RuntimeError(f"{path}: its structs are {sizes.tolist()} bytes, this module lays out {want}")
    fn = lib.cu_replay
    fn.restype = ctypes.c_int64
    fn.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, *[ctypes.c_void_p] * 8]
    return fn

LIBRARY = _Library()

def replay(streams:list[Stream], wg_of:list[int], passes:int, wg_slots:int, p, fetch:int, wait:bool=False) -> tuple | None:
  """`cu_model.simulate_cu(streams, wg_of, passes, wg_slots, p, fetch)` compiled: arrays (starts, recorded counts, where each
  wave's records begin, the issue times (NONE: consumed without issue), the DRAM flags), or None when the compiled replay is
  not available (yet: `wait` for it) or does not take these waves (over a million waves, cycles past 2**37, code spanning over
  1 GiB, a value beyond its table's fields)."""
  if not streams or (fn := LIBRARY.get(wait)) is None or any(s.table is None for s in streams) or p.simds_per_cu > 8: return None
  distinct: dict[int, int] = {}
  waves = np.array([distinct.setdefault(id(s), len(distinct)) for s in streams], dtype=np.int32)
  uniq = list({id(s): s for s in streams}.values())
  rows = np.array([(st.index.ctypes.data, len(st.index), st.table.ctypes.data, len(st.table), *(a.ctypes.data for a in st.flat_deps),
                    min(len(st.flat_deps[1]), len(st.flat_deps[2]))) for st in uniq], dtype=np.int64).reshape(len(uniq), STREAM_FIELDS)
  params = np.array([passes if f == "passes" else wg_slots if f == "wg_slots" else fetch if f == "fetch" else getattr(p, f)
                     for f in PARAM_FIELDS], dtype=np.int64)
  sizes = np.array([len(s.index) for s in streams], dtype=np.int64)
  at = np.zeros(len(streams) + 1, dtype=np.int64)
  np.cumsum(sizes, out=at[1:])
  times, dram = np.empty(int(at[-1]), dtype=np.int64), np.empty(int(at[-1]), dtype=np.uint8)   # every wave's, one after another
  counts, starts = np.zeros(len(streams), dtype=np.int64), np.zeros(len(streams), dtype=np.int64)
  wg = np.asarray(wg_of, dtype=np.int32)
  err = fn(rows.ctypes.data, len(uniq), len(streams), waves.ctypes.data, wg.ctypes.data, params.ctypes.data, at.ctypes.data,
           times.ctypes.data, dram.ctypes.data, counts.ctypes.data, starts.ctypes.data)
  if err == UNSUPPORTED: return None   # (what its fixed-size fields do not hold: the Python replay takes it)
  if err: raise RuntimeError(f"the compiled CU replay failed: {ERRORS.get(err, err)}")
  return starts, counts, at, times, dram

def simulate(*job, wait:bool=False) -> list[tuple[int, int, list, list]] | None:
  """`cu_model.simulate_cu(*job)`'s result from the compiled replay, or None as `replay` answers."""
  if (res := replay(*job, wait=wait)) is None: return None
  starts, counts, at, times, dram = res
  out = []
  for start, n, a in zip(starts.tolist(), counts.tolist(), at.tolist()):
    issued = [None if x == NONE else x for x in times[a:a + n].tolist()]
    out.append((start, issued[-1] if issued else start, issued, dram[a:a + n].astype(bool).tolist()))
  return out

def simulate_end(*job) -> int | None:
  """`cu_model.simulate_end(*job)` from the compiled replay, or None as `replay` answers."""
  if (res := replay(*job)) is None: return None
  starts, counts, at, times, _ = res
  last = times[np.maximum(at[:-1] + counts - 1, 0)]
  ends = np.where(counts > 0, last, starts)
  if (ends == NONE).any(): raise TypeError("a wave's stream ends with an instruction consumed without issue")   # (as cu_model's max does)
  return int(ends.max())
