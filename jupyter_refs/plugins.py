"""dask's worker plugins on the kernel-side cluster: ``Client.register_plugin`` and
``unregister_worker_plugin`` for a ``WorkerPlugin`` (``distributed/diagnostics/plugin.py``).

As dask 2026.8.0 does it: the plugin is pickled, and every worker — and every worker that
joins later — gets a copy of its own (``Worker.plugin_add``): a plugin of the same name is
torn down first, then ``setup(worker=...)`` runs, with the worker as ``get_worker()`` sees
it (:class:`~jupyter_refs.worker_view.WorkerView`).  The answer is ``{worker: {"status":
"OK"}}``; a ``setup`` that raises makes the call raise (the first worker's error) and the
plugin stays registered, as dask's.  ``idempotent`` plugins already registered are left as
they are.  ``unregister_worker_plugin`` tears each copy down; an unknown name is a
``ValueError``.

The workers live in the kernel, so ``setup`` and ``teardown`` run here, in the caller's
thread (dask runs them on each worker's event loop).  What the model does not have says so:
a plugin that reacts to the worker's task transitions (``transition``), and scheduler and
nanny plugins.
"""

from __future__ import annotations

import asyncio
import inspect
import uuid
from typing import TYPE_CHECKING, Any

from .errors import NotModelledError
from .protocol.serialize import dumps, loads
from .worker_view import WorkerView

if TYPE_CHECKING:
    from .cluster import Cluster


def _bases() -> tuple[type, type, type]:
    from distributed.diagnostics.plugin import NannyPlugin, SchedulerPlugin, WorkerPlugin

    return WorkerPlugin, SchedulerPlugin, NannyPlugin


def plugin_name(plugin: Any) -> str:
    """dask's ``_get_plugin_name``: its ``name``, else its class's name and a uuid."""
    if hasattr(plugin, "name"):
        return plugin.name
    from dask.utils import funcname

    return f"{funcname(type(plugin))}-{uuid.uuid4()}"


def _run(result: Any) -> None:
    if inspect.isawaitable(result):
        async def awaited() -> None:
            await result

        asyncio.run(awaited())


class Registry:
    """The scheduler's plugins (name -> pickle) and each worker's copies (name -> plugin)."""

    def __init__(self) -> None:
        self.blobs: dict[str, bytes] = {}
        self.installed: dict[str, dict[str, Any]] = {}

    def add(self, cluster: Cluster, worker: str, name: str) -> dict[str, Any]:
        """``Worker.plugin_add``: a copy of the plugin on ``worker``, set up there."""
        plugins = self.installed.setdefault(worker, {})
        if name in plugins:
            self.remove(cluster, worker, name)
        plugin = plugins[name] = loads(self.blobs[name])
        if hasattr(plugin, "setup"):
            try:
                _run(plugin.setup(worker=WorkerView(cluster, worker)))
            except Exception as exc:  # noqa: BLE001 - the worker answers with it
                return {"status": "error", "exception": exc}
        return {"status": "OK"}

    def joined(self, cluster: Cluster, worker: str) -> None:
        """A worker joins: it gets every plugin registered (dask's ``add_worker`` sends them)."""
        for name in list(self.blobs):
            self.add(cluster, worker, name)

    def remove(self, cluster: Cluster, worker: str, name: str) -> dict[str, Any]:
        plugin = self.installed.get(worker, {}).pop(name, None)
        if plugin is not None and hasattr(plugin, "teardown"):
            try:
                _run(plugin.teardown(worker=WorkerView(cluster, worker)))
            except Exception as exc:  # noqa: BLE001 - the worker answers with it
                return {"status": "error", "exception": exc}
        return {"status": "OK"}


def registry(cluster: Cluster) -> Registry:
    """The cluster's worker plugins, made at the first registration."""
    reg = cluster.worker_plugins
    if not isinstance(reg, Registry):
        reg = cluster.worker_plugins = Registry()
    return reg


def _raise_first_error(responses: dict[str, dict[str, Any]]) -> None:
    for response in responses.values():
        if response["status"] == "error":
            raise response["exception"]


class PluginCalls:
    """The mixin of :class:`~jupyter_refs.client.Client` (see the module's doc)."""

    cluster: Cluster

    def register_plugin(self, plugin: Any, name: str | None = None) -> Any:
        """Register a worker plugin on every worker, now and to come (dask's)."""
        if name is None:
            name = plugin_name(plugin)
        idempotent = getattr(plugin, "idempotent", False)
        worker_plugin, scheduler_plugin, nanny_plugin = _bases()
        if isinstance(plugin, scheduler_plugin | nanny_plugin):
            kind = "SchedulerPlugin" if isinstance(plugin, scheduler_plugin) else "NannyPlugin"
            raise NotModelledError(f"register_plugin of a {kind}",
                                   "worker plugins (setup, teardown) are modelled")
        if not isinstance(plugin, worker_plugin):
            if isinstance(plugin, type):
                raise TypeError("Please provide an instance of a plugin, not a type.")
            raise TypeError("Registering duck-typed plugins is not allowed. Please inherit from "
                            "NannyPlugin, WorkerPlugin, or SchedulerPlugin to create a plugin.")
        if type(plugin).transition is not worker_plugin.transition:
            raise NotModelledError("WorkerPlugin.transition",
                                   "a worker plugin's setup and teardown are modelled")
        cluster = self.cluster
        reg = registry(cluster)
        with cluster.locked():
            if name in reg.blobs and idempotent:
                return {}
            reg.blobs[name] = dumps(plugin)
            workers = list(cluster.workers)
        responses = {w: reg.add(cluster, w, name) for w in workers}
        _raise_first_error(responses)
        return responses

    def unregister_worker_plugin(self, name: str, nanny: bool | None = None) -> Any:
        """Tear the plugin down on every worker and forget it (dask's)."""
        if nanny:
            raise NotModelledError("unregister_worker_plugin(nanny=True)",
                                   "the kernel-side workers have no nannies")
        cluster = self.cluster
        reg = registry(cluster)
        with cluster.locked():
            if reg.blobs.pop(name, None) is None:
                raise ValueError(f"The worker plugin {name} does not exist")
            workers = list(cluster.workers)
        responses = {w: reg.remove(cluster, w, name) for w in workers}
        _raise_first_error(responses)
        return responses
