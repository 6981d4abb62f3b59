"""Tracing real dask as a user's script does: one cluster, reused, traced for a while.

``bench_dask_scale.py`` gives every size a fresh cluster.  A user does not: the notebook's
``LocalCluster(n_workers=2, processes=False)`` runs a small map, then a big one, and the
tracer is attached to a cluster whose heap and history have grown.  Issue 44 measured the
merge there at 16.0 µs per event and ×2.03 from 4,000 to 40,000 tasks, against 3.59 µs and
×1.21 in the benchmark.  The cause was the checks' queue of quiet keys (a dict used as a
FIFO: finding its oldest key walked the slots of every key taken before it), which only a
trace of more than ``max_events / 50`` forgotten keys reaches — 40,000 tasks do, 4,000 do not.

For each size, on the one cluster: (untraced, traced) pairs in alternating orders, each run
the map, the gather, the drop and the cluster settling (both sides pay dask's own release
work); then ``tracer.violations``, timed, as the user calls it.  Printed per size: the traced
run over the untraced (median of the pairs), the whole cost (traced run plus
``tracer.violations``) over the untraced run, and the merge and checks per event
(``tracer.merge_seconds``: the merging thread's CPU time, in the background during the run and
in ``violations`` after it), and the same less the full collections that ran in the merging
thread (each traced run's seconds of them listed: see ``bench_dask_scale.GCClock``); last, the
per-event merge's growth from the first size to the last, with and without them, and the full
collections of the whole process (the benchmark's own ahead of each run among them).
Then what the user's next looks cost on that trace, once merged: ``%refs`` (the refs table
and its display bundle: widget, text, HTML) and ``%timeline`` (the timeline built from the
whole trace and its display bundle: widget, saved trace, SVG picture), one line each, medians
over the pairs.  Each untraced run starts after a full collection, as ``traced`` does.

Usage: ``python benchmarks/bench_dask_user.py [--sizes 4000,40000] [--pairs 2]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Any

from bench_dask_scale import GC, timed, traced
from distributed import Client, LocalCluster

from jupyter_refs.views.refs import RefsTable
from jupyter_refs.views.timeline import Timeline


def looks(tracer: Any) -> dict[str, float]:
    """Seconds of ``%refs`` and ``%timeline`` on the merged trace: each view built and its
    display bundle made, as ``display()`` in a notebook makes it (not live: no pump thread)."""
    seconds = {}
    for name, view in (("refs", RefsTable), ("timeline", Timeline)):
        start = time.perf_counter()
        shown = view(tracer, live=False)
        shown._repr_mimebundle_()
        seconds[name] = time.perf_counter() - start
        shown.close()
    return seconds


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="4000,40000")
    parser.add_argument("--pairs", type=int, default=2)
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    per_event: list[float] = []
    own_per_event: list[float] = []  # the same, less the full collections it ran (see GCClock)
    with LocalCluster(n_workers=2, processes=False, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        timed(client, 1_000)  # warm up
        for n in sizes:
            plain, runs, seen = [], [], []
            for i in range(args.pairs):
                for side in ("plain", "traced") if i % 2 == 0 else ("traced", "plain"):
                    if side == "plain":
                        plain.append(timed(client, n))  # after a full collection, as traced
                    else:
                        runs.append(traced(client, n, on_trace=lambda t, seen=seen: seen.append(looks(t))))
            run = statistics.median(t["run"] / p["run"] for p, t in zip(plain, runs))
            whole = statistics.median((t["run"] + t["merge"]) / p["run"]
                                      for p, t in zip(plain, runs))
            merge = statistics.median(t["merged"] / t["events"] * 1e6 for t in runs)
            own = statistics.median((t["merged"] - t["full"]) / t["events"] * 1e6 for t in runs)
            full = ", ".join(f"{t['full']:.2f}" for t in runs)
            wall = statistics.median(t["merge"] for t in runs)
            per_event.append(merge)
            own_per_event.append(own)
            print(f"{n:>7,} tasks  untraced {statistics.median(p['run'] for p in plain):6.2f} s  "
                  f"run {run - 1:+.1%}  whole {whole - 1:+.1%}  merge and checks "
                  f"{merge:.2f} µs/event ({own:.2f} without the full collections that ran in "
                  f"it: {full} s)  violations {wall:.2f} s  "
                  f"{runs[0]['events']:,} events  {runs[0]['violations']} violations",
                  flush=True)
            for name in ("refs", "timeline"):
                took = statistics.median(s[name] for s in seen)
                print(f"{n:>7,} tasks  %{name} on the merged trace {took:.2f} s "
                      f"({took / statistics.median(p['run'] for p in plain):.1%} of the untraced run)",
                      flush=True)
    print(f"the whole process: {GC.full} full collections, {GC.full_seconds:.1f} s of them; "
          f"the collector {GC.seconds:.1f} s in all")
    if len(per_event) > 1:
        print(f"merge per event, {sizes[0]:,} → {sizes[-1]:,} tasks: "
              f"×{per_event[-1] / per_event[0]:.2f} (target ≤ ×1.3); without the full "
              f"collections that ran in it ×{own_per_event[-1] / own_per_event[0]:.2f}")


if __name__ == "__main__":
    sys.exit(main())
