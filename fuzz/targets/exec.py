"""Targets `exec.{rdna3,rdna4,cdna}`: one random valid instruction (or, for a share of the cases, an edge encoding LLVM may reject)
executed by emu.amd.run_program on the table set's CPU with edge-biased operand values, a random EXEC and, for the memory
formats, a mapped global buffer, LDS and scratch (fuzz.amd_exec). Each case is judged against the ISA: no host exception,
determinism, writes only to the registers and bytes the instruction names (and only in active lanes), faults exactly where the
addressing model says an access leaves the mapped memory, loads and stores moving the bytes the model computes, branches
landing where SIMM16 says, and the executor contract (fuzz/exec_contract.py). docs/fuzzing.md ("exec.*") lists each kind of
finding and the destinations the ISA allows.
"""
from __future__ import annotations
import os, traceback
import numpy as np
from emu.amd.api import GPUEmulatorError, GPUHangFault, GPUIllegalInstruction, GPUMemoryFault, GPUTrapFault
from fuzz import amd_exec, exec_contract
from fuzz.amd_fields import DPP_CTRL
from fuzz.amd_exec import EXEC, MFMA, VCC, N_VGPR, SALU, Access, Outcome, base_format
from fuzz.finding import Finding
from fuzz.registry import Target, register
from fuzz.shrink import greedy
from fuzz.targets.encoding import simpler as simpler_fields
from emu.amd.arch import FAMILIES as ARCHS

EDGE_SHARE = 0.15   # cases that are edge encodings (see the module docstring)
LANE_SWAPS = ("V_PERMLANE16_SWAP", "V_PERMLANE32_SWAP")   # gfx950: exchange lanes between the VDST and SRC0 registers, writing both
# v_writelane and the whole-wave ops: the ISA's pseudocode for (S)WMMA and (S)MFMA is one matrix product over the wave
# (D = A * B + C) with no per-lane EXEC condition, and the emulator writes all of D; the lane swaps' text moves every lane
LANE_EXEMPT = ("V_WRITELANE", "V_WMMA", "V_SWMMAC", *MFMA, *LANE_SWAPS)
MOVREL = ("V_MOVREL", "V_SWAPREL", "S_MOVREL")
SWAPS = ("V_SWAP_B32", "V_SWAP_B16")   # tmp = D0; D0 = S0; S0 = tmp: both operands are written
AGPR_OPS = ("V_ACCVGPR", *MFMA)
CMPX_WRITES_MASK = ("cdna",)  # GCN/CDNA v_cmpx writes its mask to VCC (or SDST) as well as EXEC; RDNA's writes only EXEC

def allowed_writes(case:dict) -> tuple[set[int], set[int], bool]:
  """(SGPRs, VGPRs, SCC) the instruction may write, from its fields, operands.py and the ISA's implicit destinations."""
  name, fmt, masks, spec = case["op"], base_format(case["cls"]), range(case["lanes"] // 32), amd_exec.spec(case["arch"])
  sg, vg = set(), set()
  if fmt == "SOPP": return set(range(2 * amd_exec.SOPP_SLOTS)) | ({spec.m0_reg} if name.startswith("S_SET_GPR_IDX") else set()), vg, False
  if amd_exec.memory_kind(case):
    if (d:=amd_exec.destination(case)) is not None: (sg if d.file == "s" else vg).update(range(d.reg, d.reg + d.count))
    return sg, vg, False
  agpr = spec.n_agprs and (name.startswith(AGPR_OPS) or case["fields"].get("acc_cd"))
  for d in amd_exec.operands(case)[1]:
    (sg if d.file == "s" else vg).update(range(d.reg, d.reg + d.count))
    if d.file == "v" and agpr: vg.update(range(N_VGPR + d.reg, N_VGPR + d.reg + d.count))
    if d.file == "v" and d.bits == 16 and fmt in ("VOP1", "VOP2") and d.reg >= 128 and spec.true16: vg.add(d.reg - 128)
  if name.startswith(SWAPS + LANE_SWAPS): vg.update(swap_register(case, "src0")[:1])   # the ISA's swaps also write their source register
  fields, cmpx = case["fields"], "CMPX" in name
  mask = fields["sdst"] if case["cls"].endswith("_SDWA_SDST") and fields["sd"] else VCC  # gfx9 SDWA: sd selects SDST over VCC
  if cmpx or (fmt == "SOP1" and ("SAVEEXEC" in name or "WREXEC" in name)): sg.update(EXEC + i for i in masks)
  if name.startswith("S_SET_GPR_IDX"): sg.add(spec.m0_reg)  # gfx9: the VGPR index mode keeps its index in M0
  if (fmt == "VOPC" and (not cmpx or case["arch"] in CMPX_WRITES_MASK)) or (fmt == "VOP2" and "_CO_" in name): sg.update(mask + i for i in masks)
  return sg, vg, fmt in SALU

def execute(case:dict) -> Outcome:
  """Run the case; a Finding when the emulator raised anything but one of its defined faults."""
  try: out = amd_exec.run(case)
  except Exception as e: raise host_exception(f"{case['op']} ({case['cls']})", case["arch"], e) from None
  if isinstance(out.fault, GPUEmulatorError): raise host_exception(f"{case['op']} ({case['cls']})", case["arch"], out.fault.error)
  return out

def host_exception(what:str, arch:str, e:BaseException) -> Finding:
  """The `host-exception` finding for `e` raised while running `what`, keyed by arch, exception type and where it was raised."""
  return Finding("host-exception", f"{what}: {type(e).__name__}: {e} at {(at:=crash_site(e))}", key=(arch, type(e).__name__, at))

def crash_site(e:Exception) -> str:
  """`file:function` of the innermost frame of the exception inside the emulator (or generated pcode): groups one bug's crashes."""
  frames = [f for f in traceback.extract_tb(e.__traceback__) if "/emu/" in f.filename or not f.filename.endswith(".py")]
  f = (frames or traceback.extract_tb(e.__traceback__))[-1]
  return f"{os.path.basename(f.filename)}:{f.name}"

def snapshot(out:Outcome) -> tuple:
  """Everything the instruction could have changed, for comparing two runs (not the PC: the code buffer moves between runs; of a
  fault its class, address and trap id, not its text, which names the PC)."""
  mem = tuple(x.tobytes() for x in (out.glob, out.lds, out.scratch) if x is not None)
  if out.fault is not None: return (type(out.fault).__name__, getattr(out.fault, "addr", None), getattr(out.fault, "trap_id", None), mem)
  st = out.state
  return (st.sgpr.tobytes(), st.vgpr.tobytes(), st.scc.tobytes(), st.hwreg.tobytes(), st.status.tobytes(), mem)

def check(case:dict) -> None:
  """Raise a Finding when execution crashes the host, is not deterministic, or breaks one of the properties above."""
  checked_run(case)

def checked_run(case:dict):
  """Run the case twice, check the properties (see the module docstring) and return the final WaveState (None after a defined fault)."""
  out = execute(case)
  if case.get("edge") and not amd_exec.one_instruction(case): return out.state   # its tail runs as code that may read the PC
  if snapshot(out) != snapshot(execute(case)):
    raise Finding("nondeterministic", f"{case['op']} ({case['cls']}): two runs differ", key=(case["arch"], case["op"]))
  where = f"{case['op']} ({case['cls']}, wave{case['lanes']})"
  if case.get("edge"): return out.state
  if out.fault is not None:
    check_fault(case, out, where)
    return None
  if base_format(case["cls"]) == "SOPP" and (kind:=amd_exec.sopp_outcome(case)[0]) in ("trap", "hang"):
    raise Finding("wrong-pc", f"{where}: ran to the end where the ISA says {kind}", key=(case["arch"], case["op"], kind))
  st = out.state
  check_registers(case, st, where)
  check_swap(case, st, where)
  if base_format(case["cls"]) == "SOPP": check_markers(case, st, where)
  if amd_exec.memory_kind(case): check_memory(case, out, where)
  exec_contract.check(case, out, execute, where)
  return st

def check_registers(case:dict, st, where:str) -> None:
  """unexpected-write and inactive-lane-write (not judged for the MFMAs the wheel's operand tables leave out: gfx942's XF32 forms
  and gfx950's V_MFMA_LD_SCALE_B32 have no entry, so their registers are unknown here; their cases still check the run itself)."""
  if case["op"].startswith(MFMA) and not amd_exec.OPERANDS.get(amd_exec.case_op(case)): return
  sgpr0, vgpr0 = amd_exec.initial_state(case)
  sg_ok, vg_ok, scc_ok = allowed_writes(case)
  name = case["op"]
  movrel = name.startswith(MOVREL)
  if bad:=[int(n) for n in np.nonzero(st.sgpr[0] != sgpr0)[0] if n not in sg_ok and not (movrel and name.startswith("S_"))]:
    raise Finding("unexpected-write", f"{where}: SGPR {bad[0]} {int(sgpr0[bad[0]]):#x} -> {int(st.sgpr[0, bad[0]]):#x} (may write {sorted(sg_ok)})",
                  key=(case["arch"], name, "sgpr"))
  if not scc_ok and int(st.scc[0]) != case["scc"]:
    raise Finding("unexpected-write", f"{where}: SCC {case['scc']} -> {int(st.scc[0])}", key=(case["arch"], name, "scc"))
  changed = st.vgpr[0] != vgpr0
  if bad:=[int(r) for r in np.nonzero(changed.any(0))[0] if r not in vg_ok and not (movrel and name.startswith("V_"))]:
    lane = int(np.nonzero(changed[:, bad[0]])[0][0])
    raise Finding("unexpected-write", f"{where}: v{bad[0]} lane {lane} {int(vgpr0[lane, bad[0]]):#x} -> {int(st.vgpr[0, lane, bad[0]]):#x}"
                  f" (may write {sorted(vg_ok)})", key=(case["arch"], name, "vgpr"))
  if name.startswith(LANE_EXEMPT) or movrel: return
  inactive = np.array([not (case["exec"] >> i) & 1 for i in range(case["lanes"])])
  if (hit:=changed[inactive]).any():
    lane, reg = int(np.nonzero(inactive)[0][np.nonzero(hit.any(1))[0][0]]), int(np.nonzero(hit.any(0))[0][0])
    raise Finding("inactive-lane-write", f"{where}: v{reg} lane {lane} (EXEC={case['exec']:#x}) {int(vgpr0[lane, reg]):#x} -> "
                  f"{int(st.vgpr[0, lane, reg]):#x}", key=(case["arch"], name))

def swap_register(case:dict, field:str) -> tuple[int, int]:
  """(VGPR, bit offset) a swap's `field` (vdst or src0, a VGPR for these ops) names: on RDNA a 16-bit e32 operand v128+ is the high
  half of v(n-128) (true16); other swaps use the whole register."""
  raw = case["fields"][field] - (256 if field == "src0" else 0)
  if case["op"].startswith("V_SWAP_B16") and amd_exec.spec(case["arch"]).true16 and raw >= 128 and base_format(case["cls"]) == "VOP1":
    return raw - 128, 16
  return raw, 0

def check_swap(case:dict, st, where:str) -> None:
  """swap-mismatch: in each active lane the destination holds the source's old bits and the source the destination's (the
  ISA's tmp = D0; D0 = S0; S0 = tmp, at 32 or 16 bits); a swap of a register with itself keeps it."""
  if not case["op"].startswith(SWAPS) or case["fields"]["src0"] < 256: return
  vgpr0, bits = amd_exec.initial_state(case)[1], 16 if "B16" in case["op"] else 32
  (dr, dsh), (sr, ssh), m = swap_register(case, "vdst"), swap_register(case, "src0"), (1 << bits) - 1
  for ln in (i for i in range(case["lanes"]) if (case["exec"] >> i) & 1):
    old_d, old_s = (int(vgpr0[ln, dr]) >> dsh) & m, (int(vgpr0[ln, sr]) >> ssh) & m
    got_d, got_s = (int(st.vgpr[0, ln, dr]) >> dsh) & m, (int(st.vgpr[0, ln, sr]) >> ssh) & m
    if (dr, dsh) != (sr, ssh) and (got_d, got_s) != (old_s, old_d):
      raise Finding("swap-mismatch", f"{where}: lane {ln}: D {old_d:#x} S {old_s:#x} became D {got_d:#x} S {got_s:#x}",
                    key=(case["arch"], case["op"]))

def check_markers(case:dict, st, where:str) -> None:
  """wrong-pc: the markers that ran are those the ISA's next PC implies (amd_exec.marker_writes); the others keep their values."""
  sgpr0, want = amd_exec.initial_state(case)[0], amd_exec.marker_writes(case)
  got = [int(st.sgpr[0, i]) for i in range(2 * amd_exec.SOPP_SLOTS)]
  if got != [want.get(i, int(sgpr0[i])) for i in range(2 * amd_exec.SOPP_SLOTS)]:
    ran = [i for i, v in enumerate(got) if v == amd_exec.MARK_VALUE + i]
    raise Finding("wrong-pc", f"{where} simm16={case['fields']['simm16']:#x} scc={case['scc']} exec={case['exec']:#x}: markers {ran} "
                  f"ran, the ISA says {sorted(want)} ({amd_exec.sopp_outcome(case)})", key=(case["arch"], case["op"]))

def expect_fault(case:dict, acc:list[Access]) -> bool|None:
  """Whether the ISA's accesses must fault (one lies outside the mapped global buffer or the lane's scratch), must not (all inside;
  LDS never faults), or may (only accesses whose range rule is 'maybe', or typed MUBUF ops whose footprint is a bound, leave)."""
  (base, size), scratch, typed = case["mem"]["global"], case["mem"]["scratch"], amd_exec.mem_op(case).typed
  must = may = False
  for a in acc:
    if a.rule == "out" or a.mem == "lds": continue
    lo, hi = (base, base + size) if a.mem == "global" else (0, scratch)
    if lo <= a.addr and a.addr + a.nbytes <= hi: continue
    if a.rule == "in" and not (typed and lo <= a.addr < hi): must = True
    else: may = True
  return True if must else None if may else False

def check_fault(case:dict, out:Outcome, where:str) -> None:
  """A defined fault must be one the instruction can raise: s_trap traps, a SOPP branch back loops into the watchdog, memory faults
  only where the ISA's addresses leave the mapped regions (and then the global buffer is untouched). Illegal instructions pass,
  unless the emulator rejects a DPP control the ISA defines for the arch (`amd_fields.DPP_CTRL`)."""
  e, key = out.fault, (case["arch"], case["op"], type(out.fault).__name__)
  if isinstance(e, GPUIllegalInstruction):
    if "DPP control" in str(e) and case["fields"].get("dpp") in DPP_CTRL[case["arch"]]:
      raise Finding("illegal-dpp-control", f"{where}: {e}, but the ISA defines control {case['fields']['dpp']:#x} here", key=key)
    return
  if base_format(case["cls"]) == "SOPP":
    want = {"trap": GPUTrapFault, "hang": GPUHangFault}.get(amd_exec.sopp_outcome(case)[0])
    if want is None or not isinstance(e, want):
      raise Finding("wrong-pc", f"{where} simm16={case['fields']['simm16']:#x}: {type(e).__name__} where the ISA says {amd_exec.sopp_outcome(case)}",
                    key=key)
    return
  if not isinstance(e, GPUMemoryFault) or not amd_exec.memory_kind(case):
    raise Finding("fault-mismatch", f"{where}: {type(e).__name__}: {e}", key=key)
  if (out.glob != amd_exec.global_bytes(case)).any():
    raise Finding("fault-partial-write", f"{where}: faulted ({e}) after writing the global buffer", key=(case["arch"], base_format(case["cls"])))
  if (acc:=amd_exec.model(case)) is not None and expect_fault(case, acc) is False:
    raise Finding("fault-mismatch", f"{where}: {e}, but every access is inside the mapped regions: {describe(acc)}",
                  key=(case["arch"], base_format(case["cls"]), "spurious"))

def describe(acc:list[Access], n:int=4) -> str:
  """The first accesses of a model, for finding texts."""
  return ", ".join(f"{a.mem}[{a.addr:#x}+{a.nbytes}]@{a.lane}{'w' if a.write else ''}{'' if a.rule == 'in' else ' ' + a.rule}" for a in acc[:n]) + \
    (f" (+{len(acc) - n})" if len(acc) > n else "")

def initial_bytes(case:dict, a:Access, glob0:np.ndarray) -> bytes|None:
  """Memory at an access before the instruction (LDS and scratch start zeroed); zeros where the range rule says out; None if
  unknown (rule 'maybe', or outside the regions)."""
  if a.rule == "out": return bytes(a.nbytes)
  if a.rule == "maybe": return None
  if a.mem == "global":
    off = a.addr - case["mem"]["global"][0]
    return glob0[off:off + a.nbytes].tobytes() if 0 <= off and off + a.nbytes <= len(glob0) else None
  return bytes(a.nbytes) if a.addr + a.nbytes <= (case["mem"]["lds"] if a.mem == "lds" else case["mem"]["scratch"]) else None

def byte_keys(a:Access) -> list[tuple]:
  """(memory, lane or None, byte) of every byte an access touches (scratch is per lane; LDS and scratch offsets are 32-bit)."""
  wrap = (1 << 64) - 1 if a.mem == "global" else 0xffffffff
  return [(a.mem, a.lane if a.mem == "scratch" else None, (a.addr + i) & wrap) for i in range(a.nbytes)]

def check_memory(case:dict, out:Outcome, where:str) -> None:
  """fault-mismatch (missing fault), unexpected-memory-write, load-mismatch and store-mismatch for a memory case."""
  if (acc:=amd_exec.model(case)) is None: return
  if expect_fault(case, acc):
    raise Finding("fault-mismatch", f"{where}: no fault, but the ISA's accesses leave the mapped regions: {describe(acc)}",
                  key=(case["arch"], base_format(case["cls"]), "missing"))
  base = case["mem"]["global"][0]
  glob0 = amd_exec.global_bytes(case)
  before = {"global": glob0, "lds": np.zeros_like(out.lds), "scratch": np.zeros_like(out.scratch)}
  after = {"global": out.glob, "lds": out.lds, "scratch": out.scratch}
  allowed = {k for a in acc if a.write and a.rule != "out" for k in byte_keys(a)}
  for mem in ("global", "lds", "scratch"):
    for idx in zip(*np.nonzero(after[mem] != before[mem])):
      key = ("global", None, base + int(idx[0])) if mem == "global" else ("lds", None, int(idx[0])) if mem == "lds" else \
        ("scratch", int(idx[0]), int(idx[1]))
      if key not in allowed:
        raise Finding("unexpected-memory-write", f"{where}: {mem} byte {key[2]:#x}{'' if key[1] is None else f' lane {key[1]}'} "
                      f"{int(before[mem][idx]):#x} -> {int(after[mem][idx]):#x}; the ISA's accesses: {describe(acc)}",
                      key=(case["arch"], case["op"]))
  touched: dict[tuple, set[int]] = {}
  for a in acc:
    for k in byte_keys(a): touched.setdefault(k, set()).add(a.lane)
  m, dest = amd_exec.mem_op(case), amd_exec.destination(case)
  sgpr0, vgpr0 = amd_exec.initial_state(case)
  for ln in ([-1] if amd_exec.memory_kind(case) == "smem" else amd_exec.active_lanes(case)):
    parts = sorted((a for a in acc if a.lane in (ln, -1)), key=lambda a: a.part)
    keys = [k for a in parts for k in byte_keys(a)]
    alone = len(set(keys)) == len(keys) and all(touched[k] <= {ln, -1} for k in keys)
    if dest is not None and not m.typed and (m.load or m.counter or (m.atomic and alone)):
      old = [initial_bytes(case, a, glob0) for a in parts]
      if parts and None not in old: check_loaded(case, m, dest, ln, int.from_bytes(b"".join(old), "little"), out.state, sgpr0, vgpr0, where)
    if m.store and not m.typed and alone:
      for a in parts:
        if a.rule != "in" or initial_bytes(case, a, glob0) is None: continue
        file, regs = amd_exec.data_regs(case)
        reg, n = regs[a.part], -(-a.nbytes // 4) if not m.d16 else 1
        data = amd_exec.sreg(case, sgpr0, reg, n) if file == "s" else amd_exec.vreg(vgpr0, ln, reg, n)
        want = ((data >> 16) if m.d16 == "hi" else data).to_bytes(4 * n, "little")[:a.nbytes]
        mem = after[a.mem] if a.mem != "scratch" else after["scratch"][a.lane]
        lo = a.addr - (base if a.mem == "global" else 0)
        if (got:=mem[lo:lo + a.nbytes].tobytes()) != want:
          raise Finding("store-mismatch", f"{where}: lane {ln} stored {got.hex()} at {a.mem} {a.addr:#x}, data is {want.hex()}",
                        key=(case["arch"], case["op"]))

def check_loaded(case:dict, m, dest, ln:int, v:int, st, sgpr0:np.ndarray, vgpr0:np.ndarray, where:str) -> None:
  """load-mismatch: the destination holds `v` (memory's bytes) as the ISA extends it: sub-dword loads zero- or sign-extended to 32
  bits, D16 loads into one half of the register (the other half kept)."""
  if m.nbytes < 4 and m.load:
    bits = 8 * m.nbytes
    if m.signed and v >> (bits - 1): v -= 1 << bits
    if m.d16:
      old = int(vgpr0[ln, dest.reg])
      v = (old & 0xffff0000) | (v & 0xffff) if m.d16 == "lo" else (old & 0xffff) | (v & 0xffff) << 16
    v &= 0xffffffff
  want = [(v >> (32 * i)) & 0xffffffff for i in range(dest.count)]
  if dest.file == "s":
    if dest.reg == amd_exec.spec(case["arch"]).null_reg: return
    got = [int(st.sgpr[0, dest.reg + i]) for i in range(dest.count) if dest.reg + i < amd_exec.N_SGPR]
  else: got = [int(st.vgpr[0, ln, dest.reg + i]) for i in range(dest.count) if dest.reg + i < st.vgpr.shape[2]]
  if got != want[:len(got)]:
    raise Finding("load-mismatch", f"{where}: lane {ln} {dest.file}{dest.reg} got {[hex(x) for x in got]}, memory held "
                  f"{[hex(x) for x in want]}; the ISA's accesses: {describe([a for a in amd_exec.model(case) if a.lane in (ln, -1)])}",
                  key=(case["arch"], case["op"]))

def simpler(case:dict):
  """Fields back to defaults (as the encoding target shrinks), then wave32, EXEC all ones, fewer explicit register values."""
  yield from simpler_fields(case)
  if case["lanes"] == 64 and 32 in amd_exec.spec(case["arch"]).wave_sizes:
    yield {**case, "lanes": 32, "exec": case["exec"] & 0xffffffff, "vgprs": {k: v[:32] for k, v in case["vgprs"].items()},
           "sgprs": {k: v for k, v in case["sgprs"].items() if int(k) != VCC + 1}}
  if case["exec"] != (full:=(1 << case["lanes"]) - 1): yield {**case, "exec": full}
  for k in case["sgprs"]: yield {**case, "sgprs": {j: v for j, v in case["sgprs"].items() if j != k}}
  for k in case["vgprs"]: yield {**case, "vgprs": {j: v for j, v in case["vgprs"].items() if j != k}}

def minimise(case:dict, fails) -> dict:
  """Greedy shrink while the same finding persists."""
  return greedy(case, fails, simpler, budget=200)

for _arch in ARCHS:
  _waves = "/".join(map(str, amd_exec.spec(_arch).wave_sizes))
  register(Target(f"exec.{_arch}", lambda rng, a=_arch: amd_exec.generate(a, rng, edges=rng.random() < EDGE_SHARE), check, minimise,
                  doc=f"{_arch} instructions of every emulated format on emu.amd ({amd_exec.CPU[_arch]}, wave{_waves}): no host crash, "
                      "deterministic, only its destinations and addressed memory written, faults and loads as the ISA says"))
