"""mockgpu.nvrtc_path: a mock NV target gets PyPI's NVRTC and CUDA headers unless the user chose their own; without NVRTC it
says that tinygrad falls back to PTX; other targets are left alone."""
import io
import pytest
from mockgpu import nvrtc_path

def test_points_tinygrad_at_pypis_nvrtc_and_headers(monkeypatch):
  monkeypatch.setattr(nvrtc_path, "pypi_nvrtc", lambda: "/site/nvidia/cuda_nvrtc/lib/libnvrtc.so.12")
  monkeypatch.setattr(nvrtc_path, "pypi_cuda_headers", lambda: "/site/nvidia/cuda_runtime")
  env = {"DEV": "MOCK+NV"}
  assert nvrtc_path.select(env, io.StringIO()) == {"NVRTC_PATH": "/site/nvidia/cuda_nvrtc/lib/libnvrtc.so.12",
                                                   "CUDA_PATH": "/site/nvidia/cuda_runtime"}
  mine = {"DEV": "MOCK:0,1+NV:CUDA", "NVRTC_PATH": "/opt/my/libnvrtc.so", "CUDA_PATH": "/opt/cuda"}
  assert nvrtc_path.select(mine, io.StringIO()) == {} and mine["NVRTC_PATH"] == "/opt/my/libnvrtc.so"
  assert nvrtc_path.select({"DEV": "MOCKKFD+AMD"}, io.StringIO()) == {} and nvrtc_path.select({"DEV": "NV"}, io.StringIO()) == {}

@pytest.mark.parametrize("dev,says", [("MOCK+NV", True), ("MOCK+NV:CUDA", True), ("MOCK+NV:PTX", False)])
def test_without_nvrtc_it_says_tinygrad_falls_back_to_ptx(monkeypatch, dev, says):
  monkeypatch.setattr(nvrtc_path, "pypi_nvrtc", lambda: None)
  monkeypatch.setattr(nvrtc_path, "pypi_cuda_headers", lambda: None)
  out = io.StringIO()
  assert nvrtc_path.select({"DEV": dev}, out) == {}
  assert ("falls back to its PTX renderer" in out.getvalue()) == says
