"""Exceptions raised by jupyter_refs.

Each one names the thing that went wrong, so a notebook user can act on the
message without reading a traceback.  They all derive from ``JupyterRefsError``.
"""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import CancelledError


class JupyterRefsError(Exception):
    """Base class of every error this package raises on purpose."""


class SerializationError(JupyterRefsError, TypeError):
    """Data or a task could not be pickled, so it never left the client."""

    def __init__(self, obj: object, cause: BaseException):
        self.type_name = f"{type(obj).__module__}.{type(obj).__qualname__}"
        super().__init__(
            f"cannot send an object of type {self.type_name} to the cluster: "
            f"it cannot be pickled ({type(cause).__name__}: {cause})"
        )


class ResultSerializationError(JupyterRefsError, TypeError):
    """A task's result cannot be pickled, so it cannot travel back to the client."""


class ClusterClosedError(JupyterRefsError, RuntimeError):
    """The cluster (or the client) was closed; nothing can be sent any more."""


class ClosedClientError(ClusterClosedError):
    """dask's ``ClosedClientError``: a closed client was asked to send something."""


class UnknownMessageError(JupyterRefsError, KeyError):
    """``deliver(msg_id)`` named a message that is not in flight."""

    def __str__(self) -> str:  # KeyError would quote the whole message
        return str(self.args[0])


class NotDeliverableError(JupyterRefsError, ValueError):
    """The message is in flight but queued behind another on a FIFO channel."""


class HeldMessagesError(JupyterRefsError, TimeoutError):
    """A blocking call needs messages that nothing will deliver on its own.

    Raised instead of waiting forever.  What keeps them is said, because the
    way out differs: a hold (``%hold CHANNEL`` / ``cluster.hold``, on any
    network) is lifted with ``%hold --off``; a manual network delivers only
    when stepped.  ``holds`` are the hold patterns that keep the messages;
    ``network`` is the network's name.
    """

    def __init__(self, what: str, held: Iterable[object], holds: Iterable[str] = (),
                 network: str = "manual"):
        self.held = list(held)
        self.holds = sorted(holds)
        self.network = network
        listing = ", ".join(str(m) for m in self.held) or "none"
        step = "deliver them with cluster.step() or cluster.deliver(msg_id) (%step)"
        if network == "manual":
            why = f"are held by the manual network ({listing}); {step}"
        elif self.holds:
            names = ", ".join(self.holds)
            why = (f"wait on a held channel: the hold on {names} keeps {listing}; lift it with "
                   f"%hold --off (cluster.release_holds()), or {step}")
        else:
            why = (f"are not delivered on their own by the {network} network ({listing}); "
                   f"{step}")
        super().__init__(f"{what} cannot complete: the messages it needs {why}")


class ConnectTimeoutError(JupyterRefsError, OSError):
    """dask's ``OSError: Timed out trying to connect to … after … s``: a worker's client,
    made on a task's first ``get_client`` / ``worker_client`` with a timeout of 0, cannot
    connect to the scheduler in no time (dask fails there whenever the worker makes its
    client; once made, it is reused and the timeout no longer matters)."""


class FutureReleasedError(JupyterRefsError, RuntimeError):
    """The future was released; it no longer refers to anything."""


class FutureCancelledError(JupyterRefsError, CancelledError):
    """The future's key was cancelled: by the user, by a release, or by the scheduler.

    A ``concurrent.futures.CancelledError``, as dask's is, so ``except
    CancelledError`` catches both; its text is dask's.
    """

    def __init__(self, key: str, reason: str | None, msg: str | None = None):
        self.key = key
        self.reason = reason or "unknown"
        self.msg = msg
        super().__init__(key, self.reason, msg)
        # Shown last under the traceback (a note: str() stays dask's own text).
        self.add_note(WHY_HINT.format(key=key))

    def __str__(self) -> str:
        text = f"{self.key} cancelled for reason: {self.reason}."
        return f"{text}\n{self.msg}" if self.msg else text


#: The last line under a FutureCancelledError's traceback.
WHY_HINT = "Why? Run `%refs --why {key}` (or cluster.why({key!r})) for the chain of events."


class FuturesCancelledError(JupyterRefsError, CancelledError):
    """``wait`` found cancelled futures: dask's grouping of them by reason."""

    def __init__(self, errors: list[FutureCancelledError]):
        self.errors = errors
        super().__init__(errors)

    def __str__(self) -> str:
        groups: dict[str, list[FutureCancelledError]] = {}
        for e in self.errors:
            groups.setdefault(e.reason, []).append(e)
        n = len(self.errors)
        lines = [f"{n} Future{'s' if n > 1 else ''} cancelled:", "Reasons:"]
        for reason, errs in sorted(groups.items(), key=lambda g: -len(g[1])):
            k = len(errs)
            example = next((e.msg for e in errs if e.msg), None)
            lines.append(f"{k} Future{'s' if k > 1 else ''} cancelled for reason: {reason}.\n"
                         f"Message: {example}\nFuture{'s' if k > 1 else ''}: "
                         f"{[e.key for e in errs]}")
        return "\n".join(lines)


class SchedulerHandlerError(JupyterRefsError, RuntimeError):
    """A scheduler extension's handler raised while answering an RPC: the error comes back
    to the caller, as dask's RPCs return a handler's exception, and the cluster goes on."""


class NotModelledError(JupyterRefsError, NotImplementedError):
    """A dask feature the kernel-side cluster does not model.

    Raised instead of an AttributeError or a quiet difference: what the model
    does not do, it says so.  ``docs/conformance.md`` lists what it does.
    """

    def __init__(self, feature: str, hint: str = ""):
        self.feature = feature
        super().__init__(
            f"{feature} is a dask feature the kernel-side cluster does not model"
            + (f" ({hint})" if hint else "")
            + "; see docs/conformance.md for what it does model")


class FutureLostError(JupyterRefsError):
    """The data behind a finished future is gone from every worker."""

    def __init__(self, key: str):
        self.key = key
        super().__init__(f"{key}: the scheduler reported its data lost")


class ThreadsExhaustedError(JupyterRefsError, RuntimeError):
    """A wait cannot complete: every thread of a worker runs a task that waits.

    Real dask hangs there; a stepped kernel-side cluster sees that nothing can
    move and says so (``secede()``, ``worker_client()`` or more threads help).
    """


class LivelockError(JupyterRefsError, RuntimeError):
    """An explored run delivered more messages than any finishing run needs, and went on.

    The explorer's orders are adversarial: it may run a task between any two messages of
    a batch, which dask's batched handling never does.  Some orders then repeat for ever
    (a stale result makes the scheduler send its task again, whose result is stale in turn);
    the run is stopped and reported with what it kept repeating, rather than grow until the
    kernel runs out of memory.
    """


class ProtocolError(JupyterRefsError, ValueError):
    """An unknown protocol variant or network policy was asked for."""


class MissingDataError(JupyterRefsError, TimeoutError):
    """A wait can never end: a task waits for data the scheduler places on a worker that
    does not have it.  Real dask waits for ever there (its worker keeps asking the scheduler
    where the data is); a ``result(timeout=…)`` on dask raises ``TimeoutError``, and so is
    this one."""


class ArgumentTypeError(JupyterRefsError, TypeError):
    """An argument of a public entry point is of the wrong kind (``attach("x")``).

    Refused where it enters, before anything is done, with a line saying what was
    wanted, rather than an ``AttributeError`` from deep inside.
    """


class ArgumentValueError(JupyterRefsError, ValueError):
    """An argument of a public entry point has the right kind but a value that cannot be
    used (``Cluster(workers=0)``); refused before anything is done."""

