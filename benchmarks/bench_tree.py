"""The tree reduction of dask issue 4612, kernel-side vs dask, in one run.

    python benchmarks/bench_tree.py [--leaves 256] [--repeats 5] [--check 50]

Two forms, each on the kernel-side cluster (live network, fixed protocol, traced and
checked) and on ``distributed.LocalCluster(processes=False)``:

* **notebook**: the client submits ``add`` on pairs, level by level, and waits for the root;
* **in a task**: one task does the same through ``get_client()`` and waits inside.

Then ``--check`` runs of each form on the live network, counting right sums and
violations (the issue's bar: 50/50, none under ``fixed``).  Figures are medians.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time

from jupyter_refs import Cluster
from jupyter_refs.worker_context import get_client


def add(a, b):
    return a + b


def reduce_with(client, objs):
    while len(objs) > 1:
        objs = [client.submit(add, objs[i], objs[i + 1]) if i + 1 < len(objs) else objs[i]
                for i in range(0, len(objs), 2)]
    return objs[0]


def tree_in_task(values):
    """The reduction from inside a task: dask's ``get_client()`` (or jupyter_refs's)."""
    try:
        from jupyter_refs.cluster import current_run
        ours = current_run.get() is not None
    except ImportError:  # pragma: no cover
        ours = False
    if ours:
        client = get_client()
    else:
        from distributed import get_client as dask_get_client
        client = dask_get_client()
    return reduce_with(client, client.scatter(values, hash=False)).result()


def ours_notebook(cluster, values):
    client = cluster.clients.get("client:1") or cluster.client()
    return reduce_with(client, client.scatter(values, hash=False)).result(timeout=60)


def ours_in_task(cluster, values):
    client = cluster.clients.get("client:1") or cluster.client()
    return client.submit(tree_in_task, values, pure=False).result(timeout=60)


def timed(fn, *args) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - t0, out


def bench_ours(values, repeats):
    expected = sum(values)
    rows = {}
    for name, fn in (("notebook", ours_notebook), ("in a task", ours_in_task)):
        times = []
        for _ in range(repeats):
            with Cluster(protocol="fixed", network="live", workers=1) as cluster:
                elapsed, out = timed(fn, cluster, values)
                assert out == expected, (out, expected)
                cluster.run_until_idle()
                assert cluster.violations == [], cluster.violations
            times.append(elapsed)
        rows[name] = statistics.median(times)
    return rows


def bench_dask(values, repeats):
    from distributed import Client, LocalCluster

    logging.getLogger("distributed").setLevel(logging.ERROR)
    expected = sum(values)
    rows = {}
    with LocalCluster(n_workers=1, processes=False, dashboard_address=None) as lc, \
            Client(lc) as client:
        client.submit(add, 0, 0).result()
        for name in ("notebook", "in a task"):
            times = []
            for _ in range(repeats):
                if name == "notebook":
                    elapsed, out = timed(lambda: reduce_with(
                        client, client.scatter(values, hash=False)).result())
                else:
                    elapsed, out = timed(lambda: client.submit(tree_in_task, values,
                                                               pure=False).result())
                assert out == expected
                times.append(elapsed)
            rows[name] = statistics.median(times)
    return rows


def check(values, runs):
    """``runs`` live runs of each form under fixed: right sums, and runs with a violation."""
    expected = sum(values)
    out = {}
    for name, fn in (("notebook", ours_notebook), ("in a task", ours_in_task)):
        right = violated = 0
        for _ in range(runs):
            with Cluster(protocol="fixed", network="live", workers=2,
                         threads_per_worker=2) as cluster:
                right += fn(cluster, values) == expected
                cluster.run_until_idle()
                violated += bool(cluster.violations)
        out[name] = (right, violated)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--leaves", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--check", type=int, default=50)
    args = parser.parse_args()
    values = list(range(args.leaves))
    ours = bench_ours(values, args.repeats)
    theirs = bench_dask(values, args.repeats)
    for name in ours:
        print(f"tree reduction ({args.leaves} leaves, {name:9}): kernel-side {ours[name] * 1e3:7.1f} ms"
              f"   dask {theirs[name] * 1e3:7.1f} ms   (median of {args.repeats}; live network, "
              "traced + checked)")
    if args.check:
        for name, (right, violated) in check(values[:64], args.check).items():
            print(f"tree reduction ({name:9}) live, fixed: right sum {right}/{args.check}, "
                  f"runs with a violation {violated}/{args.check}")


if __name__ == "__main__":
    main()
