"""Race 3: non-atomic future ids, provoked by real threads (JuliaLang/julia#42167).

32 threads each create 2,000 futures with ``submit(pure=False)``, whose keys
come from the cluster's id allocator.  Nothing schedules the threads: CPython
switches between them every ``sys.getswitchinterval()`` seconds.  The default
(5 ms) makes a switch inside the allocator's read-then-write rare; Julia's
threads run in parallel, so the tests lower the interval to 10 µs to let the
threads interleave about as finely — which makes a collision likely, never
certain.
"""

from __future__ import annotations

from collections import Counter

from helpers import in_threads, inc

from jupyter_refs import Cluster

THREADS, PER_THREAD = 32, 2_000


def many_threads(protocol: str):
    cluster = Cluster(protocol=protocol, network="manual", workers=2, trace_capacity=3_000_000)
    client = cluster.client()
    futures: list[list] = [[] for _ in range(THREADS)]

    def work(i: int) -> None:
        futures[i] = [client.submit(inc, j, pure=False) for j in range(PER_THREAD)]

    in_threads(work, THREADS, switch_interval=1e-5)
    cluster.run_until_idle()
    return cluster, futures


def test_legacy_ids_collide_and_every_collision_is_flagged():
    runs = []
    for _ in range(3):
        cluster, futures = many_threads("racy-ids")
        allocs = Counter(e.get("value") for e in cluster.trace.events(kind="id.alloc"))
        duplicates = sum(n - 1 for n in allocs.values() if n > 1)
        violations = cluster.violations
        collisions = [v for v in violations if v.name == "id_collision"]
        assert len(collisions) == duplicates  # each one flagged
        keys = Counter(f.key for fs in futures for f in fs)
        aliased = {k for k, n in keys.items() if n > 1}
        rejected = {e.key for e in cluster.trace.events(kind="future.put_rejected")}
        assert aliased == rejected  # the second put of every aliased key is refused
        assert {v.key for v in violations if v.name == "set_twice"} == rejected
        for fs in futures:
            for f in fs:
                if f.key in aliased:
                    assert f.status == "error"
                    assert "set only once" in f.client._state.futures[f.key].reason
        runs.append(duplicates)
        cluster.close()
    print(f"legacy: collisions per run of {THREADS * PER_THREAD} ids: {runs}")
    assert sum(1 for d in runs if d > 0) >= 2  # most runs


def test_fixed_ids_never_collide_and_every_result_is_right():
    for _ in range(10):
        cluster, futures = many_threads("fixed")
        # dask's keys for pure=False are uuid4s: nothing to coordinate, nothing to collide.
        keys = [f.key for fs in futures for f in fs]
        assert len(set(keys)) == THREADS * PER_THREAD and not cluster.trace.events(kind="id.alloc")
        assert cluster.violations == []
        data = {k: v for w in cluster.workers.values() for k, v in w.data.items()}
        for fs in futures:
            assert [f.status for f in fs] == ["finished"] * PER_THREAD
            assert [data[f.key] for f in fs] == [j + 1 for j in range(PER_THREAD)]
        cluster.close()
