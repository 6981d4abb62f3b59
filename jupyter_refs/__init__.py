"""jupyter_refs: see, reproduce and fix the races of distributed reference counting."""

from .checks import Violation
from .client import Client, Future
from .cluster import Cluster
from .errors import (
    ClusterClosedError,
    FutureCancelledError,
    FutureLostError,
    FutureReleasedError,
    HeldMessagesError,
    JupyterRefsError,
    NotDeliverableError,
    SerializationError,
    UnknownMessageError,
)
from .trace import Event, Trace

__version__ = "0.1.0"

# The views import bokeh and ipywidgets; load them only when asked for.
_VIEWS = {"Timeline": "jupyter_refs.views.timeline", "RefsTable": "jupyter_refs.views.refs",
          "export": "jupyter_refs.views.export"}


def __getattr__(name: str):
    if name in _VIEWS:
        import importlib

        return getattr(importlib.import_module(_VIEWS[name]), name)
    raise AttributeError(f"module 'jupyter_refs' has no attribute {name!r}")

__all__ = [
    "Client",
    "Cluster",
    "ClusterClosedError",
    "Event",
    "export",
    "Future",
    "FutureCancelledError",
    "FutureLostError",
    "FutureReleasedError",
    "HeldMessagesError",
    "JupyterRefsError",
    "NotDeliverableError",
    "RefsTable",
    "SerializationError",
    "Timeline",
    "Trace",
    "UnknownMessageError",
    "Violation",
]


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    """The server extension that serves BokehJS offline (enabled by ``pip install``)."""
    return [{"module": "jupyter_refs.server"}]
