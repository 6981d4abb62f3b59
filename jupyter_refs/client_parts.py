"""What the Client's parts and its cluster need of it: one declaration, below them all.

``client.py`` is built of parts — ``coordination`` (wait, Variable, Queue …), ``publish``,
``progress``, ``worker_context``, the mixins ``client_admin`` / ``client_events`` /
``plugins`` / ``task_stream`` — and every part works on a client and its futures.  The
driver (``cluster.py``) makes clients too: a worker's own client, and the futures a task
receives in its arguments.  Each of those importing ``client.py`` back, even for its types,
tied some fifteen modules into one import circle.  So they read the client through this
module instead, as the scheduler's parts read it through ``protocol/parts.py``:

* :class:`ClientLike` and :class:`FutureLike` — what they call on a client and a future;
* :class:`FutureBase` — the base class of ``client.Future``, for ``isinstance``;
* the default client (``default_client()``, dask's ``Client.current``);
* :func:`make_client`, :func:`wrap_client`, :func:`bound_future`, :func:`unbound_future` —
  the constructors the driver calls, which ``client.py`` hands in once, as it is imported
  (:func:`provide`).

The dependency runs one way: ``client.py`` imports its parts and the driver, they import this.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any, Protocol


class ClientState(Protocol):
    """What the parts call on a client's actor (``protocol.client.ClientState``)."""

    name: str
    futures: dict[str, Any]
    refcount: dict[str, int]

    def send(self, op: str, keys: tuple[str, ...] = (), **payload: Any) -> list[Any]: ...

    def adopt(self, key: str, task: str | None) -> tuple[Any, list[Any], int]: ...

    def set_state(self, key: str, fs: Any, state: str, value: Any, text: str | None) -> None: ...


class ClientLike(Protocol):
    """What the parts call on a ``client.Client`` (its own names, kept private there so
    that a Client shows dask's public API and no more)."""

    cluster: Any  # the Cluster (cluster.py), None once disposed
    _state: ClientState

    @property
    def name(self) -> str: ...

    @property
    def status(self) -> str: ...

    def _ask(self, op: str, keys: tuple[str, ...] = (), **payload: Any) -> dict[str, Any]: ...

    def _future(self, key: str, origin: str) -> tuple[FutureLike, bool]: ...

    def _check_open(self, op: str = "update-graph") -> None: ...


class FutureLike(Protocol):
    """What the parts read of a ``client.Future``."""

    key: str
    client: ClientLike | None
    id: int

    @property
    def status(self) -> str | None: ...

    def result(self, timeout: float | None = None) -> Any: ...

    def exception(self, timeout: float | None = None) -> BaseException | None: ...


class FutureBase:
    """The base class of ``client.Future``: ``isinstance(x, FutureBase)`` is how a part tells
    a future of this library from anything else (dask's own ``Future`` included)."""

    __slots__ = ()


# -- the default client -------------------------------------------------------------------

_default: list[weakref.ref[Any]] = []


def default_client() -> Any:
    """The client made last in this process and not closed (``get_client()`` outside tasks),
    or None."""
    while _default:
        client = _default[-1]()
        if client is not None and client.status != "closed":
            return client
        _default.pop()
    return None


def make_default(client: ClientLike) -> None:
    """``client`` is the default from now on (``Client(set_as_default=True)``)."""
    # Drop the closed and the collected first: the explorer makes clients by the thousand.
    _default[:] = [r for r in _default if (c := r()) is not None and c.status != "closed"]
    _default.append(weakref.ref(client))


def current_client(client: Any = None) -> Any:
    """dask's ``default_client(c)``: ``client`` if given, else the default, else ValueError."""
    client = client or default_client()
    if client is None:
        raise ValueError("No clients found\nStart a client and point it to the scheduler "
                         "address\n  from distributed import Client\n  client = Client()\n")
    return client


# -- what the driver makes ----------------------------------------------------------------

class _Constructors:
    """``client.py``'s constructors, handed in by :func:`provide` when it is imported."""

    make: Callable[..., Any]
    wrap: Callable[[Any, Any], Any]
    bound: Callable[[Any, str, Any, int], Any]
    unbound: Callable[[str], Any]


_made = _Constructors()


def provide(make: Callable[..., Any], wrap: Callable[[Any, Any], Any],
            bound: Callable[[Any, str, Any, int], Any], unbound: Callable[[str], Any]) -> None:
    """``client.py``, as it is imported: how to make a client of a cluster
    (``Client(cluster, name=)``), wrap a client's actor (a worker's own client), and make a
    future bound to a client or unbound.  Always done before a cluster exists:
    ``jupyter_refs`` imports ``client.py``, which imports ``cluster.py``."""
    _made.make, _made.wrap, _made.bound, _made.unbound = make, wrap, bound, unbound


def make_client(cluster: Any, name: str | None = None) -> Any:
    """A new ``Client`` of ``cluster`` (``cluster.client()``)."""
    return _made.make(cluster, name=name)


def wrap_client(cluster: Any, state: Any) -> Any:
    """A ``Client`` around an existing actor (a worker's own client)."""
    return _made.wrap(cluster, state)


def bound_future(client: Any, key: str, fs: Any, future_id: int) -> Any:
    """A ``Future`` for a reference ``client`` has just counted."""
    return _made.bound(client, key, fs, future_id)


def unbound_future(key: str) -> Any:
    """A ``Future`` that holds nothing (a task's argument under today's dask)."""
    return _made.unbound(key)
