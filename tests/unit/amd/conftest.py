"""Shared helpers for the AMD emulator tests: numpy buffers mapped into a MemoryMap."""
import numpy as np
import pytest
from emu.amd.memory import MemoryMap

class Buffers:
  """Numpy arrays mapped into one MemoryMap; keeps them alive for the test."""
  def __init__(self):
    self.mem, self.keep = MemoryMap(), []
  def add(self, arr:np.ndarray, name:str="buf", writable:bool=True) -> int:
    arr = np.ascontiguousarray(arr)
    self.keep.append(arr)
    self.mem.map(arr.ctypes.data, arr.nbytes, name=name, writable=writable, backing=arr.view(np.uint8).reshape(-1))
    return arr.ctypes.data

@pytest.fixture
def bufs() -> Buffers: return Buffers()
