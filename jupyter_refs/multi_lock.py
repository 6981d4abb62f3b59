"""``distributed.MultiLock``: several named locks taken together (``distributed/multi_lock.py``).

As dask 2026.8.0's: ``acquire`` asks the scheduler for ``num_locks`` of the names (all by
default) and waits until it holds them — ``True`` — or its ``timeout`` passes — ``False``,
and it leaves the queues; ``blocking=False`` is a timeout of 0.  Like dask's, a
``MultiLock`` counts itself locked after any ``acquire`` call (dask sets the flag whatever
the answer), and ``release`` of one never acquired is a ``ValueError``.  The scheduler's
side is ``protocol/multi_lock.py``.
"""

from __future__ import annotations

import uuid
from typing import Any

from .client_parts import ask, current_client
from .coordination import answered
from .protocol import messages as m


class MultiLock:
    def __init__(self, names: list[str] | None = None, client: Any = None):
        self.client = current_client(client)
        self.names = list(names or [])
        self.id = uuid.uuid4().hex
        self._locked = False

    def acquire(self, blocking: bool = True, timeout: Any = None,
                num_locks: int | None = None) -> bool:
        """Take the locks (``num_locks`` of them): True, or False at the timeout."""
        from dask.utils import parse_timedelta

        timeout = parse_timedelta(timeout)
        if not blocking:
            if timeout is not None:
                raise ValueError("can't specify a timeout for a non-blocking call")
            timeout = 0
        try:
            result = answered(ask(self.client,
                m.MULTI_LOCK_ACQUIRE, locks=self.names, id=self.id, timeout=timeout,
                num_locks=num_locks or len(self.names)))["value"]
        except TimeoutError:
            result = False
        self._locked = True
        return result

    def release(self) -> None:
        """Give the locks back (``ValueError`` if not acquired)."""
        if not self.locked():
            raise ValueError("Lock is not yet acquired")
        answered(ask(self.client, m.MULTI_LOCK_RELEASE, id=self.id))
        self._locked = False

    def locked(self) -> bool:
        return self._locked

    def __enter__(self) -> MultiLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __reduce__(self) -> tuple:
        return (type(self), (self.names,))
