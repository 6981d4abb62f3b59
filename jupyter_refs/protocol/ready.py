"""A worker's ready queue: the tasks waiting for a thread, highest priority first.

dask's worker keeps them in a ``HeapSet`` ordered by ``TaskState.priority`` (the scheduler's
``(-user priority, generation, order)``), ties broken by arrival: a task submitted with
``priority=10`` runs before one with ``priority=-10`` that reached the worker first.  A
deque would run them in arrival order.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from itertools import count


class ReadyQueue:
    """Keys by priority (lowest tuple first), then arrival; removal is lazy, as HeapSet's."""

    __slots__ = ("_heap", "_keys", "_count")

    def __init__(self) -> None:
        self._heap: list[tuple[tuple, int, str]] = []
        #: The keys queued, each with the arrival number of its live entry.
        self._keys: dict[str, int] = {}
        self._count = count()

    def clear(self) -> None:
        """Empty (a worker's process ended: what was queued goes with it)."""
        self._heap.clear()
        self._keys.clear()

    def append(self, key: str, priority: tuple = ()) -> None:
        n = next(self._count)
        self._keys[key] = n
        heapq.heappush(self._heap, (priority, n, key))

    def remove(self, key: str) -> None:
        del self._keys[key]  # its heap entry is skipped when it comes up

    def peek(self) -> tuple[tuple, str] | None:
        """The next key and its priority, left queued (None if empty)."""
        heap, keys = self._heap, self._keys
        while heap:
            priority, n, key = heap[0]
            if keys.get(key) == n:
                return priority, key
            heapq.heappop(heap)  # a removed key's entry
        return None

    def popleft(self) -> str:
        heap, keys = self._heap, self._keys
        while True:
            _, n, key = heapq.heappop(heap)
            if keys.get(key) == n:
                del keys[key]
                return key

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def __bool__(self) -> bool:
        return bool(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        """The keys in the order they will run."""
        return iter([k for _, n, k in sorted(self._heap) if self._keys.get(k) == n])
