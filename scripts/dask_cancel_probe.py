"""PR 7583's and PR 6016's races on a real release of distributed: the cancel.

Needs only ``distributed`` (run it with the interpreter of the release to probe; not a test and
not run in CI):

    python scripts/dask_cancel_probe.py [--runs N] [--late SECONDS]

A scheduler and one worker in this process, over TCP, driven asynchronously (``Scheduler`` and
``Worker`` started by hand: 2022.5.0's ``LocalCluster`` does not start on Python 3.11, its
``asyncio.wait`` is given workers, not futures).  Two forms, each ``--runs`` times:

* ``7583`` (PR 7583's ``test_cancel_before_known_to_scheduler``, the future kept): a fresh
  client whose batched stream flushes ``--late`` seconds late (a slow link: its ``update-graph``
  waits there) submits ``k`` and cancels it.  Until 2023.3.0 the cancel is an RPC that overtakes
  the graph and polls 1 s for the key (before 2022.5.1 its retries last 1 s); past that it gives
  up, and the key, computed when the graph comes, stays in memory for the cancelled future.
  Since 2023.3.1 the cancel waits behind the graph on the stream: the key is cancelled.
* ``6016`` (PR 6016's ``test_cancel_multi_client``): two clients submit ``k``, both see it
  finished, one cancels it.  Until 2022.5.0 the other client is told too: its future says
  cancelled (0.1 s later, as the test waits) while the scheduler keeps the key for it.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
from collections import Counter


def inc(x: int) -> int:
    return x + 1


async def run_7583(scheduler, late: float, i: int) -> str:
    from distributed import Client
    from distributed.metrics import time as dask_time

    key = f"k-{i}"
    async with Client(scheduler.address, asynchronous=True, set_as_default=False) as client:
        # Set before the client sends anything: its stream waits for this deadline.
        client.scheduler_comm.next_deadline = dask_time() + late
        f = client.submit(inc, 1, key=key)
        await client.cancel([f])
        assert await client.submit(inc, 2, key=f"next-{i}") == 3
        await asyncio.sleep(0.2)
        ts = scheduler.tasks.get(key)
        if ts is None:
            return "cancelled"
        wanted = {cs.client_key for cs in ts.who_wants} == {client.id}
        return (f"kept: {ts.state}, wanted by the client, its future {f.status}" if wanted
                else f"kept: {ts.state}")


async def run_6016(scheduler, a, b, i: int) -> str:
    key = f"k-{i}"
    x = a.submit(inc, 1, key=key)
    y = b.submit(inc, 1, key=key)
    await y
    await x
    await a.cancel([x])
    await asyncio.sleep(0.1)  # "Give the scheduler time to pass messages", as the test does
    ts = scheduler.tasks.get(key)
    kept = ts is not None and b.id in {cs.client_key for cs in ts.who_wants}
    x.release()
    y.release()
    return f"the other's future {y.status}" + (", its key kept for it" if kept else "")


async def probe(runs: int, late: float) -> None:
    from distributed import Client, Scheduler, Worker

    async with Scheduler(dashboard_address=":0", protocol="tcp") as scheduler, \
            Worker(scheduler.address, nthreads=1):
        seen = Counter([await run_7583(scheduler, late, i) for i in range(runs)])
        print(f"7583, the client's stream {late} s late: {dict(seen)}")
        async with Client(scheduler.address, asynchronous=True, set_as_default=False) as a, \
                Client(scheduler.address, asynchronous=True, set_as_default=False) as b:
            seen = Counter([await run_6016(scheduler, a, b, i) for i in range(runs)])
        print(f"6016, both results gathered, one client cancels: {dict(seen)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--late", type=float, default=1.5)
    args = parser.parse_args()
    import distributed

    logging.getLogger("distributed").setLevel(logging.CRITICAL)
    print(f"distributed {distributed.__version__}")
    asyncio.run(probe(args.runs, args.late))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
