"""What tracing a real dask cluster costs, and what the ordered-scatter workaround costs.

* a 5,000-task ``client.map`` of a trivial function, untraced and traced, alternating
  in one run on one ``LocalCluster`` (medians; the ratio is the figure);
* the latency of ``client.scatter`` with and without ``ordered_scatter``.

Usage: ``python benchmarks/bench_dask.py [--runs N] [--processes]``.
"""

from __future__ import annotations

import argparse
import statistics
import time

from distributed import Client, LocalCluster

from jupyter_refs.dask import attach


def inc(v: int) -> int:
    return v + 1


def map_once(client: Client, n: int) -> float:
    start = time.perf_counter()
    futures = client.map(inc, range(n), pure=False)
    client.gather(futures)
    elapsed = time.perf_counter() - start
    del futures
    return elapsed


def scatter_latency(client: Client, n: int) -> float:
    start = time.perf_counter()
    for i in range(n):
        x = client.scatter(i)
        del x
    return (time.perf_counter() - start) / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--tasks", type=int, default=5_000)
    parser.add_argument("--processes", action="store_true", help="worker processes, not threads")
    args = parser.parse_args()
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=args.processes,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        map_once(client, args.tasks)  # warm up
        plain, traced = [], []
        events = 0
        for _ in range(args.runs):
            plain.append(map_once(client, args.tasks))
            tracer = attach(client)
            traced.append(map_once(client, args.tasks))
            tracer.detach()
            events = len(tracer.trace)
        p, t = statistics.median(plain), statistics.median(traced)
        kind = "processes" if args.processes else "threads"
        print(f"dask map of {args.tasks} tasks (2 workers, {kind}): untraced {p * 1e3:.0f} ms, "
              f"traced {t * 1e3:.0f} ms (median of {args.runs}); overhead {100 * (t / p - 1):+.1f}% "
              f"(target <= 5%); {events} events per traced run")
        unordered = statistics.median(scatter_latency(client, 200) for _ in range(3))
        with attach(client, ordered_scatter=True):
            ordered = statistics.median(scatter_latency(client, 200) for _ in range(3))
        print(f"scatter latency: {unordered * 1e3:.2f} ms plain, {ordered * 1e3:.2f} ms with "
              f"ordered_scatter (traced): +{(ordered - unordered) * 1e3:.2f} ms per scatter")


if __name__ == "__main__":
    main()
