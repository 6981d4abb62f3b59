"""Race 2: a future travels inside task arguments, and its desire comes too late.

``submit(keep, Box([x])); del x``: the task's future is deserialized on the worker
and, under legacy, announced with ``client-desires-keys`` on the worker
client's stream, while the owner's release rides the owner's stream.  When
the release lands first, the desire re-creates the forgotten key as a task
with no run spec: a ghost.
"""

from __future__ import annotations

import pickle

import pytest
from helpers import Box, deliver_op, inc, keep, summary

from jupyter_refs import Cluster, FutureCancelledError


def _ghost_order(cluster: Cluster, key: str, start: int) -> list[str]:
    """The events about ``key`` from event ``start`` on that tell the story, in order."""
    wanted = {"refcount.dec", "refcount.inc", "transition", "desire.applied", "release.applied",
              "future.created", "desire.unknown"}
    out = []
    for e in cluster.trace:
        if e.seq >= start and e.key == key and (e.kind in wanted or e.op in ("client-releases-keys",
                                                          "client-desires-keys")):
            text = summary(e)
            if e.kind == "desire.applied":
                text += " created" if e.fields["created_task"] else ""
            out.append(text)
    return out


@pytest.mark.parametrize("protocol", ["dask-2024.7", "fixed"])
def test_release_before_the_workers_desire(manual_cluster, protocol):
    cluster = manual_cluster(protocol)
    client = cluster.client()
    x = client.scatter(41)
    cluster.run_until_idle()
    key = x.key
    start = len(cluster.trace)
    g = client.submit(keep, Box([x]))
    del x  # client-releases-keys queued behind update-graph on client:1's stream
    deliver_op(cluster, "update-graph")
    deliver_op(cluster, "compute-task")  # the worker queues the task, a thread picks it up
    deliver_op(cluster, "execute")  # the task runs: its future is deserialized
    deliver_op(cluster, "client-releases-keys")  # the owner's release lands first
    cluster.run_until_idle()  # then the worker's desire, if there is one

    story = _ghost_order(cluster, key, start)
    events = [e for e in cluster.trace if e.seq >= start]
    if protocol == "dask-2024.7":
        assert story == [
            "client:1 refcount.dec 1->0",
            "client:1 msg.sent client-releases-keys",
            "client:worker:0 future.created",
            "client:worker:0 refcount.inc 0->1",
            "client:worker:0 msg.sent client-desires-keys",
            "scheduler msg.received client-releases-keys",
            "scheduler release.applied",
            "scheduler transition memory->forgotten",
            "scheduler msg.received client-desires-keys",
            "scheduler desire.applied created",
        ]
        ts = cluster.scheduler.tasks[key]
        assert (ts.state, ts.run_spec, ts.who_wants) == ("released", None, {"client:worker:0"})
        [v] = cluster.violations
        assert v.name == "ghost_task" and v.key == key and v.client == "client:worker:0"
        assert cluster.trace[v.first_seq].kind == "desire.applied"
        assert "client:1's client-releases-keys" in v.explanation
    else:
        assert not any(e.op == "client-desires-keys" for e in events)
        assert [e.fields["origin"] for e in events if e.kind == "future.created"
                and e.actor == "client:worker:0"] == ["borrowed"]
        assert key not in cluster.scheduler.tasks
        assert cluster.violations == []
    assert g.status == "finished"


def _provoke(protocol: str):
    """Immediate delivery, the worker client's stream held: the release always lands first."""
    cluster = Cluster(protocol=protocol, network="immediate")
    client = cluster.client()
    other = client.scatter(7)
    x = client.scatter(41)
    key = x.key
    cluster.hold("client:worker:*")
    g = client.submit(keep, Box([x]))
    [run] = cluster.in_flight  # submit returns before the task runs, as on dask
    assert run.op == "execute"
    cluster.step(1)  # it runs: its future claims x on the held stream
    del x
    cluster.step(10)  # delivers the held desire last
    cluster.release_holds()
    return cluster, client, other, g, key


def test_legacy_ghost_drops_the_clients_connection():
    cluster, client, other, g, key = _provoke("dask-2024.7")
    assert cluster.scheduler_state(key) == "released"  # the ghost
    [fx] = g.result()  # the future comes back to client:1, which announces it too
    assert fx.key == key and fx.status == "pending"  # nothing will ever compute it
    y = client.submit(inc, fx)  # the scheduler walks from y to the ghost: released -> waiting
    cluster.run_until_idle()

    kinds = [e.kind for e in cluster.trace]
    i = kinds.index("scheduler.assertion")
    assert kinds[i + 1] == "client.removed"
    assertion = cluster.trace[i]
    assert assertion.key == key and "no run_spec" in assertion.fields["message"]
    lost = [e for e in cluster.trace if e.kind == "connection.lost"]
    assert [e.actor for e in lost] == ["client:1"]
    # Every future client:1 holds is cancelled, the unrelated one too.
    for f in (other, g, fx, y):
        assert f.status == "cancelled"
        with pytest.raises(FutureCancelledError, match="scheduler-connection-lost"):
            f.result()
    names = [(v.name, v.client) for v in cluster.violations]
    assert names == [("ghost_task", "client:worker:0"), ("ghost_task", "client:1")]
    assert cluster.violations[1].first_seq == assertion.seq
    # The client reconnects: new work goes through.
    assert client.submit(inc, 1).result() == 2
    cluster.close()


def test_fixed_unknown_key_is_cancelled_not_created():
    cluster, client, other, g, key = _provoke("fixed")
    assert cluster.scheduler_state(key) == "forgotten"
    [fx] = g.result()
    assert fx.status == "cancelled" and "unknown to the scheduler" in fx._fs.reason
    assert key not in cluster.scheduler.tasks
    warnings = [e for e in cluster.trace if e.kind == "desire.unknown"]
    assert [(e.key, e.fields["client"]) for e in warnings] == [(key, "client:1")]
    with pytest.raises(FutureCancelledError, match="unknown to the scheduler"):
        fx.result()
    assert other.result() == 7 and g.status == "finished"
    assert cluster.violations == []
    cluster.close()


def test_legacy_desire_first_keeps_the_key_alive():
    """The other order: the worker's claim lands before the release, and nothing breaks."""
    with Cluster(protocol="dask-2024.7", network="immediate") as cluster:
        client = cluster.client()
        x = client.scatter(41)
        key = x.key
        g = client.submit(keep, Box([x]))
        cluster.run_until_idle()  # the task runs; the worker client now wants x too
        del x
        cluster.run_until_idle()
        assert cluster.scheduler.tasks[key].who_wants == {"client:worker:0"}
        [fx] = g.result()
        assert client.submit(inc, fx).result() == 42
        assert cluster.violations == []


@pytest.mark.parametrize("protocol", ["dask-2024.7", "dask", "fixed"])
def test_a_task_sees_its_travelling_future(protocol):
    with Cluster(protocol=protocol, network="immediate") as cluster:
        client = cluster.client()
        x = client.scatter(41)
        statuses = client.submit(lambda b: [f"{type(f).__name__}:{f.status}" for f in b.items],
                                 Box([x]))
        # Before PR 8827 the future bound itself to the worker's client; today it is unbound.
        expected = "pending" if protocol == "dask-2024.7" else "None"
        assert statuses.result() == [f"Future:{expected}"]
        # In a list, a tuple or a dict the future is a dependency: the task gets its value.
        assert client.submit(lambda d: d["a"], {"a": [x, (x,)]}).result() == [41, (41,)]
        assert x.status == "finished" and client.refcount[x.key] == 1


@pytest.mark.parametrize("protocol", ["dask-2024.7", "dask", "fixed"])
def test_a_future_returned_by_its_task_comes_back_as_the_task_had_it(protocol):
    """On distributed 2026.8 a future that arrived unbound in a task comes back in the task's
    result unbound too (status None, no reference, nothing sent: lesson 2 checks it on real
    dask); ``fixed`` adopts and announces it; before PR 8827 it was bound in the task already."""
    with Cluster(protocol=protocol, network="immediate") as cluster:
        client = cluster.client()
        x = client.scatter(41)
        key = x.key
        g = client.submit(keep, Box([x]))
        del x
        [fx] = g.result()
        cluster.run_until_idle()
        announced = [e for e in cluster.trace.events(kind="msg.sent")
                     if e.op == "client-desires-keys" and e.actor == "client:1"]
        if protocol == "dask":  # as on real dask: unbound, and the key forgotten
            assert fx.status is None and key not in client.refcount and not announced
            assert cluster.scheduler_state(key) == "forgotten"
            with pytest.raises(RuntimeError, match="not properly initialized"):
                fx.result()
        elif protocol == "fixed":  # announced, refused: the client learns the key is gone
            assert len(announced) == 1 and fx.status == "cancelled"
        else:  # bound in the task already, and so held back at the client (here a ghost's)
            assert fx.status == "pending" and client.refcount[key] == 1


def test_a_pickled_future_outside_a_cluster_is_unbound():
    with Cluster(protocol="fixed", network="immediate") as cluster:
        x = cluster.client().scatter(3)
        [y] = pickle.loads(pickle.dumps([x]))
        assert (type(y).__name__, y.key, y.status) == ("Future", x.key, None)
        with pytest.raises(RuntimeError, match="not properly initialized"):
            y.result()
        with pytest.raises(RuntimeError, match="not properly initialized"):
            y.release()  # as dask 2026.8's _verify_initialized


def test_timeline_draws_the_ghost():
    from jupyter_refs.views.timeline_model import TimelineModel

    cluster, client, other, g, key = _provoke("dask-2024.7")
    [fx] = g.result()
    client.submit(inc, fx)
    cluster.run_until_idle()
    model = TimelineModel(keys=[key])
    model.add_events(cluster.trace.events())
    assert "client:worker:0->scheduler" in model.lanes  # the desire's own stream
    ops = model.messages.cols["op"]
    release, desire = ops.index("client-releases-keys"), ops.index("client-desires-keys")
    # The desire was sent before the release and received after it.
    assert model.messages.cols["x0"][desire] < model.messages.cols["x0"][release]
    assert model.messages.cols["x1"][desire] > model.messages.cols["x1"][release]
    # The lifeline: memory, gone, then a ghost; both ghost_task markers on their events.
    states = model.states.cols["state"] + model.open_states()["state"]
    assert states[:2] == ["memory", "ghost"]
    marks = dict(zip(model.violations.cols["first_seq"], model.violations.cols["name"]))
    assert sorted(marks.values()) == ["ghost_task", "ghost_task"]
    kinds = {cluster.trace[s].kind for s in marks}
    assert kinds == {"desire.applied", "scheduler.assertion"}
    cluster.close()


def _publish(box):
    """A task that shares the future it was sent, through a Variable (1 s to find the key)."""
    from jupyter_refs import Variable

    try:
        Variable("shared").set(box.items[0], timeout=1)
        return "published"
    except TimeoutError as exc:
        return f"TimeoutError: {exc}"


@pytest.mark.parametrize("protocol", ["dask-2024.7", "dask"])
def test_a_variable_set_of_a_forgotten_key(protocol):
    """Before PR 8827 ``Variable.set`` desired the key at once: a ghost for ``variable-<name>``;
    since then it waits for the key to be known and times out (distributed 2024.7.1 and 2026.8
    ``VariableExtension.set``)."""
    with Cluster(protocol=protocol, network="random", seed=2) as cluster:
        client = cluster.client()
        x = client.scatter(41)
        key = x.key
        cluster.hold("client:worker:0->scheduler")  # the task's own claim (2024.7) waits
        g = client.submit(_publish, Box([x]))
        del x
        deliver_op(cluster, "update-graph")
        deliver_op(cluster, "client-releases-keys")  # the owner's release first: key forgotten
        assert cluster.scheduler_state(key) == "forgotten"
        outcome = g.result(timeout=5)
        ghosts = [v for v in cluster.violations if v.name == "ghost_task"]
        if protocol == "dask-2024.7":
            assert outcome == "published" and cluster.scheduler_state(key) == "released"
            assert [v.client for v in ghosts] == ["variable-shared"]
            assert "Variable.set" in ghosts[0].explanation
            assert "on the variable_set RPC" in ghosts[0].explanation
        else:
            assert outcome.startswith("TimeoutError") and "timeout of 1 s" in outcome
            assert ghosts == [] and cluster.scheduler_state(key) == "forgotten"
