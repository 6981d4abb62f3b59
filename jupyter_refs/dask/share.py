"""An explorer's share as a dask task (``explore(client=…)``): off the worker's profiler, noting
how far it got, and stopped once the search lets go of it.

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
view) samples.  And while any share runs on a worker, the profiler's callback is stopped
there: with no thread of its worker left to sample it returns at once, but it still woke
the worker's event loop a hundred times a second, and each wake took the interpreter from
the share's thread (after the 5 ms switch interval) or the core from another worker's
share.  Measured on #8576's 20,000 draws on two worker processes (2-core machine): 0.65–0.73
CPU-s a share with the callback running, 0.61–0.65 without it — a share forked off this
process alone takes 0.61–0.63 (the search's wall time moved less than its noise).

**Letting go.**  dask cannot stop a task's thread: a future released while its task runs
leaves the task ``cancelled`` on its worker, its thread running on to the end (measured on
distributed 2026.8: a released task stays in ``WorkerState.executing`` until it returns).
A search interrupted in the notebook, or whose own runs raised, releases its shares; each
would otherwise spend its worker's thread on every draw it was given — minutes, for a
search of a million orders.  So a share reads its own task's state between draws
(:func:`going`) and returns what it has once the worker no longer runs it; it notes there how
far it got, which the search reads on the workers to show its progress while it waits.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

#: How long to wait for the worker's event loop to finish a profile sample it began with
#: this thread still listed: a sample takes milliseconds.
SETTLE_SECONDS = 5.0


@contextlib.contextmanager
def unprofiled() -> Iterator[None]:
    """This thread out of its dask worker's ``active_threads`` for the block, and the worker's
    profiler stopped while any share runs there (nothing outside a worker); both restored
    after, so the task ends as dask expects."""
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
    _quiet(worker, +1)
    try:
        yield
    finally:
        _quiet(worker, -1)
        if key is not None:
            with lock:
                active[ident] = key


#: Per worker (by id) in this process: how many shares run there, and whether the search
#: stopped its profiler's callback (set on its event loop, where the callback is stopped).
_QUIET: dict[int, list] = {}
_quiet_lock = threading.Lock()


def _quiet(worker: Any, step: int) -> None:
    """One more share on ``worker`` (``+1``), or one fewer (``-1``): the first stops its
    profiler's callback, the last starts it again if the first stopped it.  Both on the
    worker's event loop, in the order asked (tornado's callbacks are not thread-safe)."""
    callback = getattr(worker, "periodic_callbacks", {}).get("profile")
    if callback is None:
        return
    with _quiet_lock:
        entry = _QUIET.setdefault(id(worker), [0, [False]])
        entry[0] += step
        if entry[0] == 0:
            del _QUIET[id(worker)]
        elif not (step > 0 and entry[0] == 1):
            return  # neither the first share in nor the last out
        stopped = entry[1]

        def stop() -> None:
            stopped[0] = callback.is_running()
            if stopped[0]:
                callback.stop()

        def start() -> None:
            if stopped[0] and not callback.is_running():
                callback.start()

        try:
            worker.loop.add_callback(stop if step > 0 else start)
        except RuntimeError:  # the worker's loop has closed: nothing of it runs any more
            pass


#: How far each share run in this process has got (draws of its own made), by its task's key:
#: what the search reads on every worker (:func:`made`) to show its progress meanwhile.  A
#: share's count stays while its worker keeps its task (its result, until the search lets go).
MADE: dict[str, int] = {}


def going() -> Callable[[int], bool]:
    """For a share's loop, every few draws: ``go(n)`` notes that it has made ``n`` (see
    :data:`MADE`) and says whether to go on — whether its worker still runs its task (a
    released future's task turns ``cancelled``, then is forgotten).  A read of the worker's
    own state, no message: cheap enough to ask between draws.  Outside a dask worker's task,
    always on and noted nowhere."""
    try:
        from distributed import get_worker
        worker = get_worker()
    except (ImportError, ValueError):
        return _always
    key, tasks = worker.get_current_task(), worker.state.tasks
    for old in [k for k in MADE if k not in tasks]:  # shares the worker has forgotten
        MADE.pop(old, None)
    MADE[key] = 0

    def go(n: int) -> bool:
        MADE[key] = n
        task = tasks.get(key)
        return task is not None and task.state == "executing"

    return go


def _always(n: int) -> bool:
    return True


def made(prefix: str) -> int:
    """The draws made so far by the shares in this process whose keys begin with ``prefix`` (one
    search's): run on every worker by ``client.run``, on the worker's event loop."""
    return sum(n for key, n in list(MADE.items()) if key.startswith(prefix))
