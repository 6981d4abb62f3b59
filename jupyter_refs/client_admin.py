"""dask's ``Client`` methods about the cluster as a whole: ``processing``, ``set_metadata`` /
``get_metadata``, ``run``, ``run_on_scheduler``, ``nbytes``, ``get_versions``, ``start``.

A mixin of :class:`~jupyter_refs.client.Client`.  Each does what dask 2026.8.0's does, as far
as the kernel-side cluster has it: questions go to the scheduler as RPCs (its extensions
answer them); ``run`` and ``run_on_scheduler`` call the function here, in the kernel, where the
workers and the scheduler live, and hand it what the model has of them — and a function that
asks for something the model does not keep is told so (``NotModelledError``).
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from typing import TYPE_CHECKING, Any

from .errors import NotModelledError
from .protocol import messages as m

if TYPE_CHECKING:
    from .cluster import Cluster

_NO_DEFAULT = object()


class _View:
    """What a function run with ``dask_scheduler=`` / ``dask_worker=`` sees: the model's
    state under dask's names, and a ``NotModelledError`` for anything else."""

    def __init__(self, kind: str, **fields: Any):
        self._kind = kind
        self.__dict__.update(fields)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise NotModelledError(f"{self._kind}.{name}",
                               "a function run here sees only what the model keeps")


def _call(function: Any, args: tuple, kwargs: dict[str, Any], name: str, view: _View) -> Any:
    """``function(*args, **kwargs)``, with ``view`` as ``name`` if it takes it; a coroutine
    function is run to its end, as dask's event loop runs it."""
    try:
        takes = name in inspect.signature(function).parameters
    except (TypeError, ValueError):  # a builtin without a signature
        takes = False
    if takes:
        kwargs = {**kwargs, name: view}
    result = function(*args, **kwargs)
    if inspect.isawaitable(result):
        result = asyncio.run(_awaited(result))
    return result


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


class ClusterCalls:
    """The mixin (see the module's doc)."""

    cluster: Cluster  # Client's, as are the _ask and _workers these methods call

    def start(self, **kwargs: Any) -> None:
        """dask's ``start``: a client starts when made, so starting again does nothing."""

    def processing(self, workers: Any = None) -> dict[str, list[str]]:
        """The keys the scheduler has sent each worker to run (dask's ``Client.processing``)."""
        processing = self._ask(m.PROCESSING_QUERY)["processing"]
        names = self._workers(workers)
        return {w: keys for w, keys in processing.items() if names is None or w in names}

    def set_metadata(self, key: Any, value: Any) -> None:
        """Store ``value`` on the scheduler under ``key`` (a list of keys: nested)."""
        path = list(key) if isinstance(key, list | tuple) else [key]
        self._ask(m.SET_METADATA, path=path, value=value)

    def get_metadata(self, keys: Any, default: Any = _NO_DEFAULT) -> Any:
        """The value stored under ``keys``; ``KeyError``, or ``default`` if given."""
        from .coordination import _answer

        path = list(keys) if isinstance(keys, list | tuple) else [keys]
        payload = {} if default is _NO_DEFAULT else {"default": default}
        return _answer(self._ask(m.GET_METADATA, path=path, **payload))["value"]

    def run_on_scheduler(self, function: Any, *args: Any, **kwargs: Any) -> Any:
        """Call ``function`` where the scheduler is — here — with ``dask_scheduler`` (its
        ``tasks``, ``workers``) if it takes that argument."""
        cluster = self.cluster
        with cluster._locked():
            view = _View("dask_scheduler", tasks=dict(cluster.scheduler.tasks),
                         workers=dict.fromkeys(cluster.workers),
                         address=getattr(cluster, "scheduler_address", "scheduler"))
        return _call(function, args, kwargs, "dask_scheduler", view)

    def run(self, function: Any, *args: Any, workers: Any = None, wait: bool = True,
            nanny: bool = False, on_error: str = "raise", **kwargs: Any) -> Any:
        """Call ``function`` once per worker (``dask_worker``: its name and data), as dask's
        ``Client.run``: ``{worker: result}``.  The workers live in the kernel, so each call
        runs here, one after the other; ``wait=False`` runs them on a thread and returns None."""
        if nanny:
            raise NotModelledError("Client.run(nanny=True)", "the kernel-side workers have none")
        if on_error not in ("raise", "return", "ignore"):
            raise ValueError(f"on_error must be 'raise', 'return' or 'ignore'; got {on_error!r}")
        cluster = self.cluster
        names = self._workers(workers) or list(cluster.workers)

        def all_of_them() -> dict[str, Any]:
            out: dict[str, Any] = {}
            for name in names:
                worker = cluster.workers[name]
                view = _View("dask_worker", name=name, address=name, data=worker.data,
                             nthreads=worker.nthreads)
                try:
                    out[name] = _call(function, args, kwargs, "dask_worker", view)
                except Exception as exc:  # noqa: BLE001 - on_error says what becomes of it
                    if on_error == "raise":
                        raise
                    if on_error == "return":
                        out[name] = exc
            return out

        if not wait:
            threading.Thread(target=all_of_them, daemon=True, name="jupyter-refs-run").start()
            return None
        return all_of_them()

    def nbytes(self, keys: Any = None, summary: bool = True, **kwargs: Any) -> dict[str, int]:
        """The size of each key in memory (``summary``: per key prefix), as dask's
        ``sizeof`` measures it on the worker that holds it."""
        from dask.sizeof import sizeof
        from dask.utils import key_split

        cluster = self.cluster
        with cluster._locked():
            sizes: dict[str, int] = {}
            for key, ts in cluster.scheduler.tasks.items():
                holders = [w for w in sorted(ts.who_has) if key in cluster.workers[w].data]
                if holders and (keys is None or key in keys):
                    sizes[key] = sizeof(cluster.workers[holders[0]].data[key])
        if not summary:
            return sizes
        out: dict[str, int] = {}
        for key, size in sizes.items():
            out[key_split(key)] = out.get(key_split(key), 0) + size
        return out

    def get_versions(self, check: bool = False, packages: Any = None) -> dict[str, Any]:
        """The versions of the scheduler's, this client's and each worker's packages: one
        process here, so one set of versions, and ``check`` never finds a mismatch."""
        from distributed.versions import get_versions

        versions = get_versions(packages)
        return {"scheduler": versions, "client": versions,
                "workers": dict.fromkeys(self.cluster.workers, versions)}
