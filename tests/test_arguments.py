"""Wrong arguments are refused where they enter, in one line saying what was wanted, and
nothing changes: no trace event, no thread started, no tracer detached or attached."""

from __future__ import annotations

import threading

import pytest

import jupyter_refs as jr
from jupyter_refs import Cluster, Trace, explore, replay
from jupyter_refs.errors import ArgumentTypeError, ArgumentValueError, ClusterClosedError
from jupyter_refs.why import why


def scenario(client) -> None:
    client.scatter(1)


BAD = [
    # the kernel-side cluster
    (lambda c, cl: Cluster(workers="2"), ArgumentTypeError, "workers must be an int"),
    (lambda c, cl: Cluster(workers=True), ArgumentTypeError, "not bool True"),
    (lambda c, cl: Cluster(workers=0), ArgumentValueError, "workers must be at least 1"),
    (lambda c, cl: Cluster(workers=2.0), ArgumentTypeError, "workers must be an int"),
    (lambda c, cl: Cluster(workers=[0, 1]), ArgumentTypeError, "a worker's name must be a string"),
    (lambda c, cl: Cluster(workers=["a", "a"]), ArgumentValueError, "names a worker twice"),
    (lambda c, cl: Cluster(protocol=2), ArgumentTypeError, "protocol must be a protocol's name"),
    (lambda c, cl: Cluster(network=1), ArgumentTypeError, "network must be"),
    (lambda c, cl: Cluster(seed="1"), ArgumentTypeError, "seed must be an int or None"),
    (lambda c, cl: Cluster(trace_capacity="big"), ArgumentTypeError, "trace_capacity must be an int"),
    (lambda c, cl: Cluster(threads_per_worker="2"), ArgumentTypeError, "threads_per_worker must be"),
    (lambda c, cl: Cluster(checks="no"), ArgumentTypeError, "checks must be True or False"),
    (lambda c, cl: jr.Client(c, name=5), ArgumentTypeError, "name must be a string or None"),
    (lambda c, cl: c.client(name=5), ArgumentTypeError, "name must be a string or None"),
    (lambda c, cl: c.deliver("1"), ArgumentTypeError, "msg_id must be a message's id"),
    (lambda c, cl: c.step("all"), ArgumentTypeError, "n must be an int"),
    (lambda c, cl: c.hold(1), ArgumentTypeError, "pattern must be a string"),
    (lambda c, cl: c.why(1), ArgumentTypeError, "key must be a string"),
    (lambda c, cl: c.run_until_idle(timeout="1"), ArgumentTypeError, "timeout must be a number"),
    (lambda c, cl: c.run_until_idle(timeout=0), ArgumentValueError, "timeout must be more than 0"),
    # explorer
    (lambda c, cl: explore(123), ArgumentTypeError, "scenario must be a function of one or more"),
    (lambda c, cl: explore(scenario, protocol=5), ArgumentTypeError, "protocol must be"),
    (lambda c, cl: explore(scenario, max_schedules="10"), ArgumentTypeError, "max_schedules must"),
    (lambda c, cl: explore(scenario, bound=-1), ArgumentValueError, "bound must be at least 0"),
    (lambda c, cl: explore(scenario, workers="2"), ArgumentTypeError, "workers must be an int"),
    (lambda c, cl: explore(scenario, seed="x"), ArgumentTypeError, "seed must be an int"),
    (lambda c, cl: explore(scenario, first="yes"), ArgumentTypeError, "first must be True or False"),
    (lambda c, cl: explore(scenario, progress=5), ArgumentTypeError, "progress must be a function"),
    (lambda c, cl: explore(scenario, processes="2"), ArgumentTypeError, "processes must be an int"),
    (lambda c, cl: replay(123, "dask@000000:"), ArgumentTypeError, "scenario must be a function"),
    (lambda c, cl: replay(scenario, 4), ArgumentTypeError, "schedule must be a string"),
    (lambda c, cl: replay(scenario, "dask@000000:", workers="1"), ArgumentTypeError, "workers must"),
    (lambda c, cl: replay(scenario, "dask@000000:", protocol="dask"), ArgumentTypeError,
     "protocol must be the ProtocolVariant"),
    # reading the trace
    (lambda c, cl: why(5, "k"), ArgumentTypeError, "source must be a Cluster, a DaskTracer"),
    (lambda c, cl: why(c, 5), ArgumentTypeError, "key must be a string"),
    (lambda c, cl: jr.Timeline(5), ArgumentTypeError, "source must be a Cluster"),
    (lambda c, cl: jr.Timeline(c, keys="int-1"), ArgumentTypeError, "keys must be a list of keys"),
    (lambda c, cl: jr.RefsTable("cluster"), ArgumentTypeError, "source must be a Cluster"),
    (lambda c, cl: jr.export(5, "trace.jsonl"), ArgumentTypeError, "source must be a Cluster"),
    (lambda c, cl: jr.export(c, 5), ArgumentTypeError, "path must be a file name"),
    (lambda c, cl: jr.SavedTrace(5), ArgumentTypeError, "trace must be a Cluster"),
    (lambda c, cl: Trace("big"), ArgumentTypeError, "capacity must be an int"),
    (lambda c, cl: Trace(clock=5), ArgumentTypeError, "clock must be a function"),
]


@pytest.mark.parametrize("call, error, message", BAD, ids=[m for _, _, m in BAD])
def test_a_wrong_argument_is_refused_at_the_boundary_and_nothing_changes(call, error, message):
    cluster = Cluster(network="manual")
    client = cluster.client()
    held = client.scatter(1)  # pending: its scatter is in flight
    before = (len(cluster.trace), len(cluster.in_flight))
    threads = set(threading.enumerate())  # (an earlier test's thread may end meanwhile)
    with pytest.raises(error) as info:
        call(cluster, client)
    assert message in str(info.value) and "\n" not in str(info.value)
    assert (len(cluster.trace), len(cluster.in_flight)) == before
    assert set(threading.enumerate()) <= threads  # no thread left running by the call
    assert held.status == "pending"
    cluster.close()


def test_names_of_workers_are_taken_as_documented():
    with Cluster(workers=("a", "b"), network="immediate") as cluster:
        assert list(cluster.workers) == ["a", "b"]


# -- a real dask cluster ----------------------------------------------------------------------


def test_attach_refuses_what_is_not_a_running_dask_client(inproc):
    distributed = pytest.importorskip("distributed")
    from jupyter_refs.dask import DaskTracer, attach, confirm, remote

    tracer = attach(inproc)
    try:
        before = len(tracer.trace)
        for call, error, message in [
            (lambda: attach("x"), ArgumentTypeError, "client must be a distributed.Client, not str"),
            (lambda: attach(None), ArgumentTypeError, "client must be a distributed.Client"),
            (lambda: DaskTracer(5), ArgumentTypeError, "client must be a distributed.Client"),
            (lambda: confirm(scenario, "dask@000000:", "client"), ArgumentTypeError,
             "client must be a distributed.Client"),
            (lambda: confirm(5, "dask@000000:", tracer), ArgumentTypeError, "scenario must be"),
        ]:
            with pytest.raises(error, match=message):
                call()
        assert not tracer.closed and len(tracer.trace) == before
    finally:
        tracer.detach()
    closed = distributed.Client(inproc.scheduler.address)
    closed.close()
    with pytest.raises(ClusterClosedError, match="client is closed"):
        attach(closed)
    assert not inproc.run_on_scheduler(remote.installed)  # nothing was left installed
