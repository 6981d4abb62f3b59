"""The saved trace: what a timeline output's bundle costs to build, and how big it is.

    python benchmarks/bench_saved.py [--runs 5]

For traces of about 3,000, 30,000 and 300,000 events (a ``map`` on the kernel-side
cluster, with the scatter race's violation at the end), the time to build the
bundle (``trace_bundle``, bounded to 3,000 events; median of ``--runs``) and its
JSON size.  The kernel builds one per shown timeline when it is displayed, and
again every 2 s while a live timeline's figure moves on.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from jupyter_refs import Cluster
from jupyter_refs.views.saved import trace_bundle


def trace_of(n_events: int) -> Cluster:
    cluster = Cluster(network="immediate", trace_capacity=2 * n_events)
    client = cluster.client()
    client.gather(client.map(abs, range(n_events // 14)))  # a map task costs about 14 events
    return cluster


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    for n in (3_000, 30_000, 300_000):
        trace = trace_of(n).trace
        times = []
        for _ in range(args.runs):
            start = time.perf_counter()
            bundle = trace_bundle(trace)
            times.append(time.perf_counter() - start)
        size = len(json.dumps(bundle))
        w = bundle["window"]
        print(f"saved: trace of {len(trace):>7,} events -> bundle of {w['next'] - w['first']:,} events "
              f"in {statistics.median(times) * 1e3:6.1f} ms (median of {args.runs}), "
              f"{size / 1e3:6.0f} KB JSON ({size / (w['next'] - w['first']):.0f} B/event)")


if __name__ == "__main__":
    main()
