"""What tracing a real dask cluster costs, and what the ordered-scatter workaround costs.

* a 5,000-task ``client.map`` of a trivial function, untraced and traced, in pairs on one
  ``LocalCluster`` (each pair in the other order than the one before, so that a drift in the
  machine's load weighs on both sides); the figure is the median of the per-pair ratios,
  which a load spike spoils one pair at a time rather than both medians at once;
* what the tracer leaves for later: the time ``tracer.violations`` then takes to bring the
  buffered events into the trace and check them (nobody watched live during the map);
* the latency of ``client.scatter`` with and without ``ordered_scatter``.

Usage: ``python benchmarks/bench_dask.py [--runs N] [--processes] [--fresh]`` (``--fresh``: each
pair on a cluster of its own, as a user attaches to a new cluster).
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


def cluster(processes: bool) -> LocalCluster:
    return LocalCluster(n_workers=2, threads_per_worker=1, processes=processes,
                        dashboard_address=":0")


def pair(client: Client, tasks: int, traced_first: bool, out: dict[str, list]) -> None:
    """One untraced and one traced map on ``client``, in the order given."""
    for side in ("traced", "plain") if traced_first else ("plain", "traced"):
        if side == "plain":
            out["plain"].append(map_once(client, tasks))
            continue
        tracer = attach(client)
        out["traced"].append(map_once(client, tasks))
        start = time.perf_counter()
        out["violations"] = len(tracer.violations)  # merges what is buffered, runs the checks
        out["settle"].append(time.perf_counter() - start)
        tracer.detach()
        out["events"] = len(tracer.trace)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9, help="pairs (untraced, traced)")
    parser.add_argument("--tasks", type=int, default=5_000)
    parser.add_argument("--processes", action="store_true", help="worker processes, not threads")
    parser.add_argument("--fresh", action="store_true",
                        help="each pair on a LocalCluster of its own (and no scatter figures)")
    args = parser.parse_args()
    out: dict[str, list] = {"plain": [], "traced": [], "settle": []}
    if args.fresh:
        for i in range(args.runs):
            with cluster(args.processes) as c, Client(c) as client:
                map_once(client, args.tasks)  # warm up
                pair(client, args.tasks, i % 2 == 1, out)
    with cluster(args.processes) as c, Client(c) as client:
        if not args.fresh:
            map_once(client, args.tasks)  # warm up
            for i in range(args.runs):
                pair(client, args.tasks, i % 2 == 1, out)
        plain, traced, settle = out["plain"], out["traced"], out["settle"]
        p, t = statistics.median(plain), statistics.median(traced)
        ratios = sorted(b / a for a, b in zip(plain, traced))
        kind = "processes" if args.processes else "threads"
        where = "each pair on a fresh cluster" if args.fresh else "one cluster"
        print(f"dask map of {args.tasks} tasks (2 workers, {kind}, {where}): untraced "
              f"{p * 1e3:.0f} ms, traced {t * 1e3:.0f} ms (medians of {args.runs}); overhead "
              f"{100 * (statistics.median(ratios) - 1):+.1f}% (median of {args.runs} per-pair "
              f"ratios, range {100 * (ratios[0] - 1):+.1f}% to {100 * (ratios[-1] - 1):+.1f}%; "
              f"target <= 5%); {out['events']} events per traced run, {out['violations']} "
              "violations")
        print(f"then tracer.violations (merge and checks of the buffered events): "
              f"{statistics.median(settle) * 1e3:.0f} ms median")
        unordered = statistics.median(scatter_latency(client, 200) for _ in range(3))
        with attach(client, ordered_scatter=True):
            ordered = statistics.median(scatter_latency(client, 200) for _ in range(3))
        print(f"scatter latency: {unordered * 1e3:.2f} ms plain, {ordered * 1e3:.2f} ms with "
              f"ordered_scatter (traced): +{(ordered - unordered) * 1e3:.2f} ms per scatter")


if __name__ == "__main__":
    main()
