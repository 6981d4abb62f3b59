"""What ``get_worker()`` in a task (and ``dask_worker`` in ``Client.run``) sees of a worker.

dask hands the ``Worker`` object itself; the model's worker is a sans-IO state machine, so
this is a view of it under dask's names, for what a user's code reads there: ``address``
(what ``scheduler_info()["workers"]`` is keyed by), ``name`` (a ``LocalCluster`` names its
workers 0, 1, …), ``status``, ``data``, ``nthreads``, ``get_current_task()``,
``log_event()``, ``scheduler`` (an rpc with the scheduler's address), the
transfer logs (on the live network, whose driver times them) and, of ``state`` (dask's
``WorkerState``), how many tasks are ready and executing: what a task that waits for the
tasks queued behind it reads.
Anything else of dask's ``Worker`` raises :class:`NotModelledError`
naming it, rather than answering with something dask's would not.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from .addresses import SchedulerRPC
from .client_events import check_dumpable
from .cluster import Cluster
from .errors import NotModelledError
from .task_runs import current_run


def _status() -> Any:
    """dask's ``Status.running`` (its enum, so ``.name`` and comparisons read as dask's)."""
    try:
        from distributed.core import Status
    except ImportError:  # pragma: no cover - without dask, the plain word
        return "running"
    return Status.running


class _Counted:
    """A collection of dask's ``WorkerState`` (``ready``, ``executing``) of which the model
    gives the size: dask's holds ``TaskState`` objects, which the model's worker has not."""

    __slots__ = ("_view", "_name")

    def __init__(self, view: WorkerView, name: str):
        self._view, self._name = view, name

    def __len__(self) -> int:  # (and truth: Python reads it when there is no __bool__)
        return len(getattr(self._view._state, self._name))

    def _loud(self, what: str) -> NotModelledError:
        return NotModelledError(what, "the model gives its size (len()), not dask's "
                                "TaskState objects")

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise self._loud(f"WorkerState.{self._name}.{name}")

    def __iter__(self) -> Any:
        raise self._loud(f"iterating WorkerState.{self._name}")

    def __contains__(self, item: object) -> bool:
        raise self._loud(f"'in' WorkerState.{self._name}")


class _StateView:
    """dask's ``Worker.state`` (its ``WorkerState``), as far as the model's worker shows it."""

    __slots__ = ("_view",)

    def __init__(self, view: WorkerView):
        self._view = view

    @property
    def ready(self) -> _Counted:
        """The tasks waiting for a thread (not those waiting for resources: ``constrained``)."""
        return _Counted(self._view, "ready")

    @property
    def executing(self) -> _Counted:
        """The tasks running on a thread now."""
        return _Counted(self._view, "executing")

    @property
    def nthreads(self) -> int:
        return self._view.nthreads

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise NotModelledError(f"WorkerState.{name}", "the model's worker state view has "
                               "ready and executing (their sizes) and nthreads")


class WorkerView:
    """A worker of ``cluster`` as dask's ``Worker`` shows it (see the module's doc)."""

    def __init__(self, cluster: Cluster, worker: str):
        state = cluster.workers[worker]
        self.__dict__.update(
            _cluster=cluster, address=worker, worker_address=worker,
            name=list(cluster.workers).index(worker), status=_status(), data=state.data,
            nthreads=state.nthreads, scheduler=SchedulerRPC(cluster.scheduler_address))

    @property
    def _state(self) -> Any:
        return self._cluster.workers[self.address]

    def _transfers(self, name: str) -> Any:
        if not self._cluster.live:
            raise NotModelledError(f"Worker.{name} on a stepped network",
                                   "the live network's driver times the transfers")
        return getattr(self._state, name)

    @property
    def transfer_incoming_log(self) -> Any:
        """dask's: the transfers this worker fetched (``start``, ``stop``, ``who``, ``keys``
        with their sizes, ``total``, ``bandwidth`` …), newest last."""
        return self._transfers("transfer_incoming_log")

    @property
    def transfer_outgoing_log(self) -> Any:
        """dask's: the transfers this worker served (to a worker, or ``who`` None: a gather)."""
        return self._transfers("transfer_outgoing_log")

    @property
    def state(self) -> _StateView:
        """dask's ``WorkerState``: of it, the sizes of ``ready`` and ``executing``."""
        return _StateView(self)

    def get_current_task(self) -> str:
        """The key of the task running on this thread (dask's ``active_threads[ident]``)."""
        entry = current_run.get()
        if entry is None or entry[1].worker != self.address:
            raise KeyError(threading.get_ident())  # dask: no task on this thread
        return entry[1].key

    def log_event(self, topic: Any, msg: Any) -> None:
        """Log ``msg`` under ``topic`` (or topics): it rides this worker's stream to the
        scheduler, which adds ``"worker"`` to a dict (dask's ``Worker.log_event``)."""
        check_dumpable(msg)
        with self._cluster.call(None) as user_call:
            user_call.send([self._state.log_event(topic, msg, time.time())])

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise NotModelledError(f"Worker.{name}", "the model's worker view has address, name, "
                               "status, data, nthreads, scheduler, get_current_task, log_event, "
                               "the transfer logs and state (ready and executing)")

    def __repr__(self) -> str:
        return (f"<Worker {self.address!r}, name: {self.name}, status: running, "
                f"stored: {len(self.data)}, running: {len(self._state.executing)}/"
                f"{self.nthreads}, ready: {len(self._state.ready)}>")
