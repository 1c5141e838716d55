"""`MOCKGPU_PROFILE=1`: where the mock's host time goes, per kernel and per part of the mock, printed to stderr at exit.

Per kernel (by its code: the bytes at its entry, and its launch shape): dispatches, wave-instructions, and the emulator's host
seconds split as `DispatchStats.host` reports them (instruction decode and step build, execution, the timing replay). Per part
of the mock: PM4 packets other than the kernels they launch, SDMA packets, ioctls, and the host's waits for the GPU (tinygrad
polling a signal while the worker emulates: time the host would also spend waiting for a real GPU). Every figure is wall time
measured with `time.perf_counter` around the work itself; the process's own total is printed beside them, so what is left is
tinygrad's (its scheduler, codegen, AMDGPU compile). Kernels are named after the tinygrad programs still alive at exit
(`AMDProgram.name`, matched by their code bytes); others by a hash of their code. `MOCKGPU_PROFILE=PATH` also writes the
figures as JSON to PATH.
"""
from __future__ import annotations
import atexit, gc, hashlib, json, os, sys, threading, time, weakref
from dataclasses import dataclass, field
from emu.common import hostparts

PENDING_TIDY = 4096   # a kernel's deferred dispatches kept before those already replayed are folded in
CODE_BYTES = 256   # bytes at a kernel's entry that identify it (tinygrad kernels differ well within their first instructions)

@dataclass
class KernelRow:
  """What the dispatches of one kernel cost the host."""
  label: str
  dispatches: int = 0
  waves: int = 0
  wave_instructions: int = 0
  device_s: float = 0.0
  host: dict[str, float] = field(default_factory=dict)
  deferred: list = field(default_factory=list)   # (DispatchStats, its host seconds then) of dispatches whose replay has not run yet

class Profile:
  """A profile; `enabled` is False unless `setting` (MOCKGPU_PROFILE's value) is set (then every hook is one attribute test).
  `at_exit`: print the report when the process exits (the process-wide PROFILE)."""
  def __init__(self, setting:str|None, at_exit:bool=False):
    self.enabled, self.path = bool(setting), (setting if setting and setting != "1" else None)
    self.kernels: dict[tuple, KernelRow] = {}
    self.parts: dict[str, float] = {}
    self.codes: dict[bytes, str] = {}    # code hash -> its label
    self.memories: weakref.WeakSet = weakref.WeakSet()   # the GPU memories kernels ran from (to read live programs' code at exit)
    self.started = time.perf_counter()
    self._lock = threading.Lock()
    self._registered = not at_exit

  def add(self, part:str, seconds:float):
    """Charge `seconds` of host time to a part of the mock ('PM4', 'SDMA', 'ioctl', 'host waits')."""
    with self._lock: self.parts[part] = self.parts.get(part, 0.0) + seconds

  def dispatch(self, memory, d, stats):
    """One finished dispatch (an emu.amd.api.Dispatch and its DispatchStats) of a kernel in `memory` (an emu MemoryMap)."""
    digest = code_digest(memory, d.code_addr)
    key = (digest, tuple(d.grid), tuple(d.workgroup))
    with self._lock:
      if not self._registered:   # registered after tinygrad's own exit handlers, so it runs before they free its programs
        self._registered = True
        atexit.register(self.report)
      self.memories.add(memory)
      label = self.codes.setdefault(digest, f"code {digest.hex()}")
      row = self.kernels.setdefault(key, KernelRow(label))
      row.dispatches += 1
      row.waves += stats.waves
      row.wave_instructions += stats.wave_instructions
      _fold(row, stats.host)   # (a deferred replay's seconds join when it has run, with its device time)
      if stats.pending: row.deferred.append((stats, dict(stats.host)))
      else: row.device_s += stats.seconds
      tidy = len(row.deferred) >= PENDING_TIDY
    if tidy: self._settle(replay=False)   # a run that never reads the clock: fold the ones replayed since (the budget runs some)

  def _settle(self, replay:bool) -> tuple[int, float]:
    """Fold in the deferred dispatches whose replay has run since (with `replay`: run the rest first); (how many this replayed,
    their host seconds)."""
    n, secs = 0, 0.0
    with self._lock:
      for row in self.kernels.values():
        keep = []
        for st, host in row.deferred:
          if replay and st.pending:
            st.resolve()
            n, secs = n + 1, secs + st.host.get("observe", 0.0) - host.get("observe", 0.0)
          if st.pending: keep.append((st, host))
          else:
            row.device_s += st.seconds
            _fold(row, {k: v - host.get(k, 0.0) for k, v in st.host.items()})
        row.deferred = keep
    return n, secs

  def name_kernels(self):
    """Label kernels with the names of the live tinygrad programs whose entry holds the same code."""
    amd = sys.modules.get("tinygrad.runtime.ops_amd")
    if amd is None or not self.kernels: return
    programs = [o for o in gc.get_objects() if isinstance(o, amd.AMDProgram) and isinstance(getattr(o, "prog_addr", None), int)]
    for p in programs:
      for mem in list(self.memories):
        if (digest := code_digest(mem, p.prog_addr)) in self.codes: self.codes[digest] = p.name
    for (digest, _, _), row in self.kernels.items(): row.label = self.codes[digest]

  def seconds(self) -> dict[str, float]:
    """The host seconds so far, keys ending in `_s`: the emulator's (`emulated`, split into `decode`, `execute` and `timing`, the
    replay) and each part of the mock (`PM4` less the kernels it launched, `SDMA`, `ioctl`, `host waits`), and the emulator's one-off
    work by kind (emu.common.hostparts: `pcode`, `step build`, ...; inside decode and execute, `region compile` also on the background
    compile thread). Timing replays still deferred (nothing has read their cycles yet) have not cost anything and are not counted."""
    self._settle(replay=False)
    with self._lock:
      host: dict[str, float] = {}
      for row in self.kernels.values():
        for k, v in row.host.items(): host[k] = host.get(k, 0.0) + v
      parts = {f"{k}_s": v for k, v in self.parts.items()}
    emulated, decode, timing = host.get("total", 0.0), host.get("decode", 0.0), host.get("observe", 0.0)
    if "PM4_s" in parts: parts["PM4_s"] = max(0.0, parts["PM4_s"] - emulated)   # the PM4 engines' time less the kernels they launched
    one_off = {f"{k}_s": v for k, v in hostparts.seconds().items()}
    return {"emulated_s": emulated, "decode_s": decode, "execute_s": emulated - decode - timing, "timing_s": timing, **parts, **one_off}

  def counts(self) -> tuple[int, int]:
    """(dispatches so far, those whose timing replay has not run: nothing has read their cycles)."""
    self._settle(replay=False)
    with self._lock: return sum(r.dispatches for r in self.kernels.values()), sum(len(r.deferred) for r in self.kernels.values())

  def table(self) -> str:
    """The report's text (it replays what is still deferred, to show every kernel's device time)."""
    n_late, late_s = self._settle(replay=True)
    wall = time.perf_counter() - self.started
    rows = sorted(self.kernels.items(), key=lambda kv: -kv[1].host.get("total", 0.0))
    emu = sum(r.host.get("total", 0.0) for _, r in rows)
    out = [f"mockgpu profile: {wall:.2f} s of process wall time since the mock started; kernels emulated {emu:.2f} s",
           f"{'kernel':<28} {'grid':>14} {'wg':>11} {'n':>5} {'Mwinst':>8} {'host s':>8} {'decode':>7} {'execute':>8} {'timing':>7} {'winst/s':>9}"]
    for (_, grid, wg), r in rows[:40]:
      h = r.host
      tot, dec, obs = h.get("total", 0.0), h.get("decode", 0.0), h.get("observe", 0.0)
      rate = f"{r.wave_instructions / (tot - dec - obs) / 1e6:.2f}M" if tot - dec - obs > 0 else "-"
      out.append(f"{r.label[:28]:<28} {'x'.join(map(str, grid)):>14} {'x'.join(map(str, wg)):>11} {r.dispatches:>5} "
                 f"{r.wave_instructions / 1e6:>8.3f} {tot:>8.3f} {dec:>7.3f} {tot - dec - obs:>8.3f} {obs:>7.3f} {rate:>9}")
    if len(rows) > 40: out.append(f"... {len(rows) - 40} more kernels ({sum(r.host.get('total', 0.0) for _, r in rows[40:]):.3f} s)")
    parts = {k.removesuffix("_s"): v for k, v in self.seconds().items() if k.removesuffix("_s") in self.parts}
    if n_late: out.append(f"timing replays of {n_late} dispatches ran only for this report ({late_s:.3f} s, in the timing column): "
                          "nothing read their cycles before")
    out.append("mock parts (host s): " + ", ".join(f"{k} {v:.3f}" for k, v in sorted(parts.items())) +
               " (PM4 excludes the kernels; host waits overlap the emulation they wait for)")
    return "\n".join(out)

  def report(self):
    """Print the table (and write the JSON) at exit."""
    self.name_kernels()
    print(self.table(), file=sys.stderr)
    if self.path:
      data = {"wall_s": time.perf_counter() - self.started, "parts": self.parts,
              "kernels": [{"label": r.label, "grid": g, "workgroup": w, "dispatches": r.dispatches, "waves": r.waves,
                           "wave_instructions": r.wave_instructions, "device_s": r.device_s, "host": r.host}
                          for (_, g, w), r in self.kernels.items()]}
      with open(self.path, "w") as f: json.dump(data, f, indent=1)

def _fold(row:KernelRow, host:dict[str, float]):
  for k, v in host.items(): row.host[k] = row.host.get(k, 0.0) + v

def code_digest(memory, addr:int) -> bytes | None:
  """A short hash of the CODE_BYTES at `addr` (fewer where the mapping ends sooner), None if nothing is mapped there."""
  if (m := memory.find(addr, 1)) is None: return None
  return hashlib.sha1(memory.read(addr, min(CODE_BYTES, m.end - addr))).digest()[:6]

PROFILE = Profile(os.environ.get("MOCKGPU_PROFILE"), at_exit=True)
