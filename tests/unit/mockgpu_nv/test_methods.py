"""Method streams written by tinygrad's own NVComputeQueue (wait/signal/write) and a compute launch, executed by
mockgpu.nv.methods.Channel: semaphore releases (32/64-bit, the timestamp at +8 only where asked), acquires that stall until
the memory satisfies them, the QMD launch path, and named errors for what is not modelled."""
from types import SimpleNamespace
import numpy as np
import pytest
from tinygrad.runtime.ops_nv import NVComputeQueue
from tinygrad.runtime.autogen import nv_570 as nv
from mockgpu.nv.methods import Channel, MethodError, Stall, words_of
from test_qmd_launch import Board, build

def sig(va:int): return SimpleNamespace(value_addr=va)
def buf(va:int): return SimpleNamespace(va_addr=va)

def test_signal_write_and_wait():
  board, clock = Board(), iter(range(1000, 2000))
  mem = np.zeros(8, np.uint64)
  va = board.add(mem)
  ch = Channel(board.mem, lambda: next(clock))
  q = NVComputeQueue().signal(sig(va), 0x1_2345_6789).write(buf(va + 16), 7).write(buf(va + 32), 0x5_0000_0001, b64=True)
  assert ch.run(words_of(q)) is None
  assert mem[0] == 0x1_2345_6789 and mem[1] == 1000                       # signal: 64-bit payload, then the timestamp at +8
  assert mem[2] == 7 and mem[3] == 0 and mem[4] == 0x5_0000_0001 and mem[5] == 0   # writes: no timestamp
  w = words_of(NVComputeQueue().wait(sig(va), 0x1_2345_678a))
  stall = ch.run(w)
  assert isinstance(stall, Stall) and stall.pos[0] == 0 and "waiting" in stall.reason   # resumes at the acquire of header 0
  mem[0] = 0x1_2345_678a
  assert ch.run(w, stall.pos) is None

def test_circular_wait_treats_a_wrapped_value_as_later():
  # acq_circ_geq: satisfied when (mem - payload) mod 2**64 is below 2**63
  board = Board()
  mem = np.array([5], np.uint64)
  ch = Channel(board.mem, lambda: 0)
  w = words_of(NVComputeQueue().wait(sig(board.add(mem)), 2**64 - 3))
  assert ch.run(w) is None   # 5 - (2**64 - 3) = 8 (mod 2**64): after

def test_compute_launch_through_send_pcas():
  board = Board()
  a, out, sem = np.arange(64, dtype=np.float32), np.zeros(64, np.float32), np.zeros(2, np.uint64)
  qmd, _ = build(board, lambda x: x * 3, [a], out, release_addr=board.add(sem), value=9)
  qva = board.add(np.frombuffer(qmd, np.uint8).copy())
  q = NVComputeQueue()
  q.nvm(1, nv.NVC6C0_INVALIDATE_SHADER_CACHES_NO_WFI, 0x1011)
  q.nvm(1, nv.NVC6C0_SEND_PCAS_A, qva >> 8)
  q.nvm(1, nv.NVC6C0_SEND_SIGNALING_PCAS2_B, 9)
  ch = Channel(board.mem, lambda: 77)
  assert ch.run(words_of(q)) is None and ch.launches == 1
  np.testing.assert_array_equal(out, a * 3)
  assert sem.tolist() == [9, 77]

def test_unknown_methods_and_headers_are_named_errors():
  ch = Channel(Board().mem, lambda: 0)
  with pytest.raises(MethodError, match="dword 1, subchannel 1 method 0x1234"): ch.run(np.array([1 << 29 | 1 << 16 | 1 << 13 | 0x1234 >> 2, 0]))
  with pytest.raises(MethodError, match="past the end"): ch.run(np.array([1 << 29 | 4 << 16]))
  with pytest.raises(MethodError, match="subchannel 4 method 0x100"): ch.run(np.array([1 << 29 | 1 << 16 | 4 << 13 | 0x100 >> 2, 0]))
  with pytest.raises(MethodError, match="subchannel 2"): ch.run(np.array([1 << 29 | 1 << 16 | 2 << 13, 0]))
  with pytest.raises(MethodError, match="subdevice-mask .* not modelled"): ch.run(np.array([1 << 16 | 0x3 << 4]))   # SET_SUB_DEV_MASK
  with pytest.raises(MethodError, match="reserved opcode"): ch.run(np.array([6 << 29]))

H = nv.NVC56F_SEM_ADDR_LO >> 2
def header(op:int, count:int, method:int, subc:int=0) -> int: return op << 29 | count << 16 | subc << 13 | method >> 2

def test_every_data_header_form_writes_the_methods_it_names():
  # one 32-bit release each way (PTX-free host methods; SEM_EXECUTE operation RELEASE = 1): SEM_ADDR_LO/HI, SEM_PAYLOAD_LO,
  # SEM_EXECUTE are consecutive methods, so an incrementing header writes them in order; a non-incrementing header writes
  # one method again and again (the last value counts); one-increment writes the first value to the method, the rest to the next
  board = Board()
  mem = np.zeros(8, np.uint32)
  va = board.add(mem)
  ch = Channel(board.mem, lambda: 0)
  lo, hi, pay, ex = nv.NVC56F_SEM_ADDR_LO, nv.NVC56F_SEM_ADDR_HI, nv.NVC56F_SEM_PAYLOAD_LO, nv.NVC56F_SEM_EXECUTE
  assert (lo, hi, pay, ex) == (lo, lo + 4, lo + 8, lo + 16)
  release = 1   # NVC56F_SEM_EXECUTE_OPERATION_RELEASE, 32-bit payload
  stream = [header(1, 3, lo), va & 0xffffffff, va >> 32, 11, header(1, 1, ex), release,          # incrementing: 11 at va
            header(3, 3, lo), 0, 0, (va + 4) & 0xffffffff, header(1, 1, hi), va >> 32,           # non-incrementing: the last LO
            header(5, 2, hi - 4, 0), (va + 4) & 0xffffffff, va >> 32,                             # one-increment: LO then HI
            header(4, 22, pay), header(4, release, ex),                                           # immediates: 22 at va + 4
            header(1, 2, lo), (va + 8) & 0xffffffff, va >> 32, header(4, 33, pay), header(4, release, ex),
            header(7, 0, 0), header(4, 44, pay), header(4, release, ex)]                         # after the segment's end: nothing
  assert ch.run(np.array(stream, np.uint32)) is None
  assert mem[:4].tolist() == [11, 22, 33, 0]

def sem_execute(op:int, wide:bool=False, timestamp:bool=False) -> int:
  f = lambda field, v: v << field[1]  # noqa: E731
  return (f(nv.NVC56F_SEM_EXECUTE_OPERATION, op) | f(nv.NVC56F_SEM_EXECUTE_PAYLOAD_SIZE, int(wide)) |
          f(nv.NVC56F_SEM_EXECUTE_RELEASE_TIMESTAMP, int(timestamp)))

def test_a_stall_inside_a_non_incrementing_header_resumes_after_the_writes_it_made():
  # a non-incrementing header of two SEM_EXECUTEs at va with payload 1 << 32 | 5: a 32-bit release with its timestamp (writes 5,
  # then 0 and the clock: 16 bytes), then a 64-bit acquire of 1 << 32 | 5, which the release's zero upper word fails. The resume
  # point is the acquire's own data dword: after the host sets the upper word, resuming must not run the release again (it would
  # zero the word and read the clock twice)
  board, reads = Board(), []
  mem = np.zeros(4, np.uint32)
  va = board.add(mem)
  ch = Channel(board.mem, lambda: reads.append(1) or 99)
  stream = np.array([header(1, 4, nv.NVC56F_SEM_ADDR_LO), va & 0xffffffff, va >> 32, 5, 1,
                     header(3, 2, nv.NVC56F_SEM_EXECUTE), sem_execute(nv.NVC56F_SEM_EXECUTE_OPERATION_RELEASE, timestamp=True),
                     sem_execute(nv.NVC56F_SEM_EXECUTE_OPERATION_ACQUIRE, wide=True)], np.uint32)
  stall = ch.run(stream)
  assert stall is not None and stall.pos == (5, 7) and mem.tolist() == [5, 0, 99, 0] and len(reads) == 1
  mem[1] = 1
  assert ch.run(stream, stall.pos) is None and len(reads) == 1

def test_copy_queue_copies_then_releases():
  # NVCopyQueue.copy: OFFSET_IN/OUT, LINE_LENGTH_IN, LAUNCH_DMA (pitch, non-pipelined); signal: SET_SEMAPHORE_A/B/PAYLOAD and a
  # four-word release (payload, then the timestamp at +8)
  from tinygrad.runtime.ops_nv import NVCopyQueue
  board = Board()
  src, dst, sem = np.arange(256, dtype=np.uint8), np.zeros(256, np.uint8), np.zeros(2, np.uint64)
  s_va, d_va, sem_va = board.add(src), board.add(dst), board.add(sem)
  q = NVCopyQueue().copy(buf(d_va + 16), buf(s_va), 200).signal(sig(sem_va), 42)
  ch = Channel(board.mem, lambda: 555)
  assert ch.run(words_of(q)) is None and ch.copies == 1
  assert (dst[16:216] == src[:200]).all() and not dst[:16].any() and not dst[216:].any()
  assert sem.tolist() == [42, 555]

def test_gpfifo_runs_entries_up_to_gpput_and_resumes_a_stalled_wait():
  # two entries as ops_nv's _submit_to_gpfifo writes them (address | dwords << 42 | 1 << 41, GPPut in USERD at +0x8c): a wait
  # on a semaphore that is not there yet, then a signal. The first run stalls at the wait (GPGet stays 0); once the semaphore
  # holds the value, the next run finishes both and GPGet reaches GPPut
  from mockgpu.clock import DeviceClock
  from mockgpu.nv.gpfifo import GpFifoEngine
  board = Board()
  entries = 4
  ring = np.zeros(entries * 2 + 0x90 // 4, np.uint32)   # 8-byte entries, then USERD: GPGet (+0x88) and GPPut (+0x8c)
  ring_va = board.add(ring)
  sem, done = np.zeros(2, np.uint64), np.zeros(2, np.uint64)
  sem_va, done_va = board.add(sem), board.add(done)
  streams = [words_of(NVComputeQueue().wait(sig(sem_va), 3)), words_of(NVComputeQueue().signal(sig(done_va), 11))]
  for i, w in enumerate(streams):
    va = board.add(w.copy())
    ring[2 * i:2 * i + 2] = np.array([va | len(w) << 42 | 1 << 41], np.uint64).view(np.uint32)
  ring[entries * 2 + 0x8c // 4] = 2
  gpu = SimpleNamespace(memory=board.mem, clock=DeviceClock())
  fifo = GpFifoEngine(gpu, "test", ring_va, entries, ring_va + entries * 8, Channel(board.mem, lambda: 99))
  fifo.doorbell()
  fifo.run()
  assert fifo.stalled and ring[entries * 2 + 0x88 // 4] == 0 and done[0] == 0
  sem[0] = 3
  fifo.run()
  assert not fifo.pending() and ring[entries * 2 + 0x88 // 4] == 2 and done.tolist() == [11, 99]

def self_chained_qmd(board, release_addr:int|None=None):
  """A QMD (kernel x + 1 over 64 floats) whose dependent pointer names itself; its VA."""
  from tinygrad.runtime.ops_nv import QMD
  from test_qmd_launch import ADA
  a, out = np.arange(64, dtype=np.float32), np.zeros(64, np.float32)
  raw, _ = build(board, lambda x: x + 1, [a], out, release_addr=release_addr, value=3)
  qmd = np.frombuffer(raw, np.uint8).copy()
  va = board.add(qmd)
  q = QMD(dev=ADA, view=memoryview(qmd))
  q.write(dependent_qmd0_pointer=va >> 8, dependent_qmd0_action=1, dependent_qmd0_enable=1)
  return va, out

def test_a_qmd_chain_that_loops_back_is_a_named_error_after_one_launch():
  # a dependent pointer to itself would relaunch forever (re-arming the watchdog each time); the chain is bounded
  board = Board()
  va, out = self_chained_qmd(board)
  q = NVComputeQueue()
  q.nvm(1, nv.NVC6C0_SEND_PCAS_A, va >> 8)
  q.nvm(1, nv.NVC6C0_SEND_SIGNALING_PCAS2_B, 9)
  ch = Channel(board.mem, lambda: 0)
  with pytest.raises(MethodError, match=f"QMD at {va:#x}: the dependent-QMD chain loops back to it after 1 launches"): ch.run(words_of(q))
  assert ch.launches == 1 and (out == np.arange(64) + 1).all()

def test_pending_releases_read_past_qmds_that_cannot_be_read_and_stop_at_loops():
  # what a stopped channel's host waits are trapped on: a SEND_PCAS of an unmapped QMD releases nothing, the host release after
  # it still counts; a self-chained QMD's release is found once and the scan ends
  from mockgpu.nv.methods import pending_releases
  board = Board()
  sem, sem2 = np.zeros(2, np.uint64), np.zeros(2, np.uint64)
  rel = board.add(sem)
  va, _ = self_chained_qmd(board, release_addr=rel)
  s2 = board.add(sem2)
  q = NVComputeQueue()
  q.nvm(1, nv.NVC6C0_SEND_PCAS_A, 0x7777770000 >> 8)
  q.nvm(1, nv.NVC6C0_SEND_SIGNALING_PCAS2_B, 9)
  q.nvm(1, nv.NVC6C0_SEND_PCAS_A, va >> 8)
  q.nvm(1, nv.NVC6C0_SEND_SIGNALING_PCAS2_B, 9)
  q.signal(sig(s2), 42)
  assert pending_releases(board.mem, words_of(q)) == {rel: 3, s2: 42}
