"""Engines behind AMD queues: the PM4 command processor and the SDMA engine, shared by the KFD and PCI mocks."""
