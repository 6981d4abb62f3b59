"""Race #8576, both variants, forced by hand on a manual network.

The same delivery schedule is applied to both protocols: legacy must lose the
future in exactly dask's way, fixed must not.
"""

from __future__ import annotations

import pytest
from helpers import SCHEDULE_A, SCHEDULE_B, in_order, inc, rescatter, summary

from jupyter_refs import FutureCancelledError

# Both variants begin alike: the drop queues a release, the re-scatter's RPC reaches the worker.
DROP_THEN_SCATTER = [
    "client:1 refcount.dec 1->0",
    "client:1 msg.sent client-releases-keys",
    "client:1 future.created",
    "client:1 refcount.inc 0->1",
    "client:1 scatter.begin",
    "client:1 msg.sent scatter",
    "scheduler msg.received scatter",
    "scheduler msg.sent update-data",
    "worker:0 msg.received update-data",
    "worker:0 scatter.worker_put",
    "worker:0 worker.put",
    "worker:0 msg.sent update-data-reply",
]


def run(make, protocol, schedule):
    cluster, client, y, start = rescatter(protocol, schedule, make(protocol))
    events = [e for e in cluster.trace.events(since=start) if e.kind != "network.drained"]
    return cluster, client, y, events


def test_variant_a_legacy_order(manual_cluster):
    cluster, client, y, events = run(manual_cluster, "legacy", SCHEDULE_A)
    in_order([summary(e) for e in events], [
        *DROP_THEN_SCATTER,
        "scheduler msg.received update-data-reply",
        "scheduler scatter.registered",
        "scheduler desire.applied",
        "scheduler msg.sent key-in-memory",
        "scheduler msg.sent scatter-reply",
        "client:1 msg.received scatter-reply",
        "client:1 future.state pending->finished",
        "scheduler msg.received client-releases-keys",
        "scheduler release.applied",
        "scheduler transition memory->forgotten",
        "scheduler msg.sent free-keys",
        "checks violation dangling_future",
        "client:1 msg.received key-in-memory",
        "worker:0 msg.received free-keys",
        "worker:0 worker.free",
        "worker:0 msg.sent release-worker-data",
        "scheduler msg.received release-worker-data",
        "checks violation refcount_mismatch",
    ])
    # The release was sent before the second scatter but received after it.
    sent = {e.op: e.seq for e in events if e.kind == "msg.sent"}
    received = {e.op: e.seq for e in events if e.kind == "msg.received"}
    assert sent["client-releases-keys"] < sent["scatter"]
    assert received["client-releases-keys"] > received["scatter"]
    # The client holds a finished future to a key the scheduler forgot.
    assert y.status == "finished" and client.refcount(y.key) == 1
    assert cluster.scheduler_state(y.key) == "forgotten"
    assert [v.name for v in cluster.violations] == ["dangling_future", "refcount_mismatch"]
    dangling = cluster.violations[0]
    assert dangling.name == "dangling_future" and dangling.key == y.key
    assert cluster.trace[dangling.first_seq].kind == "release.applied"
    assert "overtook" in dangling.explanation or "arrived first" in dangling.explanation
    # The next graph on it is cancelled as lost data.
    f = client.submit(inc, y)
    cluster.run_until_idle()
    with pytest.raises(FutureCancelledError, match="lost dependencies"):
        f.result()


def test_variant_b_legacy_order(manual_cluster):
    cluster, client, y, events = run(manual_cluster, "legacy", SCHEDULE_B)
    in_order([summary(e) for e in events], [
        *DROP_THEN_SCATTER,
        "scheduler msg.received client-releases-keys",
        "scheduler release.applied",
        "scheduler transition memory->forgotten",
        "scheduler msg.sent free-keys",
        "scheduler msg.received update-data-reply",
        "scheduler scatter.registered",
        "scheduler desire.applied",
        "scheduler msg.sent scatter-reply",
        "worker:0 msg.received free-keys",
        "worker:0 worker.free",
        "worker:0 msg.sent release-worker-data",
        "client:1 msg.received scatter-reply",
        "client:1 future.state pending->finished",
        "scheduler msg.received release-worker-data",
        "scheduler who_has.removed",
        "scheduler transition memory->released",
        "scheduler transition released->forgotten",
        "scheduler msg.sent lost-data",
        "scheduler msg.sent cancelled-keys",
        "client:1 msg.received lost-data",
        "client:1 future.state finished->lost",
        "client:1 msg.received cancelled-keys",
        "client:1 future.state lost->cancelled",
        # The checks see the step's events when the call returns; each names its first event.
        "checks violation dangling_future",
        "checks violation refcount_mismatch",
    ])
    kinds = [e.kind for e in events]
    # release.applied falls between the worker put and the registration ...
    assert kinds.index("scatter.worker_put") < kinds.index("release.applied") < kinds.index(
        "scatter.registered")
    # ... and the worker then frees the fresh data.
    assert kinds.index("worker.put") < kinds.index("worker.free")
    assert y.status == "cancelled" and client.refcount(y.key) == 1
    with pytest.raises(FutureCancelledError):
        y.result()
    assert [v.name for v in cluster.violations] == ["dangling_future", "refcount_mismatch"]
    broken = cluster.trace[cluster.violations[0].first_seq]
    assert (broken.kind, broken.get("finish")) == ("transition", "forgotten")


@pytest.mark.parametrize("schedule", [SCHEDULE_A, SCHEDULE_B], ids=["A", "B"])
def test_fixed_protocol_survives_the_same_schedule(manual_cluster, schedule):
    cluster, client, y, events = run(manual_cluster, "fixed", schedule)
    kinds = [e.kind for e in events]
    assert "release.stale" in kinds  # the late release is recognised and dropped
    assert "release.applied" not in kinds
    # The only copy ever freed is the one the re-scatter superseded on the same worker.
    registered = cluster.scheduler.tasks[y.key].who_has["worker:0"]
    assert all(e.get("incarnation") != registered for e in events if e.kind == "worker.free")
    assert cluster.violations == []
    assert y.status == "finished" and cluster.scheduler_state(y.key) == "memory"
    assert cluster.workers["worker:0"].data[y.key] == 123
    f = client.submit(inc, y)
    cluster.run_until_idle()
    assert f.status == "finished" and cluster.workers["worker:0"].data[f.key] == 124


def test_fixed_protocol_still_releases(manual_cluster):
    """Stale releases are ignored, current ones are not: nothing leaks."""
    cluster = manual_cluster("fixed")
    client = cluster.client()
    x = client.scatter(123)
    cluster.run_until_idle()
    key = x.key
    del x
    cluster.run_until_idle()
    assert cluster.scheduler_state(key) == "forgotten"
    assert cluster.workers["worker:0"].data == {}
    assert cluster.violations == []
