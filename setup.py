"""Ships `tinygrad_emu_hook.pth` into site-packages (regular and editable installs) so the `test.mockgpu` hook is active
in every interpreter of the environment. Everything else about the package lives in pyproject.toml."""
import os
from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.editable_wheel import editable_wheel

PTH = "tinygrad_emu_hook.pth"

class BuildPyWithPth(build_py):
  def run(self):
    super().run()
    self.copy_file(PTH, os.path.join(self.build_lib, PTH), preserve_mode=0)

class EditableWheelWithPth(editable_wheel):
  def _select_strategy(self, name, tag, build_lib):
    # the editable wheel's root becomes site-packages: put the hook .pth beside setuptools' own path file
    strategy = super()._select_strategy(name, tag, build_lib)
    class WithPth:
      def __init__(self, inner): self.inner = inner
      def __call__(self, wheel, files, mapping):
        self.inner(wheel, files, mapping)
        with open(PTH, "rb") as f: wheel.writestr(PTH, f.read())
      def __enter__(self): self.inner.__enter__(); return self
      def __exit__(self, *a): return self.inner.__exit__(*a)
    return WithPth(strategy)

setup(cmdclass={"build_py": BuildPyWithPth, "editable_wheel": EditableWheelWithPth})
