"""Timing validation against real hardware and SQTT output: trace loading (`traces`), the emulated replay of a traced kernel
(`replay`), the wave-by-wave comparison (`compare`) and its CLI (`python -m emu.timing compare TRACE.pkl | --all`). The SQTT
streams the emulator writes are AMD's formats and live beside the AMD timing model (emu.amd.sqtt_encode, emu.amd.sqtt_layouts)."""
