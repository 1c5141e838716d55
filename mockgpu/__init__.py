"""mockgpu: the hardware as tinygrad's runtime sees it (mock KFD/PCI/NV driver interfaces over the emulators in `emu`).

tinygrad imports `test.mockgpu.mockgpu`, `test.mockgpu.usb` and `test.mockgpu.cuda` when DEV names a MOCK interface;
`mockgpu.hook` makes those names resolve to this package. Importing this package is cheap on purpose: the hook runs at
interpreter start-up.
"""
