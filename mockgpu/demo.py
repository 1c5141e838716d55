"""The bench's main job: small tinygrad programs on every emulated device, checked against numpy.

`python -m mockgpu.demo` (console script `tinygrad-emu-demo`) runs each program on each device in a child process (tinygrad
reads DEV once, at import) and prints a table: device, program, correct?, kernels, wave-instructions, emulated time,
wall time. A device the bench cannot run yet shows as "not available" with the reason.

  --devices gfx1100,nv   only these devices (names in DEVICES; `reference` runs tinygrad's PYTHON backend instead)
  --programs matmul,...  only these programs
  --timeout S            per-device time limit in seconds (default 900)
"""
from __future__ import annotations
import argparse, json, os, subprocess, sys, time
from dataclasses import dataclass
import numpy as np

@dataclass(frozen=True)
class DemoDevice:
  name: str
  dev: str                  # the DEV string tinygrad is started with
  env: tuple = ()           # extra environment, e.g. an LLVM_PATH the arch needs

DEVICES = [
  DemoDevice("gfx1100", "MOCKKFD+AMD:LLVM:gfx1100"),
  DemoDevice("gfx1201", "MOCKKFD+AMD:LLVM:gfx1201"),
  DemoDevice("gfx942", "MOCKKFD+AMD:LLVM:gfx942"),
  DemoDevice("gfx950", "MOCKKFD+AMD:LLVM:gfx950"),
  DemoDevice("gfx1100-am", "MOCKPCI+AMD:LLVM:gfx1100"),   # tinygrad's AM driver over the mock PCI device
  DemoDevice("gfx1201-am", "MOCKPCI+AMD:LLVM:gfx1201"),
  DemoDevice("gfx942-am", "MOCKPCI+AMD:LLVM:gfx942"),     # shows why CDNA has no AM-driver row
  DemoDevice("gfx1100-usb", "MOCKUSB+AMD:LLVM:gfx1100"),  # the AM driver through the mock USB3-to-PCIe bridge
  DemoDevice("gfx1201-usb", "MOCKUSB+AMD:LLVM:gfx1201"),
  DemoDevice("nv", "MOCK+NV:PTX"),
  DemoDevice("nv-cuda", "MOCK+NV:CUDA"),   # tinygrad's default NV renderer: CUDA C compiled by NVRTC (PyPI)
]
# tinygrad's own UOp interpreter: not an emulated device, but checks the demo's numpy references (`--devices reference`)
REFERENCE = DemoDevice("reference", "PYTHON")

def unavailable_reason(d:DemoDevice) -> str | None:
  """Why the bench cannot run this device yet, or None when it can (checked before starting a child process)."""
  from mockgpu.pci.boards import BOARDS
  iface, _, rest = d.dev.partition("+")
  if iface.startswith(("MOCKPCI", "MOCKUSB")) and (arch := (rest.split(":") + ["", ""])[2] or "gfx1100") not in BOARDS:
    return f"DEV={iface}+AMD emulates {' and '.join(BOARDS)} only, not {arch} (CDNA over PCI is out of scope; use MOCKKFD)"
  if rest.startswith("AMD"):
    from emu.amd.arch import SPECS
    arch = (rest.split(":") + ["", ""])[2] or "gfx1100"
    if arch not in SPECS or not SPECS[arch].supported: return f"the AMD emulator does not implement {arch} yet"
  return None

# ---- the programs: each returns (tinygrad result, numpy reference) ----
def _rand(rng, *shape): return rng.standard_normal(shape).astype(np.float32)

def prog_elementwise(T, rng):
  a, b, c = _rand(rng, 64, 64), _rand(rng, 64, 64), _rand(rng, 64, 64)
  return ((T(a) + T(b)) * T(c) - 1).maximum(0).numpy(), np.maximum((a + b) * c - 1, 0)

def prog_reduction(T, rng):
  a = _rand(rng, 48, 100)
  return T(a).sum(axis=1).numpy(), a.sum(axis=1, dtype=np.float64).astype(np.float32)

def prog_matmul(T, rng):
  a, b = _rand(rng, 32, 48), _rand(rng, 48, 40)
  return (T(a) @ T(b)).numpy(), (a.astype(np.float64) @ b).astype(np.float32)

def prog_conv2d(T, rng):
  x, w = _rand(rng, 2, 3, 10, 10), _rand(rng, 4, 3, 3, 3)
  ref = np.zeros((2, 4, 8, 8), np.float64)
  for i in range(3):
    for j in range(3): ref += np.einsum("nchw,oc->nohw", x[:, :, i:i+8, j:j+8].astype(np.float64), w[:, :, i, j])
  return T(x).conv2d(T(w)).numpy(), ref.astype(np.float32)

def prog_softmax(T, rng):
  a = _rand(rng, 8, 33) * 4
  e = np.exp(a.astype(np.float64) - a.max(axis=1, keepdims=True))
  return T(a).softmax(axis=1).numpy(), (e / e.sum(axis=1, keepdims=True)).astype(np.float32)

def prog_mlp_train_step(T, rng):
  """One SGD step of a 2-layer MLP with a mean-squared-error loss; compares the updated weights."""
  x, y, w1, w2, lr = _rand(rng, 16, 8), _rand(rng, 16, 4), _rand(rng, 8, 32) * 0.3, _rand(rng, 32, 4) * 0.3, 0.1
  tw1, tw2 = T(w1), T(w2)
  loss = ((T(x) @ tw1).relu() @ tw2 - T(y)).square().mean()
  g1t, g2t = loss.gradient(tw1, tw2)
  got = np.concatenate([(tw1 - lr * g1t).numpy().ravel(), (tw2 - lr * g2t).numpy().ravel()])
  x64, h = x.astype(np.float64), x.astype(np.float64) @ w1
  hr = np.maximum(h, 0)
  d_out = 2 * (hr @ w2 - y) / y.size
  g2, g1 = hr.T @ d_out, x64.T @ ((d_out @ w2.T) * (h > 0))
  return got, np.concatenate([(w1 - lr * g1).ravel(), (w2 - lr * g2).ravel()]).astype(np.float32)

PROGRAMS = {"elementwise": prog_elementwise, "reduction": prog_reduction, "matmul": prog_matmul, "conv2d": prog_conv2d,
            "softmax": prog_softmax, "mlp_train_step": prog_mlp_train_step}

# ---- child: runs inside a process started with DEV set ----
def _device_counters() -> dict:
  """Emulator counters published by mockgpu; empty when tinygrad is not running on a mock device."""
  if not os.environ.get("DEV", "").startswith("MOCK"): return {}
  from mockgpu import stats
  return stats.totals()

def _child(programs:list[str]) -> int:
  from tinygrad import Tensor, Device, GlobalCounters
  def emit(**kw): print(json.dumps(kw), flush=True)
  try: Device[Device.DEFAULT]
  except Exception as e:
    emit(unavailable=f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"[:300])
    return 0
  for name in programs:
    rng = np.random.default_rng(1234)
    GlobalCounters.reset()
    before, st = _device_counters(), time.perf_counter()
    try:
      got, ref = PROGRAMS[name](Tensor, rng)
      wall, after = time.perf_counter() - st, _device_counters()
      ok = got.shape == ref.shape and bool(np.allclose(got, ref, rtol=1e-4, atol=1e-4))
      emit(program=name, correct=ok, kernels=GlobalCounters.kernel_count, wall_s=wall,
           wave_instructions=after.get("wave_instructions", 0) - before.get("wave_instructions", 0) if after else None,
           device_s=after.get("device_s", 0) - before.get("device_s", 0) if after else None,
           detail="" if ok else f"max abs err {float(np.max(np.abs(got - ref))) if got.shape == ref.shape else 'shape ' + str(got.shape)}")
    except Exception as e:
      emit(program=name, correct=False, kernels=GlobalCounters.kernel_count, wall_s=time.perf_counter() - st, wave_instructions=None,
           device_s=None, detail=f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"[:300])
  return 0

# ---- parent ----
def _fmt_time(s) -> str:
  if s is None: return "-"
  return f"{s*1e6:.1f} us" if s < 1e-3 else f"{s*1e3:.2f} ms" if s < 1 else f"{s:.2f} s"

def run_device(d:DemoDevice, programs:list[str], timeout:float, progress) -> list[dict]:
  """Run the programs on one device in a child process; one result row per program (or one 'unavailable' row)."""
  if (why:=unavailable_reason(d)) is not None:
    progress(d, row:={"unavailable": why})
    return [row]
  env = {**os.environ, "DEV": d.dev, **dict(d.env)}
  cmd = [sys.executable, "-m", "mockgpu.demo", "--child", ",".join(programs)]
  rows: list[dict] = []
  try:
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + timeout
    assert proc.stdout is not None
    for raw in proc.stdout:
      if not raw.startswith("{"): continue
      rows.append(row:=json.loads(raw))
      progress(d, row)
      if time.monotonic() > deadline: proc.kill(); break
    proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    err = proc.stderr.read() if proc.stderr else ""
  except subprocess.TimeoutExpired:
    proc.kill()
    err = f"timed out after {timeout:.0f} s"
  if not rows:
    rows.append({"unavailable": f"child process failed: {(err.strip().splitlines() or ['no output'])[-1][:300]}"})
    progress(d, rows[-1])
  elif "unavailable" not in rows[0] and len(rows) < len(programs):
    done, why = {r["program"] for r in rows}, (err.strip().splitlines() or ["device process died"])[-1][:200]
    rows += [{"program": p, "correct": False, "detail": f"not run: {why}"} for p in programs if p not in done]
  return rows

def main(argv:list[str]|None=None) -> int:
  ap = argparse.ArgumentParser(prog="mockgpu.demo", description=__doc__.split("\n\n")[0])
  ap.add_argument("--devices", default=",".join(d.name for d in DEVICES))
  ap.add_argument("--programs", default=",".join(PROGRAMS))
  ap.add_argument("--timeout", type=float, default=900)
  ap.add_argument("--child", help=argparse.SUPPRESS)
  args = ap.parse_args(argv)
  if args.child is not None: return _child(args.child.split(","))
  wanted, programs = args.devices.split(","), args.programs.split(",")
  known = DEVICES + [REFERENCE]
  if bad:=[n for n in wanted if n not in {d.name for d in known}] + [p for p in programs if p not in PROGRAMS]:
    ap.error(f"unknown device/program {bad}; devices: {[d.name for d in DEVICES]}, programs: {list(PROGRAMS)}")
  def progress(d, row):
    what = row.get("program", "device")
    status = "not available: " + row["unavailable"] if "unavailable" in row else ("ok" if row["correct"] else "WRONG " + row.get("detail", ""))
    print(f"  {d.name:<11} {what:<15} {status}", file=sys.stderr, flush=True)
  table, all_ok, any_ran = [], True, False
  for d in [d for d in known if d.name in wanted]:
    print(f"[demo] {d.name} (DEV={d.dev})", file=sys.stderr, flush=True)
    for row in run_device(d, programs, args.timeout, progress):
      if "unavailable" in row: table.append((d.name, "-", "not available", "", "", "", "", row["unavailable"])); continue
      any_ran = True
      all_ok &= bool(row["correct"])
      wi = row.get("wave_instructions")
      table.append((d.name, row["program"], "yes" if row["correct"] else "NO", str(row.get("kernels", "-")), "-" if wi is None else f"{wi:,}",
                    _fmt_time(row.get("device_s")), _fmt_time(row.get("wall_s")), row.get("detail", "")))
  head = ("device", "program", "correct", "kernels", "wave-insts", "emulated", "wall", "note")
  widths = [max(len(r[i]) for r in [head, *table]) for i in range(len(head))]
  for r in [head, tuple("-" * w for w in widths), *table]: print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
  return 0 if all_ok and any_ran else 1

if __name__ == "__main__": sys.exit(main())
