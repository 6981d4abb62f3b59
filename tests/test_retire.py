"""``Client.retire_workers`` on the kernel-side cluster, as distributed 2026.8.0 does it for what
a user sees: the data only the worker holds moves to another first, the worker is removed,
``scheduler_info()`` no longer lists it, its futures still gather and new tasks go elsewhere.
(Checked on real dask by ``tests/test_dask_docs.py``'s ``doc_retire_workers`` and by
``tests/test_zoo.py``'s 8522 tests; the return value's fields are dask's ``identity()``'s.)"""

from __future__ import annotations

import pytest

from jupyter_refs import Cluster
from jupyter_refs.errors import NotModelledError
from jupyter_refs.zoo import inc


@pytest.fixture
def two():
    with Cluster(protocol="dask", workers=2, network="immediate") as cluster:
        yield cluster, cluster.client()


def test_the_data_moves_first_and_the_worker_is_gone(two):
    cluster, client = two
    x = client.submit(inc, 1, key="x", workers=["worker:1"])
    x.result()
    y = client.scatter(10, workers=["worker:1"])
    retired = client.retire_workers(["worker:1"])
    assert list(retired) == ["worker:1"] and retired["worker:1"]["status"] == "closed"
    assert {"type", "id", "name", "nthreads", "memory_limit", "status"} <= set(retired["worker:1"])
    assert client.who_has([x, y]) == {"x": ["worker:0"], y.key: ["worker:0"]}
    assert list(client.scheduler_info()["workers"]) == ["worker:0"]
    assert (x.result(), y.result()) == (2, 10)
    z = client.submit(inc, y)
    assert z.result() == 11 and client.who_has(z) == {z.key: ["worker:0"]}
    assert cluster.workers["worker:1"].closed
    kinds = [e.kind for e in cluster.trace.events()]
    assert kinds.index("who_has.added") < kinds.index("worker.removed")
    assert cluster.violations == []


def test_a_worker_whose_data_nobody_can_take_is_not_retired():
    """dask: 'could not retire' — the only worker keeps running, with its data."""
    with Cluster(protocol="dask", workers=1, network="immediate") as cluster:
        client = cluster.client()
        x = client.submit(inc, 1, key="x")
        x.result()
        assert client.retire_workers(["worker:0"]) == {}
        assert list(client.scheduler_info()["workers"]) == ["worker:0"] and x.result() == 2
        assert client.submit(inc, 5).result() == 6


def test_unknown_workers_are_left_out_and_dask_s_own_choice_is_not_modelled(two):
    _, client = two
    assert client.retire_workers(["worker:7"]) == {}
    with pytest.raises(NotModelledError, match="workers_to_close"):
        client.retire_workers()


@pytest.mark.parametrize("protocol,back", [("dask-2024.2.0", True), ("dask", False)])
def test_without_close_the_heartbeat_decides_whether_the_worker_comes_back(protocol, back):
    """``close_workers=False`` (what SpecCluster's scale-down asks): no close races the heartbeat,
    so before PR 8522 the retired worker comes back in order, by its heartbeat alone."""
    with Cluster(protocol=protocol, workers=2, network="immediate") as cluster:
        client = cluster.client()
        client.retire_workers(["worker:1"], close_workers=False)
        cluster.run_until_idle()
        assert ("worker:1" in client.scheduler_info()["workers"]) is back
        assert ("retired_worker_returned" in {v.name for v in cluster.violations}) is back
