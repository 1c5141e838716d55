"""`python -m mockgpu doctor`: tells what this machine can run, and for anything missing, the exact fix.

Every fact is measured, not assumed: the libLLVM that tinygrad loads is found by asking tinygrad in a child process,
and each AMD target is checked by compiling a tiny kernel for it with tinygrad's own LLVM compiler (a libLLVM that
does not know a processor says so and emits generic code, which the check catches).
"""
from __future__ import annotations
import importlib.util, json, os, subprocess, sys
from emu.amd.api import ARCHS
from emu.amd.arch import SPECS
from emu.llvm_libs import llvm_major, multiarch, newest_system_llvm

# AMD targets the bench emulates, and the oldest LLVM that compiles for each (LLVM's AMDGPU processor table; emu.amd.arch)
AMD_TARGETS = {a: SPECS[a].llvm_min for a in ARCHS}
DEBIAN_LLVM_FIX = "apt-get update && apt-get install -y libllvm19 libllvm22   (libllvm22 comes from bookworm's security updates; gfx950 needs it)"

_PROBE_LLVM = r"""
import ctypes, json
from tinygrad.runtime.autogen import llvm
maj, mnr, pat = ctypes.c_uint32(), ctypes.c_uint32(), ctypes.c_uint32()
llvm.LLVMGetVersion(ctypes.byref(maj), ctypes.byref(mnr), ctypes.byref(pat))
print(json.dumps({"path": llvm.dll._name, "version": f"{maj.value}.{mnr.value}.{pat.value}"}))
"""

_PROBE_TARGET = r"""
import sys
from tinygrad.runtime.support.compiler_llvm import AMDLLVMCompiler
src = 'define amdgpu_kernel void @k(ptr addrspace(1) %p) { store i32 7, ptr addrspace(1) %p\n ret void }'
AMDLLVMCompiler(sys.argv[1]).compile(src)
"""

_PROBE_NV = r"""
import json
from tinygrad import Device
from emu.nv.boards import board
d = Device["NV"]
print(json.dumps({"arch": d.arch, "renderer": type(d.renderer).__name__, "board": board(d.arch).name}))
"""

_PROBE_PCI = r"""
import json, time
t = time.perf_counter()
from tinygrad import Device
d = Device["AMD"]
from mockgpu.pci import driver
print(json.dumps({"arch": d.arch, "board": driver.GPUS[0].pci_board.kfd.name, "boot_s": time.perf_counter() - t}))
"""

def probe_pci(arch:str, iface:str="MOCKPCI") -> dict:
  """What tinygrad's AM driver boots on DEV=`iface`+AMD::`arch` (MOCKPCI, or MOCKUSB through the mock USB bridge): {'arch',
  'board', 'boot_s'}, or {'error'}."""
  r = _child(_PROBE_PCI, env={"DEV": f"{iface}+AMD::{arch}"})
  if r.returncode != 0 or not r.stdout.strip(): return {"error": ((r.stderr or "").strip().splitlines() or ["no output"])[-1][:200]}
  return json.loads(r.stdout.strip().splitlines()[-1])

def probe_nv(dev:str="MOCK+NV") -> dict:
  """What tinygrad opens on DEV=`dev`: {'arch', 'renderer', 'board'}, or {'error'}."""
  r = _child(_PROBE_NV, env={"DEV": dev})
  if r.returncode != 0 or not r.stdout.strip(): return {"error": ((r.stderr or "").strip().splitlines() or ["no output"])[-1][:200]}
  return json.loads(r.stdout.strip().splitlines()[-1])

def _child(code:str, *args:str, env:dict|None=None) -> subprocess.CompletedProcess:
  return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120, env={**os.environ, **(env or {})})

def probe_llvm() -> dict:
  """The libLLVM tinygrad loads in this environment: {'path', 'version'}, or {'error'} when it finds none it can use."""
  r = _child(_PROBE_LLVM)
  if r.returncode != 0 or not r.stdout.strip(): return {"error": ((r.stderr or "").strip().splitlines() or ["no output"])[-1][:200]}
  return json.loads(r.stdout.strip().splitlines()[-1])

def probe_target(arch:str, llvm_path:str|None=None) -> tuple[bool, str]:
  """Whether tinygrad's LLVM compiler (with LLVM_PATH=`llvm_path` when given) really targets `arch`; (ok, reason)."""
  r = _child(_PROBE_TARGET, arch, env={"LLVM_PATH": llvm_path} if llvm_path else None)
  err = (r.stderr or "").strip()
  if "not a recognized processor" in err: return False, "this libLLVM does not know the processor"
  if r.returncode != 0: return False, (err.splitlines() or ["compile failed"])[-1][:160]
  return True, "compiles"

def _target_fix(need:int, newer:str|None) -> str:
  if newer and (llvm_major(newer) or 0) >= need: return f"export LLVM_PATH={newer}"
  pkg = "libllvm22" if need > 19 else "libllvm19"
  cmd = f"apt-get update && apt-get install -y {pkg}" + ("   (from bookworm's security updates)" if pkg == "libllvm22" else "")
  return (cmd if os.geteuid() == 0 else "ask an administrator to run: " + cmd) + (f", then export LLVM_PATH=/usr/lib/{multiarch()}/libLLVM-22.so"
                                                                                  if pkg == "libllvm22" else "")

def doctor(out=print) -> int:
  """Print the report; return 0 when everything the bench needs for every AMD target is present, 1 otherwise."""
  problems = 0
  def line(ok:bool|None, what:str, detail:str, fix:str|None=None):
    nonlocal problems
    out(f"  [{'ok' if ok else ('--' if ok is None else '!!')}] {what:<22} {detail}")
    if not ok and fix: out(f"       fix: {fix}")
    problems += ok is False

  out("tinygrad-emu doctor")
  out(f"  python {sys.version.split()[0]} at {sys.executable}")
  if (spec:=importlib.util.find_spec("tinygrad")) is None:
    line(False, "tinygrad", "not installed", "pip install -e . (pins tinygrad==0.14.0)")
    return 1
  from importlib.metadata import PackageNotFoundError, version
  try: tg_version = version("tinygrad")
  except PackageNotFoundError: tg_version = "unknown (a checkout on sys.path?)"
  tg_dir = os.path.dirname(spec.origin or "")
  line(tg_version == "0.14.0" or None, "tinygrad", f"{tg_version} at {tg_dir}",
       None if tg_version == "0.14.0" else "the bench is pinned to tinygrad 0.14.0; other versions may work but are untested")

  from mockgpu import hook
  r = _child("import test.mockgpu as m; print(m.__file__)")
  hook_ok = r.returncode == 0 and r.stdout.strip().startswith(os.path.dirname(os.path.abspath(__file__)))
  line(hook_ok, "import hook", f"active in new interpreters: test.mockgpu -> {r.stdout.strip() or r.stderr.strip().splitlines()[-1:]}",
       "pip install -e . (installs tinygrad_emu_hook.pth), or run scripts with `python -m mockgpu run SCRIPT`" if hook.enabled()
       else "unset TINYGRAD_EMU_HOOK (it is set to disable the hook)")
  line(hook.installed() or None, "", f"active in this interpreter: {hook.installed()}")

  info = probe_llvm()
  if "error" in info:
    line(False, "libLLVM", f"tinygrad cannot load a usable libLLVM ({info['error']}): AMD kernels cannot be compiled",
         DEBIAN_LLVM_FIX if os.geteuid() == 0 else "ask an administrator to run: " + DEBIAN_LLVM_FIX)
  else:
    major = int(info["version"].split(".")[0])
    newer = newest_system_llvm()
    fix = f"export LLVM_PATH={newer}" if newer and newer != info["path"] and (llvm_major(newer) or 0) > major else DEBIAN_LLVM_FIX
    line(major >= 18, "libLLVM", f"{info['version']} from {info['path']}{' (LLVM_PATH)' if os.environ.get('LLVM_PATH') else ''}",
         f"tinygrad needs LLVM >= 18: {fix}")
    for arch, need in AMD_TARGETS.items():
      ok, why = probe_target(arch) if major >= 18 else (False, "libLLVM too old")
      # with LLVM_PATH unset, the mock itself points tinygrad at a newer libLLVM for such an arch (mockgpu/llvm_path.py): check that one
      if not ok and not os.environ.get("LLVM_PATH") and newer and (llvm_major(newer) or 0) >= need and probe_target(arch, newer)[0]:
        ok, why = True, f"compiles with {newer}, which the mock selects for this arch"
      line(ok, f"  target {arch}", f"{why} (needs LLVM >= {need})", None if ok else _target_fix(need, newer))

  r = _child("from emu import native; print(native.available(), native.NATIVE.why)")
  avail, _, why = r.stdout.strip().partition(" ")
  line(True if avail == "True" else None, "native kernels",
       "the CPU's fused multiply-add, compiled through libLLVM (emu/native.py)" if avail == "True"
       else f"not used, numpy paths instead (slower, same results): {why or r.stderr.strip()[-120:]}")

  r = _child("from emu.amd import cu_native as c; f = c.LIBRARY.get(wait=True); print(f is not None, c.LIBRARY.disabled() or c.LIBRARY.failure)")
  avail, _, why = r.stdout.strip().partition(" ")
  line(True if avail == "True" else None, "compiled CU replay",
       "the timing model's replay in C, built with the system's C compiler (emu/amd/cu_native.py)" if avail == "True"
       else f"not used, the Python replay instead (slower, same cycles): {why or r.stderr.strip()[-120:]}",
       None if avail == "True" or why.startswith("EMU_") else "apt-get install -y clang   (./bench.sh setup does), or point CC at a C compiler")

  from emu.timing import accuracy
  line(None, "timing model", "emulated kernel times are a cycle model's: " + "; ".join(accuracy.band(f) for f in accuracy.RATIOS)
       + f" ({accuracy.provenance()}; docs/timing.md)")

  from mockgpu.nvrtc_path import pypi_cuda_headers, pypi_nvrtc
  nvrtc = os.environ.get("NVRTC_PATH") or pypi_nvrtc()
  if nvrtc is None:
    line(False, "NVRTC", "not found: DEV=MOCK+NV falls back to tinygrad's PTX renderer",
         "pip install nvidia-cuda-nvrtc-cu12 nvidia-cuda-runtime-cu12   (./bench.sh setup does), or export NVRTC_PATH=/path/libnvrtc.so")
  else:
    r = _child("import ctypes,sys; l=ctypes.CDLL(sys.argv[1]); a,b=ctypes.c_int(),ctypes.c_int(); l.nvrtcVersion(ctypes.byref(a),ctypes.byref(b)); "
               "print(f'{a.value}.{b.value}')", nvrtc)
    headers = os.environ.get("CUDA_PATH") or pypi_cuda_headers()
    line(r.returncode == 0, "NVRTC", f"{r.stdout.strip() or '?'} at {nvrtc}; CUDA headers: {headers or 'none'}",
         f"the library does not load: {(r.stderr.strip().splitlines() or [''])[-1][:120]}")
    if headers is None:
      line(False, "CUDA headers", "cuda_fp16.h not found: half/bfloat16 kernels fail in NVRTC", "pip install nvidia-cuda-runtime-cu12")
  nvinfo = probe_nv()
  if "error" in nvinfo: line(False, "NV device", f"DEV=MOCK+NV does not open: {nvinfo['error']}", "run ./bench.sh setup; then report the error")
  else:
    line(True, "NV device", f"DEV=MOCK+NV opens an emulated {nvinfo['board']} ({nvinfo['arch']}; other SMs: MOCK+NV:PTX:sm_86 / sm_90), "
         f"renderer {nvinfo['renderer']}")
  from mockgpu.pci.boards import BOARDS as PCI_BOARDS
  for arch in PCI_BOARDS:
    info = probe_pci(arch)
    if "error" in info:
      line(False, f"AM driver {arch}", f"DEV=MOCKPCI+AMD::{arch} does not boot: {info['error']}", "run ./bench.sh setup; then report the error")
    else: line(True, f"AM driver {arch}", f"DEV=MOCKPCI+AMD boots an emulated {info['board']} in {info['boot_s']:.1f} s")
    info = probe_pci(arch, "MOCKUSB")
    if "error" in info:
      line(False, f"AM over USB {arch}", f"DEV=MOCKUSB+AMD::{arch} does not boot: {info['error']}", "run ./bench.sh setup; then report the error")
    else: line(True, f"AM over USB {arch}", f"DEV=MOCKUSB+AMD boots the same board behind a mock ASM24xx USB bridge in {info['boot_s']:.1f} s")
  line(None, "", "the PCI mock replaces one tinygrad function, am/amdev.fetch_fw: synthetic firmware instead of linux-firmware downloads; "
       "CDNA (gfx942/gfx950) is KFD-only (MOCKKFD)")
  out("  emulated devices: see `python -m mockgpu.demo` for what runs today")
  out("doctor: all good" if problems == 0 else f"doctor: {problems} problem{'s' if problems != 1 else ''} found (fixes above)")
  return 0 if problems == 0 else 1
