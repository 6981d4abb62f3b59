"""How fast the explorer runs schedules, and how soon it finds race #8576.

* schedules per second on the 8576 scenario (scatter, drop, scatter, submit), legacy and fixed,
  in this process alone and with the random runs shared by one process per core (the default);
* time to the first failure under legacy (median of runs);
* the size of the bounded space under fixed: every order within bound 2, counted;
* what counting a random order drawn again costs: each of a search's draws followed down the
  memo of the orders already run, once every order is in it (µs a draw, best of ``--runs``;
  the memo's walk is what every share of a split search pays for every draw);
* the same scenario as a notebook cell that defines its own function (``%%explore``'s way: the
  function is made anew, pickled and tokenized again, in every run), against the module's
  function, schedules per second in this process alone;
* what a run costs besides its deliveries (a scenario that calls nothing), what of it is the
  cluster and its client made and disposed, and what a reset of the cluster between runs
  (issue 44's "reset instead of rebuild") could save of it at most (µs of CPU, best of
  ``--runs``).

Usage: ``python benchmarks/bench_explore.py [--runs N]``.
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import time

from jupyter_refs import explore, gcscope
from jupyter_refs.explore import cell_scenario, default_processes


def inc(v: int) -> int:
    return v + 1


def scatter_race(client) -> None:
    x = client.scatter(123)
    del x
    x = client.scatter(123)
    client.submit(inc, x)


#: The 8576 scenario as a notebook cell writes it, its function defined in the cell.
CELL = """
def inc(v):
    return v + 1
x = client.scatter(123)
del x
x = client.scatter(123)
client.submit(inc, x)
"""


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
    cell(args.runs, args.schedules)
    walk(args.runs, args.schedules * 4)
    own_cost(args.runs)
    result = explore(scatter_race, protocol="fixed", max_schedules=1_000_000, bound=2, sample=False)
    verdict = "no failure" if not result.failures else f"FAILURES: {result.summary()}"
    states = getattr(result, "states", 0)  # distinct states (not counted before issue 44)
    print(f"fixed: every order within bound 2 = {result.systematic} schedules "
          f"({result.pruned} pruned by sleep sets and states, {states:,} distinct states, "
          f"{states / result.elapsed:,.0f} states/s), exhausted in "
          f"{result.elapsed * 1e3:.0f} ms: {verdict}")


def cell(runs: int, schedules: int) -> None:
    """Schedules per second of :data:`CELL` as ``%%explore`` runs it (a notebook's namespace),
    alternating with the module's ``scatter_race``: the same search, the same failures."""
    scenarios = {"cell": cell_scenario(CELL, {"__name__": "__main__"}),
                 "function": scatter_race}
    rates: dict[str, list[float]] = {name: [] for name in scenarios}
    for _ in range(runs):
        for name, scenario in scenarios.items():
            result = explore(scenario, protocol="legacy", max_schedules=schedules, processes=1)
            rates[name].append(result.rate)
    print(f"legacy: the scenario as a notebook cell that defines its function (%%explore): "
          f"{statistics.median(rates['cell']):,.0f} schedules/s in 1 process, against "
          f"{statistics.median(rates['function']):,.0f} as a module's function (median of {runs} "
          f"runs of {schedules:,})")


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


def own_cost(runs: int, n: int = 2_000) -> None:
    """What a run costs besides its deliveries, and what a reset could save of it (issue 44's
    "reset instead of rebuild"): CPU µs a run, best of ``runs`` rounds of ``n``, of a #8576
    run (its in-order order) and of a scenario that calls nothing (the cluster made, its
    client, the drain, the verdict, the dispose); then the cluster made with its client and
    disposed, alone; then the parts a reset would make anew all the same — the scheduler's,
    the worker's and the client's states, the channels, the trace and the checks (any state
    a run left there would change the next) — alone.  A reset keeps only the difference."""
    from jupyter_refs import Cluster
    from jupyter_refs.checks import Checks, quiet_limit_for
    from jupyter_refs.network import Network
    from jupyter_refs.protocol.client import ClientState
    from jupyter_refs.protocol.scheduler import SchedulerState
    from jupyter_refs.protocol.variants import get_variant
    from jupyter_refs.protocol.worker import WorkerState
    from jupyter_refs.trace import Trace

    ex = importlib.import_module("jupyter_refs.explore")

    def nothing(client) -> None:
        pass

    def run_of(scenario):
        fp = ex.fingerprint(scenario)
        return lambda: ex._run(scenario, "legacy", 1, fp, [], strict=False).cluster.dispose()

    def cluster() -> None:
        made = Cluster(protocol="legacy", workers=1, network="manual", trace_capacity=100_000,
                       threads_per_worker=ex.THREADS_PER_WORKER)
        made.client()
        made.dispose()

    variant = get_variant("legacy")

    def parts() -> None:
        trace = Trace(100_000)
        Network()
        SchedulerState(variant, ["worker:0"], trace.record)
        WorkerState("worker:0", variant, trace.record, nthreads=ex.THREADS_PER_WORKER)
        ClientState("client:1", variant, trace.record)
        Checks(trace, quiet_limit=quiet_limit_for(100_000)).close()

    best = {}
    with gcscope.paused():
        for name, job in (("8576", run_of(scatter_race)), ("nothing", run_of(nothing)),
                          ("cluster", cluster), ("parts", parts)):
            times = []
            for _ in range(runs):
                start = time.process_time()
                for _ in range(n):
                    job()
                times.append(time.process_time() - start)
            best[name] = min(times) / n * 1e6
    print(f"legacy: a run's own cost (CPU, best of {runs} x {n:,}): {best['nothing']:.0f} µs a run "
          f"of a scenario that calls nothing, against {best['8576']:.0f} µs for #8576's "
          f"in-order run; of it, the cluster and its client made and disposed "
          f"{best['cluster']:.0f} µs, their states, channels, trace and checks alone "
          f"{best['parts']:.0f} µs: a reset would save at most {best['cluster'] - best['parts']:.0f}"
          f" µs a run ({(best['cluster'] - best['parts']) / best['8576']:.0%})")


if __name__ == "__main__":
    main()
