"""The race zoo: how soon each race is found under the release it affects, and that it is absent
under its fix.

For each race of ``jupyter_refs.zoo``: the schedules and milliseconds to its first failure under
its release (``first=True``, one process; median of ``--runs``), then a search of ``--schedules``
under each protocol that models its fix, with the failures of the race found there (0 expected;
under ``fixed``, failures of any kind are counted too).

Then every order within bound 2 under each race's release (``sample=False``), in one process:
schedules, distinct states, seconds and CPU seconds, failure groups; and with the default
``processes`` (one per core: a large last pass is shared with forked helpers), seconds.

Usage: ``python benchmarks/bench_zoo.py [--runs N] [--schedules N] [--race NAME ...]``.
"""

from __future__ import annotations

import argparse
import statistics
import time

from jupyter_refs.explore import default_processes
from jupyter_refs.zoo import RACES


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--schedules", type=int, default=50_000)
    parser.add_argument("--race", action="append", choices=sorted(RACES),
                        help="only this race (again for more); default: the whole zoo")
    args = parser.parse_args()
    print(f"{'race':17} {'found under':15} {'schedules':>9} {'ms':>8}   absent under (schedules)")
    medians = []
    for race in (RACES[name] for name in args.race or RACES):
        times, schedules = [], 0
        for _ in range(args.runs):
            start = time.perf_counter()
            result = race.find(first=True, processes=1)
            times.append(time.perf_counter() - start)
            schedules = result.schedules
            assert race.failures(result), f"{race.name} not found under {race.found_under}"
        medians.append(statistics.median(times))
        absent = []
        for protocol in race.absent_under:
            clean = race.find(protocol, max_schedules=args.schedules)
            other = (f", {len(clean.failures)} failure(s) of any kind"
                     if protocol == "fixed" else "")
            absent.append(f"{protocol}: {len(race.failures(clean))} found in {clean.schedules:,}"
                          f"{other} ({clean.rate:,.0f}/s)")
        print(f"{race.name:17} {race.found_under:15} {schedules:9,} {medians[-1] * 1000:8.1f}   "
              + "; ".join(absent), flush=True)
    print(f"median of the zoo: {statistics.median(medians) * 1000:.1f} ms to the first failure "
          "(target <= 2 s, one process)")
    # Every order within bound 2 under the race's release, one process, no random runs.
    # Seconds, and CPU seconds beside them: on a loaded machine the wall clock runs ahead.
    for race in (RACES[name] for name in args.race or RACES):
        start, cpu = time.perf_counter(), time.process_time()
        result = race.find(bound=2, sample=False, max_schedules=1_000_000, processes=1)
        took, cpu = time.perf_counter() - start, time.process_time() - cpu
        print(f"{race.name:6} bound 2 under {race.found_under}: exhaustive={result.exhaustive} "
              f"in {result.systematic:,} schedules ({result.pruned:,} pruned, "
              f"{getattr(result, 'states', 0):,} distinct states), {took:.2f} s, "
              f"{cpu:.2f} s CPU (target <= 1 s): {len(result.failures)} failure groups", flush=True)
        processes = default_processes()
        if processes > 1:
            start = time.perf_counter()
            shared = race.find(bound=2, sample=False, max_schedules=1_000_000)
            took = time.perf_counter() - start
            print(f"{'':6} the same with {processes} processes: exhaustive={shared.exhaustive} in "
                  f"{shared.systematic:,} schedules ({getattr(shared, 'states', 0):,} distinct "
                  f"states), {took:.2f} s (target <= 1 s): {len(shared.failures)} failure groups",
                  flush=True)


if __name__ == "__main__":
    main()
