"""Tasks run on their workers' threads: nested submission, secede/rejoin, cancellation.

Each behaviour here was checked on distributed 2026.8.0 (``LocalCluster(processes=False)``)
before it was modelled; the differences are named where they are tested.
"""

from __future__ import annotations

import gc
import threading

import pytest
from helpers import deliver_op, inc

from jupyter_refs import Cluster, explore, replay
from jupyter_refs.errors import HeldMessagesError, ThreadsExhaustedError
from jupyter_refs.worker_context import (
    fire_and_forget,
    get_client,
    rejoin,
    secede,
    worker_client,
)


def add(a, b):
    return a + b


def tree_reduce(objs):
    """dask issue 4612's tree reduction, from inside a task: each level submitted, then awaited."""
    client = get_client()
    while len(objs) > 1:
        objs = [client.submit(add, objs[i], objs[i + 1]) if i + 1 < len(objs) else objs[i]
                for i in range(0, len(objs), 2)]
        [f.result() for f in objs if hasattr(f, "result")]  # wait for the level
    return objs[0].result() if hasattr(objs[0], "result") else objs[0]


def notebook_tree(client, values):
    objs = client.scatter(values, hash=False)
    while len(objs) > 1:
        objs = [client.submit(add, objs[i], objs[i + 1]) if i + 1 < len(objs) else objs[i]
                for i in range(0, len(objs), 2)]
    return objs[0].result()


def nested(x):
    with worker_client() as client:
        return client.submit(inc, x).result()


def wait_without_seceding(x):
    return get_client().submit(inc, x).result()


def one_step(cluster: Cluster, op: str) -> None:
    deliver_op(cluster, op)


#: Gates a task waits on, by name (module-level: a task is pickled by reference).
GATES: dict[str, threading.Event] = {}


def gated(name: str, x: int = 1) -> int:
    GATES[name + ".started"].set()
    GATES[name].wait(10)
    return x


def gate(name: str) -> threading.Event:
    GATES[name + ".started"] = threading.Event()
    GATES[name] = threading.Event()
    return GATES[name]


# -- submit returns before the task runs -----------------------------------------------------


def test_submit_returns_a_pending_future_and_result_runs_the_task():
    with Cluster(protocol="fixed", network="immediate") as cluster:
        client = cluster.client()
        f = client.submit(inc, 1)
        assert f.status == "pending"
        [run] = cluster.in_flight
        assert (run.op, run.receiver, run.channel.startswith("run:worker:0")) == (
            "execute", "worker:0", True)
        assert cluster.workers["worker:0"].tasks[f.key].state == "executing"
        assert f.result() == 2 and f.status == "finished"
        story = [(e.kind, e.op) for e in cluster.trace if e.key == f.key and e.actor == "worker:0"]
        assert story.index(("msg.received", "execute")) < story.index(("worker.put", None))


def test_a_timeout_on_a_running_task_times_out_and_the_task_finishes_later():
    release = gate("immediate")
    with Cluster(protocol="fixed", network="immediate") as cluster:
        client = cluster.client()
        f = client.submit(gated, "immediate", 5)
        with pytest.raises(TimeoutError):
            f.result(timeout=0.05)
        assert f.status == "pending"
        release.set()
        assert f.result(timeout=10) == 5 and f.status == "finished"
        assert cluster.violations == []


def test_live_timeout_then_result():
    release = gate("live")
    with Cluster(protocol="fixed", network="live") as cluster:
        client = cluster.client()
        f = client.submit(gated, "live", 7)
        with pytest.raises(TimeoutError):
            f.result(timeout=0.05)
        assert f.status == "pending"
        release.set()
        assert f.result(timeout=10) == 7
        cluster.run_until_idle()
        assert cluster.violations == []


def test_threads_per_worker_defaults_as_localcluster_and_bounds_the_executing_tasks(monkeypatch):
    monkeypatch.setattr("os.cpu_count", lambda: 4)
    with Cluster(network="manual", workers=2) as cluster:
        assert cluster.threads_per_worker == 2  # dask: cores shared out among the workers
    with Cluster(network="manual", threads_per_worker=2) as cluster:
        client = cluster.client()
        futures = client.map(inc, range(5))
        one_step(cluster, "update-graph")
        for _ in range(5):
            one_step(cluster, "compute-task")
        worker = cluster.workers["worker:0"]
        assert len(worker.executing) == 2 and len(worker.ready) == 3
        assert sum(m.op == "execute" for m in cluster.in_flight) == 2
        cluster.run_until_idle()
        assert [f.status for f in futures] == ["finished"] * 5


# -- clients inside tasks ----------------------------------------------------------------------


@pytest.mark.parametrize("network", ["immediate", "random", "live"])
def test_tree_reduction_inside_a_task(network):
    with Cluster(protocol="fixed", network=network, seed=4, threads_per_worker=2) as cluster:
        client = cluster.client()
        assert client.submit(tree_reduce, list(range(20)), pure=False).result(timeout=20) == 190
        cluster.run_until_idle()
        assert cluster.violations == []
        actors = {e.actor for e in cluster.trace if e.kind == "future.created"}
        assert "client:worker:0" in actors  # the nested futures live on the worker's client


@pytest.mark.parametrize("network", ["immediate", "random", "live"])
def test_tree_reduction_from_the_notebook(network):
    with Cluster(protocol="fixed", network=network, seed=5, workers=2) as cluster:
        client = cluster.client()
        assert notebook_tree(client, list(range(33))) == sum(range(33))
        cluster.run_until_idle()
        assert cluster.violations == []


def client_name():
    return get_client().name


def test_get_client_is_the_workers_own_client():
    with Cluster(protocol="fixed", network="immediate") as cluster:
        client = cluster.client()
        name = client.submit(client_name, pure=False).result()
        # dask's in-process LocalCluster hands a task the user's client; with worker
        # processes each worker has its own, as modelled here.
        assert name == "client:worker:0"
        assert cluster.worker_client("worker:0").name == name


def test_get_client_outside_a_task_says_where_it_works():
    with pytest.raises(ValueError, match="only inside a task"):
        get_client()
    with pytest.raises(ValueError, match="only inside a task"):
        secede()


def test_waiting_on_the_only_thread_is_named_not_hung():
    """dask hangs here (one thread, taken by the task that waits); a stepped cluster says so."""
    with Cluster(protocol="fixed", network="immediate", threads_per_worker=1) as cluster:
        client = cluster.client()
        f = client.submit(wait_without_seceding, 1)
        with pytest.raises(ThreadsExhaustedError, match="secede"):
            f.result()


def test_worker_client_secedes_so_one_thread_is_enough():
    with Cluster(protocol="fixed", network="immediate", threads_per_worker=1) as cluster:
        client = cluster.client()
        assert client.submit(nested, 1).result() == 2
        stories = [(e.kind, e.fields.get("finish")) for e in cluster.trace
                   if e.actor == "worker:0" and e.kind in ("worker.secede", "worker.rejoin")]
        assert [k for k, _ in stories] == ["worker.secede", "worker.rejoin"]


def seceding(x):
    secede()
    value = get_client().submit(inc, x).result()
    rejoin()
    return value


def test_secede_and_rejoin_by_hand():
    with Cluster(protocol="fixed", network="random", seed=2, threads_per_worker=1) as cluster:
        client = cluster.client()
        assert client.submit(seceding, 41).result() == 42
        worker = cluster.workers["worker:0"]
        assert not worker.executing and not worker.long_running


def test_a_task_under_a_manual_network_cannot_wait():
    with Cluster(protocol="fixed", network="manual") as cluster:
        client = cluster.client()
        f = client.submit(nested, 1)
        cluster.run_until_idle()
        assert f.status == "error"
        with pytest.raises(HeldMessagesError):
            f.result()  # the task's own wait met the manual network's holds


# -- cancellation and late results ----------------------------------------------------------------


RAN: list[int] = []


def records_its_run(x):
    RAN.append(x)
    return x


def test_releasing_a_task_before_its_thread_starts_cancels_it():
    """The free-keys lands between the worker's ready -> executing and the run itself."""
    RAN.clear()
    with Cluster(protocol="fixed", network="manual") as cluster:
        client = cluster.client()
        f = client.submit(records_its_run, 1, pure=False)
        key = f.key
        one_step(cluster, "update-graph")
        one_step(cluster, "compute-task")
        del f
        gc.collect()
        cluster.apply_drops()
        one_step(cluster, "client-releases-keys")  # scheduler: processing -> forgotten
        assert cluster.scheduler_state(key) == "forgotten"
        one_step(cluster, "free-keys")  # the worker cannot stop a thread: cancelled
        assert cluster.workers["worker:0"].tasks[key].state == "cancelled"
        cluster.run_until_idle()  # the run starts (already cancelled: it never runs)
        assert RAN == []
        assert key not in cluster.workers["worker:0"].tasks
        assert key not in cluster.workers["worker:0"].data
        states = [(e.fields["start"], e.fields["finish"]) for e in cluster.trace
                  if e.kind == "worker.transition" and e.key == key]
        assert states[-3:] == [("executing", "cancelled"), ("cancelled", "released"),
                               ("released", "forgotten")]
        assert cluster.violations == []


def test_a_release_while_the_task_runs_live_drops_its_result():
    release = gate("cancel")
    with Cluster(protocol="fixed", network="live") as cluster:
        client = cluster.client()
        f = client.submit(gated, "cancel", pure=False)
        key = f.key
        assert GATES["cancel.started"].wait(10)
        f.release()
        cluster.apply_drops()
        worker = cluster.workers["worker:0"]
        with cluster._cond:  # the free-keys reaches the worker: cancelled (the thread runs on)
            assert cluster._cond.wait_for(lambda: worker.tasks[key].state == "cancelled", 10)
        release.set()
        cluster.run_until_idle()
        assert key not in worker.data and key not in worker.tasks
        assert cluster.scheduler_state(key) == "forgotten"
        ops = [e.op for e in cluster.trace if e.kind == "msg.sent" and e.key == key]
        assert "task-finished" not in ops  # dask's cancelled -> released reports nothing
        assert cluster.violations == []


def test_resubmitted_while_cancelled_the_run_resumes():
    """dask's cancelled -> executing: the running thread's result serves the new request."""
    with Cluster(protocol="fixed", network="manual", threads_per_worker=1) as cluster:
        client = cluster.client()
        f = client.submit(inc, 1)
        key = f.key
        for op in ("update-graph", "compute-task"):
            one_step(cluster, op)
        worker = cluster.workers["worker:0"]
        del f
        gc.collect()
        cluster.apply_drops()
        g = client.submit(inc, 1)  # the same key again
        for op in ("client-releases-keys", "update-graph", "free-keys"):
            one_step(cluster, op)
        assert worker.tasks[key].state == "cancelled"
        one_step(cluster, "compute-task")
        assert worker.tasks[key].state == "executing"
        assert worker.tasks[key].incarnation == cluster.scheduler.tasks[key].run_id
        cluster.run_until_idle()
        assert g.status == "finished" and cluster.violations == []


def test_a_result_for_a_forgotten_key_is_freed():
    with Cluster(protocol="legacy", network="manual") as cluster:
        client = cluster.client()
        f = client.submit(inc, 1, pure=False)
        key = f.key
        for op in ("update-graph", "compute-task", "execute"):
            one_step(cluster, op)
        assert key in cluster.workers["worker:0"].data  # task-finished is in flight
        del f
        gc.collect()
        cluster.apply_drops()
        one_step(cluster, "client-releases-keys")
        one_step(cluster, "free-keys")  # freed before the scheduler hears of the result
        one_step(cluster, "task-finished")  # to a scheduler that forgot the key
        cluster.run_until_idle()
        assert key not in cluster.workers["worker:0"].data
        assert cluster.violations == []


# -- fire_and_forget ---------------------------------------------------------------------------------


def forget_a_fast_task(client):
    f = client.submit(inc, 1, pure=False)
    fire_and_forget(f)
    del f


def test_fire_and_forget_keeps_the_task_running_then_lets_go():
    with Cluster(protocol="fixed", network="immediate") as cluster:
        client = cluster.client()
        forget_a_fast_task(client)
        cluster.apply_drops()
        cluster.run_until_idle()
        assert cluster.scheduler.tasks == {}
        assert cluster.workers["worker:0"].data == {}
        released = [e.fields["client"] for e in cluster.trace if e.kind == "release.applied"]
        assert released == ["client:1", "fire-and-forget"]


@pytest.mark.parametrize("protocol", ["legacy", "fixed"])
def test_fire_and_forget_overtaken_by_the_result_leaks_the_key(protocol):
    """Seen on dask 2026.8: the batched desire lands after the task ended, and nothing lets go."""
    result = explore(forget_a_fast_task, protocol=protocol, max_schedules=300, processes=1)
    names = {name for f in result.failures for name in f.names}
    if protocol == "legacy":
        assert names == {"leaked_key"}
        run = replay(forget_a_fast_task, result.failures[0].schedule)
        assert [v.name for v in run.violations] == ["leaked_key"]
    else:
        assert names == set()


# -- the explorer chooses when tasks run -------------------------------------------------------------


def submit_and_wait_inside(client):
    assert client.submit(nested, 1).result() == 2


def test_the_explorer_explores_task_runs_and_replays_them_exactly():
    result = explore(submit_and_wait_inside, protocol="fixed", max_schedules=400, processes=1,
                     sample=False)
    assert result.failures == [] and result.schedules > 10
    # Some explored orders run the task before messages older than its execute.
    from jupyter_refs.explore import _run, fingerprint
    fp = fingerprint(submit_and_wait_inside)
    picks = [1, 1, 1]
    first = _run(submit_and_wait_inside, "fixed", 1, fp, picks, strict=False)
    again = replay(submit_and_wait_inside, first.schedule)
    shape = [(e.actor, e.kind, e.op, e.key) for e in first.trace]
    assert [(e.actor, e.kind, e.op, e.key) for e in again.trace] == shape
    assert any(e.op == "execute" for e in again.trace)


def test_a_task_cancelled_while_it_waits_inside_its_run():
    """Stepped and exact: the release is delivered only once the task has seceded and waits."""
    from jupyter_refs.network import Chooser

    late = ("client-releases-keys", "free-keys")
    seen: dict[str, object] = {}

    def choose(heads):
        ts = seen["cluster"].workers["worker:0"].tasks.get(seen.get("key"))
        waiting = ts is not None and ts.state in ("long-running", "cancelled")
        preferred = [h for h in heads if (h.op in late) == waiting]
        return (preferred or heads)[0]

    with Cluster(protocol="fixed", network=Chooser(choose)) as cluster:
        seen["cluster"] = cluster
        client = cluster.client()
        f = client.submit(nested, 1, pure=False)
        seen["key"] = key = f.key
        del f
        gc.collect()
        cluster.run_until_idle()
        states = [(e.fields["start"], e.fields["finish"]) for e in cluster.trace
                  if e.kind == "worker.transition" and e.key == key]
        assert ("long-running", "cancelled") in states
        assert states[-2:] == [("cancelled", "released"), ("released", "forgotten")]
        sent = [e.op for e in cluster.trace if e.kind == "msg.sent" and e.key == key]
        assert "task-finished" not in sent
        assert cluster.workers["worker:0"].data == {} and cluster.scheduler.tasks == {}
        assert cluster.violations == []


def test_live_waiting_on_the_only_thread_is_named_not_hung():
    with Cluster(protocol="fixed", network="live", threads_per_worker=1) as cluster:
        client = cluster.client()
        f = client.submit(wait_without_seceding, 1)
        with pytest.raises(ThreadsExhaustedError, match="secede"):
            f.result(timeout=20)


@pytest.mark.parametrize("network", ["immediate", "live"])
def test_a_future_cancelled_with_the_task_it_depends_on_is_no_refcount_mismatch(network):
    # dask's test_cancel_sync: cancel y in x -> y -> z, and z is cancelled too; the client
    # still holds z, told by cancelled-keys, and the scheduler has forgotten it — as on dask.
    with Cluster(protocol="dask", workers=2, network=network) as cluster:
        client = cluster.client()
        x = client.submit(inc, 1, key="x")
        y = client.submit(inc, x, key="y")
        z = client.submit(inc, y, key="z")
        client.cancel([y])
        cluster.run_until_idle()
        assert (y.status, z.status, x.result()) == ("cancelled", "cancelled", 2)
        assert client.refcount["z"] == 1 and cluster.scheduler_state("z") == "forgotten"
        assert cluster.violations == []


def test_a_future_the_user_cancelled_is_no_refcount_mismatch():
    # The client still holds the Future object, and the scheduler no longer wants the key
    # for it: both sides agree the future is gone (dask's Future.cancel sends cancel-keys).
    with Cluster(protocol="dask", network="immediate") as cluster:
        client = cluster.client()
        f = client.submit(inc, 1)
        f.cancel()
        cluster.run_until_idle()
        assert f.status == "cancelled" and client.refcount[f.key] == 1
        assert cluster.scheduler_state(f.key) == "forgotten"
        assert cluster.violations == []
        g = client.submit(inc, 2)  # a new hold of another key is judged as before
        client.cancel([g])
        cluster.run_until_idle()
        assert cluster.violations == []
