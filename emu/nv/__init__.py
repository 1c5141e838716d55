"""The NVIDIA PTX emulator (docs/nv-emulator.md): `isa.parse` turns PTX text (tinygrad's PTX renderer's or NVRTC's) into
validated kernels, `simt.run` runs one over a grid on numpy lanes against host memory (timed per SM by `timing` on a
`boards` board), `kernel.render` gets the PTX tinygrad's renderer writes for a tinygrad function. Opcode semantics live in
emu.nv.isa, one entry per opcode. mockgpu/nv is the driver that runs it under tinygrad (DEV=MOCK+NV)."""
