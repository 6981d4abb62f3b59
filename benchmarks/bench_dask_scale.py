"""Tracing a dask cluster at scale: what each event costs, from 10,000 tasks to a million.

For each size, a fresh ``LocalCluster(n_workers=4, processes=False, memory_limit=0)`` runs a
``client.map`` of a trivial function, untraced and traced, in pairs (each pair in the other
order than the one before).  A run is the map, the gather, the drop of the futures and the cluster
settling (the scheduler has forgotten every task), so the releases are part of it.  Nobody
watches the traced run live: its events wait in the tracer's buffers, and afterwards
``tracer.violations`` merges them into the trace and checks them.  Printed per size:

* ``run`` — the traced run's time over the untraced one's (median of the pairs' ratios; each
  pair's ratio is printed last, to show the swing);
* ``CPU`` — the same ratio of the CPU time the process spent in the runs (all its threads:
  the cluster is in-process).  It says how much work tracing adds, where the wall time also
  carries what the machine's neighbours took (steal: 13–17% of a core on a busy day here);
* ``GC`` — the seconds CPython's collector took during the runs, untraced and traced
  (medians): on a heap of millions of dask objects a full collection takes seconds, so a
  run's share of them moves its time by percents whoever caused them;
* ``whole`` — the traced run plus the merge and checks, over the untraced run: the whole
  cost of tracing;
* events (recorded, whether or not the trace still holds them), events/s of the traced
  run, µs per event of the merge and checks — all of it (``tracer.merge_seconds``, the
  merging thread's CPU time): what the background thread merged during the run (past
  ``max_events`` waiting events it merges even with nobody watching) and what
  ``tracer.violations`` merged after it;
* memory: this process's resident memory after the merge minus before the attach, per
  event, and the deep size of a retained event (each object counted once);
* ``--focus N``: a map of N tasks traced with ``attach(client, keys=[one key])`` — the
  scheduler and workers filter at the source — against the same map untraced.

Pairs come in even numbers by default, because every run on a cluster is slower than the
one before it, traced or not: each of dask's batched streams keeps its last 1,000 batches
(``BatchedSend.recent_message_log``), so a 20,000-task run leaves some 20,000 more message
dicts alive and every full collection walks them (0.31 s each on the first 53,000-task
run, 0.67 s on the third).  A single (untraced, traced) pair charges that drift to tracing;
two pairs in opposite orders cancel it.

Usage: ``python benchmarks/bench_dask_scale.py [--sizes 10000,100000] [--pairs 2]
[--focus 1000000]``.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
from typing import Any

from distributed import Client, LocalCluster

from jupyter_refs.dask import attach

_PAGE = os.sysconf("SC_PAGE_SIZE")
def inc(v: int) -> int:
    return v + 1


def rss() -> int:
    """This process's resident memory now, in bytes (``ru_maxrss`` only ever grows)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * _PAGE


def settled(dask_scheduler: Any) -> int:
    return len(dask_scheduler.tasks)


def run(client: Client, n: int) -> float:
    """Map, gather, drop, and wait until the scheduler has forgotten every task."""
    return timed(client, n)["run"]


class GCClock:
    """The seconds the collector has taken since this process started (``gc.callbacks``);
    and ``full_in_merge``: the CPU seconds of the full collections that ran inside the tracer's
    merge (in its background thread, or in this one under ``violations``).

    A full collection walks every object in the process — the dask cluster's heap, 0.6 to
    0.9 s on a 40,000-task map — and runs in whichever thread allocates when it falls due.
    The merge allocates most, so one lands in it on some runs and not on others: issue 44's
    40,000-task merge measured 2.91 µs per event on one run and 3.87 on the next, 1.12 of
    them one full collection.  ``tracer.merge_seconds`` counts it; this says how much.
    """

    def __init__(self) -> None:
        self.seconds = 0.0
        #: Full collections in the whole process (the benchmark's own ``gc.collect()`` ahead
        #: of each run among them), and their seconds: a merge that holds one back
        #: (``gcscope.scope(full=False)``) must not add any.
        self.full = 0
        self.full_seconds = 0.0
        self.full_in_merge = 0.0
        #: The tracer whose merges are timed (set by ``traced``): a full collection is the
        #: merge's when it runs inside ``merge_upto`` (the tracer's ``_busy`` flag, set in
        #: the merging thread for exactly the CPU time ``merge_seconds`` counts).
        self.tracer: Any = None
        self._began = 0.0
        self._cpu = 0.0
        gc.callbacks.append(self._tick)

    def _tick(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._began, self._cpu = time.perf_counter(), time.thread_time()
            return
        took = time.perf_counter() - self._began
        self.seconds += took
        if info["generation"] == 2:
            self.full += 1
            self.full_seconds += took
        tracer = self.tracer
        if info["generation"] == 2 and tracer is not None and getattr(tracer._busy, "on", False):
            self.full_in_merge += time.thread_time() - self._cpu


GC = GCClock()


def timed(client: Client, n: int) -> dict[str, float]:
    """:func:`run`'s wall time (``run``); the CPU time this process (every thread of the
    in-process cluster) spent in it (``cpu``), a figure the machine's neighbours barely move,
    where the wall time swings by several percent from one pair to the next; and the
    collector's share of it (``gc``).  It starts after a full collection: else the garbage of
    the run before (a detached tracer) is collected inside this one, traced or not."""
    gc.collect()
    start, cpu, collecting = time.perf_counter(), time.process_time(), GC.seconds
    futures = client.map(inc, range(n), pure=False)
    client.gather(futures)
    del futures
    while client.run_on_scheduler(settled):
        time.sleep(0.01)
    return {"run": time.perf_counter() - start, "cpu": time.process_time() - cpu,
            "gc": GC.seconds - collecting}


def traced(client: Client, n: int, on_trace: Any = None, **options: Any) -> dict[str, float]:
    """:func:`timed` under a fresh tracer, then ``tracer.violations`` timed (``merge``);
    ``on_trace(tracer)``, if given, runs after that (untimed here) and before the detach."""
    gc.collect()
    before = rss()
    tracer = attach(client, **options)
    full = GC.full_in_merge
    GC.tracer = tracer
    try:
        measured = timed(client, n)
        start = time.perf_counter()
        violations = tracer.violations
        merge = time.perf_counter() - start
        full = GC.full_in_merge - full
        if on_trace is not None:
            on_trace(tracer)
        trace = tracer.trace
        events = trace.next_seq + trace.lost
        kept = len(trace)
        return {**measured, "merge": merge, "merged": tracer.merge_seconds, "full": full,
                "events": events,
                "violations": len(violations), "rss": rss() - before,
                "deep": trace.retained_bytes() / max(1, kept), "kept": kept,
                "dropped": trace.dropped, "lost": trace.lost}
    finally:
        GC.tracer = None
        tracer.detach()


def measure(n: int, pairs: int, workers: int, **options: Any) -> dict[str, Any]:
    # memory_limit=0: in-process workers share one process, and each would compare the whole
    # process's memory (the scheduler's and client's state for a million tasks: 6.3 GB) with
    # its own quarter of the machine, pause, and the map would never finish.
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=False,
                      memory_limit=0, dashboard_address=":0") as cluster, Client(cluster) as client:
        run(client, min(n, 2_000))  # warm up
        plain: list[dict[str, float]] = []
        runs: list[dict[str, float]] = []
        for i in range(pairs):
            for side in ("plain", "traced") if i % 2 == 0 else ("traced", "plain"):
                done = plain if side == "plain" else runs
                done.append(timed(client, n) if done is plain else traced(client, n, **options))
                # A million-task pair takes over half an hour: say how far it got.
                print(f"  … {n:,} tasks, pair {i + 1}/{pairs}, {side}: {done[-1]['run']:.1f} s",
                      file=sys.stderr, flush=True)
        return {"plain": plain, "runs": runs}


def median_ratio(runs: list[dict[str, float]], plain: list[dict[str, float]],
                 field: str = "run", extra: str | None = None) -> float:
    """The median over the pairs of the traced run's ``field`` (plus its ``extra``) over the
    untraced run's ``field``."""
    return statistics.median((r[field] + (r[extra] if extra else 0)) / p[field]
                             for r, p in zip(runs, plain))


def report(n: int, m: dict[str, Any], label: str = "") -> dict[str, float]:
    plain, runs = m["plain"], m["runs"]
    run_ratio = median_ratio(runs, plain)
    cpu_ratio = median_ratio(runs, plain, "cpu")
    whole = median_ratio(runs, plain, extra="merge")
    last = runs[-1]
    swing = ", ".join(f"{r['run'] / p['run'] - 1:+.1%}" for r, p in zip(runs, plain))
    # All the merging and checking, in the background during the run and after it.
    per_event = statistics.median(r["merged"] / r["events"] * 1e6 for r in runs)
    def median(side: list[dict[str, float]], field: str) -> float:
        return statistics.median(r[field] for r in side)

    print(f"{n:>9,} tasks{label}: untraced {median(plain, 'run'):7.2f} s | traced run "
          f"{run_ratio - 1:+6.1%} (CPU {cpu_ratio - 1:+5.1%}) | GC {median(plain, 'gc'):.1f} / "
          f"{median(runs, 'gc'):.1f} s | whole {whole - 1:+6.1%} | "
          f"{last['events']:>10,.0f} events, "
          f"{last['events'] / last['run']:>8,.0f} events/s, merge+checks {last['merged']:6.2f} s "
          f"({last['merge']:5.2f} s after the run) = {per_event:5.2f} µs/event | RSS "
          f"+{last['rss'] / 2**20:6.0f} MB "
          f"({last['rss'] / max(1, last['kept']):4.0f} B per kept event), deep "
          f"{last['deep']:3.0f} B/event | kept {last['kept']:,.0f}, dropped "
          f"{last['dropped']:,.0f}, lost {last['lost']:,.0f} | violations "
          f"{last['violations']:.0f} | traced run per pair {swing}", flush=True)
    return {"per_event": per_event, "whole": whole, "events": last["events"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000",
                        help="comma-separated task counts (traced in full)")
    parser.add_argument("--pairs", type=int, default=2,
                        help="(untraced, traced) pairs per size, in alternating orders")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--max-events", type=int, default=2_000_000,
                        help="the traced runs' attach(max_events=…)")
    parser.add_argument("--focus", type=int, default=0,
                        help="also a map of this many tasks traced on one key only")
    parser.add_argument("--focus-pairs", type=int, default=2,
                        help="pairs of the focused map, in alternating orders")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    print(f"dask {__import__('distributed').__version__}, LocalCluster(n_workers={args.workers}, "
          f"threads_per_worker=1, processes=False, memory_limit=0), {args.pairs} pair(s) per "
          "size", flush=True)
    figures = [report(n, measure(n, args.pairs, args.workers, max_events=args.max_events))
               for n in sizes]
    if len(figures) > 1:
        lo, hi = figures[0], figures[-1]
        print(f"per-event cost from {lo['events']:,.0f} to {hi['events']:,.0f} events: "
              f"{hi['per_event'] / lo['per_event']:.2f}x", flush=True)
    if args.focus:
        n = args.focus
        # A key of the map that is also its middle task: dask names map keys inc-<token>-<i>
        # only once submitted, so the focus is a pattern on the index.
        m = measure(n, args.focus_pairs, args.workers, keys=f"inc-*-{n // 2}")
        report(n, m, label=" (one key)")


if __name__ == "__main__":
    main()
