"""Native VALU regions: a run of straight-line vector ALU instructions compiled, once per code bytes, into one native function
that runs the whole run for every wave of a batch, lane by lane, with the registers of a lane in machine registers.

Each instruction's semantics are its pcode op's generated code, lowered per lane by `emu.pcode.lanes_ir`; this module adds only
what the executors (exec_valu) add around the op: operand reads (VGPR, SGPR, constants, neg/abs), EXEC, lane-mask registers
(VCC, carry-outs, VOPC results) and the destination store. A region holds plain VOP1/VOP2/VOP3/VOP3SD/VOPC instructions without
DPP, SDWA, output modifiers, clamping or 16-bit halves, VOPD pairs, and the SOPP no-ops between them (s_delay_alu, s_nop,
s_waitcnt ...); it ends at anything else, or where an instruction would read as a scalar value an SGPR that an earlier one wrote
as a lane mask (lanes are run one after another, so only lane-wise dependencies may cross instructions).

Nothing is half applied: a wave's results are staged and stored only when the wave is done. A wave in which some float
arithmetic made a NaN (its bits are the CPU's choice, see lanes_ir) is not stored at all: the region's steps then run for that
wave on the numpy path. A thread whose floating-point control register is not IEEE's default runs the numpy path for the whole
batch. Compiling costs 10-200 ms, so a region is compiled only once it has run REGION_HOT instructions on the numpy path, on a
background thread while the emulation goes on, or loaded at once when its object is in the disk cache (emu.native).
EMU_REGIONS=0 (or EMU_NATIVE=0) turns regions off.
"""
from __future__ import annotations
import ctypes, os
import numpy as np
from emu import native
from emu.amd.exec_salu import ControlStep
from emu.amd.exec_valu import ValuStep, VopdStep
from emu.amd.operands import Src
from emu.amd.step import Machine, Step
from emu.amd.wave import HWREG_MODE, MODE_INPUTS, mode_state
from emu.pcode.lanes_ir import Builder, NotLowerable, Val, U64, BOOL, N_SENTINEL, declarations, literal, lower

REGION_HOT = 400      # instructions (per batch) a region runs on the numpy path before it is compiled (~10 ms of numpy-path time)
BACKGROUND = True     # compile on the background thread (tests switch it off to have the native code at once)
VALU_READS = frozenset({"S0", "S1", "S2", "D0", "VCC", "EXEC", "n", "laneId", "WAVE32", "WAVE64"}) | MODE_INPUTS
N_SGPR_ROW = 128
FUNCTION = "region"   # every region is one module with one function of this name (the disk cache keys on the whole IR)
SIGNATURE = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p,
                             ctypes.c_int64)

def enabled() -> bool:
  """Whether regions may run in this process (EMU_REGIONS and EMU_NATIVE not 0, native code loadable)."""
  return os.environ.get("EMU_REGIONS", "1") != "0" and native.available()

def plain_valu(s:Step) -> bool:
  """A VALU step whose operands and result need nothing but reads, neg/abs and a 32/64-bit store (the structural half of the test)."""
  if isinstance(s, VopdStep): return all(src.kind in ("vgpr", "sgpr", "const") and src.bits == 32 and not src.hi
                                         for _, srcs, _, _ in s.halves for src in srcs.values()) and not any(op.fn is None for op, _, _, _ in s.halves)
  if not isinstance(s, ValuStep) or s.op.kind != "vector" or s.op.fn is None: return False
  if s.dpp is not None or s.instr.variant not in ("", "LIT") or s.per_wave or s.scalar_dst or s.sdwa_dst is not None: return False
  if s.omod or s.clamp or s.int_clamp is not None or s.d_hi or s.d_bits not in (32, 64) or s.store_bits != s.d_bits: return False
  op = s.op
  if not op.reads <= VALU_READS | set(s.fields) or "EXEC" in op.writes or not op.writes <= {"D0"} | op.lane_masks: return False
  if "EXEC" in op.reads and "EXEC" not in op.lane_masks: return False
  for sp in s.srcs.values():
    src = sp.src
    if sp.packed is not None or not isinstance(src, Src) or src.kind not in ("vgpr", "sgpr", "const") or src.hi or src.bits not in (32, 64): return False
    if (sp.neg or sp.abs) and sp.fkind not in (32, 64): return False
  for name in op.lane_masks & op.reads:
    if name != "EXEC" and s.mask_read[name] >= 128 and s.mask_read[name] < 256: return False   # lane masks from SCC/VCCZ & co.
  return not any(s.mask_write[n] in (s.spec.exec_lo, s.spec.exec_lo + 1) for n in op.lane_masks & op.writes)

class _LaneCode:
  """The IR of one lane running a region: the VGPR and lane-mask values each instruction leaves, the per-wave loads it needs."""
  def __init__(self, lanes:int, spec):
    self.lanes, self.spec, self.b = lanes, spec, Builder("t")
    self.vgpr: dict[int, str] = {}        # VGPR -> current i32 value in this lane
    self.written: list[int] = []          # VGPRs the region writes, in first-write order
    self.masks: dict[int, Val] = {}       # lane-mask register (pair base) -> this lane's bit (i1) as written in the region
    self.mask_words: set[int] = set()     # lane-mask registers read before any write: loaded once per wave
    self.scalars: set[int] = set()        # SGPRs read as values: loaded once per wave

  # ---- operand reads ----
  def vreg(self, r:int) -> str:
    if r not in self.vgpr:
      b = self.b
      off = b.emit(f"mul i64 %stride, {r}", U64)
      at = b.emit(f"add i64 {off.ref}, %idx", U64)
      p = b.emit(f"getelementptr inbounds i32, ptr %vgpr, i64 {at.ref}", U64)
      self.vgpr[r] = b.emit(f"load i32, ptr {p.ref}", U64).ref
    return self.vgpr[r]

  def _dwords(self, src:Src, k:int) -> str:
    if src.kind == "vgpr": return self.vreg(src.reg + k)
    self.scalars.add(src.reg + k)
    return f"%s{src.reg + k}"

  def read(self, src:Src, fkind:int=0, neg:bool=False, abs_:bool=False) -> Val:
    """A source operand as uint64 bits (zero-extended), with neg/abs on the sign bit of its float kind (operands.apply_neg_abs)."""
    b = self.b
    if src.kind == "const": v = Val(literal(src.value & ((1 << src.bits) - 1), U64), U64)
    else:
      v = b.emit(f"zext i32 {self._dwords(src, 0)} to i64", U64)
      if src.bits == 64:
        hi = b.emit(f"zext i32 {self._dwords(src, 1)} to i64", U64)
        hs = b.emit(f"shl i64 {hi.ref}, 32", U64)
        v = b.emit(f"or i64 {v.ref}, {hs.ref}", U64)
    sign = 1 << (fkind - 1) if fkind else 0
    if abs_: v = b.emit(f"and i64 {v.ref}, {literal(((1 << 64) - 1) ^ sign, U64)}", U64)
    if neg: v = b.emit(f"xor i64 {v.ref}, {literal(sign, U64)}", U64)
    return v

  def mask_bit(self, reg:int, literal_value:int|None) -> Val:
    """This lane's bit (uint64 0/1) of lane-mask operand `reg` (an SGPR pair, EXEC, or a constant / literal: as mask_lane_bits)."""
    b = self.b
    if reg == self.spec.exec_lo: return b.emit("zext i1 %act to i64", U64)
    if reg in self.masks: return b.emit(f"zext i1 {self.masks[reg].ref} to i64", U64)
    if reg < 128 and reg != self.spec.null_reg:
      self.mask_words.add(reg)
      word = f"%m{reg}"
    else:
      from emu.amd.operands import resolve_src
      src = resolve_src(reg, 64, None, literal_value, self.spec)
      if src.kind != "const": raise NotLowerable(f"lane mask from {src.kind}")
      word = literal(src.value, U64)
    sh = b.emit(f"lshr i64 {word}, %l", U64)
    return b.emit(f"and i64 {sh.ref}, 1", U64)

  # ---- results ----
  def write_vgpr(self, reg:int, bits:int, value):
    b = self.b
    v = b.cast(value, U64)
    for k in range(bits // 32):
      part = b.emit(f"lshr i64 {v.ref}, {32 * k}", U64) if k else v
      self.vgpr[reg + k] = b.emit(f"trunc i64 {part.ref} to i32", U64).ref
      if reg + k not in self.written: self.written.append(reg + k)

  def write_mask(self, reg:int, value):
    if reg == self.spec.null_reg: return
    b = self.b
    v = b.cast(value, U64)
    one = b.emit(f"and i64 {v.ref}, 1", U64)
    self.masks[reg] = b.emit(f"icmp ne i64 {one.ref}, 0", BOOL)

  # ---- conflicts: lanes run one after another, so a later instruction may only see a lane-mask write lane by lane ----
  def mask_regs(self, reg:int) -> set[int]: return {reg, reg + 1} if self.lanes == 64 else {reg}
  def written_mask_regs(self) -> set[int]: return set().union(*(self.mask_regs(r) for r in self.masks)) if self.masks else set()

  def conflicts(self, scalar_regs:set[int], mask_reads:set[int], mask_writes:set[int]) -> bool:
    w = self.written_mask_regs()
    if scalar_regs & w: return True
    if any(r not in self.masks and self.mask_regs(r) & w for r in mask_reads | mask_writes if r < 128): return True
    return False

def _inputs(step:ValuStep, code:_LaneCode, lanes:int) -> dict:
  """The op state of one ValuStep for one lane (exec_valu.ValuStep._batch's reads)."""
  op, inputs = step.op, {"n": N_SENTINEL, "laneId": Val("%l", U64), "WAVE32": lanes == 32, "WAVE64": lanes == 64, **step.fields}
  for name, sp in step.srcs.items(): inputs[name] = code.read(sp.src, sp.fkind, sp.neg, sp.abs)
  for name in op.lane_masks & op.reads: inputs[name] = code.mask_bit(step.mask_read[name] if name != "EXEC" else step.spec.exec_lo, step.instr.literal)
  if "D0" in op.reads and "D0" not in op.lane_masks: inputs["D0"] = code.read(step.d0)
  return inputs

def _step_regs(step) -> tuple[set[int], set[int], set[int]]:
  """(SGPRs read as values, lane-mask registers read, lane-mask registers written) of a plain VALU step."""
  if isinstance(step, VopdStep):
    scal = {s.reg + k for _, srcs, _, _ in step.halves for s in srcs.values() if s.kind == "sgpr" for k in range(s.nregs)}
    return scal, {step.spec.vcc_lo for op, _, _, _ in step.halves if "VCC" in op.reads}, set()
  scal = {sp.src.reg + k for sp in step.srcs.values() if sp.src.kind == "sgpr" for k in range(sp.src.nregs)}
  op = step.op
  return scal, {step.mask_read[n] for n in op.lane_masks & op.reads if n != "EXEC"}, {step.mask_write[n] for n in op.lane_masks & op.writes}

def _lower_step(step, code:_LaneCode, mode:dict, lanes:int):
  """Append one step's lane code (raises NotLowerable, leaving `code` unusable: the caller rebuilds without the step)."""
  if isinstance(step, ControlStep): return
  if isinstance(step, VopdStep):   # both halves read their sources before either writes
    outs = []
    for op, srcs, vdst, _ in step.halves:
      inputs = {"n": N_SENTINEL, "laneId": Val("%l", U64), "WAVE32": lanes == 32, "WAVE64": lanes == 64, "SIMM32": step.instr.literal or 0, **mode}
      for name, s in srcs.items(): inputs[name] = code.read(s)
      if "VCC" in op.reads: inputs["VCC"] = code.mask_bit(step.spec.vcc_lo, None)
      outs.append((vdst, lower(op.source, inputs, code.b)))
    for vdst, out in outs: code.write_vgpr(vdst, 32, out["D0"])
    return
  op = step.op
  out = lower(op.source, {**_inputs(step, code, lanes), **mode}, code.b)
  if set(out) != set(op.writes): raise NotLowerable(f"outputs {sorted(out)} for writes {sorted(op.writes)}")
  for name in op.lane_masks & op.writes: code.write_mask(step.mask_write[name], out[name])
  if "D0" in op.writes and "D0" not in op.lane_masks: code.write_vgpr(step.vdst, step.store_bits, out["D0"])

def _function(name:str, code:_LaneCode, lanes:int, spec) -> str:
  """The region's function: i32 name(vgpr, sgpr, ws, nws, stride, fallback, off); see the module docstring and `Region.run`."""
  e, nw = spec.exec_lo, max(1, len(code.written))
  nan = " ".join(f"%nan{i} = fcmp uno {'float' if v.dt.itemsize == 4 else 'double'} {v.ref}, {v.ref}" for i, v in enumerate(code.b.float_results))
  L = []
  a = L.append
  a(f"define i32 @{name}(ptr %vo, ptr %so, ptr %wo, i64 %nws, i64 %stride, ptr %fo, i64 %off) {{")
  a("entry:\n  %csr = alloca i32\n  call void @llvm.x86.sse.stmxcsr(ptr %csr)\n  %mx = load i32, ptr %csr")
  a(f"  %bad = and i32 %mx, {native.MXCSR_NON_DEFAULT}\n  %isbad = icmp ne i32 %bad, 0\n  br i1 %isbad, label %done, label %start")
  a("start:")
  for p in ("v", "s", "w", "f"): a(f"  %{p}a = getelementptr i8, ptr %{p}o, i64 %off\n  %{p}p = load ptr, ptr %{p}a")
  a(f"  %vgpr = bitcast ptr %vp to ptr\n  %buf = alloca i32, i64 {nw * lanes}\n  br label %wave")
  a("wave:\n  %k = phi i64 [0, %start], [%k.next, %wave.next]")
  a("  %wpp = getelementptr inbounds i64, ptr %wp, i64 %k\n  %w = load i64, ptr %wpp")
  a(f"  %sb = mul i64 %w, {N_SGPR_ROW}\n  %vbase = mul i64 %w, {lanes}")
  def sload(reg:int, dst:str):
    a(f"  %{dst}.i = add i64 %sb, {reg}\n  %{dst}.p = getelementptr inbounds i32, ptr %sp, i64 %{dst}.i\n  %{dst} = load i32, ptr %{dst}.p")
  def mword(reg:int, dst:str):
    sload(reg, f"{dst}.lo")
    a(f"  %{dst}.lo64 = zext i32 %{dst}.lo to i64")
    if lanes == 64:
      sload(reg + 1, f"{dst}.hi")
      a(f"  %{dst}.hi64 = zext i32 %{dst}.hi to i64\n  %{dst}.hs = shl i64 %{dst}.hi64, 32\n  %{dst} = or i64 %{dst}.lo64, %{dst}.hs")
    else: a(f"  %{dst} = add i64 %{dst}.lo64, 0")
  mword(e, "exec")
  for r in sorted(code.scalars): sload(r, f"s{r}")
  for r in sorted(code.mask_words): mword(r, f"m{r}")
  a("  br label %lane\nlane:\n  %l = phi i64 [0, %wave], [%l.next, %lane]\n  %nan = phi i1 [false, %wave], [%nan.next, %lane]")
  for r in code.masks: a(f"  %acc{r} = phi i64 [0, %wave], [%acc{r}.next, %lane]")
  a("  %idx = add i64 %vbase, %l\n  %esh = lshr i64 %exec, %l\n  %ebit = and i64 %esh, 1\n  %act = icmp ne i64 %ebit, 0")
  L.extend(code.b.lines)
  for j, r in enumerate(code.written):
    a(f"  %st{j}.i = add i64 %l, {j * lanes}\n  %st{j}.p = getelementptr inbounds i32, ptr %buf, i64 %st{j}.i\n  store i32 {code.vgpr[r]}, ptr %st{j}.p")
  if nan: a("  " + nan.replace(" %nan", "\n  %nan").lstrip())
  anynan = "false"
  for i in range(len(code.b.float_results)):
    a(f"  %nanor{i} = or i1 {anynan}, %nan{i}")
    anynan = f"%nanor{i}"
  a(f"  %nanact = and i1 %act, {anynan}\n  %nan.next = or i1 %nan, %nanact")
  for r, bit in code.masks.items():
    a(f"  %mb{r} = and i1 %act, {bit.ref}\n  %mz{r} = zext i1 %mb{r} to i64\n  %ms{r} = shl i64 %mz{r}, %l\n  %acc{r}.next = or i64 %acc{r}, %ms{r}")
  a(f"  %l.next = add i64 %l, 1\n  %lane.end = icmp eq i64 %l.next, {lanes}\n  br i1 %lane.end, label %lanes.done, label %lane")
  a("lanes.done:\n  br i1 %nan.next, label %fallback, label %commit")
  a("fallback:\n  %fbp = getelementptr inbounds i8, ptr %fp, i64 %k\n  store i8 1, ptr %fbp\n  br label %wave.next")
  a("commit:")
  for r in code.masks:
    a(f"  %cw{r}.lo = trunc i64 %acc{r}.next to i32\n  %cw{r}.i = add i64 %sb, {r}\n  %cw{r}.p = getelementptr inbounds i32, ptr %sp, i64 %cw{r}.i")
    a(f"  store i32 %cw{r}.lo, ptr %cw{r}.p")
    if lanes == 64:
      a(f"  %cw{r}.s = lshr i64 %acc{r}.next, 32\n  %cw{r}.hi = trunc i64 %cw{r}.s to i32\n  %cw{r}.j = add i64 %cw{r}.i, 1")
      a(f"  %cw{r}.q = getelementptr inbounds i32, ptr %sp, i64 %cw{r}.j\n  store i32 %cw{r}.hi, ptr %cw{r}.q")
  if code.written:
    a("  br label %copy\ncopy:\n  %c = phi i64 [0, %commit], [%c.next, %copy]\n  %cidx = add i64 %vbase, %c")
    a("  %csh = lshr i64 %exec, %c\n  %cbit = and i64 %csh, 1\n  %cact = icmp ne i64 %cbit, 0")
    for j, r in enumerate(code.written):
      a(f"  %co{j} = mul i64 %stride, {r}\n  %ca{j} = add i64 %co{j}, %cidx\n  %cp{j} = getelementptr inbounds i32, ptr %vgpr, i64 %ca{j}")
      a(f"  %cold{j} = load i32, ptr %cp{j}\n  %cb{j}.i = add i64 %c, {j * lanes}\n  %cb{j}.p = getelementptr inbounds i32, ptr %buf, i64 %cb{j}.i")
      a(f"  %cnew{j} = load i32, ptr %cb{j}.p\n  %cv{j} = select i1 %cact, i32 %cnew{j}, i32 %cold{j}\n  store i32 %cv{j}, ptr %cp{j}")
    a(f"  %c.next = add i64 %c, 1\n  %c.end = icmp eq i64 %c.next, {lanes}\n  br i1 %c.end, label %wave.next, label %copy")
  else: a("  br label %wave.next")
  a("wave.next:\n  %k.next = add i64 %k, 1\n  %k.end = icmp eq i64 %k.next, %nws\n  br i1 %k.end, label %done, label %wave")
  a("done:\n  %ret = phi i32 [%bad, %entry], [0, %wave.next]\n  ret i32 %ret\n}")
  return "\n".join(L)

class Region:
  """A compiled (or to-be-compiled) run of steps: `steps` [(byte offset from the first, Step)], `size` bytes, `count` instructions
  (built once per code bytes: the same code at another address is the same region); `mode`: the MODE register value the code was
  lowered for (None when no op of it reads the MODE)."""
  def __init__(self, steps:list[tuple[int, Step]], ir:str, mode:int|None):
    self.steps, self.ir, self.mode = steps, ir, mode
    self.size, self.count = sum(s.size for _, s in steps), len(steps)
    self.fn = native.NATIVE.function(ir, SIGNATURE, compile=False)
    self.pending, self.queued, self.failed = 0, -1, False

  def ready(self) -> bool:
    """Whether the native function is there. A region that has run REGION_HOT instructions (per batch) without it is compiled:
    on the background compile thread, or here and now when BACKGROUND is off."""
    if self.fn is None and not self.failed:
      self.pending += self.count
      if self.pending >= REGION_HOT and self.queued != native.NATIVE.generation:
        self.queued = native.NATIVE.generation
        if BACKGROUND: native.NATIVE.function_later(self.ir, SIGNATURE, self._compiled)
        else: self._compiled(native.NATIVE.function(self.ir, SIGNATURE))
    return self.fn is not None

  def _compiled(self, fn):
    self.fn, self.failed = fn, fn is None   # None: LLVM rejected it or native code is unavailable; the numpy path, for good

  def run(self, m:Machine, ws:np.ndarray) -> bool:
    """Run the region for waves ws (same PC, sorted); False (nothing done) when it cannot run natively for them."""
    st = m.st
    if self.mode is not None and not (st.hwreg[ws, HWREG_MODE] == self.mode).all(): return False
    ws = np.ascontiguousarray(ws, dtype=np.int64)
    fallback = np.zeros(len(ws), dtype=np.int8)
    r = self.fn(id(st.vgpr_store), id(st.sgpr), id(ws), len(ws), st.n * st.lanes, id(fallback), native.NATIVE.data_offset)
    if r: return False   # the thread's MXCSR is not IEEE's default: nothing was stored
    if fallback.any():
      redo = ws[fallback != 0]
      for _, step in self.steps: step.run(m, redo)
      ws = ws[fallback == 0]
    st.pc[ws] += self.size
    return True

_built: dict[tuple, Region | None] = {}

def build(steps:list[Step], lanes:int, spec, mode:int) -> Region | None:
  """The region for the longest prefix of `steps` (consecutive plain VALU steps and no-op control steps) that lowers, cached on
  the step objects (steps are cached on their bytes); None when not one VALU step of it lowers."""
  key = (lanes, mode, tuple(id(s) for s in steps))
  if key in _built: return _built[key]
  mstate = mode_state(mode)
  take, region = len(steps), None
  while take and region is None:
    code, reads_mode, ok = _LaneCode(lanes, spec), False, 0
    try:
      for i, s in enumerate(steps[:take]):
        if not isinstance(s, ControlStep):
          if code.conflicts(*_step_regs(s)): raise NotLowerable("lane-mask dependency")
          ops = [h[0] for h in s.halves] if isinstance(s, VopdStep) else [s.op]
          reads_mode |= any(op.reads & MODE_INPUTS for op in ops)
        _lower_step(s, code, mstate, lanes)
        ok = i + 1
    except NotLowerable: pass
    if ok < take:   # cut at the first step that did not lower (or conflicts) and build again without it
      take = ok
      continue
    while take and isinstance(steps[take - 1], ControlStep): take -= 1
    if not any(not isinstance(s, ControlStep) for s in steps[:take]): break
    ir = f"declare void @llvm.x86.sse.stmxcsr(ptr)\n{declarations()}\n{_function(FUNCTION, code, lanes, spec)}\n"
    offsets = np.cumsum([0] + [s.size for s in steps[:take - 1]]).tolist()
    region = Region(list(zip(offsets, steps[:take])), ir, mode if reads_mode else None)
  _built[key] = region
  return region
