"""An explorer's share as a dask task (``explore(client=…)``): off the worker's profiler, and
stopped once the search lets go of it.

**The profiler.**  A dask worker samples the frames of every thread running a task
(``Worker.trigger_profile``, every ``distributed.worker.profile.interval``, 10 ms by default): it
takes ``sys._current_frames()`` and walks the stacks, holding them meanwhile.  A frame held by
another thread keeps its locals alive after its function returns, so a ``Future`` the
scenario dropped (``del x``, or its return) lives on until the profiler lets go — and the
model's client releases its key then, at a moment set by the profiler's clock, not by the
run's own picks.  Measured on distributed 2026.8: 2 of 18 shares of 3,000 #8576 runs drew
other failures than the same share run here, 3 of 6 at a 1 ms interval, none with the
profiler off; a thread that held the run's frames as the profiler does made every share
differ.  A share whose runs do not replay here would report failures the explorer cannot
show, so while it runs, its thread is not one the worker's profiler (or its call-stack
view) samples.

**Letting go.**  dask cannot stop a task's thread: a future released while its task runs
leaves the task ``cancelled`` on its worker, its thread running on to the end (measured on
distributed 2026.8: a released task stays in ``WorkerState.executing`` until it returns).
A search interrupted in the notebook, or whose own runs raised, releases its shares; each
would otherwise spend its worker's thread on every draw it was given — minutes, for a
search of a million orders.  So a share reads its own task's state between draws
(:func:`wanted`) and returns what it has once the worker no longer runs it.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator

#: How long to wait for the worker's event loop to finish a profile sample it began with
#: this thread still listed: a sample takes milliseconds.
SETTLE_SECONDS = 5.0


@contextlib.contextmanager
def unprofiled() -> Iterator[None]:
    """This thread out of its dask worker's ``active_threads`` for the block (nothing outside a
    worker); restored after, so the task ends as dask expects."""
    try:
        from distributed import get_worker
        worker = get_worker()
    except (ImportError, ValueError):  # not in a dask worker's task: no profiler to leave
        yield
        return
    ident = threading.get_ident()
    lock, active = worker.active_threads_lock, worker.active_threads
    with lock:
        key = active.pop(ident, None)
    if key is not None:
        # A sample that copied the list before the pop may still take this thread's frames:
        # samples run on the worker's event loop, so one callback there after the pop runs
        # after any sample already begun.
        passed = threading.Event()
        try:
            worker.loop.add_callback(passed.set)
        except RuntimeError:  # the worker's loop has closed: no sample can be running
            passed.set()
        passed.wait(SETTLE_SECONDS)
    try:
        yield
    finally:
        if key is not None:
            with lock:
                active[ident] = key


def wanted() -> Callable[[], bool]:
    """Whether the task this thread runs is still wanted: its worker still has it executing
    (a released future's task turns ``cancelled``, then is forgotten).  Always true outside a
    dask worker's task.  A read of the worker's own state, no message: cheap enough to ask
    between draws."""
    try:
        from distributed import get_worker
        worker = get_worker()
    except (ImportError, ValueError):
        return _always
    key, tasks = worker.get_current_task(), worker.state.tasks

    def running() -> bool:
        task = tasks.get(key)
        return task is not None and task.state == "executing"

    return running


def _always() -> bool:
    return True
