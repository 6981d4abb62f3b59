"""The scheduler's multi-locks: dask's ``MultiLockExtension`` (``distributed/multi_lock.py``).

Each lock name has a queue of requesters (``MultiLock`` ids); a requester at the front of
a name's queue holds that lock, and holds what it asked for once it is at the front of
``num_locks`` of its names (a request takes its names shortest queue first, and stops
queueing once it has enough).  A release leaves every queue it is in, which may complete
the requests behind it; a request whose wait times out leaves its queues the same way.
Sans-IO: an acquire that must wait is parked by the extensions (answered when a later
stimulus completes it), as dask's waits on an ``asyncio.Event``.
"""

from __future__ import annotations

from collections import defaultdict


class MultiLocks:
    def __init__(self) -> None:
        self.locks: dict[str, list[str]] = defaultdict(list)  # name -> requesters, holder first
        self.requests: dict[str, set[str]] = {}  # requester -> the names it queues on
        self.requests_left: dict[str, int] = {}  # requester -> locks it still needs

    def request(self, names: list[str], id: str, num_locks: int) -> bool:  # noqa: A002 - dask's
        """Queue ``id`` on ``names``; whether it holds ``num_locks`` of them at once."""
        if id in self.requests:  # asked again (a parked call looked at once more)
            return self.requests_left[id] == 0
        if not 0 < num_locks <= len(names):
            raise ValueError(f"num_locks must be between 1 and {len(names)}, not {num_locks}")
        self.requests[id] = set(names)
        self.requests_left[id] = num_locks
        ordered = sorted(names, key=lambda name: len(self.locks[name]))
        for i, name in enumerate(ordered):
            self.locks[name].append(id)
            if len(self.locks[name]) == 1:  # it was free
                self.requests_left[id] -= 1
                if self.requests_left[id] == 0:  # enough: stop queueing on the rest
                    self.requests[id] -= set(ordered[i + 1:])
                    return True
        return False

    def held(self, id: str) -> bool:  # noqa: A002 - dask's
        return self.requests_left.get(id) == 0

    def release(self, id: str) -> None:  # noqa: A002 - dask's
        """Leave every queue ``id`` is in (dask's ``_retain_locks``): those behind it move up."""
        for name in self.requests.pop(id, ()):
            queue = self.locks[name]
            if queue and queue[0] == id:
                queue.pop(0)
                if queue:
                    first = queue[0]
                    self.requests_left[first] = max(0, self.requests_left[first] - 1)
            elif id in queue:
                queue.remove(id)
            if not queue:
                del self.locks[name]
        self.requests_left.pop(id, None)
