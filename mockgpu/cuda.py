"""MOCK+CUDA is not emulated: the module imports (tinygrad's ops_cuda imports `test.mockgpu.cuda.cuda` under MOCK), and any
use of `cuda` raises a clear error pointing at MOCK+NV."""

class _NotEmulated:
  def __getattr__(self, name:str):
    raise RuntimeError(f"mockgpu: MOCK+CUDA is not emulated (tinygrad asked for cuda.{name}); use DEV=MOCK+NV")

cuda = _NotEmulated()
