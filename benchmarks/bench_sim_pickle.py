"""What pickling the simulator's messages (as over TCP) costs the explorer on real dask.

``SimCluster(pickled=True)`` (the default) serializes each write and deserializes it on
delivery; ``pickled=False`` hands the objects across as dask's in-process comms do.  Runs
``explore_dask`` on the zoo's #8576 scenario with each, alternating so both see the same load,
and prints the median schedules per second of each and their ratio.

Usage: ``python benchmarks/bench_sim_pickle.py [--runs N] [--schedules N]``.
"""

from __future__ import annotations

import argparse
import statistics
import time

from jupyter_refs import zoo
from jupyter_refs.dask import sim
from jupyter_refs.dask.explore import explore_dask


def rate(pickled: bool, schedules: int) -> float:
    made = sim.SimCluster.__init__

    def init(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003 - as SimCluster's
        made(self, *args, **{**kwargs, "pickled": pickled})

    sim.SimCluster.__init__ = init
    try:
        start = time.perf_counter()
        result = explore_dask(zoo.scatter_drop_scatter, max_schedules=schedules, sample=False)
        return result.schedules / (time.perf_counter() - start)
    finally:
        sim.SimCluster.__init__ = made


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--schedules", type=int, default=80)
    args = parser.parse_args()
    rates: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(args.runs):
        for pickled in rates:
            rates[pickled].append(rate(pickled, args.schedules))
    pickled, inproc = (statistics.median(rates[k]) for k in (True, False))
    print(f"pickled {pickled:.1f} schedules/s, in-process objects {inproc:.1f} schedules/s "
          f"(median of {args.runs}): pickling costs {100 * (1 - pickled / inproc):.0f}%")


if __name__ == "__main__":
    main()
