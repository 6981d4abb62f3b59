"""Serialization at actor boundaries, and deterministic keys.

Everything that crosses from one actor to another as data (scattered values,
task functions and arguments, results) travels as bytes, as it would on a
real network.  The C pickler is tried first because it is about seven times
faster than cloudpickle on plain data; cloudpickle takes over for what it
cannot do (lambdas, functions defined in a notebook).  Either way, an object
that cannot be pickled raises :class:`SerializationError` naming its type,
before anything is sent.
"""

from __future__ import annotations

import hashlib
import pickle
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import cloudpickle

from ..errors import SerializationError


def dumps(obj: Any, cloudpickled: bytes | None = None) -> bytes:
    """``obj``'s bytes; ``cloudpickled``: its cloudpickle made already (a notebook's function,
    pickled to be tokenized), sent as it is if plain pickle refuses ``obj``."""
    try:
        return pickle.dumps(obj, protocol=5)
    except Exception:  # noqa: BLE001 - plain pickle refuses more than cloudpickle
        if cloudpickled is not None:
            return cloudpickled
    try:
        return cloudpickle.dumps(obj, protocol=5)
    except Exception as exc:  # noqa: BLE001 - any failure means "cannot send this"
        raise SerializationError(_culprit(obj), exc) from exc


def _culprit(obj: Any) -> Any:
    """The innermost value that cannot be pickled, so the error names its type."""
    items: Any = ()
    if isinstance(obj, Mapping):
        items = obj.values()
    elif isinstance(obj, list | tuple | set | frozenset):
        items = obj
    for item in items:
        try:
            cloudpickle.dumps(item)
        except Exception:  # noqa: BLE001
            return _culprit(item)
    return obj


loads = pickle.loads

#: Task functions unpickled so far, by their pickle (``load_function``'s cache; a worker's hot
#: path looks in it before calling).
loaded_functions: dict[bytes, Any] = {}


def load_function(blob: bytes) -> Any:
    """Unpickle a task function once per distinct function, as dask's worker caches them."""
    func = loaded_functions.get(blob)
    if func is None:
        if len(loaded_functions) > 512:
            loaded_functions.clear()
        func = loaded_functions[blob] = loads(blob)
    return func


def tokenize(*parts: bytes) -> str:
    h = hashlib.blake2b(digest_size=16)
    for part in parts:
        h.update(part)
    return h.hexdigest()


class Dep:
    """Placeholder for a dependency's value inside task arguments."""

    __slots__ = ("key",)

    def __init__(self, key: str):
        self.key = key

    def __reduce__(self) -> tuple:
        return (Dep, (self.key,))

    def __repr__(self) -> str:
        return f"Dep({self.key!r})"


#: The containers dask looks into for futures (``distributed.utils_comm.collection_types``
#: and dicts' values): a future anywhere inside them is a dependency.  Any other object —
#: a namedtuple, an instance of the user's own class — travels pickled, futures and all.
CONTAINERS = (tuple, list, set, frozenset)
_NESTED = (*CONTAINERS, dict)


def substitute(obj: Any, values: Mapping[str, Any]) -> Any:
    """Replace every :class:`Dep` in ``obj`` (through lists, tuples, sets, dicts) with its value."""
    typ = type(obj)
    if typ is Dep:
        return values[obj.key]
    if typ in CONTAINERS:
        for o in obj:
            if type(o) is Dep or type(o) in _NESTED:
                return typ([substitute(o, values) for o in obj])
        return obj
    if typ is dict:
        return {k: substitute(v, values) for k, v in obj.items()}
    return obj


# -- futures that travel inside data --------------------------------------------------
#
# A Future pickled inside task arguments or a result does not carry its state: it
# becomes its key, and whoever unpickles it decides what the key turns into.  A
# worker running a task hands it to the worker's own client, a client gathering a
# result to itself (that is where legacy's ``client-desires-keys`` comes from).
# Outside any such context it stays a plain :class:`FutureRef`.


class FutureRef:
    """A future's key with no client around it: what a Future becomes when nobody adopts it."""

    __slots__ = ("key",)

    def __init__(self, key: str):
        self.key = key

    def __reduce__(self) -> tuple:
        return (rebuild_future, (self.key,))

    def __eq__(self, other: object) -> bool:
        return type(other) is FutureRef and other.key == self.key

    def __hash__(self) -> int:
        return hash(("FutureRef", self.key))

    def __repr__(self) -> str:
        return f"FutureRef({self.key!r})"


#: ``adopt(key) -> (object, messages)``: what a deserialized future becomes, and what it sends.
Adopt = Callable[[str], tuple[Any, list[Any]]]


@dataclass(slots=True)
class Adoption:
    adopt: Adopt
    #: Messages the adopted futures send (legacy: a ``client-desires-keys`` each).
    messages: list[Any] = field(default_factory=list)
    #: Whether a future that was unbound where it was pickled is adopted too (False: it
    #: stays unbound, as dask's does; see ``ProtocolVariant.returned_announced``).
    unbound_too: bool = True


_adoption: ContextVar[Adoption | None] = ContextVar("jupyter_refs_adoption", default=None)
_sending: ContextVar[list[Any] | None] = ContextVar("jupyter_refs_sending", default=None)


class _Bound:
    """``var`` set to ``value`` inside the block, restored after.

    A class rather than ``@contextmanager``: every task and every submit enters one,
    and a generator-based context manager costs several times more to enter and leave.
    """

    __slots__ = ("var", "value", "token")

    def __init__(self, var: ContextVar[Any], value: Any):
        self.var = var
        self.value = value

    def __enter__(self) -> Any:
        self.token = self.var.set(self.value)
        return self.value

    def __exit__(self, *exc: object) -> None:
        self.var.reset(self.token)


def adopting(adopt: Adopt, unbound_too: bool = True) -> AbstractContextManager[Adoption]:
    """Unpickle inside this block and every future found is handed to ``adopt`` (one pickled
    unbound only if ``unbound_too``)."""
    return _Bound(_adoption, Adoption(adopt, unbound_too=unbound_too))


def sending() -> AbstractContextManager[list[Any]]:
    """Pickle inside this block and every future pickled is listed (the ones that travel)."""
    return _Bound(_sending, [])


def reduce_future(future: Any) -> tuple:
    """``Future.__reduce__``: a future travels as its key."""
    seen = _sending.get()
    if seen is not None:
        seen.append(future)
    if getattr(future, "client", None) is None:  # unbound (it arrived so in a task): says so
        return (rebuild_unbound, (future.key,))
    return (rebuild_future, (future.key,))


#: What a future deserialized where nobody adopts it becomes (the client module sets its
#: unbound ``Future``; without it, a plain :class:`FutureRef`).
unbound: Callable[[str], Any] = FutureRef


def rebuild_unbound(key: str) -> Any:
    """A future that was unbound where it was pickled: adopted only where that is asked."""
    adoption = _adoption.get()
    if adoption is not None and not adoption.unbound_too:
        return unbound(key)
    return rebuild_future(key)


def rebuild_future(key: str) -> Any:
    adoption = _adoption.get()
    if adoption is None:
        return unbound(key)
    obj, messages = adoption.adopt(key)
    adoption.messages.extend(messages)
    return obj
