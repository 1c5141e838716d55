"""tinygrad's AMD runtime on the mock KFD without kernels: device open, host<->device copies (SDMA), device<->device copies."""
from tinygrad_run import ARCH, IFACE, run, run_json

def test_device_opens_with_the_requested_arch():
  out = run_json("""
    import json
    from tinygrad import Device
    d = Device["AMD"]
    print(json.dumps([d.arch, d.iface.props["simd_count"], type(d.iface).__name__]))
  """)
  simds = {"gfx1100": 96 * 2, "gfx1201": 64 * 2, "gfx942": 38 * 4, "gfx950": 32 * 4}[ARCH]   # CUs x SIMDs per CU (RDNA 2, CDNA 4)
  assert out == [ARCH, simds, f"{IFACE}Iface"]

def test_device_opens_as_gfx1201():
  assert run_json("import json; from tinygrad import Device; print(json.dumps(Device['AMD'].arch))", dev="MOCKKFD+AMD::gfx1201") == "gfx1201"

def test_roundtrip_small_and_large():
  out = run_json("""
    import json, numpy as np
    from tinygrad import Tensor
    small = Tensor([1, 2, 3], device="AMD").numpy().tolist()
    big = (np.arange(3 << 20, dtype=np.uint32) * 2654435761).astype(np.uint32)   # 12 MB: several SDMA packets
    back = Tensor(big, device="AMD").realize().numpy()
    print(json.dumps([small, bool((back == big).all())]))
  """)
  assert out == [[1, 2, 3], True]

def test_peer_copy_between_two_gpus():
  out = run_json("""
    import json, numpy as np
    from tinygrad import Tensor
    a = np.random.default_rng(0).standard_normal((257, 129)).astype(np.float32)
    t1 = Tensor(a, device="AMD").to("AMD:1").realize()
    t0 = t1.to("AMD").realize()
    print(json.dumps([t1.device, bool((t1.numpy() == a).all()), bool((t0.numpy() == a).all())]))
  """, dev=f"MOCKKFD:0,1+AMD:LLVM:{ARCH}")
  assert out == ["AMD:1", True, True]

def test_node_count_comes_from_dev_indices_or_env():
  p = run("from tinygrad import Device; Device['AMD:2']", dev="MOCKKFD:0,1+AMD")
  assert p.returncode != 0 and "No device found for 2" in p.stderr
  assert run_json("import json; from tinygrad import Device; print(json.dumps(Device['AMD:2'].device))", env={"MOCKGPU_AMD_GPUS": "3"}) == "AMD:2"
