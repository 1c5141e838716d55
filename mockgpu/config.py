"""Settings of the mock hardware, read from the environment once per process.

`DEV` is parsed the way tinygrad parses it (`IFACE[:INDICES]+DEVICE[:RENDERER[:ARCH]]`, `;`-separated targets) so the mock can
publish the arch the user asked for. Other knobs:
  MOCKGPU_AMD_GPUS  number of KFD GPU nodes (default: enough for the highest index in DEV's AMD target, at least 1)
  MOCKGPU_AMD_VRAM  VRAM bytes per GPU, with an optional K/M/G suffix (default: the board's VRAM from the arch table)
  MOCKGPU_NV_GPUS   number of NVIDIA GPUs (default: enough for the highest index in DEV's NV target, at least 1)
  MOCKGPU_NV_VRAM   VRAM bytes per NVIDIA GPU, with an optional K/M/G suffix (default: the board's)
"""
from __future__ import annotations
import os
from dataclasses import dataclass

@dataclass(frozen=True)
class Target:
  """One `IFACE[:INDICES]+DEVICE[:RENDERER[:ARCH]]` entry of DEV."""
  interface: str
  indices: str
  device: str
  renderer: str
  arch: str

def parse_dev(value:str) -> list[Target]:
  """Split a DEV string into its targets; missing parts are empty strings."""
  out = []
  for tgt in filter(None, (t.strip() for t in value.split(";"))):
    iface, _, dev = tgt.rpartition("+")
    iname, _, indices = iface.partition(":")
    dname, renderer, arch = (dev.split(":") + ["", ""])[:3]
    out.append(Target(iname.upper(), indices, dname.upper(), renderer.upper(), arch.lower()))
  return out

def parse_size(value:str) -> int:
  """'24G' / '512M' / '4096' → bytes."""
  mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}.get(value[-1:].upper(), 1)
  return int(value[:-1] if mult != 1 else value) * mult

def _max_index(indices:str) -> int:
  nums = [int(x) for x in indices.replace("-", ",").split(",") if x.strip().isdigit()]
  return max(nums) if nums else 0

def device_target(device:str, env:dict|None=None) -> Target:
  """The first target of DEV for `device` ("AMD", "NV"; an all-defaults mock target when DEV names none)."""
  env = os.environ if env is None else env
  return next((t for t in parse_dev(env.get("DEV", "")) if t.device == device), Target("MOCKKFD" if device == "AMD" else "MOCK", "", device, "", ""))

def amd_target(env:dict|None=None) -> Target:
  """The first AMD target of DEV (an all-defaults target when DEV names none)."""
  return device_target("AMD", env)

def amd_arch(env:dict|None=None) -> str:
  """The gfx arch the mock AMD GPUs present (DEV's arch, default gfx1100)."""
  return amd_target(env).arch or "gfx1100"

def amd_gpu_count(env:dict|None=None) -> int:
  """How many KFD GPU nodes to publish."""
  env = os.environ if env is None else env
  if (v:=env.get("MOCKGPU_AMD_GPUS")): return max(1, int(v))
  return _max_index(amd_target(env).indices) + 1

def amd_vram_bytes(default:int, env:dict|None=None) -> int:
  """VRAM per GPU: MOCKGPU_AMD_VRAM or the board default."""
  env = os.environ if env is None else env
  return parse_size(v) if (v:=env.get("MOCKGPU_AMD_VRAM")) else default

def nv_arch(env:dict|None=None) -> str:
  """The SM the mock NVIDIA GPUs present (DEV's arch; '' leaves the board default)."""
  return device_target("NV", env).arch

def nv_gpu_count(env:dict|None=None) -> int:
  """How many NVIDIA GPUs to publish."""
  env = os.environ if env is None else env
  if (v:=env.get("MOCKGPU_NV_GPUS")): return max(1, int(v))
  return _max_index(device_target("NV", env).indices) + 1

def nv_vram_bytes(default:int, env:dict|None=None) -> int:
  """VRAM per NVIDIA GPU: MOCKGPU_NV_VRAM or the board default."""
  env = os.environ if env is None else env
  return parse_size(v) if (v:=env.get("MOCKGPU_NV_VRAM")) else default
