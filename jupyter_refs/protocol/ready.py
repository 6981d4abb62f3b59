"""A worker's ready queue: the tasks waiting for a thread, highest priority first.

dask's worker keeps them in a ``HeapSet`` ordered by ``TaskState.priority`` (the scheduler's
``(-user priority, generation, order)``), ties broken by arrival: a task submitted with
``priority=10`` runs before one with ``priority=-10`` that reached the worker first.  A
deque would run them in arrival order.

Tasks mostly arrive in priority order or in its reverse (a graph's tasks are numbered in
order, the scheduler sends them last first, and a later graph has a later generation), so the
queue keeps them as a sorted run — a deque, grown at either end — and only a task whose
priority falls inside the run goes in a heap.  The next task is the lower of the two heads:
the order of one heap, without a heap's dozen comparisons of nested priority tuples for each
task put in and taken out of thousands.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Iterator
from itertools import count


class ReadyQueue:
    """Keys by priority (lowest tuple first), then arrival; removal is lazy, as HeapSet's."""

    __slots__ = ("_run", "_heap", "_keys", "_count")

    def __init__(self) -> None:
        #: Entries ``(priority, arrival, key)``, sorted: those that came after every entry
        #: in it (appended) or before (put first).
        self._run: deque[tuple[tuple, int, str]] = deque()
        #: The entries whose priority fell inside the run, as a heap.
        self._heap: list[tuple[tuple, int, str]] = []
        #: The keys queued, each with the arrival number of its live entry.
        self._keys: dict[str, int] = {}
        self._count = count()

    def clear(self) -> None:
        """Empty (a worker's process ended: what was queued goes with it)."""
        self._run.clear()
        self._heap.clear()
        self._keys.clear()

    def append(self, key: str, priority: tuple = ()) -> None:
        n = next(self._count)
        self._keys[key] = n
        run = self._run
        # The entry is the run's last if its priority is not lower (a tie arrived later), its
        # first if lower than the first's: the run stays sorted.
        if not run or priority >= run[-1][0]:
            run.append((priority, n, key))
        elif priority < run[0][0]:
            run.appendleft((priority, n, key))
        else:
            heapq.heappush(self._heap, (priority, n, key))

    def remove(self, key: str) -> None:
        del self._keys[key]  # its entry is skipped when it comes up

    def _first(self) -> tuple[tuple, int, str] | None:
        """The lowest entry still queued, left in place (removed keys' entries are dropped)."""
        run, heap, keys = self._run, self._heap, self._keys
        while True:
            if heap and (not run or heap[0] < run[0]):
                entry = heap[0]
                if keys.get(entry[2]) == entry[1]:
                    return entry
                heapq.heappop(heap)  # a removed key's entry
            elif run:
                entry = run[0]
                if keys.get(entry[2]) == entry[1]:
                    return entry
                run.popleft()
            else:
                return None

    def peek(self) -> tuple[tuple, str] | None:
        """The next key and its priority, left queued (None if empty)."""
        entry = self._first()
        return None if entry is None else (entry[0], entry[2])

    def popleft(self) -> str:
        run, heap, keys = self._run, self._heap, self._keys
        while True:
            if heap and (not run or heap[0] < run[0]):
                _, n, key = heapq.heappop(heap)
            else:
                _, n, key = run.popleft()
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
        keys = self._keys
        return iter([k for _, n, k in sorted([*self._heap, *self._run]) if keys.get(k) == n])
