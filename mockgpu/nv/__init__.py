"""The NVIDIA mock driver for DEV=MOCK+NV (issue 17, in progress). So far: QMD decoding (`qmd`) and the compute launch a QMD
describes (`compute`), run on emu.nv; the RM/UVM device files, GPFIFO processing and semaphores are not written yet."""
