"""dask's ``Adaptive`` on a kernel-side ``LocalCluster``: ``cluster.adapt(minimum=, maximum=)``
scales the cluster between the two by its load (``distributed/deploy/adaptive.py``,
``adaptive_core.py``, and the scheduler's ``adaptive_target`` / ``workers_to_close``).

As dask 2026.8.0's: every ``interval`` (``distributed.adaptive.*``: 1 s) the target is the
scheduler's — the expected time of the tasks processing, by their key prefix's average
duration (``unknown-task-duration`` before one ran, dask's ``default-task-durations``
first), over ``target_duration`` (5 s), at most one worker per task, in workers of the
cluster's threads; asking to close idle workers when the load is less — held between
``minimum`` and ``maximum``.  More workers: ``scale(n)`` at once.  Fewer: a worker must be
picked ``wait_count`` (3) times in a row; then the scheduler retires it (its data copied to
the others, ``retire_workers``) and the cluster closes it.  Each decision is in ``log``.

What the model does not measure is left out of the target, and said here: memory (dask
also scales up when the workers hold more than 60% of their memory limit, and closes a
worker only while the others' memory holds twice the data — the model's workers have no
limit, so memory never asks for more and never keeps a worker) and the cost of moving a
task's dependencies.  ``worker_key`` (closing workers in groups) and the other options of
``workers_to_close`` say they are not modelled.  The cluster's connection to its scheduler
is a client of the model's, ``cluster-manager`` (dask's is an rpc): it shows in the
scheduler's log.  The policy runs on a thread of its own, which holds no futures; a
stepped network has no clock to run it by, and says so.
"""

from __future__ import annotations

import math
import threading
import time
from collections import defaultdict, deque
from typing import TYPE_CHECKING, Any

from . import client_parts
from .errors import NotModelledError

if TYPE_CHECKING:  # a LocalCluster (local_cluster.py makes this module's Adaptive)
    from .cluster import Cluster as LocalCluster


def _never() -> bool:
    return False


def _config(name: str, given: Any) -> Any:
    import dask

    return dask.config.get(f"distributed.adaptive.{name}") if given is None else given


def adaptive_target(cluster: LocalCluster, target_duration: float) -> int:
    """dask's ``Scheduler.adaptive_target``, over the model's scheduler (see the module)."""
    import dask
    from dask.utils import key_split, parse_timedelta

    scheduler = cluster.scheduler
    unknown = parse_timedelta(dask.config.get("distributed.scheduler.unknown-task-duration"))
    defaults = {k: parse_timedelta(v) for k, v in
                dask.config.get("distributed.scheduler.default-task-durations", {}).items()}
    durations = scheduler.durations or {}

    def duration(key: str) -> float:
        prefix = key_split(key)
        known = durations.get(prefix)
        return known if known is not None else defaults.get(prefix, unknown)

    workers = list(scheduler.workers)
    unrunnable = sorted(scheduler.unrunnable)
    occupancy = sum(duration(k) for w in workers for k in scheduler.processing[w])
    queued = sum(duration(k) for k in unrunnable[:100])
    tasks_ready = len(unrunnable)
    if tasks_ready > 100:
        queued *= tasks_ready / 100
    cpu = math.ceil((occupancy + queued) / target_duration)
    for w in workers:  # a few long tasks do not ask for many workers
        if tasks_ready > cpu:
            break
        tasks_ready += len(scheduler.processing[w])
    else:
        cpu = min(tasks_ready, cpu)
    if workers:
        threads = sum(scheduler.nthreads[w] for w in workers)
        cpu = math.ceil(cpu / threads * len(workers))
    if unrunnable and not workers:
        cpu = max(1, cpu)
    if cpu >= len(workers):
        return cpu
    return len(workers) - len(workers_to_close(cluster))


def workers_to_close(cluster: LocalCluster, target: int | None = None) -> list[Any]:
    """dask's ``Scheduler.workers_to_close`` by worker name: idle workers first, those holding
    the least data first, none running a seceded task; down to ``target`` workers, or (no
    target) every idle one, memory being no limit here."""
    from dask.sizeof import sizeof

    scheduler = cluster.scheduler
    workers = list(scheduler.workers)
    n = None if target is None else max(0, len(workers) - target)
    if not n and all(scheduler.processing[w] for w in workers):
        return []
    valid = [w for w in workers if not any(
        t.state == "long-running" for t in cluster.workers[w].tasks.values())]

    def order(w: str) -> tuple[bool, int]:
        held = sum(sizeof(v) for v in cluster.workers[w].data.values())
        return not scheduler.processing[w], -held

    idle = sorted(valid, key=order)
    to_close: list[Any] = []
    remain = len(workers)
    while idle:
        w = idle.pop()
        if n is None and scheduler.processing[w]:
            break
        if n is not None and remain - 1 < (target or 0):
            break
        to_close.append(scheduler.names.get(w, w))
        remain -= 1
    return to_close


class Adaptive:
    """dask's ``Adaptive`` (see the module's doc): ``minimum``, ``maximum``, ``wait_count``,
    ``interval``, ``target_duration``; ``log``, ``state``, ``stop()``."""

    def __init__(self, cluster: LocalCluster, interval: Any = None, minimum: int | None = None,
                 maximum: int | float | None = None, wait_count: int | None = None,
                 target_duration: Any = None, worker_key: Any = None, **kwargs: Any):
        import dask
        import distributed  # noqa: F401 - its config: distributed.adaptive.*, scheduler.*
        from dask.utils import parse_timedelta

        if worker_key is not None or kwargs:
            raise NotModelledError(
                "Adaptive(" + ", ".join([*(["worker_key="] if worker_key is not None else []),
                                         *(f"{k}=" for k in kwargs)]) + ")",
                "minimum, maximum, wait_count, interval and target_duration are modelled")
        if not cluster.live:
            raise NotModelledError("LocalCluster.adapt on a stepped network",
                                   "the live network has the clock the policy runs by")
        self.cluster = cluster
        self.minimum = _config("minimum", minimum)
        self.maximum = _config("maximum", maximum)
        if not isinstance(self.maximum, int) and not math.isinf(self.maximum):
            raise ValueError(f"maximum must be int or inf; got {self.maximum}")
        self.wait_count = _config("wait-count", wait_count)
        self.interval = parse_timedelta(_config("interval", interval), "seconds")
        self.target_duration = parse_timedelta(_config("target-duration", target_duration))
        self.close_counts: defaultdict[Any, int] = defaultdict(int)
        self.log: deque[tuple[float, dict[str, Any]]] = deque(
            maxlen=dask.config.get("distributed.admin.low-level-log-length"))
        self._stopped = threading.Event()
        self._manager: Any = None  # a Client, made on the first scale-down
        self._thread: threading.Thread | None = None
        if not self.interval:
            self.state = "inactive"
            return
        with cluster.locked():
            if cluster.scheduler.durations is None:
                cluster.scheduler.durations = {}
        self.state = "starting"  # dask's: running once its loop takes up the callback
        cluster.grows = self._may_grow
        self._thread = threading.Thread(target=self._run, name="jupyter-refs-adaptive",
                                        daemon=True)
        self._thread.start()

    def _run(self) -> None:
        if self.state != "starting":  # stopped before it started
            return
        self.state = "running"
        self.cluster.scheduler.log.info("Adaptive scaling started: minimum=%s maximum=%s",
                                        self.minimum, self.maximum)
        while not self._stopped.wait(self.interval):
            if self.cluster.closed:
                self.stop("cluster-not-running")
                return
            try:
                self.adapt()
            except Exception:  # noqa: BLE001 - dask's periodic callback logs and goes on
                import logging

                logging.getLogger("distributed.deploy.adaptive").warning(
                    "Adaptive encountered an error while adapting", exc_info=True)

    def stop(self, reason: str = "unknown") -> None:
        """Stop adapting (dask's ``Adaptive.stop``); the cluster stays as it is."""
        if self.state in ("inactive", "stopped"):
            return
        self._stopped.set()
        if self.cluster.grows == self._may_grow:
            self.cluster.grows = _never
        self.cluster.scheduler.log.info(
            "Adaptive scaling stopped: minimum=%s maximum=%s. Reason: %s", self.minimum,
            self.maximum, reason)
        self.state = "stopped"

    def _may_grow(self) -> bool:
        """Whether this policy may still add workers (the cluster's ``grows``)."""
        return self.state in ("starting", "running") and len(self.plan) < self.maximum

    # -- dask's AdaptiveCore -------------------------------------------------------------------

    @property
    def plan(self) -> set[Any]:
        """The workers the cluster has asked for (here: those it has, by name)."""
        with self.cluster.locked():  # scale, in the user's thread, may add one meanwhile
            return {self.cluster.scheduler.names.get(w, w) for w, worker in
                    self.cluster.workers.items() if not worker.closed}

    requested = plan

    @property
    def observed(self) -> set[Any]:
        """The workers the scheduler has, by name."""
        with self.cluster.locked():
            names = self.cluster.scheduler.names
            return {names.get(w, w) for w in self.cluster.scheduler.workers}

    def target(self) -> int:
        with self.cluster.locked():
            return adaptive_target(self.cluster, self.target_duration)

    def safe_target(self) -> int:
        return int(min(max(self.target(), self.minimum), self.maximum))

    def recommendations(self, target: int) -> dict[str, Any]:
        """dask's ``AdaptiveCore.recommendations``: up at once, down after ``wait_count``."""
        plan, observed = self.plan, self.observed
        if target == len(plan):
            self.close_counts.clear()
            return {"status": "same"}
        if target > len(plan):
            self.close_counts.clear()
            return {"status": "up", "n": target}
        to_close = set(list(plan - observed)[:len(plan) - target])
        if target < len(plan) - len(to_close):
            with self.cluster.locked():
                to_close.update(workers_to_close(self.cluster, target))
        firmly = set()
        for w in to_close:
            self.close_counts[w] += 1
            if self.close_counts[w] >= self.wait_count:
                firmly.add(w)
        for k in list(self.close_counts):
            if k in firmly or k not in to_close:
                del self.close_counts[k]
        if firmly:
            return {"status": "down", "workers": list(firmly)}
        return {"status": "same"}

    def adapt(self) -> None:
        """One round: the target, the recommendation, and the scaling it asks for."""
        recommendations = self.recommendations(self.safe_target())
        if recommendations["status"] != "same":
            self.log.append((time.time(), dict(recommendations)))
        status = recommendations.pop("status")
        if status == "up":
            self.cluster.scale(recommendations["n"])
        elif status == "down":
            self.scale_down(recommendations["workers"])

    def scale_down(self, workers: list[Any]) -> None:
        """dask's: the scheduler retires them (their data moved), then the cluster closes
        them."""
        if self._manager is None:
            self._manager = client_parts.make_client(self.cluster, "cluster-manager")
        by_name = {v: k for k, v in self.cluster.scheduler.names.items()}
        addresses = [by_name.get(w, w) for w in workers]
        self._manager.retire_workers(addresses, close_workers=True)
        self.cluster.scale_down(addresses)
