"""The AM driver's view of an AMD GPU over PCI (DEV=MOCKPCI+AMD): sysfs device, BARs, registers, firmware handshakes, page tables."""
