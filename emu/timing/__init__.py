"""Timing validation against real hardware and SQTT output: trace loading (`traces`), the emulated replay of a traced kernel
(`replay`), the wave-by-wave comparison (`compare`) and its CLI (`python -m emu.timing compare TRACE.pkl | --all`); SQTT streams
encoded from the timing model's timeline (`sqtt_encode`, per-family formats in `sqtt_layouts`)."""
