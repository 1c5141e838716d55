"""Built Steps kept on disk, so that a test suite's processes (pytest-xdist workers, the next run, the next test file) decode and
build each instruction once instead of once per process: about 0.15 ms an instruction against 25 us to load one.

An entry is one instruction's Step (its decoded Instr inside) pickled as soon as it is built, keyed by the arch and what decoding
depends on (decode.own_key: the instruction's bytes and the format-detection bits of the dwords after it). Compiled pcode ops and
ArchSpecs are never pickled: they are stored by name (semantics.token) and looked up again on load, so a loaded Step runs the
very objects a fresh build would. Each arch's file is named by a digest of everything a Step is derived from: this package's
source, the wheel's AMD tables and decoder (a tinygrad checkout included), Python's and numpy's versions. Any change to them
starts a new file, so nothing built by other code is ever used.

Each file also keeps, by (lanes, MODE, code bytes), the heat of native-region candidates (emu.amd.regions: how many instructions
earlier processes ran in one; concurrent writers' heat adds up; by ("native", lanes, MODE, code bytes), the wave-instructions a
region's QUICK code ran, towards compiling it FULL) and what those that were compiled became (the prefix that lowered,
the MODE it needs, the native object's key and the CPU it was compiled for, its instructions' sizes, the 16 code bytes after
the candidate run: `compiled_at` finds it by those bytes, so a later process knows it from the code alone; and the object's
position-independent image where it has one, up to IMAGE_BUDGET bytes in all, so a later process places the code without reading
a file per region: on the engine worker each file read waits for the GIL on its way back). Code a test suite
runs again and again in short bursts becomes native over several processes, as a long kernel does within one, and once compiled
it is native from its first run in every later process, its steps not even loaded (emu.amd.steps.Program.region: loading its
object costs ~0.1 ms; loading its steps would cost ~30-90 us each, lowering it again ~0.07 ms per instruction).

Location: $EMU_STEP_CACHE, default ~/.cache/tinygrad-emu/steps/; EMU_STEP_CACHE=0 turns it off. New entries and heat are merged
into the file under an flock (concurrent writers lose nothing) and written atomically (os.replace): after a dispatch when a process
has made FLUSH_AT new entries or the last write is FLUSH_S old, and at exit. A file past MAX_ENTRIES keeps only the entries of the
process that writes it; the folder keeps the KEEP_FILES most recently written files of each arch. An unreadable file or entry is a
miss (built again), never an error."""
from __future__ import annotations
import atexit, fcntl, functools, hashlib, io, os, pickle, sys, tempfile, threading, time
from pathlib import Path
import numpy as np
from emu.amd import semantics
from emu.amd.arch import ArchSpec, get_spec
from emu.amd.decode import own_key
from emu.amd.step import Step
from emu.common.hostparts import charged
from emu.pcode.abi import CompiledOp

MAX_ENTRIES = 100_000   # ~70 MB of entries at ~700 bytes each
KEEP_FILES = 8          # files per arch (one per version of the source) kept in the folder: the most recently written
FLUSH_AT = 4096         # new entries that make a process write after its dispatch
MAX_WINDOWS = 1 << 20   # code windows a process remembers the Step of (each ~200 bytes with its key)
FLUSH_S = 30.0          # otherwise at most this often (after a dispatch), and at exit: a write reads and rewrites the whole file
IMAGE_BUDGET = 16 << 20  # bytes of compiled regions' code images a file keeps (~13 KB each: about 1,200 regions)

def cache_dir() -> str | None:
  """Where the files live, None when EMU_STEP_CACHE=0."""
  if (d := os.environ.get("EMU_STEP_CACHE")) == "0": return None
  if d: return d
  from emu.pcode.cache import cache_dir as pcode_dir
  return os.path.join(os.path.dirname(pcode_dir()), "steps")

def _hash_files(h, root:Path, pattern:str) -> None:
  for f in sorted(root.glob(pattern)):
    h.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes())

@functools.cache
def source_digest(family:str) -> str:
  """A digest of what a Step of `family` is derived from (module docstring); read once per process (~5 ms)."""
  import tinygrad
  tg = Path(tinygrad.__file__).parent
  h = hashlib.sha256(f"{sys.version_info[:2]}\0{np.__version__}\0{family}\0".encode())
  _hash_files(h, Path(__file__).parents[1], "**/*.py")   # the emu package
  for pattern in ("renderer/amd/*.py", "runtime/autogen/amd/*.py", f"runtime/autogen/amd/{family}/*.py"): _hash_files(h, tg, pattern)
  return h.hexdigest()[:24]

def _reduce_op(op:CompiledOp):
  if (tok := semantics.token(op)) is None: raise pickle.PicklingError(f"{op.name}: not a memoised op")
  return semantics.from_token, (tok,)

# ops and specs by name: a dispatch table is consulted by type inside the pickler, where a reducer_override would be called for every
# object that is not an int, string or container (a third of the cost of pickling a Step). Neither class has subclasses.
_BY_NAME = {CompiledOp: _reduce_op, ArchSpec: lambda spec: (get_spec, (spec.name,))}

def dumps(step:Step) -> bytes:
  """The step pickled with its ops and spec by name; raises pickle.PicklingError for a step holding an op it cannot name."""
  buf = io.BytesIO()
  p = pickle.Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL)
  p.dispatch_table = _BY_NAME
  p.dump(step)
  return buf.getvalue()

def loads(data:bytes) -> Step:
  return pickle.loads(data)

def _trim_images(compiled:dict[tuple, tuple], mine:dict[tuple, tuple]):
  """Keep the code images the compiled-region records carry within IMAGE_BUDGET bytes (every process reads the whole file): the
  records this process wrote keep theirs first, the others lose theirs (their regions then load the image from its own file)."""
  sizes = {k: len(r[8]) for k, r in compiled.items() if len(r) > 8 and r[8] is not None}
  total = sum(sizes.values())
  for k in sorted(sizes, key=lambda k: k in mine):   # (others first)
    if total <= IMAGE_BUDGET: return
    compiled[k], total = compiled[k][:8], total - sizes[k]

class _ArchFile:
  """One arch's entries: those read from its file (pickled), those this process made and has not written yet, and the index
  first dword -> instruction sizes that a lookup tries; the regions' heat (`heat`: instructions earlier processes ran in a
  native-region candidate, by region key) with what this process added (`warmed`); and what a compiled region became
  (`compiled`: region key -> the record emu.amd.regions restores it from without lowering it again)."""
  def __init__(self, spec:ArchSpec, path:str|None):
    self.spec, self.path = spec, path
    self.stored: dict[tuple, bytes] = {}
    self.pending: dict[tuple, bytes] = {}
    self.used: set[tuple] = set()
    self.sizes: dict[bytes, tuple[int, ...]] = {}
    self.heat: dict[tuple, int] = {}
    self.warmed: dict[tuple, int] = {}
    self.compiled: dict[tuple, tuple] = {}
    self.new_compiled: dict[tuple, tuple] = {}
    # (lanes, MODE, first 16 bytes of its code and tail) -> length of code and tail -> those bytes -> compiled region key: one
    # lookup per length, however many regions share a head (every tinygrad kernel starts with the same prologue)
    self.heads: dict[tuple, dict[int, dict[bytes, tuple]]] = {}
    if path is not None:
      steps, self.heat, self.compiled = self._read()
      for key, data in steps.items(): self._add(self.stored, key, data)
    self._index(self.compiled)

  def _read(self) -> tuple[dict[tuple, bytes], dict[tuple, int], dict[tuple, tuple]]:
    try:
      with open(self.path, "rb") as f: parts = pickle.load(f)
      if isinstance(parts, tuple) and len(parts) == 3 and all(isinstance(p, dict) for p in parts): return parts
    except Exception: pass   # absent, torn by a crash or from an incompatible pickle: a miss, built again
    return {}, {}, {}

  def _add(self, where:dict, key:tuple, data:bytes):
    where[key] = data
    if (n := len(key[1])) not in (s := self.sizes.get(first := key[1][:4], ())): self.sizes[first] = s + (n,)

  def _index(self, compiled:dict[tuple, tuple]):
    """Index the compiled regions that have a tail (record[4]: the 16 code bytes after their candidate run) by their head."""
    for key, record in compiled.items():
      if record[4] is None: continue
      code = key[2] + record[4]
      self.heads.setdefault((key[0], key[1], code[:16]), {}).setdefault(len(code), {})[code] = key

  def find(self, data:bytes) -> tuple[tuple, bytes] | None:
    for n in self.sizes.get(data[:4], ()):
      key = own_key(data, self.spec, n)
      if (hit := self.stored.get(key)) is not None or (hit := self.pending.get(key)) is not None: return key, hit
    return None

  def write(self):
    """Merge the pending entries, added heat and compiled regions into the file (under its lock) and replace it atomically."""
    if not (self.pending or self.warmed or self.new_compiled) or self.path is None: return
    os.makedirs(os.path.dirname(self.path), exist_ok=True)
    with open(self.path + ".lock", "w") as lock:
      fcntl.flock(lock, fcntl.LOCK_EX)
      steps, heat, compiled = self._read()
      steps.update(self.pending)
      compiled.update(self.new_compiled)
      for key, n in self.warmed.items(): heat[key] = heat.get(key, 0) + n
      if len(steps) > MAX_ENTRIES: steps = {k: v for k, v in steps.items() if k in self.pending or k in self.used}
      if len(heat) > MAX_ENTRIES: heat = {k: v for k, v in heat.items() if k in self.warmed}
      if len(compiled) > MAX_ENTRIES: compiled = dict(self.new_compiled)
      _trim_images(compiled, self.new_compiled)
      fd, tmp = tempfile.mkstemp(dir=os.path.dirname(self.path), suffix=".tmp")
      try:
        with os.fdopen(fd, "wb") as f: pickle.dump((steps, heat, compiled), f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, self.path)
      except BaseException:
        os.unlink(tmp)
        raise
    self.stored.update(self.pending)
    self.pending.clear()
    self.warmed.clear()
    self.new_compiled.clear()
    self.heat, self.compiled, self.heads = heat, compiled, {}
    self._index(compiled)
    self._prune()

  def _prune(self):
    """Remove this arch's files of other source versions beyond the KEEP_FILES most recently written."""
    folder, mine = Path(self.path).parent, Path(self.path).name
    files = sorted(folder.glob(f"{self.spec.name}-*.pkl"), key=lambda f: f.stat().st_mtime, reverse=True)
    for f in [f for f in files if f.name != mine][KEEP_FILES - 1:]:
      for gone in (f, f.with_name(f.name + ".lock")): gone.unlink(missing_ok=True)

class StepCache:
  """The process's view of the files: `load` a Step for the code at the start of 16 bytes, `keep` one just built."""
  def __init__(self):
    self.files: dict[str, _ArchFile] = {}
    self.live: dict[tuple, Step] = {}   # entries loaded (or kept) in this process, by key
    self.windows: dict[tuple[str, bytes], Step] = {}   # the same by (arch, 16-byte code window): no key to compute on a repeat
    self.new, self.last_write, self.lock = 0, time.monotonic(), threading.Lock()

  def _file(self, spec:ArchSpec) -> _ArchFile:
    if (f := self.files.get(spec.name)) is None:
      d = cache_dir()
      f = self.files[spec.name] = _ArchFile(spec, None if d is None else os.path.join(d, f"{spec.name}-{source_digest(spec.family)}.pkl"))
    return f

  def load(self, data:bytes, spec:ArchSpec) -> Step | None:
    """The Step of the instruction at the start of `data` (16 bytes of code) if a file or this process has it, else None."""
    if len(data) != 16: return None   # fewer only at the end of a mapping: rare, and keyed otherwise by decode
    if (step := self.windows.get((spec.name, data))) is not None: return step
    with self.lock:
      if (hit := self._file(spec).find(data)) is None: return None
      key, pickled = hit
      if (step := self.live.get(key)) is None:
        try:
          with charged("step cache"): step = self.live[key] = loads(pickled)
        except Exception: return None   # an entry this code cannot read (it names an op that no longer exists ...): built again
      self.files[spec.name].used.add(key)
      self._window(spec, data, step)
      return step

  def _window(self, spec:ArchSpec, data:bytes, step:Step):
    if len(self.windows) < MAX_WINDOWS: self.windows[(spec.name, data)] = step

  def keep(self, data:bytes, spec:ArchSpec, step:Step):
    """Remember a Step just built from the code at the start of `data`; written to the file later (module docstring)."""
    if len(data) != 16: return
    with self.lock:
      f = self._file(spec)
      if f.path is None: return
      try: pickled = dumps(step)
      except (pickle.PicklingError, TypeError, AttributeError): return   # a step holding something that cannot be named: not kept
      key = own_key(data, spec, step.size)
      f._add(f.pending, key, pickled)
      self.live[key] = step
      self._window(spec, data, step)
      self.new += 1

  def heat(self, spec:ArchSpec, key:tuple) -> int:
    """A region candidate's heat (instructions it ran in earlier processes and in this one)."""
    with self.lock:
      f = self._file(spec)
      return f.heat.get(key, 0) + f.warmed.get(key, 0)

  def warm(self, spec:ArchSpec, key:tuple, n:int):
    """Add `n` instructions to a region candidate's heat (written for later processes with the steps)."""
    with self.lock:
      if (f := self._file(spec)).path is not None: f.warmed[key] = f.warmed.get(key, 0) + n

  def compiled_region(self, spec:ArchSpec, key:tuple) -> tuple | None:
    """What an earlier process (or this one) compiled the region candidate `key` into (keep_compiled), None if none did."""
    with self.lock:
      f = self._file(spec)
      return f.new_compiled.get(key) or f.compiled.get(key)

  def keep_compiled(self, spec:ArchSpec, key:tuple, record:tuple):
    """Remember what region candidate `key` was compiled into (written for later processes with the steps); record[4] is the tail
    (the 16 code bytes after the candidate, None when unknown) that `compiled_at` finds it by."""
    with self.lock:
      if (f := self._file(spec)).path is not None:
        f.new_compiled[key] = record
        f._index({key: record})

  def compiled_at(self, spec:ArchSpec, lanes:int, mode:int, code:bytes|memoryview) -> tuple[tuple, tuple] | None:
    """The compiled region candidate (key, record) for waves of `lanes` in MODE `mode` whose code and tail are the bytes `code`
    starts with (the code from a PC to the end of its mapping), None when there is none. At most one can match: where a
    candidate run ends follows from its bytes and the tail after them."""
    with self.lock:
      f = self._file(spec)
      for n, keys in f.heads.get((lanes, mode, bytes(code[:16])), {}).items():
        if n <= len(code) and (key := keys.get(bytes(code[:n]))) is not None:
          if (record := f.new_compiled.get(key) or f.compiled.get(key)) is not None: return key, record
      return None

  def dispatch_done(self):
    """After a dispatch: write when FLUSH_AT entries are new, or anything is (entries, heat, compiled regions) and the last write
    is FLUSH_S old."""
    news = self.new or any(f.warmed or f.new_compiled for f in self.files.values())
    if self.new >= FLUSH_AT or news and time.monotonic() - self.last_write >= FLUSH_S: self.write()

  def write(self):
    """Write every arch's new entries now (failures to write are ignored: the cache is an optimisation)."""
    with self.lock:
      for f in self.files.values():
        try: f.write()
        except OSError: pass
      self.new, self.last_write = 0, time.monotonic()

  def forget(self):
    """Drop what this process holds (files untouched): the next lookup reads them again."""
    with self.lock: self.files.clear(); self.live.clear(); self.windows.clear(); self.new = 0

STEP_CACHE = StepCache()
atexit.register(STEP_CACHE.write)
# a child forked while another thread held the lock would wait on it forever; what the parent had not written is its to write
os.register_at_fork(after_in_child=lambda: (setattr(STEP_CACHE, "lock", threading.Lock()), STEP_CACHE.forget()))
