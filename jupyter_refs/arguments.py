"""Arguments checked where they enter the library, with one line saying what was wanted.

A wrong argument is refused before anything is done — a cluster made, a plugin
registered on a dask scheduler, a run started — so what the user had is left as it
was.  Without this, ``attach("x")`` failed with ``'str' object has no attribute 'id'``
and ``explore(123)`` with ``'int' object has no attribute '__code__'``.

Only the library's own entry points check here; what has dask's signature (``Client``,
``Future``, ``wait``, …) behaves as dask does, wrong arguments included.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .errors import ArgumentTypeError, ArgumentValueError, ClusterClosedError


def shown(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 40 else text[:37] + '...'}"


def expect(value: Any, kinds: type | tuple[type, ...], name: str, wanted: str) -> Any:
    """``value`` if it is one of ``kinds``; else an :class:`ArgumentTypeError` naming ``wanted``.

    ``bool`` is never taken for an ``int`` here: ``workers=True`` is a mistake, not one.
    """
    if isinstance(value, kinds) and not (isinstance(value, bool) and bool not in _tuple(kinds)):
        return value
    raise ArgumentTypeError(f"{name} must be {wanted}, not {shown(value)}")


def _tuple(kinds: type | tuple[type, ...]) -> tuple[type, ...]:
    return kinds if isinstance(kinds, tuple) else (kinds,)


def count(value: Any, name: str, minimum: int = 1, *, none: bool = False) -> int | None:
    """An ``int`` of at least ``minimum`` (``None`` too when ``none``): workers, bounds, capacities."""
    if none and value is None:
        return None
    expect(value, int, name, f"an int{' or None' if none else ''}")
    if value < minimum:
        raise ArgumentValueError(f"{name} must be at least {minimum}, not {value}")
    return value


def flag(value: Any, name: str) -> bool:
    """``True`` or ``False`` (``reduce=``, ``keep_open=``, …): a string such as "no" is refused."""
    return expect(value, bool, name, "True or False")


def function(value: Any, name: str, wanted: str = "a function", *, none: bool = False
             ) -> Callable[..., Any] | None:
    """A callable (``None`` too when ``none``)."""
    if (none and value is None) or callable(value):
        return value
    raise ArgumentTypeError(f"{name} must be {wanted}{' or None' if none else ''}, "
                            f"not {shown(value)}")


def scenario(value: Any) -> Callable[..., Any]:
    """An explorer's scenario: a function of one or more clients, whose code fingerprints it."""
    if callable(value) and (hasattr(value, "__code__") or hasattr(value, "fingerprint")):
        return value
    raise ArgumentTypeError("scenario must be a function of one or more clients "
                            f"(def scenario(client): ...), not {shown(value)}")


def protocol(value: Any, none: bool = False) -> Any:
    """A registered protocol's name or a :class:`ProtocolVariant` (``None`` too when ``none``),
    looked up: an unknown name is refused as :class:`ProtocolError` says."""
    variants = _VARIANTS.get("module")
    if variants is None:
        # Imported when first asked (not with this module), then kept: the explorer makes a
        # cluster per run, and a relative import in a call costs a lookup of the package's.
        from .protocol import variants
        _VARIANTS["module"] = variants
    if none and value is None:
        return None
    expect(value, (str, variants.ProtocolVariant), "protocol",
           "a protocol's name (such as 'dask' or 'fixed') or a ProtocolVariant"
           + (" or None" if none else ""))
    variants.get_variant(value)
    return value


_VARIANTS: dict[str, Any] = {}  # "module": protocol/variants.py, once protocol() imported it


def dask_client(value: Any, name: str = "client") -> Any:
    """A running ``distributed.Client``: attaching to anything else would fail half way."""
    import distributed

    expect(value, distributed.Client, name, "a distributed.Client")
    if value.status != "running":
        raise ClusterClosedError(f"{name} is {value.status}: a running distributed.Client is "
                                 "needed")
    return value


def number(value: Any, name: str, *, none: bool = False) -> float | None:
    """A positive number of seconds (``None`` too when ``none``): timeouts and intervals."""
    if none and value is None:
        return None
    expect(value, (int, float), name, f"a number of seconds{' or None' if none else ''}")
    if not value > 0:
        raise ArgumentValueError(f"{name} must be more than 0 seconds, not {value}")
    return value


def key(value: Any, name: str = "key") -> str:
    """A key as the trace names it: a string, or a dask tuple key such as ``('x', 0)``, which
    the trace records as its ``str()``."""
    if isinstance(value, tuple):
        return str(value)
    return expect(value, str, name, "a string (or a dask tuple key such as ('x', 0))")


def text(value: Any, name: str, *, none: bool = False) -> str | None:
    """A string (``None`` too when ``none``): names, patterns, schedules."""
    if none and value is None:
        return None
    return expect(value, str, name, f"a string{' or None' if none else ''}")


def keys(value: Any, name: str = "keys") -> list[str] | None:
    """``None`` (every key) or a list of keys: a lone string is refused, not read letter by letter."""
    if value is None:
        return None
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple, set, frozenset)):
        raise ArgumentTypeError(f"{name} must be a list of keys or None, not {shown(value)}"
                                + (f" (for one key: {name}=[{value!r}])" if isinstance(value, str)
                                   else ""))
    return [key(k, f"each of {name}") for k in value]
