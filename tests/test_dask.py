"""The dask adapter on real dask.distributed: in-process, multi-process, and `dask scheduler`.

Select them with ``pytest -m dask``.
"""

from __future__ import annotations

import asyncio
import inspect
import sys
import time

import pytest

distributed = pytest.importorskip("distributed")

from distributed import Client, LocalCluster  # noqa: E402
from helpers import inc  # noqa: E402

from jupyter_refs.dask import attach, remote  # noqa: E402
from jupyter_refs.dask.tracer import USER_CALLS  # noqa: E402
from jupyter_refs.trace import following  # noqa: E402

pytestmark = pytest.mark.dask


def crusaderky(client, iterations: int, submit: bool = False) -> int | None:
    """Scatter, check the scheduler still holds it, drop; the iteration that failed, if any."""
    for i in range(1, iterations + 1):
        x = client.scatter(123)
        if client.run_on_scheduler(remote.task_state, key=x.key) != "memory":
            return i
        if submit:
            del x
            x = client.scatter(123)
            assert client.submit(lambda v: v + 1, x, pure=False).result(timeout=10) == 124
        del x
    return None


def test_the_8576_loop_fails_and_the_trace_shows_why(inproc):
    with attach(inproc) as tracer:
        failed = crusaderky(inproc, 500)
        assert failed is not None, "the loop did not fail in 500 iterations"
        tracer.sync()
        violations = [v for v in tracer.violations if v.name == "dangling_future"]
        assert violations, tracer.violations
        key = violations[0].key
        assert key.startswith("int-")
        events = tracer.trace.events(key=key)
        # A client-releases-keys received after a scatter sent later than it.
        sent = {e.msg_id: e.seq for e in events if e.kind == "msg.sent"}
        releases = [e for e in events if e.kind == "msg.received" and e.op == "client-releases-keys"]
        scatters = [e for e in events if e.kind == "msg.received" and e.op == "scatter"]
        assert any(sent[r.msg_id] < sent[s.msg_id] and r.seq > s.seq
                   for r in releases for s in scatters if r.msg_id in sent and s.msg_id in sent)
        # The real scheduler forgot the key with that release as its stimulus.
        assert any(e.kind == "transition" and e.fields["finish"] == "forgotten"
                   and e.fields["stimulus_id"].startswith("client-releases-keys") for e in events)
    print(f"\nreal dask: the 8576 loop failed at iteration {failed}")


@pytest.mark.slow
def test_ordered_scatter_makes_the_loop_pass(inproc):
    with attach(inproc, ordered_scatter=True) as tracer:
        assert crusaderky(inproc, 2000) is None
        assert crusaderky(inproc, 300, submit=True) is None
        tracer.sync()
        assert tracer.violations == []
        scatters = [e for e in tracer.trace.events(kind="msg.received") if e.op == "scatter"]
        assert len(scatters) == 2600


def test_detach_leaves_nothing_behind(inproc):
    def scheduler_side(dask_scheduler):
        return (sorted(dask_scheduler.plugins), sorted(dask_scheduler.stream_handlers),
                {op: getattr(h, "__wrapped__", None) is None
                 for op, h in dask_scheduler.stream_handlers.items()},
                getattr(dask_scheduler.handlers["scatter"], "__wrapped__", None) is None,
                "update_data" in vars(dask_scheduler), "report" in vars(dask_scheduler),
                "send_all" in vars(dask_scheduler))

    before_client = dict(vars(inproc))
    before_handlers = dict(inproc._stream_handlers)
    before = inproc.run_on_scheduler(scheduler_side)
    tracer = attach(inproc)
    assert remote.SCHEDULER_PLUGIN in inproc.run_on_scheduler(scheduler_side)[0]
    inproc.submit(sum, [1, 2]).result()
    tracer.detach()
    assert inproc.run_on_scheduler(scheduler_side) == before
    assert inproc._stream_handlers == before_handlers
    patched = {k for k, v in vars(inproc).items() if before_client.get(k, object()) is not v}
    assert not patched & {"_inc_ref", "_dec_ref", "_send_to_scheduler", "_scatter", "scheduler",
                          *USER_CALLS}
    assert "add_callback" not in vars(inproc.loop)  # the drops' user lines
    workers = inproc.run(lambda dask_worker: sorted(dask_worker.plugins))
    assert all(remote.WORKER_PLUGIN not in p for p in workers.values())
    assert len(tracer.trace) > 0  # the trace outlives the attachment


def test_a_detached_tracer_says_detached_from(inproc):
    """Issue 46.6: the repr read "<DaskTracer detached to …>" and the magics "no cluster yet"."""
    from IPython import get_ipython
    from IPython.core.error import UsageError
    from IPython.testing.globalipapp import start_ipython

    from jupyter_refs.views.lab import refs_message

    address = inproc.scheduler.address
    ip = start_ipython() or get_ipython()
    ip.run_line_magic("load_ext", "jupyter_refs")
    try:
        ip.user_ns["dc"] = inproc
        ip.run_line_magic("cluster", "--attach dc")
        tracer = ip.user_ns["cluster"]
        assert repr(tracer).startswith(f"<DaskTracer attached to {address}: ")
        tracer.detach()
        assert repr(tracer).startswith(f"<DaskTracer detached from {address}: ")
        with pytest.raises(UsageError, match=f"^the tracer was detached from {address}: start "
                                             "another with %cluster"):
            ip.run_line_magic("refs", "")
        assert refs_message(tracer)["ended"] == f"the tracer was detached from {address}"
    finally:
        ip.run_line_magic("unload_ext", "jupyter_refs")
        for name in ("client", "cluster", "dc"):
            ip.user_ns.pop(name, None)


def test_a_failing_hook_is_removed_and_reported_once(inproc):
    with attach(inproc) as tracer:
        calls = []

        def broken(*args, **kwargs):
            calls.append(1)
            raise RuntimeError("observer bug")

        tracer.hooks.attr(inproc, "_inc_ref", before=broken, label="broken")
        futures = [inproc.submit(lambda v: v, i) for i in range(3)]
        assert inproc.gather(futures) == [0, 1, 2]  # the computation is untouched
        tracer.sync()
        failed = tracer.trace.events(kind="hook.failed")
        assert len(calls) == 1 and len(failed) == 1
        assert failed[0].fields["hook"] == "broken" and "observer bug" in failed[0].fields["error"]


def _boom(*args, **kwargs):
    raise RuntimeError("boom from a hook")


def _break_scheduler_hooks(dask_scheduler):
    plugin = dask_scheduler.plugins[remote.SCHEDULER_PLUGIN]
    plugin.rec.record_key = _boom  # its transition hook, called by dask for every task
    plugin._followed = _boom  # update_graph (a plugin hook), the wrapped releases …


def _break_worker_hooks(dask_worker):
    dask_worker.plugins[remote.WORKER_PLUGIN].rec.record_key = _boom  # its transition hook


def _scheduler_failed(dask_scheduler):
    return dict(dask_scheduler.plugins[remote.SCHEDULER_PLUGIN].rec.failed)


def test_every_hook_that_raises_is_caught_counted_and_in_the_trace_never_in_dasks_logs(
        inproc, caplog, monkeypatch):
    """Issue 44: the plugins' own hooks (``transition``, ``update_graph``: dask calls them and
    logs what they raise, task after task), the wrapped scheduler methods, and the client's
    user-line wrappers all report a failure once, as ``hook.failed``, and dask sees none."""
    import logging

    from jupyter_refs.dask import tracer as tracer_module

    caplog.set_level(logging.DEBUG, logger="distributed")
    with attach(inproc) as tracer:
        inproc.run_on_scheduler(_break_scheduler_hooks)
        inproc.run(_break_worker_hooks)
        monkeypatch.setattr(tracer_module, "_caller_line", _boom)  # the user-line wrappers
        for _ in range(2):  # the second round meets every broken hook removed
            futures = inproc.map(inc, range(20), pure=False)
            assert inproc.gather(futures) == list(range(1, 21))  # dask's work is untouched
            del futures
        tracer.sync()
        failed = [e.fields for e in tracer.trace.events(kind="hook.failed")]
        labels = [f["hook"] for f in failed]
        assert len(labels) == len(set(labels))  # each reported once
        assert {"SchedulerRecorder.transition", "SchedulerRecorder.update_graph",
                "client-releases-keys", "WorkerRecorder.transition", "user line map",
                "user line add_callback"} <= set(labels), labels
        assert all("RuntimeError: boom from a hook" == f["error"] for f in failed)
        # … and counted where they happened: the scheduler's recorder, the client's hooks.
        on_scheduler = inproc.run_on_scheduler(_scheduler_failed)
        assert {"SchedulerRecorder.transition", "SchedulerRecorder.update_graph",
                "client-releases-keys"} <= set(on_scheduler)
        assert {"user line map", "user line add_callback"} <= set(tracer.hooks.failed)
    reached = [r for r in caplog.records if "boom" in r.getMessage()
               or (r.exc_info and "boom" in str(r.exc_info[1]))]
    assert not reached, [r.getMessage() for r in reached]


def _break_worker_teardown(dask_worker):
    dask_worker.plugins[remote.WORKER_PLUGIN].hooks.undo = _boom


def test_a_plugin_whose_start_or_end_raises_reports_it_and_dask_carries_on(
        inproc, caplog, monkeypatch):
    """The plugins' own start (the scheduler's ``start``, a worker's ``setup``) and end (a
    worker's ``teardown``) are dask's calls too: raised on, ``register_plugin`` fails, and a
    worker joining later would not start.  Each is caught, what it hooked comes off, and the
    failure is in the trace as ``hook.failed``; dask's work and logs are untouched."""
    import logging

    caplog.set_level(logging.DEBUG, logger="distributed")
    monkeypatch.setattr(remote.SchedulerRecorder, "follow", _boom)  # its start calls it
    monkeypatch.setattr(remote, "WORKER_SETUP", [_boom])  # a worker's setup, at its end
    with attach(inproc) as tracer:
        futures = inproc.map(inc, range(10), pure=False)
        assert inproc.gather(futures) == list(range(1, 11))
        del futures
        tracer.sync()
        labels = [e.fields["hook"] for e in tracer.trace.events(kind="hook.failed")]
        assert sorted(labels) == ["SchedulerRecorder.start", "WorkerRecorder.setup"], labels
        # Half a recorder tells nothing: no transition reached the trace from either side.
        assert not tracer.trace.events(kind="transition")
    monkeypatch.undo()
    with attach(inproc) as tracer:  # a clean attach after: the failed one left nothing behind
        assert inproc.submit(inc, 1).result() == 2
        inproc.run(_break_worker_teardown)
        tracer.sync()
        assert tracer.trace.events(kind="transition")
    reached = [r for r in caplog.records if "boom" in r.getMessage()
               or (r.exc_info and "boom" in str(r.exc_info[1]))]
    assert not reached, [r.getMessage() for r in reached]


def test_a_hook_whose_before_says_skip_runs_no_after():
    from jupyter_refs.dask.hooks import SKIP, Hooks

    class Thing:
        def work(self, v):
            return v * 2

        async def later(self, v):
            return v * 3

    thing, seen = Thing(), []
    hooks = Hooks(lambda label, exc: seen.append(("failed", label)))
    for name in ("work", "later"):
        hooks.attr(thing, name, before=lambda v: None if v else SKIP,
                   after=lambda state, result, v: seen.append((state, result)))
    assert thing.work(0) == 0 and thing.work(2) == 4  # the call itself always runs
    assert asyncio.run(thing.later(0)) == 0 and asyncio.run(thing.later(1)) == 3
    assert seen == [(None, 4), (None, 3)]
    hooks.undo()
    assert "work" not in vars(thing) and "later" not in vars(thing)


def test_a_prechecked_hook_sends_what_its_check_turns_away_to_the_original_alone():
    from jupyter_refs.dask.hooks import Hooks

    class Thing:
        def work(self, v, scale=1):
            return v * scale

        async def later(self, v):
            return v * 3

    def check(args, kwargs):
        if args[0] == "boom":
            raise LookupError("a check in doubt")
        return args[0] == 0

    thing, seen = Thing(), []
    hooks = Hooks(lambda label, exc: seen.append(("failed", label)))
    for name in ("work", "later"):
        hooks.attr(thing, name, before=lambda v, **kw: seen.append(("before", v)),
                   after=lambda state, result, v, **kw: seen.append(("after", result)), skip=check)
    assert thing.work(0, scale=5) == 0 and asyncio.run(thing.later(0)) == 0  # turned away
    assert seen == []
    assert thing.work(2, scale=5) == 10 and asyncio.run(thing.later(1)) == 3
    assert thing.work("boom") == "boom"  # the check raised: the observers judge the call
    assert seen == [("before", 2), ("after", 10), ("before", 1), ("after", 3),
                    ("before", "boom"), ("after", "boom")]
    assert inspect.iscoroutinefunction(thing.later) and not inspect.iscoroutinefunction(thing.work)
    hooks.undo()
    assert "work" not in vars(thing) and "later" not in vars(thing)


def test_a_one_key_trace_keeps_the_other_keys_calls_from_its_observers(inproc, monkeypatch):
    """Once the focus has turned a key down, the pre-checks send dask's per-future calls about it
    (a reference taken and dropped, the release sent and received, the report, the free)
    straight to dask: the observers are called for the key in focus alone, and its story is
    whole."""
    from jupyter_refs.dask import tracer as tracer_module

    observed = []
    for cls, names in ((tracer_module.DaskTracer, ("_dec_ref", "_send", "_report_before")),
                       (remote.SchedulerRecorder, ("_releases",)),
                       (remote.WorkerRecorder, ("_received",))):
        for name in names:
            real = getattr(cls, name)

            def spy(self, *args, _real=real, _name=name, **kwargs):
                observed.append((_name, args, kwargs))
                return _real(self, *args, **kwargs)

            monkeypatch.setattr(cls, name, spy)
    keys = [f"gated-{i:02d}" for i in range(40)]
    with attach(inproc, keys=keys[9]) as tracer:
        futures = inproc.map(inc, range(40), key=keys)
        assert sum(inproc.gather(futures)) == 820
        del futures
        tracer.sync()
        # The scheduler forgets the keys first; the worker hears of it later, in a free-keys on
        # the batched stream, which ``sync``'s RPCs can overtake: wait for both to be empty.
        deadline = time.monotonic() + 10
        while (inproc.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks))
               or any(inproc.run(lambda dask_worker: len(dask_worker.state.tasks)).values())):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        tracer.sync()

        def named(args: tuple, kwargs: dict) -> list:
            msg = args[0] if args and isinstance(args[0], dict) else kwargs
            found = [*msg.get("keys", ()), msg.get("key"), *(a for a in args if a in keys)]
            return [k for k in found if k in keys]

        # A message about many keys (the map's update-graph) is observed, and filtered there;
        # of the calls about one key, only the focused key's reach an observer.
        single = [name for name, args, kwargs in observed if len(named(args, kwargs)) == 1
                  and named(args, kwargs) != [keys[9]]]
        assert single == []
        assert {name for name, *_ in observed} >= {"_dec_ref", "_report_before", "_releases",
                                                    "_received"}
        kinds = {e.kind for e in tracer.trace.events(key=keys[9])}
        assert {"refcount.dec", "release.applied", "worker.free"} <= kinds
        assert tracer.violations == []


def test_remote_buffers_are_bounded():
    rec = remote.Recorder("scheduler", capacity=10)
    for i in range(25):
        rec.record("transition", f"k{i}", extra=("a", "b", "s"))
    msg = rec.drain()
    events = list(remote.events(msg["events"]))
    assert len(events) == 10 and msg["dropped"] == 15
    assert [e[2] for e in events] == [f"k{i}" for i in range(15, 25)]  # the oldest went first
    assert all(e[1] == "transition" and e[6] == ("a", "b", "s") for e in events)  # whole events


def worker_events(tracer) -> list:
    return [e for e in tracer.trace.events(kind=("worker.put", "worker.free"))
            if e.actor.startswith("worker:")]


@pytest.mark.slow
def test_worker_processes_report_their_data():
    with LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        with attach(client) as tracer:
            futures = client.map(lambda v: v * 2, range(20))
            assert client.gather(futures) == [v * 2 for v in range(20)]
            del futures
            time.sleep(0.2)  # let the releases reach the workers: we then look for frees
            tracer.sync()
            events = worker_events(tracer)
            actors = {e.actor for e in events}
            assert len(actors) == 2, actors  # both worker processes
            kinds = {e.kind for e in events}
            assert kinds == {"worker.put", "worker.free"}


@pytest.mark.slow
def test_separate_scheduler_and_worker_processes(dask_cli):
    """`dask scheduler` and `dask worker` on 127.0.0.1: the layout of a multi-machine cluster."""
    sched_file = dask_cli(1)
    with Client(scheduler_file=str(sched_file), timeout=60) as client:
        client.wait_for_workers(1, timeout=60)
        with attach(client) as tracer:
            failed = crusaderky(client, 500)
            tracer.sync()
            events = worker_events(tracer)
            assert events and all(e.actor.startswith("worker:127.0.0.1:") for e in events)
            assert any(e.kind == "transition" and e.actor == "scheduler"
                       for e in tracer.trace.events(kind="transition"))
            if failed is not None:
                assert any(v.name == "dangling_future" for v in tracer.violations)


@pytest.mark.slow
def test_magics_attach_to_a_real_cluster(inproc, capsys):
    from IPython import get_ipython
    from IPython.core.error import UsageError
    from IPython.testing.globalipapp import start_ipython

    ip = start_ipython() or get_ipython()
    ip.run_line_magic("load_ext", "jupyter_refs")
    try:
        ip.user_ns["dc"] = inproc
        for bad, says in [("--attach nothing_here", "not a dask"),
                          ("--attach dc --protocol fixed", "--protocol only apply"),
                          ("--dask tcp://127.0.0.1:1", "cannot connect")]:
            with pytest.raises(UsageError, match=says):
                ip.run_line_magic("cluster", bad)
        ip.run_line_magic("cluster", "--attach dc --keys inc-")
        assert ip.user_ns["cluster"].focused.patterns  # traced from the start, one key family
        ip.run_line_magic("cluster", "--attach dc --ordered-scatter")
        tracer = ip.user_ns["cluster"]
        assert tracer.focused is None
        assert ip.user_ns["client"] is inproc and tracer.client is inproc
        ip.run_line_magic("scatter", "x = 7")
        ip.run_line_magic("scatter", "x = 7")  # drops the old x first: #8576, here ordered
        capsys.readouterr()
        ip.run_line_magic("step", "")  # nothing is held: nothing to deliver
        assert "delivered: nothing" in capsys.readouterr().out
        for nonsense in ("nonsense", "client:1->nowhere"):
            with pytest.raises(UsageError, match="is not a channel of this cluster: its streams "
                                                 "are client:1->scheduler, "):
                ip.run_line_magic("hold", nonsense)
        ip.run_line_magic("hold", "client:1->scheduler")
        assert tracer.held == {"client:1->scheduler"}
        ip.run_line_magic("hold", "--off")
        assert tracer.held == set()
        capsys.readouterr()
        ip.run_line_magic("refs", "--text")
        out = capsys.readouterr().out
        assert ip.user_ns["x"].key in out and "client:1=1/finished" in out
        ip.run_line_magic("timeline", "")  # a timeline of the real trace (no step controls)
        assert any(e.actor == "scheduler" for e in tracer.trace.events(kind="transition"))
        # What the JupyterLab sidebar is sent follows the traced dask cluster.
        from jupyter_refs.magics import RefsMagics
        from jupyter_refs.views.lab import refs_message

        magics = next(m for m in ip.magics_manager.registry.values() if isinstance(m, RefsMagics))
        assert magics.lab.source is tracer
        sent = refs_message(tracer)
        assert sent["cluster"]["title"] == tracer.title
        row = next(r for r in sent["rows"] if r["key"] == ip.user_ns["x"].key)
        assert row["clients"] == {"client:1": [1, "finished"]} and row["scheduler"] == "memory"
    finally:
        ip.user_ns.pop("x", None)
        ip.run_line_magic("unload_ext", "jupyter_refs")  # closes the handle: detaches
        for name in ("client", "cluster", "dc"):
            ip.user_ns.pop(name, None)
    assert inproc.run_on_scheduler(lambda dask_scheduler: remote.SCHEDULER_PLUGIN
                                   not in dask_scheduler.plugins)


def test_a_late_source_holds_the_live_merge_back(inproc):
    """A controlled delivery, not a timed race: batches from a fictitious slow worker are handed
    to the tracer by hand, stamped as taken one second ago.  Until that worker says it has
    caught up, the client's newer events wait outside the trace, so no check judges them
    before what came earlier elsewhere; a source silent for longer than ``stale`` is not
    waited for."""
    with attach(inproc) as tracer:
        tracer.sync()
        second = 1_000_000_000
        t0 = time.time_ns()
        slow = {"src": "tcp://127.0.0.1:1", "events": [], "dropped": 0, "batch": 1, "now": t0 - second}
        tracer._on_remote((t0, slow))
        gone = {"src": "tcp://127.0.0.1:2", "events": [], "dropped": 0, "batch": 1,
                "now": t0 - 6 * second}  # silent for longer than stale (5 s): not waited for
        tracer._on_remote((t0, gone))
        x = inproc.scatter(5, hash=False)
        assert tracer.watermark(time.time_ns()) == t0 - second
        tracer.merge_upto(tracer.watermark(time.time_ns()))
        with following():  # what the merge let in (a reader would sync it all)
            assert not tracer.trace.events(key=x.key)  # held back behind the slow worker
        t1 = time.time_ns()
        tracer._on_remote((t1, {**slow, "batch": 2, "now": t1}))
        # The real scheduler and worker say so too, in their next (heartbeat) batches.
        deadline = time.monotonic() + 10
        while tracer.watermark(time.time_ns() + tracer.lag_ns) < t1 and time.monotonic() < deadline:
            time.sleep(0.05)
        tracer.merge_upto(tracer.watermark(time.time_ns() + tracer.lag_ns))
        with following():
            kinds = [e.kind for e in tracer.trace.events(key=x.key)]
        assert "future.created" in kinds or "refcount.inc" in kinds
        del x


def test_identical_messages_in_flight_pair_oldest_first(inproc):
    """Receipts pair with their sends by signature (sender, receiver, op, keys), the oldest
    unmatched send first, however many identical ones are in flight; a receipt whose send
    is not in the trace gets an id of its own.  The scheduler's free-keys to a fictitious
    worker and that worker's receipts are handed to the tracer by hand, in a known order
    (10 ms apart: more than any clock offset the tracer applies to a source in process)."""
    with attach(inproc) as tracer:
        tracer.sync()
        t0 = time.time_ns() - 1_000_000_000
        worker = "tcp://127.0.0.1:1"

        def messages(kind: str, peer: str, at: tuple[int, ...]) -> tuple:
            return tuple(item for t in at for item in (
                t0 + t * 10_000_000, kind, None, "free-keys", peer, ("k-pair",), ()))

        # Sent at 0, 1, 4; received at 2, 3, 5, 6 (the last one's send is not in the trace).
        tracer._on_remote((t0, {"src": "scheduler", "dropped": 0, "batch": 0,
                                "events": messages("msg.sent", worker, (0, 1, 4))}))
        tracer._on_remote((t0, {"src": worker, "dropped": 0, "batch": 0,
                                "events": messages("msg.received", "scheduler", (2, 3, 5, 6))}))
        tracer.sync()
        rows = [(e.kind, e.msg_id, e.channel) for e in tracer.trace.events(key="k-pair")]
        assert [kind for kind, _, _ in rows] == (["msg.sent"] * 2 + ["msg.received"] * 2
                                                 + ["msg.sent"] + ["msg.received"] * 2)
        sent = [msg_id for kind, msg_id, _ in rows if kind == "msg.sent"]
        received = [msg_id for kind, msg_id, _ in rows if kind == "msg.received"]
        assert received[:3] == sent and received[3] not in sent
        assert {channel for _, _, channel in rows} == {"scheduler->worker:127.0.0.1:1"}
        assert not [sig for sig in tracer.unmatched if sig[3] == ("k-pair",)]


def test_one_tracer_per_cluster(inproc):
    from jupyter_refs.dask import AlreadyTracedError

    with attach(inproc):
        with pytest.raises(AlreadyTracedError, match="already traced"):
            attach(inproc)
        assert inproc.submit(sum, [1, 2]).result() == 3  # the first tracer is intact


def test_the_merge_waits_for_someone_to_look(inproc):
    """Nobody watching: events stay buffered (off dask's event loop) until sync().

    A live subscriber, or more than ``buffer`` waiting events, starts the background merge.
    """
    def scheduler_events(tracer) -> int:
        """What the trace holds now: read as a live view reads, without asking for a merge."""
        with following():
            return sum(1 for e in tracer.trace.events(kind="transition") if e.actor == "scheduler")

    with attach(inproc, lag=0.05) as tracer:
        inproc.gather(inproc.map(lambda v: v + 1, range(20), pure=False))
        inproc.run_on_scheduler(remote.flush_scheduler)
        time.sleep(0.5)  # ten merge periods: an eager merge would have taken them in
        assert scheduler_events(tracer) == 0
        tracer.sync()
        assert scheduler_events(tracer) >= 20
        seen: list[int] = []
        tracer.trace.subscribe(lambda batch: seen.append(len(batch.rows)))  # a live view
        inproc.gather(inproc.map(lambda v: v + 2, range(20), pure=False))
        deadline = time.monotonic() + 10
        while not seen and time.monotonic() < deadline:
            time.sleep(0.05)
        assert seen, "a live subscriber got nothing from the background merge"
    with attach(inproc, lag=0.05, buffer=10) as tracer:  # a tiny buffer: merged all the same
        inproc.gather(inproc.map(lambda v: v + 3, range(20), pure=False))
        deadline = time.monotonic() + 10
        while scheduler_events(tracer) == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert scheduler_events(tracer) > 0


def test_every_reader_of_the_trace_sees_the_merged_trace(inproc):
    """The merge waits for someone to look: ``len``, ``events``, iterating and exporting look,
    as ``violations`` does — none of them shows a trace behind what happened."""
    with attach(inproc) as tracer:
        x = inproc.scatter(41)
        y = inproc.submit(inc, x)
        assert y.result(timeout=10) == 42
        n = len(tracer.trace)
        assert n > 0
        assert any(e.actor == "scheduler" and e.key == y.key and e.kind == "transition"
                   for e in tracer.trace)
        assert tracer.trace.next_seq >= n and y.key in tracer.trace.to_jsonl()


def test_why_explains_the_real_8576_loop(inproc):
    """The chain of a real dask loss, from the user's `del x` to the loss: the release sent,
    received after a later scatter (or freeing the data a later scatter put), forgotten."""
    with attach(inproc) as tracer:
        assert crusaderky(inproc, 500) is not None, "the loop did not fail in 500 iterations"
        tracer.sync()
        dangling = next(v for v in tracer.violations if v.name == "dangling_future")
        chain = tracer.why(dangling.key)
        texts = [s.text for s in chain.steps]
        first = chain.steps[0]
        assert first.kind == "refcount.dec" and first.cell.startswith(__file__), chain
        assert "`del x` → client:1 refcount 1→0" in first.text, chain
        assert chain.loss.startswith("dangling_future")
        released = next(i for i, t in enumerate(texts) if "received `client-releases-keys`" in t)
        assert any("forgotten" in t or "deleted its copy" in t for t in texts[released:]), chain
        assert chain.steps[-1].kind == "end", chain


def test_the_users_lines_are_stamped_on_dask(inproc):
    """A drop is stamped with the line that dropped the future (dask releases it later, on
    its event loop), a call with the line that made it; a scatter's reply is paired with its
    request, on its channel."""
    with attach(inproc) as tracer:
        x = inproc.scatter(31)
        scattered = sys._getframe().f_lineno - 1
        key = x.key
        del x
        dropped = sys._getframe().f_lineno - 1
        def gone() -> bool:  # forgotten by the scheduler, freed by the worker
            return inproc.run_on_scheduler(remote.task_state, key=key) == "forgotten" and not any(
                inproc.run(lambda dask_worker: key in dask_worker.data).values())

        deadline = time.monotonic() + 10
        while not gone():
            assert time.monotonic() < deadline, "the release never reached the worker"
            time.sleep(0.01)
        tracer.sync()
        events = tracer.trace.events(key=key)
        cells = {(e.kind, e.op): e.cell for e in events if e.actor == "client:1"}
        assert cells[("refcount.dec", None)] == cells[("msg.sent", "client-releases-keys")] == (
            f"{__file__}:{dropped}")
        assert cells[("msg.sent", "scatter")] == cells[("refcount.inc", None)] == (
            f"{__file__}:{scattered}")
        assert cells[("msg.received", "scatter-reply")] is None  # not the user's: the reply
        [request] = [e for e in events if e.kind == "msg.sent" and e.op == "scatter"]
        [sent, received] = [e for e in events if e.op == "scatter-reply"]
        assert (sent.actor, sent.kind, received.kind) == ("scheduler", "msg.sent", "msg.received")
        assert sent.msg_id == received.msg_id and sent.channel == received.channel == request.channel
        # The worker's free-keys is traced at both ends, after the release that caused it.
        frees = [e for e in events if e.op == "free-keys"]
        assert [e.kind for e in frees] == ["msg.sent", "msg.received"]
        assert frees[0].actor == "scheduler" and frees[1].actor.startswith("worker:")


def test_a_call_from_a_thread_pool_is_stamped_with_the_users_line(inproc):
    """Lesson 04 scatters from a ``ThreadPoolExecutor``: the pool's thread runs only library
    code, so its call (and a chain through it) is stamped with the user's line the main
    thread runs — not ``concurrent/futures/thread.py``."""
    from concurrent.futures import ThreadPoolExecutor

    with attach(inproc) as tracer, ThreadPoolExecutor(1) as pool:
        x = pool.submit(inproc.scatter, 37).result(timeout=10); line = sys._getframe().f_lineno  # noqa: E702
        cells = {e.cell for e in tracer.trace.events(key=x.key) if e.actor == "client:1" and e.cell}
        assert cells == {f"{__file__}:{line}"}


def test_attach_returns_once_the_scheduler_has_taken_the_subscription(inproc):
    """``subscribe_topic`` goes on the batched stream, and the plugins' RPCs can overtake it:
    a batch published before it is taken goes to nobody.  ``attach`` waits for it, so even a
    ``detach`` at once finds the last batch it waits for (it once timed out after ``confirm``)."""
    for _ in range(5):
        tracer = attach(inproc)
        assert inproc.run_on_scheduler(remote.subscribed, client=inproc.id)
        tracer.detach()
        assert tracer.closed
