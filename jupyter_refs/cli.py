"""``jupyter-refs``: the races from a terminal, no Jupyter server needed."""

from __future__ import annotations

import argparse
import os
import sys
import textwrap

from . import __version__
from .demo import scatter_race
from .network import POLICIES
from .protocol.variants import PROTOCOL_HELP, protocol_type
from .views.text import around, format_events

#: What ``--out`` can write, by file suffix.
TRACE_FORMATS = {
    ".json": "Chrome trace (open it in https://ui.perfetto.dev)",
    ".jsonl": "JSON Lines",
}


def _write_trace(cluster, path: str) -> str:
    if path.endswith(".jsonl"):
        cluster.trace.to_jsonl(path)
    else:
        cluster.trace.to_chrome_trace(path)
    return TRACE_FORMATS[os.path.splitext(path)[1]]


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _trace_path(text: str) -> str:
    """Check ``--out``'s suffix while parsing: a malformed argument is a usage error."""
    suffix = os.path.splitext(text)[1]
    if suffix not in TRACE_FORMATS:
        raise argparse.ArgumentTypeError(
            f"{text!r}: the trace is written as .json (Chrome trace) or .jsonl (JSON Lines), "
            f"not {suffix or 'a file without a suffix'}")
    return text


def _unwritable(path: str) -> str | None:
    """Why the trace cannot be written to ``path``, or None: checked before the run, so a
    bad place costs one line, not a whole demo and a traceback.

    The file is really opened (for appending, so an existing one is left as it was):
    permission bits do not tell, as root or on /proc and /sys.
    """
    folder = os.path.dirname(path) or "."
    if not os.path.isdir(folder):
        return f"{path!r}: the folder {folder!r} does not exist"
    if os.path.isdir(path):
        return f"{path!r} is a folder"
    existed = os.path.lexists(path)
    try:
        with open(path, "a", encoding="utf-8"):
            pass
    except OSError as exc:
        return f"cannot write the trace to {path!r}: {exc.strerror or exc}"
    if not existed:
        os.remove(path)
    return None


def demo_scatter_race(args: argparse.Namespace) -> int:
    result = scatter_race(args.protocol, seed=args.seed, iterations=args.iterations,
                          network=args.network)
    cluster = result.cluster
    try:
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
    finally:
        # The trace is what the user came for: write it whatever happened above.
        if args.out:
            kind = _write_trace(cluster, args.out)
            print(f"\ntrace written to {args.out} ({kind})")
        cluster.close()
    return 0


def make_parser() -> argparse.ArgumentParser:
    fmt = argparse.ArgumentDefaultsHelpFormatter
    parser = argparse.ArgumentParser(prog="jupyter-refs", description=__doc__, formatter_class=fmt)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    demo = sub.add_parser("demo", help="run a race on the kernel-side cluster",
                          description="Run a race on the kernel-side cluster.", formatter_class=fmt)
    demo_sub = demo.add_subparsers(dest="race", required=True, metavar="RACE")
    race = demo_sub.add_parser(
        "scatter-race", help="dask#8576: scatter, drop, scatter", formatter_class=fmt,
        description="Crusaderky's loop from dask#8576 (scatter the same value, drop it, repeat) "
                    "until the first violation; prints the events around it and what the next "
                    "computation on the held future gives.")
    race.add_argument("--protocol", type=protocol_type, default="dask", help=PROTOCOL_HELP)
    race.add_argument("--seed", type=int, default=0,
                      help="seed of the simulated latencies (random network): a seed replays exactly")
    race.add_argument("--network", choices=[p for p in POLICIES if p != "manual"], default="random",
                      help="message timing: simulated from the seed (random), real threads (live), "
                           "or in order (immediate)")
    race.add_argument("--iterations", type=_positive_int, default=200, metavar="N",
                      help="at most N scatter/drop rounds (stops at the first violation)")
    race.add_argument("--out", type=_trace_path, metavar="FILE",
                      help="also write the whole trace: FILE.json (Chrome trace, for Perfetto) "
                           "or FILE.jsonl (JSON Lines)")
    race.set_defaults(func=demo_scatter_race)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = make_parser()
    args = parser.parse_args(argv)
    problem = _unwritable(args.out) if getattr(args, "out", None) else None
    if problem:  # one line, no usage: the command was well formed
        parser.exit(2, f"{parser.prog}: error: {problem}\n")
    try:
        return args.func(args)
    except BrokenPipeError:  # piped into head: stop quietly
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
