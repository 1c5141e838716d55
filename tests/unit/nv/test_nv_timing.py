"""The NV timing model (emu/nv/timing.py) on hand-written kernels whose cycle counts follow from its documented rules worked by
hand: a dependent chain costs its latencies, enough warps make it issue-bound, shared-memory bank conflicts replay, scattered
global accesses touch more sectors, occupancy limits serialise CTAs. Each check compares two kernels that differ only in the
modelled effect, so constant start-up costs cancel."""
import numpy as np
from emu.common.memory import MemoryMap
from emu.nv import isa, simt
from emu.nv.boards import board
from emu.nv.timing import LATENCY, Timer

ADA = board("sm_89")
HEAD = ".version 7.8\n.target sm_89\n.address_size 64\n"

def cycles(body:str, regs:str, grid=(1,), block=(1,), shared:str="", out_bytes:int=1 << 16) -> int:
  k = isa.parse(HEAD + f".visible .entry k(.param .u64 out)\n{{\n{shared}\n{regs}\n{body}\n}}\n").kernels["k"]
  out = np.zeros(out_bytes, np.uint8)
  mem = MemoryMap()
  mem.map(out.ctypes.data, out.nbytes, backing=out)
  return simt.run(k, grid, block, [out.ctypes.data], mem, board=ADA).cycles

def chain(n:int) -> str:
  return "mov.f32 %f, 0f00000000;\n" + "add.f32 %f, %f, 0f3f800000;\n" * n + "ld.param.u64 %a, [out+0];\nst.global.f32 [%a+0], %f;"
F_REGS = ".reg .f32 %f;\n.reg .u64 %a;"

def test_a_dependent_chain_costs_its_latency():
  # one warp: every add waits for the previous one's result, 4 cycles each (LATENCY['alu'])
  assert cycles(chain(200), F_REGS) - cycles(chain(100), F_REGS) == 100 * LATENCY["alu"]

def test_many_warps_on_one_sm_are_issue_bound():
  # 32 warps in one CTA share one SM's four schedulers: 100 more adds per warp cost 32 * 100 / 4 issue cycles, more than the
  # 400-cycle latency chain each warp has on its own
  assert cycles(chain(200), F_REGS, block=(1024,)) - cycles(chain(100), F_REGS, block=(1024,)) == 32 * 100 // 4

def test_shared_memory_bank_conflicts_replay():
  # 32 lanes store a word each: at a stride of 1 word every lane has its own bank; at a stride of 32 words all 32 share bank 0,
  # a 32-way conflict: 31 more issue cycles per store. Ten independent stores in a row: 10 * 31 cycles more.
  # (a .shared address is the byte offset into the CTA's shared memory)
  def body(stride:int) -> str:
    return f"mov.u32 %t, %tid.x;\nmul.wide.u32 %p, %t, {4 * stride};\n" + "st.shared.u32 [%p+0], %t;\n" * 10
  regs, shared = ".reg .u32 %t;\n.reg .u64 %p;", ".shared .align 4 .b8 buf[4096];"
  one, many = (cycles(body(stride), regs, block=(32,), shared=shared) for stride in (1, 32))
  assert many - one == 10 * 31

def test_scattered_global_accesses_touch_more_sectors():
  # 32 lanes loading consecutive floats touch 4 sectors of 32 bytes; at a stride of 8 floats, 32 sectors
  def timer(stride:int) -> Timer:
    k = isa.parse(HEAD + ".visible .entry k(.param .u64 out)\n{\n.reg .u64 %a;\n}\n").kernels["k"]
    t = Timer(k, ADA, (32, 1, 1))
    t.begin(np.zeros(32, np.int64), 1)
    t.access("global", np.arange(32, dtype=np.uint64) * 4 * stride, np.arange(32), 4)
    return t
  assert timer(1).warp_sectors[0] == 4 and timer(8).warp_sectors[0] == 32
  assert timer(1).dram_sectors == 4 and timer(8).dram_sectors == 32

def test_occupancy_serialises_ctas_beyond_the_resident_limit():
  # 1024-thread CTAs (32 warps) with 48 resident warps per SM: one CTA per SM at a time. Twice as many CTAs as SMs take two
  # CTA durations on each SM; as many CTAs as SMs take one.
  one = cycles(chain(300), F_REGS, grid=(ADA.sms,), block=(1024,))
  two = cycles(chain(300), F_REGS, grid=(2 * ADA.sms,), block=(1024,))
  assert two == 2 * one
