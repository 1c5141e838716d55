"""Shared helpers for the AMD emulator tests: numpy buffers mapped into a MemoryMap."""
import pytest
from emu.amd.kernel import Buffers

@pytest.fixture
def bufs() -> Buffers: return Buffers()
