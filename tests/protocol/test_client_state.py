"""The client alone: user actions return the messages to send; reports change what it believes.

A client counts references per key (every ``Future`` object adds one) and numbers each *hold*
of a key: the count going 0 -> 1 starts a new generation.  Under ``fixed`` the reports name
the generation they are about; under ``dask`` they name none and always apply.
"""

from __future__ import annotations

import pytest
from sansio import Net, report, story, user_scatter, user_submit

from jupyter_refs.protocol.client import ClientState
from jupyter_refs.protocol.messages import SCHEDULER, Message


def client(variant: str = "dask") -> tuple[Net, ClientState]:
    net = Net(variant)
    return net, net.clients["c"]


def test_refcount_counts_futures_and_releases_at_zero():
    """Two futures for one key: one hold.  Dropping one sends nothing; dropping the last sends
    client-releases-keys on the batched stream, naming the hold, and forgets the key."""
    net, c = client()
    fs, new, _ = c.acquire("k", "submit")
    assert new and fs.gen == 1 and c.refcount == {"k": 1}
    again, new, _ = c.acquire("k", "submit")
    assert again is fs and not new and c.refcount == {"k": 2}
    assert c.release("k") == [] and c.refcount == {"k": 1}
    [msg] = c.release("k")
    assert (msg.op, msg.channel, msg.batched) == ("client-releases-keys", "c->scheduler", True)
    assert msg.payload == {"client": "c", "gens": {"k": 1}}
    assert c.refcount == {} and c.futures == {}
    assert fs.state == "cancelled"  # a Future object still around says so
    assert c.release("k") == []  # nothing more to release
    story(net.rec.events,
          ("c", "refcount.inc", "k", 0, 1), ("c", "refcount.inc", "k", 1, 2),
          ("c", "refcount.dec", "k", 2, 1), ("c", "refcount.dec", "k", 1, 0))


def test_a_new_hold_is_a_new_generation():
    _, c = client()
    c.acquire("k", "scatter")
    c.release("k")
    fs, new, _ = c.acquire("k", "scatter")
    assert new and fs.gen == 2 and fs.state == "pending"
    [msg] = c.release("k")
    assert msg.payload["gens"] == {"k": 2}


def test_submit_and_scatter_messages():
    """update-graph rides the batched stream, with the holds' generations; a scatter is an RPC
    (its own channel) and the future stays pending until its reply, whatever came before."""
    net, c = client()
    [graph] = user_submit(c, "k", len, "abc")
    assert (graph.op, graph.batched, graph.keys) == ("update-graph", True, ("k",))
    assert graph.payload["gens"] == {"k": 1} and set(graph.payload["tasks"]) == {"k"}
    [scatter] = user_scatter(c, "x", 123)
    assert (scatter.op, scatter.batched, scatter.channel) == ("scatter", False, "rpc:c#1")
    assert c.futures["x"].scatter_call == "rpc:c#1"
    net.handle(report("key-in-memory", "c", "x", gen=1))
    assert c.futures["x"].state == "pending"  # the RPC's reply finishes a scatter's future
    net.handle(Message(SCHEDULER, "c", "scatter-reply", scatter.channel, False, ("x",), {}))
    assert c.futures["x"].state == "finished" and c.scatters == set()


@pytest.mark.parametrize("variant", ["dask", "fixed"])
def test_a_report_for_an_older_hold(variant):
    """The key was held (generation 1), released, held again (2, pending).  A key-in-memory
    about hold 1 arrives late: dask cannot tell and finishes the new future; ``fixed`` sees
    generation 1 < 2 and ignores it."""
    net, c = client(variant)
    user_submit(c, "k")
    c.release("k")
    user_submit(c, "k")
    net.handle(report("key-in-memory", "c", "k", gen=1))
    if variant == "dask":
        assert c.futures["k"].state == "finished"
    else:
        assert c.futures["k"].state == "pending"
        assert net.rec.of("report.stale") == [
            {"actor": "c", "key": "k", "op": "key-in-memory", "gen": 1, "current_gen": 2}]
    net.handle(report("key-in-memory", "c", "k", gen=2))
    assert c.futures["k"].state == "finished"  # the current hold's report applies everywhere


@pytest.mark.parametrize("variant", ["dask", "fixed"])
def test_cancelled_keys_cancels_the_current_future(variant):
    net, c = client(variant)
    user_submit(c, "k")
    msg = report("cancelled-keys", "c", "k", gen=1, reason="lost dependencies")
    net.handle(msg)
    fs = c.futures["k"]
    assert (fs.state, fs.reason) == ("cancelled", "lost dependencies")
    assert net.rec.of("future.state") == [
        {"actor": "c", "key": "k", "from": "pending", "to": "cancelled",
         "cause_msg_id": msg.msg_id, "reason": "lost dependencies"}]


def test_a_gather_that_finds_no_data_resets_even_a_cancelled_future():
    """dask's ``_gather`` after "Couldn't gather keys, rescheduling": report-key for each
    missing key and ``FutureState.reset()`` — pending again, whatever the state, a future
    cancelled while the gather travelled too.  The scheduler's answer then decides: a
    key-in-memory finishes it (dask#8215's new future survives; found by trace validation,
    distributed 2026.8.0 returning 2 where the model raised)."""
    net, c = client()
    user_submit(c, "k")
    net.handle(report("key-in-memory", "c", "k"))
    net.handle(report("cancelled-keys", "c", "k", reason="unknown"))
    assert c.futures["k"].state == "cancelled"
    [ask] = c.report_key(["k"])
    assert (ask.op, ask.batched, ask.keys) == ("report-key", True, ("k",))
    assert c.futures["k"].state == "pending"
    net.handle(report("key-in-memory", "c", "k"))
    assert c.futures["k"].state == "finished"


def test_cancel_is_immediate_and_keeps_the_refcount():
    """``Client.cancel``: the future is cancelled here at once and the key's state forgotten;
    cancel-keys follows on the stream.  The Future object still counts: the refcount stays."""
    _, c = client()
    fs, _, _ = c.acquire("k", "submit")
    [msg] = c.cancel(["k"], force=False, reason=None, msg=None)
    assert (msg.op, msg.batched, msg.keys) == ("cancel-keys", True, ("k",))
    assert fs.state == "cancelled" and c.futures == {} and c.refcount == {"k": 1}
    again, new, _ = c.acquire("k", "submit")  # the same key submitted again: a new hold
    assert new and again.gen == 2 and c.refcount == {"k": 2}


def test_stream_closed_cancels_every_future():
    """The scheduler dropped the connection (e.g. after a ghost's assertion): every future is
    cancelled, the refcounts stay with their Future objects."""
    net, c = client()
    user_submit(c, "k")
    user_scatter(c, "x", 1)
    net.handle(report("stream-closed", "c", "k", reason="AssertionError"))
    assert c.futures == {} and c.refcount == {"k": 1, "x": 1}
    assert {e["key"]: e["reason"] for e in net.rec.of("future.state")} == {
        "k": "scheduler-connection-lost", "x": "scheduler-connection-lost"}
