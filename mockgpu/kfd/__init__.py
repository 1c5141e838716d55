"""The AMD KFD mock: /dev/kfd, the KFD topology in sysfs, the DRM render nodes, and the GPUs behind them."""
