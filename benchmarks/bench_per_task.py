"""The kernel-side cluster's cost per task: machine instructions, messages and events.

    python benchmarks/bench_per_task.py [--tasks 1000] [--no-valgrind] [--bare]

The run is ``bench_throughput.py``'s (a ``map`` of ``inc`` on two workers, immediate network,
traced and checked), made twice in fresh interpreters: ``--tasks`` tasks and twice as many.
Instructions are counted by ``valgrind --tool=callgrind`` (the machine's own counters are not
readable here, and Python 3.11 has no ``sys.monitoring``): the two totals' difference, divided
by ``--tasks``, is what one more task costs, the interpreter's start-up, imports and warm-up
cancelled out.  Messages and events per task are read from the trace, the same way, in runs
of their own (reading builds an event per row, which the measured runs do not pay).  Under
callgrind a run takes a minute or two (the imports are most of it); ``--no-valgrind`` prints
the counts alone.

``--bare`` measures the same runs again with the trace's three record paths made no-ops (no
event is kept, so the checks see none): what a task costs the actors and the driver alone, and
so what share of it tracing and checking take — the most any cut to those could give.
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


def inner(n: int, bare: bool = False, count: bool = True) -> None:
    """One run of ``n`` tasks after a warm-up (imports and first-call caches filled, so that both
    runs pay them alike); prints the trace's counts as JSON (``count``: reading them builds an
    event per row, about 50,000 instructions a task, so a counted run is not the one measured).
    ``bare``: nothing recorded."""
    from jupyter_refs import Cluster
    from jupyter_refs.trace import Trace

    if bare:  # before the cluster is made: its actors take the recorders as they start
        def nothing(*args: object) -> None:
            return None

        Trace.record = Trace.record_msg = Trace.record_sent = nothing  # type: ignore[method-assign]

    def received() -> int:
        return len(trace.events(kind="msg.received")) if count else 0

    with Cluster(protocol="legacy", workers=2, network="immediate",
                 trace_capacity=2_000_000) as cluster:
        client = cluster.client()
        assert client.gather(client.map(inc, range(-50, 0))) == list(range(-49, 1))
        trace = cluster.trace
        events = trace.next_seq
        messages = received()
        results = client.gather(client.map(inc, range(n)))
        assert results == [i + 1 for i in range(n)]
        assert cluster.violations == []
        print(json.dumps({"events": trace.next_seq - events, "messages": received() - messages}))


def measure(n: int, valgrind: bool, bare: bool = False) -> dict[str, int]:
    """A fresh interpreter's run of ``n`` tasks: with ``valgrind`` its instructions (callgrind's
    total for the whole process), else its counts; ``bare``: with nothing recorded."""
    here = os.path.dirname(os.path.abspath(__file__))
    env = {**os.environ, "PYTHONHASHSEED": "0",
           "PYTHONPATH": os.pathsep.join(p for p in (os.path.dirname(here),
                                                     os.environ.get("PYTHONPATH")) if p)}
    command = [sys.executable, os.path.abspath(__file__), "--inner", str(n),
               *(["--bare"] * bare), *(["--uncounted"] * valgrind)]
    if valgrind:
        command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *command]
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    if not valgrind:
        return json.loads(done.stdout.strip().splitlines()[-1])
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise RuntimeError(f"no instruction count in callgrind's output:\n{done.stderr}")
    return {"instructions": int(found[1])}


def per_task(n: int, valgrind: bool, bare: bool = False) -> dict[str, float]:
    """What one more task costs: runs of ``n`` and ``2 * n`` tasks, their difference over ``n``."""
    small, large = measure(n, valgrind, bare), measure(2 * n, valgrind, bare)
    return {what: (large[what] - small[what]) / n for what in small}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--no-valgrind", action="store_true")
    parser.add_argument("--bare", action="store_true",
                        help="also measure the runs with nothing recorded (no trace, no checks)")
    parser.add_argument("--inner", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--uncounted", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inner is not None:
        inner(args.inner, args.bare, count=not args.uncounted)
        return
    valgrind = not args.no_valgrind
    if valgrind and shutil.which("valgrind") is None:
        parser.error("valgrind is not installed: pass --no-valgrind for the counts alone")
    n = args.tasks
    per = per_task(n, False)
    print(f"per task ({2 * n:,} tasks less {n:,}, immediate network, traced and checked): "
          f"{per['messages']:.2f} messages, {per['events']:.2f} events")
    if not valgrind:
        return
    traced = per_task(n, True)["instructions"]
    print(f"per task, traced and checked: {traced:,.0f} instructions (callgrind)")
    if args.bare:
        alone = per_task(n, True, bare=True)["instructions"]
        print(f"per task with nothing recorded (no trace, so no checks): {alone:,.0f} instructions;"
              f" the trace and the checks {1 - alone / traced:.0%} of a task, so "
              f"{traced / alone:.2f}x the most that cutting them could give")


if __name__ == "__main__":
    main()
