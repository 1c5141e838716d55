"""The mnemonic grammar (emu/amd/mnemonic.py): prefix, operation words, data types and matrix shape, worked from the vendor's names."""
import pytest
from emu.amd.mnemonic import parse

@pytest.mark.parametrize("name,prefix,words,types,shape", [
  ("V_MAD_U64_U32", "V", ("MAD",), ("U64", "U32"), None),
  ("v_add_f32_e32", "V", ("ADD",), ("F32",), None),                       # any case; encoding suffix dropped
  ("V_CMPX_LT_F16_E64", "V", ("CMPX", "LT"), ("F16",), None),
  ("V_S_EXP_F32", "V_S", ("EXP",), ("F32",), None),                       # RDNA4 scalar transcendental
  ("V_SUB_NC_U32", "V", ("SUB", "NC"), ("U32",), None),                   # V_SUB is not V_S
  ("V_WMMA_F32_16X16X16_F16", "V", ("WMMA",), ("F32", "F16"), (16, 16, 16)),
  ("V_SWMMAC_I32_16X16X32_IU4", "V", ("SWMMAC",), ("I32", "IU4"), (16, 16, 32)),
  ("V_WMMA_F32_16X16X16_FP8_BF8", "V", ("WMMA",), ("F32", "FP8", "BF8"), (16, 16, 16)),
  ("GLOBAL_ATOMIC_CMPSWAP_B64", "GLOBAL", ("ATOMIC", "CMPSWAP"), ("B64",), None),
  ("DS_STORE_2ADDR_B32", "DS", ("STORE", "2ADDR"), ("B32",), None),
  ("BUFFER_STORE_DWORDX4", "BUFFER", ("STORE", "DWORDX4"), (), None),     # gfx9 sizes are words, not types
  ("SCRATCH_LOAD_U8", "SCRATCH", ("LOAD",), ("U8",), None),
  ("S_CBRANCH_SCC1", "S", ("CBRANCH", "SCC1"), (), None),
  ("S_LSHL1_ADD_U32", "S", ("LSHL1", "ADD"), ("U32",), None),
  ("V_MAD_U32_U24", "V", ("MAD",), ("U32", "U24"), None),
])
def test_parse(name, prefix, words, types, shape):
  m = parse(name)
  assert (m.prefix, m.words, m.types, m.shape) == (prefix, words, types, shape)

def test_type_bits_and_operation():
  m = parse("V_WMMA_I32_16X16X16_IU8")
  assert m.type_bits() == (32, 8) and m.operation == "WMMA" and m.has("WMMA") and not m.has("MAD")
  assert parse("GLOBAL_ATOMIC_ADD_U32").operation == "ATOMIC_ADD"
