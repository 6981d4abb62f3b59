"""The scheduler's task stream: dask's ``TaskStreamPlugin``
(``distributed/diagnostics/task_stream.py``), what ``get_task_stream`` reads.

As dask 2026.8.0's: installed the first time a client asks for it (nothing is kept
before), it keeps — up to ``distributed.scheduler.dashboard.*.task-stream-length``, 100 000 —
one record per task that ends on a worker, as the scheduler takes it out of
``processing`` for ``memory`` or ``erred``: the worker's report (its worker, thread,
``startstops``, result size and type, or its error) with the key.  ``collect`` reads by
position since a cursor (the context manager's way) or by time, as dask's.

The times are the driver's (the workers live in it): while the stream is kept, the driver
stamps a run's start and end, and a worker's fetch from another when it is sent and when
its reply arrives (the ``transfer`` entries, before ``compute``).
"""

from __future__ import annotations

from collections import deque
from typing import Any

#: dask's default length (the larger of its two settings).
TASK_STREAM_LENGTH = 100_000


class TaskStream:
    def __init__(self, maxlen: int = TASK_STREAM_LENGTH):
        self.buffer: deque[dict[str, Any]] = deque(maxlen=maxlen)
        self.index = 0

    def record(self, key: str, report: dict[str, Any]) -> None:
        self.buffer.append({**report, "key": key})
        self.index += 1

    def collect(self, start: float | None = None, stop: float | None = None,
                count: int | None = None, start_index: int | None = None) -> list[dict]:
        """dask's ``TaskStreamPlugin.collect`` (``start``/``stop`` as absolute times)."""
        buffer = self.buffer
        if start_index is not None:
            first = max(0, min(start_index - (self.index - len(buffer)), len(buffer)))
            return [buffer[i] for i in range(first, len(buffer))]

        def bisect(target: float, left: int, right: int) -> int:
            while left != right:
                mid = (left + right) // 2
                if max(s["stop"] for s in buffer[mid]["startstops"]) < target:
                    left = mid + 1
                else:
                    right = mid
            return left

        first = bisect(start, 0, len(buffer)) if start is not None else None
        last = bisect(stop, 0, len(buffer)) if stop is not None else None
        if count is not None:
            if first is None and last is None:
                last = len(buffer)
                first = last - count
            elif first is None:
                first = last - count
            elif last is None:
                last = first + count
        first = max(0, first or 0)
        last = min(len(buffer) if last is None else last, len(buffer))
        return [buffer[i] for i in range(first, last)]
