"""The model's errors that are dask's too, once ``distributed`` is imported.

Code written for dask catches dask's classes: ``except distributed.client.FutureCancelledError``
in a test, ``except ClosedClientError`` in a program.  On the model those must catch what the
model raises, so, whenever ``distributed`` has been imported (always under the switch), the
model raises these: each subclasses both the model's error (its text, its ``%refs --why``
note, ``except jupyter_refs.FutureCancelledError``) and dask's of the same name.  Without
``distributed`` the model's own classes are raised, and importing this module fails.

They live in a module of their own, by name, so a task's error pickled on a worker comes
back as the same class.
"""

from __future__ import annotations

from distributed.client import CancelledFuturesGroup
from distributed.client import ClosedClientError as _DaskClosedClientError
from distributed.client import FutureCancelledError as _DaskFutureCancelledError
from distributed.client import FuturesCancelledError as _DaskFuturesCancelledError

from . import errors as model


class FutureCancelledError(model.FutureCancelledError, _DaskFutureCancelledError):
    """The model's :class:`~jupyter_refs.errors.FutureCancelledError`, and dask's."""


class FuturesCancelledError(model.FuturesCancelledError, _DaskFuturesCancelledError):
    """The model's :class:`~jupyter_refs.errors.FuturesCancelledError`, and dask's: its
    ``error_groups`` are dask's too (one :class:`CancelledFuturesGroup` per reason, largest
    first), for code that reads them."""

    def __init__(self, errors: list[model.FutureCancelledError]):
        by_reason: dict[str, list[model.FutureCancelledError]] = {}
        for e in errors:
            by_reason.setdefault(e.reason, []).append(e)
        self.errors = errors
        self.error_groups = sorted(
            (CancelledFuturesGroup(errs, reason) for reason, errs in by_reason.items()),
            key=lambda group: len(group.errors), reverse=True)


class ClosedClientError(model.ClosedClientError, _DaskClosedClientError):
    """The model's :class:`~jupyter_refs.errors.ClosedClientError`, and dask's."""


#: The model's class -> the one raised once ``distributed`` is imported.
FLAVOURED: dict[type[BaseException], type[BaseException]] = {
    model.FutureCancelledError: FutureCancelledError,
    model.FuturesCancelledError: FuturesCancelledError,
    model.ClosedClientError: ClosedClientError,
}
