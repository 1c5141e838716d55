"""How long a launch takes on the emulated board: a first-order issue model until the per-SM timing model (issue 17) lands.

Each SM has four warp schedulers issuing one warp-instruction per cycle each (NVIDIA's Ampere/Ada/Hopper whitepapers: four
SM sub-partitions per SM). A launch's warp-instructions spread over the SMs its CTAs occupy (one CTA per SM until every SM
has one), so cycles = warp-instructions / (4 x SMs used), at the board's boost clock, plus a fixed launch latency. It ignores
latencies, memory and occupancy: it orders kernels by work and makes timestamps advance with it, nothing finer.
"""
from __future__ import annotations

SCHEDULERS_PER_SM = 4
LAUNCH_LATENCY_S = 2e-6   # host-visible cost of a minimal launch (a few microseconds on current boards)

def launch_seconds(stats, board) -> float:
  """Device seconds for a launch with `stats` (emu.nv.simt.LaunchStats) on `board` (sms, boost_mhz)."""
  sms = max(1, min(board.sms, stats.ctas))
  return LAUNCH_LATENCY_S + stats.warp_instructions / (SCHEDULERS_PER_SM * sms) / (board.boost_mhz * 1e6)
