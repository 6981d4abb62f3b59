"""The ready queue runs tasks in the order one heap of ``(priority, arrival)`` would."""

from __future__ import annotations

import heapq
import itertools
import random

from jupyter_refs.protocol.ready import ReadyQueue


class _Heap:
    """The reference: one heap, removal lazy (dask's HeapSet order)."""

    def __init__(self) -> None:
        self.heap: list[tuple[tuple, int, str]] = []
        self.keys: dict[str, int] = {}
        self.count = itertools.count()

    def append(self, key: str, priority: tuple) -> None:
        n = next(self.count)
        self.keys[key] = n
        heapq.heappush(self.heap, (priority, n, key))

    def remove(self, key: str) -> None:
        del self.keys[key]

    def popleft(self) -> str:
        while True:
            _, n, key = heapq.heappop(self.heap)
            if self.keys.get(key) == n:
                del self.keys[key]
                return key

    def order(self) -> list[str]:
        return [k for _, n, k in sorted(self.heap) if self.keys.get(k) == n]


def test_the_order_is_one_heaps_whatever_the_arrivals():
    rng = random.Random(7)
    for _ in range(2000):
        queue, reference = ReadyQueue(), _Heap()
        for _ in range(rng.randint(1, 60)):
            live = list(reference.keys)
            roll = rng.random()
            if roll < 0.5 or not live:
                key = f"k{rng.randint(0, 20)}"
                if key in queue:
                    continue
                # Mostly a graph's (-user priority, generation, order); ties and () too.
                priority = ((rng.choice([0, 0, -1, 1]), rng.randint(0, 2), rng.randint(0, 30))
                            if rng.random() < 0.9 else ())
                queue.append(key, priority)
                reference.append(key, priority)
            elif roll < 0.65:
                key = rng.choice(live)
                queue.remove(key)
                reference.remove(key)
            elif roll < 0.85:
                assert list(queue) == reference.order()
                top = queue.peek()
                assert (top[1] if top else None) == next(iter(reference.order()), None)
            else:
                assert queue.popleft() == reference.popleft()
            assert len(queue) == len(reference.keys)
        while reference.keys:
            assert queue.popleft() == reference.popleft()
        assert not queue and queue.peek() is None


def test_a_graph_sent_last_task_first_runs_first_task_first():
    """The scheduler sends a graph's tasks last first: each goes before the others."""
    queue = ReadyQueue()
    for order in reversed(range(100)):
        queue.append(f"t{order}", (0, 1, order))
    assert [queue.popleft() for _ in range(100)] == [f"t{i}" for i in range(100)]
