"""The native kernels load wherever they can: every native test skips where `native.available()` is False, so a kernel that LLVM
rejects (or a loader that fails) on a machine that runs native code would otherwise pass as a row of skips."""
import pytest
from emu import native

def test_the_native_kernels_load_on_x86_64_linux_with_libllvm():
  if (why := native.NATIVE._allowed()) is not None: pytest.skip(f"native code is off here: {why}")
  try:
    from tinygrad.runtime.autogen import llvm
    llvm.LLVMContextCreate   # (the library is opened on first use)
  except Exception as e: pytest.skip(f"no loadable libLLVM: {type(e).__name__}: {e}")
  assert native.available(), native.NATIVE.why
