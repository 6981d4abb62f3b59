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

__all__ = [
    "Client",
    "Cluster",
    "ClusterClosedError",
    "Event",
    "Future",
    "FutureCancelledError",
    "FutureLostError",
    "FutureReleasedError",
    "HeldMessagesError",
    "JupyterRefsError",
    "NotDeliverableError",
    "SerializationError",
    "Trace",
    "UnknownMessageError",
    "Violation",
]


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    """The server extension that serves BokehJS offline (enabled by ``pip install``)."""
    return [{"module": "jupyter_refs.server"}]
