"""How often each race happens on its own: the racy protocol and fixed side by side.

Not a speed benchmark: the rates the lessons and the closing notes quote.

* ghost tasks (race 2): ``x = scatter(i); g = submit(keep, Box([x])); del x`` on the live
  network, per 100 iterations, under dask-2024.7 (before PR 8827), today's dask and fixed;
* id collisions (race 3): 32 threads × 2,000 ``submit(pure=False)``, switch interval
  lowered to 10 µs as in ``tests/test_ids.py``, per 64,000 ids; and the same at
  CPython's default interval, under racy-ids (Julia's counter), today's dask (uuid4 keys)
  and fixed.

Usage: ``python benchmarks/bench_races.py [--runs N]``.
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import sys

from jupyter_refs import Cluster

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests"))
from helpers import Box, in_threads, keep  # noqa: E402 - the harness the tests use


def inc(v: int) -> int:
    return v + 1


def ghosts(protocol: str, iterations: int = 100, seed: int = 0) -> int:
    with Cluster(protocol=protocol, network="live", seed=seed) as cluster:
        client = cluster.client()
        kept = []
        for i in range(iterations):
            x = client.scatter(10_000 + i)
            kept.append(client.submit(keep, Box([x])))
            del x
        cluster.run_until_idle()
        return sum(v.name == "ghost_task" for v in cluster.violations)


def collisions(protocol: str, interval: float | None, threads: int = 32, each: int = 2_000) -> int:
    cluster = Cluster(protocol=protocol, network="manual", workers=2, trace_capacity=3_000_000)
    client = cluster.client()

    def work(_: int) -> None:
        for j in range(each):
            client.submit(inc, j, pure=False)

    in_threads(work, threads, interval)
    found = sum(v.name == "id_collision" for v in cluster.violations)
    cluster.close()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    for name, racy, measure in [
        ("ghost tasks per 100 submit-and-drop (live)", "dask-2024.7", lambda p, r: ghosts(p, seed=r)),
        ("id collisions per 64,000 ids (10 µs switches)", "racy-ids",
         lambda p, r: collisions(p, 1e-5)),
        ("id collisions per 64,000 ids (default 5 ms)", "racy-ids", lambda p, r: collisions(p, None)),
    ]:
        cells = []
        for protocol in (racy, "dask", "fixed"):
            values = [measure(protocol, r) for r in range(runs)]
            cells.append(f"{protocol}: median {statistics.median(values):g} {values}")
        print(f"{name:<48} " + "  ".join(f"{c:<36}" for c in cells), flush=True)


if __name__ == "__main__":
    main()
