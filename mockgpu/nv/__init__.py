"""The NVIDIA mock driver for DEV=MOCK+NV (docs/mockgpu-nv.md): RM escapes and controls (`rm`, `controls`), UVM (`uvm`), the
device files (`driver`), boards (`boards`), GPUs and their channels (`gpu`, `gpfifo`), method streams, QMDs and launches on
emu.nv (`methods`, `qmd`, `compute`)."""
