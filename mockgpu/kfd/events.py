"""KFD events: signal events (mailbox slots in the event page, raised by queue interrupts) and the memory / hardware exception
events that carry fault reports to the process."""
from __future__ import annotations
import ctypes, errno, itertools
from dataclasses import dataclass, field

EVENT_SIGNAL, EVENT_HW_EXCEPTION, EVENT_MEMORY = 0, 3, 8
SIGNAL_SLOTS = 4096                 # KFD_SIGNAL_EVENT_LIMIT: slots in the 0x8000-byte event page
UNSIGNALED = 0xffffffffffffffff     # what an idle mailbox slot holds
FIRST_NONSIGNAL_ID = 0x80000000     # ids of non-signal events live above the slot range

@dataclass
class Event:
  """One event: its kind, reset mode, state, and the exception report it carries (a dict of struct fields)."""
  id: int
  type: int
  auto_reset: bool
  signaled: bool = False
  age: int = 1
  report: dict = field(default_factory=dict)

class EventTable:
  """The process's events plus its event page (a host address holding one 64-bit mailbox per signal slot)."""
  def __init__(self):
    self.events: dict[int, Event] = {}
    self.page_addr: int | None = None
    self._next_nonsignal = itertools.count(FIRST_NONSIGNAL_ID)

  def set_page(self, addr:int):
    """Adopt the event page (CREATE_EVENT's first event_page_offset); every slot starts unsignaled."""
    self.page_addr = addr
    ctypes.memset(addr, 0xff, SIGNAL_SLOTS * 8)

  def create(self, type_:int, auto_reset:bool) -> Event:
    """A new event; signal events take the lowest free mailbox slot as their id (ENOSPC when all are used)."""
    if type_ == EVENT_SIGNAL:
      eid = next((i for i in range(SIGNAL_SLOTS) if i not in self.events), None)
      if eid is None: raise OSError(errno.ENOSPC, "no free signal event slot")
    else: eid = next(self._next_nonsignal)
    self.events[eid] = ev = Event(eid, type_, auto_reset)
    return ev

  def get(self, eid:int) -> Event:
    """The event with id `eid` (EINVAL when there is none, like the driver)."""
    if (ev:=self.events.get(eid)) is None: raise OSError(errno.EINVAL, f"unknown KFD event id {eid}")
    return ev

  def destroy(self, eid:int): self.events.pop(self.get(eid).id)

  def signal(self, ev:Event):
    ev.signaled = True
    ev.age += 1

  def interrupt(self, ctxid:int):
    """A queue interrupt: signal the event named by the context id, and any signal event whose mailbox slot was written."""
    if (ev:=self.events.get(ctxid)) is not None and ev.type == EVENT_SIGNAL: self.signal(ev)
    if self.page_addr is None: return
    slots = (ctypes.c_uint64 * SIGNAL_SLOTS).from_address(self.page_addr)
    for ev in self.events.values():
      if ev.type == EVENT_SIGNAL and slots[ev.id] != UNSIGNALED:
        slots[ev.id] = UNSIGNALED
        self.signal(ev)

  def raise_exception(self, type_:int, report:dict):
    """Deliver a fault report to every exception event of `type_` (the driver signals all of the process's such events)."""
    for ev in self.events.values():
      if ev.type == type_:
        ev.report = report
        self.signal(ev)
