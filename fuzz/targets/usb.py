"""Targets `usb.{gfx1100,gfx1201}`: random command streams against the mock USB bridge (mockgpu/usb) and the GPU behind it.

A case is a stream of OPS transfers through `MockUSB3`, the handle tinygrad's own USB code drives: vendor control requests (the
bridge's XDATA reads and writes, PCIe power, TLPs of every Fmt/Type with random byte enables, modes and addresses, SRAM arms;
now and then a request the firmware does not serve or a field out of range), and bulk transfers of random lengths. Addresses
are drawn near the places that matter (configuration space of buses 0-5, the BAR windows tinygrad programs, XDATA and SRAM
ends); half the cases first bring the link up the way tinygrad's `pci_setup_usb_bars` does, so TLPs reach the GPU's
registers, doorbells and VRAM. Each case starts from a freshly plugged-in device.

The property is the documented error surface: every transfer completes, or fails with `USBTransferError` (the bridge refuses
it: malformed, out of window, nobody decodes it) or `PCIDeviceError` (the GPU's register protocol refuses a store). Kind:
  `host-exception`  anything else escaped (IndexError, struct.error, OverflowError ...), keyed by where it was raised
  `slow`            one transfer took longer than SLOW_S (a bridge must answer in bounded time)
"""
from __future__ import annotations
import random, struct, time
from mockgpu.pci.registers import PCIDeviceError
from mockgpu.usb import bridge as br
from mockgpu.usb.bridge import USBTransferError
from fuzz.finding import Finding
from fuzz.registry import Target, register
from fuzz.shrink import greedy
from fuzz.targets.exec import host_exception

ARCHS = ("gfx1100", "gfx1201")
OPS = 12
VRAM = 64 << 20
SLOW_S = 2.0
READ_TIMEOUT_MS = 2          # an armed SRAM read nobody completes ends this fast here
FMTS = (0x00, 0x20, 0x40, 0x60, 0x04, 0x05, 0x44, 0x45, 0x30, 0x34)
REGS, PREF = 0x10000000, 0x8_0000_0000
_DEVICES: dict = {}

def _device(arch:str):
  """The arch's mock USB device, replugged (one per process: building a GPU costs far more than a case)."""
  from mockgpu import devwrite
  from mockgpu.pci.boards import board
  from mockgpu.usb.transport import MockUSB3, attach
  if arch not in _DEVICES:
    devwrite.install()
    _DEVICES[arch] = MockUSB3(attach(0, f"usb:fuzz-{arch}", board(arch), VRAM))
  usb = _DEVICES[arch]
  usb.bridge.replug()
  return usb

def _address(rng:random.Random) -> int:
  return rng.choice([
    lambda: rng.randrange(6) << 24 | rng.randrange(2) << 19 | rng.randrange(8) << 16 | rng.randrange(0x1000) & ~3,   # config
    lambda: REGS + (rng.randrange(1 << 18) << 2),
    lambda: PREF + rng.choice([0, VRAM - 8, VRAM, 1 << 30, rng.randrange(VRAM)]) & ~3,
    lambda: PREF + VRAM + (rng.randrange(1 << 18) << 3),        # the doorbells, placed right after BAR0 (64 MiB: a power of two)
    lambda: rng.getrandbits(64)])()

def _ops(rng:random.Random) -> list[list]:
  """One transfer, or an arming request and (mostly) the bulk transfer it arms, of the right length or not."""
  r = rng.random()
  def bulk(kind:str, size:int) -> list[list]:
    if rng.random() < 0.2: return []
    n = size if rng.random() < 0.8 else rng.choice([max(1, size - 4), size + 4, rng.randrange(1, 0x8000)])
    return [["bulk_out", n, rng.randrange(256)] if kind == "out" else ["bulk_in", n]]
  if r < 0.45:
    mode = rng.choice([0, 0, 1, 1, 2, rng.randrange(4)])
    count = rng.choice([1, 2, 16, 256]) if mode and rng.random() < 0.9 else rng.getrandbits(32) if mode else 0
    data = struct.pack("<QI", _address(rng), count if mode else rng.getrandbits(32))
    fmt = rng.choice(([0x20, 0x60] if mode else []) + list(FMTS) + [rng.randrange(256)])
    value = fmt | rng.choice([0xf, 0xf, 0x1, 0x3, 0xc, rng.randrange(16)]) << 8
    arm = [["out", br.REQ_TLP, value, mode, data.hex()]]
    if mode in (1, 2) and count < 0x10000: return arm + bulk("out" if mode == 1 else "in", count * 4)
    return arm + ([["in", br.REQ_TLP, 0, 0, 8]] if mode == 0 and rng.random() < 0.7 else [])
  if r < 0.5: return [["in", br.REQ_TLP, 0, 0, rng.choice([8, 8, 4, 16])]]
  if r < 0.65:
    sectors, slot, read = rng.choice([1, 2, 32, 511, rng.randrange(1, 0x400)]), rng.choice([0, 16, 31, rng.randrange(256)]), rng.random() < 0.5
    chunks = -(-sectors * br.SECTOR // br.SLOT) if rng.random() < 0.85 else rng.randrange(256)
    return [["out", br.REQ_SRAM, sectors | (0x8000 if read else 0), slot | chunks << 8, ""]] + bulk("in" if read else "out", sectors * br.SECTOR)
  if r < 0.72:
    return [["out", br.REQ_XDATA_WRITE, rng.choice([0xa800, 0xb80c, br.XDATA_LTSSM, 0xffff, rng.randrange(0x10000)]), rng.randrange(256), ""]]
  if r < 0.78: return [["in", br.REQ_XDATA_READ, rng.choice([0xa800, 0xfff8, 0xffff, rng.randrange(0x10000)]), 0, rng.choice([1, 8, 255, 0x1000])]]
  if r < 0.84: return [["out", br.REQ_POWER, int(rng.random() < 0.8), 0, ""]]
  if r < 0.88: return [["out" if rng.random() < 0.5 else "in", rng.randrange(256), rng.randrange(0x20000), rng.randrange(0x20000), rng.randrange(16)]]
  return bulk("out" if rng.random() < 0.5 else "in", rng.choice([4, 512, rng.randrange(1, 0x8000)]))

def generate(arch:str, rng:random.Random) -> dict:
  """A stream of OPS transfers for `arch`, after tinygrad's link setup in half the cases."""
  ops: list[list] = []
  while len(ops) < OPS: ops += _ops(rng)
  return {"arch": arch, "setup": rng.random() < 0.5, "ops": ops[:OPS]}

def _link_up(usb):
  """The link and BARs as tinygrad leaves them (its own CustomASM24Controller and pci_setup_usb_bars over this handle)."""
  from tinygrad.runtime.support.system import System
  from tinygrad.runtime.support.usb import CustomASM24Controller
  System.pci_setup_usb_bars(CustomASM24Controller(usb), gpu_bus=4, mem_base=REGS, pref_mem_base=PREF)

def _apply(usb, op:list):
  kind = op[0]
  if kind == "out": usb.control_write(op[1], op[2], op[3], bytes.fromhex(op[4]) if isinstance(op[4], str) else bytes(op[4]))
  elif kind == "in": usb.control_read(op[1], op[4], op[2], op[3])
  elif kind == "bulk_out": usb.bulk_write(bytes([op[2]]) * op[1])
  else: usb.bulk_read(op[1], timeout=READ_TIMEOUT_MS)

def check(case:dict) -> None:
  """host-exception unless each transfer completes or fails with the bridge's or the GPU's documented error; slow if one hangs."""
  usb = _device(case["arch"])
  try:
    if case["setup"]: _link_up(usb)
  except Exception as e: raise host_exception(f"{case['arch']} usb link setup", case["arch"], e) from None
  for i, op in enumerate(case["ops"]):
    t = time.perf_counter()
    try: _apply(usb, op)
    except (USBTransferError, PCIDeviceError): pass
    except Exception as e: raise host_exception(f"{case['arch']} usb op {i} {op}", case["arch"], e) from None
    if (took := time.perf_counter() - t) > SLOW_S:
      raise Finding("slow", f"{case['arch']} usb op {i} {op} took {took:.1f} s", key=(case["arch"], op[0], op[1]))

def minimise(case:dict, fails) -> dict:
  """Drop transfers (and the link setup) while the same finding persists."""
  def simpler(c):
    if c["setup"]: yield {**c, "setup": False}
    yield from ({**c, "ops": c["ops"][:i] + c["ops"][i + 1:]} for i in range(len(c["ops"])))
  return greedy(case, fails, simpler, budget=100)

for _arch in ARCHS:
  register(Target(f"usb.{_arch}", lambda rng, a=_arch: generate(a, rng), check, minimise,
                  doc=f"random USB command streams against the mock ASM24xx bridge and its {_arch}: only the bridge's and GPU's documented errors"))
