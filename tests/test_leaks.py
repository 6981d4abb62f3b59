"""leaked_key: the scheduler keeps a key for a client that has let go of it.

The issue that asked for the check (16) named a vehicle: a task that calls
``release()`` on a future it received.  It does not leak, here or on dask: the
worker's client announces the future (``client-desires-keys``) when the task's
arguments are deserialized, before the task runs, and the task's ``release()``
goes through the same queue of drops as ``del`` — so the release follows the
desire on the same FIFO stream.  (dask 2026.8: ``Future.release`` schedules
``_dec_ref`` on the client's loop, like ``__del__``; and a future deserialized
in a task is unbound there, holding nothing.)  What does leak: a release that
overtakes the desire it undoes — a scatter's RPC, still in flight when the user
drops its future, on a manual network.
"""

from __future__ import annotations

import pytest
from helpers import Box

from jupyter_refs import Cluster, explore


def release_in_task(box: Box) -> int:
    for f in box.items:
        if f.status is not None:  # bound: the worker's client holds it (dask-2024.7)
            f.release()
    return len(box.items)


def release_inside_a_task(client):
    x = client.scatter(41)
    client.submit(release_in_task, Box([x])).result()


@pytest.mark.parametrize("protocol", ["dask", "dask-2024.7", "fixed"])
def test_release_inside_a_task_never_leaks(protocol):
    result = explore(release_inside_a_task, protocol=protocol, max_schedules=600, processes=1)
    assert result.schedules == 600
    names = {n for f in result.failures for n in f.names}
    assert "leaked_key" not in names
    if protocol != "dask-2024.7":  # there, a late desire may create a ghost instead
        assert result.failures == []


def test_release_inside_a_task_follows_the_desire_on_one_stream():
    with Cluster(protocol="dask-2024.7", network="immediate") as cluster:
        client = cluster.client()
        x = client.scatter(41)
        assert client.submit(release_in_task, Box([x])).result() == 1
        cluster.run_until_idle()
        sent = [e for e in cluster.trace.events(key=x.key, kind="msg.sent")
                if e.actor == "client:worker:0"]
        assert [e.op for e in sent] == ["client-desires-keys", "client-releases-keys"]
        assert {e.channel for e in sent} == {"client:worker:0->scheduler"}
        assert cluster.scheduler.tasks[x.key].who_wants == {"client:1"}
        assert cluster.violations == []


@pytest.mark.parametrize("protocol", ["dask", "fixed"])
def test_a_release_that_overtakes_its_scatter_leaks_the_key(protocol):
    cluster = Cluster(protocol=protocol, network="manual")
    client = cluster.client()
    x = client.scatter(41)  # manual: returns at once, its RPC in flight
    key = x.key
    del x  # the release goes on the batched stream, and overtakes the RPC
    release = next(m for m in cluster.in_flight if m.op == "client-releases-keys")
    cluster.deliver(release.msg_id)
    cluster.run_until_idle()
    leaks = [v for v in cluster.violations if v.name == "leaked_key"]
    if protocol == "fixed":  # a scatter whose hold was released is not registered
        assert leaks == [] and key not in cluster.scheduler.tasks
        assert cluster.workers["worker:0"].data == {}
    else:
        [leak] = leaks
        assert (leak.key, leak.client) == (key, "client:1")
        assert cluster.scheduler.tasks[key].who_wants == {"client:1"}
        assert client.refcount.get(key, 0) == 0
        assert f"msg #{release.msg_id}" in leak.explanation and "scatter" in leak.explanation
        assert cluster.trace[leak.first_seq].kind == "desire.applied"
    cluster.close()
