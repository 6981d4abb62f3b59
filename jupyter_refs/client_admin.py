"""dask's ``Client`` methods about the cluster as a whole: ``processing``, ``set_metadata`` /
``get_metadata``, ``run``, ``run_on_scheduler``, ``nbytes``, ``get_versions``, ``upload_file``,
``start``, ``get_scheduler_logs`` / ``get_worker_logs`` (and ``LocalCluster.get_logs``),
``wait_for_workers``.

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

from .client_parts import FutureBase, ask
from .coordination import answered, futures_of, wait
from .errors import NotModelledError
from .protocol import messages as m
from .protocol.serialize import load_function, loads, substitute
from .worker_view import WorkerView

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


def worker_logs(cluster: Cluster, n: int | None = None, workers: list[str] | None = None,
                nanny: bool = False) -> dict[str, list[tuple[str, str]]]:
    """Each worker's log, newest first (dask's ``Scheduler.get_worker_logs``: the workers the
    scheduler has, or those of ``workers``).  Nannies keep logs of their own, which the model
    has not: with ``nanny=True`` a cluster without nannies answers nothing, as dask's does."""
    if nanny:
        if cluster.nannies:
            raise NotModelledError("get_worker_logs(nanny=True)",
                                   "the workers' logs are modelled; their nannies' are not")
        return {}
    with cluster.locked():
        names = [w for w in cluster.scheduler.workers if workers is None or w in workers]
        return {w: cluster.workers[w].log.get(n=n) for w in names}


def wait_for_workers(cluster: Cluster, n_workers: int, timeout: Any = None) -> None:
    """dask's ``Cluster.wait_for_workers``: until the scheduler has ``n_workers`` running
    workers, looking every 0.1 s; after ``timeout`` (when given) dask's
    ``WorkerStartTimeoutError``.  Without one it waits, as dask's does, for workers that
    ``scale`` or ``adapt`` may bring."""
    import time

    from dask.utils import parse_timedelta
    from distributed.exceptions import WorkerStartTimeoutError

    if not isinstance(n_workers, int) or n_workers < 1:
        raise ValueError(f"`n_workers` must be a positive integer. Instead got {n_workers}.")
    deadline = time.time() + parse_timedelta(timeout) if timeout else None

    def running() -> int:
        with cluster.locked():
            return sum(cluster.workers[w].status == "running" for w in cluster.scheduler.workers)

    while running() < n_workers:
        if deadline and time.time() > deadline:
            raise WorkerStartTimeoutError(running(), n_workers, timeout)
        time.sleep(0.1)


class AMMProxy:
    """``Client.amm``: the scheduler's active memory manager (``protocol/amm.py``), as dask's
    ``AMMClientProxy``: ``start``, ``stop``, ``run_once``, ``running``."""

    def __init__(self, client: Any):
        self._client = client

    def _run(self, method: str) -> Any:

        return answered(ask(self._client, m.AMM_HANDLER, method=method))["value"]

    def start(self) -> None:
        return self._run("start")

    def stop(self) -> None:
        return self._run("stop")

    def run_once(self) -> None:
        return self._run("run_once")

    def running(self) -> bool:
        return self._run("running")


class ClusterCalls:
    """The mixin (see the module's doc)."""

    cluster: Cluster  # Client's, as are the _ask and _workers these methods call

    @property
    def amm(self) -> AMMProxy:
        """The scheduler's active memory manager (dask's ``Client.amm``)."""
        return AMMProxy(self)

    def start(self, **kwargs: Any) -> None:
        """dask's ``start``: a client starts when made, so starting again does nothing."""

    def replicate(self, futures: Any, n: int | None = None, workers: Any = None,
                  branching_factor: int = 2, **kwargs: Any) -> None:
        """Copies of the futures' keys on ``n`` workers (all of ``workers`` by default), as
        dask's ``Client.replicate`` (``protocol/replicate.py``): waits for the futures, then
        for the copies."""

        found = futures_of(futures)
        wait(found)
        keys = tuple(dict.fromkeys(f.key for f in found))
        answered(self._ask(m.REPLICATE, keys, n=n, workers=self._workers(workers),
                           branching_factor=branching_factor))

    def call_stack(self, futures: Any = None, keys: Any = None) -> dict[str, dict[str, list]]:
        """The call stacks of the tasks running now, by worker then key (dask's
        ``call_stack``: formatted by ``distributed.profile.call_stack``); for ``futures`` /
        ``keys``, those of them running or the running tasks they wait for.  Workers with
        nothing running are left out."""
        import sys

        from distributed.profile import call_stack


        wanted = None
        if futures is not None or keys is not None:
            wanted = set(keys or ()) | {f.key for f in futures_of(futures or [])}
        cluster = self.cluster
        with cluster.locked():
            runs = cluster.running()
            if wanted is not None:  # dask: the keys, and what waiting ones wait for
                tasks, stack, running = cluster.scheduler.tasks, list(wanted), set()
                while stack:
                    ts = tasks.get(stack.pop())
                    if ts is not None and ts.state == "waiting":
                        stack.extend(ts.dependencies)
                    elif ts is not None and ts.state == "processing":
                        running.add(ts.key)
                runs = [r for r in runs if r.key in running]
        frames = sys._current_frames()
        out: dict[str, dict[str, list]] = {}
        for run in runs:
            frame = frames.get(run.thread)
            if frame is not None:
                out.setdefault(run.worker, {})[run.key] = call_stack(frame)
        return out

    def wait_for_workers(self, n_workers: int, timeout: Any = None) -> None:
        """Wait for ``n_workers`` running workers (see :func:`wait_for_workers`)."""
        wait_for_workers(self.cluster, n_workers, timeout)

    def get_scheduler_logs(self, n: int | None = None) -> list[tuple[str, str]]:
        """The scheduler's log, newest first: ``(level, line)`` (``protocol/logs.py``)."""
        cluster = self.cluster
        with cluster.locked():
            return cluster.scheduler.log.get(n=n)

    def get_worker_logs(self, n: int | None = None, workers: Any = None,
                        nanny: bool = False) -> dict[str, list[tuple[str, str]]]:
        """Each worker's log, newest first, by address (see :func:`worker_logs`)."""
        return worker_logs(self.cluster, n, self._workers(workers), nanny)

    def processing(self, workers: Any = None) -> dict[str, list[str]]:
        """The keys the scheduler has sent each worker to run (dask's ``Client.processing``)."""
        processing = self._ask(m.PROCESSING_QUERY)["processing"]
        names = self._workers(workers)
        return {w: keys for w, keys in processing.items() if names is None or w in names}

    def set_metadata(self, key: Any, value: Any) -> None:
        """Store ``value`` on the scheduler under ``key`` (a list of keys: nested)."""

        path = list(key) if isinstance(key, list | tuple) else [key]
        answered(self._ask(m.SET_METADATA, path=path, value=value))

    def get_metadata(self, keys: Any, default: Any = _NO_DEFAULT) -> Any:
        """The value stored under ``keys``; ``KeyError``, or ``default`` if given."""

        path = list(keys) if isinstance(keys, list | tuple) else [keys]
        payload = {} if default is _NO_DEFAULT else {"default": default}
        return answered(self._ask(m.GET_METADATA, path=path, **payload))["value"]

    def run_on_scheduler(self, function: Any, *args: Any, **kwargs: Any) -> Any:
        """Call ``function`` where the scheduler is — here — with ``dask_scheduler`` (its
        ``tasks``, ``workers``) if it takes that argument."""
        cluster = self.cluster
        cluster.apply_drops()  # a call is a safe point: futures dropped before it are let go
        with cluster.locked():
            view = _View("dask_scheduler", tasks=dict(cluster.scheduler.tasks),
                         computations=cluster.scheduler.computations.copy(),
                         workers=dict.fromkeys(cluster.workers),
                         address=getattr(cluster, "scheduler_address", "scheduler"))
        return _call(function, args, kwargs, "dask_scheduler", view)

    def run(self, function: Any, *args: Any, workers: Any = None, wait: bool = True,
            nanny: bool = False, on_error: str = "raise", **kwargs: Any) -> Any:
        """Call ``function`` once per worker (``dask_worker``: a :class:`WorkerView`), as dask's
        ``Client.run``: ``{worker: result}``.  The workers live in the kernel, so each call
        runs here, one after the other; ``wait=False`` runs them on a thread and returns None."""
        if nanny:
            raise NotModelledError("Client.run(nanny=True)", "the kernel-side workers have none")
        if on_error not in ("raise", "return", "ignore"):
            raise ValueError(f"on_error must be 'raise', 'return' or 'ignore'; got {on_error!r}")
        cluster = self.cluster
        cluster.apply_drops()  # a call is a safe point: futures dropped before it are let go
        names = self._workers(workers) or list(cluster.workers)

        def all_of_them() -> dict[str, Any]:
            out: dict[str, Any] = {}
            for name in names:
                view = WorkerView(cluster, name)
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
        with cluster.locked():
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

    def upload_file(self, filename: str, load: bool = True) -> None:
        """dask's ``upload_file``: the file goes where the workers import from, and a ``.py``
        is imported (again, if it was already: a new version replaces the old).  The workers
        share the kernel's interpreter, so that place is one directory of the cluster's on
        ``sys.path``, and an error in the module (a ``SyntaxError``) is raised here, as dask
        raises the workers' error."""
        import importlib
        import os
        import shutil
        import sys
        import tempfile

        directory = getattr(self.cluster, "_uploads", None)
        if directory is None:
            directory = self.cluster._uploads = tempfile.mkdtemp(prefix="jupyter-refs-upload-")
            sys.path.insert(0, directory)
        target = shutil.copy(filename, directory)
        name, ext = os.path.splitext(os.path.basename(filename))
        if ext in (".egg", ".zip", ".pyz", ".whl"):
            if target not in sys.path:
                sys.path.insert(0, target)
        if not load or ext not in (".py", ".egg", ".zip", ".pyz", ".whl"):
            return
        importlib.invalidate_caches()
        if ext == ".py":
            module = sys.modules.get(name)
            if module is not None:
                importlib.reload(module)
            else:
                importlib.import_module(name)

    def recreate_task_locally(self, future: Any) -> Any:
        """Run the task of ``future`` (or of a key) here, with its dependencies' values, and
        return what it returns (dask's ``recreate_task_locally``, for a debugger)."""

        if isinstance(future, FutureBase):
            wait(future)
            key = future.key
        else:
            key = future
        spec = answered(self._ask(m.GET_RUNSPEC, key=key))
        values: dict[str, Any] = {}
        if spec["dependencies"]:
            with self.cluster.call(None) as user_call:  # gathered as gather does, by key
                values, missing = self._fetch(tuple(spec["dependencies"]), None, user_call)
            if missing:
                raise NotModelledError(f"replaying {key}, whose dependencies {', '.join(missing)}"
                                       " were released meanwhile")
        func = load_function(spec["func"])
        args, kwargs = loads(spec["args"])
        args, kwargs = substitute(args, values), substitute(kwargs, values)
        return func(*args, **kwargs)

    def recreate_error_locally(self, future: Any) -> None:
        """Run here the task to blame for the error of ``future`` (or of a collection's
        futures), so that it raises its error here (dask's ``recreate_error_locally``)."""

        wait(future)
        erred = [f.key for f in futures_of(future) if f.status == "error"]
        if not erred:
            raise ValueError("No errored futures passed")
        return self.recreate_task_locally(self._ask(m.GET_ERROR_CAUSE, tuple(erred))["key"])

    def get_versions(self, check: bool = False, packages: Any = None) -> dict[str, Any]:
        """The versions of the scheduler's, this client's and each worker's packages: one
        process here, so one set of versions, and ``check`` never finds a mismatch."""
        from distributed.versions import get_versions

        versions = get_versions(packages)
        return {"scheduler": versions, "client": versions,
                "workers": dict.fromkeys(self.cluster.workers, versions)}
