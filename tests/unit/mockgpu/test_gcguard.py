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
