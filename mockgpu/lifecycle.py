"""The host process's life around the mock GPUs: interrupts, exit, and how long tinygrad waits for them.

A real GPU does not stop when the host is interrupted: Ctrl-C raises KeyboardInterrupt wherever the host thread is (in
tinygrad, almost always its signal wait) while the queues go on, so a dispatch in flight completes exactly once and a later
synchronize sees its result. When the process then exits, the driver destroys its queues. The mock does the same: the
engines run on their own thread (mockgpu.engine.Scheduler), untouched by the interrupt, and if the process exits after
an interrupt while work that was in flight at that interrupt has still not finished, those queues are reset before
tinygrad's own exit handler synchronizes, so the process leaves promptly with tinygrad's "synchronization failed" line
instead of waiting for a runaway kernel's watchdog.

tinygrad waits HCQDEV_WAIT_TIMEOUT_MS (default 30 s) for a signal. When the user has not set it and the emulator's
wall-clock watchdog (EMU_WATCHDOG_S) is longer than that, or off, the mock raises tinygrad's default so that a long
dispatch ends with the watchdog's clear hang fault rather than tinygrad's anonymous wait timeout.
"""
from __future__ import annotations
import atexit, os, signal, sys, threading
from emu.common.watchdog import budget_seconds

WAIT_MARGIN_S = 10       # how much longer than the watchdog tinygrad is told to wait
TINYGRAD_WAIT_S = 30     # tinygrad's default HCQDEV_WAIT_TIMEOUT_MS, in seconds
_in_flight_at_interrupt: dict = {}   # engine -> its read pointer when the host was interrupted
_installed = False

def host_wait_default(env:dict) -> int|None:
  """The HCQDEV_WAIT_TIMEOUT_MS the mock sets when the user has not (None: leave tinygrad's 30 s default)."""
  if "HCQDEV_WAIT_TIMEOUT_MS" in env: return None
  watchdog = budget_seconds(float(env["EMU_WATCHDOG_S"]) if "EMU_WATCHDOG_S" in env else None)
  if watchdog is None: return 2**31 - 1   # no watchdog: tinygrad waits as long as the dispatch runs
  return int((watchdog + WAIT_MARGIN_S) * 1000) if watchdog + WAIT_MARGIN_S > TINYGRAD_WAIT_S else None

def install():
  """Once per process, on first use of a mock device: the wait-timeout default, the interrupt note and the exit reset."""
  global _installed
  if _installed: return
  _installed = True
  if (ms := host_wait_default(os.environ)) is not None: os.environ["HCQDEV_WAIT_TIMEOUT_MS"] = str(ms)
  if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
    signal.signal(signal.SIGINT, _on_sigint)

def _on_sigint(signum, frame):
  note_interrupt()
  signal.default_int_handler(signum, frame)   # KeyboardInterrupt, as without the mock

def note_interrupt():
  """The host was interrupted: remember which queues had work in flight (and where they were). The exit reset is registered
  now, not at install: the mock can be mounted while tinygrad is still importing, before tinygrad registers its own exit
  handler, and exit handlers run last-registered first."""
  from mockgpu.engine import SCHEDULER
  pending = {e: e.rptr for e in list(SCHEDULER.engines) if e.pending()}
  if pending and not _in_flight_at_interrupt: atexit.register(reset_interrupted_work)
  _in_flight_at_interrupt.update(pending)

def reset_interrupted_work() -> int:
  """At exit: reset the queues still on the work they had when the host was interrupted. Returns how many were reset."""
  from mockgpu.engine import SCHEDULER
  stuck = [e for e, rptr in _in_flight_at_interrupt.items() if e.pending() and e.rptr == rptr]
  for e in stuck: e.abort("the process is exiting after an interrupt (Ctrl-C): its queues are destroyed, as the driver does")
  if stuck:
    SCHEDULER.kick()
    print(f"mockgpu: reset {len(stuck)} queue(s) still running work from before the interrupt", file=sys.stderr)
  _in_flight_at_interrupt.clear()
  atexit.unregister(reset_interrupted_work)
  return len(stuck)
