"""Trace validation at size: how often the model's verdict is real dask's, order by order.

For the seed and zoo scenarios that run on the installed distributed (today's dask), explore
each on real dask (``explore_dask``: bound 2, then seeded random orders) and follow every
order on the model (``jupyter_refs.dask.validate``).  Prints, per scenario, the orders
compared, how many agree, how many the model followed message for message, and every
disagreement grouped by (dask's verdict, the model's, where the traces part).

Usage: ``python benchmarks/bench_validate.py [--schedules N]`` (N per scenario; 200 gives
about 2,500 orders in all, a few minutes).
"""

from __future__ import annotations

import argparse
import collections
import re

from jupyter_refs import zoo
from jupyter_refs.dask.validate import validate

#: The zoo's races, each run on today's dask (those fixed by now too), but 5379 and 8522: their
#: scenarios name the model's workers (``workers=["worker:0"]``, the retired worker's name).
SCENARIOS = tuple(race.scenario for name, race in zoo.RACES.items()
                  if name not in ("5379", "8522"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schedules", type=int, default=200)
    args = parser.parse_args()
    total = agreed = followed = 0
    groups: collections.Counter = collections.Counter()
    for scenario in SCENARIOS:
        result = validate(scenario, max_schedules=args.schedules)
        n = len(result.pairs)
        total, agreed, followed = total + n, agreed + result.agreed, followed + result.followed
        print(f"{result.scenario:32} {n:5} orders  {result.agreed:5} agree "
              f"({100 * result.agreed / max(n, 1):5.1f}%)  followed {result.followed:5}  "
              f"{result.seconds:5.1f} s")
        for p in result.disagreements:
            where = re.sub(r"\(its delivery \d+\)|#\d+ ", "", (p.parted or "followed").split(
                ";")[0])
            groups[(result.scenario, str(p.dask), str(p.model), where)] += 1
    print(f"{'all':32} {total:5} orders  {agreed:5} agree ({100 * agreed / max(total, 1):5.1f}%)"
          f"  followed {followed:5}")
    if groups:
        print("\ndisagreements (scenario: dask / model; where the traces part):")
        for (scenario, dask, model, where), n in groups.most_common():
            print(f"  {n:4} × {scenario}: dask {dask} / model {model}; {where}")


if __name__ == "__main__":
    main()
