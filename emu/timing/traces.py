"""Load tinygrad SQTT profile pickles (real hardware thread traces) and decode them into per-wave issue sequences.

The pickles hold tinygrad profiler events written by a newer tinygrad than the pinned wheel, so they are read with a restricted
unpickler that maps every `tinygrad.*` class to `Record` (a plain attribute bag) and allows only `decimal` besides. Decoding uses
the wheel's `tinygrad.renderer.amd.sqtt` (`decode`, through `packets`, which fixes CDNA times after saturated gaps, for wave
start/end packets of every CU/SIMD); the instruction issue stream of the one traced SIMD (CU 0, SIMD 0 of each shader engine)
is mapped to the code by `rdna_insts` (the wheel's `map_insts` rule, tolerant of op types the pinned wheel does not name) and,
on CDNA, whose packets carry no PC, by `cdna_insts`.
"""
from __future__ import annotations
import decimal, pickle, re
from dataclasses import dataclass
from pathlib import Path
from emu.timing.captured import Issue, TracedKernel, WaveStart, WaveTrace


class Record:
  """Stand-in for any tinygrad class in a pickle: keeps constructor arguments (`args`) and state as attributes."""
  def __init__(self, *args, **kwargs): self.args, self.__dict__ = args, {**kwargs, **self.__dict__}
  def __setstate__(self, state):
    for part in (state if isinstance(state, tuple) else (state,)):
      if isinstance(part, dict): self.__dict__.update(part)
  def __reduce__(self): raise TypeError("Record is read-only data")

class _Unpickler(pickle.Unpickler):
  _records: dict[str, type] = {}
  def find_class(self, module:str, name:str):
    if module == "tinygrad" or module.startswith("tinygrad."):
      if name not in self._records: self._records[name] = type(name, (Record,), {})
      return self._records[name]
    if (module, name) == ("decimal", "Decimal"): return decimal.Decimal
    raise pickle.UnpicklingError(f"trace pickle references {module}.{name}, which is not allowed")

def load_pickle(path:str|Path):
  """What one capture pickle holds, tinygrad classes as `Record` subclasses named like the original class."""
  with open(path, "rb") as f:
    try: return _Unpickler(f).load()
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError) as e:
      raise ValueError(f"not a tinygrad profile pickle ({type(e).__name__}: {e})") from e

def load_events(path:str|Path, obj=None) -> list:
  """The profiler events of one pickle (`obj`: what it holds, when read already)."""
  events = load_pickle(path) if obj is None else obj
  if not isinstance(events, list): raise ValueError(f"not a tinygrad profile pickle (holds a {type(events).__name__}, not a list of events)")
  return events

_ANSI = re.compile(r"\x1b\[(\d+)m")

def launch_dims(display:str) -> tuple[tuple[int, int, int], tuple[int, int, int]] | None:
  """(grid, workgroup) from a colored tinygrad kernel name (blue: global dims, cyan: local dims), None if it has none.

  tinygrad prints dimensions slowest first; the launch takes them fastest first (x = last)."""
  glob, loc, color = [], [], None
  for tok in re.split(r"(\x1b\[\d+m)", display):
    if m := _ANSI.fullmatch(tok): color = int(m.group(1)); continue
    for num in re.findall(r"\d+", tok):
      if color == 34: glob.append(int(num))
      elif color == 36: loc.append(int(num))
  if not glob and not loc: return None
  pad = lambda d: tuple((d[::-1] + [1, 1, 1])[:3])
  return pad(glob), pad(loc)

_TARGET = re.compile(r"gfx[0-9a-f]{3,4}")

def traced_target(events:list, path:str|Path="") -> str:
  """The traced GPU's target ('gfx1201'): from the device properties the capture recorded (KFD's gfx_target_version,
  major * 10000 + minor * 100 + stepping), else the pickle's folder name when it names a target; ValueError otherwise."""
  for e in events:
    if type(e).__name__ == "ProfileDeviceEvent" and str(getattr(e, "device", "")).startswith("AMD"):
      if version := (getattr(e, "props", None) or {}).get("gfx_target_version"):
        return f"gfx{version // 10000}{version // 100 % 100:x}{version % 100:x}"
  if _TARGET.fullmatch(folder := Path(path).parent.name): return folder
  raise ValueError(f"{path}: the capture records no AMD device target and its folder does not name one; give the arch")

@dataclass
class Mapped:
  """An instruction packet's place in the code: PC, wave slot and the DSL instruction (as the wheel's InstructionInfo)."""
  pc: int
  wave: int
  inst: object

def cdna_reported(instr, spec, pc:int) -> bool:
  """Whether a CDNA capture has an instruction packet for `instr` (emu.amd.decode.Instr at `pc`): the layout's rule
  (emu.amd.sqtt_layouts.CDNA.issue; s_waitcnt, s_nop, s_barrier and other immediate SOPP instructions have none)."""
  from emu.amd.step_build import compile_step
  from emu.amd.timing import classify
  from emu.amd.sqtt_layouts import CDNA_LAYOUT
  return CDNA_LAYOUT.issue(classify(compile_step(instr, spec, pc)), instr, False) is not None

def packets(blob:bytes):
  """The wheel's `sqtt.decode` of one stream, with CDNA times resynchronised after a saturated gap.

  CDNA packets carry no time of their own: a CDNA_MISC advances it by at most 255 ticks (1020 cycles), and hardware writes that
  saturated value for any longer gap, so every time after it is a lower bound until the next absolute CDNA_TIMESTAMP, which the
  decoder jumps to. The jump is the time the saturated gap lost: the packets since the last saturated CDNA_MISC move forward by
  it (after an earlier saturated gap in the same interval they keep their lower bounds: the loss cannot be split). Evidence, the
  gfx950 plus captures: the wheel puts the wave end 1032/1036 cycles after the start, right after a saturated gap; the timestamp
  that follows says 3148/3116, and the SQ_BUSY_CYCLES counter 3149/3113."""
  from tinygrad.renderer.amd import sqtt
  held: list = []   # packets since the last saturated CDNA_MISC, waiting for the next timestamp
  for p in sqtt.decode(blob):
    if isinstance(p, sqtt.CDNA_TIMESTAMP) and held:
      if (lost := p._time - held[-1]._time) > 0:
        for q in held: q._time += lost
      yield from held
      held = []
    if isinstance(p, sqtt.CDNA_MISC) and p.delta == sqtt.CDNA_MISC.delta.mask:
      yield from held
      held = [p]
    elif held: held.append(p)
    else: yield p
  yield from held

UNISSUED_NAMES = {"S_DELAY_ALU", "S_WAIT_ALU", "S_BARRIER_WAIT"}   # consumed without an issue packet (emu.amd_ops.UNISSUED)

def op_name(p) -> str | None:
  """An instruction packet's op name, read from its raw field (None for a value the wheel's enum does not name: captures by a
  newer tinygrad carry op types the pinned decoder lacks, and reading `.op` would raise)."""
  f = type(p).op
  try: return f._enum((p._raw >> f.lo) & f.mask).name
  except ValueError: return None

def rdna_insts(blob:bytes, lib:bytes, arch:str):
  """(packet, Mapped or None) for SIMD 0 of CU 0 of an RDNA capture, as the wheel's `map_insts` maps them (the code followed
  from its entry per wave slot; VALUINST, IMMEDIATE, IMMEDIATE_MASK and INST packets are the next issued instruction, s_delay_alu
  / s_wait_alu / s_barrier_wait skipped except under an IMMEDIATE_MASK, a JUMP takes the branch, WAVEEND is s_endpgm), but
  reading op types from the raw field: an op type the pinned wheel does not name counts as an issue of this SIMD, an OTHER_*
  one (another unit's memory op) does not. ValueError when the walk leaves the code (the capture does not follow it)."""
  from tinygrad.renderer.amd import sqtt
  from tinygrad.viz.serve import amd_decode
  from emu.amd.arch import get_spec
  code, endpgm = amd_decode(lib, arch), get_spec(arch).ins.s_endpgm()
  entry, wave_pc = next(iter(code)), {}
  def at(pc:int):
    if pc not in code: raise ValueError(f"the capture's instruction stream leaves the code at pc {pc:#x}")
    return code[pc]
  def issue(p, wave:int, jump:bool, skip:bool=True):
    inst = at(pc := wave_pc[wave])
    while skip and getattr(inst, "op_name", "") in UNISSUED_NAMES: inst = at(pc := pc + inst.size())
    step = inst.size()
    if jump:
      x = inst.simm16 & 0xffff
      step += 4 * (x - 0x10000 if x & 0x8000 else x)
    wave_pc[wave] = pc + step
    return p, Mapped(pc, wave, inst)
  for p in packets(blob):
    if getattr(p, "cu", 0) != 0 or getattr(p, "simd", 0) != 0: continue
    if isinstance(p, (sqtt.WAVESTART, sqtt.WAVESTART_RDNA4)): wave_pc[p.wave] = entry
    elif isinstance(p, (sqtt.WAVEEND, sqtt.WAVEEND_RDNA4)) and p.wave in wave_pc: yield p, Mapped(wave_pc.pop(p.wave), p.wave, endpgm)
    elif isinstance(p, sqtt.IMMEDIATE_MASK):
      for wave in range(16):
        if p.mask >> wave & 1 and wave in wave_pc: yield issue(p, wave, False, skip=False)   # (the wheel skips nothing here)
    elif isinstance(p, (sqtt.VALUINST, sqtt.IMMEDIATE, sqtt.INST, sqtt.INST_RDNA4)) and p.wave in wave_pc:
      name = op_name(p) if isinstance(p, (sqtt.INST, sqtt.INST_RDNA4)) else None
      if name is not None and name.startswith("OTHER_"): yield p, None
      else: yield issue(p, p.wave, name == "JUMP")
    else: yield p, None

def cdna_insts(blob:bytes, lib:bytes, arch:str):
  """`map_insts` for a CDNA capture, whose instruction packets the wheel maps to no PC: (packet, Mapped or None) for SIMD 0 of
  the traced CU. Each CDNA_INST is the next instruction from the wave's PC that the capture reports (`cdna_reported`), a JUMP
  takes the branch, and CDNA_WAVEEND is the wave's s_endpgm."""
  from tinygrad.renderer.amd import sqtt
  from tinygrad.viz.serve import amd_decode
  from emu.amd.arch import get_spec
  from emu.amd.decode import decode
  spec = get_spec(arch)
  code = {pc: decode(i.to_bytes() + bytes(8), spec, pc) for pc, i in amd_decode(lib, arch).items()}
  entry, wave_pc = next(iter(code)), {}
  reported = {pc: cdna_reported(instr, spec, pc) for pc, instr in code.items()}
  def next_reported(pc:int, end:bool=False) -> int:
    while pc in code and not (code[pc].name == "s_endpgm" if end else reported[pc]): pc += code[pc].size
    return pc
  for p in packets(blob):
    if isinstance(p, sqtt.CDNA_WAVESTART) and p.cu == 0 and p.simd == 0: wave_pc[p.wave] = entry
    elif isinstance(p, sqtt.CDNA_INST) and p.simd == 0 and p.wave in wave_pc and (pc := next_reported(wave_pc[p.wave])) in code:
      instr = code[pc]
      yield p, Mapped(pc, p.wave, instr.inst)
      jump = p.op == sqtt.InstOpCDNA.JUMP
      wave_pc[p.wave] = pc + instr.size + 4 * (((instr.inst.simm16 & 0xffff) ^ 0x8000) - 0x8000) if jump else pc + instr.size
    elif isinstance(p, sqtt.CDNA_WAVEEND) and p.cu == 0 and p.simd == 0 and p.wave in wave_pc:
      if (pc := next_reported(wave_pc.pop(p.wave), end=True)) in code: yield p, Mapped(pc, p.wave, code[pc].inst)
    else: yield p, None

def pmc_counter(event, name:str):
  """One performance counter of a ProfilePMCEvent (tinygrad samples a few per dispatch when it traces): a uint64 array shaped
  (xcc, instance, shader engine, array, WGP), or None if the event did not sample it."""
  import numpy as np
  for s in event.sched:
    if s.name == name: return np.frombuffer(event.blob[s.off:s.off + s.size], dtype=np.uint64).reshape(s.xcc, s.inst, s.se, s.sa, s.wgp)
  return None

ELF_IDENT = b"\x7fELF\x02\x01\x01"   # ELF magic, 64-bit, little-endian, version 1

def code_object(lib:bytes) -> bytes:
  """A capture's code object, readable by tinygrad's ELF loader: some of tinygrad's own captures hold a minimal ELF whose
  identification bytes are zeroed (the section headers, at e_shoff, are intact); those get the ELF64 little-endian ident back."""
  if lib[:4] == b"\x7fELF" or len(lib) < 64 or any(lib[:16]): return lib
  return ELF_IDENT + lib[len(ELF_IDENT):]

def load_trace(path:str|Path, arch:str|None=None) -> list[TracedKernel]:
  """Every traced dispatch in one pickle, in capture order. arch: the traced GPU's target; by default what the capture recorded
  (`traced_target`). A capture kept as decoded issue lists (emu.timing.decoded) is one kernel, launched as the launch.json
  beside it says."""
  from tinygrad.renderer.amd import sqtt
  from emu.amd.arch import get_spec
  from emu.amd.sqtt_layouts import LAYOUTS
  from emu.timing import decoded
  obj = load_pickle(path)
  if decoded.is_decoded(obj): return [decoded.load_decoded(obj, path, arch or traced_target([], path), *decoded.folder_launch(path))]
  events = load_events(path, obj)
  arch = arch or traced_target(events, path)
  kind = lambda e: type(e).__name__
  progs = {getattr(e, "tag", i): e for i, e in enumerate(events) if kind(e) == "ProfileProgramEvent"}
  execs = [e.arg for e in events if kind(e) == "ProfilePointEvent" and getattr(e, "name", "") == "exec" and e.arg.get("name")]
  starts_t = (sqtt.WAVESTART, sqtt.WAVESTART_RDNA4, sqtt.CDNA_WAVESTART)
  ends_t = (sqtt.WAVEEND, sqtt.WAVEEND_RDNA4, sqtt.CDNA_WAVEEND)
  # one traced dispatch per (program, execution): a program run twice has two sets of per-engine blobs (exec_tag tells them apart)
  dispatches: dict[tuple, list] = {}
  for e in events:
    if kind(e) == "ProfileSQTTEvent" and e.kern in progs: dispatches.setdefault((e.kern, getattr(e, "exec_tag", None)), []).append(e)
  kernels = []
  for (tag, _), sq in dispatches.items():
    prog, lib = progs[tag], code_object(progs[tag].lib)
    display = next((a["name"] for a in execs if _ANSI.sub("", a["name"]).strip() == prog.name), prog.name)
    nbufs = next((len(a.get("bufs", [])) for a in execs if _ANSI.sub("", a["name"]).strip() == prog.name), 0)
    waves, starts, ends = [], [], []
    for ev in sq:
      slot_starts: dict[int, list[int]] = {}
      for p in packets(ev.blob):
        if isinstance(p, starts_t):
          starts.append(WaveStart(int(ev.se), getattr(p, "cu", 0), getattr(p, "simd", 0), p.wave, p._time))
          if getattr(p, "cu", 0) == 0 and getattr(p, "simd", 0) == 0: slot_starts.setdefault(p.wave, []).append(p._time)
        elif isinstance(p, ends_t): ends.append((int(ev.se), p._time))
      if not ev.itrace: continue
      live: dict[int, WaveTrace] = {}
      for p, info in (rdna_insts if LAYOUTS[get_spec(arch).family].has_pc else cdna_insts)(ev.blob, lib, arch):
        if info is None: continue
        if info.wave not in live:
          live[info.wave] = WaveTrace(int(ev.se), info.wave, (slot_starts.get(info.wave) or [None]).pop(0))
        w = live[info.wave]
        w.issues.append(Issue(info.pc, info.inst, p._time))
        if isinstance(p, ends_t): w.end = p._time; waves.append(live.pop(info.wave))
    kernels.append(TracedKernel(prog.name, display, lib, int(prog.base), arch, waves, starts, ends, nbufs))
  return kernels
