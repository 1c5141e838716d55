"""The NVIDIA PTX emulator (issue 17, in progress): `ptx.parse` turns PTX text into validated kernels, `simt.run` runs one over a
grid on numpy lanes against host memory, `kernel.render` gets the PTX tinygrad's renderer writes for a tinygrad function.
Opcode semantics live in emu.nv.isa, one entry per opcode. No mock driver yet (mockgpu/nv) and no timing model."""
