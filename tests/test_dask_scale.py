"""Tracing a dask cluster costs the memory of one trace, not two (issue 19)."""

from __future__ import annotations

import pytest

distributed = pytest.importorskip("distributed")

from jupyter_refs.dask import attach, remote  # noqa: E402
from jupyter_refs.events import DESIRE_APPLIED, FIELDS_AT  # noqa: E402

pytestmark = pytest.mark.dask


def inc(x: int) -> int:
    return x + 1


def _kept(dask_scheduler) -> int:
    """Events of our topic the scheduler's broker keeps for ``get_events``."""
    return sum(len(msg["events"]) for _, msg in dask_scheduler.get_events(remote.TOPIC))


def test_the_scheduler_keeps_no_copy_of_the_trace(inproc):
    with attach(inproc) as tracer:
        inproc.gather(inproc.map(inc, range(300)))
        tracer.sync()
        assert len(tracer.trace) > 3000  # the batches did arrive ...
        assert inproc.run_on_scheduler(_kept) == 0  # ... and the broker let them go


def test_a_retained_event_costs_at_most_300_bytes(inproc):
    with attach(inproc) as tracer:
        inproc.gather(inproc.map(inc, range(300), pure=False))
        tracer.sync()
        assert tracer.trace.retained_bytes() / len(tracer.trace) <= 300


@pytest.mark.slow
def test_events_from_worker_processes_cost_at_most_300_bytes_too():
    """Over a socket every string arrives as a new object: the merge interns them
    (449 B per event before it did)."""
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client, attach(client) as tracer:
        client.gather(client.map(inc, range(300), pure=False))
        tracer.sync()
        assert {e.actor for e in tracer.trace.events(kind="worker.put")} >= {
            "worker:" + a.split("://", 1)[1] for a in client.scheduler_info()["workers"]}
        assert tracer.trace.retained_bytes() / len(tracer.trace) <= 300


def test_max_events_bounds_the_trace_and_every_view_says_so(inproc):
    from jupyter_refs.views.lab import refs_message
    from jupyter_refs.views.refs import RefsTable
    from jupyter_refs.views.saved import trace_bundle
    from jupyter_refs.views.timeline import Timeline

    with attach(inproc, max_events=1_000) as tracer:
        futures = inproc.map(inc, range(300), pure=False)
        assert inproc.gather(futures) == list(range(1, 301))
        del futures
        tracer.sync()
        trace = tracer.trace
        assert trace.dropped > 0 and len(trace) <= 1_000 + 1_000 // 64
        assert tracer.violations == []  # every event was checked before it went
        dropped = f"{trace.dropped:,} oldest events dropped"
        assert dropped in RefsTable(tracer, live=False).to_text()
        assert refs_message(tracer)["cluster"]["dropped"] == trace.missing
        assert trace_bundle(trace)["window"]["dropped"] == trace.missing
        timeline = Timeline(tracer, live=False)
        try:
            timeline._refresh_keys()
            assert f"{trace.missing} dropped" in timeline._status.value
        finally:
            timeline.close()


def test_events_lost_at_their_source_are_counted_and_shown():
    """A recorder's buffer smaller than one handler's burst: the update-graph of a 300-task
    map records its transitions in one go, before the periodic drain can run."""
    from jupyter_refs.views.refs import RefsTable

    with distributed.LocalCluster(n_workers=1, processes=False, threads_per_worker=1,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client, attach(client, remote_capacity=50) as tracer:
        client.gather(client.map(inc, range(300), pure=False))
        tracer.sync()
        assert tracer.trace.lost > 0 and tracer.dropped_remote == tracer.trace.lost
        assert "lost at their source, never checked" in RefsTable(tracer, live=False).to_text()
        assert "lost at the source" in repr(tracer.trace)


def test_waiting_events_are_hidden_from_the_collector(inproc):
    """Until the merge, events wait as tuples of atoms, which CPython's collector untracks
    within a few looks: a full collection then no longer walks every waiting event (seven
    million items in lists cost each one about 60 ms here, and a 53,000-task map makes a
    dozen).  Sealing the client's own rows keeps the trace as it was."""
    import gc

    with attach(inproc, keys=None) as tracer:
        inproc.gather(inproc.map(inc, range(300), pure=False))
        inproc.run_on_scheduler(remote.flush_scheduler)
        inproc.run(remote.flush_worker)
        inproc.run_on_scheduler(lambda: 0)  # the flushed batches have reached the client
        assert tracer._remote and len(tracer._incoming) > 0
        tracer._seal()
        assert not tracer._incoming and tracer._sealed
        waiting = [events for _, events, _ in tracer._remote] + list(tracer._sealed)
        # A tuple is untracked by a look that finds nothing tracked in it, and a full
        # collection can look at a batch before the older tuples in it: one look per level
        # (a batch, an event's fields, a message's keys).
        for _ in range(3):
            gc.collect()
        assert not any(gc.is_tracked(events) for events in waiting)
        tracer.sync()
        trace = tracer.trace
        assert tracer.late == 0 and not tracer._sealed
        assert len(trace.events(kind="future.created")) == 300  # the sealed rows, merged
        assert [e.t_ns for e in trace.events()] == sorted(e.t_ns for e in trace.events())
        assert tracer.violations == []


def test_the_merge_leaves_the_collector_nothing_to_promote(inproc):
    """What the merge makes, and the checks' belief about each held key, is untracked by the
    collector's two young looks: what survives them tracked goes to the oldest generation,
    and on a million-event merge that was enough (a row three tuples deep per desire and
    release, a set of holders per key) to run a full collection over all dask holds."""
    import gc

    with attach(inproc) as tracer:
        inproc.gather(inproc.map(inc, range(50), pure=False))
        tracer.sync()
        for _ in range(3):
            gc.collect()  # a running merge: what the first events of each kind made is old
        futures = inproc.map(inc, range(300), pure=False)
        inproc.gather(futures)
        for _ in range(3):
            gc.collect()  # the events waited a while, as during any long run
        gc.disable()  # what the merge makes stays young until the looks below
        try:
            tracer.sync()
            gc.collect(0)
            gc.collect(1)  # the second look: survivors now go to the oldest generation
        finally:
            gc.enable()
        tracked = [row for row in tracer.trace._rows if gc.is_tracked(row)]
        assert not tracked, tracked[:3]
        holders = tracer.checks.beliefs.holders
        assert len(holders) == 300
        assert not any(gc.is_tracked(clients) for clients in holders.values())
        del futures


def test_events_that_say_the_same_share_what_they_hold(inproc):
    """Every task of a map says the same in most of its events (``desire.applied`` by one
    client, wanted by that client): a tuple field is one object for all of them, not one
    per event, whether recorded here or on the scheduler (``remote.shared``), and a row
    holds the fields themselves (``events.FIELDS_AT``), not a tuple of them."""
    wants = DESIRE_APPLIED.at("who_wants_after")
    with attach(inproc) as tracer:
        futures = inproc.map(inc, range(300), pure=False)
        inproc.gather(futures)
        tracer.sync()
        rows = [row for row in tracer.trace._rows if row[3] == "desire.applied"]
        assert len(rows) >= 300
        assert {len(row) for row in rows} == {FIELDS_AT + len(DESIRE_APPLIED.fields)}
        assert len({id(row[wants]) for row in rows}) == len({row[wants] for row in rows})
        del futures


def test_a_dask_trace_keeps_nothing_for_the_checks_judged_at_a_drain(inproc):
    """A dask trace records no ``network.drained``: the keys that would wait for a drain's
    checks (``leaked_key``, ``refcount_mismatch``) are not kept, where they grew to every
    key alive."""
    with attach(inproc) as tracer:
        futures = inproc.map(inc, range(300), pure=False)
        inproc.gather(futures)
        tracer.sync()
        assert len(tracer.checks.beliefs.holders) == 300
        assert not tracer.checks._leak_check
        assert not tracer.checks._suspects
        del futures
