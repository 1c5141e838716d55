"""Targets `stream.{gfx1100,gfx1201,gfx942,gfx950}`: random instruction streams through the emulator's public API.

A case is STREAM_LENGTH instructions of the arch's table set drawn like the exec targets' (fuzz.amd_exec.draw: every emulated
format and opcode), a third of them edge encodings (amd_fields.edge_value: registers at the ends of the files, reserved source
codes, selects LLVM rejects), followed by s_endpgm. It runs as one workgroup of one wave through `AMDGPU.dispatch` with the
timing model on, a mapped buffer behind the user SGPRs, LDS, and a wave-instruction watchdog (branches may loop).

The property is the API's contract (emu.amd.gpu.AMDGPU): a dispatch returns, or raises a GPUFault subclass that is not
GPUEmulatorError, whatever the code. Kind:
  `host-exception`  anything else escaped (IndexError, KeyError, MemoryError ...), or the emulator caught a failure of its own
                    inside an instruction (GPUEmulatorError), keyed by where the original exception was raised
"""
from __future__ import annotations
import random
import numpy as np
from emu.amd.api import Dispatch, GPUEmulatorError, GPUFault
from emu.amd.api import ARCHS as BOARD_ARCHS
from emu.amd.arch import SPECS, get_spec
from emu.amd.gpu import AMDGPU
from emu.common.memory import MemoryMap
from fuzz import amd_exec
from fuzz.registry import Target, register
from fuzz.shrink import greedy
from fuzz.targets.exec import host_exception

ARCHS = {a: SPECS[a].family for a in BOARD_ARCHS}   # board arch -> ISA family
STREAM_LENGTH = 16
EDGE_SHARE = 1 / 3          # instructions drawn as edge encodings
WATCHDOG = 20_000           # wave-instructions: a stream that loops ends in GPUHangFault quickly
BUFFER, LDS = 1 << 16, 4096

def generate(arch:str, rng:random.Random) -> dict:
  """STREAM_LENGTH instruction encodings (hex) of `arch`'s table set, and the wave size they run in."""
  family = ARCHS[arch]
  insts = [amd_exec.code(amd_exec.draw(family, rng, None, None, amd_exec.EDGE_FIELDS if rng.random() < EDGE_SHARE else 0.0)).hex()
           for _ in range(STREAM_LENGTH)]
  return {"arch": arch, "lanes": rng.choice(get_spec(arch).wave_sizes), "insts": insts}

def run(case:dict) -> GPUFault|None:
  """Dispatch the stream (one workgroup of `waves` waves, default 1); the GPUFault it ended with, or None. Anything else propagates."""
  spec = get_spec(case["arch"])
  code = np.frombuffer(b"".join(bytes.fromhex(h) for h in case["insts"]) + spec.ins.s_endpgm().to_bytes() + bytes(16), dtype=np.uint8).copy()
  buf = np.arange(BUFFER, dtype=np.uint32).astype(np.uint8)
  mem = MemoryMap()
  mem.map(code.ctypes.data, code.size, "stream code", writable=False, backing=code)
  mem.map(buf.ctypes.data, buf.size, "stream buffer", backing=buf)
  d = Dispatch(code_addr=code.ctypes.data, grid=(1, 1, 1), workgroup=(case["lanes"] * case.get("waves", 1), 1, 1), wave32=case["lanes"] == 32,
               user_sgprs=[buf.ctypes.data & 0xffffffff, buf.ctypes.data >> 32, BUFFER, 0], rsrc2=4 << 1 | 1 << 7, lds_bytes=LDS)
  try: AMDGPU(case["arch"], mem, watchdog=WATCHDOG).dispatch(d)
  except GPUFault as e: return e
  return None

def check(case:dict) -> None:
  """host-exception unless the dispatch returned or raised one of the emulator's defined faults."""
  try: fault = run(case)
  except Exception as e: raise host_exception(f"{case['arch']} stream", case["arch"], e) from None
  if isinstance(fault, GPUEmulatorError): raise host_exception(f"{case['arch']} stream", case["arch"], fault.error)

def minimise(case:dict, fails) -> dict:
  """Drop instructions while the same finding persists."""
  return greedy(case, fails, lambda c: ({**c, "insts": c["insts"][:i] + c["insts"][i + 1:]} for i in range(len(c["insts"]))), budget=100)

for _arch, _family in ARCHS.items():
  register(Target(f"stream.{_arch}", lambda rng, a=_arch: generate(a, rng), check, minimise,
                  doc=f"streams of {STREAM_LENGTH} random {_family} instructions (a third edge encodings) through AMDGPU.dispatch on {_arch}: "
                      "only the API's defined faults"))
