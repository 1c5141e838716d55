"""A compute launch described by a QMD that tinygrad's own NV runtime code writes (its QMD class and the field names its
NVComputeQueue.exec/signal use), decoded by mockgpu.nv.qmd and run by mockgpu.nv.compute on emu.nv: the kernel's results
against numpy, and the release semaphore (payload, then the timestamp at +8) written only after the kernel ran."""
from types import SimpleNamespace
import numpy as np
import pytest
from tinygrad.runtime.ops_nv import QMD
from tinygrad.runtime.autogen import nv_570 as nv_gpu
from emu.amd.api import GPUMemoryFault
from emu.common.memory import MemoryMap
from emu.nv.kernel import render
from mockgpu.nv.compute import ARGS_OFFSET, ProgramCache, program_text, run_launch
from mockgpu.nv.qmd import QMD_BYTES, Launch

ADA = SimpleNamespace(iface=SimpleNamespace(compute_class=nv_gpu.ADA_COMPUTE_A))

class Board:
  """Arrays mapped at GPU VAs in tinygrad's CPU-visible window (0x1000000000 up; QMD address fields hold 40 bits)."""
  def __init__(self):
    self.mem, self.keep, self.next = MemoryMap(), [], 0x10_0000_0000
  def add(self, arr:np.ndarray) -> int:
    self.keep.append(arr)
    va, self.next = self.next, self.next + ((arr.nbytes + 0xfff) & ~0xfff) + 0x1000
    self.mem.map(va, arr.nbytes, backing=arr.view(np.uint8).reshape(-1))
    return va

def build(board:Board, fn, inputs, out, release_addr:int|None=None, value:int=0):
  rk = render(fn, *[x.shape for x in inputs])
  prog = np.frombuffer(rk.ptx.encode() + b"\0" * 64, np.uint8).copy()
  cbuf = np.zeros(ARGS_OFFSET // 8 + len(rk.order), np.uint64)
  for i, which in enumerate(rk.order): cbuf[ARGS_OFFSET // 8 + i] = board.add(out) if which == -1 else board.add(inputs[which])
  qmd = QMD(dev=ADA)
  addr = board.add(prog)
  qmd.write(qmd_major_version=3, program_address_upper=addr >> 32, program_address_lower=addr & 0xffffffff,
            cta_raster_width=rk.grid[0], cta_raster_height=rk.grid[1], cta_raster_depth=rk.grid[2],
            cta_thread_dimension0=rk.block[0], cta_thread_dimension1=rk.block[1], cta_thread_dimension2=rk.block[2],
            constant_buffer_valid_0=1, constant_buffer_size_shifted4_0=cbuf.nbytes)
  qmd.set_constant_buf_addr(0, board.add(cbuf))
  if release_addr is not None:
    qmd.write(release0_enable=1, release0_address_lower=release_addr & 0xffffffff, release0_address_upper=release_addr >> 32,
              release0_payload_lower=value & 0xffffffff, release0_payload_upper=value >> 32)
  return bytes(qmd.mv), cbuf

def test_a_qmd_written_by_tinygrad_runs_its_kernel_and_releases_after():
  board = Board()
  a, b = np.arange(64, dtype=np.float32), np.full(64, 0.5, np.float32)
  out, sem = np.zeros(64, np.float32), np.zeros(2, np.uint64)
  launch = Launch.read(build(board, lambda x, y: x * y + 1, [a, b], out, release_addr=board.add(sem), value=0x1_0000_0007)[0])
  assert launch.grid[0] * launch.block[0] >= 16 and len(launch.releases) == 1 and launch.dependent is None
  stats = run_launch(launch, board.mem, ProgramCache(), clock_ns=lambda: 123456)
  np.testing.assert_array_equal(out, a * b + 1)
  assert sem.tolist() == [0x1_0000_0007, 123456] and stats.warp_instructions > 0

def test_a_faulting_kernel_writes_no_release():
  board = Board()
  a, out, sem = np.arange(64, dtype=np.float32), np.zeros(64, np.float32), np.zeros(2, np.uint64)
  qmd, cbuf = build(board, lambda x: x + 1, [a], out, release_addr=board.add(sem), value=5)
  launch = Launch.read(qmd)
  cbuf[ARGS_OFFSET // 8:] = 0x10   # every argument slot: an unmapped address
  with pytest.raises(GPUMemoryFault): run_launch(launch, board.mem, ProgramCache(), clock_ns=lambda: 1)
  assert sem.tolist() == [0, 0]

def test_malformed_qmds_are_named_errors():
  with pytest.raises(ValueError, match="QMD is"): Launch.read(b"\0" * 16)
  with pytest.raises(ValueError, match="major version 0"): Launch.read(b"\0" * QMD_BYTES)

def test_chained_qmd_pointer():
  # NVComputeQueue.exec chains a second launch by writing dependent_qmd0_pointer = address >> 8 (and _enable) into the first
  board = Board()
  a, out = np.arange(64, dtype=np.float32), np.zeros(64, np.float32)
  raw, _ = build(board, lambda x: x + 1, [a], out)
  q = QMD(dev=ADA, view=memoryview(bytearray(raw)))
  q.write(dependent_qmd0_pointer=0x12_3456_7800 >> 8, dependent_qmd0_action=1, dependent_qmd0_prefetch=1, dependent_qmd0_enable=1)
  assert Launch.read(bytes(q.mv)).dependent == 0x12_3456_7800 and Launch.read(raw).dependent is None

@pytest.mark.parametrize("offset", [0, 0xffa, 0x2ff0])
def test_program_text_stops_at_the_first_nul_across_pages(offset):
  # text longer than a page, starting mid-page: every byte up to the NUL, nothing after it
  text = ("// " + "x" * 70 + "\n") * 100
  backing = np.full(0x6000, ord("#"), np.uint8)
  backing[offset:offset + len(text)] = np.frombuffer(text.encode(), np.uint8)
  backing[offset + len(text)] = 0
  board = Board()
  va = board.add(backing)
  assert program_text(board.mem, va + offset) == text

def test_program_text_without_nul_ends_at_the_mapping():
  board = Board()
  va = board.add(np.full(0x2100, ord("a"), np.uint8))
  assert program_text(board.mem, va + 0x100) == "a" * 0x2000
  with pytest.raises(ValueError, match="not mapped"): program_text(board.mem, 0x1000)
