"""PR 8522's race on a real release of distributed: retire_workers, the heartbeat first.

Needs only ``distributed`` (run it with the interpreter of the release to probe; not a test and
not run in CI):

    python scripts/dask_8522_probe.py [--runs N] [--timeout SECONDS]

A ``LocalCluster`` of two worker processes with nannies (``processes=True``), its scheduler in
this process.  Each run: ``x`` computed on the second worker, then ``client.retire_workers`` on
that worker, with the scheduler's ``{"op": "close"}`` to it held back (dropped from its batched
stream): the order the zoo's model found, where the worker's heartbeat, answered "missing" after
the removal, reaches the worker before the close.  Nothing else is steered; the worker's own
heartbeat (every 0.5 s on a small cluster) comes as it does.  Printed per run: whether the
retired worker came back (a worker of its name registered again: its nanny restarted it) or
stayed gone (its nanny closed), within ``--timeout`` seconds, and whether ``x`` still gathers.
Until 2024.2.0 it comes back; from 2024.2.1 (PR 8522) it stays gone.
"""

from __future__ import annotations

import argparse
import logging
import time
from collections import Counter


def inc(x: int) -> int:
    return x + 1


def one_run(distributed, timeout: float) -> str:
    from distributed.core import Status

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client:
        scheduler = cluster.scheduler
        client.wait_for_workers(2)
        [(address, name)] = [(a, ws.name) for a, ws in scheduler.workers.items()
                             if str(ws.name) == "1"]
        x = client.submit(inc, 1, key="x", workers=[address])
        x.result()
        stream = scheduler.stream_comms[address]
        send = stream.send

        def without_close(*msgs):
            return send(*[msg for msg in msgs if msg.get("op") != "close"])

        stream.send = without_close  # the close comes after the heartbeat's answer: never
        retired = client.retire_workers([address])
        nanny = cluster.workers[name]
        deadline = time.monotonic() + timeout
        outcome = "undecided"
        while time.monotonic() < deadline:
            if any(str(ws.name) == str(name) for ws in scheduler.workers.values()):
                outcome = "came back (its nanny restarted it)"
                break
            if nanny.status in (Status.closed, Status.closing, Status.failed):
                outcome = "stayed gone (its nanny closed)"
                break
            time.sleep(0.05)
        gathered = x.result(timeout=10)
        return (f"retired {sorted(retired) == [address]}; {outcome}; x gathers {gathered}; "
                f"{len(scheduler.workers)} worker(s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=20.0)
    args = parser.parse_args()
    import distributed

    logging.getLogger("distributed").setLevel(logging.CRITICAL)
    print(f"distributed {distributed.__version__}")
    seen = Counter(one_run(distributed, args.timeout) for _ in range(args.runs))
    for outcome, n in seen.most_common():
        print(f"{n} of {args.runs}: {outcome}")


if __name__ == "__main__":
    main()
