"""A focused trace of real dask: the scheduler, the workers and the client leave out the
keys out of focus before buffering them, and the checks still judge the focused ones.

Select with ``pytest -m dask``.
"""

from __future__ import annotations

import time

import pytest

distributed = pytest.importorskip("distributed")

from distributed import Client, LocalCluster  # noqa: E402
from helpers import inc  # noqa: E402
from test_dask_holds import force_8576, lost  # noqa: E402

from jupyter_refs.dask import attach  # noqa: E402
from jupyter_refs.focus import Focus, FocusError  # noqa: E402

pytestmark = pytest.mark.dask


def _about(events) -> set:
    """Every key the events name: their own, and each message's."""
    keys = {e.key for e in events if e.key is not None}
    keys.update(k for e in events if e.kind.startswith("msg.") for k in e.data[0])
    return keys


def _forgotten(client, timeout: float = 10.0) -> None:
    """Wait until the scheduler and the workers hold no task: the releases of the futures an
    earlier test on the shared cluster dropped travel on after it ends, and a test that
    counts what its focus is asked about would count theirs too."""
    def forgot(dask_scheduler) -> bool:
        return not dask_scheduler.tasks

    def freed(dask_worker) -> bool:
        return not dask_worker.data

    deadline = time.monotonic() + timeout
    while not (client.run_on_scheduler(forgot) and all(client.run(freed).values())):
        assert time.monotonic() < deadline, "the cluster still holds tasks of an earlier test"
        time.sleep(0.05)


@pytest.mark.parametrize("variant", ["A", "B"])
def test_a_focused_trace_of_the_8576_race_still_reports_it(inproc, variant):
    with attach(inproc, keys="int-*") as tracer:
        noise = inproc.map(inc, range(20))  # other keys, in the same streams and batches
        assert sum(inproc.gather(noise)) == 210
        y, key, forced = force_8576(inproc, tracer, variant, 3000 + 100 * (variant == "B"))
        assert forced and key.startswith("int-")
        assert lost(inproc, tracer, y, key)  # real dask lost it, and the checks said so
        assert {v.key for v in tracer.violations} == {key}
        events = tracer.trace.events()
        assert _about(events) == {key}
        assert not any(e.key == noise[0].key for e in events)
        del y, noise


@pytest.mark.slow
def test_one_key_of_a_thousand_from_every_source():
    """Worker processes: the focus travels to them inside the plugin, and a sample picks the
    same keys in every process."""
    keys = [f"t-{i:04d}" for i in range(1000)]
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        with attach(client, keys=keys[17]) as tracer:
            futures = client.map(inc, range(1000), key=keys)
            assert sum(client.gather(futures)) == 500_500
            del futures
            tracer.sync()
            events = tracer.trace.events()
            assert _about(events) == {keys[17]}
            actors = {e.actor for e in events if e.key == keys[17]}
            assert {"client:1", "scheduler"} <= actors and any(a.startswith("worker:")
                                                                for a in actors)
            assert any(e.kind == "worker.put" for e in events if e.key == keys[17])
            assert len(events) < 60  # one task's story, not a thousand
            assert tracer.violations == []
        sampled = [f"s-{i:04d}" for i in range(1000)]
        with attach(client, sample=10) as tracer:
            futures = client.map(inc, range(1000), key=sampled)
            assert sum(client.gather(futures)) == 500_500
            tracer.sync()
            events = tracer.trace.events()
            chosen = set(Focus(sample=10).keep(tuple(sampled)))
            assert 50 < len(chosen) < 150
            by = {kind: {e.key for e in events if e.kind == kind}
                  for kind in ("future.created", "transition", "worker.put")}
            assert by == dict.fromkeys(by, chosen)  # the client, the scheduler, the workers
            assert {e.actor for e in events if e.kind == "worker.put"} >= {
                "worker:" + a.split("://", 1)[1] for a in client.run(lambda: 0)}
            del futures
            tracer.sync()
            assert tracer.violations == []
            # Narrowed while running: the worker processes follow too.
            tracer.focus("r-000")
            futures = client.map(inc, range(100), key=[f"r-{i:04d}" for i in range(100)])
            assert sum(client.gather(futures)) == 5050
            tracer.sync()
            since = tracer.trace.events(kind="focus.changed")[-1].seq
            puts = {e.key for e in tracer.trace.events(kind="worker.put", since=since)}
            assert puts == {f"r-{i:04d}" for i in range(10)}
            del futures


def test_a_running_trace_narrows_and_widens_and_a_late_worker_follows():
    keys = [f"t-{i:04d}" for i in range(10)]
    with LocalCluster(n_workers=1, processes=False, threads_per_worker=1,
                      dashboard_address=":0") as cluster, Client(cluster) as client, \
            attach(client) as tracer:
        first = set(client.scheduler_info()["workers"])
        assert tracer.focus(keys[3]) == tracer.focused
        cluster.scale(2)
        client.wait_for_workers(2)
        (late,) = set(client.scheduler_info()["workers"]) - first
        futures = client.map(inc, range(10), key=keys, workers=[late])
        assert sum(client.gather(futures)) == 55
        tracer.sync()
        narrowed = tracer.trace.events(since=tracer.trace.events(kind="focus.changed")[0].seq)
        assert _about(narrowed) == {keys[3]}
        from_late = [e for e in narrowed if e.actor == "worker:" + late.split("://", 1)[1]]
        assert [e.kind for e in from_late if e.key] == ["worker.put"]  # the late worker follows
        # Every key again: the ten futures still held joined the focus alive.
        tracer.focus()
        tracer.sync()
        (change,) = tracer.trace.events(kind="focus.changed")[1:]
        assert set(keys) - {keys[3]} <= set(change.get("joined"))
        more = client.map(inc, range(10, 15), key=[f"u-{i}" for i in range(5)])
        assert sum(client.gather(more)) == 65
        del futures, more
        tracer.sync()
        assert tracer.violations == []
        assert {f"u-{i}" for i in range(5)} <= _about(tracer.trace.events(since=change.seq))


def test_a_bad_focus_is_refused_before_anything_is_installed(inproc):
    with pytest.raises(FocusError, match="sample must be"):
        attach(inproc, keys="x-*", sample=0)
    with attach(inproc) as tracer:  # nothing was left installed by the refusal
        with pytest.raises(FocusError, match=r"keys=\[\] would trace no key"):
            tracer.focus([])
        assert tracer.focused is None


def test_out_of_focus_futures_cost_no_look_at_the_users_stack(inproc, monkeypatch):
    """The client's per-future hooks ask the focus first: a dropped future out of focus is
    not stamped with the dropper's line (a walk up the stack per future), and a future in
    focus still is."""
    from jupyter_refs.dask import tracer as tracer_module

    walks = []
    real = tracer_module._caller_line
    monkeypatch.setattr(tracer_module, "_caller_line", lambda: walks.append(1) or real())
    keys = [f"drop-{i:03d}" for i in range(200)]
    with attach(inproc, keys=keys[7]) as tracer:
        futures = inproc.map(inc, range(200), key=keys)
        inproc.gather(futures)
        walks.clear()
        del futures
        tracer.sync()
        assert len(walks) == 1  # the one future in focus, not 200
        drops = tracer.trace.events(kind="refcount.dec")
        assert [e.key for e in drops] == [keys[7]]
        assert drops[0].cell.rsplit(":", 1)[0] == __file__  # the line of the ``del``
        assert tracer.violations == []


def test_one_decision_per_key_serves_every_copy_of_the_focus_here(inproc, monkeypatch):
    """In-process, the scheduler's plugin, each worker's and the client hold their own copy of
    the focus (a plugin travels pickled); they share its answers, so each key is decided once,
    not once per copy, and a key turned down leaves the plugins' transitions at once."""
    decided = []
    real = Focus._decide
    monkeypatch.setattr(Focus, "_decide", lambda self, key: decided.append(key) or real(self, key))
    keys = [f"once-{i:03d}" for i in range(300)]
    _forgotten(inproc)
    with attach(inproc, keys=keys[42]) as tracer:
        futures = inproc.map(inc, range(300), key=keys)
        assert sum(inproc.gather(futures)) == 45_150
        del futures
        tracer.sync()
        assert sorted(decided) == keys  # each key once, wherever it was asked about
        assert _about(tracer.trace.events()) == {keys[42]}
        transitions = tracer.trace.events(kind="transition")
        assert {e.key for e in transitions} == {keys[42]} and len(transitions) >= 4
        assert tracer.violations == []


def test_copies_of_a_focus_share_answers_and_a_predicates_keep_their_own():
    import pickle

    import cloudpickle

    glob = Focus("share-*")
    copy = pickle.loads(pickle.dumps(glob))
    assert copy.wants("share-1") and "share-1" in glob.answers
    assert copy.answers is glob.answers and Focus("share-*", sample=2).answers is not glob.answers
    picky = Focus(lambda key: key.endswith("1"))
    twin = cloudpickle.loads(cloudpickle.dumps(picky))
    assert twin.wants("a1") and "a1" not in picky.answers  # a label may name two functions
    assert picky.keep(("a1",)) == ("a1",) and picky.keep(("a2",)) == ()


def test_a_single_key_submitted_under_a_focus_is_traced_and_no_hook_fails(inproc, caplog):
    """``submit(key=…)`` of one focused key: dask hands a hook a *set* of one key, which the
    focus read as ``keys[0]`` — a TypeError in dask's scheduler, and the key's events lost."""
    import logging

    caplog.set_level(logging.INFO, logger="distributed")  # dask logs a plugin's error at INFO
    with attach(inproc, keys="inc-focus*") as tracer:
        f = inproc.submit(inc, 1, key="inc-focus-1")
        other = inproc.submit(inc, 2, key="other-focus-1")  # a single key out of focus
        assert f.result() == 2 and other.result() == 3
        del f, other
        tracer.sync()
        events = tracer.trace.events()
        assert any(e.key == "inc-focus-1" and e.kind == "transition" for e in events)
        assert not [e for e in events if e.kind == "hook.failed"]
        assert "other-focus-1" not in _about(events)
    assert not [r for r in caplog.records if "not subscriptable" in r.getMessage()
                or r.exc_info or "Plugin" in r.getMessage()]
