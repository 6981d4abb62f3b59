"""Race 5379 on a real release of distributed: a late steal-response moves a re-processed task.

Needs only ``distributed`` (run it with the interpreter of the release to probe; not a test and
not run in CI; ``tests/test_zoo.py`` runs it on the installed release):

    python scripts/dask_5379_probe.py

The model's order, forced by hand as PR 5379's tests do (``move_task_request`` called directly,
the streams held): two workers; ``a`` and ``c`` hold both threads of worker A (blocked on an
Event), ``b`` (``allow_other_workers=True``) queues behind them.  The scheduler asks A for ``b``
(steal-1); A gives it up, and its answer is held on A's stream.  ``b`` is released and, once
the scheduler has forgotten it, submitted again: it queues on A again and is asked for again
(steal-2), that request held on the scheduler's stream to A.  Then A's answer to steal-1 goes.
Until 2021.9.1 the scheduler matched it by key: it confirms steal-2 and moves the new ``b`` to
worker B while A, never asked, still has it queued.  From 2021.10.0 it is a ``stale-response``
and ``b`` stays on A until A answers steal-2.  Printed: where the scheduler says ``b`` processes,
whether A still holds it, and the stealing log.
"""

from __future__ import annotations

import asyncio
import logging
import time


def blocked(x: int, event_name: str) -> int:
    from distributed import Event

    Event(event_name).wait()
    return x


class _Held:
    """A comm whose writes wait until ``go`` is set (a batched stream held, in any release)."""

    def __init__(self, comm):
        self._comm = comm
        self.go = asyncio.Event()

    async def write(self, *args, **kwargs):
        await self.go.wait()
        return await self._comm.write(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._comm, name)


def _hold(bcomm) -> _Held:
    held = bcomm.comm = _Held(bcomm.comm)
    return held


def _release(bcomm, held: _Held) -> None:
    held.go.set()
    bcomm.comm = held._comm


async def _until(condition, what: str, timeout: float = 10.0) -> None:
    """Poll ``condition`` (the cluster's state: there is no hook to await) until it holds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {timeout} s for {what}")
        await asyncio.sleep(0.005)


def _tasks(worker) -> dict:
    state = getattr(worker, "state", None)  # the worker state machine (2022.6 on)
    return state.tasks if state is not None else worker.tasks


async def probe() -> dict:
    from distributed import Client, Event, Scheduler, Worker

    async with Scheduler(dashboard_address=":0") as s, \
            Worker(s.address, nthreads=2) as wa, Worker(s.address, nthreads=2) as wb, \
            Client(s.address, asynchronous=True, set_as_default=False) as c:
        steal = s.extensions["stealing"]
        go = Event("go-5379", client=c)
        a = c.submit(blocked, 1, "go-5379", key="a", workers=[wa.address])
        cc = c.submit(blocked, 3, "go-5379", key="c", workers=[wa.address])

        async def queued_on_a(future_key: str) -> None:
            await _until(lambda: future_key in s.tasks and s.tasks[future_key].state ==
                         "processing" and future_key in _tasks(wa) and
                         _tasks(wa)[future_key].state == "ready", f"{future_key} ready on A")

        await _until(lambda: all(k in _tasks(wa) and _tasks(wa)[k].state == "executing"
                                 for k in ("a", "c")), "a and c executing on A")
        b = c.submit(blocked, 2, "go-5379", key="b", workers=[wa.address],
                     allow_other_workers=True)
        await queued_on_a("b")
        ws_a, ws_b = s.workers[wa.address], s.workers[wb.address]
        answers = _hold(wa.batched_stream)  # A's answers wait
        steal.move_task_request(s.tasks["b"], ws_a, ws_b)  # steal-1
        await _until(lambda: "b" not in _tasks(wa), "A to give the first b up")
        b.release()
        await _until(lambda: "b" not in s.tasks, "the scheduler to forget b")
        b = c.submit(blocked, 2, "go-5379", key="b", workers=[wa.address],
                     allow_other_workers=True)
        await _until(lambda: "b" in s.tasks and s.tasks["b"].state == "processing",
                     "b processing again")
        # Until the compute-task of the new b reaches A, A's stream from the scheduler flows.
        await queued_on_a("b")
        requests = _hold(s.stream_comms[wa.address])  # steal-2 waits on its way to A
        steal.move_task_request(s.tasks["b"], ws_a, ws_b)  # steal-2
        _release(wa.batched_stream, answers)  # A's answer to steal-1 goes
        # The answer is handled when b leaves A (matched by key) or is logged stale.
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline and s.tasks["b"].processing_on is ws_a \
                and not _logged(s, "stale-response"):
            await asyncio.sleep(0.005)
        outcome = {
            "processing_on": "B" if s.tasks["b"].processing_on is ws_b else "A",
            "A still holds b": "b" in _tasks(wa),
            "log": [entry[0] for entry in _stealing_log(s)],
        }
        _release(s.stream_comms[wa.address], requests)
        await go.set()
        await c.gather([a, cc, b])
        return outcome


def _stealing_log(s) -> list:
    out = []
    for _, entry in s.get_events(topic="stealing"):  # (time, message) pairs, every release
        for e in entry if isinstance(entry, list) else [entry]:
            if isinstance(e, tuple) and e and isinstance(e[0], str) and "b" in e:
                out.append(e)
            elif isinstance(e, dict) and e.get("key") == "b":
                out.append((e.get("action"),))
    return out


def _logged(s, what: str) -> bool:
    return any(e[0] == what for e in _stealing_log(s))


def main() -> None:
    import distributed

    logging.getLogger("distributed").setLevel(logging.CRITICAL)
    print(f"distributed {distributed.__version__}: {asyncio.run(probe())}")


if __name__ == "__main__":
    main()
