"""The user-facing ``Client`` and ``Future``, shaped like dask's.

Every ``Future`` object adds one to its key's refcount on the client; dropping
it (``del``, rebinding a name, ``release()``) takes one away, and at zero the
client queues ``client-releases-keys``.  A dropped future is not released
inside ``__del__`` — the garbage collector may run that in any thread, in the
middle of any step — but queued, and the cluster applies the queue at its next
safe point, as dask's ``Future.__del__`` defers to the event loop.

Everything sent is serialized here, before any state changes, so data that
cannot be pickled is refused with the cluster untouched.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from .errors import (
    FutureCancelledError,
    FutureLostError,
    FutureReleasedError,
    HeldMessagesError,
    ResultSerializationError,
)
from .protocol.client import BORROWED, CANCELLED, ERROR, FINISHED, ClientState, FutureState
from .protocol.messages import Message
from .protocol.serialize import Dep, adopting, dumps, loads, reduce_future, sending, tokenize

if TYPE_CHECKING:
    from .cluster import Cluster

_PACKAGE = os.path.dirname(os.path.abspath(__file__))


def _user_cell() -> str | None:
    """``file:line`` of the first frame outside this package: the user's line."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame = frame.f_back
    return f"{frame.f_code.co_filename}:{frame.f_lineno}" if frame is not None else None


def _key_prefix(obj: Any) -> str:
    name = getattr(obj, "__name__", None) or type(obj).__name__
    return name.strip("<>") or "task"


class Future:
    """A reference to a key held by one client.  Drop it and the refcount drops."""

    __slots__ = ("key", "client", "id", "_fs", "_released", "__weakref__")

    def __init__(self, client: Client, key: str, fs: FutureState, future_id: int):
        self.key = key
        self.client = client
        self.id = future_id
        self._fs = fs
        self._released = False

    @property
    def status(self) -> str:
        """``pending``, ``finished``, ``lost``, ``cancelled``, ``error``, ``released``,
        or ``borrowed`` (deserialized inside a task under ``fixed``: it holds nothing)."""
        return "released" if self._released else self._fs.state

    @property
    def borrowed(self) -> bool:
        return self._fs.state == BORROWED

    def done(self) -> bool:
        return self.status in (FINISHED, CANCELLED, ERROR)

    def cancelled(self) -> bool:
        return self.status == CANCELLED

    def result(self, timeout: float | None = None) -> Any:
        """The value, fetched from the worker.  Raises what the task raised, or why it is gone."""
        return self.client.gather(self, timeout=timeout)

    def release(self) -> None:
        """Drop this reference now (as ``del`` would, without waiting for the GC)."""
        if self._released:
            return
        self._released = True
        if self.borrowed:
            return
        self.client.cluster.drop(self.client._state, self.key)

    def __del__(self) -> None:
        try:
            if not self._released:
                self._released = True
                if not self.borrowed:
                    self.client.cluster.drop(self.client._state, self.key)
        except Exception:  # noqa: BLE001 - interpreter shutdown; nothing to tell
            pass

    # Pickled (inside task arguments or a result), a future travels as its key.
    __reduce__ = reduce_future

    def __repr__(self) -> str:
        return f"<Future: {self.status}, key: {self.key}>"


def _pack(args: tuple, kwargs: dict[str, Any], deps: dict[str, Future]) -> tuple[tuple, dict]:
    """Replace the futures passed directly as arguments by :class:`Dep` placeholders.

    Those are dependencies: the worker receives their values.  A future nested
    deeper (in a list or a dict) is not unpacked: it travels pickled with the
    task and is deserialized on the worker as a future — the vehicle of race 2.
    (dask unpacks lists and dicts too; here they are the simplest way to send a
    future itself, as dask's Variables and Queues do.)
    """
    def pack(obj: Any) -> Any:
        if type(obj) is Future:
            deps[obj.key] = obj
            return Dep(obj.key)
        return obj

    return tuple(pack(a) for a in args), {k: pack(v) for k, v in kwargs.items()}


class Client:
    """One client of a :class:`~jupyter_refs.cluster.Cluster`: ``cluster.client()``."""

    def __init__(self, cluster: Cluster, state: ClientState):
        self.cluster = cluster
        self._state = state

    @property
    def name(self) -> str:
        return self._state.name

    def __repr__(self) -> str:
        return f"<Client {self.name} holding {len(self._state.refcount)} keys>"

    def refcount(self, key: str) -> int:
        self.cluster.apply_drops()
        return self._state.refcount.get(key, 0)

    def _future(self, key: str, origin: str) -> tuple[Future, bool]:
        fs, new, future_id = self._state.acquire(key, origin)
        return Future(self, key, fs, future_id), new

    def _adopt(self, key: str, task: str | None = None) -> tuple[Future, list[Message]]:
        """A future deserialized for this client (``adopting``'s callback)."""
        fs, messages, future_id = self._state.adopt(key, task)
        return Future(self, key, fs, future_id), messages

    # -- scatter -------------------------------------------------------------------

    def scatter(self, data: Any, hash: bool = True, workers: list[str] | None = None) -> Any:
        """Send data to the workers; returns a future (or a list / dict of them).

        With ``hash=True`` (the default, as in dask) the key is derived from the
        value, ``int-<token>``, so scattering the same value twice gives the same
        key — the precondition of race #8576.  On a manual network the scatter
        RPC is left in flight and the future is ``pending`` until it is delivered.
        """
        cell = _user_cell()
        if isinstance(data, dict):
            items = [(str(k), v) for k, v in data.items()]
        else:
            values = list(data) if isinstance(data, list | tuple) else [data]
            items = [(None, v) for v in values]
        serialized = [(key, value, dumps(value)) for key, value in items]  # refuse before any id
        blobs: dict[str, bytes] = {}
        for key, value, blob in serialized:
            if key is None:
                key = (f"{_key_prefix(type(value))}-{tokenize(blob)}" if hash
                       else f"{_key_prefix(type(value))}-{self.cluster.new_id(self.name)}")
            blobs[key] = blob
        keys = list(blobs)
        if workers is not None:
            unknown = [w for w in workers if w not in self.cluster.workers]
            if unknown:
                raise ValueError(f"unknown workers {unknown}; the cluster has {list(self.cluster.workers)}")
        cluster = self.cluster
        with cluster.call(cell) as user_call:
            futures, new = {}, {}
            for key in keys:
                futures[key], is_new = self._future(key, "scatter")
                if is_new:
                    new[key] = futures[key]._fs
            rpc, msgs = self._state.scatter(blobs, new, workers)
            user_call.send(msgs)
            if cluster.policy.autonomous:
                pending = self._state.scatters
                user_call.wait(lambda: rpc not in pending, f"scatter of {', '.join(keys)}")
        if isinstance(data, dict):
            return {k: futures[str(k)] for k in data}
        out = [futures[k] for k in keys]
        return out if isinstance(data, list | tuple) else out[0]

    # -- submit / map ------------------------------------------------------------------

    def submit(self, func: Callable[..., Any], *args: Any, key: str | None = None,
               pure: bool = True, **kwargs: Any) -> Future:
        """Run ``func(*args, **kwargs)`` on a worker; futures in the arguments are dependencies."""
        if not callable(func):
            raise TypeError(f"submit needs a callable, not {type(func).__name__}")
        fblob = dumps(func)
        return self._submit_many(func, fblob, [(key, args, kwargs)], pure, "submit", _user_cell())[0]

    def map(self, func: Callable[..., Any], *iterables: Iterable[Any], key: str | list[str] | None = None,
            pure: bool = True, **kwargs: Any) -> list[Future]:
        """``submit`` once per element, sent to the scheduler as one graph."""
        if not callable(func):
            raise TypeError(f"map needs a callable, not {type(func).__name__}")
        calls = list(zip(*iterables))
        keys = key if isinstance(key, list) else [None] * len(calls)
        if len(keys) != len(calls):
            raise ValueError(f"map got {len(keys)} keys for {len(calls)} calls")
        fblob = dumps(func)
        return self._submit_many(func, fblob, [(k, a, kwargs) for k, a in zip(keys, calls)],
                                 pure, "map", _user_cell())

    def _submit_many(self, func: Callable[..., Any], fblob: bytes,
                     calls: list[tuple[str | None, tuple, dict]], pure: bool, origin: str,
                     cell: str | None) -> list[Future]:
        prefix = _key_prefix(func)
        packed_calls = []
        dep_futures: dict[str, Future] = {}
        for key, args, kwargs in calls:
            deps: dict[str, Future] = {}
            with sending() as travelling:
                ablob = dumps(_pack(args, kwargs, deps) if args or kwargs else ((), {}))
            for f in travelling:
                if f._released:
                    raise FutureReleasedError(
                        f"cannot send {f.key} inside task arguments: that future was released")
            packed_calls.append((key, ablob, tuple(deps), tuple(dict.fromkeys(f.key for f in travelling))))
            dep_futures.update(deps)
        for dep in dep_futures.values():
            if dep._released:
                raise FutureReleasedError(f"cannot compute on {dep.key}: that future was released")
            if dep.client is not self:
                raise ValueError(f"{dep.key} belongs to {dep.client.name}, not {self.name}")
        cluster = self.cluster
        held = [d._fs.scatter_call for d in dep_futures.values() if d._fs.scatter_call]
        if held:
            raise HeldMessagesError(f"{origin} on {', '.join(dep_futures)}",
                                    [m for m in cluster.in_flight if m.channel in held])
        # Keys last, once nothing can refuse the call: a non-hashed key takes an id from
        # the allocator, here in the caller's thread (where race 3 lives).
        tasks: dict[str, dict[str, Any]] = {}
        keys = []
        for key, ablob, deps, carries in packed_calls:
            allocated = key is None and not pure
            if key is None:
                key = (f"{prefix}-{tokenize(fblob, ablob)}" if pure
                       else f"{prefix}-{cluster.new_id(self.name)}")
            tasks[key] = {"func": fblob, "args": ablob, "deps": deps, "allocated": allocated,
                          "carries": carries}
            keys.append(key)
        with cluster.call(cell) as user_call:
            futures = [self._future(key, origin)[0] for key in keys]
            user_call.send(self._state.update_graph(tasks, keys, dep_futures))
        return futures

    # -- gather --------------------------------------------------------------------------

    def gather(self, futures: Any, timeout: float | None = None) -> Any:
        """The values of ``futures`` (a future, or a list / dict of them)."""
        cell = _user_cell()
        if isinstance(futures, Future):
            flat = [futures]
        elif isinstance(futures, dict):
            flat = list(futures.values())
        else:
            flat = list(futures)
        for f in flat:
            if not isinstance(f, Future):
                raise TypeError(f"gather takes futures, not {type(f).__name__}")
            if f._released:
                raise FutureReleasedError(
                    f"{f.key}: this future was released; its result is no longer available")
            if f.client is not self:
                raise ValueError(f"{f.key} belongs to {f.client.name}, not {self.name}")
        cluster = self.cluster
        keys = tuple(dict.fromkeys(f.key for f in flat))
        states = [f._fs for f in flat]
        with cluster.call(cell) as user_call:
            user_call.wait(lambda: all(fs.state in (FINISHED, CANCELLED, ERROR) for fs in states),
                           f"result of {', '.join(keys)}", timeout, lambda: self._held_for(keys))
            for f in flat:
                self._raise_if_failed(f)
            rpc, msgs = self._state.gather(keys)
            user_call.send(msgs)
            gathered = self._state.gathers[rpc]
            try:
                user_call.wait(lambda: gathered.done, f"gather of {', '.join(keys)}", timeout)
            finally:
                del self._state.gathers[rpc]
            if gathered.errors:
                key, text = next(iter(gathered.errors.items()))
                raise ResultSerializationError(f"the result of {key} cannot be sent back: {text}")
            if gathered.missing:
                raise FutureLostError(gathered.missing[0])
            # Futures inside the results become this client's (under the lock: they
            # change its refcounts, and under legacy each new hold is announced).
            with adopting(self._adopt) as adoption:
                values = {k: loads(v) for k, v in gathered.data.items()}
            user_call.send(adoption.messages)
        if isinstance(futures, Future):
            return values[futures.key]
        if isinstance(futures, dict):
            return {k: values[f.key] for k, f in futures.items()}
        return [values[f.key] for f in flat]

    def _raise_if_failed(self, f: Future) -> None:
        fs = f._fs
        if fs.state == CANCELLED:
            raise FutureCancelledError(f.key, fs.reason or "cancelled")
        if fs.state == ERROR:
            raise loads(fs.error)

    def _held_for(self, keys: tuple[str, ...]) -> list[Any]:
        wanted = set(keys)
        in_flight = self.cluster.in_flight
        return [m for m in in_flight if wanted.intersection(m.keys)] or in_flight
