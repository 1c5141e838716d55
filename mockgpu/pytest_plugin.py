"""pytest plugin (entry point `pytest11: mockgpu`): installs the `test.mockgpu` import hook before any test module imports tinygrad."""
from mockgpu import hook

hook.install()
