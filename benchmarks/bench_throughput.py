"""Cluster throughput: a 10,000-task ``map`` on the kernel-side cluster vs dask.

    python benchmarks/bench_throughput.py [--tasks 10000] [--repeats 5]

Both run in this process on the same trivial function: the kernel-side cluster
under immediate delivery (tracing and checks on, as a user gets it) and
``distributed.LocalCluster(processes=False)``.  Their repeats alternate (a
kernel-side map, a dask map, …), so both sides see the same load on a shared
machine; each figure is the median of its repeats, the ratio is of the medians,
and each round's own ratio is printed too (its kernel-side map over its dask map).
Each timed map starts after a full collection, on both sides: the cluster an earlier
repeat closed is cyclic garbage (51,000 objects per 1,000 tasks, measured), and the
collection that frees it otherwise lands in a later repeat's map (+100 ms there, measured).
"""

from __future__ import annotations

import argparse
import gc
import logging
import statistics
import time

from jupyter_refs import Cluster


def inc(x: int) -> int:
    return x + 1


def run_kernel_side(n: int) -> float:
    with Cluster(protocol="legacy", workers=2, network="immediate", trace_capacity=2_000_000) as cluster:
        client = cluster.client()
        client.submit(inc, 0).result()  # as dask's side below: the first call's costs apart
        gc.collect()
        t0 = time.perf_counter()
        results = client.gather(client.map(inc, range(n)))
        elapsed = time.perf_counter() - t0
        assert results == [i + 1 for i in range(n)]
        assert cluster.violations == []
    return elapsed


def run_dask(n: int) -> float:
    from distributed import Client, LocalCluster

    logging.getLogger("distributed").setLevel(logging.ERROR)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=None) as lc, Client(lc) as client:
        client.submit(inc, 0).result()  # warm up connections
        gc.collect()
        t0 = time.perf_counter()
        results = client.gather(client.map(inc, range(n)))
        elapsed = time.perf_counter() - t0
        assert results == [i + 1 for i in range(n)]
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--dask-repeats", type=int, default=2)
    args = parser.parse_args()
    n = args.tasks
    mine: list[float] = []
    dasks: list[float] = []
    for i in range(max(args.repeats, args.dask_repeats)):
        if i < args.repeats:
            mine.append(run_kernel_side(n))
        if i < args.dask_repeats:
            dasks.append(run_dask(n))
    ours, theirs = statistics.median(mine), statistics.median(dasks)
    rounds = ", ".join(f"{d / m:.1f}x" for m, d in zip(mine, dasks))
    print(f"throughput: each round's ratio    {rounds}")
    print(f"throughput: kernel-side cluster  {n / ours:9.0f} tasks/s  (median of {args.repeats}, "
          f"{n} tasks, traced + checked)")
    print(f"throughput: dask LocalCluster    {n / theirs:9.0f} tasks/s  (median of "
          f"{args.dask_repeats}, processes=False)")
    print(f"throughput: ratio                {theirs / ours:9.1f} x     (target >= 30)")


if __name__ == "__main__":
    main()
