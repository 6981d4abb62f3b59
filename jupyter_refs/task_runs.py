"""A task's run: its function called with the run current, and the runs on worker threads.

The driver (``cluster.py``) decides when a task runs — its ``execute`` message delivered —
and what the run's end sends.  What lies between lives here: :data:`current_run`, which
``get_client()``, ``secede()`` and ``get_worker()`` read inside a task; :func:`call`, the
user's function run with interrupts open; and :class:`OnThreads`, the runs handed to worker
threads (live, or immediate with a deadline) — which are running, which of them wait inside
a cluster call and for what, which is how the live driver tells a deadlock from a wait.
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from . import interrupts
from .profiler import driver_frame
from .protocol.worker import TaskRun
from .worker_threads import WorkerThreads

#: The run this thread is in, with its cluster: ``(Cluster, TaskRun)``, None outside a task.
current_run: contextvars.ContextVar[tuple[Any, TaskRun] | None] = contextvars.ContextVar(
    "jupyter_refs_current_run", default=None)


@driver_frame
def call(cluster: Any, run: TaskRun) -> tuple[bool, Any]:
    """Call the task's function, the run current: ``(True, value)`` or ``(False, error)``."""
    run.started, run.thread = time.time(), threading.get_ident()
    token = current_run.set((cluster, run))
    gate = interrupts.opened()  # the user's code: an interrupt stops it
    try:
        return True, run.func(*run.args, **run.kwargs)
    except Exception as exc:  # noqa: BLE001 - the user's task failed: report it
        return False, exc
    except KeyboardInterrupt as exc:
        # Interrupted inline (a stepped network runs tasks in the caller's thread): the
        # task fails with it, as with any exception, and the interrupt is raised once the
        # delivery is whole — not in the middle of it, which would leave the task running
        # for ever in its worker's eyes.
        interrupts.defer()
        return False, exc
    finally:
        run.stopped = time.time()
        interrupts.close(gate)
        current_run.reset(token)


class OnThreads:
    """The runs on worker threads (live, or immediate with a deadline), not yet finished.

    Changed under the cluster's lock only; the threads themselves start lazily.
    """

    def __init__(self) -> None:
        #: The runs on threads, not yet finished.
        self.running: set[TaskRun] = set()
        #: Those of them waiting inside a cluster call (live: how a deadlock is seen).
        self.waiting: set[TaskRun] = set()
        #: Those of them whose wait has a timeout (it ends on its own: not a deadlock).
        self.timed: set[TaskRun] = set()
        #: What each of them waits for: one whose wait is over but has not woken yet is not
        #: waiting any more.
        self.until: dict[TaskRun, Callable[[], bool]] = {}
        self._threads: WorkerThreads | None = None

    def start(self, run: TaskRun, fn: Callable[[], None]) -> None:
        """``run`` goes on a worker thread, which calls ``fn``."""
        self.running.add(run)
        if self._threads is None:
            self._threads = WorkerThreads("jupyter-refs-task")
        self._threads.submit(fn)

    def ended(self, run: TaskRun) -> None:
        self.running.discard(run)
        run.done = True

    def unfinished(self) -> list[TaskRun]:
        return [r for r in self.running if not r.done]

    def others(self) -> bool:
        """Runs on threads other than the caller's own (a task waiting must not wait for itself)."""
        mine = current_run.get()
        return any(mine is None or run is not mine[1] for run in self.running)

    def all_waiting(self) -> bool:
        """Every run waits inside a cluster call, for ever and for what has not happened: no
        run will move on its own."""
        return (bool(self.running) and self.running <= self.waiting and not self.timed
                and not any(done() for done in self.until.values()))

    @contextmanager
    def waiting_in(self, run: TaskRun | None, done: Callable[[], bool],
                   timeout: float | None) -> Iterator[None]:
        """``run`` (None: not a task) waits inside a cluster call until ``done()``."""
        if run is None:
            yield
            return
        self.waiting.add(run)
        self.until[run] = done
        if timeout is not None:
            self.timed.add(run)  # its wait ends on its own: no deadlock
        try:
            yield
        finally:
            self.waiting.discard(run)
            self.until.pop(run, None)
            self.timed.discard(run)

    def shutdown(self) -> None:
        """A task still running ends on its own; its thread then stops."""
        if self._threads is not None:
            self._threads.shutdown()
            self._threads = None
