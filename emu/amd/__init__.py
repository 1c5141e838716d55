"""The AMD GPU emulator (RDNA3 gfx1100 first; RDNA4 and CDNA follow). Public API in `emu.amd.api`."""
