"""The switch: dask's own code on the kernel-side cluster, unchanged — as moto is for boto3.

``with jupyter_refs.model():`` (``%cluster --model`` in a notebook) puts the model's names in
place of dask's in the modules users import them from, ``distributed`` and
``dask.distributed``: ``from dask.distributed import Client, LocalCluster, wait`` then gives the
model's, ``Client(n_workers=4)`` starts a :class:`LocalCluster` in the kernel, and
``isinstance(f, distributed.Future)`` holds for the model's futures.  Every other public name
of ``distributed`` becomes a stand-in that raises :class:`NotModelledError` naming itself when
used: under the switch no line of the user's reaches real dask without saying so.  Leaving the
switch puts dask's own objects back, exactly.

Names bound before the switch (``from distributed import Client`` in an earlier cell) keep
dask's objects: run the switch first, as moto's decorator comes before the code it mocks.
"""

from __future__ import annotations

import importlib
import math
import os
import threading
import types
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .client import Client, Future, default_client
from .client_admin import wait_for_workers, worker_logs
from .cluster import Cluster
from .coordination import (
    Event,
    Lock,
    Queue,
    Semaphore,
    Variable,
    as_completed,
    futures_of,
    wait,
)
from .errors import NotModelledError
from .multi_lock import MultiLock
from .performance_report import performance_report
from .progress import progress
from .task_stream import get_task_stream
from .worker_context import (
    fire_and_forget,
    get_client,
    get_worker,
    rejoin,
    secede,
    worker_client,
)
from .worker_context import print as remote_print
from .worker_context import warn as remote_warn

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
    switch's (:func:`model`), else ``dask`` on the live network.  Arguments that change
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
        settings = _settings()
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


def _get_client(address: Any = None, timeout: Any = None, resolve_address: bool = True
                ) -> Client:
    """dask's ``get_client``: the worker's client in a task, the default client elsewhere."""
    try:
        return get_client(timeout)
    except ValueError:
        return _default_client()


def _default_client(c: Client | None = None) -> Client:
    """dask's ``default_client``."""
    client = c or default_client()
    if client is None:
        raise ValueError("No clients found\nStart a client and point it to the scheduler "
                         "address\n  from distributed import Client\n  client = Client()\n")
    return client


#: What the switch puts in place of dask's names.
MODEL: dict[str, Any] = {
    "Client": Client, "LocalCluster": LocalCluster, "Future": Future, "wait": wait,
    "as_completed": as_completed, "get_client": _get_client, "default_client": _default_client,
    "worker_client": worker_client, "get_worker": get_worker, "secede": secede, "rejoin": rejoin,
    "fire_and_forget": fire_and_forget, "futures_of": futures_of, "Variable": Variable,
    "Queue": Queue, "Event": Event, "Lock": Lock, "Semaphore": Semaphore,
    "print": remote_print, "warn": remote_warn, "progress": progress,
    "get_task_stream": get_task_stream, "MultiLock": MultiLock,
    "performance_report": performance_report,
}
#: dask's names left as they are: data, not behaviour (its config, exceptions, enums);
#: ``WorkerPlugin``, a base class of no-op hooks whose behaviour is the model's
#: ``register_plugin`` (``plugins.py``); and ``span``, which only annotates the tasks made in
#: it (``dask.annotate(span=...)``) and yields the span's id — what dask's scheduler makes of
#: the annotation (its spans extension, the dashboard) the model has not, and says so where
#: it is asked for (``dask_scheduler.extensions``).
KEPT = frozenset({"config", "dask", "CancelledError", "TimeoutError", "Status",
                  "annotations", "versions", "WorkerPlugin", "span"})
#: The modules users import dask's names from (``distributed.diagnostics``: MemorySampler,
#: SchedulerPlugin, which would otherwise reach real dask unannounced).
MODULES = ("distributed", "dask.distributed", "distributed.diagnostics")


def _needing_distributed() -> dict[str, Any]:
    """The model's names built on dask's own classes (imported when the switch turns on:
    the switch needs distributed anyway)."""
    from .memory_sampler import MemorySampler

    return {"MemorySampler": MemorySampler}


def _stand_in(name: str) -> type:
    """A name of dask's the model does not have: using it says so."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise NotModelledError(f"distributed.{name}", "not available under the model switch")

    return type(name, (), {"__new__": staticmethod(refuse), "__doc__": f"Not modelled: {name}.",
                           "__module__": "jupyter_refs.dropin"})


_lock = threading.RLock()
_saved: list[dict[str, dict[str, Any]]] = []
_stack: list[dict[str, Any]] = []


def _settings() -> dict[str, Any]:
    return _stack[-1] if _stack else {"protocol": "dask", "network": "live"}


def active() -> bool:
    """Whether the switch is on."""
    return bool(_stack)


def start(protocol: str = "dask", network: str = "live") -> None:
    """Turn the switch on (``%cluster --model``); :func:`stop` turns it off.  Nested starts
    stack: each stop undoes one."""
    from .protocol.variants import get_variant

    get_variant(protocol)  # refuse an unknown protocol before anything changes
    replacing = {**MODEL, **_needing_distributed()}
    with _lock:
        saved: dict[str, dict[str, Any]] = {}
        for module_name in MODULES:
            module = importlib.import_module(module_name)
            names = {n for n in getattr(module, "__all__", dir(module)) if not n.startswith("_")
                     and not isinstance(module.__dict__.get(n), types.ModuleType)}
            names = (names | set(replacing)) - KEPT
            saved[module_name] = {n: module.__dict__.get(n, _MISSING) for n in names}
            for name in names:
                setattr(module, name, replacing.get(name) or _stand_in(name))
        _saved.append(saved)
        _stack.append({"protocol": protocol, "network": network})


def stop() -> None:
    """Put dask's own objects back, exactly as they were."""
    with _lock:
        if not _saved:
            return
        saved = _saved.pop()
        _stack.pop()
        for module_name, names in saved.items():
            module = importlib.import_module(module_name)
            for name, value in names.items():
                if value is _MISSING:
                    module.__dict__.pop(name, None)
                else:
                    setattr(module, name, value)


_MISSING = object()


@contextmanager
def model(protocol: str = "dask", network: str = "live") -> Iterator[None]:
    """``with model():`` — dask's code inside runs on the kernel-side cluster, unchanged."""
    start(protocol, network)
    try:
        yield
    finally:
        stop()
