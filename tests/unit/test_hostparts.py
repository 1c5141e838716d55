"""emu.common.hostparts charges each kind of one-off work its own time: a part entered inside another is taken out of the outer
one, on every thread, and an unknown part is refused."""
import threading, time
import pytest
from emu.common import hostparts

def test_an_inner_part_is_taken_out_of_the_outer_one():
  before = hostparts.seconds()
  with hostparts.charged("step build"):
    time.sleep(0.02)
    with hostparts.charged("pcode"): time.sleep(0.05)
  after = hostparts.seconds()
  build, pcode = (after[k] - before[k] for k in ("step build", "pcode"))
  assert 0.05 <= pcode < 0.2 and 0.02 <= build < 0.05   # the outer part's 70 ms less the inner one's 50 ms

def test_parts_add_up_over_threads():
  before = hostparts.seconds()["region compile"]
  def work():
    with hostparts.charged("region compile"): time.sleep(0.03)
  threads = [threading.Thread(target=work) for _ in range(3)]
  for t in threads: t.start()
  for t in threads: t.join()
  assert hostparts.seconds()["region compile"] - before >= 0.09

def test_an_unknown_part_is_refused():
  with pytest.raises(KeyError):
    with hostparts.charged("no such part"): pass
