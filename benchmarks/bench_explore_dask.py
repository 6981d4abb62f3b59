"""The explorer on a dask cluster: ``explore(..., client=c)`` against one process, side by side.

A ``LocalCluster`` of ``--workers`` worker processes (one thread each) takes the random runs of
the #8576 scenario (scatter, drop, scatter, submit) in equal shares; the same search in this
process alone (``processes=1``) is timed alternately with it, so both see the same machine load.
Prints schedules per second for each, the ratio (target >= 1.7 with 2 workers), and whether the
two found the same failure groups.

Usage: ``python benchmarks/bench_explore_dask.py [--runs N] [--schedules N] [--workers N]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path


def inc(v: int) -> int:
    return v + 1


def scatter_race(client) -> None:
    x = client.scatter(123)
    del x
    x = client.scatter(123)
    client.submit(inc, x)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--schedules", type=int, default=20_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--protocol", default="dask")
    args = parser.parse_args()
    # The workers import this checkout of jupyter_refs, as this process does.
    root = str(Path(__file__).resolve().parents[1])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))
    sys.path.insert(0, root)
    from distributed import Client, LocalCluster

    from jupyter_refs import explore
    from jupyter_refs.explore import _group

    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        explore(scatter_race, protocol=args.protocol, max_schedules=500, client=client)  # warm
        local, remote, same = [], [], True
        for _ in range(args.runs):
            one = explore(scatter_race, protocol=args.protocol, max_schedules=args.schedules,
                          processes=1)
            on = explore(scatter_race, protocol=args.protocol, max_schedules=args.schedules,
                         client=client)
            local.append(one.rate)
            remote.append(on.rate)
            same &= {_group(f.run) for f in one.failures} == {_group(f.run) for f in on.failures}
        a, b = statistics.median(local), statistics.median(remote)
        print(f"{args.protocol}: one process {a:,.0f} schedules/s; on a LocalCluster of "
              f"{args.workers} worker processes {b:,.0f} schedules/s: {b / a:.2f}x "
              f"(median of {args.runs} runs of {args.schedules:,}; target >= 1.7x with 2)")
        print(f"the same failure groups found both ways in every run: {same}")


if __name__ == "__main__":
    main()
