"""dask's races as message lists across the three state machines.

Each test sets up with every message delivered oldest first (``net.settle()``), then does what
the user does and delivers the messages in the order written in the test: the order that
exposes the race.  Under ``dask`` (or the release named) the race happens; under ``fixed``
the same list loses nothing.  A stream is FIFO, so every list here can happen on a network.
"""

from __future__ import annotations

import pytest
from sansio import Net, story, user_scatter, user_submit

from jupyter_refs.protocol.messages import SCHEDULER as S
from jupyter_refs.protocol.serialize import Dep, FutureRef

# -- #8576: scatter, drop, scatter the same value --------------------------------------------

#: Form A: the second scatter's RPC completes, then the release sent before it lands.
FORM_A = ("scatter", "update-data", "update-data-reply", "scatter-reply", "client-releases-keys")
#: Form B: the release lands inside the RPC, between the worker's put and the registration.
FORM_B = ("scatter", "update-data", "client-releases-keys", "update-data-reply")


def rescatter(variant: str, order: tuple[str, ...]) -> tuple[Net, list[tuple]]:
    """``x = scatter(123)`` (settled); ``del x``; ``x = scatter(123)`` — the same value, so the
    same key.  The drop's release rides the batched stream; the scatter is an RPC, which can
    overtake it.  Returns the net, settled after ``order``, and the events from the drop on."""
    net = Net(variant)
    c = net.clients["c"]
    net.send(user_scatter(c, "x", 123))
    net.settle()
    start = net.rec.mark()
    net.send(c.release("x"))
    net.send(user_scatter(c, "x", 123))
    assert net.ops() == ["client-releases-keys>scheduler", "scatter>scheduler"]
    net.play(*order)
    net.settle()
    return net, net.rec.events[start:]


def test_8576_form_a_forgets_a_key_the_client_holds():
    """The late release is applied to the new hold: who_wants is a set, and the release says
    nothing about *which* hold it ends.  The client keeps a finished future; the scheduler
    has forgotten the key and the worker deleted its data."""
    net, events = rescatter("dask", FORM_A)
    story(events,
          ("w", "worker.put", "x", 2, (1,)),  # one slot: the new put replaces copy 1
          (S, "scatter.registered", "x", ("w",), ("c",)),
          ("c", "future.state", "x", "pending", "finished"),
          (S, "release.applied", "x", "c", 1, ()),
          (S, "transition", "x", "memory", "forgotten"),
          ("w", "worker.free", "x", 2))
    assert net.future("c", "x").state == "finished" and net.clients["c"].refcount == {"x": 1}
    assert net.state("x") == "forgotten" and net.workers["w"].data == {}
    assert net.dangling() == [("c", "x")]


def test_8576_form_b_frees_the_data_just_put():
    """The release forgets the old key and frees it on the worker; the registration then makes
    the key anew, but the free deletes the one slot — the new put's data.  The worker reports
    it gone, and the future the user holds ends up cancelled."""
    net, events = rescatter("dask", FORM_B)
    story(events,
          ("w", "worker.put", "x", 2, (1,)),
          (S, "release.applied", "x", "c", 1, ()),
          (S, "transition", "x", "memory", "forgotten"),
          (S, "scatter.registered", "x", ("w",), ()),
          ("w", "worker.free", "x", 2),
          (S, "who_has.removed", "x", "w", ()),
          ("c", "future.state", "x", "finished", "lost"),
          ("c", "future.state", "x", "lost", "cancelled"))
    assert net.future("c", "x").state == "cancelled" and net.clients["c"].refcount == {"x": 1}
    assert net.state("x") == "forgotten" and net.workers["w"].data == {}


@pytest.mark.parametrize("order", [FORM_A, FORM_B], ids=["A", "B"])
def test_8576_fixed_loses_nothing(order):
    """Generations: the late release names hold 1, the scheduler knows hold 2, so it is stale.
    Incarnations: the only copy freed is copy 1, which the new put superseded."""
    net, events = rescatter("fixed", order)
    assert (S, "release.stale", "x", "c", 1, 2) in events
    assert net.rec.of("release.applied") == []
    assert [e["incarnation"] for e in net.rec.of("worker.free")] == [1]
    assert net.future("c", "x").state == "finished"
    ts = net.scheduler.tasks["x"]
    assert (ts.state, ts.who_has, ts.who_wants) == ("memory", {"w": 2}, {"c"})
    assert net.workers["w"].data == {"x": 123}
    assert net.dangling() == []


# -- the ghost task (dask#7498, fixed by PR 8827 in 2024.8.2) ---------------------------------

#: ``g = submit(keep, Box([x])); del x``: the task runs (its future is deserialized on the
#: worker), then the owner's release lands before the worker client's desire.
GHOST = ("update-graph", "compute-task", "execute", "client-releases-keys")


def future_in_a_task(variant: str) -> Net:
    net = Net(variant)
    c = net.clients["c"]
    net.send(user_scatter(c, "x", 41))
    net.settle()
    net.send(user_submit(c, "g", list, [FutureRef("x")]))  # x travels pickled, not as a dep
    net.send(c.release("x"))
    net.play(*GHOST)
    return net


def test_ghost_task_under_2024_8_1():
    """Up to 2024.8.1 the deserialized future claims its key (client-desires-keys from the
    worker's client).  Arriving after the key was forgotten, the claim creates a task with no
    run spec.  The next transition to reach it fails dask's assertion, and the scheduler drops
    the connection of the client whose message got there: every future of it is cancelled."""
    net = future_in_a_task("dask-2024.8.1")
    net.deliver("client-desires-keys")
    ts = net.scheduler.tasks["x"]
    assert (ts.state, ts.run_spec, ts.who_wants) == ("released", None, {"client:w"})
    story(net.rec.events,
          ("client:w", "future.created", "x", 1, "deserialize", 1),
          (S, "release.applied", "x", "c", 1, ()),
          (S, "transition", "x", "memory", "forgotten"),
          (S, "desire.applied", "x", "client:w", 1, ("client:w",), True))
    net.settle()
    c = net.clients["c"]
    g = c.futures["g"]
    assert g.state == "finished"
    # g's result brings x back to c (it holds x again), and c computes on it.
    net.send(c.adopt("x", None)[1])
    net.send(user_submit(c, "y", abs, Dep("x"), deps=["x"]))
    start = net.rec.mark()
    net.settle()
    story(net.rec.events[start:],
          (S, "transition", "x", "released", "waiting"),
          (S, "scheduler.assertion", "x"),
          (S, "client.removed", None, "c"),
          ("c", "connection.lost"))
    assert (g.state, g.reason) == ("cancelled", "scheduler-connection-lost")
    assert c.futures == {}


@pytest.mark.parametrize("variant", ["dask-2024.8.2", "fixed"])
def test_no_ghost_since_pr_8827(variant):
    """Since 2024.8.2 the future arrives unbound: it holds nothing and tells nobody."""
    net = future_in_a_task(variant)
    assert not any(m.op == "client-desires-keys" for m in net.pool)
    assert net.rec.of("future.created", "x")[-1]["origin"] == "borrowed"
    net.settle()
    assert "x" not in net.scheduler.tasks
    assert net.future("c", "g").state == "finished"
    assert net.rec.of("scheduler.assertion") == []


# -- dask#8215: cancel, then the same key again ----------------------------------------------

#: In order: the cancel and the new submit ride the stream behind the first submit; the
#: scheduler's cancelled-keys reaches the client after it made the new future.  The worker
#: hears of the cancel while the first run is under way, and the second request resumes it.
ORDER_8215 = ("update-graph", "compute-task", "cancel-keys", "update-graph", "free-keys",
              "compute-task", "cancelled-keys", "execute", "task-finished", "key-in-memory")


def cancel_then_same_key(variant: str) -> tuple[Net, object]:
    """``f = submit(abs, -1, key="k"); cancel(f); g = submit(abs, -1, key="k")``."""
    net = Net(variant)
    c = net.clients["c"]
    net.send(user_submit(c, "k", abs, -1))
    net.send(c.cancel(["k"], force=False, reason=None, msg=None))
    net.send(user_submit(c, "k", abs, -1))
    g = c.futures["k"]
    assert g.gen == 2
    net.play(*ORDER_8215)
    assert net.pool == []
    story(net.rec.events,
          ("w", "worker.transition", "k", "executing", "cancelled"),
          ("w", "worker.transition", "k", "cancelled", "executing"),
          ("w", "worker.put", "k", 2))  # one run serves both requests
    assert net.state("k") == "memory" and net.workers["w"].data == {"k": 1}
    return net, g


def test_8215_the_late_cancelled_keys_cancels_the_new_future():
    """cancelled-keys names no hold: the client applies it to the future it has now — g,
    which nobody cancelled.  The key is computed and kept for c, and g says cancelled."""
    net, g = cancel_then_same_key("dask")
    report = [e for e in net.rec.of("future.state", "k") if e["cause_msg_id"] is not None]
    assert [(e["from"], e["to"]) for e in report] == [("pending", "cancelled")]
    assert g.state == "cancelled" and net.scheduler.tasks["k"].who_wants == {"c"}


def test_8215_fixed_ignores_the_stale_report():
    net, g = cancel_then_same_key("fixed")
    assert net.rec.of("report.stale") == [
        {"actor": "c", "key": "k", "op": "cancelled-keys", "gen": 1, "current_gen": 2}]
    assert g.state == "finished" and net.dangling() == []


# -- found while writing these ----------------------------------------------------------------

@pytest.mark.parametrize("variant", ["dask", "fixed"])
def test_a_force_cancel_reaches_every_holder(variant):
    """d cancels k with ``force``: the scheduler releases c's hold too and forgets k, so c
    must be told its future is cancelled, or c holds a future for a key that is gone.  (Under
    fixed the report once carried no generation, so c took it for one about an older hold.)"""
    net = Net(variant, clients=("c", "d"))
    net.send(user_submit(net.clients["c"], "k", abs, -1))
    net.settle()
    net.send(net.clients["d"].cancel(["k"], force=True, reason=None, msg=None))
    net.settle()
    assert net.state("k") == "forgotten"
    assert net.future("c", "k").state == "cancelled"
    assert net.dangling() == []
