"""dask's module-level helpers on the kernel-side cluster: wait, as_completed, Variable, Queue.

Signatures and behaviour are dask's (``distributed.client.wait``,
``as_completed``, ``distributed.Variable``, ``distributed.Queue``).  Waiting
goes through the cluster's one path for user calls, so on a stepped network
it delivers messages (and runs tasks) until what it waits for has happened,
and on a manual network it says which held messages it needs.

``Variable`` and ``Queue`` speak the scheduler extensions' protocol
(``protocol/extensions.py``): their RPCs beside the client's batched stream,
the pseudo-clients that hold their keys, the confirmations a reader sends.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from concurrent.futures._base import DoneAndNotDoneFutures
from numbers import Number
from typing import Any

from dask.utils import parse_timedelta

from .client import Client, Future, _futures_in, _user_cell, default_client
from .errors import FutureCancelledError, FuturesCancelledError
from .protocol import messages as m
from .protocol.client import CANCELLED, DONE, ERROR, PENDING
from .protocol.serialize import dumps, loads

ALL_COMPLETED, FIRST_COMPLETED = "ALL_COMPLETED", "FIRST_COMPLETED"


def _flat(fs: Any) -> list[Future]:
    out: list[Future] = []
    _futures_in([fs] if isinstance(fs, Future) else list(fs), out)
    return out


def futures_of(obj: Any) -> list[Future]:
    """The futures in ``obj``: in lists, tuples, sets and dicts, and in the tasks of a dask
    collection's graph (dask's ``futures_of``)."""
    from dask import is_dask_collection
    from dask._task_spec import Task

    out: list[Future] = []
    stack = [obj]
    while stack:
        x = stack.pop()
        if isinstance(x, Future):
            out.append(x)
        elif type(x) in (list, tuple, set, frozenset):
            stack.extend(x)
        elif type(x) is dict:
            stack.extend(x.values())
        elif isinstance(x, Task):
            stack.extend((*x.args, *x.kwargs.values()))
        elif is_dask_collection(x):
            stack.extend(x.__dask_graph__().values())
    return list(dict.fromkeys(reversed(out)))


def _wait_for(futures: list[Future], done: Any, what: str, timeout: float | None,
              first: bool = False) -> None:
    if not futures or done():
        return
    client = futures[0].client
    if client is None:
        raise RuntimeError(f"{futures[0]!r} is not bound to a client")
    with client.cluster.call(_user_cell()) as user_call:
        user_call.wait(done, what, timeout, first=first)


def wait(fs: Any, timeout: float | None = None,
         return_when: str = ALL_COMPLETED) -> DoneAndNotDoneFutures:
    """Wait until all (or the first) of the futures are done; raise if any was cancelled."""
    if isinstance(timeout, str):
        timeout = parse_timedelta(timeout, default="s")
    if timeout is not None and not isinstance(timeout, Number):
        raise TypeError("timeout= keyword received a non-numeric value.\n"
                        "Beware that wait expects a list of values\n"
                        "  Bad:  wait(x, y, z)\n  Good: wait([x, y, z])")
    futures = futures_of(fs)  # dask's: a collection's futures too (``wait(x.persist())``)
    if return_when == ALL_COMPLETED:
        done = lambda: all(f.status in DONE for f in futures)  # noqa: E731
    elif return_when == FIRST_COMPLETED:
        done = lambda: any(f.status in DONE for f in futures)  # noqa: E731
    else:
        raise NotImplementedError(
            "Only return_when='ALL_COMPLETED' and 'FIRST_COMPLETED' are supported")
    _wait_for(futures, done, f"wait for {len(futures)} futures", timeout,
              first=return_when == FIRST_COMPLETED)
    done_set = {f for f in futures if f.status != PENDING}
    cancelled = [f for f in done_set if f.status == CANCELLED]
    if cancelled:
        raise FuturesCancelledError([
            FutureCancelledError(f.key, f._fs.reason, f._fs.error.decode() if f._fs.error else None)
            for f in cancelled])
    return DoneAndNotDoneFutures(done_set, {f for f in futures if f.status == PENDING})


class as_completed(Iterator[Any]):  # noqa: N801 - dask's name
    """Iterate over futures in the order they complete (``with_results``: with their values)."""

    def __init__(self, futures: Any = None, loop: Any = None, with_results: bool = False,
                 raise_errors: bool = True, *, timeout: float | None = None):
        self.futures: list[Future] = []
        self.with_results = with_results
        self.raise_errors = raise_errors
        self.timeout = timeout
        if futures:
            self.update(futures)

    def add(self, future: Future) -> None:
        self.futures.append(future)

    def update(self, futures: Any) -> None:
        for f in futures:  # dask's: futures only, each one given (not looked into)
            if not isinstance(f, Future):
                raise TypeError(f"Input must be a future, got {f}")
            self.add(f)

    def count(self) -> int:
        return len(self.futures)

    def is_empty(self) -> bool:
        return not self.futures

    def has_ready(self) -> bool:
        return any(f.status in DONE for f in self.futures)

    def clear(self) -> None:
        self.futures.clear()

    def __iter__(self) -> as_completed:
        return self

    def _ready(self) -> list[Future]:
        ready = [f for f in self.futures if f.status in DONE]
        return sorted(ready, key=lambda f: f._fs.done_seq)

    def __next__(self) -> Any:
        if not self.futures:
            raise StopIteration
        _wait_for(self.futures, self.has_ready, "as_completed", self.timeout, first=True)
        future = self._ready()[0]
        self.futures.remove(future)
        if not self.with_results:
            return future
        if future.status == ERROR:
            exc = future.exception()
            if self.raise_errors:
                raise exc
            return future, (type(exc), exc, exc.__traceback__)  # dask's clean_exception
        try:
            return future, future.result()
        except FutureCancelledError as exc:
            return future, exc

    next = __next__

    def next_batch(self, block: bool = True) -> list[Any]:
        if not block and not self.has_ready():
            return []
        batch = [next(self)]
        while self.futures and self.has_ready():
            batch.append(next(self))
        return batch

    def batches(self) -> Iterator[list[Any]]:
        while self.futures:
            yield self.next_batch()


def _client(client: Client | None) -> Client:
    client = client or default_client()
    if client is None:
        raise ValueError("No clients found\nStart a client: jupyter_refs.Client(cluster)")
    return client


def _as_future(client: Client, reply: dict[str, Any]) -> Future:
    """A future for a key the scheduler handed out (a Variable's or a Queue's)."""
    future, _ = client._future(reply["value"], "variable")
    fs = future._fs
    if reply.get("state") == "erred" and fs.state == PENDING:
        fs.error = reply.get("exception")
        client._state._set_state(future.key, fs, ERROR, None, reply.get("text"))
    return future


def _stored(name: str, value: Any) -> tuple[tuple[str, ...], dict[str, Any]]:
    """What a Variable or a Queue sends for ``value``: a future's key, or the value pickled."""
    if isinstance(value, Future):
        return (value.key,), {"name": name, "key": value.key}
    return (), {"name": name, "data": dumps(value)}


def _received(client: Client, record: dict[str, Any], user_call: Any, op: str,
              **payload: Any) -> Any:
    """What the scheduler handed back: the value, or a future this client now holds,
    announced with ``op`` on its batched stream (a confirmation, a queue release)."""
    if record["type"] != "Future":
        return loads(record["value"])
    future = _as_future(client, record)
    user_call.send(client._state.send(op, (future.key,), **payload))
    return future


class Variable:
    """A named, cluster-wide value or future (``distributed.Variable``)."""

    def __init__(self, name: str | None = None, client: Client | None = None):
        self.name = name or f"variable-{uuid.uuid4().hex}"
        self._client = client

    @property
    def client(self) -> Client:
        return _client(self._client)

    def set(self, value: Any, timeout: Any = "30 s", **kwargs: Any) -> None:
        """Set the value; a future's key is then held by the variable as well.

        A future whose key the scheduler does not know waits for it until ``timeout``
        (dask's ``"30 s"``, or seconds), then raises ``TimeoutError``, as dask's poll does.
        """
        keys, payload = _stored(self.name, value)
        self.client._ask(m.VARIABLE_SET, keys, timeout=parse_timedelta(timeout), **payload)

    def get(self, timeout: float | None = None, **kwargs: Any) -> Any:
        """The value; a future comes back as this client's, confirmed to the scheduler."""
        client = self.client
        reply = client._ask(m.VARIABLE_GET, name=self.name, timeout=timeout)
        with client.cluster.call(None) as user_call:
            return _received(client, reply, user_call, m.VARIABLE_CONFIRM, name=self.name,
                             token=reply.get("token"))

    def delete(self) -> None:
        self.client._ask(m.VARIABLE_DELETE, name=self.name)

    def __reduce__(self) -> tuple:
        return Variable, (self.name,)

    def __repr__(self) -> str:
        return f"<Variable: {self.name}>"


class Queue:
    """A cluster-wide FIFO of values and futures (``distributed.Queue``)."""

    def __init__(self, name: str | None = None, client: Client | None = None, maxsize: int = 0):
        self.name = name or f"queue-{uuid.uuid4().hex}"
        self._client = client
        self.maxsize = maxsize
        self._created = False
        self._create()

    def _create(self) -> None:
        if not self._created:
            self.client._ask(m.QUEUE_CREATE, name=self.name, maxsize=self.maxsize)
            self._created = True

    @property
    def client(self) -> Client:
        return _client(self._client)

    def put(self, value: Any, timeout: float | None = None, **kwargs: Any) -> None:
        self._create()
        keys, payload = _stored(self.name, value)
        self.client._ask(m.QUEUE_PUT, keys, timeout=timeout, **payload)

    def get(self, timeout: float | None = None, batch: bool | int = False, **kwargs: Any) -> Any:
        """The next item (``batch=True``: all of them; ``batch=n``: the next n)."""
        self._create()
        client = self.client
        n = None if batch is True else (batch or None)
        reply = client._ask(m.QUEUE_GET, name=self.name, timeout=timeout, batch=bool(batch), n=n)
        with client.cluster.call(None) as user_call:
            out = [_received(client, record, user_call, m.QUEUE_FUTURE_RELEASE, name=self.name)
                   for record in reply["records"]]
        return out if batch else out[0]

    def qsize(self, **kwargs: Any) -> int:
        self._create()
        return self.client._ask(m.QUEUE_QSIZE, name=self.name)["qsize"]

    def close(self) -> None:
        self.client._ask(m.QUEUE_RELEASE, name=self.name)

    def __reduce__(self) -> tuple:
        return _unpickled_queue, (self.name, self.maxsize)

    def __repr__(self) -> str:
        return f"<Queue: {self.name}>"


def _unpickled_queue(name: str, maxsize: int) -> Queue:
    """A Queue arriving in a task's arguments or closure: it asks the scheduler for its queue
    when first used, in the task's thread, not while being unpickled (that runs on the
    thread that delivers the scheduler's replies, so asking there waited for ever)."""
    queue = Queue.__new__(Queue)
    queue.name, queue._client, queue.maxsize, queue._created = name, None, maxsize, False
    return queue
