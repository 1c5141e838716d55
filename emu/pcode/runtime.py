"""Small runtime primitives the generated ops call (imported into every generated module's namespace).

Integer values are raw bits: numpy uint64 arrays in vector ops (signed values sign-extended to 64 bits), Python ints
in scalar/wave ops and for values wider than 64 bits (object arrays in vector ops).
"""
from __future__ import annotations
import numpy as np

M64 = (1 << 64) - 1
_FDT = {16: np.float16, 32: np.float32, 64: np.float64}
_UDT = {16: np.uint16, 32: np.uint32, 64: np.uint64}

def sext(x, w:int):
  """Sign-extend the low w bits of x (uint64 array: result stays 64-bit two's complement; int: a Python int)."""
  s = 1 << (w - 1)
  if isinstance(x, np.ndarray) and x.dtype == np.uint64:
    return x if w == 64 else ((x & np.uint64((1 << w) - 1)) ^ np.uint64(s)) - np.uint64(s)
  return ((x & ((1 << w) - 1)) ^ s) - s

def i64(x):
  """The signed view of a canonical signed value, for comparisons and arithmetic shifts."""
  return x.view(np.int64) if isinstance(x, np.ndarray) and x.dtype == np.uint64 else x

def u64(x):
  """Any integer value as uint64 bits (Python ints stay Python ints, masked to 64 bits)."""
  if isinstance(x, np.ndarray): return x.astype(np.uint64) if x.dtype != object else (x & M64).astype(np.uint64)
  return int(x) & M64

def wide(x):
  """An integer value as Python ints (object array for arrays), for arithmetic wider than 64 bits."""
  if isinstance(x, np.ndarray):
    if x.dtype == object: return x
    if x.ndim == 2: return sum((x[:, k].astype(np.uint64).astype(object) << (32 * k)) for k in range(x.shape[1]))
    return x.astype(np.uint64).astype(object)
  return int(x)

def words(x, nwords:int):
  """A wide value (object array of ints) as an (n, nwords) uint32 array."""
  return np.stack([((x >> (32 * k)) & 0xffffffff).astype(np.uint32) for k in range(nwords)], axis=1)

def _const_shift(s) -> int | None:
  """A shift amount that is one non-negative number for every lane (the common case: a constant), else None."""
  return int(s) if isinstance(s, (int, np.integer)) and s >= 0 else None

def shl(x, s):
  """x << s with shifts of 64 or more giving 0."""
  if isinstance(s, np.ndarray) or isinstance(x, np.ndarray) and x.dtype == np.uint64:
    x = np.asarray(x, dtype=np.uint64)
    if (k := _const_shift(s)) is not None: return x << np.uint64(k) if k < 64 else np.zeros_like(x)
    s = np.asarray(s, dtype=np.uint64)
    return np.where(s < 64, x << (s & np.uint64(63)), np.uint64(0))
  return x << s

def shr(x, s, signed:bool=False):
  """x >> s (arithmetic if signed) with shifts of 64 or more giving 0 (or the sign)."""
  if isinstance(s, np.ndarray) or isinstance(x, np.ndarray) and x.dtype == np.uint64:
    x = np.asarray(x, dtype=np.uint64)
    if (k := _const_shift(s)) is not None:
      if signed: return (x.view(np.int64) >> np.int64(min(k, 63))).view(np.uint64)
      return x >> np.uint64(k) if k < 64 else np.zeros_like(x)
    s = np.minimum(np.asarray(s, dtype=np.uint64), np.uint64(63 if signed else 64))
    if signed: return (x.view(np.int64) >> s.astype(np.int64)).view(np.uint64)
    return np.where(s < 64, x >> (s & np.uint64(63)), np.uint64(0))
  return x >> s

def idiv(a, b, signed:bool):
  """C integer division (truncating); division by zero gives all ones like the hardware's V_DIV emulation paths."""
  if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
    if signed:
      a, b = i64(np.asarray(a, dtype=np.uint64)), i64(np.asarray(b, dtype=np.uint64))
      q = np.where(b == 0, -1, np.abs(a) // np.where(b == 0, 1, np.abs(b)) * np.sign(a) * np.sign(np.where(b == 0, 1, b)))
      return q.astype(np.int64).view(np.uint64)
    a, b = np.asarray(a, dtype=np.uint64), np.asarray(b, dtype=np.uint64)
    return np.where(b == 0, np.uint64(M64), a // np.where(b == 0, np.uint64(1), b))
  if b == 0: return -1 if signed else M64
  q = abs(a) // abs(b)
  return q if (a < 0) == (b < 0) else -q

def imod(a, b, signed:bool):
  """C remainder (sign of the dividend)."""
  return a - idiv(a, b, signed) * b

def f2bits(x, w:int):
  """The raw bits of a float value (bf16 values are kept as float32)."""
  if w == 16 and isinstance(x, np.ndarray) and x.dtype == np.float32 or isinstance(x, np.float32) and w == 16:
    raise TypeError("bf16 bits need bf16_bits()")
  if isinstance(x, np.ndarray): return x.astype(_FDT[w]).view(_UDT[w]).astype(np.uint64)
  return int(np.asarray(x, dtype=_FDT[w]).view(_UDT[w]))

def bits2f(x, w:int):
  """Raw bits (the low w bits of x) as a float of width w."""
  if isinstance(x, np.ndarray):   # (casts between unsigned types wrap: no mask needed; bits already of width w are only viewed)
    return (x if x.dtype.kind == "u" else x & np.uint64((1 << w) - 1)).astype(_UDT[w], copy=False).view(_FDT[w])
  return np.asarray(int(x) & ((1 << w) - 1), dtype=_UDT[w]).view(_FDT[w])[()]

def bf16_from_bits(x):
  """bf16 raw bits -> the value as float32."""
  if isinstance(x, np.ndarray): return ((x & np.uint64(0xffff)) << np.uint64(16)).astype(np.uint32).view(np.float32)
  return np.asarray((int(x) & 0xffff) << 16, dtype=np.uint32).view(np.float32)[()]

def bf16_bits(x):
  """A float32-held value -> bf16 raw bits, round to nearest even (NaN stays NaN, quieted)."""
  b = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
  r = (b + np.uint64(0x7fff) + ((b >> np.uint64(16)) & np.uint64(1))) >> np.uint64(16)
  r = np.where(np.isnan(np.asarray(x, dtype=np.float32)), (b >> np.uint64(16)) | np.uint64(0x40), r) & np.uint64(0xffff)
  return r if isinstance(x, np.ndarray) else int(r)

def tofloat(x, w:int, signed:bool):
  """Numeric conversion of a canonical integer value to a float of width w."""
  dt = _FDT[w]
  if isinstance(x, np.ndarray):
    if x.dtype == object: return np.array([float(v) for v in x], dtype=dt)
    return (x.view(np.int64) if signed else x).astype(dt)
  return dt(x)

def toint(x, w:int, signed:bool):
  """Numeric (truncating, saturating, NaN -> 0) conversion of a float to a canonical integer of width w."""
  lo, hi = (-(1 << (w - 1)), (1 << (w - 1)) - 1) if signed else (0, (1 << w) - 1)
  f = np.nan_to_num(np.trunc(np.asarray(x, dtype=np.float64)), nan=0.0)
  if isinstance(x, np.ndarray):
    v = np.clip(f, lo, hi)
    return v.astype(np.int64).view(np.uint64) if signed else np.where(v >= 2.0**63, (v - 2.0**63).astype(np.uint64) + np.uint64(1 << 63),
                                                                     v.astype(np.uint64).clip(0))
  return int(min(max(float(f), lo), hi))

def where(c, a, b):
  """Per-lane select that keeps the dtype of its operands."""
  return np.where(c, a, b)

def bitset(x, i, v):
  """x with bit i set to v (0/1)."""
  if isinstance(x, np.ndarray) or isinstance(i, np.ndarray) or isinstance(v, np.ndarray):
    i = np.asarray(i, dtype=np.uint64)
    return (np.asarray(x, dtype=np.uint64) & ~(np.uint64(1) << i)) | (np.asarray(v, dtype=np.uint64) << i)
  return (x & ~(1 << i)) | ((int(v) & 1) << i)

def _lanes(mem, mask):
  """The accessor for the lanes `mask` selects: per-lane memories (LDS, scratch) carry a base per lane that must shrink with the batch."""
  return mem.select(mask) if hasattr(mem, "select") else mem

def mread(mem, addr, nbytes:int, n:int, mask=None):
  """MEM[addr] for a batch: addresses of inactive (masked-off) lanes are not touched."""
  addr = np.asarray(addr, dtype=np.uint64)
  if addr.ndim == 0: addr = np.full(n, addr, dtype=np.uint64)
  if mask is None: return mem.read(addr, nbytes)
  out = np.zeros(n, dtype=np.uint64)
  if mask.any(): out[mask] = _lanes(mem, mask).read(addr[mask], nbytes)
  return out

def mread_words(mem, addr, k:int, n:int):
  """MEM[addr], MEM[addr + 4] ... MEM[addr + 4(k-1)] (dwords) for a batch, as (n, k) uint32: in one call where the memory reads
  several dwords at once (`read_words`), else one dword at a time in that order (what the unmerged reads did: emu/pcode/wide_reads.py)."""
  addr = np.asarray(addr, dtype=np.uint64)
  if addr.ndim == 1 and hasattr(mem, "read_words") and (words := mem.read_words(addr, k)) is not None: return words
  out = np.zeros((n, k), np.uint32)
  for i in range(k): out[:, i] = mread(mem, addr + i * 4 if i else addr, 4, n)
  return out

def sread_words(mem, addr:int, k:int) -> int:
  """A scalar op's MEM[addr], MEM[addr + 4] ... MEM[addr + 4(k-1)] (dwords) as one little-endian int: in one call where the memory
  reads several dwords at once (`read_dwords`), else one dword at a time in that order (what the unmerged reads did:
  emu/pcode/wide_reads.py)."""
  if hasattr(mem, "read_dwords") and (v := mem.read_dwords(addr, k)) is not None: return v
  out = 0
  for i in range(k): out |= mem.read((addr + 4 * i) & M64, 4) << (32 * i)
  return out

def mwrite(mem, addr, value, nbytes:int, n:int, mask=None):
  """MEM[addr] = value for a batch, only on active (mask) lanes."""
  addr, value = np.asarray(addr, dtype=np.uint64), np.asarray(value)
  if addr.ndim == 0: addr = np.full(n, addr, dtype=np.uint64)
  value = np.broadcast_to(value.astype(np.uint64) if value.dtype != object else (value & M64).astype(np.uint64), (n,))
  if mask is None: mem.write(addr, value, nbytes)
  elif mask.any(): _lanes(mem, mask).write(addr[mask], value[mask], nbytes)

def vgpr_write(vgpr, lanes, reg, value, mask=None):
  """VGPR[lanes, reg] = value for a batch of one wave's lanes (only where mask is set)."""
  lanes, reg, value = np.broadcast_arrays(np.asarray(lanes, dtype=np.uint64), np.asarray(reg, dtype=np.uint64), np.asarray(value, dtype=np.uint64))
  if mask is not None: lanes, reg, value = lanes[mask], reg[mask], value[mask]
  vgpr[lanes.astype(np.intp), reg.astype(np.intp)] = value.astype(np.uint32)

def pick(arr:list, idx):
  """arr[idx] with a per-lane index into a Python list of per-lane values (indices past the end read the last element:
  such lanes are masked off by the caller's control flow)."""
  return np.choose(np.minimum(np.asarray(idx, dtype=np.uint64), len(arr) - 1).astype(np.intp), arr)

_BYTE_REVERSED = np.array([int(f"{b:08b}"[::-1], 2) for b in range(256)], dtype=np.uint8)

def reverse_bits(x, w:int):
  """The low w bits of x in reverse order."""
  if isinstance(x, np.ndarray) and x.dtype == np.uint64 and w <= 64:
    # all 64 bits reversed (each byte through a table, the byte order swapped), then shifted down to the low w
    r = _BYTE_REVERSED[np.ascontiguousarray(x).view(np.uint8)].view(np.uint64).byteswap()
    return (r >> np.uint64(64 - w)) & np.uint64((1 << w) - 1) if w < 64 else r
  if isinstance(x, np.ndarray):
    r = np.zeros_like(x, dtype=np.uint64)
    for i in range(w): r |= ((x >> np.uint64(i)) & np.uint64(1)) << np.uint64(w - 1 - i)
    return r
  return int(f"{int(x) & ((1 << w) - 1):0{w}b}"[::-1], 2)
