"""The mock's PMC counters (mockgpu/amd/pmc.py) against the counters tinygrad sampled on real GPUs in the shipped captures
(data/sqtt): each captured kernel is replayed and its events counted the way the mock counts a dispatch. Instruction and LDS
counters must equal the hardware's; SQ_BUSY_CYCLES comes from the timing model and must fall in the model's whole-kernel ratio band
(test_sqtt_compare.THRESHOLDS), except on gfx1200, whose counter does not time the dispatch (docs/mockgpu.md, "PMC counters")."""
from pathlib import Path
import pytest
from emu.amd.lds_banks import LdsBanks
from emu.timing.replay import Prepared
from emu.timing.traces import load_events, load_trace, pmc_counter
from mockgpu.amd.boards import GC_HWID, board
from mockgpu.amd.pmc import PerfCounters
from mockgpu.clock import DeviceClock
from test_sqtt_compare import THRESHOLDS

ROOT = Path(__file__).resolve().parents[2] / "data" / "sqtt"

def counted(arch:str):
  """(kernel name, the mock's events, the hardware's PMC event) for every captured kernel of `arch` that sampled counters."""
  for path in sorted((ROOT / arch).glob("*.pkl")):
    events = load_events(path)
    names = {e.tag: e.name for e in events if type(e).__name__ == "ProfileProgramEvent"}
    hw = {names[e.kern]: e for e in events if type(e).__name__ == "ProfilePMCEvent"}
    for k in load_trace(path):
      b = board(k.arch)
      unit = PerfCounters(k.arch, b.ip_versions[GC_HWID], b.shader_engines, b.arrays_per_engine, b.cus, DeviceClock(), b.engine_clock_mhz)
      banks = LdsBanks()
      yield f"{path.name}:{k.name}", unit.events(Prepared(k, watch=(banks,)).model, banks), hw[k.name]

@pytest.mark.parametrize("arch", sorted(THRESHOLDS))
def test_the_mocks_counters_agree_with_the_hardware_samples(arch):
  lo, hi = THRESHOLDS[arch][2]
  checked = 0
  for name, ours, hw in counted(arch):
    lds = "SQ" if arch.startswith("gfx9") else "SQC"
    for counter in ("SQ_INSTS_VALU", "SQ_INSTS_SALU", f"{lds}_LDS_IDX_ACTIVE", f"{lds}_LDS_BANK_CONFLICT"):
      assert int(ours[counter].sum()) == int(pmc_counter(hw, counter).sum()), (name, counter, int(ours[counter].sum()))
    if arch != "gfx1200":
      ratio = int(ours["SQ_BUSY_CYCLES"].max()) / int(pmc_counter(hw, "SQ_BUSY_CYCLES").max())
      assert lo <= ratio <= hi, (name, ratio)
    checked += 1
  assert checked >= 4
