"""dask's statistical profiler on the kernel-side workers: what ``Client.profile`` reads
(``distributed/worker.py``: ``trigger_profile``, ``cycle_profile``, ``get_profile``;
``distributed/profile.py`` for the counting itself).

As dask 2026.8.0's (``distributed.worker.profile``: every 10 ms, cycles of 1 s): every
interval the frames of the threads running tasks are counted into the worker's recent
profile, and into one per key prefix; every cycle the recent profile joins a bounded
history.  ``profile()`` merges the history (between ``start`` and ``stop``), plus the
recent profile when the span reaches now — and answers an empty profile while the history
is empty, as dask's does before a worker's first cycle.  Frames are counted up to the
driver's (``cluster.py``, as dask's stop at ``distributed/worker.py``).

The sampler is a thread of the live network's cluster, as dask's is a callback of each
worker's loop; a stepped network (``immediate``, ``manual``, the explorer) has no clock
to sample by, and says so.  The event loop's and the scheduler's own profiles
(``server=``, ``scheduler=``) and the plots are not modelled.
"""

from __future__ import annotations

import bisect
import sys
import threading
import time
from collections import defaultdict, deque
from typing import TYPE_CHECKING, Any

from .errors import NotModelledError

if TYPE_CHECKING:
    from .cluster import Cluster

_STOP = "jupyter_refs/cluster.py"


class _WorkerProfile:
    def __init__(self, maxlen: int):
        from distributed import profile

        self.recent: dict[str, Any] = profile.create()
        self.keys: defaultdict[str, dict[str, Any]] = defaultdict(profile.create)
        self.history: deque[tuple[float, dict[str, Any]]] = deque(maxlen=maxlen)
        self.keys_history: deque[tuple[float, dict[str, Any]]] = deque(maxlen=maxlen)


class Profiler:
    """The workers' profiles of one live cluster, and the thread that samples them."""

    def __init__(self, cluster: Cluster):
        import dask
        from dask.utils import parse_timedelta

        self.cluster = cluster
        self.interval = parse_timedelta(dask.config.get("distributed.worker.profile.interval"),
                                        default="ms")
        self.cycle = parse_timedelta(dask.config.get("distributed.worker.profile.cycle"),
                                     default="ms")
        maxlen = dask.config.get("distributed.admin.low-level-log-length")
        self.workers: defaultdict[str, _WorkerProfile] = defaultdict(
            lambda: _WorkerProfile(maxlen))
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
        """dask's ``trigger_profile``: the frames of the threads running tasks, counted."""
        from dask.utils import key_split
        from distributed import profile

        runs = [r for r in list(self.cluster._threaded) if not r.done and r.thread]
        if not runs:
            return
        frames = sys._current_frames()
        with self._lock:
            for run in runs:
                frame = frames.get(run.thread)
                if frame is None:
                    continue
                worker = self.workers[run.worker]
                profile.process(frame, True, worker.recent, stop=_STOP)
                profile.process(frame, True, worker.keys[key_split(run.key)], stop=_STOP)

    def _cycle(self) -> None:
        """dask's ``cycle_profile``: the recent profile joins the history."""
        from distributed import profile

        now = time.time()
        with self._lock:
            for name in self.cluster.workers:
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
            istart = 0 if start is None else bisect.bisect_left(history, (start,))
            istop = None
            if stop is not None:
                istop = bisect.bisect_right(history, (stop,)) + 1
                if istop >= len(history):
                    istop = None
            history = list(history)[istart:istop]
            if not history:
                return profile.create()
            prof = profile.merge(*(p for _, p in history))
            if istop is None and (start is None or start < time.time()):
                prof = profile.merge(prof, w.recent if key is None else w.keys[key])
            return prof


def profiler(cluster: Cluster) -> Profiler | None:
    """The cluster's profiler: started with a live cluster's first ask or task (None on a
    stepped network)."""
    if not cluster.live:
        return None
    p = cluster.__dict__.get("_profiler")
    if p is None:
        with cluster.locked():
            p = cluster.__dict__.get("_profiler")
            if p is None:
                p = cluster.__dict__["_profiler"] = Profiler(cluster)
    return p


class ProfileCalls:
    """``Client.profile`` (a mixin of :class:`~jupyter_refs.client.Client`)."""

    cluster: Cluster

    def profile(self, key: Any = None, start: Any = None, stop: Any = None, workers: Any = None,
                merge_workers: bool = True, plot: Any = False, filename: Any = None,
                server: bool = False, scheduler: bool = False) -> Any:
        """The workers' statistical profile (merged, or by worker): see the module's doc."""
        from distributed import profile

        if plot or server or scheduler:
            raise NotModelledError("Client.profile(plot= / server= / scheduler=)",
                                   "the workers' profile of their tasks is modelled")
        p = profiler(self.cluster)
        if p is None:
            raise NotModelledError("Client.profile on a stepped network",
                                   "the live network samples the workers' threads")
        names = self._workers(workers) or list(self.cluster.workers)
        results = [p.get(w, start, stop, key) for w in names]
        if merge_workers:
            return profile.merge(*results)
        return dict(zip(names, results))
