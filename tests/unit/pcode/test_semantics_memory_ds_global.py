"""rdna3 DS / GLOBAL memory semantics over a byte-array VectorMemory (test_ops.Mem): 8/16/32/64/96/128-bit loads and stores,
sign/zero extension, D16 / D16_HI merges, DS offsets (OFFSET bytes; 2ADDR OFFSET0/1 in elements) and atomics returning the
pre-op value. Per abi.py DS ops get the address VGPR in ADDR and add the offset themselves; GLOBAL ops get the final address."""
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.rdna3.enum import DSOp, GLOBALOp
from test_ops import Mem, run, u32
from test_semantics_helpers import lanes

def mem():
  m = Mem(256)
  m.b[:] = np.arange(256, dtype=np.uint8) ^ 0x80  # byte i = i ^ 0x80: bytes 0..127 have the top bit set
  return m

def le(m, a, n): return int.from_bytes(m.b[a:a + n].tobytes(), "little")

@pytest.mark.parametrize("op,n,signed", [(GLOBALOp.GLOBAL_LOAD_U8, 1, False), (GLOBALOp.GLOBAL_LOAD_I8, 1, True),
                                         (GLOBALOp.GLOBAL_LOAD_U16, 2, False), (GLOBALOp.GLOBAL_LOAD_I16, 2, True),
                                         (GLOBALOp.GLOBAL_LOAD_B32, 4, False)], ids=lambda x: getattr(x, "name", ""))
def test_global_load_extension(op, n, signed):
  m = mem()
  addrs = [1, 130, 63, 200]
  got = [int(v) for v in run(op, ADDR=lanes(*addrs), MEM=m).VDATA]
  want = []
  for a in addrs:
    v = le(m, a, n)
    if signed and v >> (8 * n - 1): v -= 1 << (8 * n)
    want.append(v & 0xffffffff)
  assert got == want

def test_global_load_b64_b96_b128():
  m = mem()
  assert [int(v) for v in run(GLOBALOp.GLOBAL_LOAD_B64, ADDR=lanes(8, 100), MEM=m, VDATA=lanes(0, 0)).VDATA] == [le(m, 8, 8), le(m, 100, 8)]
  v = run(GLOBALOp.GLOBAL_LOAD_B96, ADDR=lanes(4, 33), MEM=m).VDATA
  assert v.shape == (2, 3) and [int(x) for x in v[1]] == [le(m, 33, 4), le(m, 37, 4), le(m, 41, 4)]
  v = run(GLOBALOp.GLOBAL_LOAD_B128, ADDR=lanes(64), MEM=m).VDATA
  assert [int(x) for x in v[0]] == [le(m, 64 + 4 * i, 4) for i in range(4)]

@pytest.mark.parametrize("op,lo_half,signed,n", [
  (GLOBALOp.GLOBAL_LOAD_D16_U8, True, False, 1), (GLOBALOp.GLOBAL_LOAD_D16_I8, True, True, 1), (GLOBALOp.GLOBAL_LOAD_D16_B16, True, False, 2),
  (GLOBALOp.GLOBAL_LOAD_D16_HI_U8, False, False, 1), (GLOBALOp.GLOBAL_LOAD_D16_HI_I8, False, True, 1),
  (GLOBALOp.GLOBAL_LOAD_D16_HI_B16, False, False, 2),
], ids=lambda x: getattr(x, "name", ""))
def test_global_load_d16_merges(op, lo_half, signed, n):
  m = mem()
  old = 0xaaaa5555
  for a in (0, 200):  # byte 0 = 0x80 (negative), byte 200 = 0x48
    v = le(m, a, n)
    if signed and v >> (8 * n - 1): v -= 1 << (8 * n)
    v &= 0xffff
    want = (old & 0xffff0000 | v) if lo_half else (v << 16 | old & 0xffff)
    assert int(run(op, ADDR=lanes(a), MEM=m, VDATA=u32(old)).VDATA[0]) == want, a

def test_global_stores_widths_and_d16_hi():
  m = Mem(64)
  run(GLOBALOp.GLOBAL_STORE_B8, ADDR=lanes(0), VDATA=u32(0x12345678), MEM=m)
  run(GLOBALOp.GLOBAL_STORE_B16, ADDR=lanes(2), VDATA=u32(0x12345678), MEM=m)
  run(GLOBALOp.GLOBAL_STORE_D16_HI_B8, ADDR=lanes(1), VDATA=u32(0x00ab0000), MEM=m)
  run(GLOBALOp.GLOBAL_STORE_D16_HI_B16, ADDR=lanes(4), VDATA=u32(0xbeef0000), MEM=m)
  run(GLOBALOp.GLOBAL_STORE_B64, ADDR=lanes(8), VDATA=np.array([0x0102030405060708], np.uint64), MEM=m)
  run(GLOBALOp.GLOBAL_STORE_B96, ADDR=lanes(16), VDATA=np.array([[1, 2, 3]], np.uint32), MEM=m)
  run(GLOBALOp.GLOBAL_STORE_B128, ADDR=lanes(32), VDATA=np.array([[5, 6, 7, 0xffffffff]], np.uint32), MEM=m)
  assert list(m.b[:6]) == [0x78, 0xab, 0x78, 0x56, 0xef, 0xbe] and le(m, 8, 8) == 0x0102030405060708
  assert [le(m, 16 + 4 * i, 4) for i in range(3)] == [1, 2, 3] and le(m, 28, 4) == 0
  assert [le(m, 32 + 4 * i, 4) for i in range(4)] == [5, 6, 7, 0xffffffff]

def test_ds_loads_with_offset_and_extension():
  m = mem()
  assert [int(v) for v in run(DSOp.DS_LOAD_I8, ADDR=lanes(0, 100), OFFSET=3, MEM=m).RETURN_DATA] == [0xffffff83, 0xffffffe7]
  assert [int(v) for v in run(DSOp.DS_LOAD_U16, ADDR=lanes(10), OFFSET=0x10, MEM=m).RETURN_DATA] == [le(m, 26, 2)]
  assert [int(v) for v in run(DSOp.DS_LOAD_I16, ADDR=lanes(0), OFFSET=0, MEM=m).RETURN_DATA] == [le(m, 0, 2) | 0xffff0000]
  assert int(run(DSOp.DS_LOAD_B64, ADDR=lanes(4), OFFSET=4, MEM=m, RETURN_DATA=lanes(0)).RETURN_DATA[0]) == le(m, 8, 8)
  v = run(DSOp.DS_LOAD_B96, ADDR=lanes(0), OFFSET=20, MEM=m).RETURN_DATA
  assert [int(x) for x in v[0]] == [le(m, 20, 4), le(m, 24, 4), le(m, 28, 4)]
  v = run(DSOp.DS_LOAD_B128, ADDR=lanes(16), OFFSET=16, MEM=m).RETURN_DATA
  assert [int(x) for x in v[0]] == [le(m, 32 + 4 * i, 4) for i in range(4)]

def test_ds_load_d16_merges():
  m = mem()  # byte 0 = 0x80, bytes 0..1 = 0x8180
  old = u32(0x12345678)
  assert int(run(DSOp.DS_LOAD_U8_D16, ADDR=lanes(0), OFFSET=0, MEM=m, RETURN_DATA=old).RETURN_DATA[0]) == 0x12340080
  assert int(run(DSOp.DS_LOAD_I8_D16, ADDR=lanes(0), OFFSET=0, MEM=m, RETURN_DATA=old).RETURN_DATA[0]) == 0x1234ff80
  assert int(run(DSOp.DS_LOAD_U16_D16_HI, ADDR=lanes(0), OFFSET=0, MEM=m, RETURN_DATA=old).RETURN_DATA[0]) == 0x81805678
  assert int(run(DSOp.DS_LOAD_I8_D16_HI, ADDR=lanes(0), OFFSET=0, MEM=m, RETURN_DATA=old).RETURN_DATA[0]) == 0xff805678

def test_ds_2addr_offsets_are_in_elements():
  m = Mem(128)
  run(DSOp.DS_STORE_2ADDR_B32, ADDR=lanes(4), OFFSET0=1, OFFSET1=5, DATA=u32(0xaaaaaaaa), DATA2=u32(0xbbbbbbbb), MEM=m)
  assert le(m, 8, 4) == 0xaaaaaaaa and le(m, 24, 4) == 0xbbbbbbbb
  v = run(DSOp.DS_LOAD_2ADDR_B32, ADDR=lanes(0), OFFSET0=2, OFFSET1=6, MEM=m, RETURN_DATA=lanes(0)).RETURN_DATA
  assert int(v[0]) == 0xbbbbbbbb << 32 | 0xaaaaaaaa
  run(DSOp.DS_STORE_2ADDR_STRIDE64_B32, ADDR=lanes(0), OFFSET0=0, OFFSET1=0, DATA=u32(1), DATA2=u32(2), MEM=m)
  assert le(m, 0, 4) == 2  # both at the same address: the second store wins

def test_ds_stores_sub_dword():
  m = Mem(16)
  run(DSOp.DS_STORE_B8, ADDR=lanes(0), OFFSET=1, DATA=u32(0x1234), MEM=m)
  run(DSOp.DS_STORE_B16, ADDR=lanes(2), OFFSET=0, DATA=u32(0xabcdef01), MEM=m)
  run(DSOp.DS_STORE_B16_D16_HI, ADDR=lanes(4), OFFSET=0, DATA=u32(0xabcdef01), MEM=m)
  run(DSOp.DS_STORE_B8_D16_HI, ADDR=lanes(6), OFFSET=0, DATA=u32(0x00770000), MEM=m)
  assert list(m.b[:7]) == [0, 0x34, 0x01, 0xef, 0xcd, 0xab, 0x77]

def test_ds_atomics_return_pre_op_value():
  m = Mem(32)
  m.write([0, 4, 8, 12, 16], [0xfffffffe, 5, 0x80000000, 7, 3], 4)
  st_ = run(DSOp.DS_ADD_RTN_U32, ADDR=lanes(0), OFFSET=0, DATA=u32(3), MEM=m)
  assert int(st_.RETURN_DATA[0]) == 0xfffffffe and le(m, 0, 4) == 1  # wraps
  st_ = run(DSOp.DS_MAX_RTN_I32, ADDR=lanes(4, 8), OFFSET=0, DATA=u32(-1, -1), MEM=m)
  assert list(st_.RETURN_DATA) == [5, 0x80000000] and le(m, 4, 4) == 5 and le(m, 8, 4) == 0xffffffff  # signed compare
  st_ = run(DSOp.DS_MIN_RTN_U32, ADDR=lanes(8), OFFSET=0, DATA=u32(2), MEM=m)
  assert int(st_.RETURN_DATA[0]) == 0xffffffff and le(m, 8, 4) == 2
  # DS_CMPSTORE_RTN_B32: DATA is the new value, DATA2 the compare value (vendor pcode)
  st_ = run(DSOp.DS_CMPSTORE_RTN_B32, ADDR=lanes(12, 16), OFFSET=0, DATA=u32(100, 200), DATA2=u32(7, 4), MEM=m)
  assert list(st_.RETURN_DATA) == [7, 3] and le(m, 12, 4) == 100 and le(m, 16, 4) == 3
  st_ = run(DSOp.DS_STOREXCHG_RTN_B32, ADDR=lanes(12), OFFSET=0, DATA=u32(9), MEM=m)
  assert int(st_.RETURN_DATA[0]) == 100 and le(m, 12, 4) == 9
  st_ = run(DSOp.DS_SUB_RTN_U32, ADDR=lanes(12), OFFSET=0, DATA=u32(10), MEM=m)
  assert int(st_.RETURN_DATA[0]) == 9 and le(m, 12, 4) == 0xffffffff

def test_global_atomics_return_pre_op_value():
  m = Mem(32)
  m.write([0, 8], [41, 0xffffffffffffffff], 8)
  st_ = run(GLOBALOp.GLOBAL_ATOMIC_ADD_U32, ADDR=lanes(0), DATA=u32(1), MEM=m)
  assert int(st_.RETURN_DATA[0]) == 41 and le(m, 0, 4) == 42
  # GLOBAL_ATOMIC_CMPSWAP_B32: DATA[31:0] new value, DATA[63:32] compare value
  st_ = run(GLOBALOp.GLOBAL_ATOMIC_CMPSWAP_B32, ADDR=lanes(0), DATA=lanes(42 << 32 | 7), MEM=m)
  assert int(st_.RETURN_DATA[0]) == 42 and le(m, 0, 4) == 7
  st_ = run(GLOBALOp.GLOBAL_ATOMIC_CMPSWAP_B32, ADDR=lanes(0), DATA=lanes(42 << 32 | 9), MEM=m)
  assert int(st_.RETURN_DATA[0]) == 7 and le(m, 0, 4) == 7
  st_ = run(GLOBALOp.GLOBAL_ATOMIC_ADD_U64, ADDR=lanes(8), DATA=lanes(2), MEM=m)
  assert int(st_.RETURN_DATA[0]) == 0xffffffffffffffff and le(m, 8, 8) == 1
