"""Captures kept as already-decoded issue lists: `{wave: [(pc, cycle, packet kind, instruction text), ...]}` per kernel.

Such a pickle holds no code object: the instruction text is tinygrad's DSL spelling (`v_add_f32_e32(v[1], 1.0, v[1])`). The
code is rebuilt from it: each text is evaluated by a restricted evaluator (calls of the arch's instruction constructors, register
subscripts, constants, enum members: nothing else) in the pinned wheel's `tinygrad.runtime.autogen.amd.<isa>.ins`, must spell
back to the same text, and the instructions, ordered by PC, must tile the code from its first PC with no gap (an instruction the
capture did not report, e.g. an s_delay_alu) and no overlap. The code object is then packed by the wheel's own ELF packer
(`tinygrad.renderer.amd.elf.assemble_linear`, the packer hand-written tinygrad kernels go through: code at ELF offset 256).
A capture that fails any check is refused with the reason (truncated text, a gap) instead of being guessed at.

The launch is not recorded either: a folder of such captures holds a `launch.json` ({"grid": [x, y, z], "workgroup": [x, y, z]})
saying how its kernels were launched. The traced waves are those of one SIMD, taken in the order of their first issue.
"""
from __future__ import annotations
import ast, json, struct
from pathlib import Path
from emu.timing.captured import Issue, TracedKernel, WaveTrace

LDS_BYTES = 65536   # the rebuilt descriptor asks for all of a workgroup's LDS: the capture does not say how much the kernel used

def is_decoded(obj) -> bool:
  """Whether an unpickled capture is a decoded issue list (a dict of wave -> [(pc, cycle, kind, text)])."""
  if not isinstance(obj, dict) or not obj: return False
  rows = next(iter(obj.values()))
  return isinstance(rows, list) and all(isinstance(r, tuple) and len(r) == 4 and isinstance(r[3], str) for r in rows[:4])

def _namespace(arch:str) -> dict:
  import importlib
  isa = "rdna4" if arch.startswith("gfx12") else "rdna3" if arch.startswith("gfx11") else None
  if isa is None: raise ValueError(f"decoded captures are read for RDNA3/RDNA4 targets, not {arch}")
  mod = importlib.import_module(f"tinygrad.runtime.autogen.amd.{isa}.ins")
  return {k: getattr(mod, k) for k in dir(mod) if not k.startswith("_")}

def _evaluate(node:ast.AST, ns:dict):
  """The value of one node of an instruction's text: only constructor calls, names of the namespace, register subscripts
  (v[1], s[0:1]), constants, negated constants and enum members (VOPDOp.V_DUAL_MUL_F32)."""
  if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)): return node.value
  if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub): return -_evaluate(node.operand, ns)
  if isinstance(node, ast.Name) and node.id in ns: return ns[node.id]
  if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in ns and not node.attr.startswith("_"):
    return getattr(ns[node.value.id], node.attr)
  if isinstance(node, ast.Subscript):
    base = _evaluate(node.value, ns)
    if isinstance(node.slice, ast.Slice): return base[_evaluate(node.slice.lower, ns):_evaluate(node.slice.upper, ns)]
    return base[_evaluate(node.slice, ns)]
  if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and callable(ns.get(node.func.id)):
    return ns[node.func.id](*(_evaluate(a, ns) for a in node.args), **{k.arg: _evaluate(k.value, ns) for k in node.keywords})
  raise ValueError(f"not an instruction spelling: {ast.dump(node)[:80]}")

def instruction(text:str, ns:dict):
  """The DSL instruction a text spells (ValueError when it does not spell one, e.g. cut short, or spells back differently)."""
  try: inst = _evaluate(ast.parse(text, mode="eval").body, ns)
  except (SyntaxError, TypeError, KeyError, IndexError, AttributeError, ValueError) as e:
    raise ValueError(f"instruction text {text!r} does not spell an instruction ({type(e).__name__}: {e})") from None
  if repr(inst) != text: raise ValueError(f"instruction text {text!r} spells back as {inst!r}")
  return inst

def rebuild_code(rows:list[tuple[int, str]], arch:str) -> dict[int, object]:
  """The code the (pc, text) pairs of a capture tile: pc -> instruction, in PC order; ValueError at a gap, an overlap or two
  texts at one PC."""
  ns, at = _namespace(arch), {}
  for pc, text in rows:
    if at.setdefault(pc, text) != text: raise ValueError(f"pc {pc:#x} holds both {at[pc]!r} and {text!r}")
  pcs = sorted(at)
  insts = [instruction(at[pc], ns) for pc in pcs]
  for (pc, inst), nxt in zip(zip(pcs, insts), pcs[1:]):
    if pc + inst.size() != nxt:
      what = "an instruction the capture did not report" if nxt > pc + inst.size() else "overlapping instructions"
      raise ValueError(f"{nxt - pc - inst.size()} bytes between {at[pc]!r} at {pc:#x} and the next reported pc {nxt:#x} ({what})")
  return dict(zip(pcs, insts))

def code_object(insts:list, arch:str) -> bytes:
  """An ELF code object holding `insts` from the start of .text, packed by the wheel (kernel arguments pointer in s[0:1], wave32),
  its descriptor asking for LDS_BYTES of LDS."""
  from tinygrad.renderer.amd.elf import assemble_linear
  from tinygrad.runtime.support.elf import elf_loader
  from tinygrad.uop.ops import UOp, Ops
  lin = UOp(Ops.LINEAR, src=tuple(UOp(Ops.INS, arg=i) for i in insts))
  lib = bytearray(assemble_linear(UOp(Ops.PROGRAM, src=(UOp.sink(), lin)), lin, arch))
  rodata = next(sh for sh in elf_loader(bytes(lib))[1] if sh.name == ".rodata")
  struct.pack_into("<I", lib, rodata.header.sh_offset, LDS_BYTES)   # group_segment_fixed_size
  return bytes(lib)

def load_decoded(obj:dict, path:str|Path, arch:str, grid:tuple[int, int, int], workgroup:tuple[int, int, int]) -> TracedKernel:
  """A TracedKernel from a decoded capture (`obj`, read from `path`, whose file name names the kernel) launched as `grid` x
  `workgroup`. The capture holds no wave start packets: waves are ordered by their first issue, whose
  delta is not compared, and the kernel's hardware duration is first issue to last."""
  for wave, issues in obj.items():
    bad = next((r for r in issues if not (isinstance(r, tuple) and len(r) == 4 and all(isinstance(x, int) for x in r[:2])
                                          and all(isinstance(x, str) for x in r[2:]))), None) if isinstance(issues, list) else issues
    if bad is not None: raise ValueError(f"wave {wave!r}: {bad!r} is not a (pc, cycle, packet kind, instruction text) issue")
  rows = [(pc, text) for issues in obj.values() for pc, _, _, text in issues]
  by_pc = rebuild_code(rows, arch)
  if (first := next(iter(by_pc))) != 256: raise ValueError(f"the capture's code starts at pc {first:#x}, the packer places it at 0x100")
  lib = code_object(list(by_pc.values()), arch)
  waves = [WaveTrace(0, int(slot), None, issues[-1][1], [Issue(pc, by_pc[pc], cyc) for pc, cyc, _, _ in issues])
           for slot, issues in sorted(obj.items(), key=lambda kv: (kv[1][0][1] if kv[1] else 0, kv[0])) if issues]
  name = Path(path).stem
  span = max(w.end for w in waves) - min(w.issues[0].cycle for w in waves)
  return TracedKernel(name, name, lib, 0, arch, waves, [], [], 1, (grid, workgroup), span)

def folder_launch(path:str|Path) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
  """(grid, workgroup) from the launch.json beside a decoded capture (ValueError without one)."""
  spec = Path(path).parent / "launch.json"
  try: launch = json.loads(spec.read_text())
  except (OSError, ValueError) as e:
    raise ValueError(f"a decoded capture records no launch; {spec} must give it ({type(e).__name__}: {e})") from None
  grid, wg = (tuple(int(x) for x in launch.get(key, ())) for key in ("grid", "workgroup"))
  if len(grid) != 3 or len(wg) != 3: raise ValueError(f"{spec}: needs \"grid\" and \"workgroup\", three numbers each")
  return grid, wg
