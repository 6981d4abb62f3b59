"""Many sources: a scheduler and 8 worker processes, one killed mid-run (issue 19, item 4).

A traced cluster's events come from every process; the merge waits for the slowest
source (its batches say how far it has got).  A worker that dies must not hold the
merge back, must be marked in the trace and the views, and its death must not read
as a lost reference in the checks.
"""

from __future__ import annotations

import os
import signal
import time

import pytest

distributed = pytest.importorskip("distributed")

from distributed import Client, LocalCluster  # noqa: E402

from jupyter_refs.checks import Checks  # noqa: E402
from jupyter_refs.dask import attach, remote  # noqa: E402
from jupyter_refs.trace import Trace  # noqa: E402
from jupyter_refs.views.lab import refs_message  # noqa: E402
from jupyter_refs.views.refs import RefsTable  # noqa: E402
from jupyter_refs.views.saved import trace_bundle  # noqa: E402
from jupyter_refs.views.text import format_events  # noqa: E402
from jupyter_refs.views.timeline import Timeline  # noqa: E402

pytestmark = pytest.mark.dask

WORKERS = 8
TASKS = 800
SECOND = 1_000_000_000


def _remote_functions():
    """The functions the cluster runs, made here so that they travel by value: by reference,
    each of 8 processes would import this module (bokeh and all) to unpickle them."""

    def double_slowly(i: int) -> int:
        time.sleep(0.02)  # a task that takes a while: the map still runs when a worker dies
        return 2 * i

    def results_on(dask_scheduler, worker: str, prefix: str) -> int:
        ws = dask_scheduler.workers.get(worker)
        return sum(ts.key.startswith(prefix) for ts in ws.has_what) if ws is not None else 0

    return double_slowly, results_on


def _name(address: str) -> str:
    return "worker:" + address.split("://", 1)[1]


def _until(condition, timeout: float, what: str) -> float:
    """Poll a real condition; returns how long it took.  Fails after ``timeout``."""
    start = time.monotonic()
    while not condition():
        assert time.monotonic() - start < timeout, f"{what}: not within {timeout} s"
        time.sleep(0.05)
    return time.monotonic() - start


@pytest.mark.slow
def test_eight_worker_processes_one_killed_mid_run(dask_cli, capsys):
    """8 ``dask worker --no-nanny`` processes: a SIGKILLed one stays dead (a nanny would start
    a new process under a new address, a tenth source; without one, what the scheduler sees
    is exactly a worker process dying: its stream closes)."""
    double_slowly, results_on = _remote_functions()
    started = time.monotonic()
    sched_file = dask_cli(WORKERS, "--no-nanny")
    with Client(scheduler_file=str(sched_file), timeout=120) as client:
        client.wait_for_workers(WORKERS, timeout=300)
        startup = time.monotonic() - started
        pids = client.run(os.getpid)
        phases = {"startup": startup}
        mark = time.monotonic()
        victim, retiree = sorted(pids)[:2]
        # stale far beyond the test's patience: a watermark that moves says the removal did it.
        with attach(client, stale=60) as tracer:
            phases["attach"], mark = time.monotonic() - mark, time.monotonic()
            x = client.scatter(12345, workers=[victim])  # data only the victim holds
            futures = client.map(double_slowly, range(TASKS))
            prefix = futures[0].key.split("-")[0]
            # Kill once the victim has results of its own: real progress, not a sleep.
            _until(lambda: client.run_on_scheduler(results_on, worker=victim, prefix=prefix) >= 3,
                   120, "the victim finishing three tasks")
            phases["to the kill"], mark = time.monotonic() - mark, time.monotonic()
            killed = time.time_ns()
            os.kill(pids[victim], signal.SIGKILL)
            waited = _until(lambda: tracer.watermark(time.time_ns()) > killed, 30,
                            "the watermark passing the kill (it would wait stale = 60 s)")
            assert client.gather(futures, errors="raise") == [2 * i for i in range(TASKS)]
            _until(lambda: x.status != "finished", 30, "the client hearing its data is lost")
            phases["rest of the map"], mark = time.monotonic() - mark, time.monotonic()
            client.retire_workers([retiree])
            _until(lambda: _name(retiree) in tracer.gone, 30, "the retired worker marked gone")
            tracer.sync(timeout=60)
            phases["retire, sync"], mark = time.monotonic() - mark, time.monotonic()

            trace = tracer.trace
            names = {_name(a) for a in pids}
            live = names - {_name(victim), _name(retiree)}
            actors = {e.actor for e in trace.events()}
            assert {"scheduler", *names} <= actors  # all 9 sources, the dead one included
            removed = {e.fields["worker"]: e for e in trace.events(kind="worker.removed")}
            assert set(removed) == {_name(victim), _name(retiree)}
            dead = removed[_name(victim)].fields
            assert dead["reason"].startswith("connection lost")
            assert dead["stimulus_id"].startswith("handle-worker-cleanup")
            assert dead["recompute"] >= 3 and dead["lost"] == 1  # its results; x
            assert removed[_name(retiree)].fields["reason"] == "retired"
            assert tracer.gone[_name(victim)] >= killed
            # The trace kept going: live workers' events after the kill.
            after = {e.actor for e in trace.events(kind=("worker.put", "worker.free"))
                     if e.t_ns > killed}
            assert after & live
            # Its data is gone with it; the scheduler said so (x: lost data, cancelled).  Not a
            # lost reference: no violation.
            assert x.status in ("lost", "cancelled")
            assert tracer.violations == []
            # The views mark it.
            text = format_events(trace.events(kind="worker.removed"))
            assert f"{_name(victim)} gone (connection lost" in text
            assert f"{_name(retiree)} gone (retired)" in text
            table = RefsTable(tracer, keys=[x.key], live=False)
            refs = table.to_text()
            table.close()
            assert f"gone: {_name(victim)} (connection lost" in refs
            for address, event in ((victim, removed[_name(victim)]),
                                   (retiree, removed[_name(retiree)])):
                # The saved bundle's window: the latest events up to the removal.
                bundle = trace_bundle(trace, until=event.seq + 1)
                assert f"{_name(address)} (gone)" in [lane["name"] for lane in bundle["lanes"]]
            timeline = Timeline(tracer, keys=[x.key], live=False)
            labels = set(timeline.figure.fig.yaxis.major_label_overrides.values())
            timeline.close()
            assert f"{_name(victim)} (gone)" in labels
            assert not any(label.endswith("(gone)") for label in labels
                           if label.removesuffix(" (gone)") in live)
            phases["checks, views"], mark = time.monotonic() - mark, time.monotonic()
        phases["detach"] = time.monotonic() - mark
    with capsys.disabled():
        print(f"\n{WORKERS} worker processes up in {startup:.1f} s; watermark past the kill "
              f"{waited:.2f} s after it; {len(trace)} events; "
              + ", ".join(f"{phase} {t:.1f} s" for phase, t in phases.items()))


def test_a_retired_worker_is_marked_and_not_waited_for():
    double_slowly, _ = _remote_functions()
    with LocalCluster(n_workers=2, processes=False, threads_per_worker=1,
                      dashboard_address=":0") as cluster, Client(cluster) as client, \
            attach(client, stale=60) as tracer:
        futures = client.map(double_slowly, range(20))
        assert client.gather(futures) == [2 * i for i in range(20)]
        retiree = sorted(client.scheduler_info()["workers"])[0]
        retired = time.time_ns()
        client.retire_workers([retiree])
        _until(lambda: _name(retiree) in tracer.gone, 30, "the retired worker marked gone")
        _until(lambda: tracer.watermark(time.time_ns()) > retired, 30, "the watermark moving on")
        assert client.gather(futures) == [2 * i for i in range(20)]  # its data moved first
        tracer.sync()
        (removed,) = tracer.trace.events(kind="worker.removed")
        assert removed.fields["worker"] == _name(retiree)
        assert removed.fields["reason"] == "retired"
        assert (removed.fields["recompute"], removed.fields["lost"]) == (0, 0)
        assert tracer.violations == []
        # The sidebar's feed says so too (labextension/test/sidebar.test.ts draws it).
        assert refs_message(tracer)["cluster"]["gone"] == {_name(retiree): "retired"}


def test_a_removed_source_is_not_waited_for_and_its_last_batch_is_still_merged(inproc):
    """Batches handed to the tracer by hand (as in test_dask.py's late-source test): a worker
    that says it has got only as far as a second ago holds the merge back until the scheduler
    says it is gone; a batch of it that comes after that is merged, not lost."""
    with attach(inproc, stale=60) as tracer:
        tracer.sync()
        t0 = time.time_ns()
        worker = "tcp://127.0.0.1:1"
        slow = {"src": worker, "events": [], "dropped": 0, "batch": 1, "now": t0 - SECOND}
        tracer._on_remote((t0, slow))
        assert tracer.watermark(time.time_ns()) == t0 - SECOND
        removal = ("worker.removed", None, None, None, (),
                   (worker, "connection lost: killed, crashed or closed", "handle-worker-cleanup-1",
                    0, 0))
        tracer._on_remote((t0, {"src": "scheduler", "events": remote.flatten([(t0, *removal)]), "dropped": 0,
                                "batch": 0, "gone": [(worker, t0)], "now": t0}))
        assert tracer.gone == {"worker:127.0.0.1:1": t0}
        _until(lambda: tracer.watermark(time.time_ns()) > t0, 10, "the watermark moving on")
        late = (t0 - SECOND // 2, "worker.put", "late-key", None, None, (), (0, ()))
        tracer._on_remote((t0, {**slow, "events": remote.flatten([late]), "batch": 2, "now": t0}))
        tracer.merge_upto(None)
        put = tracer.trace.events(key="late-key")
        assert [(e.kind, e.actor) for e in put] == [("worker.put", "worker:127.0.0.1:1")]
        (gone,) = tracer.trace.events(kind="worker.removed")
        assert gone.fields["worker"] == "worker:127.0.0.1:1"


def _holding(trace: Trace, key: str) -> None:
    """client:1 holds a finished future for ``key``, in memory on worker:a alone."""
    trace.record("client:1", "future.created", key, 1, "scatter", 1)
    trace.record("client:1", "refcount.inc", key, 0, 1)
    trace.record("scheduler", "scatter.registered", key, ("worker:a",), ("client:1",))
    trace.record("worker:a", "worker.put", key, 0, ())
    trace.record("client:1", "future.state", key, "pending", "finished", None, None)


def test_data_lost_with_its_worker_is_not_a_lost_reference_but_a_release_still_is():
    trace = Trace()
    checks = Checks(trace)
    _holding(trace, "lost-with-a")
    _holding(trace, "released")
    trace.record("scheduler", "worker.removed", None, "worker:a", "connection lost", "cleanup-1",
                 0, 1)
    trace.record("scheduler", "transition", "lost-with-a", "memory", "forgotten", "cleanup-1")
    trace.record("scheduler", "transition", "released", "memory", "forgotten", "client-releases-1")
    trace.flush()
    assert [(v.name, v.key) for v in checks.violations] == [("dangling_future", "released")]
    assert checks.beliefs.gone == {"worker:a": "connection lost"}
    assert "worker:a" not in checks.snapshot(["released"])[0].on_workers
