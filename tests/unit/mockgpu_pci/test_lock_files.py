"""tinygrad's AM driver takes a per-device lock file in the temporary folder (`am_<bus>.lock`); the mock's bus names belong to
one process, so it deletes their lock files when that process exits instead of leaving one per GPU behind for every run."""
import os, subprocess, sys
from mockgpu.pci.driver import bus_name, remove_lock_files

def test_only_the_lock_files_of_the_given_bus_names_are_removed(tmp_path):
  mine, other = bus_name(0, pid=4242), bus_name(0, pid=4243)
  for name in (f"am_{mine}.lock", f"am_{other}.lock", f"{mine}.txt"): (tmp_path / name).touch()
  remove_lock_files([mine], folder=str(tmp_path))
  assert sorted(p.name for p in tmp_path.iterdir()) == sorted([f"am_{other}.lock", f"{mine}.txt"])

def test_a_process_that_mounted_pci_gpus_leaves_no_lock_file(tmp_path):
  # the child mounts two GPUs and creates their lock files the way tinygrad names them, in its own temporary folder
  code = ("import tempfile; from mockgpu.vfs import VFS; from mockgpu.pci import driver\n"
          "gpus = driver.install(VFS(), 2, 'gfx1100')\n"
          "for g in gpus: open(f'{tempfile.gettempdir()}/am_{g.name.lower()}.lock', 'w').close()\n"
          "print(len(gpus))")
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, "TMPDIR": str(tmp_path)}, check=True)
  assert out.stdout.strip() == "2" and list(tmp_path.iterdir()) == []
