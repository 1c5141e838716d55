"""Synthetic firmware for the PCI boards, and the replacement for tinygrad's firmware download.

tinygrad's AM driver downloads PSP/SMU/SDMA/GC images from linux-firmware and checks each against a pinned sha256
(`tinygrad.helpers.fetch_fw`, called from am/amdev.py); neither the network nor the real images are available to a test
bench, and a synthetic image cannot match those hashes. So `install()` replaces the one function `fetch_fw` in
tinygrad.runtime.support.am.amdev with `fetch`, which serves the images built here by file name. It is the only tinygrad
function the mock replaces; the doctor and docs/mockpci.md say so.

Each image is a real header of the version the file name's part uses (psp v2.0 with a fw_bin table, smc v2.0, sdma v2.0 or
v3.0, RS64 gfx v2.0, imu v1.0, rlc v2.3) around payload segments that carry no code: deterministic bytes naming the image and
segment. The PSP model knows every segment by its PSP firmware type (`Firmware.ip_segments`, `Firmware.sos_components`), so
it can check that the driver parsed the headers and loaded exactly the bytes each firmware type carries.
"""
from __future__ import annotations
import ctypes
from dataclasses import dataclass, field
from mockgpu.pci.boards import GC, MP0, MP1, SDMA0, PCIBoard

SEGMENT_BYTES = 0x1000
RS64_UCODE_START = 0x8000  # the RS64 engines' program-counter start the gfx headers publish (byte address)

def _ver(v:tuple[int, int, int]) -> str: return "_".join(map(str, v))

def _payload(name:str, part:str, size:int=SEGMENT_BYTES) -> bytes:
  tag = f"mockgpu synthetic firmware {name} {part}\0".encode()
  return (tag * (size // len(tag) + 1))[:size]

@dataclass
class _Image:
  """A header struct followed by payload segments at 256-byte aligned offsets."""
  name: str
  header: ctypes.Structure
  body: bytearray = field(default_factory=bytearray)

  def segment(self, part:str, size:int=SEGMENT_BYTES) -> tuple[int, bytes]:
    """Append a segment; returns (offset from the payload start, bytes)."""
    self.body += b"\0" * (-len(self.body) % 256)
    off, data = len(self.body), _payload(self.name, part, size)
    self.body += data
    return off, data

  def common(self, hdr, major:int, minor:int, header_size:int):
    hdr.header_version_major, hdr.header_version_minor, hdr.header_size_bytes = major, minor, header_size
    hdr.ucode_array_offset_bytes = (header_size + 255) // 256 * 256
    hdr.size_bytes = hdr.ucode_array_offset_bytes + len(self.body)

  def bytes(self, array_offset:int) -> bytes:
    raw = bytearray(array_offset) + self.body
    raw[:ctypes.sizeof(self.header)] = bytes(self.header)
    return bytes(raw)

class Firmware:
  """Every image a board's AM driver loads: `images` (file name -> bytes), `ip_segments` (GFX_FW_TYPE -> the bytes a LOAD_IP_FW
  of that type must carry) and `sos_components` (PSP_FW_TYPE -> bytes of the sOS image's components)."""
  def __init__(self, board:PCIBoard):
    from tinygrad.runtime.autogen.am import am
    self.am, self.board = am, board
    self.images: dict[str, bytes] = {}
    self.ip_segments: dict[int, bytes] = {}
    self.sos_components: dict[int, bytes] = {}
    v = board.ip_versions
    self._sos(f"psp_{_ver(v[MP0])}_sos.bin", v[MP0] >= (14, 0, 0))
    self._smu(f"smu_{_ver(v[MP1])}.bin")
    self._sdma(f"sdma_{_ver(v[SDMA0])}.bin", v[SDMA0] >= (7, 0, 0))
    for eng in (["pfp", "me"] if v[GC] >= (12, 0, 0) else []) + ["mec"]: self._rs64(f"gc_{_ver(v[GC])}_{eng}.bin", eng.upper())
    self._imu(f"gc_{_ver(v[GC])}_imu.bin")
    self._rlc(f"gc_{_ver(v[GC])}_rlc.bin")

  def _sos(self, name:str, spl:bool):
    am = self.am
    kinds = [am.PSP_FW_TYPE_PSP_SOS, am.PSP_FW_TYPE_PSP_SYS_DRV, am.PSP_FW_TYPE_PSP_KDB, am.PSP_FW_TYPE_PSP_TOC, am.PSP_FW_TYPE_PSP_SOC_DRV,
             am.PSP_FW_TYPE_PSP_INTF_DRV, am.PSP_FW_TYPE_PSP_DBG_DRV, am.PSP_FW_TYPE_PSP_RAS_DRV] + ([am.PSP_FW_TYPE_PSP_SPL] if spl else [])
    desc_t = am.struct_psp_fw_bin_desc
    hdr_size = ctypes.sizeof(am.struct_common_firmware_header) + 4 + len(kinds) * ctypes.sizeof(desc_t)
    img = _Image(name, am.struct_psp_firmware_header_v2_0())
    descs = []
    for k in kinds:
      off, data = img.segment(am.enum_psp_fw_type.get(k, str(k)))
      descs.append(desc_t(fw_type=k, fw_version=1, offset_bytes=off, size_bytes=len(data)))
      self.sos_components[k] = data
    img.common(img.header.header, 2, 0, hdr_size)
    img.header.psp_fw_bin_count = len(kinds)
    raw = bytearray(img.bytes(img.header.header.ucode_array_offset_bytes))
    base = ctypes.sizeof(am.struct_common_firmware_header) + 4
    for i, d in enumerate(descs): raw[base + i * ctypes.sizeof(desc_t):base + (i + 1) * ctypes.sizeof(desc_t)] = bytes(d)
    self.images[name] = bytes(raw)

  def _smu(self, name:str):
    am = self.am
    img = _Image(name, am.struct_smc_firmware_header_v2_0())
    off, data = img.segment("smu")
    h = img.header.v1_0.header
    img.common(h, 2, 0, ctypes.sizeof(img.header))
    h.ucode_size_bytes = len(data)
    self._finish(img, h.ucode_array_offset_bytes, {am.GFX_FW_TYPE_SMU: data}, off)

  def _sdma(self, name:str, v3:bool):
    am = self.am
    if v3:
      img = _Image(name, am.struct_sdma_firmware_header_v3_0())
      off, data = img.segment("ucode")
      img.common(img.header.header, 3, 0, ctypes.sizeof(img.header))
      img.header.ucode_size_bytes, img.header.ucode_offset_bytes = len(data), off
      return self._finish(img, img.header.header.ucode_array_offset_bytes, {am.GFX_FW_TYPE_SDMA_UCODE_TH0: data}, off)
    img = _Image(name, am.struct_sdma_firmware_header_v2_0())
    ctx_off, ctx = img.segment("ctx")
    ctl_off, ctl = img.segment("ctl")
    img.common(img.header.header, 2, 0, ctypes.sizeof(img.header))
    img.header.ctx_ucode_size_bytes, img.header.ctl_ucode_size_bytes = len(ctx), len(ctl)
    img.header.ctl_ucode_offset = img.header.header.ucode_array_offset_bytes + ctl_off   # an offset into the file, not the payload
    self._finish(img, img.header.header.ucode_array_offset_bytes, {am.GFX_FW_TYPE_SDMA_UCODE_TH0: ctx, am.GFX_FW_TYPE_SDMA_UCODE_TH1: ctl}, ctx_off)

  def _rs64(self, name:str, eng:str):
    am = self.am
    img = _Image(name, am.struct_gfx_firmware_header_v2_0())
    code_off, code = img.segment("ucode")
    data_off, data = img.segment("stack")
    img.common(img.header.header, 2, 0, ctypes.sizeof(img.header))
    arr = img.header.header.ucode_array_offset_bytes
    img.header.ucode_size_bytes, img.header.ucode_offset_bytes = len(code), code_off
    img.header.data_size_bytes, img.header.data_offset_bytes = len(data), arr + data_off   # the stack offset counts from the file start
    img.header.ucode_start_addr_lo, img.header.ucode_start_addr_hi = RS64_UCODE_START, 0
    self._finish(img, arr, {getattr(am, f"GFX_FW_TYPE_RS64_{eng}"): code, getattr(am, f"GFX_FW_TYPE_RS64_{eng}_P0_STACK"): data}, code_off)

  def _imu(self, name:str):
    am = self.am
    img = _Image(name, am.struct_imu_firmware_header_v1_0())
    i_off, iram = img.segment("iram")
    _, dram = img.segment("dram")   # IMU dram immediately follows iram (the driver slices it at iram's end)
    img.common(img.header.header, 1, 0, ctypes.sizeof(img.header))
    img.header.imu_iram_ucode_size_bytes, img.header.imu_dram_ucode_size_bytes = len(iram), len(dram)
    self._finish(img, img.header.header.ucode_array_offset_bytes, {am.GFX_FW_TYPE_IMU_I: iram, am.GFX_FW_TYPE_IMU_D: dram}, i_off)

  def _rlc(self, name:str):
    am = self.am
    img = _Image(name, am.struct_rlc_firmware_header_v2_3())
    segs = {k: img.segment(part) for k, part in ((am.GFX_FW_TYPE_RLC_G, "rlc_g"), (am.GFX_FW_TYPE_RLC_IRAM, "iram"),
            (am.GFX_FW_TYPE_RLC_DRAM_BOOT, "dram"), (am.GFX_FW_TYPE_RLC_P, "rlcp"), (am.GFX_FW_TYPE_RLC_V, "rlcv"))}
    h0 = img.header.v2_2.v2_1.v2_0
    img.common(h0.header, 2, 3, ctypes.sizeof(img.header))
    arr = h0.header.ucode_array_offset_bytes
    h0.header.ucode_size_bytes = len(segs[am.GFX_FW_TYPE_RLC_G][1])
    h2 = img.header.v2_2
    h2.rlc_iram_ucode_offset_bytes, h2.rlc_iram_ucode_size_bytes = arr + segs[am.GFX_FW_TYPE_RLC_IRAM][0], len(segs[am.GFX_FW_TYPE_RLC_IRAM][1])
    dram = segs[am.GFX_FW_TYPE_RLC_DRAM_BOOT]
    h2.rlc_dram_ucode_offset_bytes, h2.rlc_dram_ucode_size_bytes = arr + dram[0], len(dram[1])
    img.header.rlcp_ucode_offset_bytes, img.header.rlcp_ucode_size_bytes = arr + segs[am.GFX_FW_TYPE_RLC_P][0], len(segs[am.GFX_FW_TYPE_RLC_P][1])
    img.header.rlcv_ucode_offset_bytes, img.header.rlcv_ucode_size_bytes = arr + segs[am.GFX_FW_TYPE_RLC_V][0], len(segs[am.GFX_FW_TYPE_RLC_V][1])
    self._finish(img, arr, {k: d for k, (_, d) in segs.items()}, segs[am.GFX_FW_TYPE_RLC_G][0])

  def _finish(self, img:_Image, array_offset:int, segments:dict[int, bytes], first_offset:int):
    assert first_offset == 0, "the header's ucode_array_offset must point at the first segment"
    self.images[img.name] = img.bytes(array_offset)
    self.ip_segments.update(segments)

_FIRMWARE: dict[str, Firmware] = {}

def firmware(board:PCIBoard) -> Firmware:
  """The (cached) firmware set of `board`."""
  if board.arch not in _FIRMWARE: _FIRMWARE[board.arch] = Firmware(board)
  return _FIRMWARE[board.arch]

def fetch(path:str, name:str, sha256:str) -> bytes:
  """Stands in for tinygrad.helpers.fetch_fw: the synthetic image `name` of an emulated board (`sha256`, the real file's hash,
  cannot match a synthetic image and is not checked). Unknown names are an error naming the images there are."""
  for fw in _FIRMWARE.values():
    if path == "amdgpu" and name in fw.images: return fw.images[name]
  known = sorted(n for fw in _FIRMWARE.values() for n in fw.images)
  raise RuntimeError(f"mockgpu: no synthetic firmware {path}/{name} (the emulated boards carry {', '.join(known) or 'none'})")

def install():
  """Point tinygrad's AM driver at `fetch` (the one tinygrad function the PCI mock replaces)."""
  from tinygrad.runtime.support.am import amdev
  amdev.fetch_fw = fetch
