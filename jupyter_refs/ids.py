"""Ids for non-hashed keys (``submit(pure=False)``, ``scatter(hash=False)``): race 3.

Julia's ``next_ref_id()`` was ``id = REF_ID[]; REF_ID[] = id + 1``: two threads
creating futures at once could read the same value, and both futures then
aliased one remote value (JuliaLang/julia#42167, Dagger.jl#267).  The legacy
allocator is that read-then-write, with the allocation logged in between — a
call, so the interpreter may switch threads there, as a real one does.
Nothing forces the switch: with enough threads it happens now and then.
The fixed allocator is an atomic fetch-and-add (``next`` on ``itertools.count``
holds the GIL throughout).

Allocators run in the calling thread, outside the cluster's lock: that is
where the race lives.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import count

Record = Callable[..., None]


class RacyIds:
    """Read, log, write: two threads can get the same id."""

    atomic = False

    #: Where each allocation is recorded (``id.alloc``): the cluster's trace, or a test's.
    record: Record

    def __init__(self, record: Record):
        self.record = record
        self._next = 1

    def __call__(self, actor: str) -> int:
        value = self._next
        self.record(actor, "id.alloc", None, value, False)
        self._next = value + 1
        return value


class AtomicIds:
    """Fetch-and-add in one step."""

    atomic = True

    def __init__(self, record: Record):
        self.record = record
        self._count = count(1)

    def __call__(self, actor: str) -> int:
        value = next(self._count)
        self.record(actor, "id.alloc", None, value, True)
        return value
