"""Exploring real distributed: schedules per second, what is found, determinism, model vs dask.

    python benchmarks/bench_dask_explore.py [--bound 2] [--determinism 1000] [--seed 0]

Prints, for the race scenarios of the zoo (and #8576 as the user meets it, with a
``.result()``): the bounded search on real in-process distributed (schedules, seconds,
schedules/s, the failure groups), then the same schedule replayed twice for
``--determinism`` random schedules (every pair must be identical, event for event), then the
failure groups the model finds on the same scenario beside dask's.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from jupyter_refs import zoo  # noqa: E402
from jupyter_refs.dask import explore as dask_explore  # noqa: E402
from jupyter_refs.dask.sim import compare  # noqa: E402
from jupyter_refs.explore import explore as explore_model  # noqa: E402
from jupyter_refs.explore import fingerprint  # noqa: E402


def scatter_drop_scatter_len(client):
    """#8576 as the user meets it: the second scatter's future, used."""
    x = client.scatter(123)
    del x
    y = client.scatter(123)
    return client.submit(len, [y]).result()


SCENARIOS = {
    "8576 (zoo)": zoo.scatter_drop_scatter,
    "8576 + result": scatter_drop_scatter_len,
    "8215 (zoo)": zoo.cancel_then_same_key,
}


def groups(result) -> list[str]:
    out = []
    for f in result.failures:
        first = f.violations[0].explanation
        form = " [form A]" if "form A" in first else " [form B]" if "form B" in first else ""
        out.append(f"{'+'.join(f.names)}{form} ×{f.count}  {f.schedule}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bound", type=int, default=2)
    parser.add_argument("--determinism", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--determinism-only", action="store_true")
    args = parser.parse_args()

    print(f"real {dask_explore.protocol_label()}, bound {args.bound}, one worker, one client")
    for name, scenario in () if args.determinism_only else SCENARIOS.items():
        result = dask_explore.explore_dask(scenario, bound=args.bound, sample=False,
                                           max_schedules=100_000)
        print(f"\n{name}: {result.summary()}", flush=True)
        for line in groups(result):
            print(f"  {line}")
        model = explore_model(scenario, bound=args.bound, sample=False, max_schedules=3_000,
                              processes=1)
        print(f"  model ({model.protocol}): {model.schedules} schedules; in-order outcome "
              f"{model_outcome(model)}; groups:")
        for line in groups(model):
            print(f"    {line}")

    # determinism: random schedules, each replayed twice
    rng = random.Random(args.seed)
    names = list(SCENARIOS)
    start = time.perf_counter()
    pairs = events = 0
    for i in range(args.determinism):
        scenario = SCENARIOS[names[i % len(names)]]
        run = dask_explore._run(scenario, 1, fingerprint(scenario), [], strict=False,
                                rng=random.Random(rng.getrandbits(32)), judge=False)
        again = dask_explore.replay_dask(scenario, run.schedule)
        compare(run.sim_trace, again.sim_trace)  # raises DivergenceError on the first difference
        pairs += 1
        events += len(run.sim_trace)
    elapsed = time.perf_counter() - start
    print(f"\ndeterminism: {pairs} of {args.determinism} random schedules replayed with identical "
          f"traces ({events:,} events compared) in {elapsed:.1f} s")


def model_outcome(result) -> str:
    return "raised" if any(f.run.raised is not None and not any(f.run.picks)
                           for f in result.failures) else "as expected"


if __name__ == "__main__":
    main()
