"""Shared helpers for the AMD emulator tests: numpy buffers mapped into a MemoryMap, native regions compiled at once."""
import os
import pytest
from emu.amd import regions
from emu.amd.kernel import Buffers

REGION_RUN = regions.Region.run   # (the unspied method: `both` runs its chained comparison with it)

@pytest.fixture
def bufs() -> Buffers: return Buffers()

@pytest.fixture
def regions_at_once(monkeypatch):
  """Native regions (emu.amd.regions) compile on first use, in this thread (not once hot, in the background)."""
  monkeypatch.setattr(regions, "REGION_HOT", 0)
  monkeypatch.setattr(regions, "REGION_HOT_PER_INSTR", 0)
  monkeypatch.setattr(regions, "BACKGROUND", False)
  monkeypatch.delenv("EMU_REGIONS", raising=False)

@pytest.fixture
def native_runs(monkeypatch, regions_at_once):
  """Native regions (emu.amd.regions) compile on first use, in this thread, and each batch runs one region a call (EMU_CHAINS=0:
  the tests observe region calls; `both` checks the chained path too); returns the list of batch sizes that ran natively
  (Region.run returning True)."""
  monkeypatch.setenv("EMU_CHAINS", "0")
  runs, real = [], regions.Region.run
  def spy(self, m, ws, budget=None):
    done = real(self, m, ws, budget)
    if done is not None: runs.append(len(ws))
    return done
  monkeypatch.setattr(regions.Region, "run", spy)
  return runs

@pytest.fixture
def region_calls(monkeypatch):
  """(instructions, batch size) of each native region call that ran, in order (with native_runs: regions compile at once, one a call)."""
  seen, real = [], regions.Region.run
  def spy(self, m, ws, budget=None):
    if (done := real(self, m, ws, budget)) is not None: seen.append((self.count, len(ws)))
    return done
  monkeypatch.setattr(regions.Region, "run", spy)
  return seen

@pytest.fixture
def both(monkeypatch):
  """run(insts, **run_program kwargs) -> the state with native regions, checked against the numpy path (EMU_REGIONS=0): registers,
  SCC, status, bytes read and wave-instructions run must agree bit for bit; where the test runs one region a call (EMU_CHAINS=0),
  a run through native chains (emu.amd.chain) must agree too."""
  import numpy as np
  from emu.amd import run_program
  def same(got, want, what:str):
    for name in ("vgpr_store", "sgpr", "scc", "status"):
      np.testing.assert_array_equal(getattr(got, name), getattr(want, name), err_msg=f"{what}: {name}")
    assert got.stats.bytes_read == want.stats.bytes_read and got.stats.wave_instructions == want.stats.wave_instructions, what
  def run(insts, **kw):
    got = run_program(insts, **kw)
    with monkeypatch.context() as m:
      m.setenv("EMU_REGIONS", "0")
      want = run_program(insts, **kw)
    same(got, want, "native regions")
    if os.environ.get("EMU_CHAINS") == "0":
      with monkeypatch.context() as m:
        m.setenv("EMU_CHAINS", "1")
        m.setattr(regions.Region, "run", REGION_RUN)
        same(run_program(insts, **kw), want, "native chains")
    return got
  return run

@pytest.fixture
def fresh_process(monkeypatch):
  """start(cache): what a new process starts from: no steps or step cache files in memory, no native regions, no instruction
  classified for the timing model; the step cache at `cache` (a folder, or "0": off). What the test's 'processes' held is
  forgotten again at its end."""
  from emu.amd import regions
  from emu.amd.step_cache import STEP_CACHE
  from emu.amd.timing import REPLAY_MEMO
  def start(cache:str):
    monkeypatch.setenv("EMU_STEP_CACHE", cache)
    STEP_CACHE.forget()
    monkeypatch.setattr(regions, "_built", {})
    monkeypatch.setattr(REPLAY_MEMO, "classified", {})
    monkeypatch.setattr(REPLAY_MEMO, "interned", {})
  yield start
  STEP_CACHE.forget()

@pytest.fixture
def boxmuller_cycles(monkeypatch):
  """cycles(var, values): the cycles of one dispatch of tinygrad's Box-Muller kernel (its waves branch on data: every CU its own
  workload), replayed afresh with the environment variable `var` at each of `values`, {value: cycles}."""
  from emu import bench
  from emu.amd.timing import REPLAY_MEMO
  def cycles(var:str, values:tuple[str, ...]) -> dict[str, int]:
    run, out = bench.boxmuller(1 << 13), {}
    for value in values:
      monkeypatch.setenv(var, value)
      REPLAY_MEMO.forget_results()
      out[value] = run().cycles
    return out
  return cycles
