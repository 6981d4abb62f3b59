"""The explorer on a dask cluster: ``explore(..., client=c)`` against one process, side by side.

A ``LocalCluster`` of ``--workers`` worker processes (one thread each) takes the random runs of
the #8576 scenario (scatter, drop, scatter, submit) in equal shares; the same search in this
process alone (``processes=1``) is timed alternately with it, so both see the same machine load.
Prints schedules per second for each, the ratio (target >= 1.7 with 2 workers), and whether the
two found the same failure groups.

Between those runs, the machine's room for two processes: the one-process search forked once
alone, then twice side by side, so that both see the load the searches saw; the ratio (twice
the work over the pair's time, against one's) is the most any split of this very work over
two processes gets from the machine at that moment (its virtual cores share their host; a
tight busy loop gets less of them than the search does, so it would understate the room:
docs/benchmarks.md), and the explorer's ratio is printed as a part of it.

Then the random runs of a long scenario, the zoo's ``--race`` (#5379: an in-order run of 26
decisions, few orders drawn twice, each run ~1.6 ms), ``--long`` of them with no systematic
search (``bound=0``), in one process and on the cluster, alternating: how evenly the shares
split a scenario whose work lies in a few of its first picks' prefixes (``sampling.Owners``).

Then the systematic search, whose last pass goes to the cluster's workers (a task per worker
thread) as ``processes`` deals it to forked helpers: the zoo's ``--race`` (#5379: its bound 2
is 1,262 runs in one process, all but 85 in the last pass) exhausted at ``--bound``, without
random runs, in one process, with forked helpers (``processes=--workers``) and on the
cluster, alternating; seconds (medians) and the ratios to one process, and whether the
cluster's search counted exactly what the forked one did (schedules, states, groups and
counts).  ``--race ""`` skips it.

Usage: ``python benchmarks/bench_explore_dask.py [--runs N] [--schedules N] [--workers N]
[--race 5379] [--long 4000] [--bound 2]``.
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import sys
import time
from collections.abc import Callable
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
    parser.add_argument("--race", default="5379")
    parser.add_argument("--long", type=int, default=4_000)
    parser.add_argument("--bound", type=int, default=2)
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
        local, remote, rooms, same = [], [], [], True
        for _ in range(args.runs):
            one = explore(scatter_race, protocol=args.protocol, max_schedules=args.schedules,
                          processes=1)
            on = explore(scatter_race, protocol=args.protocol, max_schedules=args.schedules,
                         client=client)
            local.append(one.rate)
            remote.append(on.rate)
            rooms.append(room(functools.partial(explore, scatter_race, protocol=args.protocol,
                                                max_schedules=args.schedules, processes=1),
                              args.workers))
            same &= {_group(f.run) for f in one.failures} == {_group(f.run) for f in on.failures}
        a, b = statistics.median(local), statistics.median(remote)
        ratio, most = b / a, statistics.median(rooms)
        print(f"{args.protocol}: one process {a:,.0f} schedules/s; on a LocalCluster of "
              f"{args.workers} worker processes {b:,.0f} schedules/s: {ratio:.2f}x "
              f"(median of {args.runs} runs of {args.schedules:,}; target >= 1.7x with 2)")
        print(f"the machine's room: the one-process search, {args.workers} side by side (forked), "
              f"did {most:.2f}x the work of one alone in its time (median; {min(rooms):.2f}-"
              f"{max(rooms):.2f}x between the runs): the cluster's {ratio:.2f}x is {ratio / most:.0%}"
              f" of it")
        print(f"the same failure groups found both ways in every run: {same}")
        if args.race:
            if args.long:
                long_random(client, args)
            systematic(client, args)


def room(work: Callable[[], object], processes: int) -> float:
    """The work ``processes`` copies of ``work`` side by side do, over one copy's alone in the
    same time: ``processes`` on as many idle cores, less when the cores are shared.  Every copy
    forked, the lone one too, so all start alike (left by ``os._exit``: nothing of this
    process, its cluster's threads, runs on there)."""

    def forked(copies: int) -> float:
        start = time.perf_counter()
        children = []
        for _ in range(copies):
            pid = os.fork()
            if pid == 0:
                try:
                    work()
                finally:
                    os._exit(0)
            children.append(pid)
        for pid in children:
            os.waitpid(pid, 0)
        return time.perf_counter() - start

    return processes * forked(1) / forked(processes)


def long_random(client, args: argparse.Namespace) -> None:
    """The zoo race's random runs alone (no systematic search) in one process and on the
    cluster, alternating: medians, the ratio, and whether both found the same failure groups
    with the same counts."""
    from jupyter_refs.explore import _group
    from jupyter_refs.zoo import RACES

    race = RACES[args.race]
    race.find(bound=0, max_schedules=200, client=client)  # warm
    seconds: dict[str, list[float]] = {"one": [], "cluster": []}
    same = True
    for _ in range(args.runs):
        found = []
        for name, how in (("one", dict(processes=1)), ("cluster", dict(client=client))):
            start = time.perf_counter()
            result = race.find(bound=0, max_schedules=args.long, **how)
            seconds[name].append(time.perf_counter() - start)
            found.append(sorted((_group(f.run), f.count) for f in result.failures))
        same &= found[0] == found[1]
    one, there = statistics.median(seconds["one"]), statistics.median(seconds["cluster"])
    print(f"#{args.race}'s random runs ({args.long:,}, no systematic search), median of "
          f"{args.runs}: one process {one:.2f} s; the cluster {there:.2f} s ({one / there:.2f}x)")
    print(f"the same failure groups and counts both ways in every run: {same}")


def systematic(client, args: argparse.Namespace) -> None:
    """The zoo race's bounded search in one process, with forked helpers and on the cluster,
    alternating: medians, ratios, and whether the cluster's counts are the forked ones."""
    from jupyter_refs.explore import _group
    from jupyter_refs.zoo import RACES

    race = RACES[args.race]
    ways = {"one process": dict(processes=1), f"{args.workers} forked": dict(processes=args.workers),
            "the cluster": dict(client=client)}
    race.find(bound=args.bound, sample=False, client=client)  # warm
    seconds: dict[str, list[float]] = {name: [] for name in ways}
    found: dict[str, tuple] = {}
    for _ in range(args.runs):
        for name, how in ways.items():
            start = time.perf_counter()
            result = race.find(bound=args.bound, sample=False, **how)
            seconds[name].append(time.perf_counter() - start)
            found[name] = (result.schedules, result.states, result.revisited,
                           sorted((_group(f.run), f.count) for f in result.failures))
    one = statistics.median(seconds["one process"])
    print(f"#{args.race} at bound {args.bound}, exhausted (no random runs), median of {args.runs}: "
          + "; ".join(f"{name} {statistics.median(s):.2f} s ({one / statistics.median(s):.2f}x)"
                      for name, s in seconds.items()))
    forked, there = found[f"{args.workers} forked"], found["the cluster"]
    print(f"the cluster's search counted what the forked one did (schedules {there[0]:,}, "
          f"states {there[1]:,}, groups and counts): {there == forked}")


if __name__ == "__main__":
    main()
