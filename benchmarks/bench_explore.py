"""How fast the explorer runs schedules, and how soon it finds race #8576.

* schedules per second on the 8576 scenario (scatter, drop, scatter, submit), legacy and fixed,
  in this process alone and with the random runs shared by one process per core (the default);
* time to the first failure under legacy (median of runs);
* the size of the bounded space under fixed: every order within bound 2, counted;
* what counting a random order drawn again costs: each of a search's draws followed down the
  memo of the orders already run, once every order is in it (µs a draw, best of ``--runs``;
  the memo's walk is what every share of a split search pays for every draw).

Usage: ``python benchmarks/bench_explore.py [--runs N]``.
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import time

from jupyter_refs import explore, gcscope
from jupyter_refs.explore import default_processes


def inc(v: int) -> int:
    return v + 1


def scatter_race(client) -> None:
    x = client.scatter(123)
    del x
    x = client.scatter(123)
    client.submit(inc, x)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--schedules", type=int, default=5_000)
    args = parser.parse_args()
    procs = default_processes()
    for protocol in ("legacy", "fixed"):
        # Alternating, so both settings see the same machine load.
        rates: dict[int, list[float]] = {1: [], procs: []}
        distinct: dict[int, list[float]] = {1: [], procs: []}
        states = 0
        for _ in range(args.runs):
            for p in rates:
                result = explore(scatter_race, protocol=protocol, max_schedules=args.schedules,
                                 processes=p)
                rates[p].append(result.rate)
                distinct[p].append(result.distinct / result.elapsed)
                states = result.states
        for p, rs in rates.items():
            # A random order drawn again is counted, not run again: the orders actually run
            # per second are printed beside the schedules.
            print(f"{protocol}: {statistics.median(rs):,.0f} schedules/s with {p} process"
                  f"{'es' if p > 1 else ''}, {statistics.median(distinct[p]):,.0f} distinct "
                  f"orders run/s (median of {args.runs} runs of {args.schedules:,}, "
                  f"{states:,} distinct states in the systematic search before the random runs; "
                  "target >= 5,000 schedules/s in 1 process)")
    firsts, counts = [], []
    for _ in range(args.runs):
        start = time.perf_counter()
        result = explore(scatter_race, protocol="legacy", first=True)
        firsts.append(time.perf_counter() - start)
        counts.append(result.schedules)
    print(f"legacy: first 8576 failure after {statistics.median(firsts) * 1e3:.1f} ms median "
          f"({statistics.median(counts):g} schedules; target < 1 s)")
    walk(args.runs, args.schedules * 4)
    result = explore(scatter_race, protocol="fixed", max_schedules=1_000_000, bound=2, sample=False)
    verdict = "no failure" if not result.failures else f"FAILURES: {result.summary()}"
    states = getattr(result, "states", 0)  # distinct states (not counted before issue 44)
    print(f"fixed: every order within bound 2 = {result.systematic} schedules "
          f"({result.pruned} pruned by sleep sets and states, {states:,} distinct states, "
          f"{states / result.elapsed:,.0f} states/s), exhausted in "
          f"{result.elapsed * 1e3:.0f} ms: {verdict}")


def walk(runs: int, draws: int) -> None:
    """µs a draw to follow ``draws`` random #8576 orders (PCT, depth 3) down a share's memo,
    every one of them counted again (the share ran them all once first)."""
    ex = importlib.import_module("jupyter_refs.explore")
    fp = ex.fingerprint(scatter_race)
    tally = ex.Tally(draws, None)  # the in-order run, as explore() makes it, for the baseline
    ex._search(scatter_race, "legacy", 1, fp, 0, True, False, tally)
    share = ex._Share(scatter_race, "legacy", 1, fp, 0, tally.outcome, (), (3, len(tally.baseline.picks)))
    times = []
    with gcscope.paused():  # as explore() runs them
        share.summary(range(draws))
        for _ in range(runs):
            start = time.process_time()
            counted = share.summary(range(draws))
            times.append(time.process_time() - start)
    assert len(counted.draws) == draws and not counted.made  # every one counted again
    print(f"legacy: a random order drawn again, followed down the memo: "
          f"{min(times) / draws * 1e6:.1f} µs a draw (best of {runs}, {draws:,} draws)")


if __name__ == "__main__":
    main()
