"""Real kernels for the emulator: render a tinygrad program for an AMD arch (gfx1100, gfx942 ...) with tinygrad's own LLVM pipeline,
place its ELF image
like tinygrad's `AMDProgram` does, and dispatch it on numpy buffers. Used by the end-to-end tests and `python -m emu.bench`.

Needs libLLVM for the AMDGPU backend: tinygrad's own search (or env LLVM_PATH) picks it; this module never changes the environment.
"""
from __future__ import annotations
import os, struct
from dataclasses import dataclass
import numpy as np
from emu.amd.api import Dispatch, DispatchStats
from emu.llvm_libs import tinygrad_llvm
from emu.amd.gpu import AMDGPU
from emu.common.memory import MemoryMap

def llvm_available() -> bool:
  """Whether tinygrad finds a libLLVM (LLVM_PATH, or its own search), i.e. can compile for AMD here."""
  return os.path.exists(p) if (p := os.environ.get("LLVM_PATH")) else tinygrad_llvm() is not None

@dataclass
class CompiledKernel:
  """An ELF code object plus what its launch needs. order[i]: the input index bound to kernel parameter i (-1: the output)."""
  lib: bytes
  name: str
  global_size: tuple[int, int, int]
  local_size: tuple[int, int, int]
  order: list[int]

def compile_kernel(fn, *shapes, dtype:str="float32", arch:str="gfx1100") -> CompiledKernel:
  """Render the last kernel of fn(*tensors) (tensors of `shapes`) with tinygrad's AMD LLVM renderer for `arch`."""
  from tinygrad import Tensor, dtypes
  from tinygrad.uop.ops import Ops
  from tinygrad.helpers import Target, DEV
  if not DEV.device: DEV.value = "PYTHON"   # constants in the graph need a default device; nothing runs on it
  from tinygrad.renderer.llvmir import AMDLLVMRenderer
  from tinygrad.codegen import to_program
  ts = [Tensor.empty(*s, dtype=getattr(dtypes, dtype), device="PYTHON") for s in shapes]
  lin = fn(*ts).schedule_linear()
  call = [c for c in lin.src if c.op is Ops.CALL][-1]
  prg = to_program(call.src[0], AMDLLVMRenderer(Target("AMD", "LLVM", arch)))
  order = [next((i for i, t in enumerate(ts) if p in (t.uop, t.uop.base)), -1) for p in call.src[1:]]
  info = prg.arg
  return CompiledKernel(prg.to_elf().lib, info.name, tuple(int(x) for x in info.global_size),
                        tuple(int(x) for x in (info.local_size or (1, 1, 1))), order)

class Buffers:
  """Numpy arrays mapped into one MemoryMap (GPU VA == their host address); keeps them alive while mapped."""
  def __init__(self, mem:MemoryMap|None=None):
    self.mem, self.keep = mem if mem is not None else MemoryMap(), []
  def add(self, arr:np.ndarray, name:str="buf", writable:bool=True) -> int:
    """Map `arr` (made contiguous) and return its address."""
    arr = np.ascontiguousarray(arr)
    self.keep.append(arr)
    self.mem.map(arr.ctypes.data, arr.nbytes, name=name, writable=writable, backing=arr.view(np.uint8).reshape(-1))
    return arr.ctypes.data

@dataclass
class LoadedKernel:
  """A code object placed in mapped memory: entry address and the kernel descriptor's COMPUTE_PGM_RSRC values."""
  code_addr: int
  rsrc1: int
  rsrc2: int
  rsrc3: int
  wave32: bool

def _symbols(lib:bytes, sections) -> dict[str, tuple[int, int]]:
  """ELF symbol name -> (symbol type, image address) for symbols defined in a loaded section (relocatable objects: values are
  section offsets; linked ones: addresses)."""
  import ctypes
  from tinygrad.runtime.autogen import libc
  tab = next((sh for sh in sections if sh.header.sh_type == libc.SHT_SYMTAB), None)
  if tab is None: return {}
  strtab, out, relocatable = sections[tab.header.sh_link].content, {}, struct.unpack_from("<H", lib, 16)[0] == 1   # e_type ET_REL
  for sym in (libc.Elf64_Sym * (tab.header.sh_size // ctypes.sizeof(libc.Elf64_Sym))).from_buffer_copy(tab.content):
    if 0 < sym.st_shndx < len(sections) and sym.st_name:
      name = strtab[sym.st_name:strtab.index(b"\0", sym.st_name)].decode()
      out[name] = (sym.st_info & 0xf, sym.st_value + (sections[sym.st_shndx].header.sh_addr if relocatable else 0))
  return out

def load_kernel(lib:bytes, bufs:Buffers) -> LoadedKernel:
  """Place the ELF image like tinygrad's AMDProgram (relocations applied) and find the kernel descriptor and the entry point.

  With a symbol table (LLVM's code objects) the descriptor is the `<kernel>.kd` object and the entry is the descriptor's address plus
  its kernel_code_entry_byte_offset (a relocation against the kernel's function symbol). The wheel's hand-assembled code objects
  (tinygrad.renderer.amd.elf) have no symbols: one descriptor at the start of .rodata and one kernel at the start of .text. Their
  descriptor's offset is -len(.text), right only when .rodata follows .text directly, which the 64-byte .rodata alignment breaks
  for a .text of e.g. 784 bytes; so the entry there is the start of .text.
  """
  from tinygrad.runtime.support.elf import elf_loader
  image, sections, relocs = elf_loader(lib)
  for off, sym, typ, addend in relocs:
    if typ != 5: raise ValueError(f"unsupported relocation type {typ}")   # R_AMDGPU_REL64
    image[off:off+8] = struct.pack("<q", sym - off + addend)
  img = np.frombuffer(bytes(image) + b"\0" * 256, dtype=np.uint8).copy()
  base = bufs.add(img, "code", writable=False)
  addr = {sh.name: sh.header.sh_addr for sh in sections}
  kd_addr = next((a for name, (typ, a) in _symbols(lib, sections).items() if name.endswith(".kd") and typ == 1), None)   # STT_OBJECT
  kd = bytes(img[addr[".rodata"] if kd_addr is None else kd_addr:][:64])
  group = struct.unpack_from("<I", kd, 0)[0]
  entry = addr[".text"] if kd_addr is None else kd_addr + struct.unpack_from("<q", kd, 16)[0]
  rsrc3, rsrc1, rsrc2, props = struct.unpack_from("<IIIH", kd, 44)
  lds = ((group + 511) // 512) & 0x1ff
  return LoadedKernel(base + entry, rsrc1, rsrc2 | (lds << 15), rsrc3, bool(props & 0x400))

def kernel_dispatch(k:CompiledKernel, inputs:list[np.ndarray], out:np.ndarray, bufs:Buffers) -> Dispatch:
  """Load `k`, map its buffers (out is written in place) and kernel arguments; returns the Dispatch to run."""
  arrays = [out if i < 0 else inputs[i] for i in k.order]
  lk = load_kernel(k.lib, bufs)
  addrs = [bufs.add(a, f"arg{i}") for i, a in enumerate(arrays)]
  kernargs = np.frombuffer(b"".join(struct.pack("<Q", a) for a in addrs), dtype=np.uint8).copy()
  ka = bufs.add(kernargs, "kernargs", writable=False)
  return Dispatch(code_addr=lk.code_addr, grid=k.global_size, workgroup=k.local_size, user_sgprs=[ka & 0xffffffff, ka >> 32], rsrc1=lk.rsrc1,
                  rsrc2=lk.rsrc2, rsrc3=lk.rsrc3, wave32=lk.wave32, name=k.name)

def run_kernel(k:CompiledKernel, inputs:list[np.ndarray], out:np.ndarray, bufs:Buffers, timing:bool=True, arch:str="gfx1100",
               trace:bool|None=None) -> DispatchStats:
  """Dispatch a compiled kernel on numpy arrays (out is written in place) on a fresh GPU of `arch` (the arch it was compiled for);
  returns DispatchStats."""
  return AMDGPU(arch, bufs.mem, timing=timing, trace=trace).dispatch(kernel_dispatch(k, inputs, out, bufs))
