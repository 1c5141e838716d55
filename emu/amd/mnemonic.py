"""The grammar of AMD mnemonics: the one place the emulator reads meaning out of an instruction's name.

A mnemonic is `PREFIX_WORDS_TYPES` in the vendor's spelling: V_MAD_U64_U32 is prefix V, operation MAD, types (U64, U32);
V_WMMA_F32_16X16X16_F16 is operation WMMA, types (F32, F16), shape 16x16x16; GLOBAL_ATOMIC_ADD_U32 is prefix GLOBAL, operation
ATOMIC_ADD. Encoding suffixes (_E32, _E64) are not part of it. Everything else that decides by name (timing classes, executor
variants) asks `parse` instead of matching substrings.
"""
from __future__ import annotations
import re
from dataclasses import dataclass
from functools import lru_cache

PREFIXES = ("V_S", "V", "S", "DS", "GLOBAL", "FLAT", "SCRATCH", "BUFFER", "TBUFFER", "IMAGE", "EXP")   # longest first
TYPE = re.compile(r"(?:BF|FP|IU|F|B|I|U)(\d+)")     # F32 BF16 FP8 IU8 B128 I4 ...
SHAPE = re.compile(r"(\d+)X(\d+)X(\d+)")            # 16X16X16
ENCODING_SUFFIX = re.compile(r"_E(32|64)$")

@dataclass(frozen=True)
class Mnemonic:
  """One parsed mnemonic (see the module docstring)."""
  name: str                         # without the encoding suffix
  prefix: str
  words: tuple[str, ...]            # the operation's words, in order (types and shape removed)
  types: tuple[str, ...]            # data-type tokens, in order: destination first where the vendor names one
  shape: tuple[int, int, int] | None = None   # matrix ops: M, N, K

  @property
  def operation(self) -> str: return "_".join(self.words)

  def type_bits(self) -> tuple[int, ...]:
    """The widths of the type tokens (F32 -> 32, B128 -> 128, FP8 -> 8)."""
    return tuple(int(TYPE.fullmatch(t)[1]) for t in self.types)

  def has(self, *words:str) -> bool:
    """Whether every one of `words` is an operation word."""
    return all(w in self.words for w in words)

@lru_cache(maxsize=None)
def parse(name:str) -> Mnemonic:
  """The Mnemonic of an opcode name in any case, with or without its encoding suffix."""
  name = ENCODING_SUFFIX.sub("", name.upper())
  prefix = next((p for p in PREFIXES if name == p or name.startswith(p + "_")), "")
  words, types, shape = [], [], None
  for tok in name[len(prefix):].lstrip("_").split("_") if name[len(prefix):] else ():
    if TYPE.fullmatch(tok): types.append(tok)
    elif (m := SHAPE.fullmatch(tok)): shape = (int(m[1]), int(m[2]), int(m[3]))
    else: words.append(tok)
  return Mnemonic(name, prefix, tuple(words), tuple(types), shape)
