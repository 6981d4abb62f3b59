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
import threading
import types
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .client import Client, Future
from .client_parts import current_client
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
from .local_cluster import SWITCHED, LocalCluster
from .multi_lock import MultiLock
from .performance_report import performance_report
from .progress import progress
from .task_stream import get_task_stream
from .worker_context import (
    dask_get_client,
    fire_and_forget,
    get_worker,
    rejoin,
    secede,
    worker_client,
)
from .worker_context import print as remote_print
from .worker_context import warn as remote_warn

#: What the switch puts in place of dask's names.
MODEL: dict[str, Any] = {
    "Client": Client, "LocalCluster": LocalCluster, "Future": Future, "wait": wait,
    "as_completed": as_completed, "get_client": dask_get_client, "default_client": current_client,
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


def active() -> bool:
    """Whether the switch is on."""
    return bool(SWITCHED)


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
        SWITCHED.append({"protocol": protocol, "network": network})


def stop() -> None:
    """Put dask's own objects back, exactly as they were."""
    with _lock:
        if not _saved:
            return
        saved = _saved.pop()
        SWITCHED.pop()
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
