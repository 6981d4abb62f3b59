"""What a task can call: ``get_client``, ``worker_client``, ``secede``, ``rejoin``; and ``fire_and_forget``.

As in dask (``distributed/worker.py``, ``distributed/worker_client.py``):

* ``get_client()`` inside a task gives the client of the worker running it
  (``client:worker:0``): the task can scatter, submit, gather and wait, and its
  futures are traced and checked on that client's own lane.  (An in-process dask
  cluster, ``LocalCluster(processes=False)``, hands the task the *user's* client;
  with worker processes each worker has its own, as here.)
* ``secede()`` gives the task's thread slot back to its worker, so a task that
  waits for others does not starve them; ``rejoin()`` waits for a free slot and
  takes it.  ``worker_client()`` is ``secede()`` + ``get_client()``, then
  ``rejoin()`` on exit.
* ``fire_and_forget(futures)`` asks the scheduler to keep computing them after
  every future is dropped: ``client-desires-keys`` for the pseudo-client
  ``fire-and-forget``, which the scheduler releases when the task ends.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .client_parts import ClientLike, FutureBase, FutureLike, actor, current_client
from .protocol import messages as m
from .protocol.messages import FIRE_AND_FORGET
from .task_runs import current_run
from .worker_view import WorkerView


def _current(what: str):
    entry = current_run.get()
    if entry is None:
        raise ValueError(f"{what}() works only inside a task running on a jupyter_refs cluster "
                         "(in the notebook, use the client you made: cluster.client())")
    return entry


def _seconds(timeout: float | str | None) -> float | None:
    """dask's reading of a timeout (``parse_timedelta``: ``"1s"``, ``0``); None stays None,
    dask's default connect timeout, which a worker's client meets."""
    if timeout is None:
        return None
    from dask.utils import parse_timedelta

    return parse_timedelta(timeout, "s")


def get_client(timeout: float | str | None = None) -> ClientLike:
    """The client of the worker running this task (dask's ``get_client()`` in a task)."""
    cluster, run = _current("get_client")
    return cluster.worker_client(run.worker, _seconds(timeout))


def dask_get_client(address: Any = None, timeout: Any = None, resolve_address: bool = True
                    ) -> Any:
    """dask's ``distributed.get_client``: the worker's client in a task, the default client
    elsewhere (``ValueError`` if there is none)."""
    try:
        return get_client(timeout)
    except ValueError:
        return current_client()


def secede() -> None:
    """Leave this task's thread slot: another task of the worker may run meanwhile."""
    cluster, run = _current("secede")
    cluster.secede(run)


def rejoin() -> None:
    """Take a thread slot again after :func:`secede` (waits until one is free)."""
    cluster, run = _current("rejoin")
    cluster.rejoin(run)


@contextmanager
def worker_client(timeout: float | None = None, separate_thread: bool = True) -> Iterator[ClientLike]:
    """``with worker_client() as client:`` — secede, use the worker's client, rejoin on exit."""
    cluster, run = _current("worker_client")
    client = cluster.worker_client(run.worker, _seconds(timeout))  # before seceding, as dask
    if separate_thread:
        cluster.secede(run)
    try:
        yield client
    finally:
        if separate_thread:
            cluster.rejoin(run)


def _futures_of(obj: Any) -> list[FutureLike]:
    if isinstance(obj, FutureBase):
        return [obj]
    if isinstance(obj, dict):
        obj = obj.values()
    if isinstance(obj, list | tuple | set | frozenset | type({}.values())):
        return [f for o in obj for f in _futures_of(o)]
    return []


def fire_and_forget(obj: Any) -> None:
    """Keep the tasks of ``obj`` (a future, or a collection of them) running once dropped.

    Like dask's: each future's client sends ``client-desires-keys`` for the
    pseudo-client ``fire-and-forget`` on its stream; the scheduler drops that
    desire when the task finishes or errs.  Real dask futures (a scenario that
    ``%confirm`` runs on a real client) go to dask's own ``fire_and_forget``.
    """
    # dask's own module, not ``distributed``: under the switch that one's names are these.
    dask_client = sys.modules.get("distributed.client")
    if dask_client is not None and dask_client.futures_of(obj):
        dask_client.fire_and_forget(obj)
        return
    for future in _futures_of(obj):
        client = future.client
        state = actor(client)
        fs = state.futures.get(future.key)
        gen = fs.gen if fs is not None else 0
        with client.cluster.call(None) as user_call:
            user_call.send([m.Message(state.name, m.SCHEDULER, m.CLIENT_DESIRES_KEYS,
                                      m.stream_channel(state.name, m.SCHEDULER), True,
                                      (future.key,), {"client": FIRE_AND_FORGET,
                                                      "gens": {future.key: gen}, "task": None})])


def get_worker() -> Any:
    """The worker running this task (dask's ``get_worker()``: ``ValueError`` outside one)."""
    entry = current_run.get()
    if entry is None:
        raise ValueError("No worker found")
    cluster, run = entry
    return WorkerView(cluster, run.worker)


def print(*args: Any, sep: str | None = " ", end: str | None = "\n", file: Any = None,
          flush: bool = False) -> None:
    """dask's ``distributed.print``: printed here, and — in a task — by every client too
    (an event on the ``print`` topic, which clients subscribe to when they connect)."""
    import builtins
    import sys

    try:
        worker = get_worker()
    except ValueError:
        pass
    else:
        msg: dict[str, Any] = {"args": tuple(map(str, args)), "sep": sep, "end": end,
                               "flush": flush}
        if file == sys.stdout:
            msg["file"] = 1
        elif file == sys.stderr:
            msg["file"] = 2
        elif file is not None:
            raise TypeError(f"Remote printing to arbitrary file objects is not supported. file "
                            f"kwarg must be one of None, sys.stdout, or sys.stderr; got: {file!r}")
        worker.log_event("print", msg)
    builtins.print(*args, sep=sep, end=end, file=file, flush=flush)


def warn(message: Any, category: type[Warning] | None = UserWarning, stacklevel: int = 1,
         source: Any = None) -> None:
    """dask's ``distributed.warn``: warned here, and — in a task — by every client too."""
    import pickle
    import warnings

    try:
        worker = get_worker()
    except ValueError:
        pass
    else:
        worker.log_event("warn", {"message": pickle.dumps(message),
                                  "category": pickle.dumps(category)})
    warnings.warn(message, category, stacklevel + 1, source)
