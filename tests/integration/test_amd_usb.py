"""tinygrad's AM driver behind the mock USB3-to-PCIe bridge (DEV=MOCKUSB+AMD) end to end on both boards: tinygrad's own
USBIface, ASM24 controller and USB copy paths (the SRAM windows, the pipelined copy-in and its drain fence, the armed copy-out)
against the mock bridge. The rest of the integration suite runs on this path too with EMU_TEST_IFACE=MOCKUSB (.ci/run does).
Expected values come from numpy."""
import pytest
from tinygrad_run import emulator_available, run, run_json

pytestmark = pytest.mark.skipif(not emulator_available(), reason="emu.amd.gpu (the AMD emulator) is not available")
ARCHS = ("gfx1100", "gfx1201")

BOOT = """
import json
import numpy as np
from tinygrad import Device, Tensor
from mockgpu.pci import driver
from mockgpu.usb import transport
dev = Device["AMD"]
g, bridge = driver.GPUS[0], transport.DEVICES[0].bridge
a = np.arange(1000, dtype=np.float32)
print(json.dumps({"arch": dev.arch, "iface": type(dev.iface).__name__, "usb": dev.is_usb(), "bus": dev.iface.pci_dev.pcibus,
  "name": g.name, "queues": sorted(e.name.split(" ")[0] for e in g.doorbells.values()), "bars": dev.iface.pci_dev._bar_info,
  "value": ((Tensor(a) * 2 + 1).sum().item(), float((a * 2 + 1).sum()))}))
"""

@pytest.mark.parametrize("arch", ARCHS)
def test_the_am_driver_boots_the_board_through_the_bridge_and_runs_kernels(arch):
  out = run_json(BOOT, dev=f"MOCKUSB+AMD:LLVM:{arch}")
  assert out["arch"] == arch and out["iface"] == "MOCKUSBIface" and out["usb"] and out["bus"] == out["name"]
  assert out["queues"] == ["PM4", "SDMA"]
  # tinygrad placed the BARs itself: the 32-bit register BAR at 0x10000000, VRAM (the power of two that holds it) and then the
  # doorbells in the prefetchable window from 32 GiB (System.pci_setup_usb_bars)
  vram_bar = {"gfx1100": 32 << 30, "gfx1201": 16 << 30}[arch]
  assert out["bars"] == {"0": [32 << 30, vram_bar], "2": [(32 << 30) + vram_bar, 2 << 20], "4": [0x10000000, 0], "5": [0x10000000, 1 << 20]}
  assert out["value"][0] == out["value"][1]

COPIES = """
import json
import numpy as np
from tinygrad import Tensor
rng = np.random.default_rng(1)
big = rng.standard_normal(700_001).astype(np.float32)     # 2.8 MB: eleven copy-in chunks through both SRAM windows
t = Tensor(big).realize()
back = (t * 2 + 1).numpy()                                 # six armed SRAM reads of the copy-out (2t exact: fused or not, one rounding)
odd = rng.integers(0, 255, 1237, dtype=np.uint8)          # not a multiple of the 512-byte sector
print(json.dumps({"big": bool(np.array_equal(back, big * 2 + 1)), "raw": bool(np.array_equal(t.numpy(), big)),
                  "odd": bool(np.array_equal(Tensor(odd).numpy(), odd))}))
"""

@pytest.mark.parametrize("arch", ARCHS)
def test_copies_larger_than_the_sram_windows_round_trip(arch):
  assert run_json(COPIES, dev=f"MOCKUSB+AMD:LLVM:{arch}") == {"big": True, "raw": True, "odd": True}

def test_two_usb_gpus_each_behind_its_own_bridge():
  out = run_json("""
    import json
    import numpy as np
    from tinygrad import Device, Tensor
    a = np.arange(4096, dtype=np.float32)
    x = Tensor(a, device="AMD:0").realize()
    y = (x.to("AMD:1") + 1).realize()      # no peer transfers over USB: through the host
    print(json.dumps({"names": [Device[f"AMD:{i}"].iface.pci_dev.pcibus for i in range(2)], "ok": bool(np.array_equal(y.numpy(), a + 1))}))
  """, dev="MOCKUSB:0,1+AMD")
  assert out["ok"] and len(set(out["names"])) == 2 and all(n.startswith("usb:") for n in out["names"])

def test_cdna_is_refused_naming_the_interface_that_runs_it():
  p = run("from tinygrad import Device; Device['AMD']", dev="MOCKUSB+AMD:LLVM:gfx942")
  assert p.returncode != 0 and "DEV=MOCKUSB+AMD emulates gfx1100, gfx1201 only, not 'gfx942'" in p.stderr and "MOCKKFD" in p.stderr
