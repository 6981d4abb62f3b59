"""An actor's kind is data, not a reading of its name: a client called "alice" is a client."""

from __future__ import annotations

from jupyter_refs import Cluster
from jupyter_refs.network import MS, RandomLatency, batch_interval_ns
from jupyter_refs.protocol.messages import Message


def _release(sender: str, msg_id: int) -> Message:
    msg = Message(sender, "scheduler", "client-releases-keys", f"{sender}->scheduler", True)
    msg.msg_id = msg_id
    return msg


def test_a_named_client_flushes_every_10_ms():
    policy = RandomLatency(0, transit_ns=(0, 0))
    with Cluster(network=policy, workers=["alice-worker"]) as cluster:
        cluster.client("alice")
        assert cluster.kinds["alice"] == "client"
        assert cluster.kinds["alice-worker"] == "worker"
        assert batch_interval_ns(_release("alice", 1), cluster.kinds) == 10 * MS
        # The second message of a stream 3 ms after the first waits for the next batch, 10 ms on.
        policy.on_send(_release("alice", 1), 0)
        policy.on_send(_release("alice", 2), 3 * MS)
        assert (policy.ready[1], policy.ready[2]) == (0, 10 * MS)


def test_the_checks_remember_a_named_clients_scatter():
    """The late-release explanation needs the desire, whatever the client is called."""
    cluster = Cluster(protocol="legacy", network="manual")
    alice = cluster.client("alice")
    x = alice.scatter(123)
    cluster.run_until_idle()
    del x
    y = alice.scatter(123)  # noqa: F841 - held: its loss is the point
    for op in ["scatter", "update-data", "update-data-reply", "scatter-reply", "client-releases-keys"]:
        cluster.deliver(next(m for m in cluster.in_flight if m.op == op).msg_id)
    cluster.run_until_idle()
    [dangling] = [v for v in cluster.violations if v.name == "dangling_future"]
    assert dangling.client == "alice" and "before it scattered" in dangling.explanation
    cluster.close()
