"""tinygrad's AM driver (DEV=MOCKPCI+AMD) end to end on both PCI boards: the boot it performs, results, faults through the IH
ring, recovery, and two GPUs. The rest of the integration suite runs on this path too with EMU_TEST_IFACE=MOCKPCI (.ci/run
does, for both archs). Expected values come from numpy or are worked by hand; boot facts are checked against what tinygrad's
driver is documented to do (docs/mockpci.md)."""
import pytest
from tinygrad_run import emulator_available, raw_kernel_script, run, run_json

pytestmark = pytest.mark.skipif(not emulator_available(), reason="emu.amd.gpu (the AMD emulator) is not available")
ARCHS = ("gfx1100", "gfx1201")

BOOT = """
import json
import numpy as np
from tinygrad import Device, Tensor
from tinygrad.runtime.autogen.am import am
from tinygrad.runtime.support.am.amdev import AMDev
from mockgpu.pci import driver
from mockgpu.pci.config_space import LNKCTL
dev = Device["AMD"]
g = driver.GPUS[0]
a = np.arange(1000, dtype=np.float32)
names = {v: k for k, v in vars(am).items() if k.startswith("PSP_BL__")}
gfx = g.smu.mod.PPCLK_GFXCLK
print(json.dumps({"arch": dev.arch, "iface": type(dev.iface).__name__, "cus": dev.cu_cnt,
  "bootloader": [names[c] for c in g.psp.loaded_components], "all_ip_fw": sorted(g.psp.loaded_ip) == sorted(g.firmware.ip_segments),
  "autoloaded": g.gfx.autoloaded, "booted": g.regs.get("regSCRATCH_REG7") == AMDev.Version, "aspm": g.config.word(LNKCTL) & 3,
  "bus_master": g.config.bus_master, "queues": sorted(e.name.split(" ")[0] for e in g.doorbells.values()),
  "gfxclk": list(g.smu.soft_limits[gfx]), "top": dict(g.pci_board.dpm_mhz)[gfx][-1],
  "value": ((Tensor(a) * 2 + 1).sum().item(), float((a * 2 + 1).sum()))}))
"""

@pytest.mark.parametrize("arch", ARCHS)
def test_the_am_driver_boots_the_board_and_runs_kernels(arch):
  out = run_json(BOOT, dev=f"MOCKPCI+AMD:LLVM:{arch}")
  assert out["arch"] == arch and out["iface"] == "MOCKPCIIface" and out["cus"] == {"gfx1100": 96, "gfx1201": 64}[arch]
  bl = out["bootloader"]
  assert bl[-1] == "PSP_BL__LOAD_SOSDRV" and "PSP_BL__LOAD_SYSDRV" in bl and "PSP_BL__LOAD_KEY_DATABASE" in bl   # sOS last
  assert out["all_ip_fw"] and out["autoloaded"] and out["booted"]   # every image through the PSP, RLC autoload, SCRATCH_REG7 marks an AM boot
  assert out["aspm"] == 0 and out["bus_master"]                     # ASPM turned off, bus mastering on
  assert out["queues"] == ["PM4", "SDMA"]
  assert out["gfxclk"] == [out["top"], out["top"]]                  # set_clocks(level=-1): the top DPM level, min and max
  assert out["value"][0] == pytest.approx(out["value"][1], rel=1e-6)

OOB = """define amdgpu_kernel void @oob(ptr addrspace(1) %p) {
    %q = getelementptr i8, ptr addrspace(1) %p, i64 1099511627776
    store i32 7, ptr addrspace(1) %q
    ret void
  }"""   # a store 1 TiB past its buffer: no page table maps it

@pytest.mark.parametrize("arch", ARCHS)
def test_a_store_to_an_unmapped_gpu_va_reaches_tinygrad_through_the_ih_ring_and_the_device_recovers(arch):
  p = run(raw_kernel_script("oob", OOB, after='print("BUF", hex(buf.uop.buffer._buf.va_addr)); print("AFTER", (Tensor([1.0, 2.0]) * 3).tolist())'),
          dev=f"MOCKPCI+AMD:LLVM:{arch}")
  assert p.returncode == 0, p.stderr[-3000:]
  lines = p.stdout.splitlines()
  assert any(ln.startswith("FAULT Device hang detected") for ln in lines), p.stdout + p.stderr[-2000:]
  assert any("src=UTCL2_FAULT" in ln for ln in lines), p.stdout   # tinygrad's own IH decode
  buf = int(next(ln for ln in lines if ln.startswith("BUF")).split()[1], 16)
  status = next(ln for ln in lines if "GCVM_L2_PROTECTION_FAULT_STATUS" in ln)
  assert int(status.split()[-1], 16) == (buf + (1 << 40)) & ~0xfff and "'mapping_error': 1" in status and "'rw': 1" in status
  assert "AFTER [3.0, 6.0]" in p.stdout   # tinygrad's recovery re-created the queue and the device works again
  assert "GPU memory fault: write of unmapped address" in p.stderr

def test_two_pci_gpus_copy_between_each_other():
  out = run_json("""
    import json
    import numpy as np
    from tinygrad import Tensor
    a = Tensor(np.arange(4096, dtype=np.float32), device="AMD").contiguous().realize()
    b = (a.to("AMD:1") * 2).to("AMD")
    print(json.dumps(b[[0, 1, 4095]].tolist()))
  """, dev="MOCKPCI:0,1+AMD:LLVM:gfx1100")
  assert out == [0.0, 2.0, 8190.0]

def test_the_am_driver_never_calls_sudo_even_with_vfio_requested(tmp_path):
  import os
  marker = tmp_path / "sudo-called"
  (tmp_path / "sudo").write_text(f"#!/bin/sh\necho \"$@\" >> {marker}\n")
  (tmp_path / "sudo").chmod(0o755)
  out = run_json("import json; from tinygrad import Tensor; print(json.dumps((Tensor([1.0, 2.0]) + 1).tolist()))",
                 dev="MOCKPCI+AMD:LLVM:gfx1100", env={"VFIO": "1", "PATH": f"{tmp_path}:{os.environ['PATH']}"})
  assert out == [2.0, 3.0]
  assert not marker.exists(), marker.read_text()   # compact_unevictable_allowed reads 0 and the vfio module is there: nothing to escalate

EOP_GATE = """
import json
from tinygrad import Device, Tensor
from tinygrad.helpers import to_mv
from tinygrad.runtime.autogen.am import am
from mockgpu.pci import driver
dev, g = Device["AMD"], driver.GPUS[0]
adev = dev.iface.dev_impl
names = {v: k.split("__SRCID__")[1] for k, v in vars(am).items() if k.startswith(f"GFX_{dev.target[0]}_0_0__SRCID__")}
posted = []
post = g.ih.post
g.ih.post = lambda client, source, *a, **k: (posted.append(names.get(source, source)), post(client, source, *a, **k))[1]
def timed_kernels(enabled=False):
  posted.clear()
  try:
    (Tensor.ones(256, 256).contiguous() @ Tensor.ones(256, 256).contiguous()).realize()   # DEBUG=2: timestamped signals
    dev.synchronize()
  except RuntimeError as e:   # a wait past 200 ms reads the IH ring itself (ops_amd's _sleep): an enabled pipe's entry is a source
    # its handler does not know, so it flags the device ("error state", then its wait's recovery: "hang detected"); what reached
    # the ring is `posted`
    if not enabled or not any(m in str(e) for m in ("error state", "hang detected")): raise
  adev.ih.interrupt_handler()   # what tinygrad's AM driver does while it waits and at recovery: read every IH entry
  return sorted(set(posted)), adev.is_err_state
quiet = timed_kernels()
bar = to_mv(g.regs.bar_addr, g.regs.bar_bytes).cast("I")   # now enable each MEC pipe's end-of-pipe interrupt, as amdgpu does
for name in [n for n in g.regs.defs if n.startswith("regCP_ME1_PIPE")]: bar[g.regs.addr(name)] = g.regs.reg(name).encode(time_stamp_int_enable=1)
print(json.dumps({"disabled": quiet, "enabled": timed_kernels(enabled=True)[0]}))
"""

@pytest.mark.parametrize("arch", ARCHS)
def test_end_of_pipe_interrupts_reach_the_ih_ring_only_where_the_driver_enabled_them(arch):
  # tinygrad's timestamps (DEBUG=2) ask RELEASE_MEM for an interrupt; a MEC pipe posts it only with its CP_ME1_PIPEn_INT_CNTL
  # TIME_STAMP_INT_ENABLE set, which the AM driver never sets: as on hardware it finds no entry and no error (its handler skips a
  # source it calls CP_EOP_INTR, not the CP_EOP_INTERRUPT the ring would carry). Enabled by hand, the entries arrive (and the
  # handler flags them as unknown: whether it reads them inside a long wait or only here depends on the machine's speed).
  out = run_json(EOP_GATE, dev=f"MOCKPCI+AMD:LLVM:{arch}", env={"DEBUG": "2"})
  assert out == {"disabled": [[], False], "enabled": ["CP_EOP_INTERRUPT"]}

CORRUPT_PAGE_TABLE = """
import json
from tinygrad import Device, Tensor
dev = Device["AMD"]
adev = dev.iface.dev_impl
(Tensor([1.0, 2.0]) * 2).realize()
adev.reg("regGCVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_LO32").write(12345)   # a root table in VRAM that holds no page tables
adev.reg("regGCVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_HI32").write(0)
adev.gmc.flush_tlb(ip="GC", vmid=0)
try: (Tensor([1.0, 2.0]) * 3).tolist(); err = None
except BaseException as e: err = f"{type(e).__module__}.{type(e).__name__}: {e}"
print(json.dumps(err))
"""

def test_a_corrupted_page_table_base_faults_the_queues_not_the_host():
  # every GPU access now misses; tinygrad's recovery re-creates its compute queue, whose first store (the read pointer, through
  # the broken tables) is that queue's fault, reported through the IH ring like any other, never an exception in the host
  err = run_json(CORRUPT_PAGE_TABLE, dev="MOCKPCI+AMD:LLVM:gfx1100")
  assert err is not None and err.startswith("builtins.RuntimeError: Device hang detected"), err
