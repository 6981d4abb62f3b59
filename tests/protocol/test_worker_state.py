"""The worker alone: compute-task, free-keys and update-data in; execute, task-finished,
release-worker-data and update-data-reply out.

``execute`` is the worker's message to itself (a thread takes the task).  ``WorkerState``
does not handle it: the driver calls ``begin`` and ``finish`` (``net.start`` / ``net.finish``
here; ``net.deliver("execute")`` does both).
"""

from __future__ import annotations

import pytest
from sansio import Net, compute_task, free_keys, story, update_data


def test_compute_task_takes_a_thread():
    """A task with no dependencies is ready at once and, a thread being free, executing: the
    worker sends itself ``execute`` on a channel of its own (not the scheduler's stream)."""
    net = Net()
    w = net.workers["w"]
    [out] = net.handle(compute_task("w", "k", 1, len, "abc"))
    assert (out.op, out.sender, out.receiver, out.batched) == ("execute", "w", "w", False)
    assert w.tasks["k"].state == "executing" and w.executing == {"k"}
    [done] = net.deliver("execute")
    assert (done.op, done.receiver, done.channel) == ("task-finished", "scheduler", "w->scheduler")
    assert done.payload["worker"] == "w" and done.payload["incarnation"] == 1
    assert w.data == {"k": 3} and w.tasks == {} and w.executing == set()
    assert net.rec.events == [("w", "worker.put", "k", 1, ())]


def test_a_second_task_waits_for_the_thread():
    """One thread: the second compute-task queues (no execute) until the first run ends."""
    net = Net()
    w = net.workers["w"]
    net.handle(compute_task("w", "k", 1, len, "abc"))
    assert net.handle(compute_task("w", "j", 2, len, "de")) == []
    assert w.tasks["j"].state == "ready" and list(w.ready) == ["j"]
    out = net.deliver("execute", key="k")
    assert [(m.op, m.keys) for m in out] == [("task-finished", ("k",)), ("execute", ("j",))]


def test_free_keys_while_executing_cancels_and_drops_the_result():
    """A thread cannot be stopped: free-keys turns the running task ``cancelled``; when the run
    ends its result is dropped, and nothing is reported."""
    net = Net()
    w = net.workers["w"]
    net.handle(compute_task("w", "k", 1, len, "abc"))
    net.start("w", "k")
    assert net.handle(free_keys("w", {"k": 1})) == []
    assert w.tasks["k"].state == "cancelled"
    assert net.finish("w", "k") == []
    assert w.data == {} and w.tasks == {} and w.executing == set()
    story(net.rec.events,
          ("w", "worker.transition", "k", "executing", "cancelled"),
          ("w", "worker.transition", "k", "cancelled", "released"),
          ("w", "worker.transition", "k", "released", "forgotten"))


def test_compute_task_again_resumes_the_cancelled_run():
    """dask's cancelled -> executing: the run still going serves the new request, under its
    run id.  No second execute; the result is reported as run 2."""
    net = Net()
    w = net.workers["w"]
    net.handle(compute_task("w", "k", 1, len, "abc"))
    net.start("w", "k")
    net.handle(free_keys("w", {"k": 1}))
    assert net.handle(compute_task("w", "k", 2, len, "abc")) == []
    assert w.tasks["k"].state == "executing"
    [done] = net.finish("w", "k")
    assert (done.op, done.payload["incarnation"]) == ("task-finished", 2)
    assert w.copies == {"k": {2: 3}}
    story(net.rec.events,
          ("w", "worker.transition", "k", "executing", "cancelled"),
          ("w", "worker.transition", "k", "cancelled", "executing"),
          ("w", "worker.put", "k", 2))


def test_free_keys_on_a_queued_task_forgets_it():
    """A task still waiting for a thread is simply dropped: it never runs."""
    net = Net()
    w = net.workers["w"]
    net.handle(compute_task("w", "k", 1, len, "abc"))
    net.handle(compute_task("w", "j", 2, len, "de"))
    assert net.handle(free_keys("w", {"j": 2})) == []
    assert "j" not in w.tasks and list(w.ready) == []
    assert [m.op for m in net.deliver("execute", key="k")] == ["task-finished"]  # no execute of j


@pytest.mark.parametrize("variant", ["dask", "fixed"])
def test_update_data_puts_a_copy(variant):
    """The put of a scatter: stored as the incarnation the scheduler named, answered on the
    RPC's own channel.  A second put of the key overwrites the one slot under dask; with
    incarnations both copies are kept, and the newer is the key's value."""
    net = Net(variant)
    w = net.workers["w"]
    put = update_data("w", {"x": 123}, {"x": 1})
    [reply] = net.handle(put)
    assert (reply.op, reply.receiver, reply.channel, reply.batched) == (
        "update-data-reply", "scheduler", put.channel, False)
    assert reply.payload["incarnations"] == {"x": 1}
    net.handle(update_data("w", {"x": 456}, {"x": 2}))
    assert w.data == {"x": 456}
    assert w.copies == ({"x": {2: 456}} if variant == "dask" else {"x": {1: 123, 2: 456}})
    replaced = (1,) if variant == "dask" else ()
    story(net.rec.events,
          ("w", "scatter.worker_put", "x", 1), ("w", "worker.put", "x", 1, ()),
          ("w", "scatter.worker_put", "x", 2), ("w", "worker.put", "x", 2, replaced))


@pytest.mark.parametrize("variant", ["dask", "fixed"])
def test_free_keys_deletes_the_copy_it_names(variant):
    """free-keys for copy 1 after copy 2 was put: with incarnations, copy 2 stays; under dask
    the key has one slot and the free deletes the new data (#8576 form B's last step)."""
    net = Net(variant)
    w = net.workers["w"]
    net.handle(update_data("w", {"x": 123}, {"x": 1}))
    net.handle(update_data("w", {"x": 456}, {"x": 2}))
    out = net.handle(free_keys("w", {"x": 1}))
    released = [(m.op, m.payload["incarnation"]) for m in out]
    if variant == "dask":
        assert released == [("release-worker-data", 2)]  # copy 2 is what the slot held
        assert w.data == {}
    else:
        assert released == [("release-worker-data", 1)]
        assert w.data == {"x": 456} and w.copies == {"x": {2: 456}}


def test_free_keys_for_a_copy_not_held_is_ignored():
    """With incarnations, a free naming a copy the worker no longer has deletes nothing."""
    net = Net("fixed")
    w = net.workers["w"]
    net.handle(update_data("w", {"x": 456}, {"x": 2}))
    assert net.handle(free_keys("w", {"x": 1})) == []
    assert w.data == {"x": 456}
    assert net.rec.of("worker.free_stale") == [
        {"actor": "w", "key": "x", "incarnation": 1, "held_incarnation": 2}]
