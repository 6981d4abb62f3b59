"""What the scheduler's parts need of it: one declaration for its extensions, work stealing,
the active memory manager and ``replicate``.

``SchedulerState`` makes each part and hands it itself; a part that imported the scheduler's
module back, even for its types, would tie the two into an import circle.  So each part reads
the scheduler through these protocols (``scheduler.SchedulerState`` and ``TaskState`` have all
of it), and the dependency runs one way: the scheduler imports its parts, the parts this.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from .messages import Message

if TYPE_CHECKING:
    from .variants import ProtocolVariant

#: The messages one stimulus produces, in sending order (``scheduler.Out``).
Out = list[Message]


class TaskState(Protocol):
    """What the parts read of a task."""

    key: str
    state: str
    processing_on: str | None
    run_spec: dict[str, Any] | None
    who_has: dict[str, int]  # worker -> the incarnation of its copy
    dependencies: Any
    dependents: Any


class SchedulerState(Protocol):
    """What the parts call on the scheduler and read of it."""

    variant: ProtocolVariant
    record: Callable[..., None]
    tasks: dict[str, Any]  # key -> TaskState
    workers: list[str]
    pseudo: set[str]
    processing: dict[str, dict[str, None]]
    nthreads: dict[str, int]

    def send(self, out: Out, receiver: str, op: str, keys: tuple[str, ...],
             **payload: Any) -> None: ...

    def reply(self, out: Out, request: Message, **payload: Any) -> None: ...

    def desire(self, holder: str, keys: list[str], out: Out, stimulus: str,
               gens: dict[str, int] | None = None) -> None: ...

    def release(self, holder: str, keys: list[str], out: Out, stimulus: str) -> None: ...

    def maybe_balance(self, out: Out) -> None: ...

    def move_task(self, ts: Any, thief: str, out: Out, stimulus: str) -> None: ...

    def reschedule(self, key: str, out: Out, stimulus: str) -> None: ...

    def remove_replica(self, ts: Any, worker: str, out: Out, stimulus: str) -> None: ...
