"""USB (the AMD USB4/ASM24xx bridge path) is not emulated. The module must import for every mock path: tinygrad imports
`test.mockgpu.usb.MockUSB3` whenever DEV names a MOCK interface, even when USB is never used."""

class MockUSB3:
  """Stands in for tinygrad's USB3 class; constructing it means DEV asked for a USB device, which the bench does not emulate."""
  def __init__(self, *args, **kwargs):
    raise RuntimeError("mockgpu: USB devices (MOCKUSB+AMD) are not emulated; use DEV=MOCKKFD+AMD (or MOCK+AMD)")
