"""What every emulated GPU shares: the faults it raises (`faults`), the host memory it may touch (`memory.MemoryMap`) and the
watchdog that ends a runaway dispatch (`watchdog`)."""
