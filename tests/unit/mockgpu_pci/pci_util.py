"""Helpers for driving one mock PCI GPU the way the AM driver does: stores through tinygrad's own `to_mv` views of the MMIO BAR."""
from __future__ import annotations
from mockgpu import devwrite
from mockgpu.pci.boards import board
from mockgpu.pci.bus import PhysicalBus
from mockgpu.pci.device import FB_BASE, PCIGPU

VRAM = 512 << 20

def make_gpu(arch:str="gfx1100", vram:int=VRAM) -> PCIGPU:
  """A fresh GPU on its own bus (its BAR window and host frames are private to the test)."""
  devwrite.install()
  return PCIGPU(0, "0000:c1:00.0", board(arch), vram, PhysicalBus())

def mmio(gpu:PCIGPU):
  """The host's 32-bit view of the register BAR, as tinygrad's MMIOInterface builds it."""
  from tinygrad.helpers import to_mv
  return to_mv(gpu.regs.bar_addr, gpu.regs.bar_bytes).cast("I")

def wreg(gpu:PCIGPU, name:str, value:int=0, **fields):
  """A host store to register `name` (through the RSMU index/data pair when it lies beyond the BAR)."""
  r = gpu.regs.reg(name)
  v, addr, m = value | r.encode(**fields), r.addr[0], mmio(gpu)
  if addr < len(m): m[addr] = v
  else:
    m[gpu.regs.index] = addr * 4
    m[gpu.regs.data] = v

def rreg(gpu:PCIGPU, name:str) -> int:
  """A host load of register `name`."""
  addr, m = gpu.regs.addr(name), mmio(gpu)
  if addr < len(m): return m[addr]
  m[gpu.regs.index] = addr * 4
  return m[gpu.regs.data]

def mc(off:int) -> int: return FB_BASE + off
