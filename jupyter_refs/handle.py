"""What the magics and the views need from a cluster, declared once.

Two things implement it: the kernel-side :class:`~jupyter_refs.cluster.Cluster`
and the tracer of a real dask cluster
(:class:`~jupyter_refs.dask.tracer.DaskTracer`).  The magics and the views are
written against this protocol alone, so neither asks which one it has (as
ipyparallel's magics are bound to a view object with a defined API).  It lives
below both magics and views, so that a view needs no magics to know its source.

``tests/test_handle.py`` checks that both implementations have every member,
typed as declared here.
"""

from __future__ import annotations

from typing import Any, Protocol

from .checks import Checks, Violation
from .focus import Focus
from .trace import Trace
from .why import Chain


class InFlight(Protocol):
    """A message sent and not yet handled, as ``in_flight`` lists it.

    The kernel-side cluster's :class:`~jupyter_refs.protocol.messages.Message` and
    the dask tracer's ``HeldMessage`` both are one; ``str()`` of either reads
    ``#id op[keys] sender->receiver``.
    """

    sender: str
    receiver: str
    op: str
    channel: str
    keys: tuple[str, ...]
    msg_id: int | None


class ClusterHandle(Protocol):
    """A cluster as the magics and views see it, kernel-side or attached.

    The views read ``trace`` and ``checks`` only; the step controls and the
    magics' ``%step`` / ``%hold`` drive it through the delivery methods.
    """

    #: The event log everything is drawn from.
    trace: Trace
    #: The invariants, rebuilt from ``trace``; None for a cluster made without them.
    checks: Checks | None
    #: Closed (or detached): nothing more happens, the trace stays readable.
    closed: bool

    @property
    def title(self) -> str:
        """What a view calls this cluster (``protocol=dask network=live``, ``dask tcp://…``)."""
        ...

    @property
    def ended(self) -> str:
        """How its end is told once ``closed`` ("the cluster (…) was closed", "the tracer was
        detached from tcp://…"): the magics and the sidebar say so, not "no cluster yet"."""
        ...

    @property
    def violations(self) -> list[Violation]:
        """Every invariant broken so far, with the trace brought up to date first."""
        ...

    @property
    def in_flight(self) -> list[InFlight]:
        """Messages that can be delivered by hand, oldest first."""
        ...

    @property
    def held(self) -> set[str]:
        """The channel patterns being held (see :meth:`hold`)."""
        ...

    @property
    def can_hold(self) -> bool:
        """Whether :meth:`hold` can hold channels here."""
        ...

    @property
    def steppable(self) -> bool:
        """Whether messages wait here for a hand (``deliver`` / ``step``), so a view offers
        the step controls without being asked."""
        ...

    @property
    def focused(self) -> Focus | None:
        """The keys the trace follows (None: every key)."""
        ...

    def focus(self, keys: Any = None, sample: int = 1) -> Focus | None:
        """Trace only ``keys`` (globs, key prefixes, a predicate), one key in ``sample``, from
        now on; ``focus()`` traces every key again.  Returns the new focus."""
        ...

    def channels(self) -> set[str]:
        """The channels seen so far (``client:1->scheduler``, ``rpc:client:1#3``, …)."""
        ...

    @property
    def actors(self) -> set[str]:
        """Who sends and receives here: the scheduler, the workers, the clients.  Every
        stream runs between the scheduler and one of the others, so this names the channels
        ``%hold`` may take before they carry a message (and refuses any other)."""
        ...

    def hold(self, pattern: str) -> None:
        """Hold the channels matching ``pattern`` (a name or a glob) until delivered by hand."""
        ...

    def release_holds(self) -> set[str]:
        """Stop holding; what was held flows again.  Returns the patterns that were held."""
        ...

    def deliver(self, msg_id: int) -> InFlight:
        """Deliver one message now (it must be first on its channel)."""
        ...

    def step(self, n: int = 1) -> list[InFlight]:
        """Deliver the ``n`` next messages, oldest first."""
        ...

    def run_until_idle(self, timeout: float = 10.0) -> int:
        """Deliver everything, held messages too; returns how many were delivered by hand."""
        ...

    def apply_drops(self) -> None:
        """Release the futures dropped since the last call: the end of a cell is a safe point."""
        ...

    def sync(self) -> None:
        """Bring the trace up to date: every event recorded so far reaches the checks."""
        ...

    def why(self, key: str, client: str | None = None) -> Chain:
        """The causal chain from the user's line to the loss of ``key`` (``why.py``)."""
        ...

    def scheduler_state(self, key: str) -> str:
        """The scheduler's state for ``key`` ("forgotten" if it has no task)."""
        ...

    def close(self) -> None:
        """Stop (a dask tracer detaches); the trace stays readable."""
        ...
