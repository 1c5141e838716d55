"""emu.llvm_libs: libLLVM files are found by their Debian, Ubuntu and soname names and picked by major version."""
from emu import llvm_libs

def fake_libs(tmp_path, monkeypatch, *names):
  for n in names: (tmp_path / n).write_bytes(b"\x7fELF")
  monkeypatch.setattr(llvm_libs, "lib_dirs", lambda: [str(tmp_path)])

def test_names_of_every_distribution(tmp_path, monkeypatch):
  fake_libs(tmp_path, monkeypatch, "libLLVM-19.so", "libLLVM-20.so.1", "libLLVM.so.21.1", "libLLVMSupport.a", "libLLVM-15.so.1")
  assert {m: p.rsplit("/", 1)[1] for m, p in llvm_libs.system_llvms().items()} == \
    {15: "libLLVM-15.so.1", 19: "libLLVM-19.so", 20: "libLLVM-20.so.1", 21: "libLLVM.so.21.1"}
  assert llvm_libs.newest_system_llvm().endswith("libLLVM.so.21.1")

def test_prefers_the_debian_name_of_one_version(tmp_path, monkeypatch):
  fake_libs(tmp_path, monkeypatch, "libLLVM.so.19.1", "libLLVM-19.so")
  assert llvm_libs.system_llvms()[19].endswith("libLLVM-19.so")

def test_system_llvm_takes_the_version_else_the_newest_newer(tmp_path, monkeypatch):
  fake_libs(tmp_path, monkeypatch, "libLLVM-19.so", "libLLVM-22.so")
  assert llvm_libs.system_llvm(19).endswith("libLLVM-19.so")
  assert llvm_libs.system_llvm(20).endswith("libLLVM-22.so")
  assert llvm_libs.system_llvm(23) is None
