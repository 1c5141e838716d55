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
  assert isinstance(stall, Stall) and stall.pos == 0 and "waiting" in stall.reason
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
  with pytest.raises(MethodError, match="dword 1, subchannel 1 method 0x1234"): ch.run(np.array([2 << 28 | 1 << 16 | 1 << 13 | 0x1234 >> 2, 0]))
  with pytest.raises(MethodError, match="only incrementing"): ch.run(np.array([3 << 28]))
  with pytest.raises(MethodError, match="past the end"): ch.run(np.array([2 << 28 | 4 << 16]))
  with pytest.raises(MethodError, match="subchannel 4 method 0x100"): ch.run(np.array([2 << 28 | 1 << 16 | 4 << 13 | 0x100 >> 2, 0]))
  with pytest.raises(MethodError, match="subchannel 2"): ch.run(np.array([2 << 28 | 1 << 16 | 2 << 13, 0]))

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
  from mockgpu.amd.clock import DeviceClock
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
