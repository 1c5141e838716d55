"""`DEV=MOCKUSB+AMD`: tinygrad's AM driver reaching a mock PCI GPU through a mock USB3-to-PCIe bridge.

tinygrad imports `test.mockgpu.usb.MockUSB3` in place of its libusb wrapper (`tinygrad.runtime.support.usb.USB3`) whenever DEV
names a MOCK interface. Everything above that class is tinygrad's own: `CustomASM24Controller` speaks the bridge's vendor
requests, `USBPCIDevice` sets the PCIe links up and sizes the BARs, the AM driver boots the GPU over MMIO TLPs, and the
allocator copies through the bridge's SRAM. Below it: `transport` (the USB device handle and its transfers), `bridge` (the
ASM24xx's XDATA, SRAM and TLP engine), `pcie` (the bridges and the GPU's configuration space), and the same mock PCI GPU as
`DEV=MOCKPCI+AMD` (mockgpu/pci), whose engines and shader emulator are the KFD path's. See docs/mockusb.md.
"""
from mockgpu.usb.transport import MockUSB3

__all__ = ["MockUSB3"]
