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

from .client_parts import (
    ClientLike,
    FutureBase,
    FutureLike,
    actor,
    ask,
    default_client,
    future_for,
    state_of,
)
from .errors import (
    FutureCancelledError,
    FuturesCancelledError,
    NotModelledError,
)
from .flavoured import dask_flavoured
from .protocol import messages as m
from .protocol.client import CANCELLED, DONE, ERROR, PENDING
from .protocol.serialize import dumps, loads
from .userline import user_cell

ALL_COMPLETED, FIRST_COMPLETED = "ALL_COMPLETED", "FIRST_COMPLETED"


def futures_of(obj: Any) -> list[FutureLike]:
    """The futures in ``obj``: in lists, tuples, sets and dicts, and in the tasks of a dask
    collection's graph (dask's ``futures_of``)."""
    from dask import is_dask_collection
    from dask._task_spec import Task

    out: list[FutureLike] = []
    stack = [obj]
    while stack:
        x = stack.pop()
        if isinstance(x, FutureBase):
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


def _wait_for(futures: list[FutureLike], done: Any, what: str, timeout: float | None,
              first: bool = False) -> None:
    if not futures or done():
        return
    client = futures[0].client
    if client is None:
        raise RuntimeError(f"{futures[0]!r} is not bound to a client")
    with client.cluster.call(user_cell()) as user_call:
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
        raise dask_flavoured(FuturesCancelledError)([
            dask_flavoured(FutureCancelledError)(
                f.key, fs.reason, fs.error.decode() if fs.error else None)
            for f in cancelled for fs in [state_of(f)]])
    return DoneAndNotDoneFutures(done_set, {f for f in futures if f.status == PENDING})


class as_completed(Iterator[Any]):  # noqa: N801 - dask's name
    """Iterate over futures in the order they complete (``with_results``: with their values)."""

    def __init__(self, futures: Any = None, loop: Any = None, with_results: bool = False,
                 raise_errors: bool = True, *, timeout: float | None = None):
        self.futures: list[FutureLike] = []
        self.with_results = with_results
        self.raise_errors = raise_errors
        self.timeout = timeout
        if futures:
            self.update(futures)

    def add(self, future: FutureLike) -> None:
        self.futures.append(future)

    def update(self, futures: Any) -> None:
        for f in futures:  # dask's: futures only, each one given (not looked into)
            if not isinstance(f, FutureBase):
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

    def _ready(self) -> list[FutureLike]:
        ready = [f for f in self.futures if f.status in DONE]
        return sorted(ready, key=lambda f: state_of(f).done_seq)

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


def _client(client: ClientLike | None) -> ClientLike:
    client = client or default_client()
    if client is None:
        raise ValueError("No clients found\nStart a client: jupyter_refs.Client(cluster)")
    return client


def _as_future(client: ClientLike, reply: dict[str, Any]) -> FutureLike:
    """A future for a key the scheduler handed out (a Variable's or a Queue's)."""
    future = future_for(client, reply["value"], "variable")
    fs = state_of(future)
    if reply.get("state") == "erred" and fs.state == PENDING:
        fs.error = reply.get("exception")
        actor(client).set_state(future.key, fs, ERROR, None, reply.get("text"))
    return future


def _stored(name: str, value: Any) -> tuple[tuple[str, ...], dict[str, Any]]:
    """What a Variable or a Queue sends for ``value``: a future's key, or the value pickled."""
    if isinstance(value, FutureBase):
        return (value.key,), {"name": name, "key": value.key}
    return (), {"name": name, "data": dumps(value)}


def _received(client: ClientLike, record: dict[str, Any], user_call: Any, op: str,
              **payload: Any) -> Any:
    """What the scheduler handed back: the value, or a future this client now holds,
    announced with ``op`` on its batched stream (a confirmation, a queue release)."""
    if record["type"] != "Future":
        return loads(record["value"])
    future = _as_future(client, record)
    # The hold it is: fixed's scheduler reports on the key to this hold (dask ignores it).
    user_call.send(actor(client).send(op, (future.key,), gen=state_of(future).gen, **payload))
    return future


class Variable:
    """A named, cluster-wide value or future (``distributed.Variable``)."""

    def __init__(self, name: str | None = None, client: ClientLike | None = None):
        self.name = name or f"variable-{uuid.uuid4().hex}"
        self._client = client

    @property
    def client(self) -> ClientLike:
        return _client(self._client)

    def set(self, value: Any, timeout: Any = "30 s", **kwargs: Any) -> None:
        """Set the value; a future's key is then held by the variable as well.

        A future whose key the scheduler does not know waits for it until ``timeout``
        (dask's ``"30 s"``, or seconds), then raises ``TimeoutError``, as dask's poll does.
        """
        keys, payload = _stored(self.name, value)
        ask(self.client, m.VARIABLE_SET, keys, timeout=parse_timedelta(timeout), **payload)

    def get(self, timeout: float | None = None, **kwargs: Any) -> Any:
        """The value; a future comes back as this client's, confirmed to the scheduler."""
        client = self.client
        reply = ask(client, m.VARIABLE_GET, name=self.name, timeout=timeout)
        with client.cluster.call(None) as user_call:
            return _received(client, reply, user_call, m.VARIABLE_CONFIRM, name=self.name,
                             token=reply.get("token"))

    def delete(self) -> None:
        ask(self.client, m.VARIABLE_DELETE, name=self.name)

    def __reduce__(self) -> tuple:
        return Variable, (self.name,)

    def __repr__(self) -> str:
        return f"<Variable: {self.name}>"


class Queue:
    """A cluster-wide FIFO of values and futures (``distributed.Queue``)."""

    def __init__(self, name: str | None = None, client: ClientLike | None = None, maxsize: int = 0):
        self.name = name or f"queue-{uuid.uuid4().hex}"
        self._client = client
        self.maxsize = maxsize
        self._created = False
        self._create()

    def _create(self) -> None:
        if not self._created:
            ask(self.client, m.QUEUE_CREATE, name=self.name, maxsize=self.maxsize)
            self._created = True

    @property
    def client(self) -> ClientLike:
        return _client(self._client)

    def put(self, value: Any, timeout: float | None = None, **kwargs: Any) -> None:
        self._create()
        keys, payload = _stored(self.name, value)
        ask(self.client, m.QUEUE_PUT, keys, timeout=timeout, **payload)

    def get(self, timeout: float | None = None, batch: bool | int = False, **kwargs: Any) -> Any:
        """The next item (``batch=True``: all of them; ``batch=n``: the next n)."""
        self._create()
        client = self.client
        n = None if batch is True else (batch or None)
        reply = ask(client, m.QUEUE_GET, name=self.name, timeout=timeout, batch=bool(batch), n=n)
        with client.cluster.call(None) as user_call:
            out = [_received(client, record, user_call, m.QUEUE_FUTURE_RELEASE, name=self.name)
                   for record in reply["records"]]
        return out if batch else out[0]

    def qsize(self, **kwargs: Any) -> int:
        self._create()
        return ask(self.client, m.QUEUE_QSIZE, name=self.name)["qsize"]

    def close(self) -> None:
        ask(self.client, m.QUEUE_RELEASE, name=self.name)

    def __reduce__(self) -> tuple:
        return _unpickled_queue, (self.name, self.maxsize)

    def __repr__(self) -> str:
        return f"<Queue: {self.name}>"


def _unpickled_queue(name: str, maxsize: int) -> Queue:
    """A Queue unpickled: dask's registers it with the scheduler at once (``queue_create``);
    here at its first use, since a task's arguments are unpickled while the network delivers
    the task, and an RPC waited for there would wait on the thread that must deliver it."""
    queue = Queue.__new__(Queue)
    queue.name, queue._client, queue.maxsize, queue._created = name, None, maxsize, False
    return queue


def answered(reply: dict[str, Any]) -> dict[str, Any]:
    """A scheduler extension's reply, or the error it answered with, raised as dask raises it."""
    if "error" in reply:
        raise {"ValueError": ValueError, "RuntimeError": RuntimeError, "KeyError": KeyError,
               "TypeError": TypeError,
               "NotModelledError": NotModelledError}[reply["type"]](reply["error"])
    return reply


def _waited(client: ClientLike, op: str, timeout: Any, **payload: Any) -> bool:
    """A call the scheduler parks until it can answer: True when answered, False at the
    timeout (dask's event and semaphore waits return False rather than raise)."""
    try:
        answered(ask(client, op, timeout=parse_timedelta(timeout), **payload))
    except TimeoutError:
        return False
    return True


class Event:
    """A cluster-wide flag, cleared at first (``distributed.Event``): ``wait`` blocks until
    some client sets it."""

    def __init__(self, name: str | None = None, client: ClientLike | None = None):
        self.name = name or f"event-{uuid.uuid4().hex}"
        self._client = client

    @property
    def client(self) -> ClientLike:
        return _client(self._client)

    def wait(self, timeout: Any = None) -> bool:
        """Wait until the event is set: True, or False after ``timeout``."""
        return _waited(self.client, m.EVENT_WAIT, timeout, name=self.name)

    def set(self) -> None:
        ask(self.client, m.EVENT_SET, name=self.name)

    def clear(self) -> None:
        ask(self.client, m.EVENT_CLEAR, name=self.name)

    def is_set(self) -> bool:
        return ask(self.client, m.EVENT_IS_SET, name=self.name)["value"]

    def __reduce__(self) -> tuple:
        return Event, (self.name,)

    def __repr__(self) -> str:
        return f"<Event: {self.name}>"


class Semaphore:
    """``distributed.Semaphore``: at most ``max_leases`` holders at once, leases kept by the
    scheduler.  dask's leases time out when their holder stops refreshing them; here they do
    not (as with ``distributed.scheduler.locks.lease-timeout: inf``)."""

    def __init__(self, max_leases: int = 1, name: str | None = None, scheduler_rpc: Any = None,
                 loop: Any = None, *, client: ClientLike | None = None):
        self.name = name or f"semaphore-{uuid.uuid4().hex}"
        self.max_leases = max_leases
        self.id = uuid.uuid4().hex
        self._client = client
        self._leases: list[str] = []
        self._registered = False

    @property
    def client(self) -> ClientLike:
        return _client(self._client)

    def register(self, **kwargs: Any) -> None:
        if not self._registered:
            answered(ask(self.client, m.SEMAPHORE_REGISTER, name=self.name,
                                     max_leases=self.max_leases))
            self._registered = True

    def acquire(self, timeout: Any = None) -> bool:
        """Take a lease: True, or False if none came free within ``timeout``."""
        self.register()
        lease = uuid.uuid4().hex
        if _waited(self.client, m.SEMAPHORE_ACQUIRE, timeout, name=self.name, lease_id=lease):
            self._leases.append(lease)
            return True
        return False

    def release(self) -> bool:
        """Give the oldest lease back (``RuntimeError`` if this one holds none)."""
        if not self._leases:
            raise RuntimeError("Released too often")
        ask(self.client, m.SEMAPHORE_RELEASE, name=self.name, lease_id=self._leases.pop(0))
        return True

    def get_value(self) -> int:
        """How many leases are held."""
        return ask(self.client, m.SEMAPHORE_VALUE, name=self.name)["value"]

    def close(self) -> None:
        ask(self.client, m.SEMAPHORE_CLOSE, name=self.name)

    def __enter__(self) -> Semaphore:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __getstate__(self) -> tuple[str, int]:
        return self.name, self.max_leases

    def __setstate__(self, state: tuple[str, int]) -> None:
        name, max_leases = state
        self.__init__(name=name, max_leases=max_leases)

    def __repr__(self) -> str:
        return f"<{type(self).__name__}: {self.name}>"


class Lock(Semaphore):
    """``distributed.Lock``: a Semaphore of one lease, as dask's is."""

    def __init__(self, name: str | None = None, scheduler_rpc: Any = None, loop: Any = None,
                 *, client: ClientLike | None = None):
        super().__init__(max_leases=1, name=name, client=client)

    def acquire(self, blocking: bool = True, timeout: Any = None) -> bool:
        if not blocking:
            if timeout is not None:
                raise ValueError("can't specify a timeout for a non-blocking call")
            timeout = 0
        return super().acquire(timeout=timeout)

    def locked(self) -> bool:
        return self.get_value() == 1

    def __getstate__(self) -> str:  # type: ignore[override]
        return self.name

    def __setstate__(self, state: str) -> None:  # type: ignore[override]
        self.__init__(name=state)
