"""PR 8577's race on a real release of distributed: publish right after submit drops annotations.

Needs only ``distributed`` (run it with the interpreter of the release to probe; not a test and
not run in CI):

    python scripts/dask_8577_probe.py [--runs N]

PR 8577's own test, as a loop: a worker with the resource ``A``; ``submit`` a task with
``resources={"A": 1}`` and publish its future at once; the task returns the annotations its
worker sees.  Until 2024.4.1 the ``publish_put`` RPC can overtake the batched ``update-graph``:
its desire makes the task first, and ``update_graph`` then gives it the run spec but not the
annotations (the task sees ``{}``).  From 2024.4.2 the put waits for the client's stream.
"""

from __future__ import annotations

import argparse
import logging
import warnings
from collections import Counter


def annotations() -> dict:
    from distributed import get_worker

    worker = get_worker()
    return dict(worker.state.tasks[worker.get_current_task()].annotations or {})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    import distributed

    logging.getLogger("distributed").setLevel(logging.CRITICAL)
    warnings.simplefilter("ignore")
    print(f"distributed {distributed.__version__}")
    outcomes: Counter = Counter()
    with distributed.LocalCluster(processes=False, protocol="tcp", n_workers=1,
                                  threads_per_worker=1, resources={"A": 1},
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client:
        for i in range(args.runs):
            future = client.submit(annotations, resources={"A": 1}, pure=False)
            client.publish_dataset(future, name=f"foo-{i}")
            outcomes[repr(future.result(timeout=10))] += 1
            client.unpublish_dataset(f"foo-{i}")
    print("  the task's annotations: " + ", ".join(f"{n} x {o}" for o, n in outcomes.items()))


if __name__ == "__main__":
    main()
