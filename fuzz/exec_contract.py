"""The executor contract, an exec property: an instruction's results depend on the source registers it names and on nothing else,
every source it names can change them, and it writes the whole of every destination it names. "Names" is the instruction's
operand table (amd_exec.operands: the wheel's operand widths per field) and, for memory instructions, amd_exec.destination; the
step that runs the op is not consulted. An override whose reason promises something the executor does not do breaks one of
these (an address register the instruction does not have, a destination written only under a flag, one address for every lane).

The check reruns a case twice more with other register contents:
- `contract-unnamed-read`: every register that is neither a source nor a destination gets other bits (SGPRs up to the
  allocatable ones, all VGPRs and AGPRs; EXEC, VCC, M0, SCC and the special SGPRs are the case's) and each destination starts as
  the complement of its old bits. Bits a destination keeps then differ; written bits must not: every active lane must have the
  destination's width of equal bits in each of its registers (a 16-bit destination 16), and the memories, SCC and EXEC must come
  out the same. A mismatch means the result read a register the instruction does not name, or a declared destination was not
  (completely) written.
- `contract-ignored-source`: each source register on its own gets the complement of its bits: something the instruction writes
  (a destination in an active lane, the memories, SCC, EXEC) must change. Random operand values make a true dependence show.

Exempt (`exempt`): ops that read registers by number beyond their fields (v_movrel*/s_movrel*, v_swaprel, VINTERP's attribute
reads), CDNA's AGPR operands (v_accvgpr_*, MFMA: amd_exec.operands names them by VGPR number), SOPP (control flow: markers)
and edge cases. DPP16 and SDWA destinations are not judged for completeness (masked lanes, invalid sources and SDWA's
dst_unused = preserve keep the old value). Ops that read
their destination (the pcode reads D0: FMAC, MAC, DOT2C, writelane) keep it as a source. Memory instructions keep every
register but their destination: their address and data registers are the exec memory model's (`check_memory`) to judge. A
case with aliased sources (x - x) or a constant source is not judged for ignored sources; `ignores_sources` gives the
reason for each op that may ignore a source whatever the values.
"""
from __future__ import annotations
import random
from dataclasses import replace
import numpy as np
from fuzz import amd_exec
from fuzz.amd_exec import EXEC, SALU, VCC, Operand, Outcome, base_format
from fuzz.amd_fields import SGPR_MAX
from fuzz.finding import Finding

def ignores_sources(case:dict) -> str:
  """Why the op's results legitimately ignore its named sources, or ''."""
  if case["op"].startswith(("V_CMP_F_", "V_CMP_T_", "V_CMPX_F_", "V_CMPX_T_", "V_CMP_TRU_", "V_CMPX_TRU_")):
    return "a constant compare: false/true whatever the sources"
  if case["op"].startswith("V_PERMLANE64") and case["lanes"] == 32: return "wave32: the ISA's pcode makes it a NOP ('wave64 ONLY')"
  if "SAVEEXEC" in case["op"] or "WREXEC" in case["op"]: return "S0 meets EXEC, which the case fixes (all ones or zeros hide it)"
  if case["op"].startswith("V_CVT_SR_"): return "the stochastic-rounding bits matter only for inexact values in the narrow format's range"
  if case["op"].startswith("V_PERM_B32"): return "S2's byte selectors decide which sources supply bytes (random ones mostly pick constants)"
  lanes = [i for i in range(case["lanes"]) if case["exec"] >> i & 1]
  if case["op"].startswith("V_MBCNT_HI") and all(i <= 32 for i in lanes): return "S0 counts only lanes 32 to the lane's own, none here"
  if case["op"].startswith("V_MBCNT_LO") and all(i == 0 for i in lanes): return "S0 counts only the lanes below lane 0: none"
  return ""
EXEMPT_PREFIXES = ("V_MOVREL", "V_SWAPREL", "S_MOVREL", "V_INTERP", "V_ACCVGPR")

def exempt(case:dict) -> bool:
  """Cases the contract does not judge (see the module docstring)."""
  if case.get("edge") or base_format(case["cls"]) in ("SOPP", "VINTERP"): return True
  if case["op"].startswith(EXEMPT_PREFIXES): return True
  return case["op"].startswith(amd_exec.MFMA) and (not amd_exec.OPERANDS.get(amd_exec.case_op(case)) or spec_has_agprs(case))

def spec_has_agprs(case:dict) -> bool:
  """CDNA: an MFMA's operands may be AGPRs, which amd_exec.operands names by their VGPR numbers."""
  return bool(amd_exec.spec(case["arch"]).n_agprs)

def named(case:dict) -> tuple[list[Operand], list[Operand]]:
  """(sources, destinations) the case names: its operand fields, a memory case's data destination (16 bits for D16 loads). A
  16-bit VOP1/VOP2/VOPC operand v128+ is the high half of v(n-128) on true16 archs (unless the op reads VGPRs by number).
  SOPK's S_CMPK_*, S_SETREG_B32 and S_WAITCNT_* read the register their `sdst` field names (their pcode writes no D0)."""
  srcs, dsts = amd_exec.operands(case)
  if amd_exec.memory_kind(case):
    d, m, (file, data) = amd_exec.destination(case), amd_exec.mem_op(case), amd_exec.data_regs(case)
    width = max(1, m.nbytes // 4)
    if m.store or m.atomic: srcs = srcs + [Operand("data", file, r, width, "", 32 * width) for r in data]   # CDNA's ACC bit: AGPRs
    return srcs, [] if d is None else [replace(d, bits=16) if m.d16 else d]
  if base_format(case["cls"]) == "SOPK" and "D0" not in _compiled(case).writes: srcs, dsts = srcs + dsts, []
  t16 = amd_exec.spec(case["arch"]).true16 and base_format(case["cls"]) in ("VOP1", "VOP2", "VOPC") and \
    "VGPR" not in _compiled(case).reads   # an op that indexes the VGPR file by SRC0 reads the register the field names
  def half(o:Operand) -> Operand: return replace(o, reg=o.reg - 128) if t16 and o.file == "v" and o.bits == 16 and o.reg >= 128 else o
  return [half(o) for o in srcs], [half(o) for o in dsts]

def _compiled(case:dict, op=None):
  from emu.pcode import compile_op
  return compile_op(case["arch"], op if op is not None else amd_exec.case_op(case))

def reads_destination(case:dict) -> bool:
  """Whether the op reads its destination's old value (its pcode reads D0, VDST or the register file by number; VOPD: either
  half)."""
  from emu.pcode import Unsupported
  ops = [op for op, _, _ in amd_exec.vopd_halves(case)] if base_format(case["cls"]) == "VOPD" else [None]
  try: return any({"D0", "VDST", "VGPR"} & _compiled(case, op).reads for op in ops)
  except Unsupported: return True

def _registers(ops:list[Operand]) -> set[tuple[str, int]]:
  return {(o.file, r) for o in ops for r in range(o.reg, o.reg + o.count)}

def _with_registers(case:dict, sgpr:np.ndarray, vgpr:np.ndarray) -> dict:
  """The case with its whole register file replaced (EXEC stays the case's)."""
  return {**case, "sgprs": {str(n): int(sgpr[n]) for n in range(len(sgpr)) if n not in (EXEC, EXEC + 1)},
          "vgprs": {str(r): vgpr[:, r].copy() for r in range(vgpr.shape[1])}}

def _outputs(case:dict, out:Outcome, dsts:list[Operand]) -> tuple:
  st = out.state
  regs = tuple((st.sgpr[0, d.reg:d.reg + d.count] if d.file == "s" else st.vgpr[0, :, d.reg:d.reg + d.count]).copy() for d in dsts)
  mem = tuple(x.tobytes() for x in (out.glob, out.lds, out.scratch) if x is not None)
  return regs, mem, int(st.scc[0]), int(st.sgpr[0, EXEC]) | int(st.sgpr[0, EXEC + 1]) << 32

def _active(case:dict) -> np.ndarray:
  return np.array([(case["exec"] >> i) & 1 for i in range(case["lanes"])], dtype=bool)

def check(case:dict, base:Outcome, execute, where:str) -> None:
  """Raise a contract Finding for `case`, whose run gave `base` (no fault); `execute(case) -> Outcome` runs a variant."""
  if exempt(case) or base.state is None: return
  srcs, dsts = named(case)
  keep = _registers(srcs) | (_registers(dsts) if reads_destination(case) else set())
  noise = np.random.default_rng(random.Random(repr(sorted(case["fields"].items()))).getrandbits(32))
  sgpr0, vgpr0 = amd_exec.initial_state(case)
  active, memory = _active(case), bool(amd_exec.memory_kind(case))
  partial = case["cls"].endswith("_DPP16") or "_SDWA" in case["cls"]   # destinations these forms may write only in part
  _check_unnamed(case, base, execute, where, dsts, keep, sgpr0, vgpr0, noise, active, partial, memory)
  if ignores_sources(case) or memory or not _observable_outputs(case, dsts, active): return
  if len([o for o in srcs if _perturbable(case, o)]) < _source_fields(case): return   # a constant (0, NULL) may decide the result
  if any(_overlap(a, b) for i, a in enumerate(srcs) for b in srcs[i + 1:]): return   # x - x, a select between equal operands
  f = case["fields"]
  if f.get("abs", 0) & f.get("neg", 0) or f.get("src0_abs") and f.get("src0_neg") or f.get("src1_abs") and f.get("src1_neg"):
    return   # -|x| is never positive: |a| < -|b| is false whatever b
  if f.get("clmp"): return   # a saturated result (0xffff, 1.0) hides the other operands
  for s in srcs:
    if any(_overlap(s, d) for d in dsts): continue   # its new value would also be the destination's old one
    inputs = srcs + (dsts if reads_destination(case) else [])   # an accumulator's old value is an input too
    if not _changes_output(case, s, inputs, dsts, sgpr0, vgpr0, noise, execute, active):
      raise Finding("contract-ignored-source", f"{where}: no value of {s.name} ({s.file}{s.reg}) tried changes what it writes",
                    key=(case["arch"], case["op"], s.name))

def _check_unnamed(case, base, execute, where, dsts, keep, sgpr0, vgpr0, noise, active, partial, memory) -> None:
  """contract-unnamed-read: rerun with every unnamed register changed and the destinations complemented (see the docstring)."""
  sgpr, vgpr = sgpr0.copy(), vgpr0.copy()
  if not memory:   # memory instructions: the address and data registers are the exec memory model's to check
    m0 = amd_exec.spec(case["arch"]).m0_reg
    for n in range(SGPR_MAX[case["arch"]] + 1):
      if ("s", n) not in keep and n != m0: sgpr[n] ^= np.uint32(noise.integers(1, 2**32))
    vmask = np.array([("v", r) not in keep for r in range(vgpr.shape[1])])
    vgpr[:, vmask] ^= noise.integers(1, 2**32, size=(vgpr.shape[0], int(vmask.sum())), dtype=np.uint64).astype(np.uint32)
  for f, r in _registers(dsts) - keep:   # a destination register that is also a source keeps its value
    if f == "s": sgpr[r] = ~sgpr0[r]
    else: vgpr[:, r] = ~vgpr0[:, r]
  other = execute(_with_registers(case, sgpr, vgpr))
  if other.fault is not None:
    raise Finding("contract-unnamed-read", f"{where}: faulted ({type(other.fault).__name__}: {other.fault}) once registers it does not "
                  "name changed", key=(case["arch"], case["op"], "fault"))
  (r0, mem0, scc0, exec0), (r1, m1, scc1, exec1) = _outputs(case, base, dsts), _outputs(case, other, dsts)
  for d, a, b in zip(dsts, r0, r1):
    if _registers([d]) & keep or not _observable(case, d) or partial and d.file == "v": continue
    same = np.unpackbits((~(a ^ b)).view(np.uint8)).reshape(*a.shape, 32).sum(-1)   # equal bits per register (and lane)
    short = same < min(32, d.bits)
    bad = np.nonzero(short)[0] if d.file == "s" else np.nonzero((short & active[:, None]).any(1))[0]
    if len(bad):
      raise Finding("contract-unnamed-read", f"{where}: {d.name} ({d.file}{d.reg}, {d.bits} bits) is not the same when registers the "
                    f"instruction does not name change or its old value is complemented (first {'register' if d.file == 's' else 'lane'} "
                    f"{int(bad[0])})", key=(case["arch"], case["op"], d.name))
  if mem0 != m1 or (scc0 != scc1 and base_format(case["cls"]) in SALU) or exec0 != exec1:
    what = "memory" if mem0 != m1 else "SCC" if scc0 != scc1 else "EXEC"
    raise Finding("contract-unnamed-read", f"{where}: {what} differs when registers the instruction does not name change",
                  key=(case["arch"], case["op"], what))

def _source_fields(case:dict) -> int:
  """How many source operands the instruction's operand tables give it (registers or not; VOPD: both halves), a literal counting."""
  cls = amd_exec.inst_classes(case["arch"])[case["cls"]]
  infos = [i for _, i, _ in amd_exec.vopd_halves(case)] if base_format(case["cls"]) == "VOPD" else \
    [amd_exec.OPERANDS.get(amd_exec.case_op(case), {})]
  n = sum(1 for info in infos for name, _ in cls._fields if "dst" not in name and amd_exec.operand_info(info, name) is not None)
  return n + ("literal" in case["fields"])

# small ints, 1.5f, -2.5f, pi, f16 1.0/2.0, -0, quiet NaNs (f32, f16 pair), high words of f64 2**55 and a NaN
EDGES = (0, 1, 2, 7, 0x3fc00000, 0xc0200000, 0x40490fdb, 0x3c004000, 0x80000000, 0x7fc00000, 0x7e007e00, 0x43600000, 0xfff80000)

def _changes_output(case, s, srcs, dsts, sgpr0, vgpr0, noise, execute, active, rounds:int=8) -> bool:
  """Whether some value of source s changes a result. Each round draws the other inputs `srcs` and VCC (an implicit mask)
  afresh and tries s at a random value, its complement, every other source's value (equal operands) and small edge values: a
  shift of 0, a dominating operand or a select can hide a source for one draw."""
  for rnd in range(rounds):
    sgpr, vgpr = sgpr0.copy(), vgpr0.copy()
    for t in srcs:
      if t is not s: _put(t, sgpr, vgpr, _random(t, sgpr, vgpr, noise))
    if not any(o.file == "s" and o.reg in (VCC, VCC + 1) for o in srcs + dsts): sgpr[VCC:VCC + 2] = noise.integers(0, 2**32, 2)
    _put(s, sgpr, vgpr, _random(s, sgpr, vgpr, noise))
    variant = {**case, "scc": rnd % 2}   # SCC may select (s_cselect, s_cmov)
    lane = int(np.argmax(active))
    values = [~_get(s, sgpr, vgpr), _random(s, sgpr, vgpr, noise)]
    for t in srcs:   # equal operands, also with the 16-bit halves exchanged (op_sel may compare a low half with a high one)
      if t is not s:   # and negated (a neg modifier on one side): the f32 and the low f16 sign bits
        v = _like(s, _get(t, sgpr, vgpr), case["lanes"], lane)
        signs = [(0, 0), (0, 0x80000000)] if s.count == 2 else [(m,) for m in (0, 0x80000000, 0x8000, 0x80008000)]   # f64: bit 63
        values += [w ^ np.array(m, np.uint32) for w in (v, (v << np.uint32(16)) | (v >> np.uint32(16))) for m in signs]
    values += [np.full_like(_get(s, sgpr, vgpr), e) for e in EDGES]
    base = None
    for value in [None] + values:
      if value is not None: _put(s, sgpr, vgpr, value)
      var = execute(_with_registers(variant, sgpr, vgpr))
      if var.fault is not None: return True   # an address or index source moved an access out of range: it was read
      out = _outputs(case, var, dsts)
      if base is None: base = out
      elif any(_observable(case, d) and ((a != b)[active].any() if d.file == "v" else (a != b).any()) for d, a, b in zip(dsts, base[0], out[0])) \
           or out[1:] != base[1:]: return True
  return False

def _like(s:Operand, value:np.ndarray, lanes:int, lane:int) -> np.ndarray:
  """Another source's value in the shape of source s: VGPR to VGPR as is, an SGPR broadcast to every lane, the VGPR of the first
  active lane for an SGPR (registers beyond the other source's count repeat it)."""
  if s.file == "v":
    return np.resize(value.T, (s.count, lanes)).T.copy() if value.ndim == 2 else np.tile(np.resize(value, s.count), (lanes, 1))
  return np.resize(value[lane] if value.ndim == 2 else value, s.count)

def _get(o:Operand, sgpr, vgpr): return sgpr[o.reg:o.reg + o.count].copy() if o.file == "s" else vgpr[:, o.reg:o.reg + o.count].copy()
def _random(o:Operand, sgpr, vgpr, noise):
  return noise.integers(0, 2**32, size=_get(o, sgpr, vgpr).shape, dtype=np.uint64).astype(np.uint32)
def _put(o:Operand, sgpr, vgpr, value):
  if o.file == "s": sgpr[o.reg:o.reg + o.count] = value
  else: vgpr[:, o.reg:o.reg + o.count] = value

def _overlap(a:Operand, b:Operand) -> bool:
  return a.file == b.file and a.reg < b.reg + b.count and b.reg < a.reg + a.count

def _observable_outputs(case:dict, dsts:list[Operand], active:np.ndarray) -> bool:
  """Whether a changed source could show at all: a destination the check can read in an active (DPP16: write-enabled) lane. An
  SCC-only result (one bit of one value) is not judged, nor a VALU op without active lanes (its lane-mask results are 0 then)."""
  if not (case["fields"].get("row_mask", 1) and case["fields"].get("bank_mask", 1)): return False   # DPP16: no lane may write
  return any(_observable(case, d) and (base_format(case["cls"]) in SALU or active.any()) for d in dsts)

def _perturbable(case:dict, o:Operand) -> bool:
  """An ordinary register: VGPRs/AGPRs, SGPRs up to the allocatable ones or VCC (not NULL, M0, EXEC, trap temporaries)."""
  return o.file == "v" or o.reg + o.count - 1 <= SGPR_MAX[case["arch"]] or o.reg in (VCC, VCC + 1)

def _observable(case:dict, o:Operand) -> bool:
  """A destination whose value the check can read back: an ordinary register (NULL discards, EXEC stays the case's)."""
  return _perturbable(case, o) or o.file == "s" and o.reg == amd_exec.spec(case["arch"]).m0_reg
