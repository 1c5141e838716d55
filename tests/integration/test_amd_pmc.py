"""tinygrad's PMC performance counters (PROFILE=1 PMC=1) through its own PMC path on the emulated GPU: a kernel of hand-written
instructions (inline assembly: LLVM adds nothing but s_endpgm around it) is counted exactly, per kernel, on the instances
tinygrad lays out; LDS bank conflicts and L2 hits come from the lanes' addresses; what the bench cannot count is refused by name. Runs on the
suite's interface and arch (KFD, PCI, USB)."""
import pytest
from tinygrad_run import ARCH, IFACE, emulator_available, run, run_json

pytestmark = pytest.mark.skipif(not emulator_available(), reason="emu.amd.gpu (the AMD emulator) is not available")
COUNTERS = "SQ_WAVES,SQ_INSTS_VALU,SQ_INSTS_SALU,SQ_BUSY_CYCLES,GRBM_GUI_ACTIVE"

KERNEL = """
import json
from tinygrad import Device, Tensor
from tinygrad.device import TinyELF, Compiled
from emu.timing.traces import pmc_counter
dev = Device["AMD"]
body = "\\\\0A".join(["v_add_f32 v1, v1, v1"] * 5 + ["s_add_u32 s10, s10, 1"] * 3)
ir = f'''define amdgpu_kernel void @k(ptr addrspace(1) %p) {{
  call void asm sideeffect "{body}", "~{{v1}},~{{s10}}"()
  ret void
}}'''
prg = dev.runtime(TinyELF(dev.compiler.compile(ir), "k", None, ()))
buf = Tensor.zeros(16, device="AMD").contiguous().realize()
first = len([e for e in Compiled.profile_events if type(e).__name__ == "ProfilePMCEvent"])
for _ in range(2): prg(buf.uop.buffer._buf, global_size=(4, 1, 1), local_size=(64, 1, 1), wait=True)
evs = [e for e in Compiled.profile_events if type(e).__name__ == "ProfilePMCEvent"][first:]
counts = lambda e: {s.name: [int(pmc_counter(e, s.name).sum()), list(pmc_counter(e, s.name).shape)] for s in e.sched}
print(json.dumps({"se": dev.se_cnt, "events": [counts(e) for e in evs]}))
"""

def test_a_hand_written_kernel_is_counted_exactly_per_kernel():
  out = run_json(KERNEL, env={"PROFILE": "1", "PMC": "1", "PMC_COUNTERS": COUNTERS})
  waves = 4 * 64 // (64 if ARCH.startswith("gfx9") else 32)   # 4 workgroups of 64 lanes: wave64 on CDNA, wave32 on RDNA
  first, second = out["events"]
  assert first == second, out   # each kernel's sample covers that kernel alone (tinygrad resets the counters after each read)
  assert first["SQ_WAVES"][0] == waves and first["SQ_INSTS_VALU"][0] == 5 * waves and first["SQ_INSTS_SALU"][0] == 3 * waves
  assert first["SQ_BUSY_CYCLES"][0] > 0 and first["GRBM_GUI_ACTIVE"][0] > 0
  # tinygrad's sample layout: SQ per shader engine (CDNA) or per engine, array and WGP (RDNA); GRBM one instance
  sq = [1, 1, out["se"], 1, 1] if ARCH.startswith("gfx9") else [1, 1, out["se"], 2, first["SQ_WAVES"][1][4]]
  assert first["SQ_WAVES"][1] == sq and first["GRBM_GUI_ACTIVE"][1] == [1, 1, 1, 1, 1]

def ir_kernel(ir:str, workgroups:int, floats:int) -> str:
  """Child code: compile the LLVM IR kernel `k` taking one buffer, run it once on `workgroups` workgroups of 64 lanes over a
  `floats`-float buffer, print that kernel's PMC sample as {counter without its block prefix: sum over instances}."""
  return f"""
import json
from tinygrad import Device, Tensor
from tinygrad.device import TinyELF, Compiled
from emu.timing.traces import pmc_counter
dev = Device["AMD"]
prg = dev.runtime(TinyELF(dev.compiler.compile({ir!r}), "k", None, ()))
buf = Tensor.zeros({floats}, device="AMD").contiguous().realize()
first = len([e for e in Compiled.profile_events if type(e).__name__ == "ProfilePMCEvent"])
prg(buf.uop.buffer._buf, global_size=({workgroups}, 1, 1), local_size=(64, 1, 1), wait=True)
e = [e for e in Compiled.profile_events if type(e).__name__ == "ProfilePMCEvent"][first]
print(json.dumps({{s.name.split("_", 1)[1]: int(pmc_counter(e, s.name).sum()) for s in e.sched}}))
"""

CONFLICTS = ir_kernel("""@lds = internal addrspace(3) global [2048 x i32] undef, align 4
declare i32 @llvm.amdgcn.workitem.id.x()
define amdgpu_kernel void @k(ptr addrspace(1) %out) {
  %t = call i32 @llvm.amdgcn.workitem.id.x()
  %i = shl i32 %t, 5
  %p = getelementptr [2048 x i32], ptr addrspace(3) @lds, i32 0, i32 %i
  %v = load volatile i32, ptr addrspace(3) %p
  %q = getelementptr i32, ptr addrspace(1) %out, i32 %t
  store i32 %v, ptr addrspace(1) %q
  ret void
}""", workgroups=2, floats=64)

def test_lds_bank_conflicts_are_counted_from_the_lanes_addresses():
  # each lane loads the LDS dword 32 * lane: every lane on bank 0, each its own dword, so each group of 32 lanes takes 32 cycles, 31 of
  # them conflicts; 2 workgroups of 64 lanes are 4 groups (RDNA: 4 wave32s; CDNA: 2 wave64s served half by half), one load each
  lds = "SQ" if ARCH.startswith("gfx9") else "SQC"
  out = run_json(CONFLICTS, env={"PROFILE": "1", "PMC": "1", "PMC_COUNTERS": f"SQ_INSTS_LDS,{lds}_LDS_IDX_ACTIVE,{lds}_LDS_BANK_CONFLICT"})
  assert out == {"INSTS_LDS": 4 if lds == "SQC" else 2, "LDS_IDX_ACTIVE": 4 * 32, "LDS_BANK_CONFLICT": 4 * 31}, out

L2_KERNEL = ir_kernel("""declare i32 @llvm.amdgcn.workitem.id.x()
declare i32 @llvm.amdgcn.workgroup.id.x()
define amdgpu_kernel void @k(ptr addrspace(1) %p) {
  %t = call i32 @llvm.amdgcn.workitem.id.x()
  %g = call i32 @llvm.amdgcn.workgroup.id.x()
  %b = shl i32 %g, 6
  %i = add i32 %b, %t
  %q = getelementptr float, ptr addrspace(1) %p, i32 %i
  %v = load float, ptr addrspace(1) %q
  %w = fadd float %v, 1.0
  store float %w, ptr addrspace(1) %q
  ret void
}""", workgroups=4, floats=256)

def test_l2_hits_and_misses_come_from_the_lines_the_kernel_touches():
  # 256 floats in place (+1): 8 lines of 128 bytes, each loaded once (a miss: tinygrad invalidates the L2 around every kernel) and
  # stored back (a hit); the kernel arguments, one line every wave's scalar load reads: a miss for the first scalar cache, a hit
  # for each other one (RDNA: 8 wave32s in 2 WGPs; CDNA: 4 wave64s, one per CU)
  l2 = "TCC" if ARCH.startswith("gfx9") else "GL2C"
  out = run_json(L2_KERNEL, env={"PROFILE": "1", "PMC": "1", "PMC_COUNTERS": f"{l2}_HIT,{l2}_MISS"})
  assert out == {"MISS": 8 + 1, "HIT": 8 + (3 if l2 == "TCC" else 1)}, out

def test_a_counter_the_bench_cannot_count_is_refused_by_name():
  # over USB tinygrad notices the stopped queue only at its wait timeout
  p = run(KERNEL, env={"PROFILE": "1", "PMC": "1", "PMC_COUNTERS": "SQ_INSTS_VALU,SQ_WAIT_ANY",
                       **({"HCQDEV_WAIT_TIMEOUT_MS": "3000"} if IFACE == "MOCKUSB" else {})})
  assert p.returncode != 0 and "PMC: counter SQ_WAIT_ANY" in p.stderr, p.stderr[-3000:]
  assert "is not modelled" in p.stderr and "SQ_INSTS_VALU" in p.stderr   # the reason, and what it can count

@pytest.mark.skipif(IFACE == "MOCKUSB", reason="tinygrad's USB compute ring holds 2048 dwords and its read of the default counter set is "
                    "longer (3158 dwords on gfx1100, 2438 on gfx1201): it overwrites its own packets, which the mock reports as a malformed packet")
def test_tinygrads_default_counter_set_is_counted():
  # VIZ=2: tinygrad's profiler with its default counters and thread traces (copies' timestamps and the next compute submission
  # then signal one timeline from two queues; the engines finish them in submission order)
  out = run_json(KERNEL, env={"VIZ": "2"})
  (l2, lds), waves = (("TCC", "SQ") if ARCH.startswith("gfx9") else ("GL2C", "SQC")), 4 * 64 // (64 if ARCH.startswith("gfx9") else 32)
  first = out["events"][0]
  assert set(first) == {"SQ_BUSY_CYCLES", "SQ_INSTS_VALU", "SQ_INSTS_SALU", f"{lds}_LDS_IDX_ACTIVE", f"{lds}_LDS_BANK_CONFLICT", "GRBM_GUI_ACTIVE",
                        f"{l2}_HIT", f"{l2}_MISS"}
  assert first["SQ_INSTS_VALU"][0] == 5 * waves and first[f"{lds}_LDS_IDX_ACTIVE"][0] == 0 and first == out["events"][1]

@pytest.mark.skipif(IFACE != "MOCKKFD" or ARCH.startswith("gfx9"), reason="the device-info ioctl is the KFD path's, and tinygrad asks it "
                    "which WGPs are active only on RDNA (its AM driver assumes every WGP is)")
def test_kfd_answers_the_device_info_query_with_every_wgp_active():
  out = run_json("""
    import json
    from tinygrad import Device
    d = Device["AMD"]
    wgps = d.iface.props["cu_per_simd_array"] // 2   # one WGP past the board's reads inactive
    print(json.dumps({"wgps": wgps, "se": d.se_cnt, "active": [d.iface.is_wgp_active(0, se, sa, w) for se in range(d.se_cnt) for sa in range(2)
                                                                for w in range(wgps + 1)]}))
  """)
  assert out["active"] == [w < out["wgps"] for _ in range(out["se"]) for _ in range(2) for w in range(out["wgps"] + 1)], out
