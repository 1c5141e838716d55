"""Fuzzers for tinygrad-emu: instruction encodings against LLVM's MC layer, tinygrad's x86 ISA renderer against its PYTHON backend.

Run with `python -m fuzz TARGET --time 60 --seed N`; see docs/fuzzing.md.
"""
