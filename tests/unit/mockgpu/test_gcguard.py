"""The collector's policy (mockgpu/gcguard.py): a generation is due when CPython's own automatic collection would run it."""
import gc
import pytest
from mockgpu import gcguard

@pytest.mark.parametrize("counts,want", [((700, 0, 0), None), ((701, 0, 0), 0), ((701, 10, 0), 0), ((701, 11, 0), 1), ((701, 11, 11), 2),
                                         ((701, 3, 11), 2), ((5, 11, 11), None)])
def test_due_generation_follows_the_thresholds(monkeypatch, counts, want):
  monkeypatch.setattr(gc, "get_threshold", lambda: (700, 10, 10))
  monkeypatch.setattr(gc, "get_count", lambda: counts)
  assert gcguard.due_generation() == want

def test_a_zero_threshold_means_collection_is_off(monkeypatch):
  monkeypatch.setattr(gc, "get_threshold", lambda: (0, 10, 10))
  monkeypatch.setattr(gc, "get_count", lambda: (10**6, 99, 99))
  assert gcguard.due_generation() is None

def test_the_collector_turns_automatic_collection_off_by_the_threshold_and_keeps_the_old_rule():
  # tinygrad's disable_gc re-enables collection behind the guard's back: with generation 0's threshold at 0 no automatic
  # collection runs anyway, and the host's collections still follow the thresholds found at start, or set later
  saved, was_enabled = gc.get_threshold(), gc.isenabled()
  try:
    gc.set_threshold(500, 9, 8)
    c = gcguard.HostCollector()
    c.start()
    assert gc.get_threshold() == (0, 9, 8) and not gc.isenabled() and c.thresholds == (500, 9, 8)
    gc.enable()                                   # what disable_gc's __exit__ does
    c.enforce()
    assert not gc.isenabled() and gc.get_threshold()[0] == 0
    gc.set_threshold(300, 4, 4)                   # someone's own thresholds become the rule
    c.enforce()
    assert c.thresholds == (300, 4, 4) and gc.get_threshold() == (0, 4, 4)
    gc.collect()
    junk = [[] for _ in range(400)]               # 400 tracked allocations: over 300, so generation 0 is due
    assert gcguard.due_generation(c.thresholds) == 0 and gcguard.due_generation() is None
    c.collect_due()
    assert gc.get_count()[0] < 300
    del junk
  finally:
    gc.set_threshold(*saved)
    if was_enabled: gc.enable()

def test_a_process_that_turned_collection_off_by_threshold_before_the_mock_gets_no_collections():
  saved, was_enabled = gc.get_threshold(), gc.isenabled()
  try:
    gc.set_threshold(700, 9, 8)
    c = gcguard.HostCollector()   # made at import, like COLLECTOR
    gc.set_threshold(0, 9, 8)     # the process turns collection off, then the mock starts
    c.start()
    junk = [[] for _ in range(2000)]
    before = gc.get_count()[0]
    c.collect_due()
    assert c.thresholds == (0, 9, 8) and gc.get_count()[0] >= before   # nothing collected: its own rule says never
    del junk
  finally:
    gc.set_threshold(*saved)
    if was_enabled: gc.enable()
