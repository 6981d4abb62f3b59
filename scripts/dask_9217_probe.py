"""PR 9217's race on a real release of distributed: get_dataset, then unpublish.

Needs only ``distributed`` (run it with the interpreter of the release to probe; not a test and
not run in CI):

    python scripts/dask_9217_probe.py [--runs N] [--late SECONDS]

A one-worker cluster in this process, over TCP (in-process comms hand the published objects
back unserialized, so a reader would get the owner's very Future).  Each run: the owner
submits ``x``, publishes it and lets go; the reader takes the dataset while its batched stream
flushes ``--late`` seconds late (a slow link: its ``client-desires-keys`` waits there); then
the owner unpublishes.  The reader is the owner itself (PR 9217's own test) or a second client.
Printed per form: how many runs returned the value, and how many left the reader's future
pending for ever (``result(timeout)`` times out; the scheduler warns "desires key … but key is
unknown").  Until 2026.3.0 both forms hang; from 2026.6.0 the one-client form returns, the
two-client form still hangs.
"""

from __future__ import annotations

import argparse
import logging
import time
import warnings
from collections import Counter


def inc(x: int) -> int:
    return x + 1


def one_run(distributed, cluster, owner, reader, late: float, i: int) -> str:
    from distributed.metrics import time as dask_time

    key = f"x-{i}"
    scheduler = cluster.scheduler
    x = owner.submit(inc, 122, key=key)
    owner.publish_dataset(x, name=key)
    x.release()
    deadline = dask_time() + 10
    while scheduler.clients[owner.id] in scheduler.tasks[key].who_wants:
        if dask_time() > deadline:
            return "setup failed"
        time.sleep(0.01)
    reader.scheduler_comm.next_deadline = dask_time() + late
    y = reader.get_dataset(key)
    owner.unpublish_dataset(key)
    try:
        return f"returned {y.result(timeout=late + 1)}"
    except distributed.TimeoutError:
        return "hung (result timed out)"
    except Exception as exc:  # noqa: BLE001 - the outcome reported
        return f"raised {type(exc).__name__}"
    finally:
        y.release()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--late", type=float, default=0.5)
    args = parser.parse_args()
    import distributed

    logging.getLogger("distributed").setLevel(logging.CRITICAL)
    warnings.simplefilter("ignore")
    print(f"distributed {distributed.__version__}")
    with distributed.LocalCluster(processes=False, protocol="tcp", n_workers=1,
                                  threads_per_worker=1, dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as owner, distributed.Client(cluster) as other:
        for form, reader in (("one client (the owner reads)", owner),
                             ("two clients (another reads)", other)):
            outcomes = Counter(one_run(distributed, cluster, owner, reader, args.late, i)
                               for i in range(args.runs))
            print(f"  {form}: " + ", ".join(f"{n} x {o}" for o, n in sorted(outcomes.items())))


if __name__ == "__main__":
    main()
