"""Targets `asm.{gfx1100,gfx1201,gfx942,gfx950}`: tinygrad's AMD assembler (the instruction DSL and `renderer.amd.elf.assemble_linear`)
fed with LLVM's own code for random small tinygrad programs (fuzz.tiny_program).

Each kernel of the program is rendered by tinygrad's AMDLLVMRenderer and compiled by its LLVM compiler; LLVM's MC disassembler
prints every instruction of the kernel, fuzz.amd_asm translates the text into a DSL instruction, and the DSL's bytes must equal
LLVM's. The DSL instructions then go through `assemble_linear` (the code-object packer tinygrad's AMD renderers use for `Ops.INS`
programs) and run on the emulator (emu.amd, no driver) next to LLVM's own code object; both are compared with fuzz.reference
(numpy in the program's own dtypes).

Kinds and blame:
  asm-untranslatable     fuzz.amd_asm cannot express the line (our coverage gap), keyed by mnemonic
  asm-dsl-error          the DSL constructor rejects operands LLVM accepted (tinygrad's tables/DSL, or the translator)
  asm-encoding-mismatch  the DSL's bytes differ from LLVM's, keyed by instruction class and the fields that differ
  asm-elf-mismatch       the assembled code object computes other values than LLVM's code object, which matches the reference or
                         (when it does not) the assembled one: assemble_linear (descriptor, counts, padding) or a DSL encoding
  asm-elf-fault          the assembled code object faults or hangs where LLVM's runs clean: assemble_linear / DSL
  asm-mismatch           both code objects disagree with the reference, alike, and no known bug or CPU:LLVM explains it (fuzz.judge):
                         emulator or LLVM codegen, not the assembler
  asm-fault              both code objects fault: emulator or LLVM codegen
  llvm-elf-fault         only LLVM's code object faults: the emulator's loader or LLVM's descriptor
  llvm-elf-mismatch      only LLVM's code object gives other values (same instructions, other descriptor): emulator
  asm-compile-error      tinygrad's renderer or LLVM raised while compiling (not the assembler)
  llvm-disasm-error      LLVM's disassembler rejects bytes of LLVM's own code object
  asm-descriptor-mismatch a kernel-descriptor field of assemble_linear breaks its rule against LLVM's (KD below), keyed by field
  asm-unsupported        the schedule has something this target does not run (a non-kernel item, symbolic variables)
Instructions with a translation problem are replaced by `decode_inst` of LLVM's bytes for the run, so the run still checks the
rest. Order: runtime findings, translation findings (those in KNOWN after the others), descriptor findings. Values are compared
with tiny_program.compare's fast-math rule (LLVM's flags).
gfx950 needs LLVM >= 20 in tinygrad's process (tinygrad loads one libLLVM, libLLVM-19 by its own search): with LLVM_PATH unset and
no libLLVM loaded yet, `unavailable` sets LLVM_PATH to the newest installed one (emu.llvm_libs.ensure_llvm) and says so on stderr.
"""
from __future__ import annotations
import ctypes, functools, re, struct, sys
from dataclasses import dataclass
import numpy as np
from tinygrad import Tensor
from tinygrad.codegen import do_to_program
from tinygrad.engine.realize import get_call_arg_uops
from tinygrad.helpers import Context, Target as TGTarget
from tinygrad.renderer.amd import decode_inst
from tinygrad.renderer.amd.dsl import Inst
from tinygrad.renderer.amd.elf import assemble_linear
from tinygrad.renderer.llvmir import AMDLLVMRenderer
from tinygrad.runtime.autogen import libc
from tinygrad.runtime.support.elf import elf_loader
from tinygrad.uop.ops import Ops, UOp
from emu.amd.api import Dispatch
from emu.amd.disasm import CPU_LLVM, Disassembler, default_library
from emu.amd.gpu import AMDGPU
from emu.amd.kernel import Buffers, load_kernel
from emu.llvm_libs import ensure_llvm
from fuzz import reference, tiny_program
from fuzz.amd_asm import FAMILY, Translator, Untranslatable
from fuzz.finding import Finding
from fuzz.judge import judge, run_device
from fuzz.registry import Target, register
from fuzz.targets.x86 import minimise
from emu.amd.api import ARCHS

ABI_MASK = 0x1f << 1 | 0xf << 7  # COMPUTE_PGM_RSRC2 USER_SGPR_COUNT, ENABLE_SGPR_WORKGROUP_ID_X/Y/Z, ENABLE_SGPR_WORKGROUP_INFO
WATCHDOG = 2_000_000  # wave-instructions per dispatch: the programs are tiny, a runaway loop should fail fast

@functools.cache
def tinygrad_llvm_major() -> int:
  """Major version of the libLLVM tinygrad loaded (LLVM_PATH, else its own search)."""
  from tinygrad.runtime.autogen import llvm
  major, minor, patch = ctypes.c_uint(), ctypes.c_uint(), ctypes.c_uint()
  llvm.LLVMGetVersion(ctypes.byref(major), ctypes.byref(minor), ctypes.byref(patch))
  return major.value

def unavailable(arch:str) -> str|None:
  """Why `arch` cannot be compiled in this process (tinygrad's libLLVM too old), or None. Before tinygrad has loaded a libLLVM, an
  arch that needs a newer one than tinygrad's search finds gets LLVM_PATH set to it (said on stderr), as the mock does for DEV."""
  if (need := CPU_LLVM.get(arch)) is not None and "tinygrad.runtime.autogen.llvm" not in sys.modules: ensure_llvm(need, f"fuzz asm.{arch}")
  if (need := CPU_LLVM.get(arch)) is not None and (have := tinygrad_llvm_major()) < need:
    return f"{arch} needs libLLVM >= {need} in tinygrad (this process loaded {have}): set LLVM_PATH={default_library(need)}"
  return None

@functools.cache
def renderer(arch:str) -> AMDLLVMRenderer:
  """tinygrad's AMD LLVM renderer (with its LLVM compiler) for `arch`, built without opening a device."""
  return AMDLLVMRenderer(TGTarget("AMD", "LLVM", arch))

def listing(lib:bytes, cpu:str) -> list[tuple[int, bytes, str]]:
  """(pc, bytes, LLVM text) of every instruction of the kernel function in LLVM's code object (padding after it excluded)."""
  _, sections, _ = elf_loader(lib)
  text = next(s for s in sections if s.name == ".text")
  tab = next(s for s in sections if s.header.sh_type == libc.SHT_SYMTAB)
  syms = (libc.Elf64_Sym * (tab.header.sh_size // ctypes.sizeof(libc.Elf64_Sym))).from_buffer_copy(tab.content)
  start, end = min((s.st_value, s.st_value + s.st_size) for s in syms if s.st_info & 0xf == 2)  # STT_FUNC: the kernel
  code, dis, out, pc = bytes(text.content), Disassembler.get(cpu), [], start
  while pc < end:
    n, txt = dis.disasm(code[pc:end], pc)
    if n == 0: raise Finding("llvm-disasm-error", f"LLVM cannot disassemble its own bytes {code[pc:pc+8].hex()} at {pc:#x}", key=(cpu,))
    out.append((pc, code[pc:pc+n], txt))
    pc += n
  return out

# Encoding differences judged harmless (the DSL fills a field the hardware ignores with another value than LLVM): (kind, key[1:]).
BENIGN = {
  # CDNA SMEM: the DSL's soffset default is NULL (124) where LLVM writes 0; with soffset_en=0 the field is not read (gfx9 ISA, SMEM).
  ("asm-encoding-mismatch", ("SMEM", "soffset")): "unused field",
}
# tinygrad bugs already filed under fuzz/findings/regressions/ (kind, key[1:]): a case raises them only when it shows nothing else,
# so that one frequent bug does not hide the rest.
KNOWN = {
  ("asm-dsl-error", ("VGLOBAL", "TypeError: vaddr expects N register(s), got N")),                   # asm-rdna4-global-saddr
  ("asm-encoding-mismatch", ("GLOBAL", "saddr")),                                                     # asm-cdna-global-off
  ("asm-dsl-error", ("VOP1", "TypeError: VGPRField: s[N] (offset N) out of range (N, N)")),          # asm-cdna-readfirstlane-sdst
}

def _differing_fields(cls:type, a:bytes, b:bytes) -> tuple[str, ...]:
  ia, ib = cls.from_bytes(a), cls.from_bytes(b)
  return tuple(n for n, f in cls._fields if (ia._raw >> f.lo) & f.mask != (ib._raw >> f.lo) & f.mask)

def translate_kernel(arch:str, lst:list[tuple[int, bytes, str]]) -> tuple[list[Inst], list[Finding]]:
  """DSL instructions for a listing plus the translation findings; an instruction with a finding is replaced by the wheel's decode of
  LLVM's bytes (raises the finding at once when even that does not reproduce the bytes, since then nothing can run)."""
  tr, fam, insts, problems = Translator(arch), FAMILY[arch], [], []
  for pc, raw, text in lst:
    problem = None
    try:
      inst = tr.translate(text)
      if (got := inst.to_bytes()) != raw:
        fields = _differing_fields(type(inst), got, raw) if len(got) == len(raw) else ("size",)
        problem = Finding("asm-encoding-mismatch", f"{arch} `{text}`: LLVM {raw.hex()}, DSL {got.hex()} ({inst!r}); fields {list(fields)}",
                          key=(arch, type(inst).__name__, *fields))
    except Untranslatable as e: problem = Finding("asm-untranslatable", f"{arch} `{text}` ({raw.hex()}): {e.reason}", key=(arch, e.mnemonic))
    except (TypeError, ValueError, RuntimeError, AssertionError) as e:
      ctor = tr.lookup(text.split()[0])
      problem = Finding("asm-dsl-error", f"{arch} `{text}` ({raw.hex()}): {type(e).__name__}: {e}",  # key: class + message, numbers out
                        key=(arch, ctor.func.__name__ if ctor else text.split()[0], re.sub(r"\d+", "N", f"{type(e).__name__}: {e}")))
    if problem is not None and (problem.kind, problem.key[1:]) in BENIGN: problem, inst = None, decode_inst(raw, fam)
    if problem is not None:
      problems.append(problem)
      try: inst = decode_inst(raw, fam)
      except Exception: raise problem from None
      if inst.to_bytes() != raw: raise problem
    insts.append(inst)
  return insts, problems

def assemble(prg:UOp, insts:list[Inst], arch:str) -> bytes:
  """The code object `assemble_linear` builds from DSL instructions (prg.src[0] is the kernel's sink, scanned for PARAM/LOCAL/SPECIAL)."""
  return assemble_linear(prg, UOp(Ops.LINEAR, src=tuple(UOp(Ops.INS, arg=i) for i in insts)), arch)

@dataclass
class Kernel:
  """One scheduled kernel: its CALL, tinygrad's PROGRAM (sink, LLVM code object) and the assembled code object."""
  call: UOp
  prg: UOp
  llvm_lib: bytes
  asm_lib: bytes

# kernel-descriptor fields (AMDGPUUsage, COMPUTE_PGM_RSRC1/2 and kernel_code_properties): name -> (word, shift, width, rule).
# Rules for the assembled descriptor against LLVM's: "ge" it must give at least as much (counts, enables), "eq" the same mode.
# Not compared: the system-SGPR layout (ABI, see execute) and RSRC3 (CDNA's ACCUM_OFFSET only matters with AGPRs).
KD = {"VGPR_GRANULE": ("rsrc1", 0, 6, "ge"), "SGPR_GRANULE": ("rsrc1", 6, 4, "ge"), "FLOAT_ROUND_MODE_32": ("rsrc1", 12, 2, "eq"),
      "FLOAT_ROUND_MODE_16_64": ("rsrc1", 14, 2, "eq"), "FLOAT_DENORM_MODE_32": ("rsrc1", 16, 2, "eq"),
      "FLOAT_DENORM_MODE_16_64": ("rsrc1", 18, 2, "eq"), "DX10_CLAMP": ("rsrc1", 21, 1, "eq"), "IEEE_MODE": ("rsrc1", 23, 1, "eq"),
      "WGP_MODE": ("rsrc1", 29, 1, "eq"), "MEM_ORDERED": ("rsrc1", 30, 1, "eq"), "SCRATCH_EN": ("rsrc2", 0, 1, "ge"),
      "VGPR_WORKITEM_ID": ("rsrc2", 11, 2, "ge"), "LDS_SIZE": ("rsrc2", 15, 9, "ge"),
      "WAVE32": ("wave32", 0, 1, "eq")}

def descriptor(lib:bytes) -> dict[str, int]:
  """The kernel-descriptor fields (KD) of a code object as the emulator's loader reads them (LDS size folded into RSRC2)."""
  lk = load_kernel(lib, Buffers())
  words = {"rsrc1": lk.rsrc1, "rsrc2": lk.rsrc2, "wave32": int(lk.wave32)}
  return {name: (words[w] >> sh) & ((1 << n) - 1) for name, (w, sh, n, _) in KD.items()}

def descriptor_violations(k:Kernel, arch:str) -> dict[str, tuple[int, int]]:
  """Fields where the assembled descriptor breaks its rule against LLVM's: name -> (LLVM's value, assembled value).
  SGPR_GRANULE only counts on CDNA (RDNA allocates SGPRs itself)."""
  a, b = descriptor(k.llvm_lib), descriptor(k.asm_lib)
  out = {}
  for name, (_, _, _, rule) in KD.items():
    if name == "SGPR_GRANULE" and FAMILY[arch] != "cdna": continue
    if (rule == "ge" and b[name] < a[name]) or (rule == "eq" and b[name] != a[name]): out[name] = (a[name], b[name])
  return out

def build(case:dict, arch:str) -> tuple[list[Kernel], tuple[UOp, int], tuple, np.dtype, list[Finding]]:
  """Schedule and compile the case; translate and assemble each kernel. Returns kernels, the output (buffer UOp, byte offset: the
  result may be a view into another buffer), its shape and dtype, and the translation findings."""
  ins = [Tensor(tiny_program.input_array(i), device="PYTHON").realize() for i in case["inputs"]]
  out = tiny_program.build(case, ins)
  kernels, problems = [], []
  for call in out.schedule_linear().src:
    if call.src[0].op is not Ops.SINK: raise Finding("asm-unsupported", f"schedule item {call.src[0].op}", key=(arch, str(call.src[0].op)))
    try: prg = do_to_program(call.src[0], renderer(arch))
    except Exception as e:
      raise Finding("asm-compile-error", f"{arch}: {type(e).__name__}: {e}", key=(arch, type(e).__name__, tiny_program.error_shape(str(e)))) from None
    if prg.arg.vars: raise Finding("asm-unsupported", f"kernel vars {prg.arg.vars}", key=(arch, "vars"))
    lib = next(s.arg for s in prg.src if s.op is Ops.BINARY)
    insts, found = translate_kernel(arch, listing(lib, arch))
    problems += found
    kernels.append(Kernel(call, prg, lib, assemble(prg, insts, arch)))
  view, dt = out.uop.buffer, np.dtype(out.dtype.fmt) if out.dtype.fmt else np.dtype(out.dtype.name)
  return kernels, (out.uop.buf_uop, view.offset), out.shape, dt, problems   # a base buffer has offset 0

def execute(kernels:list[Kernel], arch:str, which:str, out:tuple[UOp, int], nbytes:int) -> bytes:
  """Run every kernel's code object (`which`: "llvm_lib" or "asm_lib") in order on a fresh emulated GPU; the output buffer's bytes.
  Each buffer is mapped with its size rounded up to 4 KiB, as tinygrad's allocators hand out pages (LLVM may read a few bytes past
  a small buffer with one wide scalar load); beyond that an access is a GPU memory fault.
  The assembled code object runs with the system-SGPR layout of LLVM's descriptor (USER_SGPR_COUNT, which workgroup ids and info
  follow it): LLVM's instructions were compiled for LLVM's ABI (e.g. 15 user SGPRs, workgroup id x always enabled) and
  assemble_linear declares tinygrad's own (2 user SGPRs, the ids its SPECIALs read); every other field is assemble_linear's."""
  bufs, arrays = Buffers(), {}
  def addr(b:UOp) -> int:
    if b not in arrays:
      n = b.buffer.nbytes
      arrays[b] = arr = np.zeros(max(4096, -(-n // 4096) * 4096), dtype=np.uint8)
      if b.buffer.is_allocated(): arr[:n] = np.frombuffer(b.buffer.as_memoryview().tobytes(), dtype=np.uint8)
      bufs.add(arr, f"buf{len(arrays)}")
    return arrays[b].ctypes.data
  gpu = AMDGPU(arch, bufs.mem, watchdog=WATCHDOG, timing=False)
  for k in kernels:
    lk, llvm_kd = load_kernel(getattr(k, which), bufs), load_kernel(k.llvm_lib, Buffers())
    rsrc2 = (lk.rsrc2 & ~ABI_MASK) | (llvm_kd.rsrc2 & ABI_MASK)
    args = get_call_arg_uops(k.call)
    kernargs = np.zeros(256, dtype=np.uint8)
    packed = b"".join(struct.pack("<Q", addr(args[i])) for i in k.prg.arg.globals)
    kernargs[:len(packed)] = np.frombuffer(packed, dtype=np.uint8)
    ka = bufs.add(kernargs, "kernargs", writable=False)
    info = k.prg.arg
    gpu.dispatch(Dispatch(code_addr=lk.code_addr, grid=tuple(int(x) for x in info.global_size),
                          workgroup=tuple(int(x) for x in (info.local_size or (1, 1, 1))), user_sgprs=[ka & 0xffffffff, ka >> 32],
                          rsrc1=lk.rsrc1, rsrc2=rsrc2, rsrc3=lk.rsrc3, wave32=lk.wave32, name=info.name))
  addr(out[0])
  return arrays[out[0]][out[1]:out[1] + nbytes].tobytes()

def _run(kernels, arch, which, out, shape, dt) -> tuple[np.ndarray|None, str|None]:
  try: data = execute(kernels, arch, which, out, int(np.prod(shape)) * dt.itemsize)
  except Exception as e: return None, f"{type(e).__name__}: {str(e)[:300]}"
  return np.frombuffer(data, dtype=dt)[:int(np.prod(shape))].reshape(shape), None

def _violations(kernels:list[Kernel], arch:str) -> tuple[tuple[str, ...], str]:
  """Descriptor fields the assembled code objects get wrong (sorted names) and a readable list of them."""
  found: dict[str, tuple[int, int]] = {}
  for k in kernels: found.update(descriptor_violations(k, arch))
  text = ", ".join(f"{n} llvm {a} asm {b}" for n, (a, b) in sorted(found.items()))
  return tuple(sorted(found)), f"; descriptor: {text or 'no rule broken'}"

def check(arch:str, case:dict) -> None:
  """Translate, assemble and run the case's kernels; raise the first Finding (runtime findings before translation findings). A
  program the LLVM renderer's flags leave undefined (tiny_program.undefined_on_llvm: a signed wrap, a non-finite quotient) is held
  to LLVM's result instead of the reference's."""
  if (why := unavailable(arch)) is not None: raise RuntimeError(why)
  with Context(DEV="PYTHON"): kernels, outbuf, shape, dt, problems = build(case, arch)
  llvm_out, llvm_err = _run(kernels, arch, "llvm_lib", outbuf, shape, dt)
  asm_out, asm_err = _run(kernels, arch, "asm_lib", outbuf, shape, dt)
  steps = f"; steps {case['steps']}"
  if asm_err and llvm_err: raise Finding("asm-fault", f"{arch}: both code objects fail: {asm_err}{steps}", key=(arch, asm_err.split(":")[0]))
  if llvm_err: raise Finding("llvm-elf-fault", f"{arch}: LLVM's code object fails, the assembled one runs: {llvm_err}{steps}",
                             key=(arch, llvm_err.split(":")[0]))
  if tiny_program.is_matmul(case): return _check_matmul(arch, case, kernels, llvm_out, asm_out, asm_err, problems, steps)
  with np.errstate(all="ignore"): ref, undef = reference.evaluate(case)
  ref = ref.astype(llvm_out.dtype) if ref.shape == llvm_out.shape else ref
  llvm_diff = tiny_program.compare(llvm_out, ref, case, fast_math=True, undefined=undef)
  if llvm_diff is not None:   # a program the renderer's flags leave undefined is not judged by the reference; the assembled
    if tiny_program.undefined_on_llvm(case, ref, reference.values): ref, llvm_diff, undef = llvm_out, None, None   # code must do what LLVM's does
  if asm_err:
    names, why = _violations(kernels, arch)
    kind = "asm-elf-fault" if llvm_diff is None else "asm-fault"
    raise Finding(kind, f"{arch}: assembled code object fails: {asm_err}{why}{steps}", key=(arch, asm_err.split(":")[0], *names))
  if (diff := tiny_program.compare(asm_out, ref, case, fast_math=True, undefined=undef)) is not None:
    # the assembled object must do what LLVM's does: held to LLVM's result when that differs from the reference too
    if llvm_diff is None or (vs_llvm := tiny_program.compare(asm_out, llvm_out, case)) is not None:
      names, why = _violations(kernels, arch)
      what = (f"the dtype reference (LLVM's code object matches): {diff[0]}" if llvm_diff is None
              else f"LLVM's code object (both differ from the dtype reference): {vs_llvm[0]}")
      raise Finding("asm-elf-mismatch", f"{arch}: assembled vs {what}{why}", key=(arch, *names))
    # both alike: the emulator, LLVM's codegen or tinygrad itself; known bugs and CPU:LLVM's opinion decide (fuzz.judge)
    judge(f"MOCKKFD+AMD:LLVM:{arch}", case, asm_out, lambda d, llvm=None: run_device(d, case, llvm), "asm")
  if llvm_diff is not None:
    raise Finding("llvm-elf-mismatch", f"{arch}: LLVM's code object vs the dtype reference (the assembled one matches): {llvm_diff[0]}"
                  f"{_violations(kernels, arch)[1]}", key=(arch, *llvm_diff[1]))
  _structural(arch, kernels, problems, steps)

def _check_matmul(arch:str, case:dict, kernels:list[Kernel], llvm_out, asm_out, asm_err, problems, steps:str) -> None:
  """A matmul program (tiny_program.matmul_case): each code object's result against numpy within the product-rounding bound
  (tiny_program.compare_matmul), the assembled one's faults and wrong values before LLVM's."""
  if asm_err:
    names, why = _violations(kernels, arch)
    raise Finding("asm-elf-fault", f"{arch}: assembled code object fails: {asm_err}{why}{steps}", key=(arch, asm_err.split(":")[0], *names))
  if (diff := tiny_program.compare_matmul(asm_out, case)) is not None:
    names, why = _violations(kernels, arch)
    raise Finding("asm-elf-mismatch", f"{arch}: assembled vs numpy: {diff[0]}{why}", key=(arch, *names, "matmul"))
  if (diff := tiny_program.compare_matmul(llvm_out, case)) is not None:
    raise Finding("llvm-elf-mismatch", f"{arch}: LLVM's code object vs numpy (the assembled one matches): {diff[0]}", key=(arch, *diff[1]))
  _structural(arch, kernels, problems, steps)

def _structural(arch:str, kernels:list[Kernel], problems:list[Finding], steps:str) -> None:
  """The findings that do not depend on the values: translation problems, then descriptor fields assemble_linear sets otherwise."""
  if problems: raise sorted(problems, key=lambda f: (f.kind, f.key[1:]) in KNOWN)[0]
  for k in kernels:
    if (bad := descriptor_violations(k, arch)):
      name, (a, b) = sorted(bad.items())[0]
      raise Finding("asm-descriptor-mismatch", f"{arch} {k.prg.arg.function_name}: assemble_linear sets {name}={b}, LLVM {a} (rule: "
                    f"{KD[name][3]}); all: {bad}{steps}", key=(arch, name))

for _arch in ARCHS:
  register(Target(f"asm.{_arch}", tiny_program.generate, lambda c, a=_arch: check(a, c), minimise,
                  doc=f"LLVM's {_arch} code -> text -> tinygrad's DSL + assemble_linear, run on the emulator vs LLVM's ELF and the dtype reference"))
