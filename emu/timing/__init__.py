"""Timing validation against real hardware: SQTT trace loading (`traces`), the emulated replay of a traced kernel
(`replay`), the wave-by-wave comparison (`compare`) and its CLI (`python -m emu.timing compare TRACE.pkl | --all`)."""
