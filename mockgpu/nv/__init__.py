"""The NVIDIA mock driver for DEV=MOCK+NV (issue 17, in progress). So far: QMD decoding (`qmd`), the compute launch a QMD
describes (`compute`, on emu.nv) and a channel's method stream (`methods`: host semaphores, compute launches, copies) fed
from a GPFIFO ring (`gpfifo`); the RM/UVM device files and the doorbell page are not written yet."""
