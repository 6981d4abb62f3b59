"""What tracing a real dask cluster costs, and what the ordered-scatter workaround costs.

* a 5,000-task ``client.map`` of a trivial function, untraced and traced, in pairs on one
  ``LocalCluster`` (each pair in the other order than the one before, so that a drift in the
  machine's load weighs on both sides); the figure is the median of the per-pair ratios,
  which a load spike spoils one pair at a time rather than both medians at once;
* what the tracer leaves for later: the time ``tracer.violations`` then takes to bring the
  buffered events into the trace and check them (nobody watched live during the map);
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
    parser.add_argument("--runs", type=int, default=9, help="pairs (untraced, traced)")
    parser.add_argument("--tasks", type=int, default=5_000)
    parser.add_argument("--processes", action="store_true", help="worker processes, not threads")
    args = parser.parse_args()
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=args.processes,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        map_once(client, args.tasks)  # warm up
        plain, traced, settle = [], [], []
        events = violations = 0
        for i in range(args.runs):
            for side in ("plain", "traced") if i % 2 == 0 else ("traced", "plain"):
                if side == "plain":
                    plain.append(map_once(client, args.tasks))
                    continue
                tracer = attach(client)
                traced.append(map_once(client, args.tasks))
                start = time.perf_counter()
                violations = len(tracer.violations)  # merges what is buffered, runs the checks
                settle.append(time.perf_counter() - start)
                tracer.detach()
                events = len(tracer.trace)
        p, t = statistics.median(plain), statistics.median(traced)
        ratios = sorted(b / a for a, b in zip(plain, traced))
        kind = "processes" if args.processes else "threads"
        print(f"dask map of {args.tasks} tasks (2 workers, {kind}): untraced {p * 1e3:.0f} ms, "
              f"traced {t * 1e3:.0f} ms (medians of {args.runs}); overhead "
              f"{100 * (statistics.median(ratios) - 1):+.1f}% (median of {args.runs} per-pair "
              f"ratios, range {100 * (ratios[0] - 1):+.1f}% to {100 * (ratios[-1] - 1):+.1f}%; "
              f"target <= 5%); {events} events per traced run, {violations} violations")
        print(f"then tracer.violations (merge and checks of the buffered events): "
              f"{statistics.median(settle) * 1e3:.0f} ms median")
        unordered = statistics.median(scatter_latency(client, 200) for _ in range(3))
        with attach(client, ordered_scatter=True):
            ordered = statistics.median(scatter_latency(client, 200) for _ in range(3))
        print(f"scatter latency: {unordered * 1e3:.2f} ms plain, {ordered * 1e3:.2f} ms with "
              f"ordered_scatter (traced): +{(ordered - unordered) * 1e3:.2f} ms per scatter")


if __name__ == "__main__":
    main()
