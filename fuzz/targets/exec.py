"""Targets `exec.{rdna3,rdna4,cdna}`: one random valid VALU/SALU instruction (every VOP1/VOP2/VOP3/VOP3SD/VOP3P/VOPC/SOP1/SOP2/SOPC/
SOPK opcode, base, literal, DPP16/DPP8, SDWA, MFMA and SDST classes the table set has; encodings from fuzz.amd_fields) executed by
emu.amd.run_program on the table set's CPU (gfx1100, gfx1201: wave32 or wave64; gfx942: wave64), with edge-biased operand
values and a random EXEC (fuzz.amd_exec).

Properties and kinds:
  `host-exception`    execution raised something other than the emulator's defined faults (emu.amd.api.GPUFault subclasses)
  `nondeterministic`  the same case run twice leaves different registers
  `unexpected-write`  a register the instruction does not name as a destination changed (SGPR, VGPR or SCC)
  `inactive-lane-write` a destination VGPR changed in a lane whose EXEC bit is 0
The registers an instruction may write come from its destination fields and operands.py (widths; a wave-sized lane mask for
compare results) plus the implicit destinations the ISA documents: SCC for SALU ops, VCC for VOPC and VOP2 carry ops (e32; the
SDST field instead when a gfx9 SDWA form sets sd), EXEC for v_cmpx (on CDNA also VCC/SDST) and s_*saveexec/s_*wrexec, M0 for gfx9's s_set_gpr_idx_*.
16-bit VOP1/VOP2 destinations v128+ may also name the high half of v(n-128)
(RDNA true16 encoding), so both registers are allowed. On CDNA a VGPR destination of v_accvgpr_*/MFMA ops or of an
instruction with acc_cd set may be the AGPR of the same number. Exemptions: v_writelane and (S)WMMA ignore EXEC (no lane check);
v_movrel*/v_swaprel/s_movrel* write registers indexed by M0 (no check of the register file they write).
"""
from __future__ import annotations
import os, traceback
import numpy as np
from emu.amd.api import GPUFault
from fuzz import amd_exec
from fuzz.amd_exec import EXEC, VCC, N_VGPR, SALU, base_format
from fuzz.finding import Finding
from fuzz.registry import Target, register
from fuzz.shrink import greedy
from fuzz.targets.encoding import simpler as simpler_fields

ARCHS = ("rdna3", "rdna4", "cdna")
LANE_EXEMPT = ("V_WRITELANE", "V_WMMA", "V_SWMMAC")
MOVREL = ("V_MOVREL", "V_SWAPREL", "S_MOVREL")
AGPR_OPS = ("V_ACCVGPR", "V_MFMA", "V_SMFMAC")
CMPX_WRITES_MASK = ("cdna",)  # GCN/CDNA v_cmpx writes its mask to VCC (or SDST) as well as EXEC; RDNA's writes only EXEC

def allowed_writes(case:dict) -> tuple[set[int], set[int], bool]:
  """(SGPRs, VGPRs, SCC) the instruction may write, from its fields, operands.py and the ISA's implicit destinations."""
  name, fmt, masks, spec = case["op"], base_format(case["cls"]), range(case["lanes"] // 32), amd_exec.spec(case["arch"])
  agpr = spec.n_agprs and (name.startswith(AGPR_OPS) or case["fields"].get("acc_cd"))
  sg, vg = set(), set()
  for d in amd_exec.operands(case)[1]:
    (sg if d.file == "s" else vg).update(range(d.reg, d.reg + d.count))
    if d.file == "v" and agpr: vg.update(range(N_VGPR + d.reg, N_VGPR + d.reg + d.count))
    if d.file == "v" and d.bits == 16 and fmt in ("VOP1", "VOP2") and d.reg >= 128 and spec.true16: vg.add(d.reg - 128)
  fields, cmpx = case["fields"], "CMPX" in name
  mask = fields["sdst"] if case["cls"].endswith("_SDWA_SDST") and fields["sd"] else VCC  # gfx9 SDWA: sd selects SDST over VCC
  if cmpx or (fmt == "SOP1" and ("SAVEEXEC" in name or "WREXEC" in name)): sg.update(EXEC + i for i in masks)
  if name.startswith("S_SET_GPR_IDX"): sg.add(spec.m0_reg)  # gfx9: the VGPR index mode keeps its index in M0
  if (fmt == "VOPC" and (not cmpx or case["arch"] in CMPX_WRITES_MASK)) or (fmt == "VOP2" and "_CO_" in name): sg.update(mask + i for i in masks)
  return sg, vg, fmt in SALU

def execute(case:dict):
  """Run the case; None when the emulator raised one of its defined faults, else the final WaveState."""
  try: return amd_exec.run(case)
  except GPUFault: return None
  except Exception as e:
    raise Finding("host-exception", f"{case['op']} ({case['cls']}): {type(e).__name__}: {e} at {(at:=crash_site(e))}",
                  key=(case["arch"], type(e).__name__, at)) from None

def crash_site(e:Exception) -> str:
  """`file:function` of the innermost frame of the exception inside the emulator (or generated pcode): groups one bug's crashes."""
  frames = [f for f in traceback.extract_tb(e.__traceback__) if "/emu/" in f.filename or not f.filename.endswith(".py")]
  f = (frames or traceback.extract_tb(e.__traceback__))[-1]
  return f"{os.path.basename(f.filename)}:{f.name}"

def snapshot(st) -> tuple:
  """Everything the instruction could have changed, for comparing two runs (not the PC: the code buffer moves between runs)."""
  return (st.sgpr.tobytes(), st.vgpr.tobytes(), st.scc.tobytes(), st.hwreg.tobytes(), st.status.tobytes())

def check(case:dict) -> None:
  """Raise a Finding when execution crashes the host, is not deterministic, or writes registers it must not."""
  checked_run(case)

def checked_run(case:dict):
  """Run the case twice, check the properties (see the module docstring) and return the final WaveState (None after a defined fault)."""
  st = execute(case)
  if st is None: return None
  again = execute(case)
  if again is None or snapshot(st) != snapshot(again):
    raise Finding("nondeterministic", f"{case['op']} ({case['cls']}): two runs differ", key=(case["arch"], case["op"]))
  sgpr0, vgpr0 = amd_exec.initial_state(case)
  sg_ok, vg_ok, scc_ok = allowed_writes(case)
  name, where = case["op"], f"{case['op']} ({case['cls']}, wave{case['lanes']})"
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
  if name.startswith(LANE_EXEMPT) or movrel: return st
  inactive = np.array([not (case["exec"] >> i) & 1 for i in range(case["lanes"])])
  if (hit:=changed[inactive]).any():
    lane, reg = int(np.nonzero(inactive)[0][np.nonzero(hit.any(1))[0][0]]), int(np.nonzero(hit.any(0))[0][0])
    raise Finding("inactive-lane-write", f"{where}: v{reg} lane {lane} (EXEC={case['exec']:#x}) {int(vgpr0[lane, reg]):#x} -> "
                  f"{int(st.vgpr[0, lane, reg]):#x}", key=(case["arch"], name))
  return st

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
  register(Target(f"exec.{_arch}", lambda rng, a=_arch: amd_exec.generate(a, rng), check, minimise,
                  doc=f"{_arch} VALU/SALU instructions on emu.amd ({amd_exec.CPU[_arch]}, wave{_waves}): no host crash, deterministic, "
                      "only its destinations written"))
