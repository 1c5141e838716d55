"""emu.pcode.lanes_ir against the numpy path it is read from: every VALU op of every ISA that lowers, compiled to a loop over
32-lane vectors (what a wave32 region runs), gives the generated Python's results bit for bit on random, special-value and
lane-uniform operands, in the MODE variants whose code lowers. A lane is compared wherever the lowered code did not report a NaN
out of float arithmetic (such lanes run the numpy path in a region), and the test checks that this leaves most lanes compared."""
import ctypes
import numpy as np
import pytest
from emu import native
from emu.pcode import compiler
from emu.pcode.abi import OpState
from emu.pcode.lanes_ir import Builder, NotLowerable, Val, U64, LLVM_TYPE, N_SENTINEL, lower
from emu.amd.wave import MODE_DEFAULT, MODE_IEEE, mode_state

pytestmark = pytest.mark.skipif(not native.available(), reason=f"no native code here: {native.NATIVE.why}")

INPUTS = ("S0", "S1", "S2", "D0", "VCC")
SCALAR_INPUTS = ("S0", "S1", "D0", "SCC", "PC")   # a scalar op's numpy code over waves: one lane per wave (as many inputs as INPUTS)
BITS = {"VCC": 1, "SCC": 1}   # inputs that hold one bit
N = 1024
W = 32       # lanes per vector, as a wave32 region runs them
CHUNK = 16   # cases per compiled module
FIELDS = {"SIMM32": 0x40490fdb, "SIMM16": 0xc248}   # SIMM16 negative as a signed 16-bit offset
MODES = {"default": MODE_DEFAULT, "ieee off": MODE_DEFAULT & ~MODE_IEEE}
# f(which, inputs..., laneId, outputs x4, nan flags, n, the C library's functions (emu.native.LIBM))
SIG = ctypes.CFUNCTYPE(None, ctypes.c_int64, *([ctypes.c_void_p] * (len(INPUTS) + 1 + 4 + 1)), ctypes.c_int64, ctypes.c_void_p)

def _vector_ops(arch):
  for op in compiler.ops_for(arch):
    if not type(op).__name__.startswith("VOP"): continue
    try: c = compiler.compile_op(arch, op)
    except Exception: continue
    if c.kind == "vector" and not c.mem and c.fn is not None: yield op, c

def _case(k:int, c, mode:int, names_in:tuple=INPUTS):
  """The blocks of case k of the harness (op c over n lanes, W at a time, in MODE `mode`, reading `names_in` through the harness's
  input pointers) and its outputs, or None when it does not lower."""
  b = Builder(f"t{k}.", W)
  v64 = b.t("i64")
  inputs = {name: Val(f"%in{k}.{i}", U64) for i, name in enumerate(names_in)}
  inputs.update(laneId=Val(f"%in{k}.laneId", U64), n=N_SENTINEL, WAVE32=True, WAVE64=False, **mode_state(mode), **FIELDS)
  try: out = lower(c.source, inputs, b)
  except NotLowerable: return None
  names = sorted(c.writes)
  if set(out) != set(names) or len(names) > 4: return None
  vals = [b.cast(out[name], U64) for name in names]
  nan = "zeroinitializer"
  for v in b.float_results:
    isn = b.emit(f"fcmp uno {b.t(LLVM_TYPE[v.dt])} {v.ref}, {v.ref}", U64)
    nan = b.emit(f"or {b.t('i1')} {nan}, {isn.ref}", U64).ref
  L = [f"case{k}:\n  br label %loop{k}\nloop{k}:\n  %i{k} = phi i64 [0, %case{k}], [%i{k}.next, %loop{k}]"]
  for name in [str(i) for i in range(len(INPUTS))] + ["laneId"]:
    L.append(f"  %a{k}.{name} = getelementptr inbounds i64, ptr %p.{name}, i64 %i{k}\n  %in{k}.{name} = load {v64}, ptr %a{k}.{name}, align 8")
  L.extend(b.lines)
  for j, v in enumerate(vals):
    L.append(f"  %oa{k}.{j} = getelementptr inbounds i64, ptr %o{j}, i64 %i{k}\n  store {v64} {v.ref}, ptr %oa{k}.{j}, align 8")
  L.append(f"  %nz{k} = zext {b.t('i1')} {nan} to {b.t('i8')}\n  %na{k} = getelementptr inbounds i8, ptr %nf, i64 %i{k}")
  L.append(f"  store {b.t('i8')} %nz{k}, ptr %na{k}, align 1")
  L.append(f"  %i{k}.next = add i64 %i{k}, {W}\n  %end{k} = icmp eq i64 %i{k}.next, %n\n  br i1 %end{k}, label %done, label %loop{k}")
  return "\n".join(L), names, b.declarations()

def _harness(cases:list[str], first:int, end:int) -> str:
  """One function `void f(which, S0..VCC, laneId, out0..out3, nan, n)` that runs case `which` of cases[first:end] (a module holds
  one function; LLVM's optimiser takes minutes on one function of a thousand cases, a second on one of CHUNK)."""
  args = ", ".join(f"ptr %p.{k}" for k in [str(i) for i in range(len(INPUTS))] + ["laneId"])
  head = [f"define void @f(i64 %which, {args}, ptr %o0, ptr %o1, ptr %o2, ptr %o3, ptr %nf, i64 %n, ptr %lm) {{", "entry:",
          *(f"  %libm.{fn}.p = getelementptr inbounds ptr, ptr %lm, i64 {i}\n  %libm.{fn} = load ptr, ptr %libm.{fn}.p"
            for i, fn in enumerate(native.LIBM)),
          f"  switch i64 %which, label %done [{' '.join(f'i64 {k}, label %case{k}' for k in range(first, min(end, len(cases))))}]"]
  return "\n".join(head + cases[first:end] + ["done:\n  ret void\n}"])

def _operands(rng, c, names_in:tuple=INPUTS) -> dict:
  """Random, special and lane-uniform operand bits for each input, at the operand's width (PC: dword-aligned addresses)."""
  specials32 = np.array([0, 0x80000000, 0x3f800000, 0xbf800000, 0x7f800000, 0xff800000, 0x7fc00000, 0x7fa00000, 0xffc00001, 1, 0x807fffff,
                         0x7f7fffff, 0x00800000, 0x4f000000, 0xcf000000, 0x3f000000, 0xffffffff, 0x7fffffff, 31, 32, 63, 64], dtype=np.uint64)
  specials64 = np.array([0, 1 << 63, 0x3ff0000000000000, 0xbff0000000000000, 0x7ff0000000000000, 0x7ff8000000000000, 0x7ff4000000000000, 1,
                         0x000fffffffffffff, 0x41e0000000000000, 0xc1e0000000000000, (1 << 64) - 1, 0x7fffffffffffffff, 63, 64], dtype=np.uint64)
  specials16 = np.array([0, 0x8000, 0x3c00, 0xbc00, 0x7c00, 0xfc00, 0x7e00, 0x7d00, 0xfe01, 1, 0x83ff, 0x7bff, 0x0400, 0x3800, 0xffff,
                         0x7fff, 0x5bff, 0xdbff, 31, 32], dtype=np.uint64)   # (0x7d00: a signalling NaN; 0x5bff: 255.9, ties of products)
  out = {}
  for k in names_in:
    if k == "PC": out[k] = rng.integers(1 << 40, 1 << 47, N, dtype=np.uint64) & ~np.uint64(3); continue
    w = BITS.get(k) or min(64, c.widths.get(k, 32))
    if w == 1: out[k] = rng.integers(0, 2, N, dtype=np.uint64); continue
    sp = specials64 if w == 64 else specials16 if w == 16 else specials32
    v = rng.integers(0, 1 << w, N, dtype=np.uint64) if w < 64 else \
      rng.integers(0, 1 << 63, N, dtype=np.uint64) * np.uint64(2) + rng.integers(0, 2, N, dtype=np.uint64)
    near = (rng.integers(0x3e000000, 0x42000000, N, dtype=np.uint64) | rng.integers(0, 2, N, dtype=np.uint64) << np.uint64(31)) if w == 32 else \
      (rng.integers(0x3000, 0x5000, N, dtype=np.uint64) | rng.integers(0, 2, N, dtype=np.uint64) << np.uint64(15)) if w == 16 else \
      (rng.integers(0x3fc00000, 0x40400000, N, dtype=np.uint64) << np.uint64(32) | rng.integers(0, 1 << 32, N, dtype=np.uint64))
    v[: N // 4] = near[: N // 4]                          # ordinary floats of moderate size
    v[N // 4: N // 2] = rng.choice(sp, N // 4)            # special values in any combination
    v[N // 2: N // 2 + 64] = sp[len(k) % len(sp)]   # a lane-uniform stretch
    out[k] = v if w == 64 else v & np.uint64((1 << w) - 1)
  return out

def _compare(ops, names_in:tuple, min_cases:int, operands=_operands):
  """Lower each (op, CompiledOp) of `ops` in every MODE variant whose code differs, run it as 32-lane vector code over random operands
  (`operands(rng, c, names_in)`) and compare with the CompiledOp's numpy code bit for bit wherever no NaN was reported."""
  rng = np.random.default_rng(7)
  built, cases, decls = [], [], set()
  for op, c in ops:
    seen = set()
    for mname, mode in MODES.items():   # a MODE variant is compared when its lowered code differs from the variants before it
      if (probe := _case(0, c, mode, names_in)) is None or probe[0] in seen: continue
      seen.add(probe[0])
      if (case := _case(len(cases), c, mode, names_in)) is not None:
        built.append((op, c, mname, mode, case[1]))
        cases.append(case[0])
        decls.update(case[2].splitlines())
  assert len(built) > min_cases, f"only {len(built)} op/mode pairs lower"
  head = "\n".join(sorted(decls))
  fns = [native.NATIVE.function(f"{head}\n{_harness(cases, k, k + CHUNK)}\n", SIG) for k in range(0, len(cases), CHUNK)]
  assert all(f is not None for f in fns), native.NATIVE.why
  compared = lanes = 0
  failures = []
  for k, (op, c, mname, mode, names) in enumerate(built):
    ops = operands(rng, c, names_in)
    lane_id = np.arange(N, dtype=np.uint64) % np.uint64(32)
    outs = [np.zeros(N, dtype=np.uint64) for _ in range(4)]
    nan = np.zeros(N, dtype=np.uint8)
    fns[k // CHUNK](k, *(ops[name].ctypes.data for name in names_in), lane_id.ctypes.data, *(o.ctypes.data for o in outs), nan.ctypes.data, N,
                    native.NATIVE.libm_table())
    st = OpState(n=N, laneId=lane_id, WAVE32=True, WAVE64=False, **mode_state(mode), **FIELDS, **{k: ops[k].copy() for k in names_in})
    c.fn(st)
    ok = nan == 0
    for j, name in enumerate(names):
      want = np.broadcast_to(np.asarray(getattr(st, name)).astype(np.uint64), (N,))
      got = outs[j]
      if name in c.lane_masks: want, got = want & np.uint64(1), got & np.uint64(1)
      elif (w := c.widths.get(name, 64)) < 64: want, got = want & np.uint64((1 << w) - 1), got & np.uint64((1 << w) - 1)
      bad = np.nonzero(ok & (want != got))[0]
      if len(bad): failures.append(f"{op.name} ({mname}) {name}: lane {bad[0]} inputs "
                                   f"{ {k: hex(int(ops[k][bad[0]])) for k in names_in} } want {int(want[bad[0]]):#x} got {int(got[bad[0]]):#x}")
    compared += int(ok.sum()); lanes += N
  assert not failures, f"{len(failures)} mismatches:\n" + "\n".join(failures[:20])
  assert compared > 0.8 * lanes, f"only {compared} of {lanes} lanes compared: NaN reports hide most results"
  return built

@pytest.mark.parametrize("arch", ["rdna3", "rdna4", "cdna"])
def test_lowered_ops_match_the_numpy_path(arch):
  _compare(_vector_ops(arch), INPUTS, 300)

def _ldexp_operands(rng, c, names_in:tuple) -> dict:
  """f32 values of every size (denormals, the largest, specials) and exponents around and past where every result is inf or 0."""
  out = _operands(rng, c, names_in)
  small = rng.integers(0, 0x00800000, N // 4, dtype=np.uint64) | rng.integers(0, 2, N // 4, dtype=np.uint64) << np.uint64(31)
  out["S0"][N // 2:3 * N // 4] = small   # denormals: results that round into and out of the denormal range
  out["S0"][3 * N // 4:] = rng.integers(0, 1 << 32, N // 4, dtype=np.uint64)
  out["S1"][:] = rng.integers(-340, 341, N).astype(np.int64).view(np.uint64) & np.uint64(0xffffffff)
  out["S1"][:8] = np.array([-(1 << 31), (1 << 31) - 1, -301, -300, -299, 299, 300, 301]).astype(np.int64).view(np.uint64) & np.uint64(0xffffffff)
  return out

@pytest.mark.parametrize("arch", ["rdna3", "cdna"])
def test_lowered_ldexp_rounds_once_at_every_exponent(arch):
  """V_LDEXP_F32 (lanes_ir's ldexp: x * 2**e in double, e clamped) against numerics.ldexp where rounding, overflow and underflow
  happen: exponents -340 .. 340 and the int32 extremes, on denormal, ordinary and extreme f32 values."""
  ops = [(op, c) for op, c in _vector_ops(arch) if op.name == "V_LDEXP_F32"]
  assert ops, "no V_LDEXP_F32 lowers"
  _compare(ops, INPUTS, 0, _ldexp_operands)

def _scalar_ops(arch):
  """Scalar ops with numpy code over waves (compile_across_waves) that read registers, SCC, the PC and fields only."""
  for op in compiler.ops_for(arch):
    if not type(op).__name__.startswith("SOP"): continue
    c = compiler.compile_across_waves(arch, op)
    if c is not None and c.fn is not None and c.reads <= set(SCALAR_INPUTS) | {"n", "SIMM16", "SIMM32", "WAVE32", "WAVE64"}:
      yield op, c

@pytest.mark.parametrize("arch", ["rdna3", "rdna4", "cdna"])
def test_lowered_scalar_ops_match_their_numpy_code_over_waves(arch):
  """What a region runs per wave for s_add/s_cmp/s_lshl ... and branches (one lane per wave here: the same lowering)."""
  built = _compare(_scalar_ops(arch), SCALAR_INPUTS, 60)
  names = {op.name for op, *_ in built}
  assert {"S_ADD_U32", "S_CMP_LT_U32", "S_CBRANCH_SCC1", "S_LSHL_B32"} <= names or {"S_ADD_CO_U32", "S_CMP_LT_U32", "S_CBRANCH_SCC1"} <= names

# ---- Python-int code (a whole-wave op's, lowered per wave with python_ints): exact where it lowers, refused where it could not be ----
PY_SOURCES = {
  # v_readfirstlane's lane choice (rdna3's wave32 arm): a signed test of a sign-extended word, both arms of an if, ff1
  "first lane": "def op(st):\n  X = st.X\n  lane = 0\n  if (i64(sext((X & 0xffffffff), 32)) == i64(0)):\n    lane = 0\n"
                "  else:\n    lane = ((ff1_32((X & 0xffffffff))) & 0xffffffff)\n  st.D0 = lane\n",
  "ff1_64 of zero is -1": "def op(st):\n  X = st.X\n  st.D0 = ff1_64(X)\n",
  "signed test, conditional expression": "def op(st):\n  X = st.X\n  st.D0 = (X >> 7) if i64(sext(X, 16)) < 0 else (X & 0xff)\n",
  "nested if, outputs merged": "def op(st):\n  X = st.X\n  st.D0 = 1\n  if (X & 1) != 0:\n    if X > 0x8000000000000000:\n"
                               "      st.D0 = X ^ 0x5555\n  else:\n    st.D0 = int(X) | 0x100\n",
}
PY_REFUSED = {
  "X + 1": "unbounded", "~X": "unbounded", "-X": "unbounded", "X << 3": "unbounded",
  "sext(X, 32) == X": "Python values as float64",   # int64 against uint64: no 64-bit type holds both exactly
}

def _one_element_loop(b:Builder, result:Val, in_type:str, out_type:str):
  """f(in, out, n), compiled: for each of n values of `in_type` at `in`, b's code (which reads it as the one-element vector %x1),
  its one-element `result` stored as `out_type` at `out`."""
  ir = "\n".join([b.declarations(), "define void @f(ptr %in, ptr %out, i64 %n) {", "entry:\n  br label %loop", "loop:",
                  "  %i = phi i64 [0, %entry], [%i.next, %loop]", f"  %pi = getelementptr inbounds {in_type}, ptr %in, i64 %i",
                  f"  %x = load {in_type}, ptr %pi\n  %x1 = insertelement <1 x {in_type}> poison, {in_type} %x, i64 0", *b.lines,
                  f"  %r = extractelement <1 x {out_type}> {result.ref}, i64 0\n  %po = getelementptr inbounds {out_type}, ptr %out, i64 %i",
                  f"  store {out_type} %r, ptr %po\n  %i.next = add i64 %i, 1\n  %end = icmp eq i64 %i.next, %n",
                  "  br i1 %end, label %done, label %loop", "done:\n  ret void\n}"])
  fn = native.NATIVE.function(ir, ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64))
  assert fn is not None, native.NATIVE.failure or native.NATIVE.why
  return fn

def _python_int_function(src:str):
  b = Builder("p", 1)
  out = lower(src, {"X": Val("%x1", U64)}, b, python_ints=True)
  return _one_element_loop(b, b.cast(out["D0"], U64), "i64", "i64")

@pytest.mark.parametrize("name", PY_SOURCES)
def test_python_int_code_lowers_exactly(name):
  """Each source against Python running it (helpers.namespace: Python ints) on words that reach every arm: zero, single bits, sign
  bits of each width, all ones, random 64-bit values."""
  from emu.pcode.helpers import namespace
  src = PY_SOURCES[name]
  xs = [0, 1, 2, 0x80, 0x8000, 0xffff, 1 << 31, 0xffffffff, 1 << 32, 1 << 40, 1 << 63, (1 << 63) + 1, 0x8000000000000001 + 2, (1 << 64) - 1]
  xs += [int(x) for x in np.random.default_rng(3).integers(0, 1 << 64, 200, dtype=np.uint64, endpoint=False)]
  xs += [x & 0xffffffff for x in xs[-100:]] + [x & 0xffff for x in xs[-50:]]
  arr = np.array(xs, dtype=np.uint64)
  got = np.zeros_like(arr)
  _python_int_function(src)(arr.ctypes.data, got.ctypes.data, len(arr))
  ns = namespace()
  exec(src, ns)
  for x, g in zip(xs, got.tolist()):
    st = OpState(X=x)
    ns["op"](st)
    assert g == int(st.D0) & ((1 << 64) - 1), f"{name}: X={x:#x} want {int(st.D0):#x} got {g:#x}"

@pytest.mark.parametrize("expr", PY_REFUSED)
def test_python_int_code_refuses_what_64_bits_may_not_hold(expr):
  with pytest.raises(NotLowerable, match=PY_REFUSED[expr]):
    lower(f"def op(st):\n  X = st.X\n  st.D0 = {expr}\n", {"X": Val("%x", U64)}, Builder("p", 1), python_ints=True)

def test_a_name_one_arm_of_a_per_wave_if_assigns_does_not_lower():
  src = "def op(st):\n  X = st.X\n  if X == 0:\n    y = 1\n  st.D0 = y\n"
  with pytest.raises(NotLowerable, match="name y"):
    lower(src, {"X": Val("%x", U64)}, Builder("p", 1), python_ints=True)
  with pytest.raises(NotLowerable, match="per-lane Python branch"):   # numpy code never branches on lanes: refused there
    lower(src.replace("st.D0 = y", "st.D0 = X"), {"X": Val("%x", U64)}, Builder("p", 1))

def test_double_to_half_rounds_once_as_numpy():
  """Builder.cast float64 -> float16 (round to odd at float's 24 bits, then to half) against numpy's one rounding, on the doubles
  where rounding twice goes wrong: just above and below every kind of half tie (normal, denormal, at the overflow threshold), both
  signs, and random doubles over half's range."""
  ties = [1 + 2.0 ** -11, 3 + 3 * 2.0 ** -10, 2.0 ** -25, 3 * 2.0 ** -25, 65504 + 8, 2.0 ** -14 + 2.0 ** -25, 1024 + 0.5, 2047.5]
  xs = [t * (1 + d) for t in ties for d in (0, 2.0 ** -40, -(2.0 ** -40), 2.0 ** -30, -(2.0 ** -30), 2.0 ** -24)]
  rng = np.random.default_rng(5)
  xs += list(rng.uniform(-70000, 70000, 300)) + list(np.ldexp(rng.uniform(1, 2, 300), rng.integers(-30, 17, 300)))
  x = np.array(xs + [-v for v in xs] + [0.0, -0.0, np.inf, -np.inf], dtype=np.float64)
  b = Builder("h", 1)
  h = b.cast(Val("%x1", np.dtype("float64")), np.dtype("float16"))
  fn = _one_element_loop(b, b.emit(f"bitcast {b.t('half')} {h.ref} to {b.t('i16')}", U64), "double", "i16")
  got = np.zeros(len(x), np.uint16)
  fn(x.ctypes.data, got.ctypes.data, len(x))
  with np.errstate(all="ignore"): want = x.astype(np.float16).view(np.uint16)
  bad = np.nonzero(got != want)[0]
  assert not len(bad), f"{len(bad)} differ, e.g. {x[bad[0]]!r}: want {want[bad[0]]:#06x} got {got[bad[0]]:#06x}"
