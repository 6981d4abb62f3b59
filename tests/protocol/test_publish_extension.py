"""The publish extension alone: dask's ``publish_*`` RPCs and the stream marker they wait for.

PR 8577 (2024.4.2) made the put wait for the client's stream; PR 9217 (2026.6.0) made the delete
wait too.  Before it, a delete sent just after a get overtook the get's ``client-desires-keys``.
"""

from __future__ import annotations

from sansio import Net, desires, releases, spec, stream, task_finished, update_graph

from jupyter_refs.protocol import messages as m
from jupyter_refs.protocol.messages import SCHEDULER, Message


def rpc(op: str, client: str = "c", **payload) -> Message:
    return Message(client, SCHEDULER, op, f"rpc:{client}#{op}", False, (),
                   {"client": client, **payload})


def marker(uid: str, client: str = "c") -> Message:
    return stream(client, SCHEDULER, m.PUBLISH_FLUSH, (), client=client, uid=uid)


def computed(net: Net, key: str = "k") -> None:
    net.handle(update_graph("c", {key: spec(len, "abc")}))
    net.handle(task_finished("w", key, net.scheduler.tasks[key].run_id))
    net.pool.clear()


def published(net: Net, key: str = "k", name: str = "ds") -> None:
    """``key`` computed for ``c``, published as ``name``, then dropped by ``c``."""
    computed(net, key)
    net.handle(marker("u0"))
    net.handle(rpc(m.PUBLISH_PUT, names=[name], holds=[(key,)], data=[b"blob"], override=False,
                   uid="u0"))
    net.handle(releases("c", key))
    net.pool.clear()
    assert net.scheduler.tasks[key].who_wants == {f"published-{name}"}


def test_a_put_waits_for_its_marker_then_desires_for_the_dataset():
    net = Net()
    computed(net)
    put = net.handle(rpc(m.PUBLISH_PUT, names=["ds"], holds=[("k",)], data=[b"blob"],
                         override=False, uid="u1"))
    assert put == [] and net.scheduler.tasks["k"].who_wants == {"c"}  # parked
    # The dataset's desire of a key in memory is reported to every holder (dask's
    # report_on_key): c hears key-in-memory again, then the put is answered.
    told, reply = net.handle(marker("u1"))
    assert (told.op, told.receiver, reply.op, reply.payload) == (
        m.KEY_IN_MEMORY, "c", m.QUERY_REPLY, {})
    assert net.scheduler.tasks["k"].who_wants == {"c", "published-ds"}
    [reply] = net.handle(rpc(m.PUBLISH_GET, names=["ds", "nope"]))
    assert reply.payload["datasets"] == [{"data": b"blob", "keys": ("k",)}, None]


def test_since_9217_a_delete_waits_for_the_readers_desire():
    """The reader's desire is on its stream before the marker: the delete finds it applied."""
    net = Net("dask-2026.6.0")
    published(net)
    net.send([desires("c", "k", gen=2), marker("u2")])
    assert net.handle(rpc(m.PUBLISH_DELETE, names=["ds"], uid="u2")) == []  # parked
    net.settle()
    assert net.state("k") == "memory" and net.scheduler.tasks["k"].who_wants == {"c"}


def test_before_9217_a_delete_overtakes_the_readers_desire():
    net = Net("dask-2026.3.0")
    published(net)
    net.send([desires("c", "k", gen=2)])
    net.handle(rpc(m.PUBLISH_DELETE, names=["ds"]))  # no marker: applied at once
    assert "k" not in net.scheduler.tasks
    net.settle()
    assert "k" not in net.scheduler.tasks
    assert [e["client"] for e in net.rec.of("desire.unknown", "k")] == ["c"]


def test_override_releases_the_old_keys_since_9217_and_kept_them_before():
    for variant, kept in (("dask-2026.3.0", True), ("dask", False)):
        net = Net(variant)
        published(net)
        computed(net, "k2")
        net.handle(rpc(m.PUBLISH_PUT, names=["ds"], holds=[("k2",)], data=[b"new"],
                       override=True))
        assert ("published-ds" in net.scheduler.tasks["k"].who_wants
                if kept else "k" not in net.scheduler.tasks), variant


def test_a_put_on_an_existing_name_without_override_is_refused():
    net = Net()
    published(net)
    [reply] = net.handle(rpc(m.PUBLISH_PUT, names=["ds"], holds=[()], data=[b"x"],
                             override=False))
    assert reply.payload == {"error": "KeyError", "text": "Dataset ds already exists"}


def test_fixed_holds_a_gets_keys_until_the_reader_confirms():
    """``fixed`` (``get_desires``): another client's unpublish between the get and the reader's
    desire finds the keys held for the get; the confirm, behind the desire, lets that hold go."""
    net = Net("fixed", clients=("c", "r"))
    published(net)
    [reply] = net.handle(rpc(m.PUBLISH_GET, client="r", names=["ds"]))
    token = reply.payload["token"]
    assert net.scheduler.tasks["k"].who_wants == {"published-ds", token}
    net.handle(rpc(m.PUBLISH_DELETE, names=["ds"], uid=None))
    assert net.scheduler.tasks["k"].who_wants == {token}  # not forgotten
    net.handle(desires("r", "k", gen=1))
    net.handle(stream("r", SCHEDULER, m.PUBLISH_GET_CONFIRM, (), client="r", token=token))
    assert net.state("k") == "memory" and net.scheduler.tasks["k"].who_wants == {"r"}


def test_dask_hands_a_get_over_with_no_hold():
    net = Net("dask", clients=("c", "r"))
    published(net)
    [reply] = net.handle(rpc(m.PUBLISH_GET, client="r", names=["ds"]))
    assert "token" not in reply.payload
    assert net.scheduler.tasks["k"].who_wants == {"published-ds"}
