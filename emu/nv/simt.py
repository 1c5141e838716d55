"""SIMT execution of a parsed PTX kernel over a grid.

Every thread of the launch is one numpy lane. Lanes run in lockstep at the lowest PC any live lane is at, so lanes that
branch apart run their paths in program order and meet again at the first common instruction (structured code, which is
what tinygrad's renderers emit); the guard predicate masks lanes inside an instruction. `bar.sync` needs no extra work: a lane
can only be past a barrier if every lane reached it, because no lane runs ahead of a lower PC. Registers hold raw bits
(uint64 per lane; predicates as bools) and are read at the instruction's type. Global memory is the host's (GPU VA == CPU VA,
checked through emu.common.memory.MemoryMap: an access outside every mapping faults before anything is written); each CTA has
its own `.shared` bytes, `.param` is the launch's argument block.
"""
from __future__ import annotations
import math, os, struct, sys
from dataclasses import dataclass
import numpy as np
from emu.common.faults import GPUEmulatorError, GPUFault, GPUInvalidDispatch, GPUMemoryFault, GPUMisalignedAccess, GPUTrapFault
from emu.common.memory import MemoryMap
from emu.common.watchdog import Watchdog
from emu.nv import isa
from emu.nv.ptx import Addr, Imm, Kernel, Label, PTXError, Reg
from emu.nv.timing import Timer

@dataclass
class LaunchStats:
  """What one launch did: threads, warps (32 lanes of a CTA), warp-instructions issued, lockstep steps (summed over batches),
  CTAs."""
  threads: int
  warps: int
  warp_instructions: int = 0
  steps: int = 0
  ctas: int = 1
  cycles: int = 0   # the timing model's (0 when the launch ran without a Timer)

def param_block(kernel:Kernel, args:list[int]) -> tuple[bytes, dict[str, int]]:
  """The argument bytes of a launch (each parameter at its natural alignment) and each parameter's offset."""
  if len(args) != len(kernel.params): raise ValueError(f"{kernel.name} takes {len(kernel.params)} arguments, got {len(args)}")
  buf, offs = bytearray(), {}
  for (name, typ), v in zip(kernel.params, args):
    w = isa.width(typ) // 8
    buf += bytes(-len(buf) % w)
    offs[name] = len(buf)
    buf += (int(v) & ((1 << (8 * w)) - 1)).to_bytes(w, "little")
  return bytes(buf), offs

class _Lanes:
  """The state of every lane of a launch and the operand access the isa semantics use (`read`, `write`, `load`, ...)."""
  def __init__(self, kernel:Kernel, grid:tuple, block:tuple, args:list[int], memory:MemoryMap, ctas:range, timer:Timer|None=None):
    self.k, self.memory, self.timer = kernel, memory, timer
    per_cta, nctas = int(np.prod(block)), len(ctas)
    self.n = n = per_cta * nctas
    lane = np.arange(n)
    local_cta, t = lane // per_cta, lane % per_cta
    cta = local_cta + ctas.start
    self.cta = local_cta   # index into this batch's shared memory
    self.special = {"%tid.x": t % block[0], "%tid.y": t // block[0] % block[1], "%tid.z": t // (block[0] * block[1]),
                    "%ctaid.x": cta % grid[0], "%ctaid.y": cta // grid[0] % grid[1], "%ctaid.z": cta // (grid[0] * grid[1]),
                    "%laneid": t % 32, "%warpid": t // 32, **{f"%ntid.{c}": np.full(n, v) for c, v in zip("xyz", block)},
                    **{f"%nctaid.{c}": np.full(n, v) for c, v in zip("xyz", grid)}}
    self.warp = cta * -(-per_cta // 32) + t // 32
    self.local_warp = local_cta * -(-per_cta // 32) + t // 32
    self.nwarps = nctas * -(-per_cta // 32)
    self.regs = {r: (np.zeros(n, bool) if typ == "pred" else np.zeros(n, np.uint64)) for r, typ in kernel.regs.items()}
    self.params, self.param_offsets = param_block(kernel, args)
    self.shared = np.zeros((nctas, max(kernel.shared_bytes, 1)), np.uint8)
    self.local = np.zeros((n, max(kernel.local_bytes, 1)), np.uint8)   # each thread's .local memory
    self.global_addr = {name: np.frombuffer(data, np.uint8).ctypes.data for name, data in kernel.globals.items()}
    self.mask = np.zeros(n, bool)
    self.carry = np.zeros(n, bool)   # CC.CF, the carry flag of .cc instructions
    self.target: str | None = None
    self.exiting = False

  # ---- operands ----
  def read(self, o, t:str) -> np.ndarray:
    dt = isa.DTYPES[t]
    if isinstance(o, Imm): return np.full(self.n, self._imm(o, t), dtype=dt)
    if isinstance(o, Label): return np.full(self.n, self._symbol(o.name), dtype=dt)
    if isinstance(o, Addr): return self._address(o).astype(dt)   # a symbol's address as a value
    if o.name in self.special: return self.special[o.name].astype(dt)
    v = self.regs[o.name]
    if t == "pred" or v.dtype == bool: return v.astype(dt)
    w = isa.width(t)
    return (v & np.uint64((1 << w) - 1 if w < 64 else 0xffffffffffffffff)).astype(isa.DTYPES[f"u{w}"]).view(dt)

  def _imm(self, o:Imm, t:str):
    if o.bits:   # 0f / 0d: float bits
      if t in isa.FLOATS: return o.value
      return struct.unpack("<I" if o.bits == 32 else "<Q", struct.pack("<f" if o.bits == 32 else "<d", o.value))[0]
    if t == "f16": return np.uint16(o.value & 0xffff).view(np.float16)   # f16 immediates are written as 0x bits
    if t in isa.FLOATS: return float(o.value)
    w = isa.width(t)
    v = o.value & ((1 << w) - 1)
    return v - (1 << w) if t in isa.SIGNED and v >> (w - 1) else v

  def _symbol(self, name:str) -> int:
    if name in self.k.shared: return self.k.shared[name][0]
    if name in self.k.local: return self.k.local[name][0]
    if name in self.global_addr: return self.global_addr[name]
    if name in self.param_offsets: return self.param_offsets[name]
    raise KeyError(name)

  @staticmethod
  def window(space:str) -> int:
    """Where a state space's addresses start in the generic address space."""
    return WINDOWS.get(space, 0)

  def write(self, o, values:np.ndarray, t:str):
    """Write `values` of instruction type `t` to register `o` in the executing lanes. A register wider than the type gets the
    value sign-extended for a signed type and zero-extended otherwise (PTX ISA, "Operand Size Exceeding Instruction-Type Size",
    destination operands: cvt.s8.s64 into an .s16 register, as tinygrad's renderer writes, reads back negative at .s16)."""
    if not isinstance(o, Reg) or o.name in self.special: raise PTXError(0, str(o), "not a writable register")
    cur = self.regs[o.name]
    if cur.dtype == bool: new = np.asarray(values).astype(bool)
    elif t in isa.SIGNED: new = np.asarray(values).astype(isa.DTYPES[t]).astype(np.int64).view(np.uint64)
    else:
      w = isa.width(t)
      new = np.asarray(values).astype(isa.DTYPES[t]).view(isa.DTYPES[f"u{w}"] if t != "pred" else np.uint8).astype(np.uint64)
    self.regs[o.name] = np.where(self.mask, new, cur)

  def set_carry(self, carry:np.ndarray):
    """CC.CF of the executing lanes."""
    self.carry = np.where(self.mask, carry, self.carry)

  # ---- memory ----
  def _address(self, a:Addr) -> np.ndarray:
    base = self.read(Reg(a.base), "u64") if a.base.startswith("%") else np.full(self.n, self._symbol(a.base), np.uint64)
    return base + np.uint64(a.offset & 0xffffffffffffffff)

  def load(self, space:str, a:Addr, t:str, count:int) -> list[np.ndarray]:
    nb, dt = isa.width(t) // 8, isa.DTYPES[t]
    addr, sel = self._address(a), np.nonzero(self.mask)[0]
    raw = np.zeros((self.n, nb * count), np.uint8)
    for sp, lanes, at in self._aligned(self._spaces(space, a, addr, sel), nb * count, False):
      if self.timer is not None: self.timer.access(sp, at, lanes, nb * count)
      if sp == "global": raw[lanes] = self.memory.gather(at, nb * count)
      elif sp == "param":
        blk = np.frombuffer(self.params, np.uint8)
        raw[lanes] = blk[at.astype(np.int64)[:, None] + np.arange(nb * count)]
      elif sp == "shared": raw[lanes] = self.shared[self.cta[lanes][:, None], self._index(self.shared, at, nb * count, sp)]
      elif sp == "local": raw[lanes] = self.local[lanes[:, None], self._index(self.local, at, nb * count, sp)]
      else: raise PTXError(0, sp, "state space not modelled")
    return [raw[:, i * nb:(i + 1) * nb].copy().view(dt).reshape(-1) for i in range(count)]

  def store(self, space:str, a:Addr, t:str, values:list[np.ndarray]):
    nb = isa.width(t) // 8
    addr, sel = self._address(a), np.nonzero(self.mask)[0]
    data = np.concatenate([np.asarray(v).astype(isa.DTYPES[t]).view(np.uint8).reshape(self.n, nb) for v in values], axis=1)
    for sp, lanes, at in self._aligned(self._spaces(space, a, addr, sel), data.shape[1], True):
      if self.timer is not None: self.timer.access(sp, at, lanes, data.shape[1])
      if sp == "global": self.memory.scatter(at, data[lanes])
      elif sp == "shared": self.shared[self.cta[lanes][:, None], self._index(self.shared, at, data.shape[1], sp)] = data[lanes]
      elif sp == "local": self.local[lanes[:, None], self._index(self.local, at, data.shape[1], sp)] = data[lanes]
      else: raise PTXError(0, sp, "state space not writable")

  def _spaces(self, space:str, a:Addr, addr:np.ndarray, sel:np.ndarray):
    """(space, lanes, addresses in that space) for an access at `a`; a generic access is split by the window each address is
    in, and .param storage the kernel declared itself (a call's arguments, emu.nv.ptx.inline_calls) is local memory."""
    if space == "param" and a.base in self.k.local: space = "local"
    if space != "generic":
      yield space, sel, addr[sel]
      return
    at = addr[sel]
    for sp in ("shared", "local"):
      base = np.uint64(WINDOWS[sp])
      inside = (at >= base) & (at < base + np.uint64(WINDOW_BYTES))
      if inside.any(): yield sp, sel[inside], at[inside] - base
      sel, at = sel[~inside], at[~inside]
    if len(sel): yield "global", sel, at

  @staticmethod
  def _aligned(parts, size:int, write:bool) -> list:
    """The (space, lanes, addresses) parts of an access, after checking that every address is a multiple of the access size
    (a vector's whole size: PTX ISA ld/st, "the address must be naturally aligned"); raises GPUMisalignedAccess before any part
    is read or written."""
    parts = list(parts)
    for sp, _, at in parts:
      if len(at) and (bad := at % np.uint64(size)).any(): raise GPUMisalignedAccess(int(at[np.nonzero(bad)[0][0]]), size, write, sp)
    return parts

  def _index(self, store:np.ndarray, addr:np.ndarray, nbytes:int, space:str) -> np.ndarray:
    """Byte indices into a per-CTA (shared) or per-thread (local) store; past its end is a memory fault."""
    if len(addr) and int(addr.max()) + nbytes > store.shape[1]:
      have = self.k.shared_bytes if space == "shared" else self.k.local_bytes
      raise GPUMemoryFault(int(addr.max()), False, detail=f"{space} memory access past the {have} bytes declared")
    return addr.astype(np.int64)[:, None] + np.arange(nbytes)

  # ---- control ----
  def branch(self, label:str): self.target = label
  def exit(self): self.exiting = True
  def barrier(self): pass   # lowest-PC-first order already holds every lane at the barrier until all arrive (module docstring)

TRACE = os.environ.get("EMU_NV_TRACE", "") not in ("", "0")   # one stderr line per executed instruction
# the generic address space: shared and local addresses are offsets in these windows (tinygrad's NV runtime sets the same
# ones with SET_SHADER_SHARED/LOCAL_MEMORY_WINDOW); everything else is global
WINDOWS = {"shared": 0x7294_0000_0000, "local": 0x7293_0000_0000}
WINDOW_BYTES = 1 << 32
BATCH_LANES = 1 << 16   # lanes run together: whole CTAs up to this many threads (CTAs share nothing but global memory)
WATCHDOG_EVERY = 32     # lockstep steps between watchdog checks (and one, reading the clock, before every batch)
# launch limits of every board modelled (CUDA C++ Programming Guide, "Features and Technical Specifications", compute
# capability 5.0 and later): grid x up to 2^31 - 1, y and z up to 65535; a block of up to 1024 threads, x and y up to 1024, z 64
MAX_GRID, MAX_BLOCK, MAX_BLOCK_THREADS = (2**31 - 1, 65535, 65535), (1024, 1024, 64), 1024

def check_launch(grid:tuple, block:tuple):
  """GPUInvalidDispatch for a launch past the hardware's limits (or with an empty grid or block), which it refuses to start."""
  for what, dims, limit in (("grid", grid, MAX_GRID), ("block", block, MAX_BLOCK)):
    for axis, v, top in zip("xyz", dims, limit):
      if not 1 <= v <= top: raise GPUInvalidDispatch(f"invalid launch: {what} {tuple(dims)}: {what} {axis} = {v} is outside 1..{top}")
  if math.prod(block) > MAX_BLOCK_THREADS:
    raise GPUInvalidDispatch(f"invalid launch: a block of {math.prod(block)} threads {tuple(block)} exceeds {MAX_BLOCK_THREADS}")

def run(kernel:Kernel, grid:tuple, block:tuple, args:list[int], memory:MemoryMap, watchdog:Watchdog|None=None, board=None) -> LaunchStats:
  """Run `kernel` over grid x block threads with `args` (one int per .param: addresses or values), in batches of whole CTAs.
  Raises GPUMemoryFault (naming the instruction) for an access outside `memory`, and GPUHangFault when `watchdog` (by default
  one armed now with the EMU_WATCHDOG_S / EMU_WATCHDOG budgets, counted in warp-instructions) says the launch ran too long or
  was cancelled. With a `board` (emu.nv.boards) the timing model runs alongside and `LaunchStats.cycles` is its estimate."""
  grid, block = tuple(int(v) for v in grid) + (1,) * (3 - len(grid)), tuple(int(v) for v in block) + (1,) * (3 - len(block))
  check_launch(grid, block)
  per_cta, nctas = math.prod(block), math.prod(grid)
  step = max(1, BATCH_LANES // per_cta)
  stats = LaunchStats(per_cta * nctas, nctas * -(-per_cta // 32), ctas=nctas)
  if watchdog is None:
    watchdog = Watchdog()
    watchdog.arm()
  timer = Timer(kernel, board, block) if board is not None else None
  mapped = _map_globals(kernel, memory)
  try:
    for first in range(0, nctas, step):
      watchdog.check(stats.warp_instructions, 0, long=True)   # a grid of many short CTAs can run for minutes in few steps per batch
      _run_batch(kernel, _Lanes(kernel, grid, block, args, memory, range(first, min(first + step, nctas)), timer), stats, watchdog)
  finally:
    for addr in mapped: memory.unmap(addr)
  if timer is not None: stats.cycles = timer.cycles()
  return stats

def _map_globals(kernel:Kernel, memory:MemoryMap) -> list[int]:
  """Map the module's .global variables (their bytes live with the parsed module, so values persist across launches) for one
  launch; returns the addresses mapped."""
  out = []
  for name, data in kernel.globals.items():
    arr = np.frombuffer(data, np.uint8)
    if arr.size and memory.find(arr.ctypes.data) is None:
      memory.map(arr.ctypes.data, arr.size, f"ptx .global {name}", backing=arr)
      out.append(arr.ctypes.data)
  return out

def _trace(kernel:Kernel, inst, at:np.ndarray):
  print(f"[nv] {kernel.name} {inst} lanes={int(at.sum())}", file=sys.stderr)

def _run_batch(kernel:Kernel, st:_Lanes, stats:LaunchStats, watchdog:Watchdog):
  pc, live, steps = np.zeros(st.n, np.int64), np.ones(st.n, bool), 0
  body, timer = kernel.body, st.timer
  if timer is not None: timer.begin(st.local_warp, st.nwarps)
  while live.any():
    p = int(pc[live].min())
    at = live & (pc == p)
    if p >= len(body):
      live &= ~at
      continue
    inst = body[p]
    exe = at
    if inst.guard is not None:
      g = st.regs[inst.guard[0]]
      exe = at & (~g if inst.guard[1] else g)
    st.mask, st.target, st.exiting = exe, None, False
    if exe.any():
      try: isa.OPS[inst.op].fn(st, inst, isa.instruction_type(inst))
      except GPUMemoryFault as e:
        if e.pc is not None: raise
        raise GPUMemoryFault(e.addr, e.write, pc=p, inst=f"{kernel.name}: {inst}", detail=e.detail) from None
      except GPUMisalignedAccess as e:
        if e.pc is not None: raise
        raise GPUMisalignedAccess(e.addr, e.size, e.write, e.space, pc=p, inst=f"{kernel.name}: {inst}") from None
      except GPUTrapFault as e: raise GPUTrapFault(p, e.trap_id, what=f"{kernel.name}: {e.what}") from None
      except (GPUFault, PTXError): raise
      except Exception as e: raise GPUEmulatorError(p, str(inst), None, e) from e   # an emulator bug: named, the host survives
    pc[at] += 1
    if st.target is not None: pc[exe] = kernel.labels[st.target]
    if st.exiting: live &= ~exe
    steps += 1
    stats.steps += 1
    all_lanes = bool(at.all())
    stats.warp_instructions += st.nwarps if all_lanes else len(np.unique(st.warp[at]))
    if timer is not None: timer.step(p, at, all_lanes, inst.op == "bar")
    if TRACE: _trace(kernel, inst, at)
    if steps % WATCHDOG_EVERY == 0: watchdog.check(stats.warp_instructions, p)
  if timer is not None: timer.end()
