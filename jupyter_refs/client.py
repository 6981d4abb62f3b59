"""The user-facing ``Client`` and ``Future``: dask's API, on the kernel-side cluster.

A dask user's program should run here unchanged and behave as on
``distributed`` (the conformance suite, ``tests/conformance/``, checks it):
futures anywhere inside list / tuple / set / dict arguments are dependencies,
scheduling options (``workers=``, ``retries=``, ``priority=`` …) never reach the
function, keys are dask's own (``dask.tokenize``, ``dask.utils.funcname``), and
``scatter`` / ``gather`` keep their containers.  A dask feature the model does
not have raises :class:`~jupyter_refs.errors.NotModelledError`.

Every ``Future`` object adds one to its key's refcount on the client; dropping
it (``del``, rebinding a name, ``release()``) takes one away, and at zero the
client queues ``client-releases-keys``.  A dropped future is not released
inside ``__del__`` — the garbage collector may run that in any thread, in the
middle of any step — but queued, and the cluster applies the queue at its next
safe point, as dask's ``Future.release`` defers ``_dec_ref`` to the event loop.

Everything sent is serialized here, before any state changes, so data that
cannot be pickled is refused with the cluster untouched.
"""

from __future__ import annotations

import copy
import json
import os
import queue
import sys
import threading
import types
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from hashlib import md5
from itertools import count, repeat
from typing import Any

import cloudpickle
import dask

try:
    from dask.tokenize import normalize_token, tokenize
except ImportError:  # dask 2024.8 (the zoo's old releases) keeps them in dask.base
    from dask.base import normalize_token, tokenize
from dask._task_spec import TaskRef
from dask.utils import funcname, typename

from . import arguments, client_parts, gcscope, interrupts, publish
from .addresses import SchedulerRPC, cluster_at
from .client_admin import ClusterCalls
from .client_events import TopicCalls
from .client_parts import FutureBase, default_client, make_default
from .cluster import Cluster
from .computation_code import computation_code
from .coordination import answered, futures_of
from .errors import (
    ClosedClientError,
    FutureCancelledError,
    FutureLostError,
    NotModelledError,
    ResultSerializationError,
    SchedulerHandlerError,
    SerializationError,
)
from .flavoured import dask_flavoured
from .local_cluster import LocalCluster
from .loop import EventLoop
from .plugins import PluginCalls
from .profiler import ProfileCalls, driver_frame
from .protocol import messages as m
from .protocol import serialize
from .protocol.client import BORROWED, CANCELLED, DONE, ERROR, ClientState, FutureState
from .protocol.messages import Message
from .protocol.serialize import CONTAINERS, Dep, adopting, dumps, loads, reduce_future, sending
from .protocol.variants import UUID
from .task_runs import current_run
from .task_stream import TaskStreamCalls
from .userline import short_traceback, shortened, user_cell


def check_serializable(value: Any) -> None:
    """Raise :class:`SerializationError` if ``value`` cannot travel to a worker, as ``scatter``
    would — for a caller that must refuse before it changes anything (``%scatter`` drops the
    future its name held, and must not when the new value cannot be sent)."""
    dumps(value)


def _not_initialized() -> RuntimeError:
    return RuntimeError(
        f"{Future} object not properly initialized. This can happen if the object is being "
        "deserialized outside of the context of a Client or Worker.")


class Future(TaskRef, FutureBase):
    """A reference to a key held by one client.  Drop it and the refcount drops.

    ``Future(key, client)`` makes another reference to a key the client knows,
    as in dask; a future deserialized where no client adopts it is *unbound*
    (``status`` None; ``result()`` raises), as dask's is today.
    """

    # A TaskRef, as dask's Future is: inside a dask graph (``delayed(f)(future)``) it is a
    # dependency, replaced by its value where the task runs; equal by key, as dask's.
    __slots__ = ("client", "id", "_fs", "_released", "_id", "__weakref__")
    _uid = uuid.uuid4().hex
    _counter = count()

    def __init__(self, key: str, client: Client | None = None, state: Any = None):
        self.key = key
        self.client = None
        self._fs: FutureState | None = None
        self._released = False
        self._id = (Future._uid, next(Future._counter))
        self.id = 0
        if client is not None:
            with client.cluster.call(user_cell()):
                fs, _, self.id = client._state.acquire(key, "future")
            self.client, self._fs = client, fs

    # dask's Future, not its TaskRef: equal only to itself, hashed by its own id.
    def __eq__(self, other: object) -> bool:
        return self is other

    def __hash__(self) -> int:
        return hash(self._id)

    @classmethod
    def _bound(cls, client: Client, key: str, fs: FutureState, future_id: int) -> Future:
        """A future for a reference the client has just counted (the library's constructor)."""
        f = cls.__new__(cls)
        f.key, f.client, f._fs, f.id = key, client, fs, future_id
        f._released = False
        f._id = (Future._uid, next(Future._counter))
        return f

    # -- state -------------------------------------------------------------------------

    @property
    def status(self) -> str | None:
        """``pending``, ``finished``, ``error``, ``cancelled``, ``lost``; None if unbound."""
        fs = self._fs
        if fs is None or fs.state == BORROWED:
            return None
        return fs.state

    def _verify(self) -> Client:
        if self.client is None or self.status is None:
            raise _not_initialized()
        return self.client

    def done(self) -> bool:
        return self.status in DONE

    def cancelled(self) -> bool:
        return self.status == CANCELLED

    @property
    def type(self) -> type | None:
        """The result's type, once the scheduler has reported it."""
        fs = self._fs
        return loads(fs.type) if fs is not None and fs.type is not None else None

    # -- results -----------------------------------------------------------------------

    def result(self, timeout: float | None = None) -> Any:
        """The value, fetched from a worker.  Raises what the task raised, or why it is gone."""
        with short_traceback():
            return self._verify().gather(self, timeout=timeout)

    def exception(self, timeout: float | None = None) -> BaseException | None:
        """The exception the task raised (None if it did not fail), once it is done."""
        client = self._verify()
        client._wait_done([self], timeout)
        return loads(self._fs.error) if self._fs.state == ERROR else None

    def traceback(self, timeout: float | None = None) -> Any:
        """The traceback of a failed task (None otherwise); its text is the worker's."""
        exc = self.exception(timeout)
        if exc is None:
            return None
        try:
            raise exc
        except BaseException as raised:  # noqa: BLE001 - we only want its traceback
            return raised.__traceback__

    # -- actions -----------------------------------------------------------------------

    def cancel(self, reason: str | None = None, msg: str | None = None, **kwargs: Any) -> Any:
        """Cancel the key: the future is cancelled now, the scheduler told after
        (``asynchronous=True``: when the awaitable returned is awaited, as dask's)."""
        return self._verify().cancel([self], reason=reason, msg=msg, **kwargs)

    def add_done_callback(self, fn: Callable[[Future], Any]) -> None:
        """Call ``fn(self)`` in a callback thread once the future is done (at once if it is)."""
        self._verify()._add_done_callback(self, fn)

    def retry(self, **kwargs: Any) -> None:
        """Run the erred task again (and the erred tasks it depends on): dask's ``retry``."""
        self._verify().retry([self], **kwargs)

    def release(self) -> None:
        """Drop this reference (as ``del`` does); the refcount drops at the next safe point."""
        if self.client is None:
            raise _not_initialized()  # dask's ``_verify_initialized``
        if self._released:
            return
        self._drop()
        # Called by the user, not the GC: the release is applied now, as dask's event
        # loop applies it a moment later.
        self.client.cluster.apply_drops()

    def _drop(self) -> None:
        self._released = True
        if self._fs.state != BORROWED:
            # The user's line that dropped it (``del x``, a rebinding, ``x.release()``): a
            # drop by ``del`` runs ``__del__`` right there, in the user's frame.
            try:
                cell = user_cell()
            except ValueError:  # a shallow stack (a finalizer at a thread's start)
                cell = None
            self.client.cluster.drop(self.client._state, self.key, cell)

    # An interrupt landing here would be ignored by Python (an exception in a finalizer is
    # printed, not raised): the cell would go on and this release be lost.  It is raised
    # again once the finalizer has returned (see interrupts.py).
    @interrupts.finalizer
    def __del__(self) -> None:
        try:
            if not self._released and self.client is not None:
                self._drop()
        except Exception:  # noqa: BLE001 - interpreter shutdown; nothing to tell
            pass

    # Pickled (inside task arguments or a result), a future travels as its key.
    __reduce__ = reduce_future

    def __dask_tokenize__(self) -> tuple | list:
        client = self.client
        if client is not None and client.cluster is not None and (
                client.cluster.variant.future_tokens_by_key):
            return [self.key, type(self).__name__]  # before PR 8569: the key's, not its own
        return (type(self).__name__, self.key, self._id)

    def __repr__(self) -> str:
        t = self.type
        if t is not None:
            return f"<Future: {self.status}, type: {typename(t)}, key: {self.key}>"
        return f"<Future: {self.status}, key: {self.key}>"

    __str__ = __repr__


serialize.unbound = Future  # unpickled where no client adopts it: unbound, as in dask


# -- functions, pickled and tokenized once -----------------------------------------------
#
# dask pickles a task's function once (``distributed.worker.dumps_function``, an LRU keyed
# by the function), and tokenizing a function defined in a notebook pickles it up to three
# times: per submit, that was most of a submit's cost.  Both are kept per function object,
# 100 of them, as dask's cache does.
#
# A notebook's function is a new object each time its cell runs — in every run of an
# explored cell (``%%explore``) — so the tokens of ``__main__``'s functions are kept by what
# dask hashes of them, their cloudpickle, as well.

_FUNCTIONS: dict[Callable[..., Any], list[Any]] = {}  # func -> [pickled, normalized token]


def _room(table: dict[Any, Any], limit: int) -> None:
    """Room in ``table`` for one entry more, below ``limit``: its oldest entries go.  Safe
    from any thread (worker threads submit too): another thread making room at the same
    moment takes the same entry or the next one."""
    while len(table) >= limit:
        try:
            table.pop(next(iter(table)), None)
        except (RuntimeError, StopIteration):  # changed while it was read: read it again
            pass


def _remember(func: Callable[..., Any]) -> list[Any]:
    """The function's cache entry (a fresh, unkept one for an unhashable callable)."""
    try:
        hit = _FUNCTIONS.get(func)
    except TypeError:
        return [None, None]
    if hit is None:
        _room(_FUNCTIONS, 100)
        hit = _FUNCTIONS[func] = [None, None]
    return hit


def _dumps_function(func: Callable[..., Any]) -> bytes:
    hit = _remember(func)
    if hit[0] is None:
        hit[0] = dumps(func)
    return hit[0]


#: Normalized tokens of ``__main__``'s functions, by their cloudpickle (see :func:`_main_pickle`).
_MAIN_TOKENS: dict[bytes, _Normalized] = {}
_main_agree: list[bool] = []


def _main_pickle(func: types.FunctionType) -> bytes | None:
    """What dask's ``normalize_token`` hashes of ``func``, if that is all it hashes: the
    cloudpickle of a plain function of ``__main__`` (``_normalize_pickle`` pickles it by
    reference, finds ``__main__`` in the bytes and cloudpickles it, twice, loading each),
    with no out-of-band buffer (their hashes would be part of the token) and no
    ``__dask_tokenize__`` of its own; None for any other, or if it cannot be pickled.

    Its blob to the workers too: ``dumps`` would make these very bytes once plain pickle
    refused it, as it refuses a function a cell run made (``__main__`` has another by
    that name)."""
    if func.__module__ != "__main__" or hasattr(func, "__dask_tokenize__"):
        return None
    buffers: list[Any] = []
    try:
        out = cloudpickle.dumps(func, protocol=5, buffer_callback=buffers.append)
    except Exception:  # noqa: BLE001 - dask's own tokenize decides what this gets
        return None
    return None if buffers else out


def _main_tokens_agree() -> bool:
    """Whether this dask gives two functions of ``__main__`` that pickle to the same bytes the
    same token: two made by one source, each in its own namespace (as two runs of a cell
    make them)."""
    if not _main_agree:
        source = compile("def f(x, y=2):\n    return x + y\n", "<check>", "exec")
        made = []
        for _ in range(2):
            namespace: dict[str, Any] = {"__name__": "__main__"}
            exec(source, namespace)  # noqa: S102 - our own source
            made.append(namespace["f"])
        first, second = made
        blob = _main_pickle(first)
        _main_agree.append(blob is not None and blob == _main_pickle(second)
                           and normalize_token(first) == normalize_token(second))
    return _main_agree[0]


#: Pickled builtin types (what a scattered value's ``type`` travels as), made once each.
_TYPE_BLOBS: dict[type, bytes] = {}


def _type_blob(t: type) -> bytes:
    blob = _TYPE_BLOBS.get(t)
    if blob is None:
        blob = dumps(t)
        if t.__module__ == "builtins":  # a user's class may change: pickled each time
            _TYPE_BLOBS[t] = blob
    return blob


class _Normalized:
    """Stands for a function in ``tokenize``: its normalized token, computed once.

    ``normalize_token`` of an object with ``__dask_tokenize__`` is what that method
    returns, and a plain function normalizes through ``normalize_object`` — so the
    token, and the key, are exactly dask's.
    """

    __slots__ = ("token",)

    def __init__(self, token: Any):
        self.token = token

    def __dask_tokenize__(self) -> Any:
        return self.token


def _tokenized(func: Callable[..., Any]) -> Any:
    if type(func) is not types.FunctionType:
        return func  # builtins, partials, callables: dask's own rules, uncached
    hit = _remember(func)
    if hit[1] is None:
        blob = _main_pickle(func)
        token = None if blob is None else _MAIN_TOKENS.get(blob)
        if token is None or not _main_tokens_agree():
            token = _Normalized(normalize_token(func))
            # Kept when it is the hash of those bytes: a pickle that does not load back
            # normalizes to a random number, new at every call (``_normalize_pickle``).
            normalized = token.token
            if (blob is not None and type(normalized) is tuple and normalized
                    and type(normalized[0]) is str):
                _room(_MAIN_TOKENS, 256)
                _MAIN_TOKENS[blob] = token
        hit[1] = token
        if blob is not None and hit[0] is None:
            hit[0] = dumps(func, cloudpickled=blob)  # (what _dumps_function makes)
    return hit[1]


def _token(*args: Any) -> str:
    """``dask.tokenize(*args)``, hashed here when every argument is of a simple shape.

    Plain values (ints, strings, floats, …: what dask's normaliser passes through
    as they are), tuples, lists and dicts of them, futures and functions already
    normalised (``_Normalized``) normalise as dask's rules say without its locks and
    dispatch; the token is the hash of that form's ``str``, as in ``tokenize``.
    ``submit``, ``map`` (each element) and ``scatter`` (each value) key this way: on
    a 10,000-element ``map`` ``tokenize`` was a tenth of the time.  The shortcut is
    checked against ``tokenize`` once; if a dask version normalises differently, it
    is never taken.  Anything else goes to ``tokenize``.
    """
    single = (type(args[0]), args[0]) if len(args) == 1 and type(args[0]) in _KEPT else None
    if single is not None:
        # One plain value (``scatter(123)``): its token depends on nothing else, and a
        # notebook or the explorer scatters the same few values again and again.
        hit = _SINGLE.get(single)
        if hit is not None:
            return hit
    try:
        normalized = tuple(map(_normalize, args))
    except _NotSimple:
        return tokenize(*args)
    if not _fast_tokens_agree():
        return tokenize(*args)
    token = md5(str(normalized).encode(), usedforsecurity=False).hexdigest()
    if single is not None:
        _room(_SINGLE, 1024)
        _SINGLE[single] = token
    return token


#: Types whose equal values have one ``str``, so one token: a float is not among them
#: (``0.0 == -0.0``), nor a bool kept under an int (the type is part of the key).
_KEPT = frozenset({int, str, bytes, bool})
#: The newest 1,024 single values tokenized, by (type, value).
_SINGLE: dict[tuple[type, Any], str] = {}


def _token_of_call(tok: str, args: tuple) -> str:
    """``_token(tok, args)`` for one element of a ``map``: when every argument is a plain
    value, its normalized form is the tuple itself, so it is hashed without a pass."""
    if not _all_plain(args):
        return _token(tok, args)
    if not _fast_tokens_agree():
        return tokenize(tok, args)
    # The text of str((tok, ("tuple", args))), written out: the same characters without the
    # two tuples, or their reprs (each enters the repr recursion guard), that would make it.
    return md5(f"({tok!r}, ('tuple', {args!r}))".encode(), usedforsecurity=False).hexdigest()


def _all_plain(args: tuple) -> bool:
    """Whether every argument is a plain value: no future can be among them or inside them."""
    for arg in args:
        if type(arg) not in _PLAIN:
            return False
    return True


class _NotSimple(Exception):
    """A value ``_token`` leaves to ``tokenize``."""


_PLAIN = frozenset({int, float, str, bytes, bool, type(None), complex})


def _normalize(obj: Any, depth: int = 0) -> Any:
    t = type(obj)
    if t in _PLAIN:
        return obj
    if depth > 4:
        raise _NotSimple  # deep (or cyclic) structures: dask's rules for what it has seen
    if t is tuple or t is list:
        return t.__name__, tuple(_normalize(o, depth + 1) for o in obj)
    if t is dict:
        items = sorted(obj.items(), key=lambda kv: str(kv[0]))
        return "dict", tuple(("tuple", (_normalize(k, depth + 1), _normalize(v, depth + 1)))
                             for k, v in items)
    if t is Future or t is _Normalized:
        return obj.__dask_tokenize__()
    raise _NotSimple


_agree: list[bool] = []


def _fast_tokens_agree() -> bool:
    if not _agree:
        _agree.append(True)  # while checking, _token hashes: compare with tokenize
        normalized = _Normalized(("function", "inc", 3))
        samples = [("f", (1, 2.5, "x", b"y", None, True, 3j)), ("g", ()), (-7,), ("s",),
                   (1.5, ("a", [2, {"b": 1, 3: (4,)}])), (normalized, {}, 1, "x"),
                   (normalized, {"k": [1]}, (2,)), ({},), ([],)]
        _agree[0] = all(_token(*s) == tokenize(*s) for s in samples)
    return _agree[0]


# -- futures inside arguments and results ----------------------------------------------


def _pack(obj: Any, deps: dict[str, Future]) -> Any:
    """Replace the futures in ``obj`` — through lists, tuples, sets and dict values,
    at any depth — by :class:`Dep` placeholders, as dask's ``parse_input`` does.

    Those are dependencies: the worker receives their values.  A future inside
    any other object (an instance of the user's own class) is not seen: it
    travels pickled with the task, as in dask.
    """
    typ = type(obj)
    if typ is Future:
        deps[obj.key] = obj
        return Dep(obj.key)
    if typ in CONTAINERS:
        return typ([_pack(o, deps) for o in obj]) if obj else obj
    if typ is dict:
        return {k: _pack(v, deps) for k, v in obj.items()}
    return obj


def futures_in(obj: Any, out: list[Future]) -> None:
    """Every future in ``obj`` (through the containers ``_pack`` looks into), in order."""
    typ = type(obj)
    if typ is Future:
        out.append(obj)
    elif typ in CONTAINERS:
        for o in obj:
            futures_in(o, out)
    elif typ is dict:
        for o in obj.values():
            futures_in(o, out)


def _fill(obj: Any, values: Mapping[str, Any]) -> Any:
    """``obj`` with each future replaced by its value (``gather``'s ``pack_data``).

    Called for every item gathered: ``map`` rather than comprehensions, which would make
    ``values`` a cell on every call, leaves included."""
    typ = type(obj)
    if typ is Future:
        return values.get(obj.key)
    if typ in CONTAINERS:
        return typ(list(map(_fill, obj, repeat(values))))
    if typ is dict:
        return dict(zip(obj, map(_fill, obj.values(), repeat(values))))
    return obj




class Refcounts(Mapping[str, int]):
    """``client.refcount``: a read-only mapping ``key -> references held`` (0 if none)."""

    def __init__(self, client: Client):
        self._client = client

    def _counts(self) -> dict[str, int]:
        self._client.cluster.apply_drops()
        return self._client._state.refcount

    def __getitem__(self, key: str) -> int:
        return self._counts().get(key, 0)

    def __contains__(self, key: object) -> bool:
        return key in self._counts()

    def get(self, key: str, default: Any = None) -> Any:
        return self._counts().get(key, default)

    def __iter__(self) -> Iterator[str]:
        return iter(dict(self._counts()))

    def __len__(self) -> int:
        return len(self._counts())

    def __call__(self, key: str) -> int:  # the old spelling, client.refcount(key)
        return self[key]

    def __repr__(self) -> str:
        return repr(dict(self._counts()))


#: The one event loop every kernel-side client hands out as ``client.loop``.
_LOOP = EventLoop()

#: Where done callbacks run: one thread for the process, whichever client's future is done,
#: as dask's ``Future._cb_executor`` (one worker thread, remade in a forked copy); started on
#: first use, as ``loop.py``'s loop.  A thread per client outlived the client: every closed
#: client that had a callback kept one.
_CALLBACKS: tuple[int, queue.SimpleQueue] | None = None
_callbacks_lock = threading.Lock()


def _run_callbacks(q: queue.SimpleQueue) -> None:
    """The callback thread: each (future, callback) in turn; a callback's error is told."""
    while True:
        f, callback = q.get()
        try:
            callback(f)
        except Exception as exc:  # noqa: BLE001 - a user's callback: tell, go on
            print(f"jupyter_refs: done callback {callback!r} raised {exc!r}", file=sys.stderr)
        del f, callback  # not kept alive until the next callback comes


def _callbacks() -> queue.SimpleQueue:
    """The queue the process's callback thread runs (its thread started here first, and again
    in a forked copy, where the parent's thread does not run)."""
    global _CALLBACKS
    with _callbacks_lock:
        if _CALLBACKS is None or _CALLBACKS[0] != os.getpid():
            q: queue.SimpleQueue = queue.SimpleQueue()
            threading.Thread(target=_run_callbacks, args=(q,), name="jupyter-refs-callbacks",
                             daemon=True).start()
            _CALLBACKS = (os.getpid(), q)
        return _CALLBACKS[1]


#: Gathers that found no data: how often to ask the scheduler again before giving up
#: (dask asks forever; the model says the data is lost).
_GATHER_ATTEMPTS = 3

#: dask's scheduler settings made by kernel-side clients, oldest first: (what was set, the
#: ``dask.config.set`` that restores what it replaced).
_dask_config: list[tuple[Any, Any]] = []


def _dask_get(dsk: Any, keys: Any, **kwargs: Any) -> Any:
    """dask's scheduler while a kernel-side client is the default: that client computes,
    as dask's default ``Client`` does; with none open, what dask would pick without us
    (an open dask ``Client``, else its threaded scheduler), so a setting left behind by a
    client never closed (the explorer's) sends nothing astray."""
    client = default_client()
    if client is None or client.cluster is None or client.cluster.closed:
        import dask.threaded

        try:
            from distributed import get_client
        except ImportError:
            return dask.threaded.get(dsk, keys, **kwargs)
        try:
            return get_client().get(dsk, keys, **kwargs)
        except ValueError:  # no dask Client either
            return dask.threaded.get(dsk, keys, **kwargs)
    return client.get(dsk, keys, **kwargs)


class _Schedule:
    """dask's scheduler setting while a kernel-side client is the default.

    Called, it computes (:func:`_dask_get`).  dask's ``persist`` asks the setting for a
    ``persist`` of its own, as it asks a dask ``Client``'s ``get``: this one persists on the
    default kernel-side client, so ``x.persist()`` and ``dask.persist(x)`` keep futures, as
    on dask; with none open, what dask would do without us.  Each setting is its own
    object (see :func:`_use_as_dask_scheduler`).
    """

    def __call__(self, dsk: Any, keys: Any, **kwargs: Any) -> Any:
        return _dask_get(dsk, keys, **kwargs)

    def __eq__(self, other: object) -> bool:
        """dask's setting is the default client's ``get``: ``get_scheduler() == client.get``
        holds here too, for the default kernel-side client's ``get``."""
        if other is self:
            return True
        client = default_client()
        return client is not None and getattr(other, "__self__", None) is client \
            and getattr(other, "__func__", None) is Client.get

    __hash__ = object.__hash__

    def persist(self, collections: Any, **kwargs: Any) -> Any:
        client = default_client()
        if client is not None and client.cluster is not None and not client.cluster.closed:
            return client.persist(collections, **kwargs)
        try:
            from distributed import get_client

            return get_client().persist(collections, **kwargs)
        except (ImportError, ValueError):  # no dask Client either: dask's threads
            return list(dask.persist(*collections, scheduler="threads", **kwargs))


def _use_as_dask_scheduler() -> None:
    """Each new default client takes dask's scheduler setting back (a dask ``Client`` made
    meanwhile may have set its own), as each dask ``Client`` does.

    Each setting is its own object, so that it can later be told from one a dask
    ``Client`` restored on closing (see :func:`_restore_dask_scheduler`).
    """
    # ``dask.config.config`` read directly: ``dask.config.get("scheduler")`` says the same for
    # a top-level key with no "-" or "_", and the explorer makes a client per run.
    if not _dask_config or dask.config.config.get("scheduler") is not _dask_config[-1][0]:
        mine = _Schedule()
        _dask_config.append((mine, dask.config.set(scheduler=mine)))


def _restore_dask_scheduler() -> None:
    """Give dask back the settings the kernel-side clients replaced, newest first — each only
    while it is still the current one.  One that a dask ``Client`` changed meanwhile is that
    Client's to restore: giving back what was there before it would restore a ``Client``
    since closed ("Requested dask.distributed scheduler but no Client active")."""

    while _dask_config:
        mine, setting = _dask_config.pop()
        if dask.config.get("scheduler", None) is mine:
            setting.__exit__(None, None, None)
            if _names_a_closed_dask_client(dask.config.get("scheduler", None)):
                # What it replaced was a dask Client's setting, and that Client has closed
                # since (dask Clients restore in the order they close, not in ours): keep a
                # setting that computes where dask would now — an open Client, else threads.
                dask.config.set(scheduler=mine)
                _dask_config.clear()
                return


def _names_a_closed_dask_client(scheduler: Any) -> bool:
    if scheduler not in ("dask.distributed", "distributed"):
        return False
    try:
        from distributed import get_client
    except ImportError:
        return True
    try:
        get_client()
    except ValueError:
        return True
    return False


class Client(ClusterCalls, TopicCalls, PluginCalls, TaskStreamCalls, ProfileCalls):
    """A client of a kernel-side :class:`~jupyter_refs.cluster.Cluster`, with dask's API.

    ``Client(cluster)`` or ``cluster.client()``; ``Client()`` — or ``Client(n_workers=…,
    threads_per_worker=…, processes=…)`` — starts a :class:`~jupyter_refs.local_cluster.LocalCluster`
    of its own, shaped as dask's, and closes it with the client.
    """

    def __init__(self, address: Cluster | None = None, *, name: str | None = None,
                 set_as_default: bool = True, timeout: Any = None, **kwargs: Any):
        arguments.text(name, "name", none=True)  # before a cluster of its own is started
        # dask's event loop to run on: the kernel-side client has none, so nothing changes.
        kwargs.pop("loop", None)
        scheduler_file = kwargs.pop("scheduler_file", None)
        if scheduler_file is not None and not isinstance(address, Cluster):
            address = _address_in(scheduler_file)
        if isinstance(address, str) and cluster_at(address) is not None:
            address = cluster_at(address)  # a second client of a kernel-side cluster
        families = {k: kwargs.pop(k) for k in ("serializers", "deserializers") if k in kwargs}
        self._own_cluster = address is None
        if address is None:
            # dask's Client() starts a LocalCluster, and passes it the arguments it takes.
            address = LocalCluster(**kwargs)
        elif kwargs:
            raise NotModelledError(f"Client({', '.join(f'{k}=' for k in kwargs)})")
        elif not isinstance(address, Cluster):
            raise NotModelledError(
                f"Client({address!r})", "a kernel-side client takes a jupyter_refs.Cluster; "
                "to trace a real dask cluster use jupyter_refs.dask.attach(client)")
        if families and getattr(address, "processes", False):
            raise NotModelledError(f"Client({', '.join(f'{k}=' for k in families)}) with "
                                   "worker processes", "an in-process cluster (processes=False) "
                                   "never serializes between client and workers, in dask too")
        self._setup(address, address.register_client(name))
        self.scheduler_file = scheduler_file
        self.direct_to_workers = None  # dask's default: decided at each gather
        address.clients[self.name] = self
        if set_as_default:
            make_default(self)
            _use_as_dask_scheduler()

    @classmethod
    def current(cls, allow_global: bool = True) -> Client:
        """dask's ``Client.current()``: the default client, the newest not closed."""
        client = default_client() if allow_global else None
        if client is None:
            raise ValueError("No global client found and no address provided")
        return client

    @classmethod
    def _wrap(cls, cluster: Cluster, state: ClientState) -> Client:
        """A Client around an existing actor (a worker's own client)."""
        client = cls.__new__(cls)
        client._own_cluster = False
        client._setup(cluster, state)
        client.direct_to_workers = True  # as dask's workers make their clients
        return client

    def _setup(self, cluster: Cluster, state: ClientState) -> None:
        self.cluster = cluster
        self._state = state
        self._closed = False
        self._callbacks: dict[str, list[tuple[Future, Callable[[Future], Any]]]] = {}
        self.scheduler_file: str | None = None  # dask's: given, or written by this client
        state.on_event = self._on_event

    # -- identity ------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self._state.name

    id = name

    @property
    def status(self) -> str:
        return "closed" if self._closed or self.cluster is None or self.cluster.closed else "running"

    @property
    def refcount(self) -> Refcounts:
        """References held per key, as dask's ``client.refcount[key]``."""
        return Refcounts(self)

    @property
    def futures(self) -> dict[str, FutureState]:
        """The keys this client holds, with their states (dask: ``client.futures``)."""
        self.cluster.apply_drops()
        return dict(self._state.futures)

    @property
    def loop(self) -> EventLoop:
        """dask's event loop, for callbacks code written for dask hands it (``loop.py``)."""
        return _LOOP

    @property
    def scheduler(self) -> SchedulerRPC:
        """dask's rpc to the scheduler: its ``address`` is the cluster's."""
        return SchedulerRPC(self.cluster.scheduler_address)

    def __repr__(self) -> str:
        # dask's shape, "<Client: 'address' processes=n threads=t, ...>", and the keys held
        cluster = self.cluster
        workers = len(cluster.workers) if cluster is not None else 0
        threads = workers * getattr(cluster, "threads_per_worker", 1)
        address = cluster.scheduler_address if cluster is not None else self.name
        return (f"<Client: '{address}' processes={workers} threads={threads}, holding "
                f"{len(self._state.refcount)} keys>")

    def _future(self, key: str, origin: str) -> tuple[Future, bool]:
        fs, new, future_id = self._state.acquire(key, origin)
        return Future._bound(self, key, fs, future_id), new

    def _adopt(self, key: str, task: str | None = None) -> tuple[Future, list[Message]]:
        """A future deserialized for this client (``adopting``'s callback)."""
        fs, messages, future_id = self._state.adopt(key, task)
        return Future._bound(self, key, fs, future_id), messages

    def _check_open(self, op: str = "update-graph") -> None:
        if self._closed:
            raise dask_flavoured(ClosedClientError)(f"Client is closed. Can't send {op} message.")

    def _new_key(self, prefix: str, hexed: bool) -> str:
        """A non-hashed key: dask's uuid4, or the protocol's counter (race 3)."""
        if self.cluster.variant.ids == UUID:
            u = uuid.uuid4()
            return f"{prefix}-{u.hex if hexed else u}"
        return f"{prefix}-{self.cluster.new_id(self.name)}"

    # -- scatter -------------------------------------------------------------------------

    @gcscope.served
    def scatter(self, data: Any, workers: Any = None, broadcast: bool = False,
                direct: bool | None = None, hash: bool = True, timeout: Any = None,
                asynchronous: bool | None = None) -> Any:
        """Send data to the workers; returns futures in the shape of ``data``.

        A list, tuple or set gives a list, tuple or set of futures, a dict a dict
        (its keys become the keys), anything else one future.  With ``hash=True``
        (the default, as in dask) the key is ``type-<token of the value>``, so
        scattering the same value twice gives the same key — the precondition of
        race #8576.  On a manual network the scatter RPC is left in flight and
        the future is ``pending`` until it is delivered.
        """
        self._check_open("scatter")
        if asynchronous:
            raise NotModelledError("scatter(asynchronous=True)")
        cell = user_cell()
        if isinstance(data, range):
            data = list(data)  # dask's: a range scatters as a list
        if isinstance(data, dict):
            items = [(str(k), v) for k, v in data.items()]
        elif type(data) in CONTAINERS or isinstance(data, Iterator):
            items = [(None, v) for v in data]
        else:
            items = [(None, data)]
        workers = self._workers(workers)
        blobs: dict[str, bytes] = {}
        types: dict[str, bytes] = {}
        order = []
        for key, value in items:
            blob = dumps(value)  # refuse what cannot be pickled before any key is made
            if key is None:
                prefix = type(value).__name__
                key = f"{prefix}-{_token(value)}" if hash else self._new_key(prefix, True)
            blobs[key] = blob
            types[key] = _type_blob(type(value))
            order.append(key)
        keys = list(blobs)
        cluster = self.cluster
        with cluster.call(cell) as user_call:
            futures, new = {}, {}
            for key in order:
                futures[key], is_new = self._future(key, "scatter")
                if is_new:
                    new[key] = futures[key]._fs
            rpc, msgs = self._state.scatter(blobs, new, workers, broadcast, types)
            user_call.send(msgs)
            if cluster.policy.autonomous:
                pending = self._state.scatters
                user_call.wait(lambda: rpc not in pending, f"scatter of {', '.join(keys)}")
        out = [futures[k] for k in order]
        if isinstance(data, dict):
            return dict(zip(data, out))
        if type(data) in CONTAINERS:
            return type(data)(out)
        if isinstance(data, Iterator):
            return out
        return out[0]

    def _workers(self, workers: Any) -> list[str] | None:
        """``workers=`` as names the cluster knows (one name, or a list / set of them)."""
        if workers is None:
            return None
        names = [workers] if isinstance(workers, str | int) else list(workers)
        known = self.cluster.workers
        out = []
        for w in names:
            name = w if w in known else f"worker:{w}" if f"worker:{w}" in known else None
            if name is None:
                raise NotModelledError(
                    f"workers={w!r}", f"the cluster's workers are {', '.join(known)}; a "
                    "restriction to a worker that does not exist leaves the task in "
                    "no-worker in dask")
            out.append(name)
        return out

    # -- submit / map ------------------------------------------------------------------

    @gcscope.served
    def submit(self, func: Callable[..., Any], *args: Any, key: str | None = None,
               workers: Any = None, resources: Any = None, retries: int | None = None,
               priority: int = 0, fifo_timeout: Any = "100 ms", allow_other_workers: bool = False,
               actor: bool = False, actors: bool = False, pure: bool = True,
               **kwargs: Any) -> Future:
        """Run ``func(*args, **kwargs)`` on a worker; futures in the arguments are dependencies."""
        if not callable(func):
            raise TypeError("First input to submit must be a callable function")
        self._check_options(actor, actors, allow_other_workers, workers)
        allocated = key is None and not pure
        if key is None:
            key = (f"{funcname(func)}-{_token(_tokenized(func), kwargs, *args)}" if pure
                   else self._new_key(funcname(func), False))
        options = self._options(workers, allow_other_workers, retries, priority, resources)
        return self._submit_many(func, [(key, args, kwargs)], options, "submit", user_cell(),
                                 allocated)[0]

    @gcscope.served
    def map(self, func: Callable[..., Any], *iterables: Iterable[Any], key: Any = None,
            workers: Any = None, retries: int | None = None, resources: Any = None,
            priority: int = 0, allow_other_workers: bool = False, fifo_timeout: Any = "100 ms",
            actor: bool = False, actors: bool = False, pure: bool = True,
            batch_size: int | None = None, **kwargs: Any) -> list[Future]:
        """``submit`` once per element, sent to the scheduler as one graph."""
        if not callable(func):
            raise TypeError("First input to map must be a callable function")
        self._check_options(actor, actors, allow_other_workers, workers)
        if iterables and all(isinstance(it, Iterator) for it in iterables):
            raise TypeError("Dask no longer supports mapping over Iterators or Queues."
                            "Consider using a normal for loop and Client.submit")
        iterables = [list(it) for it in iterables]
        calls = list(zip(*iterables))
        if isinstance(key, list):
            if len(key) != len(calls):
                raise ValueError(f"map got {len(key)} keys for {len(calls)} calls")
            keys = key
        else:
            prefix = key or funcname(func)
            if pure:
                tok = _token(_tokenized(func), kwargs)
                keys = [f"{prefix}-{_token_of_call(tok, args)}" for args in calls]
            else:
                uid = self._new_key(prefix, False)
                keys = [f"{uid}-{i}" for i in range(len(calls))]
        options = self._options(workers, allow_other_workers, retries, priority, resources)
        return self._submit_many(func, [(k, a, kwargs) for k, a in zip(keys, calls)], options,
                                 "map", user_cell(), key is None and not pure)

    def _options(self, workers: Any, allow_other_workers: bool, retries: int | None,
                 priority: int, resources: Any = None) -> dict[str, Any]:
        """The scheduling options a task carries (its run spec's; never the function's).

        As dask's ``_graph_to_futures``: each option given (and not falsy) wins over the
        same one of ``dask.annotate(...)`` around the call, which applies otherwise."""
        annotations = dask.get_annotations()
        if annotations:
            given = {"workers": workers, "allow_other_workers": allow_other_workers,
                     "retries": retries, "priority": priority, "resources": resources}
            for name in given:
                value = annotations.get(name)
                if callable(value):
                    raise NotModelledError(f"dask.annotate({name}=<a function of the key>)")
                if not given[name] and value is not None:
                    given[name] = value
            workers, allow_other_workers = given["workers"], given["allow_other_workers"]
            retries, priority, resources = given["retries"], given["priority"], given["resources"]
        options = {"workers": self._workers(workers), "retries": retries, "priority": priority}
        if allow_other_workers:  # loose restrictions: work stealing may move the task anywhere
            options["allow_other_workers"] = True
        if resources:
            options["resources"] = dict(resources)
        return options

    @staticmethod
    def _check_options(actor: bool, actors: bool, allow_other_workers: bool,
                       workers: Any) -> None:
        if actor or actors:
            raise NotModelledError("actors")
        if allow_other_workers not in (True, False, None):
            raise TypeError("allow_other_workers= must be True or False")
        if allow_other_workers and workers is None:
            raise ValueError("Only use allow_other_workers= if using workers=")

    def _submit_many(self, func: Callable[..., Any], calls: list[tuple[str, tuple, dict]],
                     options: dict[str, Any], origin: str, cell: str | None,
                     allocated: bool = False) -> list[Future]:
        self._check_open()
        try:
            return self._submit_calls(func, calls, options, origin, cell, allocated)
        except SerializationError as exc:
            if origin != "submit":
                raise
            # dask 2026.8's submit pickles its graph (an LLGExpr of one Task) whole: what
            # cannot travel fails as that graph, in dask's words.
            key, args, kwargs = calls[0]
            shown = ", ".join(["..."] * (len(args) + len(kwargs)))
            raise TypeError("Could not serialize object of type LLGExpr",
                            f"LLGExpr(dsk={{{key!r}: <Task {key!r} {funcname(func)}({shown})>}})"
                            ) from exc.__cause__

    def _submit_calls(self, func: Callable[..., Any], calls: list[tuple[str, tuple, dict]],
                      options: dict[str, Any], origin: str, cell: str | None,
                      allocated: bool) -> list[Future]:
        fblob = _dumps_function(func)
        held = self._state.futures
        tasks: dict[str, dict[str, Any]] = {}
        dep_futures: dict[str, Future] = {}

        def spec(args: tuple, kwargs: dict) -> dict[str, Any]:
            deps: dict[str, Future] = {}
            if not kwargs and _all_plain(args):
                # Plain values only (a ``map`` over numbers): nothing to pack, nothing travels.
                ablob, carries = dumps((args, {})), ()
            else:
                with sending() as travelling:
                    ablob = dumps((_pack(args, deps), _pack(kwargs, deps)))
                carries = tuple(dict.fromkeys(f.key for f in travelling))
            dep_futures.update(deps)
            return {"func": fblob, "args": ablob, "deps": tuple(deps),
                    "allocated": allocated and self.cluster.variant.ids != UUID,
                    "carries": carries, **options}

        skipped: dict[str, tuple[tuple, dict]] = {}
        for key, args, kwargs in calls:
            if (key in held or key in tasks) and not allocated:
                # dask: a key the client already holds is not submitted again.  (A key from
                # racy-ids' counter is: two threads given one id is the race to show.)
                if key not in tasks:
                    skipped.setdefault(key, (args, kwargs))
                continue
            tasks[key] = spec(args, kwargs)
        for dep in dep_futures.values():
            if dep.client is None:
                raise _not_initialized()
            if dep.client.cluster is not self.cluster:
                raise ValueError(f"{dep.key} belongs to another cluster's client")
        cluster = self.cluster
        scattering = [d._fs.scatter_call for d in dep_futures.values() if d._fs.scatter_call]
        if scattering:
            raise cluster.held_error(f"{origin} on {', '.join(dep_futures)}",
                                      [msg for msg in cluster.in_flight if msg.channel in scattering])
        early = (self._hold_first([k for k, _, _ in calls if k not in tasks], origin)
                 if len(tasks) < len(calls) else {})
        with cluster.call(cell) as user_call:
            tasks.update((key, spec(*call)) for key, call in _let_go(skipped, held))
            futures = [early.pop(key) if key in early else self._future(key, origin)[0]
                       for key, _, _ in calls]
            if tasks:
                user_call.send(self._state.update_graph(tasks, list(tasks), dep_futures,
                                                        computation_code()))
        return futures

    def _hold_first(self, keys: list[str], origin: str) -> dict[str, Future]:
        """Futures for the held ``keys`` a call will not submit again, taken before the call
        releases the drops waiting: a future the user deleted just before (``d.compute()``
        twice).  In dask its release runs later, on the event loop, so the new future takes
        its reference first and the release only decrements; taken after, the key would be
        released, and no graph sent for the new future."""
        cluster = self.cluster
        if not cluster.pending_drops:
            return {}
        held = self._state.futures
        with cluster.locked():
            return {k: self._future(k, origin)[0] for k in keys if k in held}

    # -- waiting and gathering ---------------------------------------------------------------

    def _wait_done(self, futures: list[Future], timeout: float | None,
                   call: Any = None, stop_on_error: bool = False) -> None:
        """Wait until every future is done — or, ``stop_on_error``, one has failed (dask's
        gather with ``errors="raise"`` stops at the first error, the rest still running)."""
        states = [f._fs for f in futures]
        keys = tuple(dict.fromkeys(f.key for f in futures))
        first = 0  # states before it were done when last looked at
        client_state = self._state
        failures = -1  # the client's failures when the rest were last looked through
        failed_at: int | None = None  # a failed future found then

        def done() -> bool:
            # Called after every delivery: resume where the last look stopped rather than
            # scan thousands of finished futures each time; done only if all still are.
            # The rest are looked through for a failure only when some future failed since
            # (a scan per delivery made a 10,000-task gather quadratic).
            nonlocal first, failures, failed_at
            n = len(states)
            while first < n and states[first].state in DONE:
                if stop_on_error and states[first].state in (CANCELLED, ERROR):
                    return True
                first += 1
            if first == n:
                return all(fs.state in DONE for fs in states)
            if not stop_on_error:
                return False
            # Asked again (the waiter wakes and looks too), the answer stays: the failure
            # found is remembered while it lasts, not only on the look that found it.
            if client_state.failures != failures or (
                    failed_at is not None and states[failed_at].state not in (CANCELLED, ERROR)):
                failures = client_state.failures
                failed_at = next((i for i in range(first, n)
                                  if states[i].state in (CANCELLED, ERROR)), None)
            return failed_at is not None

        if done():
            return
        if call is not None:
            call.wait(done, f"result of {', '.join(keys)}", timeout, lambda: self._held_for(keys))
            return
        with self.cluster.call(None) as user_call:
            user_call.wait(done, f"result of {', '.join(keys)}", timeout,
                           lambda: self._held_for(keys))

    @shortened
    @gcscope.served
    def gather(self, futures: Any, errors: str = "raise", direct: bool | None = None,
               asynchronous: bool | None = None, timeout: float | None = None) -> Any:
        """The values of ``futures``: a future, or any nesting of lists, tuples, sets and
        dicts holding futures (other items pass through), in the same shape."""
        if errors not in ("raise", "skip"):
            raise ValueError(f"Bad value, `errors={errors}`")
        if asynchronous:
            raise NotModelledError("gather(asynchronous=True)")
        if isinstance(futures, Iterator):  # dask: an iterator of the values, one at a time
            return (self.gather(f, errors=errors, timeout=timeout) for f in futures)
        cell = user_cell()
        flat: list[Future] = []
        futures_in(futures, flat)
        for f in flat:
            if f.client is None or f._fs is None or f._fs.state == BORROWED:
                raise _not_initialized()
            if f.client is not self:
                raise ValueError("Cannot gather Futures created by another client. "
                                 f"{f.key} belongs to {f.client.name}, this client is {self.name}")
        keys = tuple(dict.fromkeys(f.key for f in flat))
        bad: set[str] = set()
        values: dict[str, Any] = {}
        with self.cluster.call(cell) as user_call:
            for attempt in range(_GATHER_ATTEMPTS):
                self._wait_done(flat, timeout, user_call, stop_on_error=errors == "raise")
                for f in flat:
                    if f._fs.state in (CANCELLED, ERROR) and f.key not in bad:
                        if errors == "raise":
                            self._raise_if_failed(f)
                        bad.add(f.key)
                wanted = tuple(k for k in keys if k not in bad and k not in values)
                if not wanted:
                    break
                got, missing = self._fetch(wanted, timeout, user_call)
                values.update(got)
                if not missing:
                    break
                if attempt == _GATHER_ATTEMPTS - 1:
                    raise FutureLostError(missing[0])
                # As dask: "Couldn't gather keys, rescheduling" — the futures go back to
                # pending and the scheduler is asked to report on each key again.
                user_call.send(self._state.report_key(missing))
        if isinstance(futures, Future):
            return values[futures.key]
        if bad and type(futures) is list:
            futures = [f for f in futures if not (type(f) is Future and f.key in bad)]
        return _fill(futures, values)

    def _fetch(self, keys: tuple[str, ...], timeout: float | None,
               user_call: Any) -> tuple[dict[str, Any], tuple[str, ...]]:
        """The values the workers had, and the keys they did not."""
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
        # Futures inside the results become this client's (under the lock: they
        # change its refcounts, and under dask-2024.7 each new hold is announced) — but one
        # that was unbound in the task stays unbound, as dask's, unless ``fixed`` adopts it.
        with adopting(self._adopt, self.cluster.variant.returned_announced) as adoption:
            values = {k: loads(v) for k, v in gathered.data.items()}
        user_call.send(adoption.messages)
        return values, gathered.missing

    def _raise_if_failed(self, f: Future) -> None:
        fs = f._fs
        if fs.state == CANCELLED:
            raise dask_flavoured(FutureCancelledError)(
                f.key, fs.reason, fs.error.decode() if fs.error else None)
        if fs.state == ERROR:
            raise loads(fs.error)

    def _held_for(self, keys: tuple[str, ...]) -> list[Any]:
        wanted = set(keys)
        in_flight = self.cluster.in_flight
        return [msg for msg in in_flight if wanted.intersection(msg.keys)] or in_flight

    # -- cancel, questions, close ------------------------------------------------------------

    def cancel(self, futures: Any, asynchronous: bool | None = None, force: bool = False,
               reason: str | None = None, msg: str | None = None) -> Any:
        """Cancel the futures' keys (and what depends on them), as dask's ``Client.cancel``;
        with ``asynchronous=True`` a coroutine that cancels them when awaited (dask's, on
        its event loop: ``client.loop.add_callback``)."""
        if asynchronous:
            async def cancelled() -> None:
                self.cancel(futures, force=force, reason=reason, msg=msg)

            return cancelled()
        keys = dict.fromkeys(f.key for f in futures_of(futures))
        if self.cluster.variant.cancel_rpc:
            # Before PR 7583: an RPC beside the stream, awaited; the futures are cancelled
            # when it returns (it may overtake the update-graph of the keys it cancels).
            replies = self._state.replies
            with self.cluster.call(user_cell()) as user_call:
                rpc, msgs = self._state.cancel_call(iter(keys), force, reason, msg)
                user_call.send(msgs)
                user_call.wait(lambda: rpc in replies, "cancel")
                replies.pop(rpc)
                self._state.forget_cancelled(keys, reason, msg)
            return
        with self.cluster.call(user_cell()) as user_call:
            user_call.send(self._state.cancel(iter(keys), force, reason, msg))

    def retry(self, futures: Any, asynchronous: bool | None = None) -> None:
        """Run erred futures' tasks again, as dask's ``Client.retry``: the scheduler sends the
        roots of each error back to waiting and tells the holders (``task-retried``, on the
        stream); the keys it names are pending here once it answers — a key it names that
        this client does not hold is a ``KeyError``, as in dask."""
        keys = tuple(dict.fromkeys(f.key for f in futures_of(futures)))
        held = self._state.futures
        before = {k: held[k].done_seq for k in keys if k in held}
        seen = answered(self._ask(m.RETRY, keys))["value"]
        with self.cluster.call(None):
            for key in seen:
                fs = held[key]
                # Unless the stream's task-retried came first and the run already ended again.
                if fs.done_seq == before.get(key, fs.done_seq) and fs.state == "error":
                    self._state.retried(key, fs, None)

    def _ask(self, op: str, keys: tuple[str, ...] = (), **payload: Any) -> dict[str, Any]:
        """An RPC to the scheduler, waited for (who_has, variables, queues …)."""
        self._check_open(op)
        replies = self._state.replies
        timeout = payload.get("timeout")
        with self.cluster.call(user_cell()) as user_call:
            rpc, msgs = self._state.query(op, keys, **payload)
            user_call.send(msgs)
            try:
                user_call.wait(lambda: rpc in replies, f"{op}", timeout)
            except TimeoutError:
                # dask's scheduler gives up at the timeout and answers with the error; an
                # answer that got in first wins.
                user_call.expire(rpc)
                user_call.wait(lambda: rpc in replies, f"{op}")
            reply = replies.pop(rpc)
        if reply.get("error") == "timeout":
            raise TimeoutError(f"{op} got nothing within its timeout of {timeout} s")
        if reply.get("raised"):
            raise SchedulerHandlerError(f"the scheduler's {op} handler raised {reply['error']}")
        return reply

    def who_has(self, futures: Any = None) -> dict[str, list[str]]:
        """Which workers hold each key (of ``futures``, or every key)."""
        flat: list[Future] = []
        if futures is not None:
            futures_in(futures if not isinstance(futures, Future) else [futures], flat)
        keys = tuple(dict.fromkeys(f.key for f in flat))
        return self._ask(m.WHO_HAS, keys)["who_has"]

    def has_what(self, workers: Any = None) -> dict[str, list[str]]:
        """Which keys each worker holds."""
        has = self._ask(m.HAS_WHAT)["has_what"]
        names = self._workers(workers)
        return {w: keys for w, keys in has.items() if names is None or w in names}

    def retire_workers(self, workers: list[str] | None = None, close_workers: bool = True,
                       **kwargs: Any) -> dict[str, dict[str, Any]]:
        """dask's ``Client.retire_workers``: the workers named (by address: here, by name) stop
        taking tasks, the data only they hold is copied to the others, and the scheduler
        removes them (``close_workers``: and tells them to close).  Returns what was retired,
        by address; a worker the scheduler does not know is left out, as is one whose data no
        other worker could take."""
        if workers is None or kwargs:
            raise NotModelledError(
                "Client.retire_workers(" + ", ".join(["workers=None"] * (workers is None)
                                                     + [f"{k}=" for k in kwargs]) + ")",
                "retire_workers(workers=[addresses], close_workers=) is modelled (dask picks "
                "workers itself with workers_to_close, which the model does not have)")
        names = [workers] if isinstance(workers, str) else list(workers)
        retired = self._ask(m.RETIRE_WORKERS, workers=names, close_workers=bool(close_workers))
        return {w: self._worker_info(w, "closed") for w in retired["workers"]}

    # Published datasets (dask's, with its messages: ``jupyter_refs/publish.py``).
    def publish_dataset(self, *args: Any, name: Any = None, override: bool = False,
                        **kwargs: Any) -> None:
        """Publish named datasets (collections, futures, values) on the scheduler."""
        publish.publish_dataset(self, *args, name=name, override=override, **kwargs)

    def get_dataset(self, name: Any, default: Any = publish.no_default, **kwargs: Any) -> Any:
        """A published dataset (a list of them for a list of names); its futures are ours."""
        return publish.get_dataset(self, name, default)

    def unpublish_dataset(self, name: Any, **kwargs: Any) -> None:
        publish.unpublish_dataset(self, name)

    def list_datasets(self, **kwargs: Any) -> list[Any]:
        return publish.list_datasets(self)

    @property
    def datasets(self) -> publish.Datasets:
        return publish.Datasets(self)

    def nthreads(self, workers: Any = None) -> dict[str, int]:
        """Threads per worker (dask's ``Client.nthreads``)."""
        names = self._workers(workers) or list(self.cluster.workers)
        threads = getattr(self.cluster, "threads_per_worker", 1)
        return {w: threads for w in names}

    ncores = nthreads

    def write_scheduler_file(self, scheduler_file: str) -> None:
        """dask's ``write_scheduler_file``: ``scheduler_info()`` as JSON, whose address
        ``Client(scheduler_file=...)`` connects a second client with; once per client."""
        if self.scheduler_file:
            raise ValueError("Scheduler file already set")
        self.scheduler_file = scheduler_file
        with open(scheduler_file, "w") as f:
            json.dump(self.scheduler_info(), f, indent=2)

    def scheduler_info(self, n_workers: int = 5, **kwargs: Any) -> dict[str, Any]:
        """dask's ``Client.scheduler_info``: the scheduler and up to ``n_workers`` workers
        (``-1``: all), with dask's fields; the model measures nothing, so memory, metrics and
        directories are zeros and empty."""

        cluster = self.cluster
        threads = getattr(cluster, "threads_per_worker", 1)
        with cluster.locked():
            names = list(cluster.scheduler.workers)  # the scheduler's (a retired one is gone)
        shown = names if n_workers == -1 else names[:n_workers]
        workers = {w: self._worker_info(w, "running") for w in shown}
        return {"type": "Scheduler", "id": f"Scheduler-{id(cluster):x}",
                "address": cluster.scheduler_address,
                "services": {}, "started": 0.0, "n_workers": len(names),
                "total_threads": threads * len(names), "total_memory": 0, "workers": workers}

    def _worker_info(self, worker: str, status: str) -> dict[str, Any]:
        """A worker as dask's ``WorkerState.identity()`` describes it: its name is its number
        (as ``LocalCluster`` names its workers); the model measures nothing."""
        import time

        cluster = self.cluster
        number = list(cluster.workers).index(worker)
        return {"type": "Worker", "id": number, "name": number, "host": "kernel",
                "nthreads": getattr(cluster, "threads_per_worker", 1), "memory_limit": 0,
                "resources": {}, "status": status, "nanny": None, "last_seen": time.time(),
                "local_directory": "", "services": {},
                "metrics": {"task_counts": {}, "managed_bytes": 0, "memory": 0,
                            "spilled_bytes": {"memory": 0, "disk": 0}, "cpu": 0.0}}

    def close(self, timeout: Any = None) -> None:
        """Release every key this client holds; then refuse new work.  Closing twice is fine."""
        if self._closed:
            return
        cluster = self.cluster
        if cluster is not None and not cluster.closed:
            with cluster.call(None) as user_call:
                for key in list(self._state.refcount):
                    self._state.refcount[key] = 1
                    user_call.send(self._state.release(key))
        self._closed = True
        if default_client() is None:
            _restore_dask_scheduler()
        if self._own_cluster and cluster is not None:
            cluster.close()

    def shutdown(self) -> None:
        """Close the client and its cluster."""
        self.close()
        if self.cluster is not None:
            self.cluster.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- done callbacks --------------------------------------------------------------------

    def _add_done_callback(self, future: Future, fn: Callable[[Future], Any]) -> None:
        with self.cluster.call(None):
            if future._fs.state in DONE or future._fs is not self._state.futures.get(future.key):
                self._run_callback(future, fn)
            else:
                self._callbacks.setdefault(future.key, []).append((future, fn))
                # Told of done keys only once it waits for one: a map of 10,000 tasks made
                # 20,000 calls to learn there was nothing to do.
                self._state.on_done = self._on_done

    def _on_done(self, key: str, fs: FutureState) -> None:
        """The key became done (called by the client's state machine, under the lock)."""
        for future, fn in self._callbacks.pop(key, ()):
            self._run_callback(future, fn)

    def _run_callback(self, future: Future, fn: Callable[[Future], Any]) -> None:
        _callbacks().put((future, fn))

    # -- what dask has and the model does not ----------------------------------------------

    # -- dask collections ------------------------------------------------------------------

    def compute(self, collections: Any, sync: bool = False, optimize_graph: bool = True,
                **kwargs: Any) -> Any:
        """Futures for dask collections (``dask.delayed`` …): one, or a list for a list.

        The collection's graph is sent as tasks — each of dask's graph nodes run on
        a worker with its dependencies' values — and a collection of several keys
        gets a ``finalize-`` task that assembles its result, as dask's does.
        """
        def one(item: Any) -> Future:
            keys = item.__dask_keys__()
            finalize, extra = item.__dask_postcompute__()
            flat = _flatten(keys)
            graph = dict(item.__dask_graph__())
            if len(flat) == 1 and finalize.__name__ == "single_key" and not extra:
                return self._submit_graph(graph, flat, options)[0]
            name = f"finalize-{tokenize(item)}"
            graph[name] = (_finalize, finalize, keys, list(extra))
            return self._submit_graph(graph, [name], options)[0]

        options = self._graph_options(kwargs)
        single, out = _each_collection(collections, one)
        results = self.gather(out) if sync else out
        return results[0] if single else results

    def persist(self, collections: Any, optimize_graph: bool = True, **kwargs: Any) -> Any:
        """The collections with their keys computed and held here (futures in their graphs)."""
        def one(item: Any) -> Any:
            flat = _flatten(item.__dask_keys__())
            futures = self._submit_graph(dict(item.__dask_graph__()), flat, options)
            rebuild, extra = item.__dask_postpersist__()
            return rebuild(dict(zip(flat, futures)), *extra)

        options = self._graph_options(kwargs)
        single, out = _each_collection(collections, one)
        return out[0] if single else out

    def normalize_collection(self, collection: Any) -> Any:
        """dask's ``normalize_collection``: the collection with each key this client holds a
        future for replaced by a new future of it (the graph culled to what is left to
        compute), so computing it reuses those results; unchanged when it holds none.
        Futures dropped before the call are let go first: their keys are computed again."""
        from dask.optimization import cull

        graph = collection.__dask_graph__()
        self.cluster.apply_drops()
        with self.cluster.locked():
            held = self._state.futures
            mine = {k: self._future(_key(k), "normalize")[0] for k in graph if _key(k) in held}
        if not mine:
            return collection
        dsk, _ = cull({**dict(graph), **mine}, collection.__dask_keys__())
        from dask.delayed import Delayed

        if isinstance(collection, Delayed):  # dask's redict_collection
            return Delayed(collection.key, dsk)
        copied = copy.copy(collection)
        copied.dask = dsk
        return copied

    def get(self, dsk: Mapping[Any, Any], keys: Any, **kwargs: Any) -> Any:
        """dask's scheduler interface: compute ``keys`` of the graph ``dsk`` here and return
        their values in the shape of ``keys``.  A default client is dask's scheduler, so
        ``collection.compute()`` runs on the kernel-side cluster, as on dask's."""
        sync = kwargs.pop("sync", True)
        options = self._graph_options(kwargs)
        if hasattr(dsk, "__dask_graph__"):  # dask hands its schedulers an expression
            dsk = _materialized(dsk)
        flat = _flatten(keys)
        graph = dict(dsk)
        futures = self._submit_graph(graph, flat, options)
        if not sync:  # dask: the futures, in the shape of keys
            return _unflatten(keys, dict(zip(flat, futures)))
        # dask releases the futures it made once the gather ends, raised or not: a cancelled
        # result (lost dependencies) is let go at once, not when the traceback is dropped.
        # The user's own futures in the graph (persisted keys) are theirs to keep.
        made = [f for k, f in zip(flat, futures) if type(graph.get(k)) is not Future]
        # In a task (compute() inside one) dask secedes while it waits, then rejoins; a task
        # already seceded (worker_client) stays so.
        entry = current_run.get()
        if entry is not None and entry[1].key in entry[0].workers[entry[1].worker].long_running:
            entry = None
        if entry is not None:
            entry[0].secede(entry[1])
        try:
            return _unflatten(keys, dict(zip(flat, self.gather(futures))))
        finally:
            for future in made:
                future.release()
            if entry is not None:
                entry[0].rejoin(entry[1])

    def _graph_options(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """The scheduling options of ``compute``/``persist``/``get`` for every task of the
        graph, as dask's ``_graph_to_futures`` takes them: ``workers`` (one, or a list; dask
        2026.8 has no per-collection form: a dict is one unhashable "worker", which the
        scheduler's ``update_graph`` fails on, erring every key), ``allow_other_workers``
        (True, False or None), ``priority``, ``retries``; anything else is not modelled."""
        _check_graph_options(kwargs)
        loose = kwargs.get("allow_other_workers")
        if loose not in (True, False, None):
            raise TypeError("allow_other_workers= must be True, False, or None")
        workers = kwargs.get("workers")
        if workers:
            if not isinstance(workers, list | tuple | set):
                workers = [workers]
            workers = [self._workers(w)[0] if isinstance(w, str | int) else w for w in workers]
        options = {"workers": workers or None, "retries": kwargs.get("retries"),
                   "priority": kwargs.get("priority") or 0}
        if loose and workers:
            options["allow_other_workers"] = True
        if kwargs.get("resources"):
            options["resources"] = dict(kwargs["resources"])
        return options

    def _submit_graph(self, dsk: dict[Any, Any], wanted: list[Any],
                      options: dict[str, Any] | None = None) -> list[Future]:
        """Send a dask graph as tasks, each with the scheduling ``options``
        (:meth:`_graph_options`); futures for ``wanted`` (keys of the graph)."""
        from dask._task_spec import convert_legacy_graph

        held = self._state.futures
        given = {k: v for k, v in dsk.items() if type(v) is Future}  # persisted keys
        graph = convert_legacy_graph({k: v for k, v in dsk.items() if k not in given})

        def spec(node: Any) -> dict[str, Any]:
            deps = {d: Dep(_key(d)) for d in node.dependencies}
            return {"func": _RUN_NODE, "args": dumps(((node, deps), {})),
                    "deps": tuple(_key(d) for d in deps), "allocated": False,
                    "carries": (), "workers": None, "retries": None, "priority": 0,
                    **(options or {})}

        tasks: dict[str, dict[str, Any]] = {}
        skipped: dict[str, Any] = {}  # as submit: a key this client holds is not sent again
        for key, node in graph.items():
            name = _key(key)
            if name in held:
                skipped[name] = node
            else:
                tasks[name] = spec(node)
        dep_futures = {f.key: f for f in given.values()}
        # Held keys not sent again, wanted or depended on, keep their reference through the call.
        early = self._hold_first(list(skipped), "compute")
        with self.cluster.call(user_cell()) as user_call:
            tasks.update((name, spec(node)) for name, node in _let_go(skipped, held))
            futures = [given[k] if k in given else early.pop(_key(k), None)
                       or self._future(_key(k), "compute")[0] for k in wanted]
            if tasks:
                user_call.send(self._state.update_graph(tasks, [_key(k) for k in wanted],
                                                        dep_futures, computation_code()))
        return futures

    def __getattr__(self, name: str) -> Any:
        if name in _DASK_CLIENT_API:
            raise NotModelledError(f"Client.{name}")
        raise AttributeError(f"'Client' object has no attribute {name!r}")


def _address_in(scheduler_file: str) -> str:
    """The scheduler address a scheduler file gives (dask waits for the file to appear; a
    kernel-side cluster's is written before it is read, or never)."""
    with open(scheduler_file) as f:
        return json.load(f)["address"]


def _let_go(skipped: dict[str, Any], held: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The keys a call skipped because the client held them, and no longer holds: another
    thread's call applied their drop between the skip and this call taking the lock (30
    threads computing on one client, dask's test_threadsafe_compute).  Sent after all — else
    the new future waits for a graph nobody sends."""
    return [(key, what) for key, what in skipped.items() if key not in held] if skipped else []


def _materialized(expr: Any) -> dict[Any, Any]:
    """The graph of an expression as dask's scheduler makes it: the expression travels
    pickled (``Client._graph_to_futures``) and is materialized there, so what its
    optimizations do to the objects of the caller's (a ``delayed_optimize=`` function's
    list) happens to copies; one that cannot be pickled is dask's TypeError."""
    import io
    import pickle

    import cloudpickle

    futures: list[Future] = []  # they stay themselves (dask's scheduler reads their keys)

    class Pickler(cloudpickle.Pickler):
        def persistent_id(self, obj: Any) -> Any:
            if type(obj) is Future:
                futures.append(obj)
                return len(futures) - 1
            return None

    class Unpickler(pickle.Unpickler):
        def persistent_load(self, pid: Any) -> Any:
            return futures[pid]

    buffer = io.BytesIO()
    try:  # cloudpickle, as dask's pickle does for what refers to __main__: by value
        Pickler(buffer, protocol=5).dump(expr)
    except Exception as exc:  # noqa: BLE001 - whatever fails, dask's error
        raise TypeError(f"Could not serialize object of type {type(expr).__name__}") from exc
    buffer.seek(0)
    return Unpickler(buffer).load().__dask_graph__()


@driver_frame
def _run_node(node: Any, values: dict[Any, Any]) -> Any:
    """A task that runs one node of a dask graph (``dask._task_spec``) on its inputs."""
    return node(values)


_RUN_NODE = dumps(_run_node)


def _finalize(finalize: Callable[..., Any], results: Any, extra: list) -> Any:
    """The task that assembles a collection's result from its keys' values (dask's finalize)."""
    return finalize(results, *extra)


def _key(key: Any) -> str:
    """A dask key as the model's key (tuple keys, as of arrays, become their text)."""
    return key if isinstance(key, str) else str(key)


def _flatten(keys: Any) -> list[Any]:
    if isinstance(keys, list):
        return [k for sub in keys for k in _flatten(sub)]
    return [keys]


def _unflatten(keys: Any, values: Mapping[Any, Any]) -> Any:
    if isinstance(keys, list):
        return [_unflatten(k, values) for k in keys]
    return values[keys]


def _each_collection(collections: Any, one: Callable[[Any], Any]) -> tuple[bool, list[Any]]:
    """``one(c)`` for each dask collection given (one, or a list / tuple / set of them);
    anything else passes through, as in dask.  Returns whether one was given, and the list."""
    import dask

    single = not isinstance(collections, list | tuple | set)
    items = [collections] if single else list(collections)
    return single, [one(c) if dask.is_dask_collection(c) else c for c in items]


def _check_graph_options(kwargs: dict[str, Any]) -> None:
    unmodelled = [k for k, v in kwargs.items() if v not in (None, False) and k not in (
        "optimize_graph", "sync", "traverse", "fifo_timeout", "priority", "actors", "pure",
        # direct: where the results come from, not what they are
        "retries", "direct", "workers", "allow_other_workers", "resources")]
    if unmodelled:
        raise NotModelledError(f"{', '.join(unmodelled)}= for dask collections")


#: Public names of dask's Client that the model does not have (they raise NotModelledError).
_DASK_CLIENT_API = frozenset("""
run run_on_scheduler restart restart_workers upload_file
rebalance story
dashboard_link register_worker_plugin
register_scheduler_plugin get_executor get_metadata set_metadata
processing benchmark_hardware
get_versions forward_logging
start_ipython_workers start_ipython_scheduler dump_cluster_state
get asynchronous sync
nbytes recreate_error_locally recreate_task_locally
""".split())


class _Internals:
    """``client_parts.Internals``: what the parts and the driver need of a Client's and a
    Future's insides, in one place, so that no other module reads them."""

    make = staticmethod(lambda cluster, name: Client(cluster, name=name))
    wrap = staticmethod(Client._wrap)
    bound = staticmethod(Future._bound)
    unbound = staticmethod(Future)

    @staticmethod
    def ask(client: Client, op: str, keys: tuple[str, ...], payload: dict[str, Any]
            ) -> dict[str, Any]:
        return client._ask(op, keys, **payload)

    @staticmethod
    def actor(client: Client) -> ClientState:
        return client._state

    @staticmethod
    def future(client: Client, key: str, origin: str) -> Future:
        return client._future(key, origin)[0]

    @staticmethod
    def check_open(client: Client, op: str) -> None:
        client._check_open(op)

    @staticmethod
    def state(future: Future) -> FutureState | None:
        return future._fs

    @staticmethod
    def adopt(future: Future, client: Client) -> list[Message]:
        future._fs, messages, future.id = client._state.adopt(future.key, None)
        future.client = client
        return messages


client_parts.provide(_Internals())
