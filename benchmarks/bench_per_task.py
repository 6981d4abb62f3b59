"""The kernel-side cluster's cost per task: machine instructions, messages and events.

    python benchmarks/bench_per_task.py [--tasks 1000] [--no-valgrind]

The run is ``bench_throughput.py``'s (a ``map`` of ``inc`` on two workers, immediate network,
traced and checked), made twice in fresh interpreters: ``--tasks`` tasks and twice as many.
Instructions are counted by ``valgrind --tool=callgrind`` (the machine's own counters are not
readable here, and Python 3.11 has no ``sys.monitoring``): the two totals' difference, divided
by ``--tasks``, is what one more task costs, the interpreter's start-up, imports and warm-up
cancelled out.  Messages and events per task are read from the trace, the same way.  Under
callgrind a run takes a minute or two (the imports are most of it); ``--no-valgrind`` prints
the counts alone.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys


def inc(x: int) -> int:
    return x + 1


def inner(n: int) -> None:
    """One run of ``n`` tasks after a warm-up (imports and first-call caches filled, so that both
    runs pay them alike); prints the trace's counts as JSON."""
    from jupyter_refs import Cluster

    with Cluster(protocol="legacy", workers=2, network="immediate",
                 trace_capacity=2_000_000) as cluster:
        client = cluster.client()
        assert client.gather(client.map(inc, range(-50, 0))) == list(range(-49, 1))
        trace = cluster.trace
        events = trace.next_seq
        messages = len(trace.events(kind="msg.received"))
        results = client.gather(client.map(inc, range(n)))
        assert results == [i + 1 for i in range(n)]
        assert cluster.violations == []
        print(json.dumps({"events": trace.next_seq - events,
                          "messages": len(trace.events(kind="msg.received")) - messages}))


def measure(n: int, valgrind: bool) -> dict[str, int]:
    """A fresh interpreter's run of ``n`` tasks: its counts, and its instructions (callgrind's
    total for the whole process) with ``valgrind``."""
    here = os.path.dirname(os.path.abspath(__file__))
    env = {**os.environ, "PYTHONHASHSEED": "0",
           "PYTHONPATH": os.pathsep.join(p for p in (os.path.dirname(here),
                                                     os.environ.get("PYTHONPATH")) if p)}
    command = [sys.executable, os.path.abspath(__file__), "--inner", str(n)]
    if valgrind:
        command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *command]
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    counts = json.loads(done.stdout.strip().splitlines()[-1])
    if valgrind:
        found = re.search(r"Collected : (\d+)", done.stderr)
        if found is None:
            raise RuntimeError(f"no instruction count in callgrind's output:\n{done.stderr}")
        counts["instructions"] = int(found[1])
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--no-valgrind", action="store_true")
    parser.add_argument("--inner", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inner is not None:
        inner(args.inner)
        return
    valgrind = not args.no_valgrind
    if valgrind and shutil.which("valgrind") is None:
        parser.error("valgrind is not installed: pass --no-valgrind for the counts alone")
    n = args.tasks
    small, large = measure(n, valgrind), measure(2 * n, valgrind)
    per = {what: (large[what] - small[what]) / n for what in small}
    print(f"per task ({2 * n:,} tasks less {n:,}, immediate network, traced and checked): "
          f"{per['messages']:.2f} messages, {per['events']:.2f} events"
          + (f", {per['instructions']:,.0f} instructions (callgrind)" if valgrind else ""))


if __name__ == "__main__":
    main()
