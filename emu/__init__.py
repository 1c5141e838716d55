"""tinygrad-emu's GPU emulators: usable on their own, without mockgpu or tinygrad's runtime."""
