"""Compile one opcode: pcode text -> parse -> pre-scan -> two generator passes -> Python source -> `CompiledOp`."""
from __future__ import annotations
import hashlib, importlib, pathlib, sys
from dataclasses import replace
from functools import cache
from emu.pcode.abi import ARCH_ALIASES, FP8_FNUZ, MODE_DEFAULTS, CompiledOp, Unsupported
from emu.pcode.codegen import ALIASES, LANE_OPERANDS, MASK_REGS, CodegenError, Gen
from emu.pcode.helpers import ADDR_HELPERS, MissingHelper, const_eval, namespace
from emu.pcode.lexer import PcodeSyntaxError
from emu.pcode.nodes import Assign, Binary, Call, For, Index, Name, Slice, Ternary, View, walk
from emu.pcode.parser import parse
from emu.pcode import cache as disk, cse, overrides, rules, wide_reads

# the generator's own fingerprint: a hash of the modules that decide what source an op compiles to, so the disk cache never serves
# code an older generator wrote (no version to bump by hand)
GENERATOR_MODULES = ("abi", "codegen", "compiler", "cse", "helpers", "lexer", "nodes", "parser", "rules", "wide_reads")
GENERATOR_VERSION = hashlib.sha256(b"".join((pathlib.Path(__file__).parent / f"{m}.py").read_bytes() for m in GENERATOR_MODULES)).hexdigest()[:12]
SCALAR_FORMATS = ("SOP1Op", "SOP2Op", "SOPCOp", "SOPKOp", "SOPPOp", "SMEMOp")

def arch_name(arch:str) -> str:
  """'gfx1100' -> 'rdna3' etc."""
  if arch not in ARCH_ALIASES: raise ValueError(f"unknown arch {arch!r}: expected one of {sorted(ARCH_ALIASES)}")
  return ARCH_ALIASES[arch]

@cache
def pcode_table(arch:str) -> dict:
  """The wheel's PCODE dict for an arch (opcode enum member -> vendor text)."""
  return importlib.import_module(f"tinygrad.runtime.autogen.amd.{arch_name(arch)}.str_pcode").PCODE

def ops_for(arch:str) -> list:
  """Every opcode of the arch that has pcode or an override, in table order."""
  a = arch_name(arch)
  ops = list(pcode_table(a))
  return ops + [op for op in overrides.extra_ops(a) if op not in pcode_table(a)]

def loop_maxima(stmts, env:dict | None=None) -> dict:
  """Upper bounds of the loop variables (constant `for` bounds) and of the integer variables assigned from them by `+` and `*`
  (`dOffset = pass * 12`), so that a slice `S0[sOffset + 31 : sOffset]` inside a loop gives its operand's width."""
  env = {} if env is None else env
  for s in stmts:
    if isinstance(s, For) and (end := const_eval(s.end)) is not None:
      env[s.var] = end
      loop_maxima(s.body, env)
    elif isinstance(s, Assign) and isinstance(s.target, Name) and (v := max_eval(s.value, env)) is not None: env[s.target.id] = v
  return env

def max_eval(e, env:dict):
  """The largest value of an expression of constants and non-negative bounded variables combined by + and * or chosen by a
  conditional (`S1.u32[sign(x) ? 2 : 9]`), else None."""
  if isinstance(e, Name): return env.get(e.id)
  if isinstance(e, Binary) and e.op in ("+", "*"):
    a, b = max_eval(e.a, env), max_eval(e.b, env)
    return None if a is None or b is None or a < 0 or b < 0 else a + b if e.op == "+" else a * b
  if isinstance(e, Ternary):
    a, b = max_eval(e.a, env), max_eval(e.b, env)
    return None if a is None or b is None else max(a, b)
  return const_eval(e)

# the ISA operand table's fields (tinygrad.runtime.autogen.amd.<arch>.operands) -> the pcode's operand names; the destination is
# vdst for vector ops and sdst for scalar ones (a vector op's sdst is its carry/lane mask, not D0)
TABLE_SOURCES = {"src0": "S0", "vsrc0": "S0", "ssrc0": "S0", "src1": "S1", "vsrc1": "S1", "ssrc1": "S1", "src2": "S2"}

@cache
def operand_table(arch:str) -> dict:
  """The wheel's OPERANDS dict for an arch (opcode -> {field: (Fmt, bits, OpType)})."""
  return importlib.import_module(f"tinygrad.runtime.autogen.amd.{arch_name(arch)}.operands").OPERANDS

def table_widths(arch:str, op) -> dict[str, int]:
  """Bit widths of an opcode's S0/S1/S2/D0 per the ISA operand table (only the fields it lists)."""
  names = TABLE_SOURCES | ({"sdst": "D0"} if type(op).__name__ in SCALAR_FORMATS else {"vdst": "D0"})
  return {names[f]: bits for f, (_, bits, _) in operand_table(arch).get(op, {}).items() if f in names}

def operand_base(e) -> Name | None:
  """The Name an operand expression `S0` or `S0.u32` reads, else None."""
  return e if isinstance(e, Name) else e.expr if isinstance(e, View) and isinstance(e.expr, Name) and e.typ else None

SOURCES = ("S0", "S1", "S2", "D0")   # operands whose views the scan records (D0: an accumulator or merge target the op reads)

def _under_bits(e):
  """The expression a chain of bit slices / indices selects from (`S0[15 : 0]` -> S0)."""
  while isinstance(e, (Slice, Index)): e = e.expr
  return e

# per-wave registers (and their widths): with a scalar op compiled across waves (`compile_across_waves`) they are per-lane values
# like S0, at least this wide however the pcode spells them
WAVE_REGS = {"SCC": 1, "M0": 32, "EXEC": 64, "VCC": 64, "PC": 64, "EXECZ": 1, "VCCZ": 1}

def scan(stmts, mode:str, waves:bool=False) -> dict:
  """Operand widths, lane-mask registers and declared variables of an entry. An operand's width is the most bits the pcode reaches:
  its widest typed view (`D0.f16 = S0.f16 + S1.f16`: 16 bits each), bounded slice or bit index (V_CMP_CLASS_F16's mask
  `S1.u32[sign(S0.f16) ? 2 : 9]`: 10 bits; S_CVT_HI_F32_F16's `S0[31 : 16]`: 32), or 32 bits where it is used bare."""
  widths: dict[str, int] = {}
  views: dict[str, set[str]] = {}   # source operand -> the type kinds the pcode reads it as (S0.f32, S1[15 : 0].u16: 'f', 'u')
  maxima = loop_maxima(stmts)
  lanemask, operands = set(), set()
  def note(n, w):
    n = ALIASES.get(n, n)
    if n in LANE_OPERANDS or n.startswith(("VDATA", "SDATA", "RETURN_DATA", "DATA")) or waves and n in WAVE_REGS:
      operands.add(n); widths[n] = max(widths.get(n, 0), w, WAVE_REGS.get(n, 0) if waves else 0)
  sized = set()   # the views and Names below a bounded slice, bit index or typed view: counted there, not as whole or bare uses
  for node in walk(stmts):
    if isinstance(node, Call) and node.name in ADDR_HELPERS: note("ADDR", 64)
    if isinstance(node, (Slice, Index)) and (base := operand_base(node.expr)) is not None and \
       (top := max_eval(node.hi if isinstance(node, Slice) else node.index, maxima)) is not None:
      note(base.id, top + 1)
      sized.update((id(node.expr), id(base)))
    if isinstance(node, View) and node.typ and isinstance(base := _under_bits(node.expr), Name) and \
       (src := ALIASES.get(base.id, base.id)) in SOURCES:
      views.setdefault(src, set()).add(node.typ[0])
    if isinstance(node, View) and isinstance(node.expr, Name) and node.typ and id(node) not in sized:
      note(node.expr.id, node.typ[1])
      sized.add(id(node.expr))
    elif isinstance(node, Name) and id(node) not in sized: note(node.id, 32)
    if isinstance(node, Index) and mode == "np":
      b = node.expr.expr if isinstance(node.expr, View) else node.expr
      i = node.index.expr if isinstance(node.index, View) else node.index
      if isinstance(b, Name) and isinstance(i, Name) and ALIASES.get(i.id, i.id) == "laneId" and b.id in MASK_REGS | {"D0", "D1", "SDST"}:
        lanemask.add(b.id)
    if isinstance(node, View) and isinstance(node.expr, Name) and node.expr.id == "D1" and node.typ and node.typ[1] == 1: lanemask.add("D1")
  for r in lanemask: operands.discard(r)
  for k in list(widths):
    if widths[k] > 64: widths[k] = -(-widths[k] // 32) * 32
    elif widths[k] > 32: widths[k] = 64
    elif widths[k] > 16 or k == "ADDR": widths[k] = 32 if k != "ADDR" else max(widths[k], 64 if mode == "np" else 64)
  return {"widths": widths, "lanemask": lanemask, "operands": operands, "vars": {}, "mem": set(), "dst": "VDST" if mode == "np" else "SDST",
          "views": {n: sorted(k) for n, k in sorted(views.items())}}

def kind_of(fmt:str, stmts) -> str:
  """'scalar' for SALU/SMEM formats; 'wave' for vector ops that index VGPR by a lane number that is not per-lane data or
  use whole-wave EXEC; else 'vector'."""
  if fmt in SCALAR_FORMATS: return "scalar"
  names = {n.id for n in walk(stmts) if isinstance(n, Name)}
  if "VGPR" in names and "laneId" not in names or "s_ff1_i32_b64" in {c.name for c in walk(stmts) if isinstance(c, Call)}: return "wave"
  return "vector"

def mode_variant(g:Gen, gm:Gen, stmts, name:str, info:dict) -> Gen | None:
  """Generate the mode variant of an op (`gm`, a Gen with fpmode set) if its float code depends on the wave's MODE; None otherwise,
  and for ops the mode does not govern: memory ops (atomics keep denormals) and V_CMP_CLASS_* (a test of the operand's bits)."""
  if not g.floats or info["mem"] or "CLASS" in name: return None
  gm.block(stmts)
  return gm if gm.lines != g.lines else None

def body(g:Gen, mode:str, widths:dict) -> list[str]:
  """The statements of one op function: load what it reads from st, run the generated lines, store what it writes."""
  reads = sorted((g.reads - {"n"}) | ({"n"} if mode == "np" else set()))
  lines = [f"  {r} = st.{r}" for r in reads if r != "st"]
  for w in sorted(g.writes):
    if w not in reads and mode == "np" and widths.get(w, 0) > 64: lines.append(f"  {w} = np.zeros((n, {widths[w] // 32}), np.uint32)")
  gl = g.lines
  if g.floats and mode == "np": lines.append("  with np.errstate(all='ignore'):"); gl = ["  " + x for x in gl]
  lines += gl + [f"  st.{w} = {w}" for w in sorted(g.writes)]
  if not gl: lines.append("  pass")
  return lines

def generate(arch:str, op, text:str, waves:bool=False) -> tuple[str, dict]:
  """The Python source of one op and its metadata (kind, reads, writes, widths, lane_masks, mem). `waves`: a scalar op as numpy
  code whose lanes are waves (its registers, SCC and EXEC included, one value per lane)."""
  fmt = type(op).__name__
  try: stmts = rules.apply(parse(text))
  except PcodeSyntaxError as e: raise Unsupported("parse error", str(e), op.name) from None
  kind = kind_of(fmt, stmts)
  if waves and kind != "scalar": raise Unsupported("codegen", "only scalar ops compile across waves", op.name)
  mode = "np" if kind == "vector" or waves else "py"
  info = scan(stmts, mode, waves)
  # the operand table is a floor under the widths the pcode's views show: a slice the scan cannot bound (V_PK_MOV_B32's
  # S0.u32[OPSEL[0].i32 * 32 + 31 : ...]) must not shrink a 64-bit operand to 32 bits, nor a shift count's slice (S0[3 : 0] of
  # V_LSHLREV_B16) a 16-bit operand to 4 bits
  for n, bits in table_widths(arch, op).items():
    if n in info["operands"] and bits <= 64 and bits > info["widths"].get(n, 0): info["widths"][n] = bits
  names = {x.id for x in walk(stmts) if isinstance(x, Name)} | {x.name for x in walk(stmts) if isinstance(x, Call)}
  # DS entries that address MEM[ADDR] without naming the instruction offset (rdna3 atomics, byte/short loads and stores...): the
  # hardware adds it all the same, and the executor passes the bare address VGPR (abi.py)
  info["rm"] = "ROUND_MODE" in names  # rounding helpers take the op's rounding mode (else they round to nearest even)
  info["ds_offset"] = fmt == "DSOp" and kind == "vector" and "MEM" in names and not names & {"OFFSET", "OFFSET0", "OFFSET1", "CalcDsAddr"}
  try:
    g1 = Gen(mode, info)
    g1.block(stmts)
    info["mem"] = set()
    g = Gen(mode, info, g1.vt, g1.vary)
    g.block(stmts)
    gm = mode_variant(g, Gen(mode, info, g1.vt, g1.vary, fpmode=True), stmts, op.name, info)
  except MissingHelper as e: raise Unsupported("missing helper", str(e), op.name) from None
  except CodegenError as e: raise Unsupported("codegen", str(e), op.name) from None
  reads = sorted(((g.reads | (gm.reads if gm else set())) - {"n"}) | ({"n"} if mode == "np" else set()))
  writes = sorted(g.writes)
  widths = {k: v for k, v in info["widths"].items() if k in g.reads | g.writes}
  for k in g.writes & info["lanemask"]: widths[k] = 1
  src = "def op(st):\n" + "\n".join(body(g, mode, widths)) + "\n"
  if gm is not None:   # the IEEE default runs the plain body; any other mode the variant
    cond = " or ".join(f"getattr(st, '{m}', {d}) != {d}" for m, d in sorted(MODE_DEFAULTS.items()) if m in gm.reads)   # absent: default
    src = src.replace("def op(st):\n", f"def op(st):\n  if {cond}: return op_mode(st)\n", 1)
    src += "def op_mode(st):\n" + "\n".join(body(gm, mode, widths)) + "\n"
  src = wide_reads.merge(cse.eliminate(src)) if mode == "np" else wide_reads.merge_scalar(src)
  meta = {"kind": kind, "reads": reads, "writes": writes, "widths": widths, "lane_masks": sorted(info["lanemask"] & (g.reads | g.writes)),
          "mem": "".join(x for x in "rw" if x in info["mem"]), "mem_rmw": info["mem"] == {"r", "w"}, "views": info["views"]}
  return src, meta

def vop1_twin(op):
  """The VOP1 opcode (V_X_E32) whose VOP3 encoding `op` (V_X_E64) is, or None (the cdna wheel has pseudocode for the VOP1 forms only)."""
  vop1 = getattr(sys.modules[type(op).__module__], "VOP1Op", None)
  return vop1.__members__.get(op.name[:-4] + "_E32") if vop1 is not None and op.name.endswith("_E64") else None

def _load(a:str, arch:str, op, text:str, reason:str, waves:bool=False) -> CompiledOp:
  """The CompiledOp of `text` (generated, or read from the disk cache; `waves`: across waves, see generate)."""
  gen = GENERATOR_VERSION + ("-waves" if waves else "")
  name = f"<pcode {a} {op.name}{' waves' if waves else ''}>"
  if (rec := disk.load_compiled(a, op, text, gen)) is not None: src, meta, code = rec
  else:
    entry, fresh = disk.load(a, op, text, gen), False
    if entry is None:
      src, meta = generate(a, op, text, waves)
      entry, fresh = disk.store(a, op, text, gen, src, meta), True
    src, meta = entry
    try: code = compile(src, name, "exec")
    except SyntaxError as e: raise Unsupported("codegen", f"generated code does not compile: {e}", op.name) from None
    # kept from the second process on: the first, which generated the source, pays no second write
    if not fresh: disk.keep_compiled(a, op, text, gen, src, meta, code)
  ns = namespace(fnuz=FP8_FNUZ.get(arch, False))
  exec(code, ns)
  return CompiledOp(a, op.name, meta["kind"], ns["op"], frozenset(meta["reads"]), frozenset(meta["writes"]), dict(meta["widths"]),
                    frozenset(meta["lane_masks"]), meta["mem"], meta["mem_rmw"], src, text, reason or overrides.EXECUTOR_RUN.get(op.name, ""),
                    {n: frozenset(k) for n, k in meta["views"].items()})

@cache
def compile_across_waves(arch:str, op) -> CompiledOp | None:
  """A scalar op's pcode as numpy code over many waves at once (each lane one wave: S0, D0, SCC, EXEC... per lane), for
  executors running one instruction on waves whose scalar inputs differ; None for ops it does not cover (overridden ones,
  and those the vector generator cannot express). Memoised like compile_op."""
  a = arch_name(arch)
  if overrides.lookup(a, op, arch) is not None or overrides.fixed_pcode(op, a) is not None or (text := pcode_table(a).get(op)) is None:
    return None
  try: return _load(a, arch, op, text, "", waves=True)
  except Unsupported: return None

@cache
def compile_op(arch:str, op) -> CompiledOp:
  """Compile one opcode of an arch into a `CompiledOp` (memoised; generated source cached on disk). Raises Unsupported."""
  a = arch_name(arch)
  if (ov := overrides.lookup(a, op, arch)) is not None: return ov
  reason, text = overrides.fixed_pcode(op, a) or ("", pcode_table(a).get(op))
  if text is None and (twin := vop1_twin(op)) is not None:   # the VOP3 encoding runs the same operation as its VOP1 twin
    twin_op = compile_op(arch, twin)
    note = f"runs {twin.name} (the wheel has pseudocode only for the VOP1 form)"
    return replace(twin_op, name=op.name, override=f"{note}; {twin_op.override}" if twin_op.override else note)
  if text is None: raise Unsupported("no pcode", "the wheel has no pseudocode for this opcode", op.name)
  return _load(a, arch, op, text, reason)
