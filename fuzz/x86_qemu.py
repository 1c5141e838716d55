"""Run flat x86-64 machine code (a System V function) under QEMU user mode: AVX/AVX2/F16C with real VEX semantics.

QEMU >= 7.2's TCG implements the VEX-encoded instructions that tinygrad's x86 renderer emits (unicorn 2.1.x, built on QEMU 5,
does not: see fuzz.x86_unicorn.vex_faithful). A small freestanding harness (fuzz/x86_harness.c, no libc) is compiled with
clang on first use into ~/.cache/tinygrad-emu/x86-harness/ (named by the source hash) and runs as one long-lived
`qemu-x86_64 -cpu max` process that takes requests on stdin: the generated code never runs on the host CPU.

`call(code, args, buffers)` has fuzz.x86_unicorn.call's contract (same layout, argument marshalling and callee-saved
register check). A fault (SIGSEGV, SIGILL, SIGFPE, SIGBUS, SIGTRAP) or a call that has not returned after `timeout`
seconds raises `Fault`; the harness process is then restarted by the next call.
"""
from __future__ import annotations
import functools, hashlib, os, pathlib, select, shutil, signal, struct, subprocess, tempfile, time
from fuzz.x86_unicorn import Fault, layout, arg_words, check_abi, where, vaddss_probe

QEMU, CLANG = "qemu-x86_64", "clang"
SOURCE = pathlib.Path(__file__).with_name("x86_harness.c")
CACHE = pathlib.Path.home() / ".cache" / "tinygrad-emu" / "x86-harness"
CFLAGS = ("-O2", "-nostdlib", "-static", "-ffreestanding", "-fno-stack-protector", "-fno-pic", "-fno-builtin", "-Wall", "-Werror")
MAGIC, CODE, SEND = 0x3638784d4755454d, 1, 2  # hello magic ("MEUGMx86"), region flags; see fuzz/x86_harness.c

@functools.cache
def harness_binary() -> pathlib.Path:
  """The compiled harness, built on first use (RuntimeError naming the compiler error when clang fails)."""
  src = SOURCE.read_bytes()
  out = CACHE / f"x86_harness-{hashlib.sha256(src + ' '.join(CFLAGS).encode()).hexdigest()[:16]}"
  if not out.exists():
    if (cc:=shutil.which(CLANG)) is None: raise RuntimeError(f"{CLANG} not found: it builds {SOURCE.name}")
    CACHE.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=CACHE, prefix=out.name + ".")  # build aside, then rename: concurrent first uses are safe
    os.close(fd)
    try:
      r = subprocess.run([cc, *CFLAGS, "-o", tmp, str(SOURCE)], capture_output=True, text=True)
      if r.returncode: raise RuntimeError(f"building {SOURCE.name} failed: {r.stderr.strip()[-2000:]}")
      os.replace(tmp, out)
    finally:
      if os.path.exists(tmp): os.unlink(tmp)
  return out

@functools.cache
def unavailable() -> str|None:
  """Why this host cannot use the qemu executor (qemu-x86_64 or clang missing, harness does not build), or None."""
  if shutil.which(QEMU) is None: return f"{QEMU} not found (Debian/Ubuntu: apt-get install qemu-user)"
  try: harness_binary()
  except RuntimeError as e: return str(e)
  return None

class Harness:
  """One harness process under qemu-x86_64 (started on demand, restarted after a fault or timeout)."""
  def __init__(self, timeout:float=10.0):
    self.timeout, self.proc, self.base, self.size = timeout, None, 0, 0

  def _start(self) -> None:
    self.proc = subprocess.Popen([shutil.which(QEMU) or QEMU, "-cpu", "max", str(harness_binary())], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    magic, self.base, self.size = struct.unpack("<3Q", self._read(24, time.monotonic() + self.timeout, "starting"))
    if magic != MAGIC: raise RuntimeError(f"{QEMU} {harness_binary()}: bad hello {magic:#x}")

  def close(self) -> None:
    """Stop the harness process (the next call starts a new one)."""
    if self.proc is None: return
    if self.proc.poll() is None: self.proc.kill()
    self.proc.wait()
    for f in (self.proc.stdin, self.proc.stdout): f.close()
    self.proc = None

  def _died(self) -> str:
    rc = self.proc.wait()
    return f"harness died ({signal.Signals(-rc).name if rc < 0 else f'exit code {rc}'})"

  def _read(self, n:int, deadline:float, what:str) -> bytes:
    buf, fd = bytearray(), self.proc.stdout.fileno()
    while len(buf) < n:
      if not select.select([fd], [], [], max(0.0, deadline - time.monotonic()))[0]:
        self.close()
        raise Fault(f"did not return within {self.timeout:g} s ({what})")
      if not (chunk:=os.read(fd, n - len(buf))):
        msg = self._died()
        self.close()
        raise Fault(f"{msg} ({what})")
      buf += chunk
    return bytes(buf)

  def call(self, code:bytes, args:list[int|str], buffers:dict[str, bytes]) -> dict[str, bytes]:
    """Call `code` with `args` (ints, or names of `buffers` to pass by address); return every buffer after the call."""
    if self.proc is None: self._start()
    code_at, addrs, end = layout(self.base, code, buffers)
    if end > self.base + self.size: raise ValueError(f"code and buffers need {end - self.base:#x} bytes, the harness has {self.size:#x}")
    regions = [(code_at, code, CODE)] + [(addrs[n], d, SEND) for n, d in buffers.items()]
    words = arg_words(args, addrs)
    req = b"".join([struct.pack("<2Q", len(regions), len(words)), *(struct.pack("<3Q", a, len(d), f) + d for a, d, f in regions),
                    struct.pack(f"<{len(words)}Q", *words)])
    deadline = time.monotonic() + self.timeout
    try:
      self.proc.stdin.write(req)
      self.proc.stdin.flush()
    except BrokenPipeError:
      msg = self._died()
      self.close()
      raise Fault(msg) from None
    status = struct.unpack("<Q", self._read(8, deadline, "running"))[0]
    if status == 0:
      *saved, drift = struct.unpack("<6Qq", self._read(7 * 8, deadline, "replying"))
      out = {n: self._read(len(d), deadline, "replying") for n, d in buffers.items()}
      check_abi(saved, drift)
      return out
    a, b, c = struct.unpack("<3Q", self._read(3 * 8, deadline, "replying"))
    self.close()
    if status == 1: raise Fault(f"{signal.Signals(a).name} at address {b:#x} (rip={where(c, code_at, code)})")
    raise RuntimeError(f"harness rejected a request of {a} regions and {b} arguments")

_default: Harness|None = None

def call(code:bytes, args:list[int|str], buffers:dict[str, bytes], timeout:float=10.0) -> dict[str, bytes]:
  """Harness.call on this process's shared harness (one qemu-x86_64 process per fuzz session)."""
  global _default
  if _default is None: _default = Harness(timeout)
  _default.timeout = timeout
  return _default.call(code, args, buffers)

def vex_faithful() -> bool:
  """Does qemu here run `vaddss xmm0, xmm1, xmm2` with VEX 3-operand semantics (fuzz.x86_unicorn.vaddss_probe gives 3.5)?"""
  try: return vaddss_probe(call) == 3.5
  except Fault: return False
