"""Target `stream.nv`: random NVIDIA method streams and QMDs through the mock's channel (mockgpu.nv.methods.Channel), the code a
GPFIFO entry runs.

A case is a memory layout of fixed buffers (a semaphore page, a data buffer, a kernel's PTX text, a constant buffer, three QMD
slots), the fields of up to three QMDs (drawn from tinygrad's own QMD class: grids and blocks at and past the hardware's limits,
zero, dependent pointers to themselves, to each other or nowhere, releases, program and constant-buffer addresses that are
right, unmapped or garbage) and a stream of method headers of every opcode (incrementing, non-incrementing, one-increment,
immediate, end of segment, the tertiary and reserved ones), on subchannels 0-7, to the host, compute and copy methods the mock
models and to random ones, with counts that can run past the entry's end and data that are buffer addresses, QMD pointers,
SEM_EXECUTE encodings or random words.

The property is the channel's contract: `run` returns (done, or a Stall on an acquire), or raises MethodError (a malformed or
unmodelled method, naming its dword) or a GPUFault that is not GPUEmulatorError (memory faults, hangs, invalid launches,
misaligned accesses, traps), within `BOUND_S` of wall clock; `pending_releases` (what a stopped channel's host waits are trapped
on) returns for the same stream. Kinds: `host-exception` (anything else escaped, keyed by exception type and where it was
raised), `slow` (the case ran past `BOUND_S`).
"""
from __future__ import annotations
import os, random, time, traceback
import numpy as np
from tinygrad.runtime.autogen import nv_570 as nv
from emu.amd.api import GPUEmulatorError, GPUFault
from emu.common.memory import MemoryMap
from emu.common.watchdog import Watchdog
from fuzz.finding import Finding
from fuzz.registry import Target, register
from fuzz.shrink import greedy

BOUND_S = 15.0               # a case (every launch it makes included) must end within this
WATCHDOG_S, WATCHDOG_INSTRUCTIONS = 2.0, 50_000
SEM, DATA, PROGRAM, CBUF, QMDS = 0x10_0000_0000, 0x10_0001_0000, 0x10_0002_0000, 0x10_0003_0000, 0x10_0004_0000
SIZES = {SEM: 0x1000, DATA: 0x1000, PROGRAM: 0x1000, CBUF: 0x1000, QMDS: 0x1000}
QMD_STRIDE = 0x100
KERNEL = (".version 8.0\n.target sm_89\n.address_size 64\n.visible .entry k(.param .u64 data0)\n{\n.reg .u64 %a, %o;\n.reg .u32 %t;\n"
          "ld.param.u64 %a, [data0+0];\nmov.u32 %t, %tid.x;\nand.b32 %t, %t, 255;\nmul.wide.u32 %o, %t, 4;\nadd.u64 %a, %a, %o;\n"
          "st.global.u32 [%a+0], %t;\nret;\n}\n")
GRID = (1, 2, 7, 0, 65535, 65536, 2**31 - 1, 2**32 - 1)
BLOCK = (1, 32, 33, 256, 1024, 0, 65, 1025, 65535)

def _addr(rng:random.Random) -> int:
  """A buffer address (sometimes misaligned or just past a buffer's end), zero, or a random one."""
  r = rng.random()
  if r < 0.6: return rng.choice(list(SIZES)) + rng.choice((0, 0, 8, 2, 0x100, 0xff8, 0x1000))
  return 0 if r < 0.75 else rng.getrandbits(49)

def _qmd(rng:random.Random, slot:int) -> dict:
  """Fields of one QMD for tinygrad's QMD class: a launch that runs, with each group of fields sometimes drawn at or past the
  hardware's limits or pointing elsewhere."""
  odd = lambda p=0.15: rng.random() < p  # noqa: E731
  f = {"qmd_major_version": rng.randrange(8) if odd(0.05) else 3, "constant_buffer_valid_0": int(not odd(0.05)),
       "cta_raster_width": rng.choice(GRID) if odd() else rng.randint(1, 4), "cta_raster_height": rng.choice(GRID[:6]) if odd() else 1,
       "cta_raster_depth": rng.choice(GRID[:6]) if odd(0.05) else 1,
       "cta_thread_dimension0": rng.choice(BLOCK) if odd() else rng.choice((32, 64, 256)),
       "cta_thread_dimension1": rng.choice((2, 0, 1025)) if odd(0.05) else 1, "cta_thread_dimension2": rng.choice((2, 0, 65)) if odd(0.05) else 1,
       "constant_buffer_size_shifted4_0": 0x180, "program": _addr(rng) if odd(0.1) else PROGRAM, "cbuf": _addr(rng) if odd(0.1) else CBUF}
  if rng.random() < 0.4:
    target = rng.choice(("self", "next", "next", "random"))
    f["dependent"] = {"self": QMDS + slot * QMD_STRIDE, "next": QMDS + (slot + 1) % 3 * QMD_STRIDE, "random": _addr(rng)}[target] & ~0xff
  if rng.random() < 0.7: f["release"] = (SEM + rng.choice((0, 16, 32)) if rng.random() < 0.9 else _addr(rng), rng.getrandbits(32))
  return f

def _command(rng:random.Random) -> list[tuple[int, int, int]]:
  """One thing tinygrad's queues do, as (subchannel, method, value) writes: a semaphore release or acquire, a launch, a copy."""
  kind = rng.choice(("release", "acquire", "launch", "launch", "copy", "interrupt"))
  if kind in ("release", "acquire"):
    sem = SEM + rng.choice((0, 16, 32)) if rng.random() < 0.9 else _addr(rng)
    op = nv.NVC56F_SEM_EXECUTE_OPERATION_RELEASE if kind == "release" else rng.choice((1, 2, 3, 4, 5))   # the acquire kinds
    execute = (op | rng.getrandbits(1) << nv.NVC56F_SEM_EXECUTE_PAYLOAD_SIZE[1]
               | rng.getrandbits(1) << nv.NVC56F_SEM_EXECUTE_RELEASE_TIMESTAMP[1])
    return [(0, nv.NVC56F_SEM_ADDR_LO, sem & 0xffffffff), (0, nv.NVC56F_SEM_ADDR_HI, sem >> 32),
            (0, nv.NVC56F_SEM_PAYLOAD_LO, rng.choice((0, 1, rng.getrandbits(32)))), (0, nv.NVC56F_SEM_PAYLOAD_HI, 0),
            (0, nv.NVC56F_SEM_EXECUTE, execute)]
  if kind == "launch":
    return [(1, nv.NVC6C0_SEND_PCAS_A, (QMDS + rng.randrange(3) * QMD_STRIDE) >> 8), (1, nv.NVC6C0_SEND_SIGNALING_PCAS2_B, 9)]
  if kind == "copy":
    src, dst = DATA if rng.random() < 0.9 else _addr(rng), SEM + 0x100 if rng.random() < 0.9 else _addr(rng)
    return [(4, nv.NVC6B5_OFFSET_IN_UPPER, src >> 32), (4, nv.NVC6B5_OFFSET_IN_LOWER, src & 0xffffffff), (4, nv.NVC6B5_OFFSET_OUT_UPPER, dst >> 32),
            (4, nv.NVC6B5_OFFSET_OUT_LOWER, dst & 0xffffffff), (4, nv.NVC6B5_LINE_LENGTH_IN, rng.choice((16, 256, 0x1000, 0x2000))),
            (4, nv.NVC6B5_LAUNCH_DMA, rng.choice((0x182, 0x186, rng.getrandbits(32))))]
  return [(0, nv.NVC56F_NON_STALL_INTERRUPT, 0)]

def _encode(rng:random.Random, writes:list[tuple[int, int, int]]) -> list[int]:
  """Method writes in headers of every form that expresses them: incrementing runs, one-increment pairs, non-incrementing or
  immediate singles."""
  out, i = [], 0
  while i < len(writes):
    subc, method, value = writes[i]
    run = 1
    while i + run < len(writes) and writes[i + run][:2] == (subc, method + 4 * run): run += 1
    form = rng.random()
    if run == 1 and value < 0x2000 and form < 0.3: out.append(4 << 29 | value << 16 | subc << 13 | method >> 2)   # immediate
    elif run == 1 and form < 0.5: out += [3 << 29 | 1 << 16 | subc << 13 | method >> 2, value]                    # non-incrementing
    elif run >= 2 and form < 0.2:                                                                                 # one-increment
      out += [5 << 29 | 2 << 16 | subc << 13 | method >> 2, value, writes[i + 1][2]]
      run = 2
    else: out += [1 << 29 | run << 16 | subc << 13 | method >> 2] + [w[2] for w in writes[i:i + run]]
    i += run
  return out

def _corrupt(rng:random.Random, words:list[int]) -> list[int]:
  """One corruption: a random dword (a header of any opcode, subchannel, method and count) inserted, a flipped bit, NOPs, or
  the stream cut short."""
  kind, at = rng.random(), rng.randrange(len(words) + 1)
  if kind < 0.4: return words[:at] + [rng.getrandbits(32)] + words[at:]
  if kind < 0.7: return words[:at - 1] + [words[at - 1] ^ 1 << rng.randrange(32)] + words[at:] if at else words
  if kind < 0.85: return words[:at] + [0] * rng.randint(1, 3) + words[at:]
  return words[:at]

def generate(rng:random.Random) -> dict:
  """A case: three QMDs' fields and a stream of tinygrad-like commands, sometimes corrupted."""
  words: list[int] = []
  for _ in range(rng.randint(1, 8)): words += _encode(rng, _command(rng))
  if rng.random() < 0.1: words.append(7 << 29)   # end of segment: what follows is not read
  for _ in range(rng.choice((0, 0, 1, 1, 2, 3))): words = _corrupt(rng, words)
  return {"qmds": [_qmd(rng, i) for i in range(3)], "words": words, "program_ok": rng.random() < 0.95}

def memory(case:dict) -> tuple[MemoryMap, list[np.ndarray]]:
  """The case's buffers mapped at their VAs (and the arrays backing them)."""
  from tinygrad.runtime.ops_nv import QMD
  from types import SimpleNamespace
  keep, mem = [], MemoryMap()
  for va, size in SIZES.items():
    keep.append(arr := np.zeros(size, np.uint8))
    mem.map(va, size, f"stream.nv {va:#x}", backing=arr)
  text = (KERNEL if case["program_ok"] else "garbage: not PTX\n").encode()
  keep[2][:len(text)] = np.frombuffer(text, np.uint8)
  keep[3][0x160:0x168] = np.frombuffer(np.uint64(DATA).tobytes(), np.uint8)   # the kernel's one argument, at mock mode's slot
  from mockgpu.nv.qmd import fields
  dev = SimpleNamespace(iface=SimpleNamespace(compute_class=nv.ADA_COMPUTE_A))
  for i, f in enumerate(case["qmds"]):
    q = QMD(dev=dev, view=memoryview(keep[4][i * QMD_STRIDE:(i + 1) * QMD_STRIDE]).cast("B"))
    def put(**kw):   # each value cut to its field's width, as the hardware reads it
      q.write(**{k: v & ((1 << (fields()[k][0] - fields()[k][1] + 1)) - 1) for k, v in kw.items()})
    put(**{k: v for k, v in f.items() if k not in ("program", "cbuf", "dependent", "release")})
    put(program_address_upper=f["program"] >> 32, program_address_lower=f["program"] & 0xffffffff)
    put(constant_buffer_addr_upper_0=f["cbuf"] >> 32, constant_buffer_addr_lower_0=f["cbuf"] & 0xffffffff)
    if "dependent" in f: put(dependent_qmd0_pointer=f["dependent"] >> 8, dependent_qmd0_action=1, dependent_qmd0_enable=1)
    if "release" in f:
      addr, payload = f["release"]
      put(release0_enable=1, release0_address_lower=addr & 0xffffffff, release0_address_upper=addr >> 32, release0_payload_lower=payload)
  return mem, keep

def _site(e:BaseException) -> str:
  frames = [f for f in traceback.extract_tb(e.__traceback__) if "/mockgpu/" in f.filename or "/emu/" in f.filename]
  f = (frames or traceback.extract_tb(e.__traceback__))[-1]
  return f"{os.path.basename(f.filename)}:{f.name}"

def check(case:dict) -> None:
  """host-exception unless the channel and the trap scan keep their contracts (module docstring); slow past BOUND_S."""
  from mockgpu.nv.methods import Channel, MethodError, pending_releases
  mem, _ = memory(case)
  words = np.array(case["words"], np.uint32)
  clock = iter(range(10**9))
  start = time.monotonic()
  try:
    try: Channel(mem, lambda: next(clock), watchdog=Watchdog(WATCHDOG_INSTRUCTIONS, WATCHDOG_S)).run(words)
    except MethodError: pass
    except GPUFault as e:
      if isinstance(e, GPUEmulatorError): raise e.error from None
    pending_releases(mem, words)
  except Exception as e:
    raise Finding("host-exception", f"stream.nv: {type(e).__name__}: {e} at {_site(e)}", key=(type(e).__name__, _site(e))) from None
  if (took := time.monotonic() - start) > BOUND_S: raise Finding("slow", f"stream.nv: the case took {took:.1f} s (bound {BOUND_S:g} s)")

def minimise(case:dict, fails) -> dict:
  """Drop stream dwords (from the end first) while the same finding persists."""
  def simpler(c:dict):
    for i in reversed(range(len(c["words"]))): yield {**c, "words": c["words"][:i] + c["words"][i + 1:]}
  return greedy(case, fails, simpler, budget=150)

register(Target("stream.nv", generate, check, minimise,
                doc="random NVIDIA method streams and QMDs through the mock's channel: only MethodError and the defined GPU faults, in bounded time"))
