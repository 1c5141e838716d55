"""The compiled CU replay (emu/amd/cu_native.py, cu_replay.c) against cu_model.simulate_cu, its reference: every wave's start,
end, issue time of each instruction and DRAM flag must be the same (the reference's rules are checked by hand in test_timing.py,
whose cases also run here through `replay`)."""
import copy, random, shutil
import pytest
from emu.amd import cu_native
from emu.amd.timing import PARAMS, OpInfo
from emu.amd.cu_model import make_stream, replay_op, simulate_cu
from fuzz.cu_workloads import (SALU, TRANS, VALU, VALU_DEP_1, WMMA, WMMA_8, delay, loop, random_workload)

HAVE_CC = any(shutil.which(c) for c in ("clang", "cc"))
needs_cc = pytest.mark.skipif(not HAVE_CC, reason="no C compiler (clang or cc) on PATH to build the compiled replay")

@pytest.fixture(autouse=True)
def native_on(monkeypatch):
  monkeypatch.delenv("EMU_NATIVE_REPLAY", raising=False)
  monkeypatch.delenv("EMU_NATIVE", raising=False)

def both(streams, wg_of, passes, slots, p, fetch):
  """(cu_model's result, the compiled replay's) of one CU workload."""
  native = cu_native.simulate(streams, wg_of, passes, slots, p, fetch, wait=True)
  assert native is not None, cu_native.LIBRARY.failure
  return simulate_cu(streams, wg_of, passes, slots, p, fetch, skip_periods=False), native

@needs_cc
def test_the_library_builds():
  assert cu_native.LIBRARY.get(wait=True) is not None, cu_native.LIBRARY.failure

@needs_cc
# (89, 225, 335: seeds whose WMMA work follows its own last pass while another wave's WMMAs are in flight, found by a sweep of 1,500)
@pytest.mark.parametrize("seed", [*range(80), 89, 225, 335])
def test_random_workloads_replay_alike(seed):
  w = random_workload(random.Random(seed), matrix=seed % 2 == 1)
  python, native = both(*w.args())
  assert python == native

@needs_cc
def test_code_spread_over_cache_lines_and_branches():
  # a stream jumping over lines (taken forward branches and a loop whose head lies in another 128-byte pair), an instruction
  # spanning two lines, entries not at line starts: cache misses, prefetches of the next line and branch_taken
  wide = replay_op(OpInfo("valu", "valu", size=12))
  br = replay_op(OpInfo("branch", "salu", cond=True))
  ops, pcs = [SALU, VALU, br], [0, 4, 8]
  for trip in range(5):
    ops += [VALU, wide, br]; pcs += [300, 304, 316]
  ops += [br, VALU, SALU, replay_op(OpInfo("end", None))]
  pcs += [600, 1000, 1004, 1008]
  streams = [make_stream(ops, [pc + 36 for pc in pcs])] * 3 + [make_stream(ops, pcs)]
  p = PARAMS["rdna3"]
  python, native = both(streams, [0, 0, 1, 1], 1, 1, p, p.launch)
  assert python == native

@needs_cc
def test_waves_sharing_a_matrix_unit():
  # a one-SIMD CU: the owner's buffer, other waves' VALU work issuing at completions and their passes pending, the queue's stall
  p = PARAMS["rdna4"].__class__(**{**vars(PARAMS["rdna4"]), "simds_per_cu": 1})
  streams = [loop([SALU], [WMMA, VALU, WMMA_8, TRANS, VALU, SALU], 40), loop([VALU], [WMMA] * 9 + [VALU, delay(VALU_DEP_1), VALU], 12),
             loop([SALU], [replay_op(OpInfo("valu", "valu", 4)), VALU, WMMA_8], 30)]
  python, native = both(streams, [0, 0, 0], 2, 1, p, p.launch)
  assert python == native

def test_switched_off(monkeypatch):
  monkeypatch.setenv("EMU_NATIVE_REPLAY", "0")
  p = PARAMS["rdna3"]
  assert cu_native.simulate([loop([SALU], [VALU], 3)], [0], 1, 1, p, p.launch, wait=True) is None

@needs_cc
def test_inconsistent_input_is_an_error_not_a_number():
  st = loop([SALU], [VALU, delay(VALU_DEP_1), VALU], 4)
  off, k, code = st.flat_deps
  bad = copy.copy(st)
  bad.flat_deps = (off, k + 1000, code)   # a dependency on an instruction not yet issued
  p = PARAMS["rdna3"]
  with pytest.raises(RuntimeError, match="inconsistent input"): cu_native.simulate([bad], [0], 1, 1, p, p.launch, wait=True)
  bad.flat_deps = (off, k[:-1], code[:-1])   # fewer pairs than the offsets name
  with pytest.raises(RuntimeError, match="inconsistent input"): cu_native.simulate([bad], [0], 1, 1, p, p.launch, wait=True)

@needs_cc
def test_a_tinygrad_dispatch_times_alike(monkeypatch, boxmuller_cycles):
  # a kernel whose waves branch on data (every CU its own workload) through the timing model, compiled replay on and off
  assert cu_native.LIBRARY.get(wait=True) is not None
  monkeypatch.setenv("EMU_REPLAY_JOBS", "0")
  calls = []
  real = cu_native.simulate_end
  monkeypatch.setattr(cu_native, "simulate_end", lambda *job: calls.append(r := real(*job)) or r)
  cycles = boxmuller_cycles("EMU_NATIVE_REPLAY", ("1", "0"))
  assert cycles["1"] == cycles["0"]
  assert any(c is not None for c in calls) and None in calls   # (both ways really ran)

@needs_cc
def test_built_once_per_machine_and_in_the_background(monkeypatch, tmp_path):
  # a process asks without waiting (the Python replay runs meanwhile), the build lands in the disk cache, and a later process
  # loads it from there without compiling
  import subprocess
  monkeypatch.setenv("EMU_PCODE_CACHE", str(tmp_path / "pcode"))
  compiles, real = [], subprocess.run
  monkeypatch.setattr(subprocess, "run", lambda cmd, **kw: (compiles.append(cmd) if "-shared" in cmd else None, real(cmd, **kw))[1])
  first = cu_native._Library()
  first.get()   # (returns at once: None while building)
  assert first.get(wait=True) is not None and len(compiles) == 1
  assert list((tmp_path / "native_replay").glob("cu_replay-*.so"))
  assert cu_native._Library().get(wait=True) is not None and len(compiles) == 1

@needs_cc
def test_a_library_whose_structs_differ_is_not_used(monkeypatch):
  # the C structs and this side's layout must agree (a field added on one side only would read every value shifted)
  path = cu_native._Library._object()
  monkeypatch.setattr(cu_native, "PARAM_FIELDS", (*cu_native.PARAM_FIELDS, "extra"))
  with pytest.raises(RuntimeError, match="structs are"): cu_native._Library._load(path)

@needs_cc
def test_the_benchmarks_replay_figure_replays_both_ways():
  # emu.bench's `replay` figure times both replays on a dispatch's CU workloads; they must be the workloads it replays, and agree
  from emu import bench
  r = bench.replay_rates(lambda: bench.boxmuller(1 << 12), 1)
  assert r["workloads"] > 1 and r["wave_instructions"] > 1000 and r["same"] is True and r["compiled_winst_per_s"] > 0
