"""Many threads on one client: a key one thread lets go of while another asks for it again
is sent again, never left waiting for a graph nobody sends (dask's test_threadsafe_compute
hung on the immediate network: the second thread skipped the key as held, and a third
thread's call applied the first one's drop before the second took the lock)."""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor

import pytest

import jupyter_refs as jr


def inc(x: int) -> int:
    return x + 1


# Live, the fixed protocol: under dask's a key-in-memory about the key's previous life may
# reach the client after another thread took the key again, and finish the new future for
# data the late release then forgets — dask's own race (a dangling_future, rightly
# reported), not the one this test is about.  Immediate delivers in order: no such race.
@pytest.mark.parametrize("network, protocol", [("immediate", "dask"), ("live", "fixed")])
def test_threads_computing_the_same_keys_on_one_client(network, protocol):
    import dask.array as da

    x = da.arange(40, chunks=(10,))
    rng = random.Random(0)
    with jr.Cluster(protocol=protocol, workers=2, network=network) as cluster:
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
