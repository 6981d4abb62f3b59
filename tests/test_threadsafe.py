"""Many threads on one client: a key one thread lets go of while another asks for it again
is sent again, never left waiting for a graph nobody sends (dask's test_threadsafe_compute
hung on the immediate network: the second thread skipped the key as held, and a third
thread's call applied the first one's drop before the second took the lock); and news of
the key's previous life arriving late is not taken for a dangling future while the new
graph is still on its way (live, it was reported in about half the runs)."""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor

import pytest

import jupyter_refs as jr


def inc(x: int) -> int:
    return x + 1


@pytest.mark.parametrize("network", ["immediate", "live"])
def test_threads_computing_the_same_keys_on_one_client(network):
    import dask.array as da

    x = da.arange(40, chunks=(10,))
    rng = random.Random(0)
    with jr.Cluster(protocol="dask", workers=2, network=network) as cluster:
        client = jr.Client(cluster)

        def compute(_: int) -> list[int]:
            return [client.compute((x + rng.randint(0, 2)).sum()).result(timeout=30)
                    for _ in range(15)]

        def submit(_: int) -> list[int]:
            return [client.submit(inc, rng.randint(0, 2)).result(timeout=30) for _ in range(15)]

        with ThreadPoolExecutor(12) as pool:
            sums = [t for r in pool.map(compute, range(12)) for t in r]
            incs = [t for r in pool.map(submit, range(12)) for t in r]
        assert set(sums) <= {sum(range(40)) + 40 * i for i in range(3)}
        assert set(incs) <= {1, 2, 3}
        cluster.run_until_idle()
        assert cluster.violations == []
        client.close()


def deliver(cluster: jr.Cluster, op: str) -> None:
    """Deliver the first message of ``op`` in flight."""
    cluster.deliver(next(m.msg_id for m in cluster.in_flight if m.op == op))


def test_late_news_of_a_keys_previous_life_is_no_dangling_future():
    """The order live runs of the test above met: c1's key-in-memory (the answer to its first
    graph) arrives after c1 released the key and sent a graph for it again; it finishes the
    new future, then the release forgets the key — with the new graph behind it on the
    stream, which makes the task again.  dask's order too (no generations): the future says
    finished a little early, nothing dangles."""
    with jr.Cluster(protocol="dask", network="manual") as cluster:
        c1, c2 = cluster.client("c1"), cluster.client("c2")
        held = c2.submit(inc, 1, key="k")
        cluster.run_until_idle()
        first = c1.submit(inc, 1, key="k")
        deliver(cluster, "update-graph")  # k in memory: key-in-memory to c1, in flight
        held.release()
        deliver(cluster, "client-releases-keys")  # c1 alone wants k now
        first.release()  # c1's release, in flight ...
        again = c1.submit(inc, 1, key="k")  # ... and its new graph behind it
        deliver(cluster, "key-in-memory")  # late: it finishes the new future
        assert again.status == "finished"
        deliver(cluster, "client-releases-keys")  # forgets k; the graph is still on its way
        assert cluster.scheduler_state("k") == "forgotten" and cluster.violations == []
        cluster.run_until_idle()
        assert cluster.scheduler_state("k") == "memory" and cluster.violations == []
        assert again.status == "finished" and c1.refcount["k"] == 1
