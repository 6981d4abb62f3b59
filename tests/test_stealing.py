"""Work stealing: a task queued behind a busy thread moves to an idle worker, as in dask.

Checked first on distributed 2026.8.0 (``LocalCluster(n_workers=2, threads_per_worker=1,
processes=False)``): ``get_client().map(inc, [1, 2, 3])`` then ``gather`` inside a task
takes a second (the stealing interval) and the scheduler's ``stealing`` log shows the move;
tasks restricted with ``workers=`` stay queued, with ``allow_other_workers=True`` they move.
The conformance programs ``nested_get_client_map``, ``opts_allow_other_workers_stolen`` and
``opts_workers_not_stolen`` compare those runs with dask's; here are the model's steps.
"""

from __future__ import annotations

import pytest
from helpers import deliver_op, inc

from jupyter_refs import Cluster, explore, replay
from jupyter_refs.explore import _run, fingerprint
from jupyter_refs.protocol.messages import BALANCE, STEAL_REQUEST
from jupyter_refs.worker_context import get_client


def gather_own_map(xs):
    """Waits for sub-tasks without seceding: it holds its worker's thread meanwhile."""
    client = get_client()
    return client.gather(client.map(inc, xs))


def steals(cluster: Cluster) -> list[tuple]:
    return [(e.kind, e.key.split("-")[0], *e.data[:2]) for e in cluster.trace.events()
            if e.kind.startswith("steal.")]


def compute_targets(cluster: Cluster, key: str) -> list[str]:
    """The workers sent a compute-task for ``key``, in order."""
    return [e.channel.split("->")[1] for e in cluster.trace.events()
            if e.kind == "msg.sent" and e.op == "compute-task" and e.key == key]


@pytest.mark.parametrize("network", ["immediate", "random", "live"])
def test_a_sub_task_queued_behind_its_waiting_parent_is_stolen(network):
    with Cluster(protocol="dask", workers=2, network=network, seed=3) as cluster:
        client = cluster.client()
        assert client.submit(gather_own_map, [1, 2, 3]).result(timeout=10) == [2, 3, 4]
        story = steals(cluster)
        assert ("steal.request", "inc", "worker:0", "worker:1") in story
        assert ("steal.outcome", "inc", "confirm", "ready") in story
        stolen = next(e.key for e in cluster.trace.events() if e.kind == "steal.outcome")
        # Sent to the victim first, then to the thief under a new run id.
        assert compute_targets(cluster, stolen) == ["worker:0", "worker:1"]
        assert cluster.violations == []


def queued_behind(cluster: Cluster, **options):
    """worker:0 runs ``a``, ``b`` queues behind it; worker:1 has nothing: a balance is due."""
    client = cluster.client()
    a = client.submit(inc, 1, workers=["worker:0"], pure=False)
    b = client.submit(inc, 2, workers=["worker:0"], pure=False, **options)
    for op in ("update-graph", "update-graph", "compute-task", "compute-task"):
        deliver_op(cluster, op)
    return a, b


def holders(cluster: Cluster, future) -> list[str]:
    """Where the scheduler says ``future``'s data is (the manual network holds who_has)."""
    return sorted(cluster.scheduler.tasks[future.key].who_has)


def test_a_strictly_restricted_task_is_never_asked_for():
    with Cluster(protocol="dask", workers=2, network="manual") as cluster:
        a, b = queued_behind(cluster)
        assert not any(m.op == BALANCE for m in cluster.in_flight)
        cluster.run_until_idle()
        assert steals(cluster) == []
        assert holders(cluster, b) == ["worker:0"] and cluster.violations == []


def test_a_steal_that_finds_the_task_running_is_refused():
    with Cluster(protocol="dask", workers=2, network="manual") as cluster:
        a, b = queued_behind(cluster, allow_other_workers=True)
        deliver_op(cluster, BALANCE)  # asks worker:0 for b
        request = next(m for m in cluster.in_flight if m.op == STEAL_REQUEST)
        assert request.keys == (b.key,)
        # Before the request arrives, worker:0 runs a, and b takes the thread a leaves.
        deliver_op(cluster, "execute")
        assert b.key in cluster.workers["worker:0"].executing
        cluster.deliver(request.msg_id)
        cluster.run_until_idle()
        assert ("steal.outcome", "inc", "already-computing", "executing") in steals(cluster)
        assert holders(cluster, b) == ["worker:0"] and cluster.violations == []


def test_a_steal_answered_after_the_task_finished_is_void():
    with Cluster(protocol="dask", workers=2, network="manual") as cluster:
        a, b = queued_behind(cluster, allow_other_workers=True)
        deliver_op(cluster, BALANCE)
        request = next(m for m in cluster.in_flight if m.op == STEAL_REQUEST)
        deliver_op(cluster, "execute")  # a runs
        deliver_op(cluster, "execute")  # then b: both results go on worker:0's stream
        cluster.deliver(request.msg_id)  # the victim answers "memory", after b's task-finished
        cluster.run_until_idle()
        assert ("steal.outcome", "inc", "already-aborted", "memory") in steals(cluster)
        assert holders(cluster, b) == ["worker:0"] and cluster.violations == []


def test_a_queued_task_given_up_goes_to_the_thief():
    with Cluster(protocol="dask", workers=2, network="manual") as cluster:
        a, b = queued_behind(cluster, allow_other_workers=True)
        deliver_op(cluster, BALANCE)
        deliver_op(cluster, STEAL_REQUEST)  # b is still ready on worker:0: it gives it up
        assert b.key not in cluster.workers["worker:0"].tasks
        cluster.run_until_idle()
        assert ("steal.outcome", "inc", "confirm", "ready") in steals(cluster)
        assert holders(cluster, b) == ["worker:1"] and cluster.violations == []
        assert cluster.workers["worker:1"].data[b.key] == 3


def test_the_immediate_network_fires_the_balance_only_when_nothing_else_moves():
    """A timer, not a message: a map whose queues drain evenly never sees a steal."""
    with Cluster(protocol="dask", workers=2, network="immediate") as cluster:
        client = cluster.client()
        assert client.gather(client.map(inc, range(20))) == list(range(1, 21))
        assert steals(cluster) == []


def two_parents_on_one_worker(client):
    fs = [client.submit(gather_own_map, [i, i + 1, i + 2], workers=["worker:0"])
          for i in (0, 10)]
    assert client.gather(fs) == [[1, 2, 3], [11, 12, 13]]


def test_every_order_of_a_steal_keeps_every_future():
    """Both parents hold worker:0's two threads; their sub-tasks placed there can only run
    if stolen.  Without stealing every order raised ThreadsExhaustedError; now each order
    finishes, the steals' messages racing the tasks'."""
    result = explore(two_parents_on_one_worker, protocol="fixed", workers=2, bound=1,
                     max_schedules=300, processes=1)
    assert result.failures == [] and result.systematic > 100


def test_a_schedule_with_steals_replays_them():
    run = _run(two_parents_on_one_worker, "dask", 2, fingerprint(two_parents_on_one_worker),
               [], False)
    story = [(e.kind, e.key, *e.data) for e in run.trace.events() if e.kind.startswith("steal.")]
    assert run.raised is None and any(s[2] == "confirm" for s in story)
    again = replay(two_parents_on_one_worker, run.schedule)
    assert [(e.kind, e.key, *e.data) for e in again.trace.events()
            if e.kind.startswith("steal.")] == story

