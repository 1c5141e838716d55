"""The code of a native region (emu.amd.regions): the LLVM IR of one function that runs a run of instructions for every wave of a
batch. `_WaveCode` holds one wave's registers as SIMD vectors while the run is lowered instruction by instruction (each op's own
semantics from its pcode through emu.pcode.lanes_ir; the rules around it, operand assembly, modifiers, addresses, half merges,
are the numpy path's, run on lanes_ir.Bits), with what a wave's loads, stores, lane masks and EXEC need; `_function` wraps it in
the loop over waves, the fallback to the numpy path and the stores done once every wave has run. `lower_region` is the entry."""
from __future__ import annotations
from pathlib import Path
from emu import native
from emu.amd.exec_salu import MASK64, ControlStep, SaluStep, SmemStep
from emu.amd.exec_valu import ValuStep, VopdStep
from emu.amd.exec_vmem import VmemStep
from emu.amd.step import Step
from emu.amd.operands import Src, apply_neg_abs, merge_half, packed_halves, resolve_src
from emu.amd.wave import MODE_INPUTS, mode_state
from emu.pcode.lanes_ir import Bits, Builder, NotLowerable, Val, Words, U64, BOOL, LLVM_TYPE, N_SENTINEL, literal, lower

FELL = 1   # a region function's result bit: some wave fell back (its stores, if any, are then left to the numpy path; MXCSR bits never have bit 0)
N_SGPR_ROW = 128   # SGPRs per wave in WaveState.sgpr
N_VGPRS = 256      # VGPRs a VALU operand may name (CDNA's AGPRs, stored after them, are not VALU operands)
FUNCTION = "region"   # every region is one module with one function of this name (the disk cache keys on the whole IR)
# LLVM IR a region's module appends (emu/amd/ir/, each file says what its functions do): @find and @gather for regions with global
# or DS loads (_WaveCode.load, lds_load), @scatter for regions with stores (_StoreWrite)
IR_DIR = Path(__file__).with_name("ir")
MEMORY_HELPERS = (IR_DIR / "memory_helpers.ll").read_text()
STORE_HELPERS = (IR_DIR / "store_helpers.ll").read_text()

class _Memory:
  """The MEM input of a load op lowered into a region (lanes_ir's memory protocol): every access is `_WaveCode.load`."""
  def __init__(self, code:_WaveCode): self.code = code
  def read(self, addr:Val, nbytes:int) -> Val:
    if nbytes not in (1, 2, 4): raise NotLowerable(f"a {nbytes}-byte read")
    return self.code.load(addr, nbytes, 1)[0]
  def read_words(self, addr:Val, k:int) -> Words: return Words(tuple(self.code.load(addr, 4, k)))

class _ScalarMemory(_Memory):
  """The MEM input of a scalar load lowered into a region: one address per wave, every access `_WaveCode.scalar_load`."""
  def read(self, addr:Val, nbytes:int) -> Val:
    if nbytes not in (1, 2, 4): raise NotLowerable(f"a {nbytes}-byte read")
    return self.code.scalar_load(addr, nbytes, 1)[0]
  def read_words(self, addr:Val, k:int) -> Words: return Words(tuple(self.code.scalar_load(addr, 4, k)))

class _LdsMemory:
  """The MEM input of a DS load lowered into a region: every access is `_WaveCode.lds_load` (a k-dword read is k dword reads, each
  in range or not on its own, as LocalMemory reads them)."""
  def __init__(self, code:_WaveCode): self.code = code
  def read(self, addr:Val, nbytes:int) -> Val:
    if nbytes not in (1, 2, 4, 8): raise NotLowerable(f"a {nbytes}-byte read")
    return self.code.lds_load(addr, nbytes)
  def read_words(self, addr:Val, k:int) -> Words:
    b = self.code.b
    return Words(tuple(self.code.lds_load(b.emit(f"add {b.t('i64')} {addr.ref}, {b.const(4 * j, U64).ref}", U64) if j else addr, 4)
                       for j in range(k)))

class _StoreCheck:
  """The MEM input of a store lowered into a region's wave loop: each write of a global store only checks that the span every
  active lane reaches lies in one row of the writable native table (else the wave falls back); a DS store's writes never fault
  (LDS drops what lies past the workgroup's LDS). The writes themselves come after every wave of the batch has run
  (`_store_function`), in the numpy path's order."""
  def __init__(self, code:_WaveCode, lds:bool): self.code, self.lds, self.calls = code, lds, 0
  def write(self, addr:Val, value:Val, nbytes:int):
    if nbytes not in (1, 2, 4, 8): raise NotLowerable(f"a {nbytes}-byte write")
    if not self.lds: self.code.span_check(addr, nbytes, "%wtab", "%nwtab")
    self.calls += 1

class _StoreWrite:
  """The MEM input of a store lowered into one of its write functions: the op's write number `which` (in the op's order) is
  emitted (into global memory, or `lds`), the others only computed (and dropped by LLVM)."""
  def __init__(self, code:_WaveCode, which:int, lds:bool): self.code, self.which, self.lds, self.calls = code, which, lds, 0
  def write(self, addr:Val, value:Val, nbytes:int):
    if self.calls == self.which: (self.code.lds_store if self.lds else self.code.scatter)(addr, value, nbytes)
    self.calls += 1

class _WaveCode:
  """The IR of one wave running a region, all its lanes at once (one vector element each): the VGPR and lane-mask values each
  instruction leaves. Registers are loaded where first read (SGPRs from %sb, VGPRs from %vgpr at %vbase); stores wait for the end."""
  def __init__(self, lanes:int, spec):
    self.lanes, self.spec, self.b = lanes, spec, Builder("t", lanes)
    self.vgpr: dict[int, str] = {}        # VGPR -> its current <lanes x i32> value
    self.written: list[int] = []          # VGPRs the region writes, in first-write order
    self.masks: dict[int, Val] = {}       # lane-mask register (pair base) -> its lanes' bits (<lanes x i1>) as written in the region
                                          # (their words are in `sgprs` too: scalar ops read them there)
    self.scalar_bytes = 0                 # bytes each wave's scalar loads read in the region
    self.sb = Builder("u", 1)             # scalar (per-wave) code: one-element vectors, emitted into the same lines
    self.sb.lines, self.sb.intrinsics = self.b.lines, self.b.intrinsics
    self.sgprs: dict[int, str] = {}       # SGPR -> its current i32 value, for those scalar ops wrote in the region
    self.scc: str | None = None           # SCC's current i32 value once read or written in the region
    self.next_pc: str | None = None       # the i64 PC a branch ending the region left
    self.stores: list[tuple[VmemStep, int]] = []   # the region's writes: (store step, its write number), in order
    self.exec, self.act = "%exec", "%act"  # EXEC now: the i64 word and each lane's bit (<lanes x i1>); a scalar op may write it
    self.act_from: list[tuple[int, str]] = [(0, "%act")]   # (first float result, the EXEC it was computed under) per EXEC value
    self.lane_loads: list[tuple[str, int]] = []   # (EXEC word, bytes per active lane) of each global load, for the bytes read
    self.lds_loads = 0                    # DS loads (they call @gather too, and count no bytes)

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

  def sreg(self, r:int, fresh:bool=False) -> str:
    """SGPR r of this wave (a scalar i32): as a scalar op of the region left it (EXEC included), else (or `fresh`) loaded."""
    if not 0 <= r < N_SGPR_ROW: raise NotLowerable(f"s{r} is past the SGPR row")   # (the numpy path faults on it)
    if r in self.sgprs and not fresh: return self.sgprs[r]
    b = self.b
    at = b.emit(f"add i64 %sb, {r}", U64)
    p = b.emit(f"getelementptr inbounds i32, ptr %sgpr, i64 {at.ref}", U64)
    return b.emit(f"load i32, ptr {p.ref}", U64).ref

  def _dword(self, src:Src, k:int) -> str:
    if src.kind == "vgpr": return self.vreg(src.reg + k)
    return self.b.splat("i32", self.sreg(src.reg + k), U64).ref

  def read(self, src:Src, fkind:int=0, neg:bool=False, abs_:bool=False, packed:tuple|None=None) -> Val:
    """A source operand as uint64 bits (zero-extended), with neg/abs on the sign bit of its float kind, or as two halves (`packed`:
    VOP3P's (op_sel, op_sel_hi, neg_lo, neg_hi)): the numpy path's rules (operands.apply_neg_abs, packed_halves) run on Bits."""
    b = self.b
    v64 = b.t("i64")
    if src.kind == "const": v = b.const(src.value & ((1 << src.bits) - 1), U64)
    else:
      words = [Bits(b, b.emit(f"zext {b.t('i32')} {self._dword(src, k)} to {v64}", U64)) for k in range(2 if src.bits == 64 else 1)]
      v = src.assemble(*words).val
    if packed is not None: return packed_halves(Bits(b, v), src.bits // 2, fkind, packed).val
    return apply_neg_abs(Bits(b, v), fkind, neg, abs_).val if fkind and (neg or abs_) else v

  def mask_word(self, reg:int, fresh:bool=False) -> str:
    """The lane mask in SGPR reg (and reg+1 in wave64) of this wave as a scalar i64 (`fresh`: as the register file holds it)."""
    b = self.b
    lo = b.emit(f"zext i32 {self.sreg(reg, fresh)} to i64", U64)
    if self.lanes == 32: return lo.ref
    hi = b.emit(f"zext i32 {self.sreg(reg + 1, fresh)} to i64", U64)
    hs = b.emit(f"shl i64 {hi.ref}, 32", U64)
    return b.emit(f"or i64 {lo.ref}, {hs.ref}", U64).ref

  def mask_bits(self, reg:int, literal_value:int|None) -> Val:
    """Each lane's bit (uint64 0/1) of lane-mask operand `reg` (an SGPR pair, EXEC, or a constant / literal: as mask_lane_bits)."""
    b = self.b
    if reg == self.spec.exec_lo: return b.emit(f"zext {b.t('i1')} {self.act} to {b.t('i64')}", U64)
    if reg in self.masks: return b.emit(f"zext {b.t('i1')} {self.masks[reg].ref} to {b.t('i64')}", U64)
    if reg < 128 and reg != self.spec.null_reg: word = b.splat("i64", self.mask_word(reg), U64).ref
    else:
      src = resolve_src(reg, 64, None, literal_value, self.spec)
      if src.kind != "const": raise NotLowerable(f"lane mask from {src.kind}")
      word = b.const(src.value, U64).ref
    sh = b.emit(f"lshr {b.t('i64')} {word}, {b.lane_ids()}", U64)
    return b.emit(f"and {b.t('i64')} {sh.ref}, {b.c('i64', '1')}", U64)

  def lane_value(self, lane, reg) -> Val:
    """Lane `lane` (a one-element Val or an int) of VGPR `reg` (an int) as a one-element uint64 Val; a lane past the wave sends
    the wave to its fallback (the numpy path then faults as it would)."""
    sb = self.sb
    if not isinstance(reg, int) or isinstance(reg, bool): raise NotLowerable("a VGPR picked by a wave's value")
    if isinstance(lane, Val):
      at = sb.emit(f"extractelement <1 x i64> {sb.cast(lane, U64).ref}, i64 0", U64).ref
      inside = sb.emit(f"icmp ult i64 {at}, {self.lanes}", BOOL)
      label, sb.count = f"{sb.prefix}lane{sb.count}", sb.count + 1
      sb.lines.append(f"  br i1 {inside.ref}, label %{label}, label %fallback\n{label}:")
    elif isinstance(lane, int) and 0 <= lane < self.lanes: at = str(lane)
    else: raise NotLowerable(f"lane {lane!r} of a wave{self.lanes}")
    x = sb.emit(f"extractelement {self.b.t('i32')} {self.vreg(reg)}, i64 {at}", U64)
    return sb.emit(f"insertelement <1 x i64> poison, i64 {sb.emit(f'zext i32 {x.ref} to i64', U64).ref}, i64 0", U64)

  # ---- scalar (per-wave) values: one-element vectors of the scalar builder ----
  def scalar_read(self, src:Src) -> Val:
    """An SGPR or constant operand as a uint64 one-element vector (zero-extended; 64-bit operands from a register pair)."""
    sb = self.sb
    if src.kind == "const": return sb.const(src.value & ((1 << src.bits) - 1), U64)
    words = [sb.emit(f"zext i32 {self.sreg(src.reg + k)} to i64", U64) for k in range(src.nregs)]
    v = words[0] if src.nregs == 1 else sb.emit(f"or i64 {words[0].ref}, {sb.emit(f'shl i64 {words[1].ref}, 32', U64).ref}", U64)
    return sb.emit(f"insertelement <1 x i64> poison, i64 {v.ref}, i64 0", U64)

  def scalar(self, value) -> str:
    """A scalar op's output (a one-element Val or a Python int) as an i64."""
    if not isinstance(value, Val): return literal(self.sb.weak(value, U64), U64)
    return self.sb.emit(f"extractelement <1 x i64> {self.sb.cast(value, U64).ref}, i64 0", U64).ref

  def scc_value(self) -> Val:
    if self.scc is None:
      p = self.b.emit("getelementptr inbounds i32, ptr %sccp, i64 %w", U64)
      self.scc = self.b.emit(f"load i32, ptr {p.ref}", U64).ref
    return self.sb.emit(f"insertelement <1 x i64> poison, i64 {self.sb.emit(f'zext i32 {self.scc} to i64', U64).ref}, i64 0", U64)

  def write_sgpr(self, reg:int, bits:int, value):
    """A scalar result into SGPR reg (.. reg + 1 for 64 bits; NULL drops it), stored when the wave is done."""
    if reg == self.spec.null_reg: return
    regs = set(range(reg, reg + bits // 32))
    if regs & {self.spec.exec_lo, self.spec.exec_lo + 1}:
      if (reg, bits) != (self.spec.exec_lo, self.lanes): raise NotLowerable(f"a {bits}-bit write to s{reg} in a wave{self.lanes} (EXEC)")
      return self.write_exec(value)
    self._put_words(reg, bits // 32, self.scalar(value))

  def _put_words(self, reg:int, k:int, word:str):
    """SGPRs reg .. reg + k - 1 (k of 1 or 2) hold the i64 `word` now (its low 32 k bits), stored when the wave is done; a lane
    mask's bits kept over any of them are stale (its lanes are read from the words from here on)."""
    self.masks = {r: v for r, v in self.masks.items() if not self.mask_regs(r) & set(range(reg, reg + k))}
    for j in range(k):
      part = self.b.emit(f"lshr i64 {word}, {32 * j}", U64).ref if j else word
      self.sgprs[reg + j] = self.b.emit(f"trunc i64 {part} to i32", U64).ref

  def write_exec(self, value):
    """A scalar op's new EXEC (its low `lanes` bits): the lanes every later instruction of the region runs on; stored with the SGPRs."""
    b = self.b
    word = b.emit(f"and i64 {self.scalar(value)}, {(1 << 32) - 1 if self.lanes == 32 else -1}", U64).ref
    v64 = b.t("i64")
    shifted = b.emit(f"lshr {v64} {b.splat('i64', word, U64).ref}, {b.lane_ids()}", U64)
    bit = b.emit(f"and {v64} {shifted.ref}, {b.c('i64', '1')}", U64)
    self._set_exec(word, b.emit(f"icmp ne {v64} {bit.ref}, zeroinitializer", BOOL).ref)

  def _set_exec(self, word:str, act:str):
    """EXEC is the i64 `word` now, `act` its lanes' bits (<lanes x i1>)."""
    self._put_words(self.spec.exec_lo, self.lanes // 32, word)
    self.exec, self.act = word, act
    self.act_from.append((len(self.b.float_results), act))

  def _word(self, bits:Val) -> str:
    """The lane mask of `bits` (<lanes x i1>, lane i at bit i) as an i64."""
    packed = self.b.emit(f"bitcast {self.b.t('i1')} {bits.ref} to i{self.lanes}", U64).ref
    return packed if self.lanes == 64 else self.b.emit(f"zext i32 {packed} to i64", U64).ref

  def write_scc(self, value):
    self.scc = self.b.emit(f"trunc i64 {self.b.emit(f'and i64 {self.scalar(value)}, 1', U64).ref} to i32", U64).ref

  def address(self, step:VmemStep) -> Val:
    """A GLOBAL instruction's per-lane address: the numpy path's rule (VmemStep.global_address) on Bits."""
    return step.global_address(lambda src: Bits(self.b, self.read(src))).val

  def load(self, addr:Val, nbytes:int, k:int) -> list[Val]:
    """k consecutive values of `nbytes` at each active lane's address (uint64 Vals, zero-extended; 0 in inactive lanes). The
    span every active lane reaches must lie inside one row of the memory's native table (MemoryMap.native_table), else the wave
    branches to its fallback (the numpy path then reads it, or faults as it would)."""
    self.lane_loads.append((self.exec, nbytes * k))
    return self._gather(addr, self.span_check(addr, nbytes * k, "%tab", "%ntab").ref, self.exec, k, nbytes)

  def _gather(self, addr:Val, delta:str, word:str, k:int, nbytes:int) -> list[Val]:
    """@gather's k values of `nbytes` at each lane's address + delta + 4 j, for the lanes of the EXEC word `word` (0 in the others):
    uint64 Vals, zero-extended."""
    b, v64, v32, n = self.b, self.b.t("i64"), self.b.t("i32"), self.lanes
    b.lines.append(f"  store {v64} {addr.ref}, ptr %addr.buf, align 8")
    b.lines.append(f"  call void @gather(ptr %addr.buf, i64 {delta}, i64 {word}, i64 {n}, i64 {k}, i64 {nbytes}, ptr %data.buf)")
    cols = []
    for j in range(k):
      p = b.emit(f"getelementptr inbounds i32, ptr %data.buf, i64 {j * n}", U64)
      cols.append(b.emit(f"zext {v32} {b.emit(f'load {v32}, ptr {p.ref}, align 4', U64).ref} to {v64}", U64))
    return cols

  def span_check(self, addr:Val, span:int, table:str, rows:str, miss:str="fallback") -> Val:
    """Branch to `miss` unless [lo, hi + span) of the active lanes' addresses lies in one row of `table` (`rows` rows, sorted);
    the row's host-address delta (an i64)."""
    b, v64, n = self.b, self.b.t("i64"), self.lanes
    for fn in ("umin", "umax"): b.intrinsics[f"llvm.vector.reduce.{fn}.v{n}i64"] = f"declare i64 @llvm.vector.reduce.{fn}.v{n}i64({v64})"
    lo = b.emit(f"select {b.t('i1')} {self.act}, {v64} {addr.ref}, {v64} {b.c('i64', '-1')}", U64)
    hi = b.emit(f"select {b.t('i1')} {self.act}, {v64} {addr.ref}, {v64} zeroinitializer", U64)
    lo, hi = (b.emit(f"call i64 @llvm.vector.reduce.{fn}.v{n}i64({v64} {x.ref})", U64) for fn, x in (("umin", lo), ("umax", hi)))
    ok = b.emit(f"call i1 @find(ptr {table}, i64 {rows}, i64 {lo.ref}, i64 {hi.ref}, i64 {span}, ptr %delta.slot)", BOOL)
    label, b.count = f"{b.prefix}ld{b.count}", b.count + 1
    b.lines.append(f"  br i1 {ok.ref}, label %{label}, label %{miss}\n{label}:")
    return b.emit("load i64, ptr %delta.slot", U64)

  def scatter(self, addr:Val, value:Val, nbytes:int):
    """Write the low `nbytes` of each active lane's value at its address, in lane order (inside a store function, whose waves
    all passed their `span_check` in the region: a wave that did not find its span now skips the write), and count the bytes."""
    b = self.b
    delta = self.span_check(addr, nbytes, "%wtab", "%nwtab", "wave.next")
    self._scatter(addr, value, delta.ref, "%exec", nbytes)
    b.intrinsics["llvm.ctpop.i64"] = "declare i64 @llvm.ctpop.i64(i64)"
    on = b.emit("call i64 @llvm.ctpop.i64(i64 %exec)", U64)
    cp = b.emit("getelementptr inbounds i64, ptr %cp, i64 1", U64)
    old = b.emit(f"load i64, ptr {cp.ref}", U64)
    moved = b.emit(f"mul i64 {on.ref}, {nbytes}", U64)
    b.lines.append(f"  store i64 {b.emit(f'add i64 {old.ref}, {moved.ref}', U64).ref}, ptr {cp.ref}")

  def _scatter(self, addr:Val, value:Val, delta:str, word:str, nbytes:int):
    """@scatter: the low `nbytes` of each value at its lane's address + delta, lane by lane, for the lanes of the EXEC word `word`."""
    b, v64 = self.b, self.b.t("i64")
    b.lines.append(f"  store {v64} {addr.ref}, ptr %addr.buf, align 8\n  store {v64} {b.cast(value, U64).ref}, ptr %val.buf, align 8")
    b.lines.append(f"  call void @scatter(ptr %addr.buf, ptr %val.buf, i64 {delta}, i64 {word}, i64 {self.lanes}, i64 {nbytes})")

  def scalar_address(self, step:SmemStep) -> Val:
    """A scalar load's address (SmemStep._addresses): base (an SGPR pair, a buffer resource's 48-bit base, 0 for NULL) + offset
    + SOFFSET, aligned down to the access size up to a dword."""
    sb = self.sb
    base = sb.const(0, U64) if step.sbase == self.spec.null_reg else self.scalar_read(Src("sgpr", step.sbase, 64))
    if step.buffer: base = sb.emit(f"and {sb.t('i64')} {base.ref}, {sb.const((1 << 48) - 1, U64).ref}", U64)
    a = sb.emit(f"add {sb.t('i64')} {base.ref}, {sb.const(step.offset & MASK64, U64).ref}", U64)
    if step.soffset != self.spec.null_reg:
      a = sb.emit(f"add {sb.t('i64')} {a.ref}, {self.scalar_read(Src('sgpr', step.soffset, 32)).ref}", U64)
    return sb.emit(f"and {sb.t('i64')} {a.ref}, {sb.const(MASK64 & ~(step.align - 1), U64).ref}", U64)

  def scalar_load(self, addr:Val, nbytes:int, k:int) -> list[Val]:
    """k consecutive values of `nbytes` at the wave's scalar address (one-element uint64 Vals, zero-extended); the span must lie
    inside one row of the native table, else the wave branches to its fallback (as `load`)."""
    sb = self.sb
    self.scalar_bytes += nbytes * k
    a = sb.emit(f"extractelement <1 x i64> {sb.cast(addr, U64).ref}, i64 0", U64)
    ok = sb.emit(f"call i1 @find(ptr %tab, i64 %ntab, i64 {a.ref}, i64 {a.ref}, i64 {nbytes * k}, ptr %delta.slot)", BOOL)
    label, sb.count = f"{sb.prefix}ld{sb.count}", sb.count + 1
    sb.lines.append(f"  br i1 {ok.ref}, label %{label}, label %fallback\n{label}:")
    host = sb.emit(f"add i64 {a.ref}, {sb.emit('load i64, ptr %delta.slot', U64).ref}", U64)
    out = []
    for j in range(k):
      p = sb.emit(f"inttoptr i64 {sb.emit(f'add i64 {host.ref}, {4 * j}', U64).ref} to ptr", U64)
      word = sb.emit(f"load i{8 * nbytes}, ptr {p.ref}, align 1", U64)
      wide = sb.emit(f"zext i{8 * nbytes} {word.ref} to i64", U64) if nbytes < 8 else word
      out.append(sb.emit(f"insertelement <1 x i64> poison, i64 {wide.ref}, i64 0", U64))
    return out

  def _lds_lanes(self, addr:Val, nbytes:int) -> tuple[Val, str, str]:
    """(each lane's LDS address: its low 32 bits, as LocalMemory takes them; the host-address delta; the EXEC word of the active
    lanes whose access of `nbytes` lies inside the workgroup's LDS, %ldsb bytes from the wave's %ldsw) for @gather / @scatter,
    which touch only those lanes' bytes. (Not LLVM's masked gather / scatter: QUICK's unoptimised code for those took about
    twice the numpy path's time.)"""
    b, v64 = self.b, self.b.t("i64")
    a = b.emit(f"and {v64} {addr.ref}, {b.const(0xffffffff, U64).ref}", U64)
    end = b.emit(f"add {v64} {a.ref}, {b.const(nbytes, U64).ref}", U64)
    inside = b.emit(f"icmp ule {v64} {end.ref}, {b.splat('i64', '%ldsb', U64).ref}", BOOL)
    on = b.emit(f"and {b.t('i1')} {inside.ref}, {self.act}", BOOL)
    return a, b.emit("ptrtoint ptr %ldsw to i64", U64).ref, self._word(on)

  def lds_load(self, addr:Val, nbytes:int) -> Val:
    """`nbytes` at each lane's LDS address (a uint64 Val, zero-extended): 0 in inactive lanes and where the access leaves the
    workgroup's LDS (LocalMemory.read), whose bytes are never touched."""
    b, v64 = self.b, self.b.t("i64")
    self.lds_loads += 1
    if nbytes < 8: return self._gather(*self._lds_lanes(addr, nbytes), 1, nbytes)[0]
    low, high = self._gather(*self._lds_lanes(addr, nbytes), 2, 4)   # (@gather reads at most dwords)
    shifted = b.emit(f"shl {v64} {high.ref}, {b.c('i64', '32')}", U64)
    return b.emit(f"or {v64} {low.ref}, {shifted.ref}", U64)

  def lds_store(self, addr:Val, value:Val, nbytes:int):
    """Write the low `nbytes` of each active lane's value at its LDS address, in lane order (the last lane wins, as
    LocalMemory.write); an access that leaves the workgroup's LDS is dropped."""
    a, delta, word = self._lds_lanes(addr, nbytes)
    self._scatter(a, value, delta, word, nbytes)

  # ---- results ----
  def write_vgpr(self, reg:int, bits:int, value):
    """Store the low `bits` (16: the low half, the high half kept, as write_vgpr_lanes; 32 or 64) of value into VGPR reg (..)."""
    if not 0 <= reg <= N_VGPRS - max(1, bits // 32): raise NotLowerable(f"v{reg} ({bits} bits) runs past the VGPR file")
    b, v64 = self.b, self.b.t("i64")
    v = b.cast(value, U64)
    if bits == 16:
      old = b.emit(f"zext {b.t('i32')} {self.vreg(reg)} to {v64}", U64)
      v, bits = merge_half(Bits(b, old), Bits(b, v), False).val, 32
    for k in range(bits // 32):   # inactive lanes keep their values (EXEC as it is now: a scalar op may change it)
      part = b.emit(f"lshr {b.t('i64')} {v.ref}, {b.c('i64', str(32 * k))}", U64) if k else v
      new = b.emit(f"trunc {b.t('i64')} {part.ref} to {b.t('i32')}", U64).ref
      self.vgpr[reg + k] = b.emit(f"select {b.t('i1')} {self.act}, {b.t('i32')} {new}, {b.t('i32')} {self.vreg(reg + k)}", U64).ref
      if reg + k not in self.written: self.written.append(reg + k)

  def write_mask(self, reg:int, value):
    """A lane-mask result (VCC, a carry-out, a VOPC result, v_cmpx's EXEC) into SGPR reg (.. reg + 1 in wave64): each active lane's
    bit, 0 in inactive lanes (exec_valu.store_lane_bits). Its word goes into the SGPRs at once (scalar ops later in the region read
    it there); EXEC written so narrows the lanes every later instruction runs on."""
    if reg == self.spec.null_reg: return
    regs = self.mask_regs(reg)
    if reg + len(regs) > N_SGPR_ROW: raise NotLowerable(f"a wave{self.lanes} lane mask at s{reg} runs past the SGPR row")
    if regs & {self.spec.exec_lo, self.spec.exec_lo + 1} and reg != self.spec.exec_lo:
      raise NotLowerable(f"a wave{self.lanes} lane mask at s{reg} over part of EXEC")   # (wave64's M0 pair, wave32's EXEC_HI)
    b = self.b
    v = b.cast(value, U64)
    one = b.emit(f"and {b.t('i64')} {v.ref}, {b.c('i64', '1')}", U64)
    set_ = b.emit(f"icmp ne {b.t('i64')} {one.ref}, zeroinitializer", BOOL)
    bits = b.emit(f"and {b.t('i1')} {self.act}, {set_.ref}", BOOL)
    if reg == self.spec.exec_lo: return self._set_exec(self._word(bits), bits.ref)
    self._put_words(reg, len(regs), self._word(bits))
    self.masks[reg] = bits

  def mark(self) -> tuple:
    """The state to `rewind` to when the next step does not lower (it may have emitted code and loaded registers by then)."""
    return len(self.b.lines), len(self.b.float_results), dict(self.vgpr), self.scalar_bytes, dict(self.sgprs), self.scc, \
      len(self.stores), dict(self.masks), list(self.written), self.exec, self.act, len(self.act_from), len(self.lane_loads), self.next_pc, \
      self.lds_loads
  def rewind(self, at:tuple):
    n_lines, n_float, vgpr, self.scalar_bytes, self.sgprs, self.scc, n_stores, self.masks, self.written, self.exec, \
      self.act, n_act, n_loads, self.next_pc, self.lds_loads = at
    del self.b.lines[n_lines:], self.b.float_results[n_float:], self.stores[n_stores:], self.act_from[n_act:], self.lane_loads[n_loads:]
    self.vgpr = vgpr

  def mask_regs(self, reg:int) -> set[int]: return {reg, reg + 1} if self.lanes == 64 else {reg}

def _wave_inputs(code:_WaveCode, mode:dict) -> dict:
  """What every op state of a wave's lanes holds: the batch-size sentinel, lane ids, the wave size, the MODE's inputs."""
  return {"n": N_SENTINEL, "laneId": Val(code.b.lane_ids(), U64), "WAVE32": code.lanes == 32, "WAVE64": code.lanes == 64, **mode}

def _inputs(step:ValuStep, code:_WaveCode, mode:dict) -> dict:
  """The op state of one ValuStep for one wave's lanes (exec_valu.ValuStep._batch's reads)."""
  inputs = {**_wave_inputs(code, mode), **step.fields}
  for name, sp in step.srcs.items(): inputs[name] = code.read(sp.src, sp.fkind, sp.neg, sp.abs, sp.packed)
  for name in step.mask_reads:
    inputs[name] = code.mask_bits(step.mask_read[name] if name != "EXEC" else step.spec.exec_lo, step.instr.literal)
  if step.reads_d0: inputs["D0"] = code.read(step.d0)
  return inputs

def _lower_step(step, code:_WaveCode, mode:dict, off:int):
  """Append the code of one step (at byte `off` of the region) for a wave's lanes (NotLowerable may leave part of it behind: the
  caller rewinds `code`)."""
  if isinstance(step, ControlStep): return
  if isinstance(step, VmemStep):
    if "w" in step.op.mem: return _lower_store(step, code, mode)
    return _lower_ds_load(step, code, mode) if step.fmt == "DS" else _lower_load(step, code, mode)
  if isinstance(step, SmemStep): return _lower_smem(step, code)
  if isinstance(step, SaluStep): return _lower_scalar(step, code, off)
  if isinstance(step, ValuStep) and step.op.kind == "wave": return _lower_lane_read(step, code)
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
  if "D0" in op.writes and "D0" not in op.lane_masks: code.write_vgpr(step.vdst, step.store_bits, out["D0"])
  # every write under the EXEC the instruction ran with: a lane mask into EXEC (v_cmpx; a compare into EXEC_LO) comes last
  for name in sorted(op.lane_masks & op.writes, key=lambda n: step.mask_write[n] == step.spec.exec_lo):
    code.write_mask(step.mask_write[name], out[name])

def _lower_scalar(step:SaluStep, code:_WaveCode, off:int):
  """A plain scalar op or branch for one wave (SaluStep._grouped's reads and writes), from its numpy code over waves."""
  op, sb = step.op, code.sb
  inputs = {"n": N_SENTINEL, "WAVE32": code.lanes == 32, "WAVE64": code.lanes == 64, **step.fields}
  for name, src in step.srcs.items(): inputs[name] = code.scalar_read(src)
  if "D0" in op.reads: inputs["D0"] = code.scalar_read(step.d0)
  if "SCC" in op.reads: inputs["SCC"] = code.scc_value()
  for mask, zero, now in (("EXEC", "EXECZ", lambda: code.exec), ("VCC", "VCCZ", lambda: code.mask_word(code.spec.vcc_lo))):
    if op.reads & {mask, zero}:   # (SaluStep._state: VCCZ / EXECZ are 1 when the whole mask is 0)
      word = sb.emit(f"insertelement <1 x i64> poison, i64 {now()}, i64 0", U64)
      inputs[mask] = word
      inputs[zero] = sb.emit(f"zext <1 x i1> {sb.emit(f'icmp eq <1 x i64> {word.ref}, zeroinitializer', BOOL).ref} to <1 x i64>", U64)
  if "PC" in op.reads:
    at = sb.emit(f"add i64 %pc0, {off}", U64)
    inputs["PC"] = sb.emit(f"insertelement <1 x i64> poison, i64 {at.ref}, i64 0", U64)
  n_float = len(sb.float_results)
  out = lower(step.across.source, inputs, sb)
  if len(sb.float_results) != n_float: raise NotLowerable("scalar float arithmetic")   # (its NaN test is over the lanes' vectors)
  if set(out) != set(op.writes): raise NotLowerable(f"outputs {sorted(out)} for writes {sorted(op.writes)}")
  if "D0" in out: code.write_sgpr(step.sdst, step.d_bits, out["D0"])
  if "SCC" in out: code.write_scc(out["SCC"])
  if "EXEC" in out: code.write_exec(out["EXEC"])
  if "PC" in out: code.next_pc = code.scalar(out["PC"])

def _lower_lane_read(step:ValuStep, code:_WaveCode):
  """v_readfirstlane / v_readlane for one wave (ValuStep._wave's reads and SGPR write), from its pcode's Python-int code."""
  op, sb = step.op, code.sb
  inputs = {"WAVE32": code.lanes == 32, "WAVE64": code.lanes == 64, "VGPR": code, **step.fields}   # (VGPR[lane, reg]: code.lane_value)
  if "EXEC" in op.reads: inputs["EXEC"] = sb.emit(f"insertelement <1 x i64> poison, i64 {code.exec}, i64 0", U64)
  for name, sp in step.srcs.items(): inputs[name] = code.scalar_read(sp.src)
  out = lower(op.source, inputs, sb, python_ints=True)
  if set(out) != {"D0"}: raise NotLowerable(f"outputs {sorted(out)} of a lane read")
  code.write_sgpr(step.vdst, 32, out["D0"])

def _lower_load(step:VmemStep, code:_WaveCode, mode:dict):
  """A plain global load (exec_vmem.VmemStep.execute's reads and VDATA store) for a wave's lanes."""
  op = step.op
  inputs = {**_wave_inputs(code, mode), **step.fields, "ADDR": code.address(step), "MEM": _Memory(code)}
  if "VDATA" in op.reads: inputs["VDATA"] = code.read(step.data["VDATA"])
  out = lower(op.source, inputs, code.b)
  if set(out) != {"VDATA"}: raise NotLowerable(f"outputs {sorted(out)} of a load")
  _write_loaded(code, step.vdst, op.widths.get("VDATA", 32), out["VDATA"])

def _lower_ds_load(step:VmemStep, code:_WaveCode, mode:dict):
  """A plain DS load (exec_vmem.VmemStep.execute's reads and RETURN_DATA store) for a wave's lanes, from the wave's workgroup's LDS."""
  bits = step.op.widths.get("RETURN_DATA", 32)
  inputs = {**_wave_inputs(code, mode), **step.fields, "ADDR": code.read(Src("vgpr", step.addr, 32)), "MEM": _LdsMemory(code)}
  if "RETURN_DATA" in step.op.reads: inputs["RETURN_DATA"] = code.read(Src("vgpr", step.vdst, bits))   # (a D16 form keeps a half)
  out = lower(step.op.source, inputs, code.b)
  if set(out) != {"RETURN_DATA"}: raise NotLowerable(f"outputs {sorted(out)} of a DS load")
  _write_loaded(code, step.vdst, bits, out["RETURN_DATA"])

def _write_loaded(code:_WaveCode, vdst:int, bits:int, v):
  """A load's result (a Val of up to 64 bits, or Words of dwords) into VGPRs vdst.."""
  if not isinstance(v, Words): return code.write_vgpr(vdst, bits, v)
  if 32 * len(v.columns) != bits: raise NotLowerable(f"{len(v.columns)} dwords for a {bits}-bit result")
  for j, col in enumerate(v.columns): code.write_vgpr(vdst + j, 32, col)

def _store_data(code:_WaveCode, src:Src) -> Val | Words:
  """A store's data operand as Src.read_lanes gives it: dwords (Words) past 64 bits, a 16-bit one's low half."""
  if src.bits > 64: return Words(tuple(code.read(Src("vgpr", src.reg + j, 32)) for j in range(src.nregs)))
  data = code.read(Src("vgpr", src.reg, 64 if src.bits == 64 else 32))
  return code.b.emit(f"and {code.b.t('i64')} {data.ref}, {code.b.c('i64', str(0xffff))}", U64) if src.bits == 16 else data

def _store_inputs(step:VmemStep, code:_WaveCode, mode:dict, mem) -> dict:
  """A plain store's op state for a wave's lanes (VmemStep.execute's reads): a global store's address and VDATA, a DS store's
  address VGPR and DATA / DATA2."""
  inputs = {**_wave_inputs(code, mode), **step.fields, "MEM": mem}
  if step.fmt != "DS": return {**inputs, "ADDR": code.address(step), "VDATA": _store_data(code, step.data["VDATA"])}
  return {**inputs, "ADDR": code.read(Src("vgpr", step.addr, 32)),
          **{name: _store_data(code, step.data[name]) for name in ("DATA", "DATA2") if name in step.op.reads}}

def _lower_store(step:VmemStep, code:_WaveCode, mode:dict):
  """A plain global or DS store in a region's wave loop: a global one's spans checked (`_StoreCheck`); its writes are listed for
  `_store_function`."""
  check = _StoreCheck(code, step.fmt == "DS")
  if lower(step.op.source, _store_inputs(step, code, mode, check), code.b): raise NotLowerable("a store with outputs")
  code.stores.extend((step, j) for j in range(check.calls))

def _wave_loop(code:_WaveCode, lanes:int, spec, iterate:bool=False) -> list[str]:
  """A wave loop's head (from its `%k` phi to `%act`: the wave's number `%w`, its SGPR row `%sb`, VGPR column `%vbase`, its
  workgroup's LDS `%ldsw` and EXEC), emitted through `code`'s builder and taken from it. `iterate`: the wave may run the region
  again (`%it`: the runs it has committed; the `commit` block branches back to `iter`, where EXEC is read again)."""
  b, v64 = code.b, code.b.t("i64")
  head = ["  br label %wave\nwave:\n  %k = phi i64 [0, %start], [%k.next, %wave.next]",
          f"  %wpp = getelementptr inbounds i64, ptr %wp, i64 %k\n  %w = load i64, ptr %wpp\n  %sb = mul i64 %w, {N_SGPR_ROW}",
          f"  %vbase = mul i64 %w, {lanes}",
          "  %wgp = getelementptr inbounds i64, ptr %wg, i64 %w\n  %wgi = load i64, ptr %wgp\n  %ldsoff = mul i64 %wgi, %ldsb",
          "  %ldsw = getelementptr i8, ptr %lds, i64 %ldsoff"]   # (the wave's workgroup's LDS: Machine.lds_base)
  if iterate: head.append("  br label %iter\niter:\n  %it = phi i64 [0, %wave], [%it.next, %commit]")
  start = len(b.lines)
  b.lines.append(f"  %exec = or i64 {code.mask_word(spec.exec_lo, fresh=True)}, 0")
  ex = b.splat("i64", "%exec", U64)
  bit = b.emit(f"and {v64} {b.emit(f'lshr {v64} {ex.ref}, {b.lane_ids()}', U64).ref}, {b.c('i64', '1')}", U64)
  out = b.lines[start:] + [f"  %act = icmp ne {v64} {bit.ref}, zeroinitializer"]
  del b.lines[start:]
  return head + out

def _store_function(name:str, step:VmemStep, which:int, lanes:int, spec, mode:int) -> tuple[str, dict]:
  """(the IR of void name(vgpr, sgpr, ws, nws, stride, wtable, nwtable, counts, lds, ldsb, wg), the intrinsics it declares): write
  number `which` of store `step` for every wave of the batch in order, reading its address and data from the registers the region
  stored (nothing after a region's first store writes one), counting a global store's bytes in counts[1]."""
  code = _WaveCode(lanes, spec)
  write = _StoreWrite(code, which, step.fmt == "DS")
  if lower(step.op.source, _store_inputs(step, code, mode_state(mode), write), code.b): raise NotLowerable("a store with outputs")
  body, code.b.lines = code.b.lines, []
  head = _wave_loop(code, lanes, spec)
  L = [f"define internal void @{name}(ptr %vgpr, ptr %sgpr, ptr %wp, i64 %nws, i64 %stride, ptr %wtab, i64 %nwtab, ptr %cp, "
       "ptr %lds, i64 %ldsb, ptr %wg) {",
       f"start:\n  %addr.buf = alloca [{lanes} x i64], align 64\n  %val.buf = alloca [{lanes} x i64], align 64\n  %delta.slot = alloca i64",
       *head, *body, "  br label %wave.next\nwave.next:\n  %k.next = add i64 %k, 1\n  %k.end = icmp eq i64 %k.next, %nws",
       "  br i1 %k.end, label %done, label %wave\ndone:\n  ret void\n}"]
  return "\n".join(L), code.b.intrinsics

def _lower_smem(step:SmemStep, code:_WaveCode):
  """A plain scalar load for one wave, from its numpy code over waves (SmemStep.execute's across-waves path): SDATA's dwords."""
  inputs = {"n": N_SENTINEL, "WAVE32": code.lanes == 32, "WAVE64": code.lanes == 64, "ADDR": code.scalar_address(step),
            "MEM": _ScalarMemory(code)}
  out = lower(step.across.source, inputs, code.sb)
  if set(out) != {"SDATA"}: raise NotLowerable(f"outputs {sorted(out)} of a scalar load")
  v = out["SDATA"]
  if not isinstance(v, Words): return code.write_sgpr(step.sdata, step.sdata_bits, v)
  if 32 * len(v.columns) != step.sdata_bits: raise NotLowerable(f"{len(v.columns)} dwords for a {step.sdata_bits}-bit SDATA")
  if step.sdata == step.spec.null_reg: return
  for j, col in enumerate(v.columns): code.write_sgpr(step.sdata + j, 32, col)

def _function(name:str, code:_WaveCode, lanes:int, spec, stores:list[str]) -> str:
  """The region's function: i32 name(vgpr, sgpr, ws, nws, stride, off, table, ntable, out, scc, pc, pc0, libm, wtable, nwtable,
  limit, lds, ldsb, wg) (arrays by object address, `off` the data pointer's place in a numpy array object: emu.native; `table` and
  `wtable` the MemoryMap's native_table for reads and for writes; scc and pc the waves' SCC and PC, pc0 the region's address; libm
  the table of the C library's functions, emu.native.LIBM; lds the chunk's LDS bytes, ldsb each workgroup's share of them, wg each
  wave's workgroup in the chunk (Machine.lds_base); `stores`: the store functions it calls, in order, once every wave has run). It
  leaves in out[0] and out[1] the bytes the stored waves loaded and stored, in out[4 + k] how many runs wave k committed, or -1 -
  that when it fell back (in the run after them: the numpy path's), and in out[2] and out[3] the most runs of a wave and the runs
  of all (a fallen wave's numpy one included). A region ending with a branch runs again for the same wave while the branch goes
  back to pc0, at most `limit` times. Returns the MXCSR bits that are not IEEE's default (then nothing ran), or FELL when
  some wave fell back (then no store was written: the numpy path writes every wave's), else 0."""
  b, vb = code.b, code.b.t("i1")
  body, b.lines = b.lines, []   # the instructions' code; what is emitted from here on is taken block by block
  def taken() -> list[str]:
    out, b.lines[:] = b.lines[:], []
    return out
  L = [f"define i32 @{name}(ptr %vo, ptr %so, ptr %wo, i64 %nws, i64 %stride, i64 %off, ptr %to, i64 %ntab, ptr %oo, ptr %scco, "
       "ptr %pco, i64 %pc0, ptr %lm, ptr %wto, i64 %nwtab, i64 %limit, ptr %ldso, i64 %ldsb, ptr %wgo) {",
       native.MXCSR_ENTRY,
       f"  %addr.buf = alloca [{lanes} x i64], align 64\n  %data.buf = alloca [{4 * lanes} x i32], align 64\n  %delta.slot = alloca i64",
       "  %fell = alloca i8\n  store i8 0, ptr %fell",
       "  %isbad = icmp ne i32 %bad, 0\n  br i1 %isbad, label %done, label %start", "start:"]
  loops = code.next_pc is not None
  for arr, obj in (("vgpr", "vo"), ("sgpr", "so"), ("wp", "wo"), ("tab", "to"), ("cp", "oo"), ("sccp", "scco"), ("pcp", "pco"), ("wtab", "wto"),
                   ("lds", "ldso"), ("wg", "wgo")):
    L.append(f"  %{obj}.d = getelementptr i8, ptr %{obj}, i64 %off\n  %{arr} = load ptr, ptr %{obj}.d")
  # out[0..3] zeroed by four stores: QUICK's code generator makes llvm.memset a call to the C library's memset, an address outside
  # the object (its image could not be kept, and a code arena over 2 GB from libc could not link it at all)
  L.append("\n".join(f"  %cp{i} = getelementptr inbounds i64, ptr %cp, i64 {i}\n  store i64 0, ptr %cp{i}" for i in range(4)))
  L.append("  %rp = getelementptr inbounds i64, ptr %cp, i64 4")
  b.intrinsics["llvm.umax.i64"] = "declare i64 @llvm.umax.i64(i64, i64)"
  for fn in sorted(b.libm_used | code.sb.libm_used):
    L.append(f"  %libm.{fn}.p = getelementptr inbounds ptr, ptr %lm, i64 {native.LIBM.index(fn)}\n  %libm.{fn} = load ptr, ptr %libm.{fn}.p")
  L.extend(_wave_loop(code, lanes, spec, iterate=loops) + body)
  nan_act = "zeroinitializer"   # a NaN in a lane active when its instruction ran
  for (first, act), (end, _) in zip(code.act_from, code.act_from[1:] + [(len(b.float_results), None)]):
    nan = "zeroinitializer"
    for v in b.float_results[first:end]:
      isn = b.emit(f"fcmp uno {b.t(LLVM_TYPE[v.dt])} {v.ref}, {v.ref}", BOOL)
      nan = b.emit(f"or {vb} {nan}, {isn.ref}", BOOL).ref
    if nan != "zeroinitializer": nan_act = b.emit(f"or {vb} {nan_act}, {b.emit(f'and {vb} {act}, {nan}', BOOL).ref}", BOOL).ref
  reduce_or = f"llvm.vector.reduce.or.v{lanes}i1"
  b.intrinsics[reduce_or] = f"declare i1 @{reduce_or}({vb})"
  any_nan = b.emit(f"call i1 @{reduce_or}({vb} {nan_act})", BOOL)
  L.extend(taken() + [f"  br i1 {any_nan.ref}, label %fallback, label %commit"])
  L.append("fallback:\n  store i8 1, ptr %fell")
  L.append(f"  %rpf = getelementptr inbounds i64, ptr %rp, i64 %k\n  %fell.runs = sub i64 -1, {'%it' if loops else '0'}")
  L.append("  store i64 %fell.runs, ptr %rpf\n  %fell.all = sub i64 0, %fell.runs")
  L.append(_tally("%fell.all", "f"))
  L.append("  br label %wave.next\ncommit:")
  for r in code.written:   # (inactive lanes kept their values when written)
    at = b.emit(f"add i64 {b.emit(f'mul i64 %stride, {r}', U64).ref}, %vbase", U64)
    p = b.emit(f"getelementptr inbounds i32, ptr %vgpr, i64 {at.ref}", U64)
    b.lines.append(f"  store {b.t('i32')} {code.vgpr[r]}, ptr {p.ref}, align 4")
  for r, value in code.sgprs.items():   # scalar results, lane masks' words, EXEC
    p = b.emit(f"getelementptr inbounds i32, ptr %sgpr, i64 {b.emit(f'add i64 %sb, {r}', U64).ref}", U64)
    b.lines.append(f"  store i32 {value}, ptr {p.ref}")
  if code.scc is not None: b.lines.append(f"  store i32 {code.scc}, ptr {b.emit('getelementptr inbounds i32, ptr %sccp, i64 %w', U64).ref}")
  if code.next_pc is not None: b.lines.append(f"  store i64 {code.next_pc}, ptr {b.emit('getelementptr inbounds i64, ptr %pcp, i64 %w', U64).ref}")
  if code.lane_loads or code.scalar_bytes:   # the bytes this wave read: its active lanes' vector loads and its scalar loads
    b.intrinsics["llvm.ctpop.i64"] = "declare i64 @llvm.ctpop.i64(i64)"
    got = str(code.scalar_bytes)
    for word, nbytes in code.lane_loads:
      lanes_got = b.emit(f"mul i64 {b.emit(f'call i64 @llvm.ctpop.i64(i64 {word})', U64).ref}, {nbytes}", U64)
      got = b.emit(f"add i64 {got}, {lanes_got.ref}", U64).ref
    old = b.emit("load i64, ptr %cp", U64)
    b.lines.append(f"  store i64 {b.emit(f'add i64 {old.ref}, {got}', U64).ref}, ptr %cp")
  L.extend(taken())
  if loops:   # again while the branch went back to the region's start and the limit allows
    L.append(f"  %it.next = add i64 %it, 1\n  %back = icmp eq i64 {code.next_pc}, %pc0\n  %room = icmp ult i64 %it.next, %limit")
    L.append("  %again = and i1 %back, %room\n  br i1 %again, label %iter, label %wave.end\nwave.end:")
  L.append(f"  %rpe = getelementptr inbounds i64, ptr %rp, i64 %k\n  store i64 {'%it.next' if loops else '1'}, ptr %rpe")
  L.append(_tally("%it.next" if loops else "1", "e"))
  L.append("  br label %wave.next\nwave.next:\n  %k.next = add i64 %k, 1\n  %k.end = icmp eq i64 %k.next, %nws")
  if not stores:
    L.append("  br i1 %k.end, label %waves.done, label %wave\nwaves.done:\n  %fell.v = load i8, ptr %fell\n  %fell.any = icmp ne i8 %fell.v, 0")
    L.append(f"  %fell.ret = select i1 %fell.any, i32 {FELL}, i32 0\n  br label %done")
    L.append("done:\n  %ret = phi i32 [%bad, %entry], [%fell.ret, %waves.done]\n  ret i32 %ret\n}")
    return "\n".join(L)
  # the stores, once every wave has run: each write for every wave in turn (the numpy path's order); none when a wave fell back
  L.append("  br i1 %k.end, label %stores, label %wave\nstores:\n  %fell.v = load i8, ptr %fell\n  %fell.any = icmp ne i8 %fell.v, 0")
  L.append("  br i1 %fell.any, label %done, label %write\nwrite:")
  L.extend(f"  call void @{fn}(ptr %vgpr, ptr %sgpr, ptr %wp, i64 %nws, i64 %stride, ptr %wtab, i64 %nwtab, ptr %cp, ptr %lds, "
           "i64 %ldsb, ptr %wg)" for fn in stores)
  L.append(f"  br label %done\ndone:\n  %ret = phi i32 [%bad, %entry], [{FELL}, %stores], [0, %write]\n  ret i32 %ret\n}}")
  return "\n".join(L)

def _tally(runs:str, tag:str) -> str:
  """IR adding one wave's `runs` (an i64) to the function's out[2] (the most of a wave) and out[3] (all waves'); `tag` names the values."""
  return (f"  %most.p.{tag} = getelementptr inbounds i64, ptr %cp, i64 2\n  %most.{tag} = load i64, ptr %most.p.{tag}\n"
          f"  %most.n.{tag} = call i64 @llvm.umax.i64(i64 %most.{tag}, i64 {runs})\n  store i64 %most.n.{tag}, ptr %most.p.{tag}\n"
          f"  %all.p.{tag} = getelementptr inbounds i64, ptr %cp, i64 3\n  %all.{tag} = load i64, ptr %all.p.{tag}\n"
          f"  %all.n.{tag} = add i64 %all.{tag}, {runs}\n  store i64 %all.n.{tag}, ptr %all.p.{tag}")

def lower_region(steps:list[tuple[int, Step]], lanes:int, spec, mode:int, is_store) -> tuple[int, str | None, bool]:
  """(how many of `steps` ([(byte offset, Step)]) lower, the region IR of those, whether any reads the MODE) for waves of `lanes`
  in MODE `mode`; the region never ends with a control step (0 and None when nothing lowers). `is_store`: the forming rule's
  stores (emu.amd.regions.store_step): once one has lowered, the region ends before the next step that is not one."""
  code, reads_mode, take = _WaveCode(lanes, spec), False, 0
  for off, s in steps:
    at = code.mark()
    try:
      if not isinstance(s, ControlStep):
        if code.stores and not is_store(s): break   # after a store only stores (they write once every wave has run)
        _lower_step(s, code, mode_state(mode), off)
        reads_mode |= any(op.reads & MODE_INPUTS for op in ([h[0] for h in s.halves] if isinstance(s, VopdStep) else [s.op]))
    except NotLowerable:
      code.rewind(at)   # the region ends before the step that did not lower
      break
    take += 1
  while take and isinstance(steps[take - 1][1], ControlStep): take -= 1
  if not take: return 0, None, False
  writes = []
  for i, (store, which) in enumerate(code.stores):
    text, intrinsics = _store_function(f"store{i}", store, which, lanes, spec, mode)
    writes.append(text)
    code.b.intrinsics.update(intrinsics)   # (one module: its declarations once)
  fn = _function(FUNCTION, code, lanes, spec, [f"store{i}" for i in range(len(writes))])
  # the helpers come after the region's function: emu.native enters a module's code at its start
  helpers = (MEMORY_HELPERS if code.lane_loads or code.scalar_bytes or code.lds_loads or writes else "") + (STORE_HELPERS if writes else "")
  return take, "\n".join(["declare void @llvm.x86.sse.stmxcsr(ptr)", code.b.declarations(), fn, *writes, helpers]), reads_mode


