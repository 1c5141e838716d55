"""Targets that diff the emulator's mirrors, two implementations of one rule set that must agree on every input.

`mirror.replay`: a random CU workload (fuzz.cu_workloads.random_workload: every timing class and port, WMMAs, s_delay_alu
pairs, waits, barriers, random shapes and families) replayed by the Python reference `cu_model.simulate_cu` with its
steady-state skip, without it, and by the compiled replay (emu/amd/cu_native.py, where a C compiler is at hand); every wave's
start, end, issue times and DRAM flags must be the same. Kind `replay-mismatch`, keyed by which pair differs.

`mirror.regions.{gfx1100,gfx1201,gfx942,gfx950}`: a random stream of instructions that may join a native region (drawn like
the exec targets', kept where emu.amd.regions.joins says so; no branches) run by a workgroup of several waves through
`AMDGPU.dispatch` with every region native from its first batch and each batch also run on the numpy path (EMU_REGIONS=check,
set for the check only). A difference in registers, SCC, PC or bytes stored fails the dispatch: kind `region-mismatch`, keyed
by arch and the first opcode of the stream's differing region. Any other escape is a `host-exception` as in `stream.*`.
"""
from __future__ import annotations
import os, random
from emu.amd import cu_native, regions
from emu.amd.api import GPUEmulatorError, GPUFault
from emu.amd.arch import get_spec
from emu.amd.cu_model import simulate_cu
from emu.amd.decode import decode
from emu.amd.exec_salu import ControlStep
from emu.amd.step_build import compile_step
from fuzz import amd_exec
from fuzz.cu_workloads import random_workload
from fuzz.finding import Finding
from fuzz.registry import Target, register
from fuzz.targets import stream
from fuzz.targets.exec import host_exception

REGION_LENGTH = 12   # instructions per stream
REGION_WAVES = (1, 2, 4)
DRAWS = 400          # draws per stream before it is cut short (most encodings of a table cannot join a region)

def generate_replay(rng:random.Random) -> dict:
  """A seed for random_workload (the workload itself is rebuilt from it) and whether it draws WMMAs."""
  return {"seed": rng.getrandbits(48), "matrix": rng.random() < 0.5}

def check_replay(case:dict) -> None:
  """replay-mismatch where the replays of one workload differ."""
  w = random_workload(random.Random(case["seed"]), case["matrix"])
  reference = simulate_cu(*w.args(), skip_periods=False)
  if simulate_cu(*w.args()) != reference:
    raise Finding("replay-mismatch", "cu_model's steady-state skip changes the replay", key=("skip",))
  native = cu_native.simulate(*w.args(), wait=True)
  if native is not None and native != reference:
    first = next(k for k, (a, b) in enumerate(zip(native, reference)) if a != b)
    raise Finding("replay-mismatch", f"the compiled replay differs from cu_model at wave {first}: {native[first][:2]} vs {reference[first][:2]}",
                  key=("compiled",))

def joins(arch:str, raw:bytes) -> bool:
  """Whether the instruction builds and may sit inside a native region (a branch or a no-op control step does not help)."""
  spec = get_spec(arch)
  try: step = compile_step(decode(raw, spec), spec, 0)
  except (GPUFault, ValueError, KeyError): return False
  return regions.joins(step) and not regions.ends(step) and not isinstance(step, ControlStep)

def generate_regions(arch:str, rng:random.Random) -> dict:
  """Up to REGION_LENGTH region-joining encodings (hex) of `arch`, the wave size and the waves of the workgroup."""
  family, insts = stream.ARCHS[arch], []
  for _ in range(DRAWS):
    raw = amd_exec.code(amd_exec.draw(family, rng, None, None))
    if joins(arch, raw): insts.append(raw.hex())
    if len(insts) == REGION_LENGTH: break
  return {"arch": arch, "lanes": rng.choice(get_spec(arch).wave_sizes), "waves": rng.choice(REGION_WAVES), "insts": insts}

def check_regions(case:dict) -> None:
  """region-mismatch where a native region and the numpy path disagree; host-exception for any other escape."""
  saved = os.environ.get("EMU_REGIONS", "")
  regions.set_mode("check")
  try: fault = stream.run(case)
  except Exception as e: raise host_exception(f"{case['arch']} region stream", case["arch"], e) from None
  finally: regions.set_mode(saved)
  if not isinstance(fault, GPUEmulatorError): return
  if "EMU_REGIONS=check" in str(fault.error):
    raise Finding("region-mismatch", str(fault), key=(case["arch"], fault.inst.split("(")[0].split()[0] if fault.inst else ""))
  raise host_exception(f"{case['arch']} region stream", case["arch"], fault.error)

register(Target("mirror.replay", generate_replay, check_replay, lambda case, fails: case,
                doc="random CU workloads: cu_model's replay with and without its steady-state skip and the compiled replay agree"))
for _arch in stream.ARCHS:
  register(Target(f"mirror.regions.{_arch}", lambda rng, a=_arch: generate_regions(a, rng), check_regions, stream.minimise,
                  doc=f"random region-joining {_arch} streams, several waves: native regions vs the numpy path (EMU_REGIONS=check)"))
