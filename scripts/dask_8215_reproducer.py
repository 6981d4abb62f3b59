"""dask/distributed#8215 on today's release: cancel a future, submit the same key again at once.

Needs only ``distributed``.  Run: ``python scripts/dask_8215_reproducer.py [RUNS]``.

The new future ``g`` is cancelled in most runs, although it was submitted after the cancel:
the scheduler's ``cancelled-keys`` report names only the key (no epoch, no future id) and goes
to every client (``Scheduler.report`` with neither ``ts`` nor ``client``), so when it reaches
the client after ``submit`` made the new future of the same key, ``_handle_cancelled_keys``
cancels that one.  It survives only when the report beats the second ``submit``, or when the
first run's result and the gather overtake the cancel (found by jupyter_refs's explorer on the
model; see docs/zoo.md).
"""

from __future__ import annotations

import logging
import sys
from collections import Counter

import distributed
from distributed import Client, LocalCluster


def inc(x: int) -> int:
    return x + 1


def main(runs: int = 20) -> None:
    logging.getLogger("distributed").setLevel(logging.CRITICAL)
    outcomes: Counter[str] = Counter()
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        for i in range(runs):
            key = f"k-{i}"  # a fresh key per run: the runs do not meet
            f = client.submit(inc, 1, key=key)
            client.cancel([f])
            g = client.submit(inc, 1, key=key)
            try:
                outcomes[f"returned {g.result(timeout=10)!r}"] += 1
            except Exception as exc:  # noqa: BLE001 - the outcome being counted
                outcomes[f"{type(exc).__name__}: {exc}".replace(key, "k")] += 1
            del f, g
    print(f"distributed {distributed.__version__}, {runs} runs:")
    for outcome, n in outcomes.most_common():
        print(f"  {n:3} × {outcome}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
