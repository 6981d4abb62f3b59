"""The scheduler alone: a message in, the messages it sends and the events it records.

Each test hands ``SchedulerState`` one message at a time (``net.handle``) and reads what came
out; nothing is delivered onwards unless the test says so.
"""

from __future__ import annotations

import pytest
from sansio import (
    Net,
    cancel_keys,
    desires,
    releases,
    spec,
    story,
    task_finished,
    update_graph,
    user_scatter,
)

from jupyter_refs.protocol.messages import SCHEDULER
from jupyter_refs.protocol.serialize import Dep, dumps


def computed(net: Net, key: str = "k", client: str = "c") -> None:
    """``key`` submitted by ``client`` and computed on worker ``w`` (run id 1): in memory."""
    net.handle(update_graph(client, {key: spec(len, "abc")}))
    net.handle(task_finished("w", key, net.scheduler.tasks[key].run_id))
    net.pool.clear()


def test_update_graph_sends_compute_task():
    """A submitted task with nothing to wait for goes straight to a worker, under a new run id."""
    net = Net()
    [out] = net.handle(update_graph("c", {"k": spec(len, "abc")}))
    assert (out.op, out.receiver, out.batched, out.keys) == ("compute-task", "w", True, ("k",))
    assert out.payload["incarnation"] == 1 and out.payload["who_has"] == {}
    assert out.payload["args"] == dumps((("abc",), {}))
    ts = net.scheduler.tasks["k"]
    assert (ts.state, ts.processing_on, ts.run_id, ts.who_wants) == ("processing", "w", 1, {"c"})
    story(net.rec.events,
          (SCHEDULER, "desire.applied", "k", "c", 1, ("c",), False),
          (SCHEDULER, "transition", "k", "released", "waiting"),
          (SCHEDULER, "transition", "k", "waiting", "processing"))


def test_a_task_waits_for_its_dependency():
    """``b`` needs ``a``: only ``a`` is sent; ``a``'s result sends ``b``, saying where ``a`` is.
    Nobody holds ``a`` itself: once ``b`` is done its data is freed, and the task stays,
    released, as long as its dependent does (dask's chain)."""
    net = Net()
    out = net.handle(update_graph("c", {"a": spec(len, "xy"), "b": spec(abs, Dep("a"), deps=["a"])},
                                  wanted=["b"]))
    assert [(m.op, m.keys) for m in out] == [("compute-task", ("a",))]
    assert net.state("b") == "waiting"
    [out] = net.handle(task_finished("w", "a", 1))
    assert (out.op, out.keys, out.payload["who_has"]) == ("compute-task", ("b",), {"a": ["w"]})
    assert net.state("a") == "memory"
    out = net.handle(task_finished("w", "b", 2))
    assert [(m.op, m.receiver, m.keys) for m in out] == [
        ("key-in-memory", "c", ("b",)), ("free-keys", "w", ("a",))]
    assert net.state("a") == "released" and net.state("b") == "memory"


def test_a_released_dependency_whose_dependents_are_done_is_released():
    """The user's ``x = submit(inc, 1); y = submit(inc, x); y.result(); del x, y``: the release
    of ``x`` comes once ``y`` is in memory, so no dependent waits for ``x`` any more and dask's
    ``_client_releases_keys`` recommends ``released`` (its data freed); the release of ``y``
    then forgets both.  A bare ``dependents`` test kept ``x`` in memory instead."""
    net = Net()
    net.handle(update_graph("c", {"x": spec(len, "ab"),
                                  "y": spec(abs, Dep("x"), deps=["x"])}))
    net.handle(task_finished("w", "x", 1))
    net.handle(task_finished("w", "y", 2))
    net.pool.clear()
    assert (net.state("x"), net.state("y")) == ("memory", "memory")
    out = net.handle(releases("c", "x"))
    assert [(m.op, m.receiver, m.keys) for m in out] == [("free-keys", "w", ("x",))]
    assert net.state("x") == "released" and net.scheduler.tasks["x"].who_has == {}
    story(net.rec.events,
          (SCHEDULER, "release.applied", "x", "c", 1, ()),
          (SCHEDULER, "transition", "x", "memory", "released"))
    net.handle(releases("c", "y"))
    assert net.scheduler.tasks == {} and net.scheduler.wants["c"] == {}


def test_the_last_release_forgets_the_key_and_frees_its_data():
    """client-releases-keys from the only holder: forgotten, and the worker told to delete
    exactly the copy it holds (its incarnation: the run id that made it)."""
    net = Net()
    computed(net)
    [out] = net.handle(releases("c", "k"))
    assert (out.op, out.receiver, out.payload["incarnations"]) == ("free-keys", "w", {"k": 1})
    assert net.state("k") == "forgotten" and net.scheduler.wants["c"] == {}
    story(net.rec.events,
          (SCHEDULER, "release.applied", "k", "c", 1, ()),
          (SCHEDULER, "transition", "k", "memory", "forgotten"))


def test_who_wants_is_a_set_one_release_undoes_two_desires():
    """dask keeps *which* clients want a key, not how many times: a second desire from the same
    client changes nothing, so its first release empties who_wants.  (Hence the client's own
    refcount: it must send one release, at zero.)"""
    net = Net()
    computed(net)
    out = net.handle(desires("c", "k"))
    assert [m.op for m in out] == ["key-in-memory"]  # the desire is answered at once
    assert net.scheduler.tasks["k"].who_wants == {"c"}
    net.handle(releases("c", "k"))
    assert net.state("k") == "forgotten"


def test_another_clients_hold_keeps_the_key():
    net = Net(clients=("c", "d"))
    computed(net)
    net.handle(desires("d", "k"))
    assert net.scheduler.tasks["k"].who_wants == {"c", "d"}
    assert net.handle(releases("c", "k")) == []  # no free-keys: d still wants it
    assert net.state("k") == "memory" and net.scheduler.tasks["k"].who_wants == {"d"}


def test_cancel_keys_releases_and_tells_every_client():
    """cancel-keys releases the key as a release would, then sends cancelled-keys to *every*
    client the scheduler knows, holding the key or not: the report dask#8215 turns on.  Each
    names the hold it cancels (the generation it had, 0 for a client that held none), which
    only a protocol with generations reads."""
    net = Net(clients=("c", "d"))
    net.handle(update_graph("c", {"k": spec(len, "abc")}))
    net.handle(update_graph("d", {"j": spec(len, "de")}))
    out = net.handle(cancel_keys("c", "k"))
    assert [(m.op, m.receiver, m.keys) for m in out] == [
        ("free-keys", "w", ("k",)),  # it was processing: the worker drops the run
        ("cancelled-keys", "c", ("k",)),
        ("cancelled-keys", "d", ("k",))]
    assert (out[1].payload["gens"], out[2].payload["gens"]) == ({"k": 1}, {"k": 0})
    assert net.state("k") == "forgotten" and net.state("j") == "processing"


def test_cancel_keys_leaves_a_key_another_client_holds():
    """Without ``force`` a client cancels only its own hold: shared keys stay."""
    net = Net(clients=("c", "d"))
    computed(net)
    net.handle(desires("d", "k"))
    out = net.handle(cancel_keys("c", "k"))
    assert [m.op for m in out] == []
    assert net.state("k") == "memory" and net.scheduler.tasks["k"].who_wants == {"c", "d"}
    out = net.handle(cancel_keys("c", "k", force=True))
    assert sorted((m.op, m.receiver) for m in out) == [
        ("cancelled-keys", "c"), ("cancelled-keys", "d"), ("free-keys", "w")]
    assert net.state("k") == "forgotten"


@pytest.mark.parametrize("variant", ["dask", "fixed"])
def test_a_result_from_an_earlier_run_is_stale(variant):
    """``k`` released and submitted again is run id 2; the first run's task-finished (run id 1)
    must not put it in memory.  dask releases the task and sends it again (run id 3); with
    incarnations the worker is told to drop exactly that stale copy, and run 2 goes on."""
    net = Net(variant)
    net.handle(update_graph("c", {"k": spec(len, "abc")}))
    net.handle(releases("c", "k"))
    net.handle(update_graph("c", {"k": spec(len, "abc")}, gens={"k": 2}))
    assert net.scheduler.tasks["k"].run_id == 2
    net.pool.clear()
    out = net.handle(task_finished("w", "k", 1))
    assert net.rec.of("task.stale_run") == [
        {"actor": SCHEDULER, "key": "k", "worker": "w", "run_id": 1, "current_run_id": 2}]
    ts = net.scheduler.tasks["k"]
    assert ts.state == "processing" and ts.who_has == {}
    if variant == "dask":
        assert [(m.op, m.payload.get("incarnations") or m.payload["incarnation"]) for m in out] == [
            ("free-keys", {"k": 2}), ("compute-task", 3)]
    else:
        assert [(m.op, m.payload["incarnations"]) for m in out] == [("free-keys", {"k": 1})]
        assert ts.run_id == 2


def test_a_result_nobody_wants_is_freed():
    """task-finished for a key the scheduler has forgotten: the worker is told to drop it."""
    net = Net()
    [out] = net.handle(task_finished("w", "gone", 7))
    assert (out.op, out.receiver, out.payload["incarnations"]) == ("free-keys", "w", {"gone": 7})


@pytest.mark.parametrize("variant", ["dask", "dask-2024.8.1", "fixed"])
def test_a_desire_for_an_unknown_key(variant):
    """client-desires-keys for a key the scheduler never had (or forgot).  Today's dask warns
    and does nothing; up to 2024.8.1 it made a task for it — released, with no run spec: a
    ghost (PR 8827 removed that); ``fixed`` also tells the client its future is cancelled."""
    net = Net(variant)
    out = net.handle(desires("c", "x", task="g"))
    if variant == "dask-2024.8.1":
        ts = net.scheduler.tasks["x"]
        assert (ts.state, ts.run_spec, ts.who_wants) == ("released", None, {"c"})
        assert net.rec.of("desire.applied")[0]["created_task"] is True
        assert net.rec.of("desire.unknown") == [] and out == []
        return
    assert "x" not in net.scheduler.tasks
    assert net.rec.of("desire.unknown") == [
        {"actor": SCHEDULER, "key": "x", "client": "c", "task": "g"}]
    if variant == "dask":
        assert out == []  # the future just dangles: nobody tells the client
    else:
        [report] = out
        assert (report.op, report.receiver, report.payload["gens"]) == ("cancelled-keys", "c",
                                                                          {"x": 1})


@pytest.mark.parametrize("variant", ["dask", "fixed"])
def test_scatter_is_registered_after_the_put(variant):
    """A scatter RPC becomes an update-data RPC to a worker; the key is in memory only when the
    put is answered (dask's ``update_data``, no transition).  dask adds the client's desire
    then, after reporting to who already wanted the key (nobody yet), and its
    ``client_desires_keys`` reports the key to the client (``report_on_key``); ``fixed`` adds
    the desire at the request, so a release overtaking the put can be seen as stale.  Both
    tell the client by key-in-memory before the scatter-reply."""
    net = Net(variant)
    c = net.clients["c"]
    [scatter] = net.send(user_scatter(c, "x", 123))
    [put] = net.deliver("scatter")
    assert (put.op, put.receiver, put.batched, put.payload["incarnations"]) == (
        "update-data", "w", False, {"x": 1})
    assert "x" not in net.scheduler.tasks  # not registered yet
    wants = net.scheduler.wants.get("c", {})
    assert wants == ({} if variant == "dask" else {"x": 1})
    net.deliver("update-data")
    out = net.deliver("update-data-reply")
    assert [(m.op, m.receiver, m.channel) for m in out] == [
        ("key-in-memory", "c", "scheduler->c"), ("scatter-reply", "c", scatter.channel)]
    ts = net.scheduler.tasks["x"]
    assert (ts.state, ts.who_has, ts.who_wants) == ("memory", {"w": 1}, {"c"})
    assert not any(e[1] == "transition" for e in net.rec.events)
