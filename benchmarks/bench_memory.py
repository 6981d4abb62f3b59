"""What a long traced session holds in memory: RSS over a loop that runs far past the cap.

The promise: with ``attach(client, max_events=N)`` (or ``Cluster(..., trace_capacity=N)``)
the process holds at most N × 300 B more than it would untraced, plus a fixed overhead,
however long the session runs.  Each run below is a process of its own (RSS is the whole
process's), sampled after every iteration of the loop from issue 47:

* **real dask**: ``client.gather(client.map(inc, range(tasks), pure=False))`` on
  ``LocalCluster(processes=False, n_workers=2, threads_per_worker=1)``, untraced, then traced
  with ``max_events`` = N and with a small N (whose overhead stands for the fixed part);
  nobody calls ``sync()``: what an unwatched session buffers is part of the cost;
* **the model**: ``scatter`` / ``submit`` / ``gather`` / ``del`` on
  ``Cluster(protocol="dask", network="live")`` with ``trace_capacity`` = N and a small one
  (the model has no untraced mode: the small trace is the baseline).

For each it prints the plateau (the median over the last third of the iterations, of the
traced run's RSS minus the baseline's at the same iteration), the growth over that last
third in MB per minute (traced and baseline: equal when only the baseline's own growth is
left), and the bytes per event of N: (plateau at N − plateau at the small N) / (N − small N),
which the promise holds at ≤ 300.

Usage: ``python benchmarks/bench_memory.py [--events 50000] [--small 5000] [--iterations 30]
[--tasks 2000] [--model-iterations 8000] [--only dask|model]``.  The runs import the
``jupyter_refs`` next to this script (its parent directory goes first on ``PYTHONPATH``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

MB = 1e6


def rss_mb() -> float:
    """This process's resident set, from /proc (Linux)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / MB


def inc(v: int) -> int:
    return v + 1


# -- one run, in a child process ------------------------------------------------------------


def run_dask(events: int, iterations: int, tasks: int) -> list[tuple[float, float]]:
    """(seconds, RSS in MB) after each iteration; ``events`` 0: untraced."""
    from distributed import Client, LocalCluster

    samples = []
    with LocalCluster(processes=False, n_workers=2, threads_per_worker=1,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        tracer = None
        if events:
            from jupyter_refs.dask import attach

            tracer = attach(client, max_events=events)
        start = time.perf_counter()
        for _ in range(iterations):
            client.gather(client.map(inc, range(tasks), pure=False))
            samples.append((time.perf_counter() - start, rss_mb()))
        if tracer is not None:
            tracer.detach()
    return samples


def run_model(events: int, iterations: int) -> list[tuple[float, float]]:
    """(seconds, RSS in MB) after every 1/100th of the iterations."""
    from jupyter_refs import Cluster

    samples = []
    every = max(1, iterations // 100)
    with Cluster(protocol="dask", workers=2, network="live", trace_capacity=events) as cluster:
        client = cluster.client()
        start = time.perf_counter()
        for i in range(iterations):
            x = client.scatter(i)
            y = client.submit(inc, x, pure=False)
            client.gather(y)
            del x, y
            if i % every == every - 1:
                samples.append((time.perf_counter() - start, rss_mb()))
    return samples


def child(argv: list[str]) -> None:
    side, events, iterations, tasks = argv[0], int(argv[1]), int(argv[2]), int(argv[3])
    samples = (run_dask(events, iterations, tasks) if side == "dask"
               else run_model(events, iterations))
    print(json.dumps(samples))


def spawn(side: str, events: int, iterations: int, tasks: int) -> list[tuple[float, float]]:
    """One run in a fresh process, with this checkout's ``jupyter_refs`` first on the path."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    out = subprocess.run([sys.executable, __file__, "--child", side, str(events),
                          str(iterations), str(tasks)], env=env, check=True,
                         capture_output=True, text=True).stdout
    return [tuple(s) for s in json.loads(out.strip().splitlines()[-1])]


# -- figures ---------------------------------------------------------------------------------


def last_third(samples: list) -> list:
    return samples[len(samples) - len(samples) // 3:]


def plateau(traced: list, base: list) -> float:
    """Median over the last third of the iterations of traced minus baseline RSS (MB)."""
    n = min(len(traced), len(base))
    return statistics.median(t[1] - b[1] for t, b in last_third(list(zip(traced[:n], base[:n]))))


def growth(samples: list) -> float:
    """MB per minute over the last third (least squares)."""
    tail = last_third(samples)
    xs, ys = [s[0] for s in tail], [s[1] for s in tail]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    return 60 * sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0


def report(name: str, base_name: str, base: list, runs: dict[int, list], small: int,
           events: int, unit: str) -> None:
    print(f"\n{name}: RSS at the start / end, growth over the last third")
    print(f"  {base_name:<26} {base[0][1]:7.1f} / {base[-1][1]:7.1f} MB  "
          f"{growth(base):+6.2f} MB/min  ({len(base)} {unit}, {base[-1][0]:.0f} s)")
    for n, samples in runs.items():
        print(f"  N = {n:<22,} {samples[0][1]:7.1f} / {samples[-1][1]:7.1f} MB  "
              f"{growth(samples):+6.2f} MB/min  ({len(samples)} {unit}, {samples[-1][0]:.0f} s)"
              f"; plateau above the baseline {plateau(samples, base):6.1f} MB")
    over_small, over_n = plateau(runs[small], base), plateau(runs[events], base)
    per_event = (over_n - over_small) * MB / (events - small)
    bound = over_small + (events - small) * 300 / MB
    print(f"  per event of N: {per_event:.0f} B (promise ≤ 300 B); plateau at N = {events:,}: "
          f"{over_n:.1f} MB, bound {bound:.1f} MB (the small N's {over_small:.1f} MB as the "
          f"fixed part, + {events - small:,} × 300 B)")


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=50_000, help="max_events (N)")
    parser.add_argument("--small", type=int, default=5_000, help="a small N: the fixed part")
    parser.add_argument("--iterations", type=int, default=30, help="maps (dask)")
    parser.add_argument("--tasks", type=int, default=2_000, help="tasks per map (dask)")
    parser.add_argument("--model-iterations", type=int, default=8_000,
                        help="scatter/submit/gather/del rounds (model)")
    parser.add_argument("--only", choices=("dask", "model"))
    args = parser.parse_args()
    if args.only != "model":
        base = spawn("dask", 0, args.iterations, args.tasks)
        runs = {n: spawn("dask", n, args.iterations, args.tasks)
                for n in (args.events, args.small)}
        report(f"real dask, {args.iterations} maps of {args.tasks:,} tasks", "untraced", base,
               runs, args.small, args.events, "maps")
    if args.only != "dask":
        floor = 1_000
        base = spawn("model", floor, args.model_iterations, 0)
        runs = {n: spawn("model", n, args.model_iterations, 0) for n in (args.events, args.small)}
        report(f"the model (live), {args.model_iterations:,} scatter/submit/gather/del rounds",
               f"trace_capacity {floor:,}", base, runs, args.small, args.events, "samples")


if __name__ == "__main__":
    main()
