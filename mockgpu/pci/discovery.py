"""The IP-discovery binary a PCI board keeps at the end of VRAM, in the layout tinygrad's AM driver parses (am/amdev.py).

Layout (amdgpu's discovery format, structs from tinygrad's autogen `am` module): a binary header whose table list points at
an ip_discovery v4 header (one die), the die's ip_v4 entries (hw id, instance, version, 32-bit register base per segment) and
a gc_info v1.0 table (shader engines, arrays, WGPs, LDS, waves). No harvest table: every block is present. Register bases
are tinygrad's navi_offsets values, the same numbers its PM4 packets use for GC registers, so host and packets agree.
"""
from __future__ import annotations
import ctypes, importlib
from mockgpu.pci.boards import BASE_NAMES, GC, PCIBoard

TABLE_OFFSET_FROM_END = 64 << 10   # the driver reads the table at VRAM size - 64 KB
TABLE_BYTES = 10 << 10              # ... and 10 KB of it

SEGMENTS = 6                 # bases per block: register modules address segments 0-5 (NBIO/NBIF use segment 5)
UNLISTED_SEGMENT_BASE = 0x0300_0000   # bases for segments navi_offsets does not list: past every listed one, so they alias nothing

def register_bases(hwid:int) -> tuple[int, ...]:
  """The register base of each segment of instance 0 of block `hwid` (navi_offsets; segments it does not list get a base of their
  own above every listed one, so a register there never aliases another block's)."""
  offs = importlib.import_module("tinygrad.runtime.autogen.am.navi_offsets")
  return tuple(getattr(offs, f"{BASE_NAMES[hwid]}_BASE__INST0_SEG{s}", UNLISTED_SEGMENT_BASE + (hwid << 16) + (s << 12)) for s in range(SEGMENTS))

def _checksum(data:bytes) -> int: return sum(data) & 0xffff

def build(board:PCIBoard) -> bytes:
  """The discovery binary for `board` (TABLE_BYTES long)."""
  from tinygrad.runtime.autogen.am import am
  blob = bytearray(TABLE_BYTES)
  ip_off, die_off, gc_off = 0x100, 0x200, 0x1000
  # die: header, then per IP an 8-byte entry (the 7-byte ip_v4 plus its flags byte) and its 32-bit bases
  ips = b""
  for hwid, ver in sorted(board.ip_versions.items()):
    bases = register_bases(hwid)
    ent = am.struct_ip_v4(hw_id=hwid, instance_number=0, num_base_address=len(bases), major=ver[0], minor=ver[1], revision=ver[2])
    ips += bytes(ent) + b"\0" + b"".join(b.to_bytes(4, "little") for b in bases)
  die = bytes(am.struct_die_header(die_id=0, num_ips=len(board.ip_versions))) + ips
  blob[die_off:die_off + len(die)] = die
  ihdr = am.struct_ip_discovery_header(signature=am.DISCOVERY_TABLE_SIGNATURE, version=4, size=die_off + len(die) - ip_off, id=0, num_dies=1,
                                       base_addr_64_bit=0)
  ihdr.die_info[0].die_id, ihdr.die_info[0].die_offset = 0, die_off
  blob[ip_off:ip_off + ctypes.sizeof(ihdr)] = bytes(ihdr)
  k = board.kfd
  wgp_per_sa = k.cus // (k.shader_engines * k.arrays_per_engine) // 2
  gc = am.struct_gc_info_v1_0(gc_num_se=k.shader_engines, gc_num_wgp0_per_sa=wgp_per_sa, gc_num_wgp1_per_sa=0, gc_num_rb_per_se=4,
    gc_num_gl2c=16, gc_num_gprs=1536, gc_num_max_gs_thds=32, gc_wave_size=k.wave_size, gc_max_waves_per_simd=k.max_waves_per_simd,
    gc_max_scratch_slots_per_cu=k.max_slots_scratch_cu, gc_lds_size=k.lds_kb, gc_num_sc_per_se=1, gc_num_sa_per_se=k.arrays_per_engine,
    gc_num_packer_per_sc=4, gc_num_gl2a=4)
  gc.header.table_id, gc.header.version_major, gc.header.version_minor, gc.header.size = GC, 1, 0, ctypes.sizeof(gc)
  blob[gc_off:gc_off + ctypes.sizeof(gc)] = bytes(gc)
  bhdr = am.struct_binary_header(binary_signature=am.BINARY_SIGNATURE, version_major=1, version_minor=0, binary_size=TABLE_BYTES)
  for table, off, size in ((am.IP_DISCOVERY, ip_off, ihdr.size), (am.GC, gc_off, ctypes.sizeof(gc))):
    bhdr.table_list[table].offset, bhdr.table_list[table].size = off, size
    bhdr.table_list[table].checksum = _checksum(bytes(blob[off:off + size]))
  blob[:ctypes.sizeof(bhdr)] = bytes(bhdr)
  bhdr.binary_checksum = _checksum(bytes(blob[ctypes.sizeof(bhdr):]))
  blob[:ctypes.sizeof(bhdr)] = bytes(bhdr)
  return bytes(blob)
