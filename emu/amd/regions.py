"""Native VALU regions: a run of straight-line vector ALU instructions compiled, once per code bytes, into one native function
that runs the whole run for every wave of a batch, wave by wave, on all lanes at once: each register value is one SIMD vector
(a lane per element) that stays in machine registers from the instruction that makes it to the one that reads it.

Each instruction's semantics are its pcode op's generated code, lowered by `emu.pcode.lanes_ir`; this module adds only what the
executors (exec_valu) add around the op: operand reads (VGPR, SGPR, constants, neg/abs), EXEC, lane-mask registers (VCC,
carry-outs, VOPC results) and the destination store. A region holds plain VOP1/VOP2/VOP3/VOP3SD/VOPC instructions without DPP,
SDWA, output modifiers, clamping or 16-bit halves, VOPD pairs, and the SOPP no-ops between them (s_delay_alu, s_nop, s_waitcnt
...); it ends at anything else, or where an instruction would read as a scalar value an SGPR that an earlier one wrote as a lane
mask (results are stored when the wave is done, so only lane-wise dependencies may cross instructions).

Nothing is half applied: a wave's results are stored only when the whole run is done for it. A wave in which some float
arithmetic made a NaN (its bits are the CPU's choice, see lanes_ir) is not stored at all: the region's steps then run for that
wave on the numpy path. A thread whose floating-point control register is not IEEE's default runs the numpy path for the whole
batch. Compiling costs 10-200 ms, so a region is compiled only once it has run REGION_HOT instructions on the numpy path, on a
background thread while the emulation goes on, or loaded at once when its object is in the disk cache (emu.native).
EMU_REGIONS=0 (or EMU_NATIVE=0) turns regions off; EMU_REGIONS=check compiles every region at once and runs each batch both
natively and on the numpy path, failing the dispatch (GPUEmulatorError) where the two differ.
"""
from __future__ import annotations
import ctypes, os
import numpy as np
from emu import native
from emu.amd.exec_salu import ControlStep
from emu.amd.exec_valu import ValuStep, VopdStep
from emu.amd.operands import Src, resolve_src
from emu.amd.step import Machine, Step
from emu.amd.wave import HWREG_MODE, MODE_INPUTS, mode_state
from emu.pcode.lanes_ir import Builder, NotLowerable, Val, U64, BOOL, N_SENTINEL, lower

CHECK = os.environ.get("EMU_REGIONS", "") == "check"   # every region native at once, each run compared with the numpy path
REGION_HOT = 0 if CHECK else 400   # instructions (per batch) a region runs on the numpy path before it is compiled (~10 ms of it)
BACKGROUND = not CHECK             # compile on the background thread (off: the native code at once, as tests and CHECK want)
VALU_READS = frozenset({"S0", "S1", "S2", "D0", "VCC", "EXEC", "n", "laneId", "WAVE32", "WAVE64"}) | MODE_INPUTS
N_SGPR_ROW = 128   # SGPRs per wave in WaveState.sgpr
N_VGPRS = 256      # VGPRs a VALU operand may name (CDNA's AGPRs, stored after them, are not VALU operands)
FUNCTION = "region"   # every region is one module with one function of this name (the disk cache keys on the whole IR)
SIGNATURE = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p,
                             ctypes.c_int64)

def enabled() -> bool:
  """Whether regions may run in this process (EMU_REGIONS and EMU_NATIVE not 0, native code loadable)."""
  return os.environ.get("EMU_REGIONS", "1") != "0" and native.available()

def plain_valu(s:Step) -> bool:
  """A VALU step whose operands and result need nothing but reads, neg/abs and a 32/64-bit store (the structural half of the test)."""
  if isinstance(s, VopdStep):
    return all(src.kind in ("vgpr", "sgpr", "const") and src.bits == 32 and not src.hi for _, srcs, _, _ in s.halves for src in srcs.values()) \
      and not any(op.fn is None for op, _, _, _ in s.halves)
  if not isinstance(s, ValuStep) or s.op.kind != "vector" or s.op.fn is None: return False
  if s.dpp is not None or s.instr.variant not in ("", "LIT") or s.per_wave or s.scalar_dst or s.sdwa_dst is not None: return False
  if s.omod or s.clamp or s.int_clamp is not None or s.d_hi or s.d_bits not in (32, 64) or s.store_bits != s.d_bits: return False
  op = s.op
  if not op.reads <= VALU_READS | set(s.fields) or "EXEC" in op.writes or not op.writes <= {"D0"} | op.lane_masks: return False
  if "EXEC" in op.reads and "EXEC" not in op.lane_masks: return False
  for sp in s.srcs.values():
    src = sp.src
    if sp.packed is not None or not isinstance(src, Src) or src.kind not in ("vgpr", "sgpr", "const"): return False
    if src.hi or src.bits not in (32, 64): return False
    if (sp.neg or sp.abs) and sp.fkind not in (32, 64): return False
  for name in op.lane_masks & op.reads:
    if name != "EXEC" and 128 <= s.mask_read[name] < 256: return False   # lane masks from SCC/VCCZ & co.
  return not any(s.mask_write[n] in (s.spec.exec_lo, s.spec.exec_lo + 1) for n in op.lane_masks & op.writes)

class _WaveCode:
  """The IR of one wave running a region, all its lanes at once (one vector element each): the VGPR and lane-mask values each
  instruction leaves. Registers are loaded where first read (SGPRs from %sb, VGPRs from %vgpr at %vbase); stores wait for the end."""
  def __init__(self, lanes:int, spec):
    self.lanes, self.spec, self.b = lanes, spec, Builder("t", lanes)
    self.vgpr: dict[int, str] = {}        # VGPR -> its current <lanes x i32> value
    self.written: list[int] = []          # VGPRs the region writes, in first-write order
    self.masks: dict[int, Val] = {}       # lane-mask register (pair base) -> its lanes' bits (<lanes x i1>) as written in the region

  # ---- operand reads ----
  def vreg(self, r:int) -> str:
    if not 0 <= r < N_VGPRS: raise NotLowerable(f"v{r} is past the VGPR file")   # (the numpy path faults on it)
    if r not in self.vgpr:
      b = self.b
      off = b.emit(f"mul i64 %stride, {r}", U64)
      at = b.emit(f"add i64 {off.ref}, %vbase", U64)
      p = b.emit(f"getelementptr inbounds i32, ptr %vgpr, i64 {at.ref}", U64)
      self.vgpr[r] = b.emit(f"load {b.t('i32')}, ptr {p.ref}, align 4", U64).ref
    return self.vgpr[r]

  def sreg(self, r:int) -> str:
    """SGPR r of this wave (a scalar i32)."""
    if not 0 <= r < N_SGPR_ROW: raise NotLowerable(f"s{r} is past the SGPR row")   # (the numpy path faults on it)
    b = self.b
    at = b.emit(f"add i64 %sb, {r}", U64)
    p = b.emit(f"getelementptr inbounds i32, ptr %sgpr, i64 {at.ref}", U64)
    return b.emit(f"load i32, ptr {p.ref}", U64).ref

  def _dword(self, src:Src, k:int) -> str:
    if src.kind == "vgpr": return self.vreg(src.reg + k)
    return self.b.splat("i32", self.sreg(src.reg + k), U64).ref

  def read(self, src:Src, fkind:int=0, neg:bool=False, abs_:bool=False) -> Val:
    """A source operand as uint64 bits (zero-extended), with neg/abs on the sign bit of its float kind (operands.apply_neg_abs)."""
    b = self.b
    v64 = b.t("i64")
    if src.kind == "const": v = b.const(src.value & ((1 << src.bits) - 1), U64)
    else:
      v = b.emit(f"zext {b.t('i32')} {self._dword(src, 0)} to {v64}", U64)
      if src.bits == 64:
        hi = b.emit(f"zext {b.t('i32')} {self._dword(src, 1)} to {v64}", U64)
        hs = b.emit(f"shl {v64} {hi.ref}, {b.c('i64', '32')}", U64)
        v = b.emit(f"or {v64} {v.ref}, {hs.ref}", U64)
    sign = 1 << (fkind - 1) if fkind else 0
    if abs_: v = b.emit(f"and {v64} {v.ref}, {b.const(((1 << 64) - 1) ^ sign, U64).ref}", U64)
    if neg: v = b.emit(f"xor {v64} {v.ref}, {b.const(sign, U64).ref}", U64)
    return v

  def mask_word(self, reg:int) -> str:
    """The lane mask in SGPR reg (and reg+1 in wave64) of this wave as a scalar i64."""
    b = self.b
    lo = b.emit(f"zext i32 {self.sreg(reg)} to i64", U64)
    if self.lanes == 32: return lo.ref
    hi = b.emit(f"zext i32 {self.sreg(reg + 1)} to i64", U64)
    hs = b.emit(f"shl i64 {hi.ref}, 32", U64)
    return b.emit(f"or i64 {lo.ref}, {hs.ref}", U64).ref

  def mask_bits(self, reg:int, literal_value:int|None) -> Val:
    """Each lane's bit (uint64 0/1) of lane-mask operand `reg` (an SGPR pair, EXEC, or a constant / literal: as mask_lane_bits)."""
    b = self.b
    if reg == self.spec.exec_lo: return b.emit(f"zext {b.t('i1')} %act to {b.t('i64')}", U64)
    if reg in self.masks: return b.emit(f"zext {b.t('i1')} {self.masks[reg].ref} to {b.t('i64')}", U64)
    if reg < 128 and reg != self.spec.null_reg: word = b.splat("i64", self.mask_word(reg), U64).ref
    else:
      src = resolve_src(reg, 64, None, literal_value, self.spec)
      if src.kind != "const": raise NotLowerable(f"lane mask from {src.kind}")
      word = b.const(src.value, U64).ref
    sh = b.emit(f"lshr {b.t('i64')} {word}, {b.lane_ids()}", U64)
    return b.emit(f"and {b.t('i64')} {sh.ref}, {b.c('i64', '1')}", U64)

  # ---- results ----
  def write_vgpr(self, reg:int, bits:int, value):
    if not 0 <= reg <= N_VGPRS - bits // 32: raise NotLowerable(f"v{reg} ({bits} bits) runs past the VGPR file")
    b = self.b
    v = b.cast(value, U64)
    for k in range(bits // 32):
      part = b.emit(f"lshr {b.t('i64')} {v.ref}, {b.c('i64', str(32 * k))}", U64) if k else v
      self.vgpr[reg + k] = b.emit(f"trunc {b.t('i64')} {part.ref} to {b.t('i32')}", U64).ref
      if reg + k not in self.written: self.written.append(reg + k)

  def write_mask(self, reg:int, value):
    if reg == self.spec.null_reg: return
    if reg + self.lanes // 32 > N_SGPR_ROW: raise NotLowerable(f"a wave{self.lanes} lane mask at s{reg} runs past the SGPR row")
    if self.mask_regs(reg) & {self.spec.exec_lo, self.spec.exec_lo + 1}: raise NotLowerable("a lane mask over EXEC")   # (wave64 M0 pair)
    b = self.b
    v = b.cast(value, U64)
    one = b.emit(f"and {b.t('i64')} {v.ref}, {b.c('i64', '1')}", U64)
    self.masks[reg] = b.emit(f"icmp ne {b.t('i64')} {one.ref}, zeroinitializer", BOOL)

  def mark(self) -> tuple:
    """The state to `rewind` to when the next step does not lower (it may have emitted code and loaded registers by then)."""
    return len(self.b.lines), len(self.b.float_results), dict(self.vgpr)
  def rewind(self, at:tuple):
    n_lines, n_float, vgpr = at
    del self.b.lines[n_lines:], self.b.float_results[n_float:]
    self.vgpr = vgpr

  # ---- conflicts: a later instruction may see a lane-mask write only lane by lane (results are stored at the end) ----
  def mask_regs(self, reg:int) -> set[int]: return {reg, reg + 1} if self.lanes == 64 else {reg}
  def written_mask_regs(self) -> set[int]: return set().union(*(self.mask_regs(r) for r in self.masks)) if self.masks else set()

  def conflicts(self, scalar_regs:set[int], mask_reads:set[int], mask_writes:set[int]) -> bool:
    w = self.written_mask_regs()
    if scalar_regs & w: return True
    return any(r not in self.masks and self.mask_regs(r) & w for r in mask_reads | mask_writes if r < 128)

def _wave_inputs(code:_WaveCode, mode:dict) -> dict:
  """What every op state of a wave's lanes holds: the batch-size sentinel, lane ids, the wave size, the MODE's inputs."""
  return {"n": N_SENTINEL, "laneId": Val(code.b.lane_ids(), U64), "WAVE32": code.lanes == 32, "WAVE64": code.lanes == 64, **mode}

def _inputs(step:ValuStep, code:_WaveCode, mode:dict) -> dict:
  """The op state of one ValuStep for one wave's lanes (exec_valu.ValuStep._batch's reads)."""
  op, inputs = step.op, {**_wave_inputs(code, mode), **step.fields}
  for name, sp in step.srcs.items(): inputs[name] = code.read(sp.src, sp.fkind, sp.neg, sp.abs)
  for name in op.lane_masks & op.reads:
    inputs[name] = code.mask_bits(step.mask_read[name] if name != "EXEC" else step.spec.exec_lo, step.instr.literal)
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

def _lower_step(step, code:_WaveCode, mode:dict):
  """Append one step's code for a wave's lanes (NotLowerable may leave part of it behind: the caller rewinds `code`)."""
  if isinstance(step, ControlStep): return
  if isinstance(step, VopdStep):   # both halves read their sources before either writes
    outs = []
    for op, srcs, vdst, _ in step.halves:
      inputs = {**_wave_inputs(code, mode), "SIMM32": step.instr.literal or 0}
      for name, s in srcs.items(): inputs[name] = code.read(s)
      if "VCC" in op.reads: inputs["VCC"] = code.mask_bits(step.spec.vcc_lo, None)
      out = lower(op.source, inputs, code.b)
      if set(out) != {"D0"}: raise NotLowerable(f"a VOPD half writing {sorted(out)}")
      outs.append((vdst, out))
    for vdst, out in outs: code.write_vgpr(vdst, 32, out["D0"])
    return
  op = step.op
  out = lower(op.source, _inputs(step, code, mode), code.b)
  if set(out) != set(op.writes): raise NotLowerable(f"outputs {sorted(out)} for writes {sorted(op.writes)}")
  for name in op.lane_masks & op.writes: code.write_mask(step.mask_write[name], out[name])
  if "D0" in op.writes and "D0" not in op.lane_masks: code.write_vgpr(step.vdst, step.store_bits, out["D0"])

def _function(name:str, code:_WaveCode, lanes:int, spec) -> str:
  """The region's function: i32 name(vgpr, sgpr, ws, nws, stride, fallback, off) (arrays by object address, `off` the data pointer's
  place in a numpy array object: emu.native); returns the MXCSR bits that are not IEEE's default (then nothing ran)."""
  b, v64, vb = code.b, code.b.t("i64"), code.b.t("i1")
  body, b.lines = b.lines, []   # the instructions' code; what is emitted from here on is taken block by block
  def taken() -> list[str]:
    out, b.lines[:] = b.lines[:], []
    return out
  L = [f"define i32 @{name}(ptr %vo, ptr %so, ptr %wo, i64 %nws, i64 %stride, ptr %fo, i64 %off) {{",
       "entry:\n  %csr = alloca i32\n  call void @llvm.x86.sse.stmxcsr(ptr %csr)\n  %mx = load i32, ptr %csr",
       f"  %bad = and i32 %mx, {native.MXCSR_NON_DEFAULT}\n  %isbad = icmp ne i32 %bad, 0\n  br i1 %isbad, label %done, label %start", "start:"]
  for arr, obj in (("vgpr", "vo"), ("sgpr", "so"), ("wp", "wo"), ("fp", "fo")):
    L.append(f"  %{obj}.d = getelementptr i8, ptr %{obj}, i64 %off\n  %{arr} = load ptr, ptr %{obj}.d")
  L.append("  br label %wave\nwave:\n  %k = phi i64 [0, %start], [%k.next, %wave.next]")
  L.append(f"  %wpp = getelementptr inbounds i64, ptr %wp, i64 %k\n  %w = load i64, ptr %wpp\n  %sb = mul i64 %w, {N_SGPR_ROW}")
  L.append(f"  %vbase = mul i64 %w, {lanes}")
  ex = b.splat("i64", code.mask_word(spec.exec_lo), U64)
  bit = b.emit(f"and {v64} {b.emit(f'lshr {v64} {ex.ref}, {b.lane_ids()}', U64).ref}, {b.c('i64', '1')}", U64)
  L.extend(taken() + [f"  %act = icmp ne {v64} {bit.ref}, zeroinitializer"] + body)
  nan = "zeroinitializer"
  for v in b.float_results:
    isn = b.emit(f"fcmp uno {b.t('float' if v.dt.itemsize == 4 else 'double')} {v.ref}, {v.ref}", BOOL)
    nan = b.emit(f"or {vb} {nan}, {isn.ref}", BOOL).ref
  nan_act = b.emit(f"and {vb} %act, {nan}", BOOL)
  reduce_or = {t: f"llvm.vector.reduce.or.v{lanes}{t}" for t in ("i1", "i64")}
  for t, fn in reduce_or.items(): b.intrinsics[fn] = f"declare {t} @{fn}({b.t(t)})"
  any_nan = b.emit(f"call i1 @{reduce_or['i1']}({vb} {nan_act.ref})", BOOL)
  L.extend(taken() + [f"  br i1 {any_nan.ref}, label %fallback, label %commit"])
  L.append("fallback:\n  %fbp = getelementptr inbounds i8, ptr %fp, i64 %k\n  store i8 1, ptr %fbp\n  br label %wave.next\ncommit:")
  for r, bits in code.masks.items():   # inactive lanes write 0 (exec_valu.store_lane_bits)
    on = b.emit(f"and {vb} %act, {bits.ref}", BOOL)
    placed = b.emit(f"shl {v64} {b.emit(f'zext {vb} {on.ref} to {v64}', U64).ref}, {b.lane_ids()}", U64)
    word = b.emit(f"call i64 @{reduce_or['i64']}({v64} {placed.ref})", U64)
    for k in range(lanes // 32):
      part = b.emit(f"lshr i64 {word.ref}, {32 * k}", U64) if k else word
      dw = b.emit(f"trunc i64 {part.ref} to i32", U64)
      p = b.emit(f"getelementptr inbounds i32, ptr %sgpr, i64 {b.emit(f'add i64 %sb, {r + k}', U64).ref}", U64)
      b.lines.append(f"  store i32 {dw.ref}, ptr {p.ref}")
  for r in code.written:   # inactive lanes keep their values
    at = b.emit(f"add i64 {b.emit(f'mul i64 %stride, {r}', U64).ref}, %vbase", U64)
    p = b.emit(f"getelementptr inbounds i32, ptr %vgpr, i64 {at.ref}", U64)
    old = b.emit(f"load {b.t('i32')}, ptr {p.ref}, align 4", U64)
    new = b.emit(f"select {vb} %act, {b.t('i32')} {code.vgpr[r]}, {b.t('i32')} {old.ref}", U64)
    b.lines.append(f"  store {b.t('i32')} {new.ref}, ptr {p.ref}, align 4")
  L.extend(taken())
  L.append("  br label %wave.next\nwave.next:\n  %k.next = add i64 %k, 1\n  %k.end = icmp eq i64 %k.next, %nws")
  L.append("  br i1 %k.end, label %done, label %wave\ndone:\n  %ret = phi i32 [%bad, %entry], [0, %wave.next]\n  ret i32 %ret\n}")
  return "\n".join(L)

class Region:
  """A run of straight-line steps that may become native: `steps` [(byte offset from the first, Step)], `size` bytes, `count`
  instructions; one object per code bytes (the same code at another address is the same region). It starts as the whole
  candidate run, executed on the numpy path; once it has run REGION_HOT instructions (per batch) it is lowered (cut to the prefix
  that lowers; a region whose first step does not lower keeps just that step, on the numpy path for good) and its native function
  is loaded from the disk cache or compiled: on the background compile thread, or at once when BACKGROUND is off. `mode`: the
  MODE register value the code is lowered for (None once lowered when no op of it reads the MODE)."""
  def __init__(self, steps:list[Step], lanes:int, spec, mode:int):
    self.lanes, self.spec, self.mode = lanes, spec, mode
    self._set_steps(steps)
    self.fn, self.ir, self.pending, self.queued, self.failed = None, None, 0, -1, False

  def _set_steps(self, steps:list[Step]):
    self.steps = list(zip(np.cumsum([0] + [s.size for s in steps[:-1]]).tolist(), steps))
    self.size, self.count = sum(s.size for s in steps), len(steps)

  def ready(self) -> bool:
    """Whether the native function is there (see the class docstring for when it comes)."""
    if self.fn is None and not self.failed:
      self.pending += self.count
      if self.pending >= REGION_HOT and self.queued != native.NATIVE.generation:
        self.queued = native.NATIVE.generation
        if self.ir is None: self._lower()
        if not self.failed: self._compile()
    return self.fn is not None

  def _compile(self):
    """The function from the disk cache, else compiled: in the background, or here when BACKGROUND is off."""
    if (fn := native.NATIVE.function(self.ir, SIGNATURE, compile=False)) is not None: self._compiled(fn)
    elif BACKGROUND: native.NATIVE.function_later(self.ir, SIGNATURE, self._compiled)
    else: self._compiled(native.NATIVE.function(self.ir, SIGNATURE))

  def _compiled(self, fn):
    self.fn, self.failed = fn, fn is None   # None: LLVM rejected it or native code is unavailable; the numpy path, for good
    if fn is not None: self.ir = None       # not needed again (a big region's IR is ~70 KB)

  def _lower(self):
    """Lower the longest prefix of the steps that lowers into the region's IR, or give up (`failed`) when none does."""
    steps = [s for _, s in self.steps]
    code, reads_mode, take = _WaveCode(self.lanes, self.spec), False, 0
    for s in steps:
      at = code.mark()
      try:
        if not isinstance(s, ControlStep):
          if code.conflicts(*_step_regs(s)): break
          _lower_step(s, code, mode_state(self.mode))
          reads_mode |= any(op.reads & MODE_INPUTS for op in ([h[0] for h in s.halves] if isinstance(s, VopdStep) else [s.op]))
      except NotLowerable:
        code.rewind(at)   # the region ends before the step that did not lower
        break
      take += 1
    while take and isinstance(steps[take - 1], ControlStep): take -= 1
    if not take:
      self._set_steps(steps[:1])
      self.failed = True
      return
    self._set_steps(steps[:take])
    self.mode = self.mode if reads_mode else None
    self.ir = f"declare void @llvm.x86.sse.stmxcsr(ptr)\n{code.b.declarations()}\n{_function(FUNCTION, code, self.lanes, self.spec)}\n"

  def run(self, m:Machine, ws:np.ndarray) -> bool:
    """Run the region for waves ws (same PC, sorted); False (nothing done) when it cannot run natively for them."""
    if not CHECK: return self._run(m, ws)
    st = m.st
    before = st.vgpr_store.copy(), st.sgpr.copy(), st.pc.copy()
    if not self._run(m, ws): return False
    native_state = st.vgpr_store.copy(), st.sgpr.copy(), st.pc.copy()
    st.vgpr_store[...], st.sgpr[...], st.pc[...] = before
    for _, step in self.steps: step.run(m, ws)
    for what, got, want in zip(("VGPR", "SGPR", "PC"), native_state, (st.vgpr_store, st.sgpr, st.pc)):
      if not np.array_equal(got, want):
        at = tuple(int(i) for i in np.argwhere(got != want)[0])
        raise RuntimeError(f"EMU_REGIONS=check: the native region differs from the numpy path at {what}{list(at)}: "
                           f"{int(got[at]):#x}, numpy {int(want[at]):#x}")
    return True

  def _run(self, m:Machine, ws:np.ndarray) -> bool:
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
  """The region of `steps` (consecutive plain VALU steps and no-op control steps) for waves of `lanes` in MODE `mode`, cached on the
  step objects (steps are cached on their bytes); None when no VALU step is among them."""
  key = (lanes, mode, tuple(id(s) for s in steps))
  if key not in _built: _built[key] = Region(steps, lanes, spec, mode) if any(not isinstance(s, ControlStep) for s in steps) else None
  return _built[key]
