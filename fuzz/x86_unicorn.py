"""Run flat x86-64 machine code (a System V function) in unicorn: no host execution of generated code.

`call(code, args, buffers)` maps the code, each buffer and a stack, calls the function with integer arguments (buffers are
passed by their mapped address) and returns the buffers' final contents.
"""
from __future__ import annotations
import struct
from unicorn import Uc, UcError, UC_ARCH_X86, UC_MODE_64, UC_HOOK_MEM_INVALID
from unicorn.x86_const import (UC_X86_REG_RSP, UC_X86_REG_RDI, UC_X86_REG_RSI, UC_X86_REG_RDX, UC_X86_REG_RCX, UC_X86_REG_R8, UC_X86_REG_R9,
                               UC_X86_REG_RIP, UC_X86_REG_XMM0, UC_X86_REG_XMM1, UC_X86_REG_XMM2)

CODE, DATA, STACK, STACK_SIZE, RET = 0x100000, 0x10000000, 0x7f000000, 1 << 20, 0xdead0000
ARG_REGS = (UC_X86_REG_RDI, UC_X86_REG_RSI, UC_X86_REG_RDX, UC_X86_REG_RCX, UC_X86_REG_R8, UC_X86_REG_R9)
PAGE = 0x1000

class Fault(Exception):
  """The emulated code faulted, touched unmapped memory, or ran past its instruction budget."""

def _pages(n:int) -> int: return max(PAGE, (n + PAGE - 1) // PAGE * PAGE)

def call(code:bytes, args:list[int|str], buffers:dict[str, bytes], max_insns:int=5_000_000) -> dict[str, bytes]:
  """Call `code` with `args` (ints, or names of `buffers` to pass by address); return every buffer after the call."""
  mu = Uc(UC_ARCH_X86, UC_MODE_64)
  mu.mem_map(CODE, _pages(len(code)))
  mu.mem_write(CODE, code)
  addrs, at = {}, DATA
  for name, data in buffers.items():
    mu.mem_map(at, _pages(len(data)))
    mu.mem_write(at, data)
    addrs[name], at = at, at + _pages(len(data)) + PAGE  # an unmapped guard page after every buffer
  mu.mem_map(STACK, STACK_SIZE)
  mu.mem_map(RET, PAGE)
  vals = [addrs[a] if isinstance(a, str) else a for a in args]
  sp = STACK + STACK_SIZE // 2
  mu.mem_write(sp, struct.pack("<Q", RET) + b"".join(struct.pack("<Q", v & (2**64-1)) for v in vals[6:]))
  mu.reg_write(UC_X86_REG_RSP, sp)
  for reg, v in zip(ARG_REGS, vals): mu.reg_write(reg, v & (2**64-1))
  bad: list[str] = []
  mu.hook_add(UC_HOOK_MEM_INVALID, lambda uc, access, addr, size, value, _: bad.append(f"invalid access of {size} bytes at {addr:#x}") and False)
  try: mu.emu_start(CODE, RET, count=max_insns)
  except UcError as e: raise Fault(f"{e} at rip={mu.reg_read(UC_X86_REG_RIP):#x}" + (f" ({bad[0]})" if bad else "")) from None
  if (rip:=mu.reg_read(UC_X86_REG_RIP)) != RET: raise Fault(f"did not return within {max_insns} instructions (rip={rip:#x})")
  return {name: bytes(mu.mem_read(addrs[name], len(data))) for name, data in buffers.items()}

def vex_faithful() -> bool:
  """Does this unicorn honour VEX 3-operand semantics? `vaddss xmm0, xmm1, xmm2` must give xmm1+xmm2, not xmm0+xmm2.

  unicorn 2.1.x (QEMU 5 TCG) decodes VEX prefixes but executes them as legacy 2-operand SSE (VEX.vvvv ignored), so AVX code
  such as tinygrad's x86 renderer output computes wrong values there.
  """
  code = bytes.fromhex("c5f258c2" "c5fa1107" "c3")  # vaddss xmm0, xmm1, xmm2; vmovss [rdi], xmm0; ret
  mu = Uc(UC_ARCH_X86, UC_MODE_64)
  mu.mem_map(CODE, PAGE); mu.mem_map(DATA, PAGE)
  mu.mem_write(CODE, code)
  for reg, val in ((UC_X86_REG_XMM0, 100.0), (UC_X86_REG_XMM1, 1.5), (UC_X86_REG_XMM2, 2.0)):
    mu.reg_write(reg, struct.unpack("<I", struct.pack("<f", val))[0])
  mu.reg_write(UC_X86_REG_RDI, DATA)
  mu.emu_start(CODE, CODE + len(code) - 1)
  return struct.unpack("<f", mu.mem_read(DATA, 4))[0] == 3.5
