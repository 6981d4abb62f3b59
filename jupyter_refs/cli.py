"""``jupyter-refs``: the races from a terminal, no Jupyter server needed."""

from __future__ import annotations

import argparse
import sys
import textwrap

from .demo import scatter_race
from .network import POLICIES
from .protocol.variants import PROTOCOL_NAMES
from .views.text import around, format_events


def _write_trace(cluster, path: str) -> str:
    if path.endswith(".jsonl"):
        cluster.trace.to_jsonl(path)
        return "JSON Lines"
    cluster.trace.to_chrome_trace(path)
    return "Chrome trace (open it in https://ui.perfetto.dev)"


def demo_scatter_race(args: argparse.Namespace) -> int:
    result = scatter_race(args.protocol, seed=args.seed, iterations=args.iterations,
                          network=args.network)
    cluster = result.cluster
    print(f"scatter -> drop -> scatter, protocol={args.protocol}, network={args.network}, "
          f"seed={args.seed}: {result.iterations} iterations, {len(cluster.trace)} events")
    if result.violation is None:
        print(f"no violation in {result.iterations} iterations: every future stayed valid.")
    else:
        v = result.violation
        print(f"\nfirst violation: {v.name} on {v.key}, broken at event {v.first_seq}\n")
        print(format_events(around(cluster.trace.events(), v.first_seq)))
        print()
        print(textwrap.fill(v.explanation, width=100))
        if result.aftermath:
            print(f"\nnext computation on the held future: {result.aftermath}")
    if args.out:
        kind = _write_trace(cluster, args.out)
        print(f"\ntrace written to {args.out} ({kind})")
    cluster.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="jupyter-refs", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run a race on the kernel-side cluster")
    demo_sub = demo.add_subparsers(dest="race", required=True)
    race = demo_sub.add_parser("scatter-race", help="dask#8576: scatter, drop, scatter")
    race.add_argument("--protocol", choices=PROTOCOL_NAMES, default="dask")
    race.add_argument("--seed", type=int, default=0, help="seed of the simulated latencies")
    race.add_argument("--network", choices=[p for p in POLICIES if p != "manual"], default="random")
    race.add_argument("--iterations", type=int, default=200)
    race.add_argument("--out", help="write the trace: .json (Chrome trace) or .jsonl")
    race.set_defaults(func=demo_scatter_race)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except BrokenPipeError:  # piped into head: stop quietly
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
