"""PM4 and SDMA engines on a bare MemoryMap: packets are built by hand from the PM4/SDMA encodings; expected values by hand."""
import ctypes, struct
import numpy as np
import pytest
from emu.amd.api import Dispatch, GPUHangFault
from emu.common.memory import MemoryMap
from mockgpu.clock import DeviceClock
from mockgpu.engine import GPUContext, Scheduler
from mockgpu.amd.pm4 import PM4Engine
from mockgpu.amd.registers import ComputeRegs
from mockgpu.amd.sdma import SDMAEngine

def pkt3(op:int, *body:int) -> list[int]: return [(3 << 30) | ((len(body) - 1) << 16) | (op << 8), *body]

class FakeGPU(GPUContext):
  """Memory at a numpy buffer's own address, interrupts and faults recorded."""
  def __init__(self, size:int=1 << 16):
    self.buf = np.zeros(size, dtype=np.uint8)
    self.base = self.buf.ctypes.data
    self.memory, self.clock = MemoryMap(), DeviceClock()
    self.memory.map(self.base, size, "test")
    self.interrupts, self.faults, self.dispatches = [], [], []
  def interrupt(self, engine, source, ctxid): self.interrupts.append((source, ctxid))
  def on_fault(self, engine, err): self.faults.append(err)
  def u32(self, off:int) -> int: return struct.unpack_from("<I", self.buf, off)[0]
  def u64(self, off:int) -> int: return struct.unpack_from("<Q", self.buf, off)[0]
  def put(self, off:int, dwords:list[int]): self.buf[off:off+4*len(dwords)] = np.array(dwords, dtype=np.uint32).view(np.uint8)

RING, RPTR, WPTR = 0x1000, 0x80, 0x40

def pm4(gpu:FakeGPU) -> PM4Engine:
  e = PM4Engine(gpu, gpu.base + RING, 0x1000, gpu.base + RPTR, gpu.base + WPTR, regs=ComputeRegs((11, 0, 0)),
                dispatch=lambda d: gpu.dispatches.append(d))
  return e

def submit(gpu:FakeGPU, eng, sched:Scheduler, dwords:list[int]):
  start = eng.wptr * eng.unit
  for i, d in enumerate(dwords): gpu.put(RING + (start + i * 4) % 0x1000, [d])
  eng.doorbell(eng.wptr + len(dwords) * 4 // eng.unit)
  sched.kick(eng)
  assert sched.wait_idle(10)   # the engines run on the scheduler's thread

def test_pm4_dispatch_built_from_compute_registers():
  gpu, sched = FakeGPU(), Scheduler()
  eng = pm4(gpu)
  sched.add(eng)
  code = 0x7f1234567800
  sh = lambda reg, *v: pkt3(0x76, reg - 0x2c00, *v)
  submit(gpu, eng, sched, sh(0x2e0c, (code >> 8) & 0xffffffff, code >> 40) + sh(0x2e12, 0x11, 2 << 1 | 1 << 7) + sh(0x2e28, 5) +
         sh(0x2e18, 3 << 12) + sh(0x2e10, 0x100, 0) + sh(0x2e40, 0xaaaa, 0xbbbb) + sh(0x2e04, 0, 0, 0, 64, 2, 1) +
         pkt3(0x15, 4, 5, 6, 1 | 1 << 15))
  assert len(gpu.dispatches) == 1 and not gpu.faults
  d: Dispatch = gpu.dispatches[0]
  assert d.code_addr == code and d.grid == (4, 5, 6) and d.workgroup == (64, 2, 1) and d.user_sgprs == [0xaaaa, 0xbbbb]
  assert d.rsrc1 == 0x11 and d.rsrc2 == (2 << 1 | 1 << 7) and d.rsrc3 == 5 and d.wave32
  assert d.scratch_base == 0x10000 and d.scratch_per_lane == 3 * 256 // 64
  assert gpu.u64(RPTR) == eng.rptr == eng.wptr

def test_pm4_release_mem_wait_and_interrupt():
  gpu, sched = FakeGPU(), Scheduler()
  eng = pm4(gpu)
  sched.add(eng)
  sig, ts = gpu.base + 0x200, gpu.base + 0x208
  rel = lambda addr, val, data_sel, int_sel, ctx=0: pkt3(0x49, 0, data_sel << 29 | int_sel << 24, addr & 0xffffffff, addr >> 32,
                                                     val & 0xffffffff, val >> 32, ctx)
  wait = pkt3(0x3C, 5 | 1 << 4, (gpu.base + 0x300) & 0xffffffff, (gpu.base + 0x300) >> 32, 7, 0xffffffff, 4)  # mem >= 7
  gpu.clock.ticks = 1000
  submit(gpu, eng, sched, wait + rel(sig, 0x1_0000_0005, 2, 0) + rel(ts, 0, 3, 0) + rel(sig + 0x20, 9, 1, 2, ctx=42))
  assert eng.stalled and gpu.u64(0x200) == 0       # blocked on the wait: nothing after it ran
  gpu.put(0x300, [7])
  sched.poll()                                     # host activity gives the stalled queue another try
  assert sched.wait_idle(10)
  assert not eng.stalled and gpu.u64(0x200) == 0x1_0000_0005 and gpu.u64(0x208) > 1000
  assert gpu.u32(0x220) == 9 and gpu.interrupts == [("CP", 42)]

def test_pm4_indirect_buffer_and_bad_packet():
  gpu, sched = FakeGPU(), Scheduler()
  eng = pm4(gpu)
  sched.add(eng)
  ib = pkt3(0x49, 0, 1 << 29, (gpu.base + 0x400) & 0xffffffff, (gpu.base + 0x400) >> 32, 77, 0, 0)
  gpu.put(0x3000, ib)
  ib_addr = gpu.base + 0x3000
  submit(gpu, eng, sched, pkt3(0x3F, ib_addr & 0xffffffff, ib_addr >> 32, len(ib) | 1 << 23) + pkt3(0x10, 0))
  assert gpu.u32(0x400) == 77 and not eng.ibs and not gpu.faults
  submit(gpu, eng, sched, pkt3(0x99, 0))
  assert eng.dead is not None and "opcode 0x99" in str(eng.dead) and "ring offset 0x" in str(eng.dead) and gpu.faults

def test_sdma_copy_fence_trap_poll_timestamp_write():
  gpu, sched = FakeGPU(), Scheduler()
  eng = SDMAEngine(gpu, gpu.base + RING, 0x1000, gpu.base + RPTR, gpu.base + WPTR)
  sched.add(eng)
  src, dst, b = 0x4000, 0x6000, gpu.base
  gpu.buf[src:src+100] = np.arange(100, dtype=np.uint8)
  lohi = lambda a: [a & 0xffffffff, a >> 32]
  copy = [1, 99, 0, *lohi(b + src), *lohi(b + dst)]
  poll = [8 | 5 << 28 | 1 << 31, *lohi(b + 0x300), 3, 0xffffffff, 0]
  submit(gpu, eng, sched, copy + [5, *lohi(b + 0x200), 11] + [6, 5] + poll + [13 | 2 << 8, *lohi(b + 0x208)] + [2, *lohi(b + 0x210), 1, 8, 9] + [0])
  assert (gpu.buf[dst:dst+100] == np.arange(100)).all() and gpu.u32(0x200) == 11 and gpu.interrupts == [("SDMA", 5)]
  assert eng.stalled and gpu.u64(RPTR) == 7 * 4 + 4 * 4 + 2 * 4  # byte read pointer stops at the unsatisfied poll
  gpu.put(0x300, [3])
  sched.poll()
  assert sched.wait_idle(10)
  assert gpu.u64(0x208) > 0 and gpu.u32(0x210) == 8 and gpu.u32(0x214) == 9 and gpu.u64(RPTR) == eng.wptr

def test_sdma_copy_out_of_bounds_faults_without_touching_memory():
  gpu, sched = FakeGPU(), Scheduler()
  eng = SDMAEngine(gpu, gpu.base + RING, 0x1000, gpu.base + RPTR, gpu.base + WPTR)
  sched.add(eng)
  far = gpu.base + len(gpu.buf) - 16
  submit(gpu, eng, sched, [1, 63, 0, far & 0xffffffff, far >> 32, (gpu.base + 0x5000) & 0xffffffff, (gpu.base + 0x5000) >> 32])
  # the fault names the first byte no mapping holds (the buffer's end), as a page fault names the page that missed
  assert eng.dead is not None and len(gpu.faults) == 1 and gpu.faults[0].addr == gpu.base + len(gpu.buf)
  assert not gpu.buf[0x5000:0x5040].any()

def test_devwrite_proxy_sees_doorbell_stores_and_stays_a_memoryview():
  from mockgpu import devwrite
  mem = (ctypes.c_uint8 * 64)()
  seen = []
  rng = devwrite.watch(devwrite.WatchedRange(ctypes.addressof(mem), 64, lambda off, fmt, v: seen.append((off, fmt, v))))
  try:
    mv = devwrite.memoryview((ctypes.c_uint8 * 16).from_address(ctypes.addressof(mem) + 8)).cast("B").cast("Q")
    assert isinstance(mv, devwrite.memoryview) and isinstance(memoryview(b"x"), devwrite.memoryview)
    mv[1] = 0x1122334455
    assert seen == [(16, "Q", 0x1122334455)] and mv[1] == 0x1122334455 and ctypes.c_uint64.from_buffer(mem, 16).value == 0x1122334455
    plain = devwrite.memoryview((ctypes.c_uint8 * 8)())
    assert type(plain) is memoryview
    with pytest.raises(IndexError): mv[2] = 0
  finally: devwrite.unwatch(rng)

# ---- malformed streams: each ends in a PacketError naming the engine, the packet and its offset, and executes nothing of it ----
def test_pm4_packet_longer_than_the_published_ring_is_an_error_and_runs_nothing():
  gpu, sched = FakeGPU(), Scheduler()
  eng = pm4(gpu)
  sched.add(eng)
  rel = pkt3(0x49, 0, 1 << 29, (gpu.base + 0x400) & 0xffffffff, (gpu.base + 0x400) >> 32, 77, 0, 0)   # 8 dwords
  for i, d in enumerate(rel): gpu.put(RING + 4 * i, [d])
  eng.doorbell(3)   # the host published only the first 3 dwords
  sched.kick(eng)
  assert sched.wait_idle(10)
  assert eng.dead is not None and "truncated packet" in str(eng.dead) and "RELEASE_MEM" in str(eng.dead) and "ring offset 0x0" in str(eng.dead)
  assert gpu.u32(0x400) == 0 and gpu.faults

def test_sdma_nop_longer_than_the_published_ring_is_an_error_and_the_fence_after_it_does_not_run_silently():
  gpu, sched = FakeGPU(), Scheduler()
  eng = SDMAEngine(gpu, gpu.base + RING, 0x1000, gpu.base + RPTR, gpu.base + WPTR)
  sched.add(eng)
  b = gpu.base
  submit(gpu, eng, sched, [0x3fff << 16] + [5, (b + 0x200) & 0xffffffff, (b + 0x200) >> 32, 11])   # NOP claiming 0x4000 dwords, FENCE
  assert eng.dead is not None and "NOP" in str(eng.dead) and "ring offset 0x0" in str(eng.dead) and eng.rptr <= eng.wptr
  assert gpu.u32(0x200) == 0

def test_sdma_write_cut_by_the_write_pointer_moves_nothing():
  gpu, sched = FakeGPU(), Scheduler()
  eng = SDMAEngine(gpu, gpu.base + RING, 0x1000, gpu.base + RPTR, gpu.base + WPTR)
  sched.add(eng)
  b = gpu.base + 0x300
  pkt = [2, b & 0xffffffff, b >> 32, 3, 1, 2, 3, 4]   # WRITE of 4 dwords: 8 dwords in all
  for i, d in enumerate(pkt): gpu.put(RING + 4 * i, [d])
  eng.doorbell(6 * 4)   # the last two data dwords are not published
  sched.kick(eng)
  assert sched.wait_idle(10)
  assert eng.dead is not None and "WRITE" in str(eng.dead) and "truncated" in str(eng.dead) and not gpu.buf[0x300:0x310].any()

def test_pm4_register_write_outside_the_set_sh_reg_window_is_an_error():
  gpu, sched = FakeGPU(), Scheduler()
  eng = pm4(gpu)
  sched.add(eng)
  submit(gpu, eng, sched, pkt3(0x76, 0x3fffff00, 1))
  assert eng.dead is not None and "SET_SH_REG" in str(eng.dead) and "0x3fffff00" in str(eng.dead) and not eng.reg

def test_pm4_indirect_buffer_that_chains_to_itself_ends_in_bounded_time(monkeypatch):
  import mockgpu.amd.pm4 as pm4_mod
  monkeypatch.setattr(pm4_mod, "MAX_IB_PACKETS", 5000)
  gpu, sched = FakeGPU(), Scheduler()
  eng = pm4(gpu)
  sched.add(eng)
  ib_addr = gpu.base + 0x3000
  ib = pkt3(0x10, 0) + pkt3(0x3F, ib_addr & 0xffffffff, ib_addr >> 32, 6 | 1 << 23)   # a NOP, then the IB itself again (6 dwords)
  gpu.put(0x3000, ib)
  submit(gpu, eng, sched, pkt3(0x3F, ib_addr & 0xffffffff, ib_addr >> 32, len(ib) | 1 << 23))
  assert eng.dead is not None and "never returns" in str(eng.dead) and f"IB {ib_addr:#x}" in str(eng.dead)

def test_pm4_packet_memory_fault_names_the_packet_and_its_offset():
  gpu, sched = FakeGPU(), Scheduler()
  eng = pm4(gpu)
  sched.add(eng)
  far = gpu.base + (1 << 40)
  submit(gpu, eng, sched, pkt3(0x10, 0) + pkt3(0x49, 0, 1 << 29, far & 0xffffffff, far >> 32, 1, 0, 0))
  err = eng.dead
  assert err is not None and err.addr == far and "RELEASE_MEM at ring offset 0x8" in str(err)

def test_abort_resets_a_queue_whose_dispatch_is_running():
  import threading
  cancelled, started = threading.Event(), threading.Event()
  class Cancellable(FakeGPU):
    def cancel(self, reason): cancelled.set()
  gpu, sched = Cancellable(), Scheduler()
  def dispatch(d):   # a dispatch that runs until the GPU is told to stop it, as emu.amd's watchdog does
    started.set()
    assert cancelled.wait(10)
    raise GPUHangFault("was reset: test", 0)
  eng = PM4Engine(gpu, gpu.base + RING, 0x1000, gpu.base + RPTR, gpu.base + WPTR, regs=ComputeRegs((11, 0, 0)), dispatch=dispatch)
  sched.add(eng)
  eng.doorbell(len(d := pkt3(0x15, 1, 1, 1, 1)))
  gpu.put(RING, d)
  sched.kick(eng)
  assert started.wait(10)   # the worker is inside the dispatch; the host thread is free
  assert sched.abort("host exit") == [eng]
  assert sched.wait_idle(10) and isinstance(eng.dead, GPUHangFault) and gpu.faults

def test_pm4_packet_bodies_read_across_the_ring_end_and_across_two_mappings():
  # a packet body is read in one go where it can be: a RELEASE_MEM that wraps past the ring's end, and an IB whose packet crosses
  # from one mapping into the adjacent one, run exactly as when read a dword at a time
  gpu, sched = FakeGPU(), Scheduler()
  half = 0x3010
  gpu.memory.unmap(gpu.base)
  gpu.memory.map(gpu.base, half, "low", backing=gpu.buf[:half])
  gpu.memory.map(gpu.base + half, gpu.buf.size - half, "high", backing=gpu.buf[half:])
  eng = pm4(gpu)
  sched.add(eng)
  rel = lambda off, val: pkt3(0x49, 0, 1 << 29, (gpu.base + off) & 0xffffffff, (gpu.base + off) >> 32, val, 0, 0)
  submit(gpu, eng, sched, pkt3(0x10, *[0] * (0x1000 // 4 - 4 - 1)))   # a NOP up to 16 bytes before the ring's end
  submit(gpu, eng, sched, rel(0x400, 0x1234))                         # 8 dwords: 4 at the end, 4 from the start
  assert gpu.u32(0x400) == 0x1234 and not gpu.faults and eng.rptr == eng.wptr
  ib = rel(0x404, 0x5678)
  gpu.put(half - 8, ib)   # two dwords in "low", six in "high"
  ib_addr = gpu.base + half - 8
  submit(gpu, eng, sched, pkt3(0x3F, ib_addr & 0xffffffff, ib_addr >> 32, len(ib) | 1 << 23))
  assert gpu.u32(0x404) == 0x5678 and not gpu.faults

def _run_counting_wakes(eng, gpu:FakeGPU, dwords:list[int]) -> list[str]:
  """Put `dwords` on eng's ring and run it on this thread: the packets after which host waiters would be woken."""
  for i, d in enumerate(dwords): gpu.put(RING + i * 4, [d])
  eng.doorbell(len(dwords) * 4 // eng.unit)
  woken = []
  assert eng.run(lambda: woken.append(eng.packet.split(" at ")[0])) and not gpu.faults
  return woken

def test_host_waiters_are_woken_only_after_packets_that_can_write_a_signal():
  # a signal is written by RELEASE_MEM (and read back after a dispatch); register writes, NOPs, cache actions, flush events,
  # passed waits and jumps write no memory, so a host polling its signal is not handed the GIL for them (they still end with
  # the worker's pass)
  gpu = FakeGPU()
  eng = pm4(gpu)
  ib = gpu.base + 0x3000
  gpu.put(0x3000, pkt3(0x10, 0))
  sh = pkt3(0x76, 0x2e40 - 0x2c00, 1, 2)
  rel = pkt3(0x49, 0, 1 << 29, (gpu.base + 0x200) & 0xffffffff, (gpu.base + 0x200) >> 32, 5, 0, 0)
  wait = pkt3(0x3C, 3 | 1 << 4, (gpu.base + 0x300) & 0xffffffff, (gpu.base + 0x300) >> 32, 0, 0xffffffff, 4)   # mem == 0: passes at once
  woken = _run_counting_wakes(eng, gpu, sh + pkt3(0x10, 0) + pkt3(0x58, *[0] * 7) + pkt3(0x3F, ib & 0xffffffff, ib >> 32, 2) + sh + wait +
                              pkt3(0x46, 7) + rel + sh + pkt3(0x15, 1, 1, 1, 1))
  assert woken == ["RELEASE_MEM", "DISPATCH_DIRECT"] and gpu.u32(0x200) == 5 and len(gpu.dispatches) == 1
  gpu = FakeGPU()
  eng = SDMAEngine(gpu, gpu.base + RING, 0x1000, gpu.base + RPTR, gpu.base + WPTR)
  lohi = lambda a: [a & 0xffffffff, a >> 32]
  poll = [8 | 3 << 28 | 1 << 31, *lohi(gpu.base + 0x300), 0, 0xffffffff, 0]   # mem == 0: passes at once
  assert _run_counting_wakes(eng, gpu, [0] + poll + [5, *lohi(gpu.base + 0x200), 11] + [0]) == ["FENCE"] and gpu.u32(0x200) == 11
