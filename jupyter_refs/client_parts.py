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
* :class:`Internals` — what only ``client.py`` can do (make a client or a future, ask the
  scheduler for a client, reach a client's actor or a future's state), which it hands in
  once, as it is imported (:func:`provide`); the functions :func:`ask`, :func:`actor`,
  :func:`make_client` … call it.

The dependency runs one way: ``client.py`` imports its parts and the driver, they import this.
"""

from __future__ import annotations

import weakref
from typing import Any, Protocol


class ClientActor(Protocol):
    """What the parts call on a client's actor (``protocol.client.ClientState``)."""

    name: str
    futures: dict[str, Any]
    refcount: dict[str, int]

    def send(self, op: str, keys: tuple[str, ...] = (), **payload: Any) -> list[Any]: ...

    def adopt(self, key: str, task: str | None) -> tuple[Any, list[Any], int]: ...

    def set_state(self, key: str, fs: Any, to: str, cause: int | None,
                  reason: str | None = None) -> None: ...


class ClientLike(Protocol):
    """What the parts read of a ``client.Client``: its public names.  What needs its insides
    goes through :class:`Internals` (a Client shows dask's public API, and no more)."""

    cluster: Any  # the Cluster (cluster.py), None once disposed

    @property
    def name(self) -> str: ...

    @property
    def status(self) -> str: ...


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

#: Clients made as the default, oldest first (weakly: a dropped or disposed client goes).
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


# -- what only client.py can do ---------------------------------------------------------

class Internals(Protocol):
    """What the parts and the driver ask of ``client.py`` that touches a Client's or a
    Future's insides: implemented there once (``client._Internals``), handed in by
    :func:`provide`, called through the functions below.  A Client keeps dask's public
    surface, and no other module reads its private attributes."""

    def make(self, cluster: Any, name: str | None) -> Any: ...

    def wrap(self, cluster: Any, state: Any) -> Any: ...

    def bound(self, client: Any, key: str, fs: Any, future_id: int) -> Any: ...

    def unbound(self, key: str) -> Any: ...

    def ask(self, client: Any, op: str, keys: tuple[str, ...], payload: dict[str, Any]
            ) -> dict[str, Any]: ...

    def actor(self, client: Any) -> ClientActor: ...

    def future(self, client: Any, key: str, origin: str) -> Any: ...

    def check_open(self, client: Any, op: str) -> None: ...

    def state(self, future: Any) -> Any: ...

    def adopt(self, future: Any, client: Any) -> list[Any]: ...


_internals: list[Internals] = []


def provide(internals: Internals) -> None:
    """``client.py``, as it is imported.  Always before a cluster or a part is used:
    ``jupyter_refs`` imports ``client.py``, and ``client.py`` its parts."""
    _internals[:] = [internals]


def make_client(cluster: Any, name: str | None = None) -> Any:
    """A new ``Client`` of ``cluster`` (``cluster.client()``)."""
    return _internals[0].make(cluster, name)


def wrap_client(cluster: Any, state: Any) -> Any:
    """A ``Client`` around an existing actor (a worker's own client)."""
    return _internals[0].wrap(cluster, state)


def bound_future(client: Any, key: str, fs: Any, future_id: int) -> Any:
    """A ``Future`` for a reference ``client`` has just counted."""
    return _internals[0].bound(client, key, fs, future_id)


def unbound_future(key: str) -> Any:
    """A ``Future`` that holds nothing (a task's argument under today's dask)."""
    return _internals[0].unbound(key)


def ask(client: Any, op: str, keys: tuple[str, ...] = (), **payload: Any) -> dict[str, Any]:
    """An RPC of ``client``'s to the scheduler, waited for: the reply (dask's
    ``client.scheduler.<op>(...)``)."""
    return _internals[0].ask(client, op, keys, payload)


def actor(client: Any) -> ClientActor:
    """The actor behind ``client`` (``protocol.client.ClientState``): what it sends on its
    stream goes through it."""
    return _internals[0].actor(client)


def future_for(client: Any, key: str, origin: str) -> Any:
    """A new reference of ``client``'s to ``key``, counted (a Variable's or a Queue's key)."""
    return _internals[0].future(client, key, origin)


def check_open(client: Any, op: str) -> None:
    """Raise dask's ``ClosedClientError`` if ``client`` is closed (``op``: what it was to send)."""
    _internals[0].check_open(client, op)


def state_of(future: Any) -> Any:
    """The ``FutureState`` behind ``future`` (its reason, error and when it was done), or
    None while it is unbound."""
    return _internals[0].state(future)


def adopt(future: Any, client: Any) -> list[Any]:
    """Bind an unbound ``future`` to ``client`` in place (dask's ``bind_client``): a
    reference of ``client``'s now; the messages that announce it on its stream."""
    return _internals[0].adopt(future, client)
