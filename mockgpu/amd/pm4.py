"""The PM4 command processor of a compute queue (MEC): type-3 packets from the ring and from indirect buffers.

Register addresses and field layouts come from tinygrad's own register modules for the GC version the GPU publishes, so the
processor decodes exactly what tinygrad encodes. DISPATCH_DIRECT turns the COMPUTE_* registers into an `emu.amd.api.Dispatch`
and hands it to the GPU. Emulated memory is coherent, so cache actions (ACQUIRE_MEM, EVENT_WRITE flushes, RELEASE_MEM cache
flags) change no data; ACQUIRE_MEM's and RELEASE_MEM's invalidations empty the performance counters' cache model.
"""
from __future__ import annotations
import collections, functools, struct
from typing import TYPE_CHECKING, Callable
from emu.amd.api import Dispatch, DispatchStats, GPUMemoryFault
from mockgpu.engine import Engine, GPUContext, PacketError, Stall
from mockgpu.amd.registers import CMP_NAMES, ComputeRegs, compare
if TYPE_CHECKING:
  from mockgpu.amd.pmc import PerfCounters
  from mockgpu.amd.sqtt import ThreadTrace

# PM4 type-3 opcodes (tinygrad.runtime.autogen.am.pm4_nv / pm4_soc15 PACKET3_*)
NOP, DISPATCH_DIRECT, PRED_EXEC, WAIT_REG_MEM, INDIRECT_BUFFER, COPY_DATA = 0x10, 0x15, 0x23, 0x3C, 0x3F, 0x40
EVENT_WRITE, RELEASE_MEM, ACQUIRE_MEM, SET_SH_REG, SET_UCONFIG_REG = 0x46, 0x49, 0x58, 0x76, 0x79
SH_REG_BASE, UCONFIG_REG_BASE = 0x2c00, 0xc000
SH_REG_COUNT, UCONFIG_REG_COUNT = 0x400, 0x10000   # registers each SET_* packet's offset can reach (PACKET3_SET_SH_REG_START..END; a
                                                   # 16-bit offset for UCONFIG, the range tinygrad's wreg uses)
# cache-action bits (tinygrad.runtime.autogen.am.pm4_nv / pm4_soc15): ACQUIRE_MEM GCR_CNTL (RDNA) and CP_COHER_CNTL (gfx9), RELEASE_MEM
GCR_GL2_INV, GCR_GL1_INV, GCR_GLV_INV, GCR_GLK_INV = 1 << 14, 1 << 9, 1 << 8, 1 << 7
TC_ACTION, TCL1_ACTION, KCACHE_ACTION = 1 << 23, 1 << 22, 1 << 27
RELEASE_GL2_INV = 1 << 20
MAX_IB_PACKETS = 1 << 20   # packets executed in indirect buffers per ring packet before the chain is declared a loop
NAMES = {NOP: "NOP", DISPATCH_DIRECT: "DISPATCH_DIRECT", PRED_EXEC: "PRED_EXEC", WAIT_REG_MEM: "WAIT_REG_MEM", INDIRECT_BUFFER: "INDIRECT_BUFFER",
         COPY_DATA: "COPY_DATA", EVENT_WRITE: "EVENT_WRITE", RELEASE_MEM: "RELEASE_MEM", ACQUIRE_MEM: "ACQUIRE_MEM", SET_SH_REG: "SET_SH_REG",
         SET_UCONFIG_REG: "SET_UCONFIG_REG"}
MAX_IB_DEPTH = 4
# packets that write no memory the host may wait on and raise no interrupt: register writes (one that starts a thread trace writes
# only the trace buffer), jumps, NOPs, cache actions, EVENT_WRITE (its events here are flushes: no end-of-pipe write) and a
# WAIT_REG_MEM that passed. The host is not woken after one (Engine.quiet)
QUIET = frozenset({NOP, PRED_EXEC, INDIRECT_BUFFER, ACQUIRE_MEM, SET_SH_REG, SET_UCONFIG_REG, EVENT_WRITE, WAIT_REG_MEM})

class PM4Engine(Engine):
  """A PM4 compute queue. `dispatch(Dispatch) -> DispatchStats` runs kernels (the emulator behind the GPU); `sqtt` is the GPU's
  thread-trace unit (mockgpu.amd.sqtt) and `pmc` its performance counters (mockgpu.amd.pmc): each sees every register access
  and runs the dispatches (None: no such unit)."""
  name = "PM4"
  unit = 4

  def __init__(self, gpu:GPUContext, ring_addr:int, ring_size:int, rptr_addr:int, wptr_addr:int, regs:ComputeRegs,
               dispatch:Callable[..., DispatchStats], sqtt:ThreadTrace|None=None, pmc:PerfCounters|None=None):
    super().__init__(gpu, ring_addr, ring_size, rptr_addr, wptr_addr)
    self.regs, self.dispatch, self.sqtt, self.pmc = regs, dispatch, sqtt, pmc
    self.reg: dict[int, int] = {}
    self._next_ib: list[int] | None = None
    self.ibs: list[list[int]] = []  # stack of [addr, size_dw, pos_dw] for the indirect buffers being executed
    self.ib_packets = 0             # packets executed in indirect buffers since the last ring packet
    self.executed: collections.Counter[str] = collections.Counter()  # packets executed, by name (NAMES)
    self.handlers = {NOP: self._nop, SET_SH_REG: self._set_sh, SET_UCONFIG_REG: self._set_uconfig, ACQUIRE_MEM: self._acquire_mem,
                     EVENT_WRITE: self._nop, RELEASE_MEM: self._release_mem, WAIT_REG_MEM: self._wait_reg_mem, DISPATCH_DIRECT: self._dispatch,
                     INDIRECT_BUFFER: self._indirect_buffer, COPY_DATA: self._copy_data, PRED_EXEC: self._pred_exec}

  def pending(self) -> bool: return self.dead is None and (bool(self.ibs) or self.rptr < self.wptr)

  def _where(self) -> str:
    return f"IB {self.ibs[-1][0]:#x} dword {self.ibs[-1][2]}" if self.ibs else f"ring offset {(self.rptr * 4) % self.ring_size:#x}"

  def _fetch(self, i:int) -> int:
    """Dword i of the current stream (the innermost IB, or the ring), relative to the current packet."""
    if self.ibs:
      addr, size, pos = self.ibs[-1]
      if pos + i >= size: raise PacketError(f"PM4 packet runs past the end of {self._where()} (IB size {size} dwords)")
      return self.read32(addr + (pos + i) * 4)
    self.need(i + 1, "PM4 packet")
    return self.ring_dword(self.rptr + i)

  def _words(self, i:int, n:int) -> list[int]:
    """Dwords i .. i + n - 1 of the current stream (as _fetch; on the ring the caller has checked that they are published), in
    one read where the memory allows (an IB across two mappings is read dword by dword, and a fault names the first dword that
    is not mapped)."""
    if not self.ibs: return self.ring_words(self.rptr + i, n)
    addr, size, pos = self.ibs[-1]
    if pos + i + n > size: raise PacketError(f"PM4 packet runs past the end of {self._where()} (IB size {size} dwords)")
    try: return list(struct.unpack(f"<{n}I", self.gpu.memory.read(addr + (pos + i) * 4, 4 * n)))
    except GPUMemoryFault: return [self._fetch(i + k) for k in range(n)]

  def _advance(self, n:int):
    if self.ibs:
      self.ibs[-1][2] += n
      while self.ibs and self.ibs[-1][2] >= self.ibs[-1][1]: self.ibs.pop()
    else: self.rptr += n

  def step(self):
    where = self._where()
    self.packet = f"packet header at {where}"
    if not self.ibs: self.ib_packets = 0
    elif (n := self.ib_packets + 1) > MAX_IB_PACKETS:
      raise PacketError(f"PM4: {n - 1} packets executed in indirect buffers since the last ring packet, still at {where}: "
                        "an INDIRECT_BUFFER chain that never returns (a loop)")
    else: self.ib_packets = n
    hdr = self._fetch(0)
    kind = hdr >> 30
    if kind == 2:   # type-2 filler
      self.quiet = True
      return self._advance(1)
    if kind != 3: raise PacketError(f"PM4: malformed packet header {hdr:#010x} (type {kind}) at {where}")
    op, count = (hdr >> 8) & 0xff, ((hdr >> 16) & 0x3fff) + 1
    if (handler:=self.handlers.get(op)) is None: raise PacketError(f"PM4: unsupported opcode {op:#x} (header {hdr:#010x}) at {where}")
    self.packet = f"{NAMES[op]} at {where}"
    if not self.ibs: self.need(1 + count, f"PM4 {NAMES[op]} ({1 + count} dwords)")
    body = self._words(1, count)
    self._next_ib: list[int] | None = None
    skip = handler(body, where)  # may raise Stall: nothing has advanced yet, the packet is retried later
    self._advance(1 + count + (skip or 0))
    self.executed[NAMES[op]] += 1
    self.quiet = op in QUIET
    if self._next_ib is not None: self.ibs.append(self._next_ib)

  # ---- packets ----
  def _nop(self, body, where): pass

  def _write_reg(self, addr:int, value:int):
    self.reg[addr] = value
    if self.sqtt is not None: self.sqtt.write_reg(addr, value)
    if self.pmc is not None: self.pmc.write_reg(addr, value)

  def _read_reg(self, addr:int) -> int:
    """A register as packets read it: the thread-trace unit's and the counters' own registers, else the last PM4 write
    (unmodelled ones read 0)."""
    for unit in (self.sqtt, self.pmc):
      if unit is not None and (v := unit.read_reg(addr)) is not None: return v
    return self.reg.get(addr, 0)

  def _set_regs(self, base:int, limit:int, body:list[int], where:str):
    if body[0] + len(body) - 1 > limit:
      raise PacketError(f"PM4: SET_{'SH' if base == SH_REG_BASE else 'UCONFIG'}_REG of {len(body) - 1} registers at offset {body[0]:#x} "
                        f"runs past the {limit:#x} registers it can reach (from {base:#x}) at {where}")
    for i, v in enumerate(body[1:]): self._write_reg(base + body[0] + i, v)

  def _set_sh(self, body, where): self._set_regs(SH_REG_BASE, SH_REG_COUNT, body, where)
  def _set_uconfig(self, body, where): self._set_regs(UCONFIG_REG_BASE, UCONFIG_REG_COUNT, body, where)

  def _acquire_mem(self, body, where):
    """Cache invalidations (memory is coherent here; only the performance counters' cache model has state to drop): GCR_CNTL
    (RDNA, the last dword) or CP_COHER_CNTL (gfx9, the first)."""
    if self.pmc is None: return
    if self.regs.gfx9:
      if body: self.pmc.invalidate(l2=bool(body[0] & TC_ACTION), vector=bool(body[0] & TCL1_ACTION), scalar=bool(body[0] & KCACHE_ACTION))
    elif len(body) >= 7:
      f = body[6]
      self.pmc.invalidate(l2=bool(f & GCR_GL2_INV), vector=bool(f & (GCR_GLV_INV | GCR_GL1_INV)), scalar=bool(f & GCR_GLK_INV))

  def _release_mem(self, body, where):
    if len(body) < 6: raise PacketError(f"PM4: RELEASE_MEM with {len(body)} payload dwords at {where}")
    if self.pmc is not None and not self.regs.gfx9 and body[0] & RELEASE_GL2_INV:   # a cache flush at end of pipe
      self.pmc.invalidate(l2=True, vector=True, scalar=False)
    data_sel, int_sel = (body[1] >> 29) & 7, (body[1] >> 24) & 7
    addr, data = body[2] | (body[3] << 32), body[4] | (body[5] << 32)
    ctxid = body[6] if len(body) > 6 else 0
    if data_sel == 1: self.write32(addr, data)
    elif data_sel == 2: self.write64(addr, data)
    elif data_sel == 3: self.write64(addr, self.gpu.clock.now())
    elif data_sel != 0: raise PacketError(f"PM4: RELEASE_MEM DATA_SEL={data_sel} is not emulated at {where}")
    if int_sel in (1, 2, 3, 4): self.gpu.interrupt(self, "CP", ctxid)

  def _wait_reg_mem(self, body, where):
    info, lo, hi, ref, mask = body[0], body[1], body[2], body[3], body[4]
    func, mem_space, operation = info & 7, (info >> 4) & 3, (info >> 6) & 3
    if mem_space == 1: value = self.read32((lo & ~3) | (hi << 32))
    elif operation == 1: return  # write-wait-write register handshake (the HDP flush): the flush completes at once
    else: value = self._read_reg(lo)
    if not compare(func, value & mask, ref & mask):
      raise Stall(f"{'mem' if mem_space == 1 else 'reg'}[{(lo & ~3) | (hi << 32) if mem_space == 1 else lo:#x}] & {mask:#x} "
                  f"{CMP_NAMES[func & 7]} {ref & mask:#x} (reads {value & mask:#x})")

  def _dispatch(self, body, where):
    r, a = self.reg, self.regs.addr
    get = lambda n: r.get(a[n], 0)
    rsrc2 = get("PGM_RSRC2")
    user_sgprs = [r.get(a["USER_DATA_0"] + i, 0) for i in range((rsrc2 >> 1) & 0x1f)]
    num_thread = lambda n: self.regs.gc.regCOMPUTE_NUM_THREAD_X.decode(get(n))["num_thread_full"]
    wavesize = self.regs.gc.regCOMPUTE_TMPRING_SIZE.decode(get("TMPRING_SIZE"))["wavesize"]
    d = Dispatch(code_addr=((get("PGM_HI") << 32) | get("PGM_LO")) << 8, grid=(body[0], body[1], body[2]),
                 workgroup=(num_thread("NUM_THREAD_X"), num_thread("NUM_THREAD_Y"), num_thread("NUM_THREAD_Z")), user_sgprs=user_sgprs,
                 rsrc1=get("PGM_RSRC1"), rsrc2=rsrc2, rsrc3=get("PGM_RSRC3"), wave32=not self.regs.wave64_only and bool(body[3] & (1 << 15)),
                 scratch_base=((get("DISPATCH_SCRATCH_BASE_HI") << 32) | get("DISPATCH_SCRATCH_BASE_LO")) << 8,
                 scratch_per_lane=wavesize * self.regs.scratch_granule // 64, grid_offset=(get("START_X"), get("START_Y"), get("START_Z")))
    run = self.dispatch if self.pmc is None else functools.partial(self.pmc.dispatch, self.dispatch)   # (counted inside the trace)
    if self.sqtt is not None: self.sqtt.dispatch(run, d)
    else: run(d)

  def _indirect_buffer(self, body, where):
    addr, size = (body[0] & ~3) | ((body[1] & 0xffff) << 32), body[2] & 0xfffff
    if len(self.ibs) >= MAX_IB_DEPTH: raise PacketError(f"PM4: INDIRECT_BUFFER nested deeper than {MAX_IB_DEPTH} at {where}")
    if body[2] & (1 << 23) and size: self._next_ib = [addr, size, 0]  # entered once the IB packet itself is consumed

  def _copy_data(self, body, where):
    ctl, src_sel, dst_sel, is64 = body[0], body[0] & 0xf, (body[0] >> 8) & 0xf, bool(body[0] & (1 << 16))
    src = body[1] | (body[2] << 32)
    if src_sel == 5: value = src  # immediate
    elif src_sel in (1, 2): value = self.read64(src) if is64 else self.read32(src)
    elif src_sel in (0, 4): value = self._read_reg(body[1])  # memory-mapped / perf-counter register
    elif src_sel == 9: value = self.gpu.clock.now()
    else: raise PacketError(f"PM4: COPY_DATA SRC_SEL={src_sel} (control {ctl:#x}) is not emulated at {where}")
    dst = body[3] | (body[4] << 32)
    if dst_sel == 0: self._write_reg(body[3], value & 0xffffffff)
    elif dst_sel in (1, 2, 5): (self.write64 if is64 else self.write32)(dst, value)
    else: raise PacketError(f"PM4: COPY_DATA DST_SEL={dst_sel} (control {ctl:#x}) is not emulated at {where}")

  def _pred_exec(self, body, where):
    return 0 if (body[0] >> 24) & 1 else body[0] & 0x3fff  # one XCC: execute the block when XCC 0 is selected, else skip it
