"""Native loops for the numeric primitives numpy lacks, compiled at run time from LLVM IR (this file) with the libLLVM tinygrad
loads (`tinygrad.runtime.support.compiler_llvm`, tinygrad's own ELF loader): today the fused multiply-add with one rounding,
`fma(a, b, c)`, which numpy can only emulate with a dozen passes over the lanes. The instruction semantics stay in the pcode:
`emu.pcode.numerics` calls these for the arithmetic of its round-to-nearest-even fast paths and keeps its numpy paths for every
other case (rounding modes, flushing, NaN payloads), which its tests compare against these loops.

A kernel returns nonzero (its results then unused) when the calling thread's SSE control register is not IEEE's default: a
library in the process that turned on flush-to-zero or another rounding mode would otherwise change results silently. The
compiled object is kept on disk next to the pcode cache, keyed by the IR, the CPU's feature flags and tinygrad's version
(compiling costs about 0.2 s, loading a kept one about 1 ms; an object whose loaded image does not depend on its address, one
without calls into libm, also keeps that image, which a later process copies into place in ~0.1 ms instead of running the ELF
loader). x86-64 Linux only; elsewhere, without a loadable libLLVM, or with
EMU_NATIVE=0, `available()` is False and callers take their numpy paths.
"""
from __future__ import annotations
import atexit, ctypes, functools, hashlib, mmap, os, platform, queue, sys, threading, time
import numpy as np
from emu.common.hostparts import charged

MXCSR_NON_DEFAULT = 0xE040   # MXCSR flush-to-zero (bit 15), rounding control (14:13), denormals-are-zero (6)

ARENA_BYTES = 4 << 20   # executable memory mapped at a time (see _Native._place)
NAN_RESULT = 1   # a kernel's return bit: some result is NaN (the MXCSR bits it reports never include bit 0)
IMAGE_PROBE = 0x12340   # a second load address for _place's test (not a multiple of 2**32: relocations keep 32 bits)
# how a module is compiled: FULL as tinygrad compiles CPU code (-O2 passes, the default code generator); QUICK with one IR pass,
# instcombine, and LLVM's unoptimised code generator (CodeGenLevelNone): ~0.43x of FULL's time on the dtype suite's 437 region
# modules, its code ~1.3-1.75x slower (emu.bench valu, matmul). Nearly all of QUICK's time is the code generator combining the DAG
# of the wave-wide <32 x i64> values split into AVX2's 4-lane pieces; instcombine narrows most zext/op/trunc chains first and costs
# less than it saves (0.76x the time of no IR pass, the code as fast: docs/emulator.md "Native regions and chains"). Its fixpoint
# check is off: where one more iteration would still change the module it aborts the process instead of reporting it.
FULL, QUICK = "full", "quick"
QUICK_PASSES = b"function(instcombine<no-verify-fixpoint>)"
TRIPLE = b"x86_64-none-unknown-elf"   # tinygrad's CPU target triple

# the first block of kernels and native regions: %bad holds the MXCSR bits that are not IEEE's default (returned; nothing computed
# is used then)
MXCSR_ENTRY = f"""entry:
  %csr = alloca i32
  call void @llvm.x86.sse.stmxcsr(ptr %csr)
  %mx = load i32, ptr %csr
  %bad = and i32 %mx, {MXCSR_NON_DEFAULT}"""

def _fma_ir(name:str, t:str, suffix:str) -> str:
  """`i32 name(a, b, c, o, i64 n, i64 off)`: out[i] = fma(a[i], b[i], c[i]) over the numpy arrays a, b, c, o (object addresses:
  each one's data pointer is the word at byte `off` of the object, which costs nothing to pass, where numpy's `.ctypes.data` costs
  about a microsecond per array); returns the MXCSR bits that are not IEEE's default, or'ed with NAN_RESULT if a result is NaN."""
  return f"""
declare {t} @llvm.fma.{suffix}({t}, {t}, {t})
declare void @llvm.x86.sse.stmxcsr(ptr)
define i32 @{name}(ptr %ao, ptr %bo, ptr %co, ptr %oo, i64 %n, i64 %off) {{
{MXCSR_ENTRY}
  %aa = getelementptr i8, ptr %ao, i64 %off
  %ba = getelementptr i8, ptr %bo, i64 %off
  %ca = getelementptr i8, ptr %co, i64 %off
  %oa = getelementptr i8, ptr %oo, i64 %off
  %a = load ptr, ptr %aa
  %b = load ptr, ptr %ba
  %c = load ptr, ptr %ca
  %o = load ptr, ptr %oa
  %empty = icmp eq i64 %n, 0
  br i1 %empty, label %done, label %loop
loop:
  %i = phi i64 [0, %entry], [%next, %loop]
  %seen = phi i1 [false, %entry], [%seen.next, %loop]
  %pa = getelementptr inbounds {t}, ptr %a, i64 %i
  %pb = getelementptr inbounds {t}, ptr %b, i64 %i
  %pc = getelementptr inbounds {t}, ptr %c, i64 %i
  %po = getelementptr inbounds {t}, ptr %o, i64 %i
  %x = load {t}, ptr %pa
  %y = load {t}, ptr %pb
  %z = load {t}, ptr %pc
  %r = call {t} @llvm.fma.{suffix}({t} %x, {t} %y, {t} %z)
  store {t} %r, ptr %po
  %isnan = fcmp uno {t} %r, %r
  %seen.next = or i1 %seen, %isnan
  %next = add nuw i64 %i, 1
  %end = icmp eq i64 %next, %n
  br i1 %end, label %done, label %loop
done:
  %any = phi i1 [false, %entry], [%seen.next, %loop]
  %flag = zext i1 %any to i32
  %ret = or i32 %bad, %flag
  ret i32 %ret
}}
"""

def _libm_ir(name:str, index:int) -> str:
  """`i32 name_f64(x, fns, unused, o, i64 n, i64 off)`: out[i] = name(x[i]) over float64 arrays (the fma kernels' argument passing),
  `name` the C library's function, called through entry `index` of the table `fns` (LIBM, `_Native.libm_table`); returns the MXCSR
  bits that are not IEEE's default."""
  return f"""
declare void @llvm.x86.sse.stmxcsr(ptr)
define i32 @{name}_f64(ptr %xo, ptr %fns, ptr %unused, ptr %oo, i64 %n, i64 %off) {{
{MXCSR_ENTRY}
  %xa = getelementptr i8, ptr %xo, i64 %off
  %oa = getelementptr i8, ptr %oo, i64 %off
  %x = load ptr, ptr %xa
  %o = load ptr, ptr %oa
  %fnp = getelementptr inbounds ptr, ptr %fns, i64 {index}
  %fn = load ptr, ptr %fnp
  %empty = icmp eq i64 %n, 0
  br i1 %empty, label %done, label %loop
loop:
  %i = phi i64 [0, %entry], [%next, %loop]
  %px = getelementptr inbounds double, ptr %x, i64 %i
  %po = getelementptr inbounds double, ptr %o, i64 %i
  %v = load double, ptr %px
  %r = call double %fn(double %v)
  store double %r, ptr %po
  %next = add nuw i64 %i, 1
  %end = icmp eq i64 %next, %n
  br i1 %end, label %done, label %loop
done:
  ret i32 %bad
}}
"""

# the C library's functions that native regions call (emu.pcode.lanes_ir) and numerics calls through `libm`: code reaches them through
# a table of their addresses made in each process (`_Native.libm_table`), so that no object holds an address outside itself (its
# loaded image is then the same wherever it goes, and kept: see _place), nor needs libm within a 32-bit reach
LIBM = ("exp2", "log2")
KERNELS = {"fma_f32": _fma_ir("fma_f32", "float", "f32"), "fma_f64": _fma_ir("fma_f64", "double", "f64"),
           **{f"{name}_f64": _libm_ir(name, i) for i, name in enumerate(LIBM)}}
# PYFUNCTYPE: a call keeps the GIL (native code here never calls back into Python). A CFUNCTYPE call drops it and must win it
# back when the code returns; under the mock, tinygrad's host thread spins in Python on a signal while the emulator works (the
# first 200 ms of any wait), so each return waited out the host's switch interval (5 ms): a one-wave kernel's 3-region chain took
# ~5.2 ms a call instead of ~0.05-0.1 ms. Native regions and chains are declared the same way.
_SIGNATURE = ctypes.PYFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)

@functools.cache
def _cpu_flags() -> str:
  """The CPU's feature flags (/proc/cpuinfo): the compiled code uses this CPU's instructions, so the disk cache is keyed by them."""
  try:
    with open("/proc/cpuinfo") as f: return next((ln for ln in f if ln.startswith("flags")), "")
  except OSError: return ""

def _data_offset() -> int | None:
  """The byte offset of the data pointer in a numpy array object (CPython's id() is the object's address): the one offset where
  every probe array, of several sizes and dtypes, holds its own data address; None if there is none (then no kernels load)."""
  probes = [np.empty(n, dt) for n, dt in ((1, np.float32), (7, np.float64), (4096, np.uint8))]
  for off in range(8, 64, 8):
    if all(ctypes.c_void_p.from_address(id(p) + off).value == p.ctypes.data for p in probes): return off
  return None

class _Native:
  """The loaded kernels (compiled or read from disk on first use; None when this machine cannot have them)."""
  def __init__(self):
    self._lock, self._fns, self._mems, self.why = threading.RLock(), None, [], ""
    self.failure = ""   # the last compile or load that gave no function, and why
    self._compiling = threading.Lock()   # held only around LLVM: a background compile must not stall the emulation's own calls
    self._compilers: dict[str, object] = {}   # by tier (FULL, QUICK), made on first use
    self._libm, self._used, self._jobs, self._worker, self._queued = None, 0, None, None, 0
    self.submitted = 0   # background compiles ever queued (a benchmark's warm-up is over once a run queues none)
    self._libm_table = None
    self.generation = 0   # +1 in each forked child: work queued before the fork (function_later) is lost there
    if self._allowed() is None: self._arena()   # mapped now, at import, not later over a hole the program may have just unmapped
    self.data_offset = 0   # where a numpy array object holds its data pointer (found when the kernels load)

  def fns(self) -> dict | None:
    if self._fns is None:
      with self._lock:
        if self._fns is None: self._fns = self._load()
    return self._fns or None

  @staticmethod
  def _allowed() -> str | None:
    """Why native code cannot run in this process, None when it may."""
    if os.environ.get("EMU_NATIVE", "1") == "0": return "EMU_NATIVE=0"
    if platform.machine() != "x86_64" or not sys.platform.startswith("linux"): return "x86-64 Linux only"
    return None

  def _arena(self, need:int=0):
    self._mems.append(mmap.mmap(-1, max(ARENA_BYTES, need), mmap.MAP_ANON | mmap.MAP_PRIVATE, mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC))
    self._used = 0

  def _load(self) -> dict:
    if (why := self._allowed()) is not None: self.why = why; return {}
    if (off := _data_offset()) is None: self.why = "no data pointer found in numpy's array objects"; return {}
    self.data_offset = off
    try: return {name: _SIGNATURE(self._place(self._object(ir))) for name, ir in KERNELS.items()}
    except Exception as e:   # no libLLVM, no executable mappings, an LLVM that rejects the IR: the numpy paths run
      self.why = f"{type(e).__name__}: {e}"
      return {}

  def function(self, ir:str, signature, tier:str=FULL):
    """The first function of module `ir` (its code is entered at the start; later functions may only be its helpers) as a ctypes
    function of `signature`, compiled as `tier` (FULL, QUICK): from the disk cache, else compiled (`function_by_key` only looks in
    the disk cache); None when the kernels are unavailable here or LLVM fails on it (`failure` then says how)."""
    if self.fns() is None: return None
    key = self.key(ir, tier)
    try: return signature(self._place(self._object(ir, tier, key), key))   # (its image kept: _place)
    except Exception as e:
      self.failure = f"{type(e).__name__}: {e}"
      return None

  def function_later(self, ir:str, signature, done, tier:str=FULL):
    """Compile `ir` as `tier` on the background compile thread (one per process, started on first use; LLVM runs without the GIL,
    so the emulation goes on meanwhile) and call `done(function or None)` there when it is ready."""
    with self._lock:
      if self._jobs is None:
        self._jobs = queue.SimpleQueue()
        self._worker = threading.Thread(target=self._compile_jobs, args=(self._jobs,), name="emu-native-compile", daemon=True)
        self._worker.start()
      self._queued += 1
      self.submitted += 1
      self._jobs.put((ir, signature, done, tier))

  def function_soon(self, ir:str, signature, done, tier:str=FULL, background:bool=True, key:str|None=None):
    """`done(function or None)` for module `ir` compiled as `tier`: at once when the disk cache holds its object (`key`: its name,
    `key(ir, tier)` when not given), else compiled on the background thread (`background`) or here."""
    if (fn := self.function_by_key(key or self.key(ir, tier), signature)) is not None: done(fn)
    elif background: self.function_later(ir, signature, done, tier)
    else: done(self.function(ir, signature, tier))

  def _compile_jobs(self, jobs:queue.SimpleQueue):
    while (job := jobs.get()) is not None:
      ir, signature, done, tier = job
      try: done(self.function(ir, signature, tier))
      finally:
        with self._lock: self._queued -= 1

  def wait_idle(self, timeout:float=60.0) -> bool:
    """Wait until the background compiles queued so far are done (benchmarks time the steady state); whether they are."""
    end = time.monotonic() + timeout
    while self._queued and time.monotonic() < end: time.sleep(0.005)
    return not self._queued

  def stop(self, timeout:float=10.0):
    """Let the compile thread finish the compile it is in and stop (at exit: libLLVM's static destructors must not run under a
    compile); queued work is dropped."""
    with self._lock:
      jobs, worker, self._jobs = self._jobs, self._worker, None
    if jobs is None or worker is None: return
    while True:   # drop what is queued, then the end marker
      try: jobs.get_nowait()
      except queue.Empty: break
    jobs.put(None)
    worker.join(timeout)

  def _after_fork(self):
    """In a forked child: the parent's compile thread and its queue are not there, and a lock it held would stay held."""
    self._lock, self._compiling, self._jobs, self._worker, self._queued = threading.RLock(), threading.Lock(), None, None, 0
    self.generation += 1

  def _c_library(self) -> ctypes.CDLL:
    if self._libm is None: self._libm = ctypes.CDLL("libm.so.6")
    return self._libm

  def libm_table(self) -> int:
    """The address of this process's table of the LIBM functions' addresses (what kernels and regions call them through)."""
    if self._libm_table is None:
      with self._lock:
        if self._libm_table is None:
          lib = self._c_library()
          self._libm_table = (ctypes.c_void_p * len(LIBM))(*(ctypes.cast(getattr(lib, name), ctypes.c_void_p).value for name in LIBM))
    return ctypes.addressof(self._libm_table)

  def _place(self, obj:bytes, key:str|None=None) -> int:
    """Load an object's code into executable memory kept for the life of the process; its address. Code goes into arenas of
    ARENA_BYTES, the first mapped at import: a mapping made later could cover a range the program just unmapped, making a stale
    address that the emulated GPU must fault on readable again. With `key` (the object's disk cache name), its loaded image is
    kept on disk too when it does not depend on where it is placed, for `_place_image`."""
    from tinygrad.runtime.support.elf import jit_loader
    with self._lock:
      mem, start, addr = self._reserve(len(obj))   # the loaded image is no larger than the object
      image = jit_loader(obj, addr, link_libs=[self._c_library()])
      assert start + len(image) <= self._used, "loaded image larger than the room reserved for its object"
      mem[start:start + len(image)] = image
    # the same bytes loaded elsewhere: every relocation is relative to the image itself (no call into libm ...), so a later process
    # may copy it anywhere without the ELF loader (~0.3 ms an object)
    if key is not None and jit_loader(obj, addr + IMAGE_PROBE, link_libs=[self._c_library()]) == image: self._write(key, ".img", bytes(image))
    return addr

  def kept_image(self, key:str) -> bytes | None:
    """The position-independent image the disk cache keeps of object `key` (`_place`), None when it has none: what a caller keeps
    to place the code later without reading the disk (`function_by_key`'s `image`)."""
    return self._read(key, ".img")

  def _reserve(self, size:int) -> tuple[mmap.mmap, int, int]:
    """Room for `size` bytes of code at a 64-byte aligned start: (arena, offset in it, address)."""
    need = -(-size // 64) * 64
    if not self._mems or self._used + need > len(self._mems[-1]): self._arena(need)
    mem, start = self._mems[-1], self._used
    self._used = start + need
    return mem, start, ctypes.addressof(ctypes.c_char.from_buffer(mem)) + start

  def _place_image(self, image:bytes) -> int:
    """Copy a position-independent loaded image (`_place`) into executable memory; its address."""
    with self._lock:
      mem, start, addr = self._reserve(len(image))
      mem[start:start + len(image)] = image
      return addr

  @staticmethod
  def key(ir:str, tier:str=FULL) -> str:
    """The disk cache's name for the object of module `ir` compiled as `tier` on this CPU (its feature flags) and tinygrad version."""
    from emu.pcode.cache import tinygrad_version
    mark = "" if tier == FULL else f"\0{tier}\0{QUICK_PASSES.decode()}"   # (FULL objects keep the names they had before tiers)
    return hashlib.sha256(f"{ir}\0{_cpu_flags()}\0{tinygrad_version()}{mark}".encode()).hexdigest()[:24]

  @staticmethod
  @functools.cache
  def cpu() -> str:
    """A digest of this CPU's feature flags: an object compiled where it differs may use instructions this CPU lacks."""
    return hashlib.sha256(_cpu_flags().encode()).hexdigest()[:16]

  @staticmethod
  def _path(key:str, ext:str=".o") -> str:
    from emu.pcode.cache import cache_dir
    return os.path.join(os.path.dirname(cache_dir()), "native", f"{key}{ext}")

  def _read(self, key:str, ext:str=".o") -> bytes | None:
    try:
      with open(self._path(key, ext), "rb") as f: return f.read()
    except OSError: return None

  def _write(self, key:str, ext:str, data:bytes):
    from emu.pcode.cache import write_atomic
    write_atomic(self._path(key, ext), data)

  def function_by_key(self, key:str, signature, image:bytes|None=None):
    """The function of the object the disk cache holds under `key` (`key(ir)` of its module, on this CPU), None when it holds none
    or the kernels are unavailable here: `image` (its position-independent image, `kept_image` in an earlier process) when
    given, else the image the disk cache kept, else the object, loaded. (A file read costs the engine worker a wait for the GIL
    on its way back: ~0.4 ms each, measured on a 2-core machine while the host thread runs tinygrad.)"""
    if self.fns() is None: return None
    try:
      with charged("native load"):
        if image is not None or (image := self._read(key, ".img")) is not None: return signature(self._place_image(image))
        return None if (obj := self._read(key)) is None else signature(self._place(obj, key))
    except Exception: return None

  def _object(self, ir:str, tier:str=FULL, key:str|None=None) -> bytes:
    """Module `ir`'s object as `tier` (`key`: its disk cache name, when the caller has it): from the disk cache, else compiled."""
    if (obj := self._read(key := key or self.key(ir, tier))) is not None: return obj
    with self._compiling, charged("region compile"): obj = self._compiler(tier).compile(ir)
    self._write(key, ".o", obj)
    return obj

  def _compiler(self, tier:str):
    """tinygrad's CPU compiler for this machine, set up for `tier` (made once; under _compiling)."""
    if (c := self._compilers.get(tier)) is not None: return c
    from tinygrad.runtime.autogen import llvm
    from tinygrad.runtime.support.compiler_llvm import CPULLVMCompiler
    c = CPULLVMCompiler(["x86_64", "native"])
    # compile() verifies the module once before the passes; verifying it again after each pass (tinygrad's setting, a check of
    # LLVM itself) costs ~15-20% of compiling a region
    llvm.LLVMPassBuilderOptionsSetVerifyEach(c.pbo, False)
    if tier == QUICK:   # the same target, CPU and features, code generated without optimisation after QUICK_PASSES
      target, err = llvm.LLVMTargetRef(), ctypes.POINTER(ctypes.c_char)()
      if llvm.LLVMGetTargetFromTriple(TRIPLE, ctypes.pointer(target), ctypes.pointer(err)): raise RuntimeError("no x86-64 target in libLLVM")
      cpu, feats = ctypes.string_at(llvm.LLVMGetHostCPUName()), ctypes.string_at(llvm.LLVMGetHostCPUFeatures())
      full, c.target_machine = c.target_machine, llvm.LLVMCreateTargetMachine(target, TRIPLE, cpu, feats, llvm.LLVMCodeGenLevelNone,
                                                                               llvm.LLVMRelocPIC, llvm.LLVMCodeModelDefault)
      llvm.LLVMDisposeTargetMachine(full)
      c.passes = QUICK_PASSES
    self._compilers[tier] = c
    return c

NATIVE = _Native()
os.register_at_fork(after_in_child=NATIVE._after_fork)
atexit.register(NATIVE.stop)

def available() -> bool:
  """Whether the native kernels run here (see the module docstring; `NATIVE.why` says why not)."""
  return NATIVE.fns() is not None

def fma(a, b, c) -> tuple[np.ndarray, bool] | None:
  """(a*b+c rounded once to nearest-even, whether some result is NaN), elementwise over float32 or float64 operands (broadcast);
  None when the native kernels are unavailable or the thread's floating-point mode is not IEEE's default. NaN results carry
  whatever payload the CPU gives."""
  if (fns := NATIVE.fns()) is None: return None
  same = type(a) is type(b) is type(c) is np.ndarray and a.dtype == b.dtype == c.dtype and a.shape == b.shape == c.shape and \
    a.flags.c_contiguous and b.flags.c_contiguous and c.flags.c_contiguous   # the common case: lanes of one wave batch
  dt = a.dtype if same else np.result_type(a, b, c)
  if dt != np.float32 and dt != np.float64: return None
  if not same: a, b, c = (np.array(x, dtype=dt, order="C") for x in np.broadcast_arrays(a, b, c))   # (0-d stays 0-d)
  out = np.empty(a.shape, dt)
  r = fns["fma_f32" if dt == np.float32 else "fma_f64"](id(a), id(b), id(c), id(out), out.size, NATIVE.data_offset)
  return None if r & ~NAN_RESULT else (out, bool(r & NAN_RESULT))

def libm(name:str, x:np.ndarray) -> np.ndarray | None:
  """The C library's `name` (one of LIBM) of each value of float64 array x, as native regions' code calls it (numpy's own loop for
  it may be another library's on some CPUs: numerics calls this so that both paths compute the same function); None when the
  native kernels are unavailable or the thread's floating-point mode is not IEEE's default."""
  if (fns := NATIVE.fns()) is None or x.dtype != np.float64: return None
  c = np.ascontiguousarray(x)   # (at least one dimension: a 0-d x is given back its shape)
  out = np.empty(c.shape, np.float64)
  return None if fns[f"{name}_f64"](id(c), NATIVE.libm_table(), id(c), id(out), out.size, NATIVE.data_offset) else out.reshape(x.shape)
