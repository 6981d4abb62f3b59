"""Why a wait cannot complete: the error a stepped wait raises instead of hanging.

A wait on a stepped network delivers until what it waits for has happened; when nothing can
be delivered it says why, in the terms a user can act on — every thread of a worker busy
waiting (``ThreadsExhaustedError``), a task waiting for data its worker no longer has
(``MissingDataError``), or messages held by a hold or by a manual network
(``HeldMessagesError``).  Apart from the driver (``cluster.py``): it only reads the workers
and the network.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from .errors import HeldMessagesError, MissingDataError, ThreadsExhaustedError
from .network import Network
from .protocol.messages import Message
from .protocol.worker import WorkerState


def why_stuck(what: str, workers: Iterable[WorkerState], network: Network, network_name: str,
              needs: Callable[[], list[Message]] | None) -> Exception:
    """The error for ``what``, which nothing can be delivered for: ``needs()`` names the
    messages it waits on, when the caller knows them."""
    workers = list(workers)
    for worker in workers:
        if worker.ready and not worker.free_slots():
            return ThreadsExhaustedError(
                f"{what} cannot complete: every thread of {worker.name} "
                f"({worker.nthreads}) runs a task that is waiting "
                f"({', '.join(sorted(worker.executing))}), so {', '.join(worker.ready)} "
                "never gets one, and no other worker can steal it; call secede() before "
                "waiting inside a task, use "
                "worker_client(), or give the cluster more threads_per_worker "
                "(real dask would hang here)")
    for worker in workers:
        for task, deps in worker.missing().items():
            return MissingDataError(
                f"{what} cannot complete: {task} waits on {worker.name} for "
                f"{', '.join(deps)}, which the scheduler says {worker.name} holds but it "
                "does not (its data was freed); real dask would wait for ever, its worker "
                "asking the scheduler where the data is")
    held = needs() if needs is not None else []
    if network.held and not held:
        held = [m for m in network.in_flight.values() if network.is_held(m.channel)]
    return held_error(what, held or sorted(network.in_flight.values(), key=lambda m: m.msg_id),
                      network, network_name)


def held_error(what: str, held: list[Message], network: Network,
               network_name: str) -> HeldMessagesError:
    """The error for ``what`` waiting on ``held``, naming the holds that keep them: the user
    lifts a hold (``%hold --off``), or steps a manual network — never confuse the two."""
    holds = {p for m in held for p in network.holding(m.channel)}
    return HeldMessagesError(what, held, holds, network_name)
