"""Run flat x86-64 machine code (a System V function) in unicorn: no host execution of generated code, works on any host.

`call(code, args, buffers)` maps the code, each buffer and a stack, calls the function with integer arguments (buffers are
passed by their mapped address) and returns the buffers' final contents. This module also holds what every x86 executor
shares (fuzz.x86_qemu is the other one): `Fault`, the memory layout, argument marshalling, the callee-saved register check
and the VEX 3-operand probe.
"""
from __future__ import annotations
import struct
from typing import Callable
from unicorn import Uc, UcError, UC_ARCH_X86, UC_MODE_64, UC_HOOK_MEM_INVALID
from unicorn.x86_const import (UC_X86_REG_RSP, UC_X86_REG_RDI, UC_X86_REG_RSI, UC_X86_REG_RDX, UC_X86_REG_RCX, UC_X86_REG_R8, UC_X86_REG_R9,
                               UC_X86_REG_RIP, UC_X86_REG_RBX, UC_X86_REG_RBP, UC_X86_REG_R12, UC_X86_REG_R13, UC_X86_REG_R14,
                               UC_X86_REG_R15)

BASE, STACK, STACK_SIZE, RET = 0x10000000, 0x7f000000, 1 << 20, 0xdead0000
ARG_REGS = (UC_X86_REG_RDI, UC_X86_REG_RSI, UC_X86_REG_RDX, UC_X86_REG_RCX, UC_X86_REG_R8, UC_X86_REG_R9)
SAVED_REGS = (UC_X86_REG_RBX, UC_X86_REG_RBP, UC_X86_REG_R12, UC_X86_REG_R13, UC_X86_REG_R14, UC_X86_REG_R15)
PAGE, MASK = 0x1000, 2**64 - 1
# what rbx rbp r12 r13 r14 r15 hold at the call; fuzz/x86_harness.c loads the same values
SAVED_NAMES = ("rbx", "rbp", "r12", "r13", "r14", "r15")
CANARIES = tuple(0x5a5a00000000a5b1 + i for i in range(6))

class Fault(Exception):
  """The executed code faulted, touched unmapped memory, broke the System V ABI or ran past its budget."""

def pages(n:int) -> int:
  """`n` bytes rounded up to whole pages, at least one page."""
  return max(PAGE, (n + PAGE - 1) // PAGE * PAGE)

def layout(base:int, code:bytes, buffers:dict[str, bytes]) -> tuple[int, dict[str, int], int]:
  """Where code and buffers go from page-aligned `base`: each on whole pages followed by an unmapped guard page.

  Returns (code address, buffer name -> address, end of the last guard page)."""
  at, addrs = base + pages(len(code)) + PAGE, {}
  for name, data in buffers.items(): addrs[name], at = at, at + pages(len(data)) + PAGE
  return base, addrs, at

def arg_words(args:list[int|str], addrs:dict[str, int]) -> list[int]:
  """The 64-bit argument words: ints as two's complement, buffer names as their addresses."""
  return [addrs[a] if isinstance(a, str) else a & MASK for a in args]

def check_abi(saved:list[int], rsp_drift:int) -> None:
  """Raise Fault when the callee returned with callee-saved registers changed or the stack pointer moved."""
  bad = [n for n, v, c in zip(SAVED_NAMES, saved, CANARIES) if v != c]
  if rsp_drift: bad.append(f"rsp (moved {rsp_drift:+#x})")
  if bad: raise Fault(f"clobbered callee-saved {', '.join(bad)}")

def where(rip:int, code_at:int, code:bytes) -> str:
  """rip as an offset into the code when it lies there."""
  return f"code+{rip - code_at:#x}" if code_at <= rip < code_at + len(code) else f"{rip:#x}"

def call(code:bytes, args:list[int|str], buffers:dict[str, bytes], max_insns:int=5_000_000) -> dict[str, bytes]:
  """Call `code` with `args` (ints, or names of `buffers` to pass by address); return every buffer after the call."""
  mu = Uc(UC_ARCH_X86, UC_MODE_64)
  code_at, addrs, _ = layout(BASE, code, buffers)
  for at, data in ((code_at, code), *((addrs[n], d) for n, d in buffers.items())):
    mu.mem_map(at, pages(len(data)))
    mu.mem_write(at, data)
  mu.mem_map(STACK, STACK_SIZE)
  mu.mem_map(RET, PAGE)
  vals = arg_words(args, addrs)
  sp = STACK + STACK_SIZE // 2
  mu.mem_write(sp, struct.pack("<Q", RET) + b"".join(struct.pack("<Q", v) for v in vals[6:]))
  mu.reg_write(UC_X86_REG_RSP, sp)
  for reg, v in zip(ARG_REGS + SAVED_REGS, vals[:6] + [0] * (6 - len(vals[:6])) + list(CANARIES)): mu.reg_write(reg, v)
  bad: list[str] = []
  mu.hook_add(UC_HOOK_MEM_INVALID, lambda uc, access, addr, size, value, _: bad.append(f"invalid access of {size} bytes at {addr:#x}") and False)
  try: mu.emu_start(code_at, RET, count=max_insns)
  except UcError as e: raise Fault(f"{e} at rip={where(mu.reg_read(UC_X86_REG_RIP), code_at, code)}" + (f" ({bad[0]})" if bad else "")) from None
  if (rip:=mu.reg_read(UC_X86_REG_RIP)) != RET: raise Fault(f"did not return within {max_insns} instructions (rip={where(rip, code_at, code)})")
  check_abi([mu.reg_read(r) for r in SAVED_REGS], mu.reg_read(UC_X86_REG_RSP) - (sp + 8))
  return {name: bytes(mu.mem_read(addrs[name], len(data))) for name, data in buffers.items()}

# vmovss xmm0,[rsi]; vmovss xmm1,[rsi+4]; vmovss xmm2,[rsi+8]; vaddss xmm0,xmm1,xmm2; vmovss [rdi],xmm0; ret  -- hand-assembled
VADDSS_PROBE = bytes.fromhex("c5fa1006" "c5fa104e04" "c5fa105608" "c5f258c2" "c5fa1107" "c3")

def vaddss_probe(run:Callable[..., dict[str, bytes]]) -> float:
  """What an executor's `call` makes of `vaddss xmm0, xmm1, xmm2` with xmm0=100, xmm1=1.5, xmm2=2: 3.5 under VEX semantics
  (xmm1+xmm2), 102 where VEX.vvvv is ignored (legacy SSE: xmm0+xmm2)."""
  return struct.unpack("<f", run(VADDSS_PROBE, ["out", "in"], {"out": bytes(4), "in": struct.pack("<3f", 100.0, 1.5, 2.0)})["out"])[0]

def vex_faithful() -> bool:
  """Does this unicorn honour VEX 3-operand semantics (`vaddss_probe` gives 3.5)?

  unicorn 2.1.x (QEMU 5 TCG) decodes VEX prefixes but executes them as legacy 2-operand SSE (VEX.vvvv ignored), so AVX code
  such as tinygrad's x86 renderer output computes wrong values there.
  """
  return vaddss_probe(call) == 3.5
