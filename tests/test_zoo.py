"""The race zoo: each race found under the release it affects, absent under its fix."""

from __future__ import annotations

import time

import pytest

from jupyter_refs import explore, replay, zoo
from jupyter_refs.errors import ProtocolError
from jupyter_refs.protocol.variants import DASK, DASK_2024_7, OLDEST, get_variant
from jupyter_refs.zoo import RACES, inc


@pytest.mark.parametrize("name", sorted(RACES))
def test_each_race_is_found_under_its_release_and_replays(name):
    race = RACES[name]
    result = race.find(first=True, processes=1)
    found = race.failures(result)[0]
    again = replay(race.scenario, found.schedule)
    assert race.names & {v.name for v in again.violations}


@pytest.mark.parametrize("name,protocol", [(n, p) for n, r in sorted(RACES.items())
                                           for p in r.absent_under])
def test_each_race_is_absent_under_its_fix(name, protocol):
    race = RACES[name]
    result = race.find(protocol, max_schedules=1500, processes=1)
    assert race.failures(result) == [], result.summary()
    if protocol == "fixed":
        assert result.failures == [], [f.explain() for f in result.failures]


def test_a_release_is_modelled_by_the_changes_before_it():
    before, after = get_variant("dask-2024.8.1"), get_variant("dask-2024.8.2")
    assert (before.deserialized_claims, before.desire_creates) == (True, True)
    assert (after.deserialized_claims, after.desire_creates) == (False, False)
    # The named variants agree with the releases they stand for.
    assert (DASK_2024_7.deserialized_claims, DASK_2024_7.desire_creates) == (True, True)
    assert get_variant("dask-2026.8.0").desire_creates == DASK.desire_creates


def test_9217_is_a_hung_future_before_2026_6_and_none_after():
    """PR 9217 shipped in 2026.6.0: before, the delete overtakes the reader's desire and the
    reader's future hangs (``hung_future``); from 2026.6.0 the delete waits for the stream."""
    assert get_variant("dask-2026.3.0").unpublish_unordered
    assert not get_variant("dask-2026.6.0").unpublish_unordered and not DASK.unpublish_unordered
    race = RACES["9217"]
    found = race.find(first=True, processes=1)
    [failure] = race.failures(found)
    assert "hung_future" in failure.names and failure.raised.name == "HeldMessagesError"
    assert "publish_delete" in failure.explain() and "client-desires-keys" in failure.explain()
    # In order (no message overtakes another) the same release returns the value.
    in_order = replay(race.scenario, failure.schedule.split(":")[0] + ":")
    assert (in_order.raised, in_order.returned, in_order.violations) == (None, "123", [])


@pytest.mark.parametrize("name,says", [("dask-1.16.0", "differs in mechanisms the model does "
                                                        "not carry"),
                                       ("dask-2021.9.0", "the worker without its state machine"),
                                       ("dask-2027.1.0", "newer than today's"),
                                       ("dask-2026.5.1", "no release 2026.5.1 .the nearest: "
                                                         "2026.3.0, 2026.6.0"),
                                       ("dask-2024", "dask-<release>")])
def test_a_release_outside_the_range_says_which_range_is_modelled(name, says):
    with pytest.raises(ProtocolError, match=says) as raised:
        get_variant(name)
    assert OLDEST in str(raised.value) and "2026.8.0" in str(raised.value)


def test_8577_drops_the_annotations_before_2024_4_2_and_not_after():
    """PR 8577 shipped in 2024.4.2: before, publish_put overtakes the graph; its desire makes
    the task and update_graph gives it the run spec without ``retries``."""
    assert get_variant("dask-2024.3.0").publish_unordered
    assert get_variant("dask-2024.4.1").publish_unordered
    assert not get_variant("dask-2024.4.2").publish_unordered
    race = RACES["8577"]
    [failure] = race.failures(race.find(first=True, processes=1))
    assert failure.names == ("annotations_dropped",) and "runs without its retries" in str(
        failure.violations[0])
    run = replay(race.scenario, failure.schedule, keep_open=True)
    try:
        [ts] = run.cluster.scheduler.tasks.values()
        assert (ts.retries, ts.run_spec["retries"], run.returned) == (0, None, "2")
    finally:
        run.cluster.close()
    in_order = replay(race.scenario, failure.schedule.split(":")[0] + ":", keep_open=True)
    try:
        [ts] = in_order.cluster.scheduler.tasks.values()
        assert (ts.retries, in_order.violations) == (2, [])
    finally:
        in_order.cluster.close()


def test_8215_is_a_finding_in_order_and_the_smallest_fix_is_a_generation():
    """The in-order run is the failing one; cancelled-keys carrying the hold's generation
    (fixed's ``generations``, incarnations off) is enough for no order to cancel the new
    future.  (Without incarnations the explorer's task run between two messages of one batch
    still loops, as under dask: a LivelockError, not this race.)"""
    import dataclasses

    from jupyter_refs import explore
    from jupyter_refs.protocol.variants import FIXED

    race = RACES["8215"]
    found = race.find(max_schedules=300, processes=1, sample=False)
    assert found.failures[0].schedule.endswith(":")  # the in-order one, first
    generations = dataclasses.replace(FIXED, name="generations-only", incarnations=False,
                                      fire_and_forget_ended=False)
    clean = explore(race.scenario, protocol=generations, max_schedules=1500, processes=1)
    cancelled = [f for f in clean.failures
                 if "outcome_differs" in f.names or (f.raised and "Cancelled" in f.raised.name)]
    assert cancelled == [], clean.summary()


@pytest.mark.dask
def test_8215_in_order_is_confirmed_on_real_dask(inproc):
    """The model's in-order failure — the new future cancelled — is what real dask does."""
    from jupyter_refs.dask.confirm import confirm

    race = RACES["8215"]
    in_order = race.find(max_schedules=300, processes=1, sample=False).failures[0]
    result = confirm(race.scenario, in_order, inproc)
    assert result.confirmed, str(result)
    assert result.outcome.startswith("raised FutureCancelledError")
    assert in_order.confirmed.startswith("confirmed on distributed")


@pytest.mark.dask
def test_8215_returning_order_is_confirmed_on_real_dask(inproc):
    """The other side of #8215: the order in which the model's scenario returns where in order
    it raises (outcome_differs, which a replay alone does not judge: confirm compares it with
    the in-order run, as explore did) is made on real dask, and real dask returns too."""
    from jupyter_refs.dask.confirm import confirm

    race = RACES["8215"]
    returning = next(f for f in race.find(max_schedules=300, processes=1, sample=False).failures
                     if f.names == ("outcome_differs",))
    result = confirm(race.scenario, returning, inproc)
    assert result.confirmed, str(result)
    assert result.outcome == f"returned {returning.run.returned}"
    assert str(result).startswith(f"confirmed on distributed {result.version}: outcome_differs: "
                                  "the scenario returned")


@pytest.mark.dask
def test_the_ghosts_order_forced_on_2026_8_shows_the_fix_holding(inproc):
    """PR 8827 shipped in 2024.8.2: under the order that makes the ghost on dask-2024.8.1, the
    real 2026.8 scheduler creates no task for the forgotten key."""
    from jupyter_refs.dask.confirm import confirm

    race = RACES["7498"]
    failure = race.failures(race.find(first=True, processes=1))[0]
    result = confirm(race.scenario, failure, inproc, attempts=1, stall=1.0, timeout=20)
    assert result.enforced and not result.confirmed, str(result)
    assert "ghost_task" not in {v.name for v in result.violations}


def _publish_then_get_late(readers: str, stream_late: float) -> tuple[object, bool]:
    """On real dask 2026.8.0, over TCP (in-process comms hand the published objects back
    unserialized): the owner publishes x and lets go, the reader takes the dataset while its
    stream flushes ``stream_late`` s late, then the owner unpublishes.  The reader's result
    (or the exception's type), and whether the scheduler still knows x."""
    import logging

    import distributed
    from distributed.metrics import time as dask_time

    logging.getLogger("distributed").setLevel(logging.CRITICAL)
    with distributed.LocalCluster(processes=False, protocol="tcp", n_workers=1,
                                  threads_per_worker=1, dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as owner, distributed.Client(cluster) as other:
        reader = owner if readers == "owner" else other
        scheduler = cluster.scheduler
        x = owner.submit(inc, 122, key="x")
        owner.publish_dataset(x=x)
        x.release()
        deadline = dask_time() + 10
        while scheduler.clients[owner.id] in scheduler.tasks["x"].who_wants:
            assert dask_time() < deadline
            time.sleep(0.01)
        reader.scheduler_comm.next_deadline = dask_time() + stream_late
        y = reader.get_dataset("x")
        owner.unpublish_dataset("x")
        try:
            outcome = y.result(timeout=stream_late + 1)
        except Exception as exc:  # noqa: BLE001 - the outcome compared
            outcome = type(exc).__name__
        return outcome, "x" in scheduler.tasks


@pytest.mark.dask
def test_9217_two_clients_is_open_on_real_dask_and_the_fix_holds_for_one():
    """2026.8.0: with the reader's stream late, the owner's unpublish forgets x under the
    reader's future, which then never finishes; when the reader is the owner (PR 9217's own
    case), the delete waits for its stream and the value comes back."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Client … desires key 'x' but key is unknown"
        assert _publish_then_get_late("other", 0.5) == ("TimeoutError", False)
        assert _publish_then_get_late("owner", 0.5) == (123, True)


def test_a_development_version_is_modelled_only_where_a_change_names_it():
    """No release had PR 1132's and PR 1133's races (Variable and Queue came days before their
    fixes, all in 1.17.0): the state before the fixes is ``dask-1.17.0.dev0``, named by its
    ``Change``; any other unreleased name is refused, saying which one is modelled."""
    dev = get_variant("dask-1.17.0.dev0")
    assert dev.variable_readers_by_client and dev.queue_uncounted
    # Every change after it is off as well: it is the oldest state the model has.
    assert dev.desire_creates and dev.publish_unordered
    assert not DASK.variable_readers_by_client and not DASK.queue_uncounted
    for name in ("dask-2024.4.2.dev0", "dask-1.17.0rc1", "dask-1.17.0.dev1", "dask-1.17.0.dev"):
        with pytest.raises(ProtocolError, match="dask-1.17.0.dev0"):
            get_variant(name)


def _as_1_17_0():
    """1.17.0 for these two races: the development state with the two fixes in (what
    ``dask-1.17.0`` is once OLDEST reaches it; until then it is refused)."""
    import dataclasses

    return dataclasses.replace(get_variant("dask-1.17.0.dev0"), name="as-1.17.0",
                               variable_readers_by_client=False, queue_uncounted=False)


@pytest.mark.parametrize("name", ["1132", "1133"])
def test_1132_and_1133_are_absent_with_their_fixes_alone(name):
    race = RACES[name]
    result = race.find(_as_1_17_0(), max_schedules=1500, processes=1)
    assert race.failures(result) == [], result.summary()


def test_1132_is_a_second_get_overtaking_the_first_confirmation():
    """The variable counts its readers by client: the second get, overtaking the first get's
    confirmation, adds nobody; in order (confirmation first) the value comes back."""
    race = RACES["1132"]
    [failure] = race.failures(race.find(first=True, processes=1))
    said = failure.explain()
    assert "variable_get" in said and "variable-future-received-confirm" in said
    run = replay(race.scenario, failure.schedule, keep_open=True)
    try:
        ext = run.cluster.scheduler.extensions
        # The pre-release the second confirmation left: the client's next get would not count.
        assert ("x", "x", "client:1") in ext.pre_released
    finally:
        run.cluster.close()
    in_order = replay(race.scenario, failure.schedule.split(":")[0] + ":")
    assert (in_order.raised, in_order.returned, in_order.violations) == (None, "2", [])


def _queue_lets_go_before_the_second_get(run) -> bool:
    events = run.cluster.trace.events()
    let_go = [e.seq for e in events if e.kind == "release.applied" and e.data[0] == "queue-q"]
    gets = [e.seq for e in events if e.kind == "msg.received" and e.op == "queue_get"]
    return bool(let_go) and let_go[0] < gets[1]


def test_1133_is_a_refcount_mistake_found_in_order():
    """Not an order: the in-order schedule fails, the queue's hold on x gone at the first get
    although the queue held x a second time; with PR 1133 it goes at the second."""
    race = RACES["1133"]
    [failure] = race.failures(race.find(first=True, processes=1))
    assert failure.schedule.endswith(":")  # the in-order one
    fixed = _as_1_17_0()
    for protocol, lets_go in ((None, True), (fixed, False)):
        schedule = (failure.schedule if protocol is None
                    else f"{fixed.name}@{failure.schedule.split('@')[1]}")
        run = replay(race.scenario, schedule, keep_open=True, protocol=protocol)
        try:
            assert _queue_lets_go_before_the_second_get(run) is lets_go
        finally:
            run.cluster.close()


@pytest.mark.dask
def test_1132s_order_on_2026_8_counts_both_gets():
    """2026.8.0 (tokens since 1.17.0): the client's stream held (the tracer's hold), so the
    second get and the set reach the scheduler before the first get's confirmation, as in the
    model's failing order; the variable still waits for two readers, keeps x, and the second
    get's future returns the value."""
    import logging

    import distributed
    from distributed.metrics import time as dask_time

    from jupyter_refs.dask import attach

    logging.getLogger("distributed").setLevel(logging.CRITICAL)
    with distributed.LocalCluster(processes=False, n_workers=1, threads_per_worker=1,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client:
        scheduler = cluster.scheduler
        v = distributed.Variable("x", client=client)
        x = client.submit(inc, 1, key="x")
        x.result()
        v.set(x)
        x.release()
        deadline = dask_time() + 10
        while scheduler.clients[client.id] in scheduler.tasks["x"].who_wants:
            assert dask_time() < deadline
            time.sleep(0.01)
        tracer = attach(client)
        tracer.hold("client:1->scheduler")  # the gets' confirmations wait on the stream
        f = v.get()
        del f
        g = v.get()
        v.set(0)
        readers = scheduler.extensions["variables"].waiting[("x", "x")]
        assert len(readers) == 2 and "x" in scheduler.tasks
        tracer.release_holds()
        assert g.result(timeout=5) == 2
        tracer.detach()


@pytest.mark.dask
def test_1133_in_order_on_2026_8_keeps_the_key(inproc):
    """2026.8.0 (PR 1133 since 1.17.0): the model's in-order failure, run on real dask, shows
    no violation: the queue keeps x for its second record, and the second get's desire finds
    it."""
    from jupyter_refs.dask.confirm import confirm

    race = RACES["1133"]
    [failure] = race.failures(race.find(first=True, processes=1))
    result = confirm(race.scenario, failure, inproc, attempts=1, stall=1.0, timeout=20)
    assert result.enforced and not result.confirmed, str(result)
    assert result.violations == [] and result.outcome == "returned 'x'"


def test_8522_is_the_heartbeat_answer_overtaking_the_close():
    """PR 8522 shipped in 2024.2.1: before, the heartbeat delivered after the removal and its
    'missing' answer delivered before the batched close restart the worker; in order (the
    heartbeat before the removal) it stays gone."""
    assert get_variant("dask-2024.2.0").heartbeat_restarts
    assert not get_variant("dask-2024.2.1").heartbeat_restarts and not DASK.heartbeat_restarts
    race = RACES["8522"]
    [failure] = race.failures(race.find(first=True, processes=1))
    said = failure.explain()
    assert "heartbeat_worker" in said and "close" in said
    run = replay(race.scenario, failure.schedule, keep_open=True)
    try:
        scheduler = run.cluster.scheduler
        assert "worker:1" in scheduler.workers and scheduler.lives == {"worker:1": 1}
        assert run.cluster.workers["worker:1"].life == 1
    finally:
        run.cluster.close()
    in_order = replay(race.scenario, failure.schedule.split(":")[0] + ":", keep_open=True)
    try:
        assert in_order.violations == [] and in_order.returned == "(['worker:0'], 2)"
        assert in_order.cluster.scheduler.workers == ["worker:0"]
    finally:
        in_order.cluster.close()


def _probe_8522():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "scripts" / "dask_8522_probe.py"
    spec = importlib.util.spec_from_file_location("dask_8522_probe", path)
    probe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(probe)
    return probe


@pytest.mark.dask
def test_8522s_order_on_2026_8_leaves_the_worker_gone():
    """2026.8.0, worker processes with nannies: retire_workers with the scheduler's close held
    back, so the worker's own heartbeat is answered 'missing' first (the model's order).  The
    worker closes with its nanny; no worker of its name registers again, and x still gathers
    (on 2024.2.0 the same probe sees it come back: scripts/confirm_in_release.py --race 8522)."""
    import distributed

    outcome = _probe_8522().one_run(distributed, timeout=20)
    assert outcome == "retired True; stayed gone (its nanny closed); x gathers 2; 1 worker(s)"


@pytest.mark.parametrize("protocol,alike", [("dask-2024.2.0", True), ("dask-2024.3.0", False),
                                            ("dask", False)])
def test_a_futures_token_is_its_keys_before_2024_3_0(protocol, alike):
    """PR 8569 (2024.3.0): before, two futures of one key tokenized alike, so ``submit(f, x)``
    gave one key for either (checked on distributed 2024.2.0 in a venv: True; 2026.8.0: False)."""
    from jupyter_refs import Cluster

    assert get_variant(protocol).future_tokens_by_key is alike
    with Cluster(protocol=protocol, workers=1, network="immediate") as cluster:
        client = cluster.client()
        x, y = client.scatter(1), client.scatter(1)
        assert x.key == y.key and x is not y
        assert (client.submit(inc, x).key == client.submit(inc, y).key) is alike


@pytest.mark.dask
def test_two_futures_of_one_key_tokenize_apart_on_2026_8(inproc):
    x, y = inproc.scatter(1), inproc.scatter(1)
    assert x.key == y.key and inproc.submit(inc, x).key != inproc.submit(inc, y).key


@pytest.mark.parametrize("name,before,after,flag", [
    ("7463", "dask-2023.1.0", "dask-2023.1.1", "unsigned_results"),
    ("7933", "dask-2023.6.1", "dask-2023.7.0", "unsigned_errors")])
def test_a_stale_run_is_taken_before_run_ids_and_dropped_after(name, before, after, flag):
    """PR 7463 (2023.1.1) signed task-finished with the run id, PR 7933 (2023.7.0) task-erred:
    before, the first run's outcome, arriving when the resubmitted key is processing on the
    same worker again, is taken as the new run's; from the fix, the same order is recognised
    as a stale run (``task.stale_run``) and the task runs again."""
    assert getattr(get_variant(before), flag) and not getattr(get_variant(after), flag)
    assert not getattr(DASK, flag)
    race = RACES[name]
    [failure] = race.failures(race.find(first=True, processes=1))
    assert "task.stale_accepted" in {e.kind for e in replay(race.scenario,
                                                            failure.schedule).trace.events()}
    assert "delivered before #5 free-keys" in failure.explain()
    # The same picks under the fix: the stale outcome is recognised, never taken.
    fixed = replay(race.scenario, after + "@" + failure.schedule.split("@", 1)[1])
    kinds = [e.kind for e in fixed.trace.events()]
    assert "task.stale_run" in kinds and "task.stale_accepted" not in kinds
    assert "stale_result" not in {v.name for v in fixed.violations}
    # In order (no message overtakes another), both releases return the second function's value.
    for protocol in (before, after):
        in_order = replay(race.scenario, protocol + "@" + failure.schedule.split("@", 1)[1]
                          .split(":")[0] + ":")
        assert (in_order.returned, in_order.violations) == ("0", [])


def test_a_late_steal_response_moves_the_task_before_2021_10_and_is_stale_after():
    """PR 5379 (2021.10.0) matched a steal-response to its request by stimulus id: before, an
    answer about the task's previous life (released while asked for, submitted again, asked
    for again) confirmed the current steal, moving the task off a worker that had not
    answered (``stale_steal``); from 2021.10.0 that answer is a ``stale-response``."""
    old, new = get_variant("dask-2021.9.1"), get_variant("dask-2021.10.0")
    assert (old.steal_by_key, old.steal_release) == (True, True)
    assert (new.steal_by_key, new.steal_release) == (False, False)
    race = RACES["5379"]
    [failure] = race.failures(race.find(first=True, processes=1))
    before = replay(race.scenario, failure.schedule)
    assert [v.name for v in before.violations] == ["stale_steal"]
    steals = [(e.kind, e.data[0]) for e in before.trace.events() if e.kind.startswith("steal.")]
    assert steals[:3] == [("steal.request", "worker:0"), ("steal.request", "worker:0"),
                          ("steal.outcome", "confirm")]
    # The victim that gave the first b up also said so (``release``, the worker before PR 5046).
    assert "release" in {e.op for e in before.trace.events() if e.kind == "msg.received"}
    after = replay(race.scenario, "dask-2021.10.0@" + failure.schedule.split("@", 1)[1])
    assert "stale_steal" not in {v.name for v in after.violations}
    assert [e.data[0] for e in after.trace.events()
            if e.kind == "steal.outcome"][:2] == ["stale-response", "confirm"]
    assert before.returned == after.returned == "(3, 1, 3)"


def _probe_apart(script: str, call: str, function: str = "probe"):
    """``asyncio.run(<call>)`` of ``scripts/<script>`` in a Python process of its own, its
    outcome read back as JSON.  An asynchronous probe makes a scheduler, workers and a client
    on its own loop; in this process that left dask's default client and scheduler setting
    behind for the tests after it (the module's ``inproc`` client could not close)."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "scripts" / script
    code = ("import asyncio, json, logging, runpy; "
            "logging.getLogger('distributed').setLevel(logging.CRITICAL); "
            f"m = runpy.run_path({str(path)!r}); print(json.dumps(asyncio.run(m[{function!r}]{call})))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.dask
@pytest.mark.parametrize("error", [False, True])
def test_7463_and_7933_orders_forced_on_2026_8_show_the_run_ids_holding(error):
    """The model's order on real dask 2026.8.0 (PR 7348's test with another function for the
    second submission, the scheduler's stream to the worker frozen): the first run's
    task-finished (task-erred) reaches the scheduler while k is processing again on the same
    worker, and is recognised as stale: the second future gets dec(1) == 0.  (On 2023.1.0 the
    same probe gets 2 and ValueError: scripts/dask_7463_probe.py in a venv of its own.)"""
    assert _probe_apart("dask_7463_probe.py", f"({error})") == 0


@pytest.mark.dask
@pytest.mark.parametrize("error", [False, True])
def test_a_late_report_gives_a_resubmitted_key_the_first_runs_outcome_on_2026_8(error):
    """Found by trace validation (the model and dask agree, order by order): the same two
    submissions with the *client's* stream frozen while the first run ends.  The scheduler,
    not yet told of the release, reports the first run to the client, where the key is the
    second future's; its gather (an RPC) passes the frozen release.  On real dask 2026.8.0,
    over TCP, the second future gets the first run's 2 (its ValueError), not dec(1) == 0: run
    ids stop a stale run at the scheduler, but no run id reaches the client (dask#1860's
    family, open).  The model's explorer finds it under ``dask`` as ``outcome_differs``."""
    expected = "ValueError" if error else 2
    assert _probe_apart("dask_7463_probe.py", f"({error})", "probe_late_report") == expected
    found = explore(zoo.resubmit_other_function, protocol="dask", bound=2, max_schedules=600,
                    processes=1, seed=0)
    assert any(f.run.returned == "2" for f in found.failures)


@pytest.mark.dask
def test_5379_order_forced_on_2026_8_is_a_stale_response():
    """The model's order on real dask 2026.8.0, forced as PR 5379's tests do (move_task_request
    by hand, the streams held): worker A's late answer to the steal of the first b is logged
    as a stale-response and the new b stays on A, which holds it.  (On 2021.9.1 the same probe
    logs a confirm and moves b to B while A still holds it: scripts/dask_5379_probe.py.)"""
    outcome = _probe_apart("dask_5379_probe.py", "()")
    assert outcome == {"processing_on": "A", "A still holds b": True, "log": ["stale-response"]}


def test_the_cancel_changes_are_modelled_from_their_releases():
    """PR 6016 shipped in 2022.5.1 and PR 7583 in 2023.3.1 (``git tag --contains``)."""
    old, mid, new = (get_variant(f"dask-{r}") for r in ("2022.5.0", "2022.5.1", "2023.3.1"))
    assert (old.cancel_reports_uncancelled, old.cancel_retry_detached, old.cancel_rpc) == (
        True, True, True)
    assert (mid.cancel_reports_uncancelled, mid.cancel_retry_detached, mid.cancel_rpc) == (
        False, False, True)
    assert not (new.cancel_rpc or new.cancel_reports_uncancelled or DASK.cancel_rpc)
    assert get_variant("dask-2023.3.2").annotations_to_existing
    assert not get_variant("dask-2023.4.0").annotations_to_existing
    assert get_variant("dask-2024.2.1").future_tokens_by_key
    assert not get_variant("dask-2024.3.0").future_tokens_by_key


def test_7583_the_cancel_gives_up_after_ten_polls_and_the_task_runs_for_nobody():
    """dask-2023.3.0: the cancel RPC overtakes the graph; its handler polls ten times (1 s)
    and gives up; the client cancels its future; the graph then makes it want the key."""
    race = RACES["7583"]
    [failure] = race.failures(race.find(first=True, processes=1))
    run = replay(race.scenario, failure.schedule)
    polls = [e for e in run.trace.events(kind="msg.received") if e.op == "cancel-poll"]
    [gave_up] = run.trace.events(kind="cancel.gave_up")
    assert len(polls) == 10 and gave_up.fields["polls"] == 10
    [v] = [v for v in run.violations if v.name == "cancel_ignored"]
    assert v.client == "client:1" and "gave up" in v.explanation
    # In order (the graph first) the same release cancels the key: nothing is kept.
    in_order = replay(race.scenario, failure.schedule.split(":")[0] + ":")
    assert in_order.violations == [] and in_order.returned == "3"
    decided = in_order.trace.events(kind="cancel.decided")
    assert [e.fields["cancelled"] for e in decided] == [True]


def test_7583_before_6016_the_rpc_answers_at_once_and_retries_five_times():
    """dask-2022.5.0: the cancel RPC answers before the key is known; call_later retries it
    five times, 0.2 s apart, and the last one gives up."""
    race = RACES["7583"]
    found = race.find("dask-2022.5.0", first=True, processes=1)
    [failure] = race.failures(found)
    run = replay(race.scenario, failure.schedule)
    polls = [e for e in run.trace.events(kind="msg.received") if e.op == "cancel-poll"]
    assert len(polls) == 5 and run.trace.events(kind="cancel.gave_up")


def test_6016_the_other_clients_future_is_cancelled_in_order_before_2022_5_1():
    """dask-2022.5.0: with both graphs in, the cancel cancels nothing (who_wants = both), yet
    reports the key cancelled to both; the other client's result() raises, while the
    scheduler keeps the key for it.  From 2022.5.1 no order does it."""
    race = RACES["6016"]
    found = race.find(processes=1, max_schedules=300)
    first = found.failures[0]
    assert first.schedule.endswith(":") and "cancelled_for_another" in first.names
    run = replay(race.scenario, first.schedule)
    assert run.raised is not None and "Cancelled" in run.raised.name
    [v] = [v for v in run.violations if v.name == "cancelled_for_another"]
    assert v.client == "client:2" and "before PR 6016" in v.explanation


def test_6016_on_today_dask_the_cancelling_clients_hold_is_kept():
    """dask since PR 7583 (2026.8.0 too): the cancel of a key another client wants releases
    nothing, so the cancelling client stays in who_wants until its future is dropped (checked
    on real dask by ``test_a_shared_keys_cancel_keeps_the_cancelling_client_on_real_dask``);
    ``fixed`` releases its hold."""
    from jupyter_refs.explore import fingerprint

    race = RACES["6016"]
    in_order = replay(race.scenario, f"dask@{fingerprint(race.scenario)}/c2:")
    [v] = in_order.violations
    assert (v.name, v.client) == ("cancel_ignored", "client:1")
    assert "since PR 7583" in v.explanation


@pytest.mark.dask
def test_a_shared_keys_cancel_keeps_the_cancelling_client_on_real_dask():
    """Real distributed 2026.8.0: after one client cancels a key another also wants, the
    scheduler still counts the cancelling client; when the other lets go, the key stays in
    memory until the cancelled future is dropped."""
    import logging

    import distributed
    from distributed.metrics import time as dask_time

    logging.getLogger("distributed").setLevel(logging.CRITICAL)
    with distributed.LocalCluster(processes=False, n_workers=1, threads_per_worker=1,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as a, distributed.Client(cluster) as b:
        scheduler = cluster.scheduler
        y = b.submit(inc, 1, key="k")
        x = a.submit(inc, 1, key="k")
        assert (y.result(), x.result()) == (2, 2)
        a.cancel([x])
        deadline = dask_time() + 5
        while x.status != "cancelled":
            assert dask_time() < deadline
            time.sleep(0.01)
        time.sleep(0.2)
        assert {cs.client_key for cs in scheduler.tasks["k"].who_wants} == {a.id, b.id}
        y.release()
        time.sleep(0.2)
        assert scheduler.tasks["k"].state == "memory"
        x.release()
        deadline = dask_time() + 5
        while "k" in scheduler.tasks:
            assert dask_time() < deadline
            time.sleep(0.01)


@pytest.mark.dask
def test_7583_two_clients_is_open_on_real_dask():
    """2026.8.0 over TCP: the other client's stream 0.5 s late, the first client's cancel
    (its graph in) cancels the key and reports it to every client: the other's result()
    raises, and its graph, arriving after, has the key computed for it."""
    import logging

    import distributed
    from distributed.metrics import time as dask_time

    logging.getLogger("distributed").setLevel(logging.CRITICAL)
    with distributed.LocalCluster(processes=False, protocol="tcp", n_workers=1,
                                  threads_per_worker=1, dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as a, distributed.Client(cluster) as b:
        b.scheduler_comm.next_deadline = dask_time() + 0.5
        y = b.submit(inc, 1, key="k")
        x = a.submit(inc, 1, key="k")
        a.cancel([x])
        with pytest.raises(distributed.client.FutureCancelledError):
            y.result(timeout=3)
        scheduler = cluster.scheduler
        deadline = dask_time() + 5
        while "k" not in scheduler.tasks or scheduler.tasks["k"].state != "memory":
            assert dask_time() < deadline
            time.sleep(0.01)
        assert {cs.client_key for cs in scheduler.tasks["k"].who_wants} == {b.id}


@pytest.mark.dask
def test_7583_a_graph_later_than_a_second_is_still_cancelled_on_real_dask():
    """PR 7583 shipped in 2023.3.1: on 2026.8.0 the cancel rides the client's stream behind the
    graph, so a stream flushing 1.5 s late (longer than 2023.3.0's poll gave a graph) delays
    both, in order: the key is cancelled and forgotten, and no task result is kept for it."""
    import logging

    import distributed
    from distributed.metrics import time as dask_time

    logging.getLogger("distributed").setLevel(logging.CRITICAL)
    with distributed.LocalCluster(processes=False, protocol="tcp", n_workers=1,
                                  threads_per_worker=1, dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client:
        scheduler = cluster.scheduler
        seen: list[str] = []
        original = scheduler.stimulus_cancel

        def stimulus_cancel(keys, *args, **kwargs):
            seen.extend(keys)
            return original(keys, *args, **kwargs)

        scheduler.stream_handlers["cancel-keys"] = stimulus_cancel
        client.scheduler_comm.next_deadline = dask_time() + 1.5
        f = client.submit(inc, 1, key="k")
        client.cancel([f])
        assert f.cancelled()
        assert client.submit(inc, 2, key="next").result() == 3
        assert seen == ["k"] and "k" not in scheduler.tasks


@pytest.mark.dask
def test_6016_the_other_clients_future_survives_a_cancel_on_real_dask():
    """PR 6016 shipped in 2022.5.1: PR 6016's test, the model's in-order failing run on
    2022.5.0, on 2026.8.0 returns the value, the other client's future never cancelled."""
    import logging

    import distributed

    logging.getLogger("distributed").setLevel(logging.CRITICAL)
    with distributed.LocalCluster(processes=False, n_workers=1, threads_per_worker=1,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as a, distributed.Client(cluster) as b:
        cancelled: list[str] = []
        handler = b._stream_handlers["cancelled-keys"]

        def watch(keys, *args, **kwargs):
            cancelled.extend(k for k in keys if k in b.futures)
            return handler(keys, *args, **kwargs)

        b._stream_handlers["cancelled-keys"] = watch
        assert RACES["6016"].scenario(a, b) == 2
        deadline = time.monotonic() + 2
        while "k" in cluster.scheduler.tasks and time.monotonic() < deadline:
            time.sleep(0.01)
        assert cancelled == []
