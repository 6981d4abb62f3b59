"""dask's ``LocalCluster`` on the kernel-side cluster: dask's rules for its shape, and the
protocol and network the switch (``dropin.py``) was turned on with.

Apart from the switch so that ``Client()``, which starts one as dask's does, needs nothing
above ``client.py``: the switch imports the Client, never the other way.
"""

from __future__ import annotations

import math
import os
from typing import Any

from .client_admin import wait_for_workers, worker_logs
from .cluster import Cluster
from .errors import NotModelledError

#: The switch's settings, innermost last (``dropin.start`` pushes, ``stop`` pops): what a
#: ``LocalCluster`` started under it runs, ``{"protocol": …, "network": …}``.
SWITCHED: list[dict[str, Any]] = []

#: dask's ``LocalCluster`` arguments that change nothing a program can observe on the model
#: (a dashboard, logs, ports, directories): accepted and let go.
HARMLESS = frozenset({"dashboard_address", "silence_logs", "host", "ip", "scheduler_port",
                      "worker_dashboard_address", "local_directory", "name", "memory_limit",
                      "protocol_dask", "interface", "security", "blocked_handlers",
                      "service_kwargs", "scheduler_kwargs", "worker_kwargs", "nanny"})


def _cores() -> int:
    """dask's ``CPU_COUNT``: the cores this process may use."""
    try:
        from dask.system import CPU_COUNT
    except ImportError:  # pragma: no cover - dask is a dependency
        return os.cpu_count() or 1
    return CPU_COUNT


def local_shape(n_workers: int | None, threads_per_worker: int | None,
                processes: bool, cores: int | None = None) -> tuple[int, int]:
    """Workers and threads as dask's ``LocalCluster`` picks them on ``cores`` cores (checked on
    2026.8.0: ``deploy/local.py`` and ``nprocesses_nthreads``)."""
    cores = cores or _cores()
    if n_workers is None and threads_per_worker is None:
        if not processes:
            return 1, cores
        if cores <= 4:
            return cores, 1
        workers = min(f for f in range(1, cores + 1) if cores % f == 0 and f >= math.sqrt(cores))
        return workers, cores // workers
    if n_workers is None:
        n_workers = max(1, cores // threads_per_worker) if processes else 1
    if threads_per_worker is None:
        threads_per_worker = max(1, math.ceil(cores / max(1, n_workers)))
    return n_workers, threads_per_worker


class LocalCluster(Cluster):
    """dask's ``LocalCluster`` on the kernel-side cluster: its workers are the model's.

    ``n_workers``, ``threads_per_worker`` and ``processes`` pick the shape as dask does,
    ``resources`` what each worker has
    (``processes`` changes the defaults only: every worker here runs in the kernel, each with
    a client of its own, as worker processes have).  The protocol and network are the
    switch's (``dropin.model``), else ``dask`` on the live network.  Arguments that change
    nothing observable are accepted (:data:`HARMLESS`); any other says it is not modelled.
    """

    def __init__(self, n_workers: int | None = None, threads_per_worker: int | None = None,
                 processes: bool = True, *, asynchronous: bool = False,
                 protocol: str | None = None, network: str | None = None,
                 seed: int | None = None, resources: dict[str, float] | None = None,
                 **kwargs: Any):
        unknown = sorted(set(kwargs) - HARMLESS)
        if unknown:
            raise NotModelledError(f"LocalCluster({', '.join(f'{k}=' for k in unknown)})")
        if asynchronous:
            raise NotModelledError("LocalCluster(asynchronous=True)",
                                   "the kernel-side cluster has no event loop to await on")
        for name, value in (("n_workers", n_workers), ("threads_per_worker", threads_per_worker)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or value < 1):
                raise ValueError(f"{name} must be a positive int, not {value!r}")
        workers, threads = local_shape(n_workers, threads_per_worker, processes)
        settings = SWITCHED[-1] if SWITCHED else {"protocol": "dask", "network": "live"}
        super().__init__(protocol=protocol or settings["protocol"], workers=workers,
                         network=network or settings["network"], seed=seed,
                         threads_per_worker=threads, resources=resources)
        self.processes = processes
        # Worker processes have a nanny; in-process workers none (a closed one stays closed).
        self.nannies = processes
        for worker in self.workers.values():
            worker.nanny = processes

    @property
    def dashboard_link(self) -> str:
        return ""

    def scale(self, n: int | None = None, **kwargs: Any) -> None:
        """dask's ``scale(n)``: up, new workers join; the same size changes nothing; down, the
        newest workers close — and, as on distributed 2026.8.0, nothing is retired first:
        ``SpecCluster`` asks ``retire_workers`` for workers by their spec names, which are not
        addresses, so the scheduler retires none, and each worker's stream simply ends.  Its
        results are computed again elsewhere; data scattered only to it is lost (its futures
        are cancelled).  ``client.retire_workers`` moves the data first."""
        if kwargs or n is None:
            raise NotModelledError(f"LocalCluster.scale({', '.join(map(repr, kwargs)) or n!r})",
                                   "scale(n) with a number of workers is modelled")
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"scale takes a number of workers, not {n!r}")
        live = [name for name, worker in self.workers.items() if not worker.closed]
        if n < len(live):
            self.scale_down(live[n:])
        for _ in range(n - len(live)):
            self.add_worker()

    def scale_down(self, workers: Any) -> None:
        """dask's ``scale_down``: the workers named (by address) close, those still open."""
        with self.call(None) as user_call:
            for name in workers:
                worker = self.workers.get(name)
                if worker is not None and not worker.closed:
                    user_call.send(worker.shutdown("scale-down"))

    def adapt(self, Adaptive: Any = None, minimum: float = 0,  # noqa: N803 - dask's name
              maximum: float = math.inf, minimum_cores: int | None = None,
              maximum_cores: int | None = None, minimum_memory: str | None = None,
              maximum_memory: str | None = None, **kwargs: Any) -> Any:
        """dask's ``SpecCluster.adapt``: scale between ``minimum`` and ``maximum`` workers by
        load (``adaptive.py``); a second call replaces the first, keeping its options.
        ``minimum_cores`` / ``maximum_cores`` count workers of this cluster's threads; the
        memory bounds (the model's workers have no memory limit) and an ``Adaptive`` class
        of one's own say they are not modelled."""
        from .adaptive import Adaptive as ModelAdaptive

        if Adaptive not in (None, ModelAdaptive) or minimum_memory or maximum_memory:
            raise NotModelledError(
                "LocalCluster.adapt(" + ", ".join(
                    [*(["Adaptive="] if Adaptive not in (None, ModelAdaptive) else []),
                     *(["minimum_memory="] if minimum_memory else []),
                     *(["maximum_memory="] if maximum_memory else [])]) + ")",
                "minimum, maximum and the cores bounds are modelled")
        if minimum_cores is not None:
            minimum = max(minimum or 0, math.ceil(minimum_cores / self.threads_per_worker))
        if maximum_cores is not None:
            maximum = min(maximum, math.floor(maximum_cores / self.threads_per_worker))
        previous = getattr(self, "_adaptive", None)
        if previous is not None:
            previous.stop()
        options = getattr(self, "_adaptive_options", {})
        options.update(minimum=minimum, maximum=maximum, **kwargs)
        self._adaptive_options = options
        self._adaptive = ModelAdaptive(self, **options)
        return self._adaptive

    def wait_for_workers(self, n_workers: int, timeout: Any = None) -> None:
        """dask's ``Cluster.wait_for_workers`` (``client_admin.wait_for_workers``)."""
        wait_for_workers(self, n_workers, timeout)

    def close(self) -> None:
        """Close, adapting no more (dask's adaptive stops with its cluster)."""
        adaptive = getattr(self, "_adaptive", None)
        if adaptive is not None:
            adaptive.stop("cluster-not-running")
        super().close()

    def get_logs(self, cluster: bool = True, scheduler: bool = True,
                 workers: Any = True) -> Any:
        """dask's ``Cluster.get_logs``: a ``Logs`` of ``Log`` texts (dask's own classes) — the
        cluster manager's (a ``LocalCluster`` writes none), the scheduler's, and each
        worker's (all, or those of ``workers``), each newest line first."""
        from distributed.utils import Log, Logs

        logs = Logs()
        if cluster:
            logs["Cluster"] = Log("")
        if scheduler:
            with self.locked():
                lines = self.scheduler.log.get()
            logs["Scheduler"] = Log("\n".join(line for _, line in lines))
        if workers:
            chosen = None if workers is True else list(workers)
            for name, lines in worker_logs(self, workers=chosen).items():
                logs[name] = Log("\n".join(line for _, line in lines))
        return logs

    def __repr__(self) -> str:
        return (f"LocalCluster(kernel-side, protocol={self.variant.name}, "
                f"workers={len(self.workers)}, threads per worker={self.threads_per_worker})")
