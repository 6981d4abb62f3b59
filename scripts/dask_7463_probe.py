"""Races 7463 / 7933 on a real release of distributed: a stale run's outcome taken for a new one.

Needs only ``distributed`` (run it with the interpreter of the release to probe; not a test and
not run in CI; ``tests/test_zoo.py`` runs it on the installed release):

    python scripts/dask_7463_probe.py [--error]

PR 7348's test (``test_deadlock_resubmit_queued_tasks_fast``, its processing case) with another
function for the second submission, as PR 7463's test has: ``submit(first, key="k")`` runs on
the only worker, blocked on an Event; the scheduler's stream to the worker is frozen (dask's
``freeze_batched_send``), the future released and, once the scheduler has forgotten ``k``,
``submit(dec, 1, key="k")`` made.  Then the first run is let go: its ``task-finished`` (with
``--error``: its ``task-erred``) reaches the scheduler while ``k`` is processing again on the same
worker, before the worker has heard of the release.  Until 2023.1.0 (task-erred: 2023.6.1) the
scheduler takes it as the second run's: the result is the first function's (``2``; with
``--error``, its ValueError).  From 2023.1.1 (2023.7.0) the run id says it is stale: the task
runs again and the result is ``dec(1) == 0``.  The model's schedule is the same order: the
worker runs the first submission before the free-keys of its release reaches it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import time


def first(x: int, event_name: str, error: bool) -> int:
    """Blocks until the event is set, then returns ``x + 1`` (or raises, with ``error``)."""
    from distributed import Event

    Event(event_name).wait()
    if error:
        raise ValueError(f"the first submission's error ({x})")
    return x + 1


def dec(x: int) -> int:
    return x - 1


async def _until(condition, what: str, timeout: float = 10.0) -> None:
    """Poll ``condition`` (the scheduler's state: there is no hook to await) until it holds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {timeout} s for {what}")
        await asyncio.sleep(0.005)


@contextlib.asynccontextmanager
async def _first_run_executing(error: bool):
    """A scheduler, one worker of one thread and a client, ``submit(first, 1, key="k")``
    executing on the worker, blocked on an Event: ``(scheduler, worker, client, event,
    future)``, what both probes start from."""
    from distributed import Client, Event, Scheduler, Worker

    async with Scheduler(dashboard_address=":0") as s, \
            Worker(s.address, nthreads=1) as a, \
            Client(s.address, asynchronous=True, set_as_default=False) as c:
        block = Event("block-7463", client=c)
        f = c.submit(first, 1, "block-7463", error, key="k")
        await _until(lambda: "k" in a.state.tasks and a.state.tasks["k"].state == "executing",
                     "k executing on the worker")
        yield s, a, c, block, f


async def probe(error: bool = False) -> object:
    """The second future's outcome: its value, or the name of the exception it raised."""
    from distributed.utils_test import freeze_batched_send

    async with _first_run_executing(error) as (s, a, c, block, f):
        with freeze_batched_send(s.stream_comms[a.address]):
            f.release()
            await _until(lambda: "k" not in s.tasks, "the scheduler to forget k")
            g = c.submit(dec, 1, key="k")
            await _until(lambda: "k" in s.tasks and s.tasks["k"].state == "processing",
                         "k processing again")
            second = s.tasks["k"]
            run = getattr(second, "run_id", None)  # None before run ids (2023.1.1)
            await block.set()
            # The first run's outcome reaches the scheduler: taken (k leaves processing for
            # memory or erred) or recognised as stale (k is sent again: another run id).
            await _until(lambda: second.state != "processing"
                         or getattr(second, "run_id", None) != run,
                         "the first run's outcome to reach the scheduler")
            if second.state != "processing":
                # Taken: gather now, before the release's free-keys reaches the worker (the
                # model's order too); the data the worker holds is the first run's.
                return await _outcome(g)
        return await _outcome(g)  # recognised as stale: the task runs again once unfrozen


async def probe_late_report(error: bool = False) -> object:
    """The same two submissions, with the *client's* stream frozen instead (dask's
    ``freeze_batched_send`` on ``Client.scheduler_comm``): the release of ``k`` and the second
    submission's graph wait on it while the first run ends.  The scheduler, which still has
    ``k`` wanted, reports the first run (``key-in-memory``; ``task-erred``) to the client — where
    ``k`` is the second future's now.  Its gather is an RPC and goes at once, past the frozen
    release: on 2026.8.0 the second future gets the first run's ``2`` (its ValueError), where
    ``dec(1) == 0`` is due.  No run id reaches the client; the model finds the same order
    (``validate(zoo.resubmit_other_function)`` and ``resubmit_after_error``)."""
    from distributed.utils_test import freeze_batched_send

    async with _first_run_executing(error) as (_, _, c, block, f):
        with freeze_batched_send(c.scheduler_comm):
            f.release()
            await _until(lambda: "k" not in c.refcount, "the client to let go of f")
            g = c.submit(dec, 1, key="k")
            await block.set()
            await _until(lambda: g.status != "pending", "the first run's report to reach g")
            return await _outcome(g)


async def _outcome(future) -> object:
    try:
        return await future.result(timeout=10)
    except Exception as exc:  # noqa: BLE001 - the outcome compared
        return type(exc).__name__


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--error", action="store_true",
                        help="the first submission raises (race 7933, PR 7933)")
    args = parser.parse_args()
    import distributed

    logging.getLogger("distributed").setLevel(logging.CRITICAL)
    print(f"distributed {distributed.__version__}: the second future's outcome: "
          f"{asyncio.run(probe(args.error))!r}")


if __name__ == "__main__":
    main()
