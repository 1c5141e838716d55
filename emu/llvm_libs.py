"""The libLLVM shared libraries on this machine, found by name in the system library directories.

Distributions name them differently: Debian's libLLVM-19.so, Ubuntu's libLLVM-19.so.1, and the plain soname libLLVM.so.19.1, in
/usr/lib/<multiarch> or /usr/lib64. Everything here reads file names only (through symlinks); nothing is loaded.
"""
from __future__ import annotations
import os, re, sys, sysconfig

LIB_NAME = re.compile(r"libLLVM(-\d+\.so(\.\d+)*|\.so\.\d+(\.\d+)*)")
# the names tinygrad.runtime.autogen.llvm hands its DLL loader, in its order (tinygrad 0.14.0, Linux)
TINYGRAD_LLVM_NAMES = ["LLVM", "LLVM-21", "LLVM-20", "LLVM-19", "LLVM-18", "LLVM-17", "LLVM-16", "LLVM-15", "LLVM-14"]

def multiarch() -> str:
  """The Debian/Ubuntu multiarch tuple of this Python (x86_64-linux-gnu, aarch64-linux-gnu, ...)."""
  return sysconfig.get_config_var("MULTIARCH") or "x86_64-linux-gnu"

def lib_dirs() -> list[str]:
  """The system library directories that exist here."""
  return [d for d in ("/usr/lib", "/usr/lib64", "/usr/local/lib", f"/usr/lib/{multiarch()}") if os.path.isdir(d)]

def llvm_major(path:str) -> int | None:
  """The LLVM major version a libLLVM file name carries (libLLVM-22.so, libLLVM-20.so.1, libLLVM.so.19.1, through symlinks), None if none."""
  m = re.match(r"libLLVM(?:-(\d+)\.so|\.so\.(\d+))", os.path.basename(os.path.realpath(path)))
  return int(m.group(1) or m.group(2)) if m else None

def system_llvms() -> dict[int, str]:
  """Major version -> path of an installed libLLVM, preferring the libLLVM-N.so names (what LLVM_PATH usually names)."""
  found = sorted((llvm_major(os.path.join(d, n)) or 0, n.startswith("libLLVM-"), os.path.join(d, n)) for d in lib_dirs()
                 for n in os.listdir(d) if LIB_NAME.fullmatch(n))
  return {major: path for major, _, path in found if major}

def system_llvm(at_least:int) -> str | None:
  """An installed libLLVM of major version `at_least` when there is one, else the newest newer one, else None."""
  libs = system_llvms()
  if at_least in libs: return libs[at_least]
  return libs[max(newer)] if (newer := [m for m in libs if m > at_least]) else None

def newest_system_llvm() -> str | None:
  """The newest installed libLLVM (what LLVM_PATH should name when an older one is picked), None if there is none."""
  libs = system_llvms()
  return libs[max(libs)] if libs else None

def tinygrad_llvm(env:dict|None=None) -> str | None:
  """The libLLVM tinygrad would load with LLVM_PATH unset: its loader's search (`c.DLL.findlib` on Linux), redone here because
  calling it would cache LLVM_PATH's current value in tinygrad's `getenv`."""
  env = os.environ if env is None else env
  dirs = [d for d in env.get("LD_LIBRARY_PATH", "").split(os.pathsep) if d] + ["/usr/lib64", "/usr/lib", "/usr/local/lib", "/usr/lib/wsl/lib/",
         "/lib", "/lib64", f"/lib/{sysconfig.get_config_var('MULTIARCH')}"]
  for name in TINYGRAD_LLVM_NAMES:
    for d in filter(os.path.isdir, dirs):
      for f in sorted(os.listdir(d)):
        if re.fullmatch(f"lib{name}\\.so\\.?[0-9]*", f) and os.path.isfile(p := os.path.join(d, f)):
          with open(p, "rb") as fh:
            if fh.read(4) == b"\x7fELF": return p
  return None

def ensure_llvm(need:int, who:str, env:dict|None=None, out=sys.stderr) -> str | None:
  """Before tinygrad loads a libLLVM: when LLVM_PATH is unset and the libLLVM tinygrad would load is older than `need`, set env's
  LLVM_PATH to the newest installed one (if that is new enough) and say so on `out` (`who` names the user); returns the path set."""
  env = os.environ if env is None else env
  if env.get("LLVM_PATH"): return None
  current = tinygrad_llvm(env)
  if current is not None and (llvm_major(current) or 0) >= need: return None
  if (newer := newest_system_llvm()) is None or (llvm_major(newer) or 0) < need: return None
  env["LLVM_PATH"] = newer
  print(f"{who} needs LLVM >= {need}, tinygrad would load {current or 'no libLLVM'}: using LLVM_PATH={newer}", file=out)
  return newer
