"""jupyter_refs: see, reproduce and fix the races of distributed reference counting."""

import functools

from .checks import Violation
from .client import Client, Future
from .cluster import Cluster
from .coordination import Queue, Variable, as_completed, wait
from .dropin import LocalCluster, futures_of, model
from .errors import (
    ArgumentTypeError,
    ArgumentValueError,
    ClosedClientError,
    ClusterClosedError,
    FutureCancelledError,
    FutureLostError,
    FutureReleasedError,
    FuturesCancelledError,
    HeldMessagesError,
    JupyterRefsError,
    LivelockError,
    MissingDataError,
    NotDeliverableError,
    NotModelledError,
    SerializationError,
    ThreadsExhaustedError,
    UnknownMessageError,
)
from .explore import ExploreResult, ScenarioError, ScheduleError, replay
from .explore import explore as explore_model
from .trace import Event, Trace
from .worker_context import fire_and_forget, get_client, rejoin, secede, worker_client

__version__ = "0.1.0"


@functools.wraps(explore_model)
def explore(scenario, *args, on=None, **kwargs) -> ExploreResult:
    # ``on=`` (a distributed Client or LocalCluster): the same search over real distributed.
    # Here, above both explorers, so that neither imports the other.
    if on is None:
        return explore_model(scenario, *args, **kwargs)
    from .dask.explore import explore_on

    return explore_on(on, scenario, *args, **kwargs)

# The views import bokeh and ipywidgets; load them only when asked for.
_VIEWS = {"Timeline": "jupyter_refs.views.timeline", "RefsTable": "jupyter_refs.views.refs",
          "export": "jupyter_refs.views.export", "SavedTrace": "jupyter_refs.views.saved"}


def __getattr__(name: str):
    if name in _VIEWS:
        import importlib

        return getattr(importlib.import_module(_VIEWS[name]), name)
    raise AttributeError(f"module 'jupyter_refs' has no attribute {name!r}")

__all__ = [
    "ArgumentTypeError",
    "ArgumentValueError",
    "as_completed",
    "Client",
    "Cluster",
    "ClosedClientError",
    "ClusterClosedError",
    "Event",
    "explore",
    "ExploreResult",
    "export",
    "fire_and_forget",
    "Future",
    "futures_of",
    "FutureCancelledError",
    "FuturesCancelledError",
    "FutureLostError",
    "FutureReleasedError",
    "get_client",
    "HeldMessagesError",
    "JupyterRefsError",
    "MissingDataError",
    "NotDeliverableError",
    "NotModelledError",
    "Queue",
    "RefsTable",
    "rejoin",
    "replay",
    "SavedTrace",
    "ScenarioError",
    "ScheduleError",
    "secede",
    "SerializationError",
    "LivelockError",
    "LocalCluster",
    "model",
    "ThreadsExhaustedError",
    "Timeline",
    "Trace",
    "UnknownMessageError",
    "Variable",
    "Violation",
    "wait",
    "worker_client",
]


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """The prebuilt JupyterLab extension (``labextension/``, built by ``pip install``)."""
    return [{"src": "labextension", "dest": "jupyter-refs"}]


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    """The server extension that serves BokehJS offline (enabled by ``pip install``)."""
    return [{"module": "jupyter_refs.server"}]


def load_ipython_extension(ipython) -> None:
    """``%load_ext jupyter_refs``: register the magics (loading twice is harmless)."""
    from .magics import RefsMagics, load

    if not any(isinstance(m, RefsMagics) for m in ipython.magics_manager.registry.values()):
        load(ipython)


def unload_ipython_extension(ipython) -> None:
    from .magics import RefsMagics

    for name, magics in list(ipython.magics_manager.registry.items()):
        if isinstance(magics, RefsMagics):
            if magics.current is not None:
                magics.current.close()
            if magics.lab is not None:
                magics.lab.close()
            if magics.after_cell in ipython.events.callbacks["post_run_cell"]:
                ipython.events.unregister("post_run_cell", magics.after_cell)
            del ipython.magics_manager.registry[name]
            for kind in ("line", "cell"):
                for magic in [k for k, v in ipython.magics_manager.magics[kind].items()
                              if getattr(v, "__self__", None) is magics]:
                    del ipython.magics_manager.magics[kind][magic]
