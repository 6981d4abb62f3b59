"""dask's statistical profiler on the kernel-side workers: what ``Client.profile`` reads
(``distributed/worker.py``: ``trigger_profile``, ``cycle_profile``, ``get_profile``;
``distributed/profile.py`` counts, with dask's own ``process``, ``merge`` and ``create``).

As dask 2026.8.0's (``distributed.worker.profile``: every 10 ms, cycles of 1 s): every
interval the stacks of the threads running tasks are counted into the worker's recent
profile, and into one per key prefix; every cycle the recent profile joins a bounded history
(``distributed.admin.low-level-log-length``).  ``profile()`` merges the history between
``start`` and ``stop``, plus the recent profile when the span reaches now — and answers an
empty profile while the history is empty, as dask's does before a worker's first cycle.  A
stack is counted from the task's function down, as dask's stops at ``distributed/worker.py``:
the driver's frames above the task (``cluster.py``'s call, ``client.py``'s graph node) are
left out, the model's frames below it (a task waiting in ``gather``) are counted as dask
counts ``distributed/client.py``'s.

The sampler is a thread of the live network's cluster, as dask's is a callback of each
worker's loop.  It touches no future and keeps no frame: it takes the frames of the task
threads alone (the others' are let go inside one C call, before any other thread runs),
copies each stack into plain records (code object, line) and lets the frames go at once;
dask's ``process`` then counts the copies.  A frame that ended meanwhile has its locals
finalized in the sampler, as dask's profile thread finalizes them: the model's
``Future.__del__`` only queues the release for the cluster's next safe point, as dask's
schedules it on its loop.

Stacks are counted once distributed is imported (the switch imports it; ``Client.profile``
does).  A stepped network (``immediate``, ``manual``, the explorer) has no clock to sample by
and says so; the event loop's and the scheduler's own profiles (``server=``, ``scheduler=``) and
the plots (``plot=``, ``filename=``) are not modelled, and say so.
"""

from __future__ import annotations

import bisect
import importlib.util
import sys
import threading
import time
from collections import defaultdict, deque
from typing import Any, NamedTuple, Protocol

from .errors import NotModelledError


class Profiled(Protocol):
    """What the profiler reads of its cluster (a ``Cluster``; this module imports none)."""

    workers: dict[str, Any]
    profiler: Profiler | None

    def running(self) -> list[Any]: ...


#: Whether live clusters profile their workers: dask's counting is distributed's own.
PROFILING = importlib.util.find_spec("distributed") is not None


class _Frame(NamedTuple):
    """A frame's copy: what dask's ``process`` reads of one — its code, line and module
    globals (for the source line), never its locals."""

    f_code: Any
    f_lineno: int | None
    f_lasti: int
    f_globals: dict[str, Any]
    f_back: _Frame | None


#: The code of the driver's frames a task runs under (a stack is cut above them), marked by
#: the modules that own them (:func:`driver_frame`): this module imports neither.
_DRIVER: set[Any] = set()


def driver_frame(func: Any) -> Any:
    """Mark ``func`` as a frame of the driver's that tasks run under (``task_runs.call``,
    ``client.py``'s graph node): a profile's stack starts below it."""
    _DRIVER.add(func.__code__)
    return func


def _copy(frame: Any, driver: frozenset[Any]) -> _Frame | None:
    """The stack from ``frame`` up to the task's function, as plain records."""
    chain = []
    while frame is not None and frame.f_code not in driver:
        chain.append((frame.f_code, frame.f_lineno, frame.f_lasti, frame.f_globals))
        frame = frame.f_back
    if frame is None:  # not a task's stack (the run ended meanwhile)
        return None
    copy = None
    for code, line, lasti, module in reversed(chain):
        copy = _Frame(code, line, lasti, module, copy)
    return copy


class _WorkerProfile:
    def __init__(self, maxlen: int | None):
        from distributed import profile

        self.recent: dict[str, Any] = profile.create()
        self.keys: defaultdict[str, dict[str, Any]] = defaultdict(profile.create)
        self.history: deque[tuple[float, dict[str, Any]]] = deque(maxlen=maxlen)
        self.keys_history: deque[tuple[float, dict[str, Any]]] = deque(maxlen=maxlen)


class Profiler:
    """The workers' profiles of one live cluster, and the thread that samples them."""

    def __init__(self, cluster: Profiled):
        import dask
        from dask.utils import parse_timedelta

        self.cluster = cluster
        # distributed's defaults where its config is not loaded yet (see _sample)
        self.interval = parse_timedelta(
            dask.config.get("distributed.worker.profile.interval", "10ms"), default="ms")
        self.cycle = parse_timedelta(
            dask.config.get("distributed.worker.profile.cycle", "1000ms"), default="ms")
        maxlen = dask.config.get("distributed.admin.low-level-log-length", 1000)
        self.workers: defaultdict[str, _WorkerProfile] = defaultdict(
            lambda: _WorkerProfile(maxlen))
        self._driver = frozenset(_DRIVER)
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="jupyter-refs-profiler",
                                        daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """End the sampler (the cluster closes); the profiles stay readable."""
        self._stopped.set()
        if self._thread is not threading.current_thread():
            self._thread.join()

    def _run(self) -> None:
        next_cycle = time.time() + self.cycle
        while not self._stopped.wait(self.interval):
            self._sample()
            if time.time() >= next_cycle:
                self._cycle()
                next_cycle += self.cycle

    def _sample(self) -> None:
        """dask's ``trigger_profile``: the stacks of the threads running tasks, counted —
        once distributed is imported (the switch imports it; a background thread importing
        it would set up its logging behind the user's back)."""
        if "distributed.profile" not in sys.modules:
            return
        from dask.utils import key_split
        from distributed import profile

        runs = [r for r in self.cluster.running() if r.thread]
        if not runs:
            return
        # One C call: every other thread's frame is let go before another thread can run.
        frames = list(map(sys._current_frames().get, [r.thread for r in runs]))
        stacks = [_copy(f, self._driver) if f is not None else None for f in frames]
        del frames
        with self._lock:
            for run, stack in zip(runs, stacks, strict=True):
                if stack is None:
                    continue
                worker = self.workers[run.worker]
                profile.process(stack, True, worker.recent)
                profile.process(stack, True, worker.keys[key_split(run.key)])

    def _cycle(self) -> None:
        """dask's ``cycle_profile``: the recent profile joins the history."""
        if "distributed.profile" not in sys.modules:
            return
        from distributed import profile

        now = time.time()
        with self._lock:
            for name in list(self.cluster.workers):
                w = self.workers[name]
                prof, w.recent = w.recent, profile.create()
                w.history.append((now, prof))
                w.keys_history.append((now, dict(w.keys)))
                w.keys.clear()

    def get(self, worker: str, start: float | None, stop: float | None,
            key: str | None) -> dict[str, Any]:
        """dask's ``Worker.get_profile``."""
        from distributed import profile

        with self._lock:
            w = self.workers[worker]
            history: Any = w.history if key is None else [
                (t, d[key]) for t, d in w.keys_history if key in d]
            times = [t for t, _ in history]
            istart = 0 if start is None else bisect.bisect_left(times, start)
            istop = None
            if stop is not None:
                istop = bisect.bisect_right(times, stop) + 1
                if istop >= len(history):
                    istop = None
            history = list(history)[istart:istop]
            if not history:
                return profile.create()
            prof = profile.merge(*(p for _, p in history))
            if istop is None and (start is None or start < time.time()):
                prof = profile.merge(prof, w.recent if key is None else w.keys[key])
            return prof


class ProfileCalls:
    """``Client.profile`` (a mixin of :class:`~jupyter_refs.client.Client`)."""

    cluster: Profiled

    def profile(self, key: Any = None, start: Any = None, stop: Any = None, workers: Any = None,
                merge_workers: bool = True, plot: Any = False, filename: Any = None,
                server: bool = False, scheduler: bool = False) -> Any:
        """The workers' statistical profile (merged, or by worker): see the module's doc."""
        from distributed import profile

        if plot or filename or server or scheduler:
            raise NotModelledError("Client.profile(plot= / filename= / server= / scheduler=)",
                                   "the workers' profile of their tasks is modelled")
        p = self.cluster.profiler
        if p is None:
            raise NotModelledError("Client.profile on a stepped network",
                                   "the live network samples the workers' threads")
        names = self._workers(workers) or list(self.cluster.workers)  # type: ignore[attr-defined]
        results = [p.get(w, start, stop, key) for w in names]
        if merge_workers:
            return profile.merge(*results)
        return dict(zip(names, results, strict=True))
