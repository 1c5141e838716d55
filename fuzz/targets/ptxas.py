"""Target `ptxas.agree`: the emulator's PTX front end and NVIDIA's ptxas agree on which programs are valid PTX.

Cases are the `ptx.*` targets' single-instruction kernels with the instruction's type and modifiers redrawn from every PTX type
and the modifiers the emulator knows for any opcode (most draws are invalid). Kinds: `accepts-invalid` (the front end parses a
program ptxas rejects), `rejects-valid` (ptxas accepts a program the front end calls invalid). A refusal for something the
emulator does not model ("not supported by the emulator", "not modelled") is not a verdict on validity and is not judged.
Registered only where ptxas from PyPI (`nvidia-cuda-nvcc-cu12`) is installed; never needed at run time.
"""
from __future__ import annotations
import os, random, subprocess, tempfile
from fuzz.finding import Finding
from fuzz.registry import Target, register
from fuzz.targets import ptx as ptx_target
from mockgpu.nvrtc_path import pypi_ptxas

TYPES = ("s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64", "b16", "b32", "b64", "f16", "f32", "f64")
NOT_MODELLED = ("not supported by the emulator", "not modelled")

def generate(rng:random.Random) -> dict:
  from emu.nv.isa import OPS
  case = ptx_target.generate(rng, floats=rng.random() < 0.5)
  if rng.random() < 0.8:
    case["type"] = rng.choice(TYPES)
    pool = sorted(OPS[case["op"]].mods | {m for d in OPS.values() for m in sorted(d.mods) if rng.random() < 0.02})   # sorted: seeded
    case["mods"] = rng.sample(pool, k=min(len(pool), rng.randint(0, 2)))
  return case

def front_end(text:str) -> tuple[bool | None, str]:
  """(valid?, why) by the emulator's front end; None when it refused for something it does not model."""
  from emu.nv import isa, ptx
  try: isa.parse(text)
  except ptx.PTXError as e: return (None if any(s in str(e) for s in NOT_MODELLED) else False), str(e)
  return True, ""

def check(case:dict) -> None:
  text = ptx_target.kernel_text(case)
  ours, why = front_end(text)
  if ours is None: return
  with tempfile.TemporaryDirectory() as d:
    src = os.path.join(d, "k.ptx")
    with open(src, "w") as f: f.write(text)
    r = subprocess.run([PTXAS, "-arch=sm_89", src, "-o", os.path.join(d, "k.cubin")], capture_output=True, text=True, timeout=60)
  theirs = r.returncode == 0
  inst = ".".join([case["op"], *case["mods"], case["type"]])
  if ours and not theirs:
    raise Finding("accepts-invalid", f"{inst}: ptxas says {r.stderr.strip().splitlines()[0] if r.stderr.strip() else r.returncode}",
                  key=(case["op"], case["type"], *sorted(case["mods"])))
  if theirs and not ours: raise Finding("rejects-valid", f"{inst}: {why}", key=(case["op"], case["type"], *sorted(case["mods"])))

def minimise(case:dict, fails) -> dict: return case   # one instruction already

PTXAS = pypi_ptxas()
if PTXAS is not None:
  register(Target("ptxas.agree", generate, check, minimise,
                  doc="single PTX instructions with random types/modifiers: the emulator's front end and ptxas (PyPI) agree on validity"))
