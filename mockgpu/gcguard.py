"""Keeps Python's cyclic garbage collector off the engine worker thread.

An automatic collection runs on whichever thread happens to allocate when the counters cross their thresholds, and it runs
the finalizers of everything it frees there. On the worker (mockgpu.engine), which executes dispatches, that is fatal
twice over: tinygrad's finalizers wait for the device (`AMDComputeQueue.__del__` frees its page with `nolru`, and the
allocator synchronizes first), i.e. for the very thread they run on, which then hangs until tinygrad's timeout; and a
collection that starts inside the emulator's `np.errstate` (a contextvar set) and runs a finalizer that sets a contextvar
frees the context's HAMT under CPython's feet (python/cpython#148891; measured: tinygrad's 256x256 matmul repeated under
MOCKKFD+AMD segfaulted in 3 of 4 runs).

So once a worker exists, automatic collection stays off by the one switch nobody else touches: generation 0's threshold is 0
(CPython's "collection off"; the allocation counts still advance). `gc.disable()` alone was not enough: tinygrad's
`Tensor.realize` is wrapped in `disable_gc`, which re-enables collection on exit when it was on at entry, while the worker may
still be running that realize's kernels, and a collection due then ran on the worker (measured: the finalizer test of
tests/integration/test_amd_reliability.py failed in 3 of 6 runs). The thresholds found at start (or set later by someone
else) stay the rule for when a collection is due; `enforce()` also keeps `gc.isenabled()` false, so code that asks sees that
collection is not automatic. The collections the interpreter would have made run instead at the host's polls of device memory
(`collect_due`, from every tinygrad `to_mv`: the scheduler's touch hook), on the host's thread and holding none of the mock's
locks, as an automatic collection at one of its allocations would: the same generations, by CPython's threshold rule, and
finalizers never concurrent with the host's own code. A doorbell is no such point: some are rung inside the mock's ioctl
handlers, where a finalizer waiting for the device would deadlock.

Costs: cyclic garbage made while the host does not touch a device waits for its next device access, and a process that
turned collection off on purpose gets these collections anyway (the guard cannot tell its `gc.disable()` from tinygrad's);
gc.get_threshold() reads 0 for generation 0 while the mock runs.
"""
from __future__ import annotations
import gc

def due_generation(thresholds:tuple[int, ...] | None=None) -> int | None:
  """The oldest generation whose collection is due under `thresholds` (default: the interpreter's), or None: CPython's rule
  (gcmodule.c, collect_generations): a generation's counter over its threshold, counting net allocations for generation 0 and
  collections of the next younger one above."""
  counts, thresholds = gc.get_count(), thresholds or gc.get_threshold()
  if thresholds[0] == 0 or counts[0] <= thresholds[0]: return None
  return next((g for g in (2, 1) if counts[g] > thresholds[g]), 0)

class HostCollector:
  """Owns garbage collection while a worker exists (see the module docstring)."""
  def __init__(self):
    self.active = False
    self.thresholds: tuple[int, ...] = gc.get_threshold()   # the rule for when a collection is due (generation 0's may be 0: never)

  def start(self):
    """Idempotent: the first call takes collection over (with the thresholds in force then as the rule)."""
    if not self.active: self.thresholds = gc.get_threshold()
    self.active = True
    self.enforce()

  def enforce(self):
    """Automatic collection off again if it was turned back on (cheap: called on every doorbell, host poll and dispatch)."""
    if not self.active: return
    if gc.isenabled(): gc.disable()
    if (t := gc.get_threshold())[0] != 0:   # ours at start, or someone set new ones: they become the rule
      self.thresholds = t
      gc.set_threshold(0, *t[1:])

  def collect_due(self):
    """On a host thread: turn automatic collection off again and run the collection that is due, if any."""
    if not self.active: return
    self.enforce()
    if (gen := due_generation(self.thresholds)) is not None: gc.collect(gen)

COLLECTOR = HostCollector()
