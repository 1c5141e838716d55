"""Run a snippet under unmodified tinygrad in a fresh interpreter with DEV set before tinygrad is imported.

tinygrad parses DEV once, at import, so every scenario gets its own process. The snippet's stdout is returned; it reports
results as JSON on its last line.
"""
from __future__ import annotations
import importlib.util, json, os, subprocess, sys, textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ARCHS = ("gfx1100", "gfx1201", "gfx942", "gfx950")   # every emulated AMD GPU
ARCH = os.environ.get("EMU_TEST_ARCH", "gfx1100")   # the emulated GPU the integration tests run on (one of ARCHS)
# the driver interface they run through: MOCKKFD (KFD), MOCKPCI (tinygrad's AM driver) or MOCKUSB (the AM driver behind the USB bridge)
IFACE = os.environ.get("EMU_TEST_IFACE", "MOCKKFD")
# how tinygrad reports a hung or faulted GPU: the KFD interface formats the event it got; the AM driver reads the IH ring, prints the
# entry and raises "Device is in error state", which its recovery turns into "Device hang detected"
HANG_FAULT = "HW fault:" if IFACE == "MOCKKFD" else "Device hang detected"
# checks that fail on an arch because of a known emulator bug, with the bug; tests assert that exactly these fail there, so a fix shows up
KNOWN_BUGS: dict[str, dict[str, str]] = {}
SQTT_ENV = {"PROFILE": "1", "SQTT": "1", "VIZ": "0", "SQTT_BUFFER_SIZE": "1"}   # tinygrad's thread-trace profiling, 1 MB buffers
USER_LLVM_PATH = os.environ.get("LLVM_PATH")   # the user's choice, passed on to the children unchanged
# settings every child gets unless its test sets them itself, e.g. EMU_TEST_CHILD_ENV="DEBUG=2 PROFILE=1" (.ci/run runs the suite so:
# timestamps on every queue, tinygrad's debug output and its profiler on every interface)
CHILD_ENV = dict(kv.split("=", 1) for kv in os.environ.get("EMU_TEST_CHILD_ENV", "").split())
PRELUDE = "import sys; sys.path.insert(0, %r)\nfrom mockgpu import hook; hook.install()\n" % str(ROOT)
# child code for Ctrl-C tests, before any device is used: SIGINT raises KeyboardInterrupt as at a terminal, whatever the parent's
# disposition (a test run started as a background job ignores SIGINT, and its children inherit that)
SIGINT_AS_AT_A_TERMINAL = "import signal; signal.signal(signal.SIGINT, signal.default_int_handler)\n"

def emulator_available() -> bool:
  """Whether the AMD emulator's dispatch entry point exists (kernels need it; copies do not)."""
  return importlib.util.find_spec("emu.amd.gpu") is not None

def run(code:str, dev:str=f"{IFACE}+AMD:LLVM:{ARCH}", env:dict|None=None, timeout:int=300) -> subprocess.CompletedProcess:
  """Run `code` with DEV=`dev` (default: the arch of env EMU_TEST_ARCH); returns the completed process (check=False). LLVM_PATH is
  left to the caller's environment: the mock picks a libLLVM new enough for DEV's arch (mockgpu/llvm_path.py)."""
  e = {k: v for k, v in os.environ.items() if k != "LLVM_PATH"} | ({"LLVM_PATH": USER_LLVM_PATH} if USER_LLVM_PATH else {})
  e.update({"DEV": dev, "PYTHONPATH": str(ROOT), **CHILD_ENV, **(env or {})})
  return subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(code)], capture_output=True, text=True, timeout=timeout, env=e)

def run_json(code:str, **kwargs):
  """Run `code` and parse the JSON its last stdout line prints; fails with the child's stderr when it did not succeed."""
  p = run(code, **kwargs)
  assert p.returncode == 0, f"child failed ({p.returncode}):\n{p.stderr[-4000:]}"
  return last_json(p.stdout)

def last_json(stdout:str):
  """The last line of a child's stdout that is JSON: tinygrad's own DEBUG output (and the AM driver's at exit) may follow it."""
  for line in reversed(stdout.strip().splitlines()):
    try: return json.loads(line)
    except json.JSONDecodeError: continue
  raise AssertionError(f"no JSON line in the child's output:\n{stdout[-2000:]}")

def failed_checks(out:dict, arch:str=ARCH) -> list[str]:
  """The checks of a child's {check: passed} verdict that failed and are not known bugs of `arch`, plus the known bugs that now pass."""
  return sorted(k for k, ok in out.items() if ok == (k in KNOWN_BUGS.get(arch, {})))

def llvm_missing(arch:str) -> str | None:
  """Why tinygrad cannot compile kernels for `arch` here (no libLLVM new enough on the machine), or None when it can."""
  from mockgpu.doctor import AMD_TARGETS, newest_system_llvm
  from mockgpu.llvm_path import llvm_major, tinygrad_llvm
  if USER_LLVM_PATH:   # the user's choice wins: tinygrad loads it and the mock never overrides it
    if (have:=llvm_major(USER_LLVM_PATH) or 0) >= AMD_TARGETS[arch]: return None
    return f"{arch} needs libLLVM >= {AMD_TARGETS[arch]}, but LLVM_PATH names LLVM {have or '?'} ({USER_LLVM_PATH}); unset it to let the mock choose"
  have = max((llvm_major(p) or 0 for p in (tinygrad_llvm(), newest_system_llvm()) if p), default=0)
  if have >= AMD_TARGETS[arch]: return None
  return f"{arch} needs libLLVM >= {AMD_TARGETS[arch]}, the newest here is {have or 'none'} (./bench.sh setup installs one where apt has it)"

SPIN = """define amdgpu_kernel void @spin(ptr addrspace(1) %p) {
  entry:
    br label %loop
  loop:
    %v = load volatile i32, ptr addrspace(1) %p
    %c = icmp eq i32 %v, 12345
    br i1 %c, label %exit, label %loop
  exit:
    ret void
  }"""   # a runaway kernel (LLVM IR): it spins until its buffer holds 12345, which nothing writes

def raw_kernel_script(name:str, llvm_ir:str, after:str="") -> str:
  """A child script that compiles `llvm_ir` (one kernel `name` taking one buffer) with tinygrad's own compiler, launches it on a
  16-float buffer, prints `FAULT <error>` if tinygrad raises, then runs `after`."""
  return f"""
from tinygrad import Device, Tensor
from tinygrad.device import TinyELF
dev = Device["AMD"]
prg = dev.runtime(TinyELF(dev.compiler.compile({llvm_ir!r}), {name!r}, None, ()))
buf = Tensor.zeros(16, device="AMD").contiguous().realize()
try: prg(buf.uop.buffer._buf, global_size=(1, 1, 1), local_size=(1, 1, 1), wait=True)
except RuntimeError as e: print("FAULT", e)
{after}
"""

def assert_mmu_fault_and_survival(arch:str):
  """A kernel storing 1 TiB past its buffer on GPU 0 of `arch` is tinygrad's MMU fault naming the address; GPU 1 keeps working."""
  oob = """define amdgpu_kernel void @oob(ptr addrspace(1) %p) {
      %q = getelementptr i8, ptr addrspace(1) %p, i64 1099511627776
      store i32 7, ptr addrspace(1) %q
      ret void
    }"""
  p = run(raw_kernel_script("oob", oob, after='print("AFTER", (Tensor([1.0, 2.0], device="AMD:1") * 3).tolist())'),
          dev=f"MOCKKFD:0,1+AMD:LLVM:{arch}")
  fault = [ln for ln in p.stdout.splitlines() if ln.startswith("FAULT")]
  assert fault and "MMU fault: 0x" in fault[0] and "NotPresent=1" in fault[0], p.stdout + p.stderr[-2000:]
  assert "AFTER [3.0, 6.0]" in p.stdout
  assert "GPU memory fault: write of unmapped address" in p.stderr
