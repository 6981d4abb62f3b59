"""The threads task runs go on: the live network's, and immediate's runs with a deadline.

Apart from the driver (``cluster.py``), which decides when a task runs and on which slot;
this only hands each run a thread.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable


class WorkerThreads:
    """Worker threads for task runs: an idle one takes the next run, or a new one starts.

    Not a fixed-size executor: a seceded task keeps its thread while its slot goes to
    another task, as dask's executor grows on ``secede()``.  The worker state machine,
    not this pool, decides how many tasks hold a slot.
    """

    def __init__(self, name: str):
        self.name = name
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        self._threads: list[threading.Thread] = []

    def submit(self, fn: Callable[[], None]) -> None:
        with self._lock:
            if self._idle:
                self._idle -= 1  # that idle thread's next item is this one
            else:
                thread = threading.Thread(target=self._loop, daemon=True,
                                          name=f"{self.name}-{len(self._threads)}")
                self._threads.append(thread)
                thread.start()
        self._queue.put(fn)

    def _loop(self) -> None:
        get = self._queue.get
        while True:
            fn = get()
            if fn is None:
                return
            fn()
            with self._lock:
                self._idle += 1

    def shutdown(self) -> None:
        for _ in self._threads:
            self._queue.put(None)
