"""The explorer: it finds the races, replays them exactly, and finds nothing under fixed."""

from __future__ import annotations

import importlib
import io
import sys
import threading
import time
from collections import defaultdict

import pytest
from helpers import Box, CyclingModule, inc, keep, scatter_race

from jupyter_refs import Cluster, ScenarioError, ScheduleError, explore, replay
from jupyter_refs.explore import _run, fingerprint
from jupyter_refs.zoo import RACES


def ghost(client):
    x = client.scatter(41)
    g = client.submit(keep, Box([x]))  # noqa: F841 - held until the scenario ends
    del x


def two_releases(c1, c2):
    x, y = c1.scatter(1), c2.scatter(2)
    del x, y


def kind_of(failure) -> str:
    first = failure.violations[0]
    if first.name == "ghost_task":
        return "ghost"
    if "before it scattered" in first.explanation:
        return "8576-A"  # the late release
    if "no longer hold it" in first.explanation or "free-keys meant" in first.explanation:
        return "8576-B"  # the late free
    return first.name


@pytest.fixture(scope="module")
def legacy_race():
    return explore(scatter_race, protocol="legacy", max_schedules=2000, bound=2)


def test_finds_both_variants_of_8576(legacy_race):
    kinds = {kind_of(f) for f in legacy_race.failures}
    assert {"8576-A", "8576-B"} <= kinds, [f.violations[0].explanation for f in legacy_race.failures]
    assert legacy_race.exhaustive
    sizes = [(f.run.delays, f.run.deviations) for f in legacy_race.failures]
    assert sizes == sorted(sizes)  # the smallest schedule first
    a = next(f for f in legacy_race.failures if kind_of(f) == "8576-A")
    text = a.explain()
    assert "scatter on rpc:client:1" in text and "client-releases-keys on client:1->scheduler" in text


def test_finds_the_ghost_task():
    result = explore(ghost, protocol="dask-2024.7", max_schedules=500, bound=2)
    assert "ghost" in {kind_of(f) for f in result.failures}


@pytest.mark.parametrize("scenario", [scatter_race, ghost])
def test_every_reported_schedule_replays_exactly(legacy_race, scenario):
    result = (legacy_race if scenario is scatter_race
              else explore(scenario, protocol="dask-2024.7", max_schedules=500))
    assert result.failures
    for failure in result.failures:
        expected = [(v.name, v.key, v.first_seq) for v in failure.violations]
        for _ in range(10):
            run = replay(scenario, failure.schedule)
            assert [(v.name, v.key, v.first_seq) for v in run.violations] == expected
            assert run.schedule == failure.schedule


@pytest.mark.parametrize("scenario", [scatter_race, ghost, two_releases])
def test_fixed_fails_in_no_order_within_the_bound(scenario):
    result = explore(scenario, protocol="fixed", max_schedules=1500, bound=2)
    assert result.exhaustive  # every order within the bound, then random ones past it
    assert result.failures == []


@pytest.mark.slow
def test_random_runs_shared_with_forked_processes(legacy_race):
    """Processes share the random runs, each order run by one of them: the result is the one
    process's, exactly (each failure's count and smallest schedule), and replays here."""
    one = explore(scatter_race, protocol="legacy", max_schedules=2000, bound=2, processes=1)
    two = explore(scatter_race, protocol="legacy", max_schedules=2000, bound=2, processes=2)
    three = explore(scatter_race, protocol="legacy", max_schedules=2000, bound=2, processes=3)
    assert one.schedules == two.schedules == 2000 and one.sampled == two.sampled > 800
    assert sum(f.count for f in two.failures) > sum(f.count for f in two.failures[:1])
    for other in (two, three):
        assert [(f.schedule, f.count, kind_of(f)) for f in other.failures] == \
            [(f.schedule, f.count, kind_of(f)) for f in one.failures]
        assert other.repeats == one.repeats  # each order run once, whichever process ran it
    for failure in two.failures:  # found in another process, replayed here: the same run
        run = replay(scatter_race, failure.schedule)
        assert [(v.name, v.first_seq) for v in run.violations] == \
            [(v.name, v.first_seq) for v in failure.violations]
    fixed = explore(scatter_race, protocol="fixed", max_schedules=2000, bound=2, processes=2)
    assert fixed.schedules == 2000 and fixed.failures == []
    with pytest.raises(ValueError, match="processes must be at least 1"):
        explore(scatter_race, processes=0)


def test_the_last_pass_shared_with_forked_processes_finds_what_one_process_finds(monkeypatch):
    """The bounded search's last pass shared with a forked helper per process (here on every
    zoo race, whatever its size) covers every order within the bound as one process does —
    exhaustive, the same failure groups, each failure replaying here — with a state table per
    process (so more runs); and the result depends on the processes, never on timing."""
    from jupyter_refs.explore import _group
    from jupyter_refs.zoo import RACES

    search = importlib.import_module("jupyter_refs.explore")
    monkeypatch.setattr(search, "_SHARED_PASS_MIN_RUNS", 0)
    forked = []
    fork = search._fork
    monkeypatch.setattr(search, "_fork", lambda job: forked.append(job) or fork(job))
    shared = {}
    for race in RACES.values():
        one = race.find(bound=2, sample=False, max_schedules=100_000, processes=1)
        before = len(forked)
        two = shared[race.name] = race.find(bound=2, sample=False, max_schedules=100_000,
                                            processes=2)
        assert len(forked) == before + 1, race.name  # its last pass was shared
        assert one.exhaustive and two.exhaustive
        assert {_group(f.run) for f in two.failures} == {_group(f.run) for f in one.failures}, \
            race.name
        assert two.systematic >= one.systematic
        for failure in two.failures[:1]:
            run = replay(race.scenario, failure.schedule)
            assert [v.name for v in run.violations] == [v.name for v in failure.violations]
    again = RACES["5379"].find(bound=2, sample=False, max_schedules=100_000, processes=2)
    first = shared["5379"]
    assert (again.systematic, again.states) == (first.systematic, first.states)
    assert [(f.schedule, f.count) for f in again.failures] == \
        [(f.schedule, f.count) for f in first.failures]


def _all_orders(scenario, prefix=()) -> int:
    """An independent count: branch on every deliverable message at every decision."""
    run = _run(scenario, "legacy", 1, fingerprint(scenario), list(prefix), strict=True)
    total = 1
    for i in range(len(prefix), len(run.decisions)):
        for j in range(1, len(run.decisions[i].heads)):
            total += _all_orders(scenario, [d.pick for d in run.decisions[:i]] + [j])
    return total


def test_the_search_counts_every_order_once():
    everything = _all_orders(two_releases)
    unreduced = explore(two_releases, max_schedules=everything + 1, bound=100, reduce=False)
    assert unreduced.exhaustive and unreduced.systematic == everything
    reduced = explore(two_releases, max_schedules=everything + 1, bound=100)
    # Sleep sets skip orders that only swap deliveries to different actors.
    assert reduced.exhaustive and reduced.systematic - reduced.pruned < everything
    print(f"\ntwo releases from two clients: {everything} delivery orders, "
          f"{reduced.systematic - reduced.pruned} after sleep sets")


def test_bad_input_is_named():
    def raises(client):
        client.scatter(1)
        raise KeyError("boom")

    with pytest.raises(ScenarioError, match="KeyError: 'boom'"):
        explore(raises, max_schedules=5)
    with pytest.raises(ScheduleError, match="is not a schedule"):
        replay(scatter_race, "legacy:4>1")
    with pytest.raises(ScheduleError, match="another scenario"):
        replay(ghost, replay(scatter_race, f"legacy@{fingerprint(scatter_race)}:").schedule)
    with pytest.raises(ScheduleError, match="does not fit"):
        replay(scatter_race, f"legacy@{fingerprint(scatter_race)}:0>7")
    with pytest.raises(Exception, match="unknown protocol"):
        explore(scatter_race, protocol="nope")


def test_a_schedule_that_does_not_fit_the_run_names_its_first_step_that_does_not():
    fp = fingerprint(scatter_race)
    n = len(replay(scatter_race, f"dask@{fp}:").decisions)  # the in-order run's decisions
    for schedule, first in [(f"dask@{fp}:999999>99", r"999999 \(999999>99\)"),
                            (f"dask@{fp}:{n}>1,{n + 5}>1", rf"{n} \({n}>1\)")]:
        with pytest.raises(ScheduleError, match=rf"deviates at decision {first}, but the run "
                                                 rf"makes only {n} decisions"):
            replay(scatter_race, schedule)
    with pytest.raises(ScheduleError, match=r"decision 0 \(0>7\) has 2 deliverable messages"):
        replay(scatter_race, f"dask@{fp}:0>7")  # a choice past the options


def test_magics_explore_and_replay(capsys):
    from IPython import get_ipython
    from IPython.core.error import UsageError
    from IPython.testing.globalipapp import start_ipython

    ip = start_ipython() or get_ipython()
    ip.run_line_magic("load_ext", "jupyter_refs")
    try:
        with pytest.raises(UsageError, match="nothing to replay"):
            ip.run_line_magic("replay", "legacy@000000:")
        with pytest.raises(UsageError, match="--max must be"):
            ip.run_cell_magic("explore", "--max 0", "client.scatter(1)")
        with pytest.raises(UsageError, match="--processes must be at least 1"):
            ip.run_cell_magic("explore", "-j 0", "client.scatter(1)")
        with pytest.raises(UsageError, match="needs a cell"):
            ip.run_cell_magic("explore", "", "  ")
        with pytest.raises(UsageError, match="the scenario raised ZeroDivisionError"):
            ip.run_cell_magic("explore", "", "1 / 0")
        ip.user_ns["inc"] = inc
        capsys.readouterr()
        ip.run_cell_magic("explore", "--protocol legacy --max 1200 --processes 2",
                          "x = client.scatter(123)\ndel x\nx = client.scatter(123)\nclient.submit(inc, x)")
        out = capsys.readouterr().out
        result = ip.user_ns["explored"]
        assert result.failures and result.failures[0].schedule in out and "overtook" in out
        assert result.schedules == 1200 and result.sampled > 400  # some of them in a second process
        with pytest.raises(UsageError, match="is not a schedule"):
            ip.run_line_magic("replay", "nonsense")
        ip.run_line_magic("replay", result.failures[0].schedule)
        cluster = ip.user_ns["cluster"]
        assert [v.name for v in cluster.violations] == [v.name for v in result.failures[0].violations]
    finally:
        ip.run_line_magic("unload_ext", "jupyter_refs")
        for name in ("cluster", "explored", "inc"):
            ip.user_ns.pop(name, None)


# -- an exception is a failure ---------------------------------------------------------------


def len_of_rescattered(client):
    """Held out of the search's design: #8576 as the user meets it, an exception."""
    x = client.scatter("abc")
    del x
    y = client.scatter("abc")
    assert client.submit(len, y).result() == 3


@pytest.mark.parametrize("workers", [1, 2])
def test_an_exception_is_a_failure_that_replays(workers):
    from jupyter_refs.explore import SCENARIO_RAISED, _shape

    result = explore(len_of_rescattered, protocol="legacy", max_schedules=400, bound=2,
                     workers=workers, processes=1)
    raised = [f for f in result.failures if f.raised is not None]
    assert raised, result.summary()
    by_type = {f.raised.name for f in raised}
    assert "FutureCancelledError" in by_type
    # One group per exception type and message shape.
    shapes = [(f.raised.type, _shape(f.raised.message)) for f in raised]
    assert len(shapes) == len(set(shapes))
    for failure in raised:
        assert SCENARIO_RAISED in failure.names and failure.violations[-1].name == SCENARIO_RAISED
        assert (f"/w{workers}:" in failure.schedule) == (workers != 1)
        assert failure.raised.name in failure.explain()
        for _ in range(5):
            run = replay(len_of_rescattered, failure.schedule)
            assert run.raised is not None
            assert (run.raised.type, _shape(run.raised.message)) == (
                failure.raised.type, _shape(failure.raised.message))
            assert [v.name for v in run.violations] == [v.name for v in failure.violations]
    cancelled = next(f for f in raised if f.raised.name == "FutureCancelledError")
    # The loss behind it is named too: the future the scenario re-scattered.
    assert any(v.name == "dangling_future" and v.key.startswith("str-")
               for v in cancelled.violations)


def test_an_exception_found_in_a_forked_process_replays_here():
    result = explore(len_of_rescattered, protocol="legacy", max_schedules=1300, bound=0,
                     processes=2, sample=True)
    assert result.sampled >= 800
    assert any(f.raised is not None for f in result.failures)
    fixed = explore(len_of_rescattered, protocol="fixed", max_schedules=300, bound=2, processes=1)
    assert fixed.failures == []


def test_schedules_carry_the_clusters_shape():
    from jupyter_refs.explore import format_schedule, parse_schedule

    assert format_schedule("dask", "abcdef", [0, 1]) == "dask@abcdef:1>1"  # as before
    assert format_schedule("dask", "abcdef", [1], workers=2, clients=2) == "dask@abcdef/w2c2:0>1"
    old = parse_schedule("legacy@902733:0>1,1>1,2>1")
    assert (old.protocol, old.workers, old.clients, old.deviations) == ("legacy", 1, 1,
                                                                       {0: 1, 1: 1, 2: 1})
    assert parse_schedule("dask-2024.7@902733/c2:").clients == 2
    run = replay(two_releases, f"legacy@{fingerprint(two_releases)}/c2:")
    assert len(run.cluster.clients) == 2
    with pytest.raises(ScheduleError, match="2 client"):
        replay(scatter_race, f"legacy@{fingerprint(scatter_race)}/c2:")
    with pytest.raises(ScheduleError, match="1 worker"):
        replay(scatter_race, f"legacy@{fingerprint(scatter_race)}:", workers=2)


def test_schedules_say_dask_and_old_legacy_ones_still_replay():
    """Issue 46.6: the default protocol was still called "legacy", so schedules read
    ``legacy@…`` where the README shows ``dask@…``; an old string must still replay."""
    from jupyter_refs.protocol.variants import DASK

    runs = {protocol: explore(scatter_race, max_schedules=300, bound=1, sample=False, processes=1,
                              **({} if protocol is None else {"protocol": protocol}))
            for protocol in (None, "legacy")}
    schedules = [f.schedule for f in runs[None].failures]
    assert schedules and all(s.startswith("dask@") for s in schedules)
    assert [f.schedule for f in runs["legacy"].failures] == schedules
    assert runs[None].protocol == runs["legacy"].protocol == "dask"
    old = "legacy@" + schedules[0].partition("@")[2]
    for protocol in (None, DASK):
        run = replay(scatter_race, old, protocol=protocol)
        assert run.schedule == schedules[0]
        assert {v.name for v in run.violations} == set(runs[None].failures[0].names)


def test_an_exception_in_order_is_the_scenarios_own():
    def always(client):
        client.submit(len, 3).result()  # TypeError whatever the order

    with pytest.raises(ScenarioError, match=r"TypeError: .*in-order one.*scenario's own error"):
        explore(always, max_schedules=50)


def test_a_variant_of_ones_own_explores_and_replays():
    """A protocol built from the flags (generations, no incarnations) names its schedules and
    replays only with the variant it was explored under."""
    import dataclasses

    from jupyter_refs.protocol.variants import FIXED

    half = dataclasses.replace(FIXED, name="generations-only", incarnations=False)
    result = explore(scatter_race, protocol=half, max_schedules=400, processes=1)
    assert result.protocol == "generations-only" and result.failures
    first = result.failures[0]
    assert first.schedule.startswith("generations-only@")
    # What it misses is the worker side: every failure has a late free-keys or release-worker-data.
    assert all(any(op in o for o in f.overtakes for op in ("free-keys", "release-worker-data"))
               for f in result.failures)
    run = replay(scatter_race, first.schedule, protocol=half)
    assert [v.name for v in run.violations] == list(first.names)
    assert run.cluster.variant is half
    with pytest.raises(ScheduleError, match="not registered: pass the ProtocolVariant"):
        replay(scatter_race, first.schedule)
    with pytest.raises(ScheduleError, match="recorded under protocol 'generations-only', not 'other'"):
        replay(scatter_race, first.schedule, protocol=dataclasses.replace(half, name="other"))
    # Both halves together are the fixed protocol: nothing found in the same budget.
    assert not explore(scatter_race, protocol=dataclasses.replace(half, name="both", incarnations=True),
                       max_schedules=400, processes=1).failures


def test_a_variant_must_not_pass_for_a_registered_one():
    import dataclasses

    from jupyter_refs.protocol.variants import DASK, FIXED

    with pytest.raises(ValueError, match="like a registered protocol it differs from"):
        explore(scatter_race, protocol=dataclasses.replace(FIXED, incarnations=False))
    with pytest.raises(ValueError, match="must be lower-case letters"):
        explore(scatter_race, protocol=dataclasses.replace(FIXED, name="Half Fixed"))
    # The registered variant itself is fine, and its schedules replay by name.
    result = explore(scatter_race, protocol=DASK, max_schedules=50, processes=1, first=True)
    assert result.failures[0].schedule.startswith("dask@")
    assert replay(scatter_race, result.failures[0].schedule).failed


def test_explore_magic_takes_a_variant_from_the_namespace():
    import dataclasses

    from IPython import get_ipython
    from IPython.core.error import UsageError
    from IPython.testing.globalipapp import start_ipython

    from jupyter_refs.protocol.variants import FIXED

    ip = start_ipython() or get_ipython()
    ip.run_line_magic("load_ext", "jupyter_refs")
    try:
        ip.user_ns["half"] = dataclasses.replace(FIXED, name="generations-only", incarnations=False)
        ip.user_ns["inc"] = inc
        ip.run_cell_magic("explore", "--protocol half --max 300 --processes 1",
                          "x = client.scatter(123)\ndel x\nx = client.scatter(123)\nclient.submit(inc, x)")
        explored = ip.user_ns["explored"]
        assert explored.protocol == "generations-only" and explored.failures
        ip.run_line_magic("replay", explored.failures[0].schedule)
        assert ip.user_ns["cluster"].variant is ip.user_ns["half"]
        assert ip.user_ns["cluster"].violations
        with pytest.raises(UsageError, match="unknown protocol 'nope'"):
            ip.run_cell_magic("explore", "--protocol nope", "x = client.scatter(1)")
    finally:
        ip.run_line_magic("unload_ext", "jupyter_refs")
        for name in ("cluster", "explored", "inc", "half"):
            ip.user_ns.pop(name, None)


def test_failures_on_uuid_keys_group_by_kind():
    """``pure=False`` keys are ``inc-<uuid4>``: a new key each run must not make a new group."""
    from jupyter_refs import fire_and_forget

    def forget(client):
        f = client.submit(inc, 1, pure=False)
        fire_and_forget(f)
        del f

    result = explore(forget, protocol="dask", max_schedules=300, processes=1)
    assert [f.names for f in result.failures] == [("leaked_key",)]
    assert result.failures[0].count > 1


def resubmit_while_its_result_travels(client):
    b = client.submit(inc, 2, key="b")
    del b
    client.submit(inc, 0)  # a call between: the release goes out first, as dask's loop sends it
    b = client.submit(inc, 2, key="b")
    assert b.result() == 3


def test_a_key_deleted_and_submitted_again_in_one_breath_is_the_old_future():
    """dask releases a deleted future later, on its event loop (checked on 2026.8: the key is
    usually still in ``client.futures``), so ``submit(key=)`` at once sends nothing, and the
    deferred release only decrements (conformance: life_resubmit_after_del, a known race)."""
    with Cluster(protocol="dask", workers=1, network="manual") as cluster:
        client = cluster.client()
        b = client.submit(inc, 2, key="b")
        del b
        again = client.submit(inc, 2, key="b")
        # The new future took its reference before the drop was released: nothing is released.
        assert [m.op for m in cluster.in_flight] == ["update-graph"]
        assert again.key == "b" and client.refcount["b"] == 1


def test_an_order_that_repeats_for_ever_is_stopped_and_replays():
    """The explorer runs a task between two messages of one batch, which dask never does:
    then a stale result re-sends its task, whose result is stale in turn, for ever.  The run
    stops at MAX_DELIVERIES with a LivelockError naming what it repeated, and the search
    goes on past it rather than exploring the loop."""
    result = explore(resubmit_while_its_result_travels, protocol="dask", bound=2,
                     max_schedules=1000, processes=1, sample=False)
    assert result.exhaustive and result.systematic < 1000
    [looping] = [f for f in result.failures if f.raised and f.raised.name == "LivelockError"]
    assert "task-finished" in looping.raised.message or "execute[b]" in looping.raised.message
    again = replay(resubmit_while_its_result_travels, looping.schedule)
    assert again.raised is not None and again.raised.name == "LivelockError"


@pytest.mark.parametrize("scenario", [resubmit_while_its_result_travels, "cancel_then_same_key"])
def test_fixed_never_repeats_for_ever(scenario):
    """With incarnations the worker frees exactly a stale run's copy, so the scheduler lets the
    new run go on instead of sending the task again: no order loops (dask#8215's scenario
    looped under fixed before)."""
    scenario = cancel_then_same_key if scenario == "cancel_then_same_key" else scenario
    result = explore(scenario, protocol="fixed", bound=2, max_schedules=1500, processes=1)
    assert not [f for f in result.failures if f.raised and f.raised.name == "LivelockError"]
    assert result.failures == []


def cancel_then_same_key(client):
    """dask#8215 as its report has it: cancel a future, submit the same key again at once."""
    f = client.submit(inc, 1, key="k")
    client.cancel([f])
    g = client.submit(inc, 1, key="k")
    return g.result()


def test_an_in_order_run_that_raises_is_a_finding_when_another_order_does_not():
    """dask#8215: in order, the scheduler's cancelled-keys (it carries no epoch) reaches the
    client after the new future was made and cancels it; when the old run's result and the
    gather overtake the cancel, the scenario returns 2.  Both are reported, the in-order run
    first — not a ScenarioError."""
    result = explore(cancel_then_same_key, protocol="dask", max_schedules=200, processes=1,
                     sample=False)
    in_order, *others = result.failures
    assert in_order.schedule.endswith(":") and in_order.names == ("scenario_raised",)
    assert in_order.raised.name == "FutureCancelledError"
    assert "under the in-order schedule" in in_order.violations[-1].explanation
    returned = [f for f in others if "outcome_differs" in f.names]
    assert returned and returned[0].run.returned == "2"
    assert "raised FutureCancelledError" in returned[0].violations[-1].explanation
    again = replay(cancel_then_same_key, returned[0].schedule)
    assert again.raised is None and again.returned == "2"


def test_a_run_keeps_what_the_scenario_returned():
    """The value is part of the outcome: in order the cancelled future is skipped, and the
    order where the old run's result overtakes the cancel returns it (a check says why)."""
    def gather_after_cancel(client):
        f = client.submit(inc, 1, key="k")
        client.cancel([f])
        g = client.submit(inc, 1, key="k")
        return client.gather([g], errors="skip")

    result = explore(gather_after_cancel, protocol="dask", max_schedules=200, processes=1,
                     sample=False)
    found = result.failures[0]  # the smallest (within 200 runs, the states pruned find more)
    # Its value differs from the in-order run's: the gather found the cancelled future's data
    # gone, reset it to pending as dask's does, and the scheduler's answer finished it.
    assert found.names == ("outcome_differs",) and found.run.returned == "[2]"
    lost = [f for f in result.failures if f.names == ("dangling_future",)]
    assert lost and lost[0].run.returned == "[2]"  # and where the check says why
    assert replay(gather_after_cancel, found.schedule.split(":")[0] + ":").returned == "[]"


def _groups(result):
    from jupyter_refs.explore import _group
    return {_group(f.run) for f in result.failures}


@pytest.mark.parametrize("name, bound", [("8576", 2), ("7498", 2), ("8215", 1), ("scatter_race", 2),
                                         ("resubmit", 2)])
def test_pruning_on_states_finds_the_failures_the_plain_search_finds(name, bound):
    """A state explored already is not explored again (explore's docstring says what a state
    covers): the exhaustive search finds the same failure groups with and without it, in no
    more runs.  (dask#8215's scenario at bound 2 takes the plain search twelve minutes of
    livelocks, each run to MAX_DELIVERIES; bound 1 here.)"""
    from jupyter_refs.zoo import RACES
    scenario = {"scatter_race": scatter_race, "resubmit": resubmit_while_its_result_travels
                }.get(name) or RACES[name].scenario
    protocol = RACES[name].found_under if name in RACES else "dask"
    kwargs = dict(protocol=protocol, bound=bound, max_schedules=100_000, processes=1,
                  sample=False)
    pruned = explore(scenario, **kwargs)
    plain = explore(scenario, prune=False, **kwargs)
    assert pruned.exhaustive and plain.exhaustive
    assert pruned.failures and _groups(pruned) == _groups(plain)
    assert pruned.states > 0 and plain.states == 0
    assert pruned.systematic <= plain.systematic


def _search_of(result):
    """All a search reports: its counts and each failure group's count and smallest schedule."""
    return (result.systematic, result.pruned, result.states, result.revisited, result.exhaustive,
            sorted((f.names, f.count, f.schedule) for f in result.failures))


@pytest.mark.parametrize("name, bound, prune", [("7498", 2, True), ("scatter_race", 3, True),
                                                ("resubmit", 2, True), ("scatter_race", 2, False)])
def test_a_pass_follows_the_runs_of_the_pass_before_as_running_them_would(name, bound, prune,
                                                                          monkeypatch):
    """Each pass of the iterative deepening makes again every run of the pass before; it
    follows them from what that pass kept (their decisions, their visits to states) instead
    of running them, and the search is the same: the same runs, pruned ones, states (#7498's
    states whose digest is their run's own — a live future holds its cluster — counted as
    new each time, as running them again did), revisits and failure groups, with the same
    smallest schedules; loops (resubmit) and a search without states too."""
    from jupyter_refs.zoo import RACES
    scenario = {"scatter_race": scatter_race, "resubmit": resubmit_while_its_result_travels
                }.get(name) or RACES[name].scenario
    protocol = RACES[name].found_under if name in RACES else {"scatter_race": "legacy"
                                                               }.get(name, "dask")
    kwargs = dict(protocol=protocol, bound=bound, max_schedules=100_000, processes=1,
                  sample=False, prune=prune)
    followed = explore(scenario, **kwargs)
    monkeypatch.setattr(explore_module, "_REMAKE", False)
    made = explore(scenario, **kwargs)
    assert _search_of(followed) == _search_of(made)
    assert followed.failures


def test_a_loop_is_a_livelock_as_soon_as_the_run_comes_back_to_a_state():
    """With states fingerprinted, a run past its prefix that comes back to a state it was in
    goes round for ever: it stops there, as the same LivelockError the 10,000-delivery stop
    gives, and its schedule replays to that error."""
    kwargs = dict(protocol="dask", bound=2, max_schedules=1000, processes=1, sample=False)
    fast = explore(resubmit_while_its_result_travels, **kwargs)
    slow = explore(resubmit_while_its_result_travels, prune=False, **kwargs)
    loops = [[f for f in r.failures if f.raised and f.raised.name == "LivelockError"]
             for r in (fast, slow)]
    assert [len(x) for x in loops] == [1, 1]
    assert loops[0][0].raised.message == loops[1][0].raised.message
    again = replay(resubmit_while_its_result_travels, loops[0][0].schedule)
    assert again.raised is not None and again.raised.message == loops[0][0].raised.message


def test_a_state_leaves_out_ids_and_keeps_what_differs():
    """Two runs of one order have equal states at each decision although their random key parts
    differ; two different orders that end apart differ."""
    from jupyter_refs.explore import state_digest

    def seen(picks):
        digests = []
        orig = explore_module._visit

        def visit(states, cluster, *args, **kwargs):
            digests.append(state_digest(cluster))
            return orig(states, cluster, *args, **kwargs)

        explore_module._visit = visit
        try:
            explore_module._run(pure_false_race, "dask", 1, "000000", picks, strict=True,
                                states=explore_module._States())
        finally:
            explore_module._visit = orig
        return digests

    assert seen([]) == seen([])
    assert seen([]) != seen([1])


class _Planned:
    """Attributes of every kind a reader inlines, or hands on (see test below)."""


class _Slotted:
    __slots__ = ("gen", "keys", "name", "unset")


def test_a_compiled_reader_reads_an_object_as_its_plan_says():
    """A plan's reader (explore._reader, compiled from the plan) gives what reading the plan
    by hand gives: the head, then each kept attribute, sorted, as _canon makes it with the
    attribute's id family — leaves of every kind, long strings renamed, ids put in cells,
    empty and full containers, nested objects, the round robin modulo the workers; and a
    slotted object, read through its slots, an unset one as None."""
    canon = explore_module._canon
    uuid = "0123456789abcdef0123456789abcdef"
    obj = _Planned()
    obj.__dict__.update({
        "name": "x", "long": f"key-{uuid}", "_incarnation": 7, "gen": True, "count": 3,
        "blob": b"\x00", "none": None, "empty": {}, "full": {"a": 1, "_call": 2},
        "nothing": set(), "some": frozenset({"b", "a"}), "priority": (3, 1), "ratio": 0.5,
        "workers": ["w0", "w1", "w2"], "_next_worker": 7, "log": "left out",
        "inner": _Slotted(), "who_has": {"k": {4, 2}},
    })
    obj.inner.gen, obj.inner.keys, obj.inner.name = 5, ["k"], "inner"
    names = {"~0": uuid}

    def memo() -> dict:
        return {explore_module._NAMES_AT: lambda match: next(k for k, v in names.items()
                                                              if v == match[0])}

    ids: defaultdict = defaultdict(list)
    got = canon(obj, None, ids, memo())
    # By hand: a fresh memo numbers the object 1 (the renaming is entry 0), the inner one 2.
    want_ids: defaultdict = defaultdict(list)
    hand_memo = memo()
    hand_memo[id(obj)] = 1
    kept = sorted(k for k in obj.__dict__ if k not in explore_module._NOT_STATE)
    values = []
    for k in kept:
        if k == "inner":
            hand_memo[id(obj.inner)] = len(hand_memo)
            slots = sorted(_Slotted.__slots__)
            number = explore_module._KEPT[tuple(slots)]
            values.append(("_Slotted", "=", number, *[
                canon(getattr(obj.inner, s, None), explore_module._ID_FAMILIES.get(s), want_ids,
                      hand_memo) for s in slots]))
            continue
        value = canon(obj.__dict__[k], explore_module._ID_FAMILIES.get(k), want_ids, hand_memo)
        values.append(value % 3 if k == "_next_worker" else value)
    assert got == ("_Planned", "=", explore_module._KEPT[tuple(kept)], *values)
    assert got[kept.index("long") + 3] == "key-~0"
    assert ids == want_ids  # each family's cells, in order
    again: defaultdict = defaultdict(list)
    assert canon(obj, None, again, memo()) == got  # the plan's reader, made the first time


def _one_to_one(first, second, race) -> int:
    """Over every state ``race``'s search at bound 1 visits, ``first(cluster)`` and
    ``second(cluster)`` split the states alike (each value of one goes with one value of the
    other); how many states were told apart."""
    by_first: dict = {}
    by_second: dict = {}
    orig = explore_module._visit

    def visit(states, cluster, *args, **kwargs):
        a, b = first(cluster), second(cluster)
        assert by_first.setdefault(a, b) == b
        assert by_second.setdefault(b, a) == a
        return orig(states, cluster, *args, **kwargs)

    explore_module._visit = visit
    try:
        race.find(bound=1, sample=False, max_schedules=1000, processes=1)
    finally:
        explore_module._visit = orig
    return len(by_first)


def test_a_state_digest_splits_states_as_their_text_does():
    """state_digest hashes a state's tuples in marshal's form, not its text (state_of): over a
    search through task frames, stealing, ready queues and the scheduler's parts (#5379), two
    states share a digest exactly when they share a text."""
    from jupyter_refs.explore import state_digest, state_of
    from jupyter_refs.zoo import RACES

    assert _one_to_one(state_digest, state_of, RACES["5379"]) > 50


def test_the_search_digest_splits_states_as_the_marshalled_bytes_do():
    """The search's own digest (_digest: a pickle without a memo, hashed) and the bytes
    state_digest hashes (marshal's) split a search's states alike — over #5379's states,
    and for a state holding a value only marshal's fallback writes (a str subclass)."""
    from jupyter_refs.zoo import RACES

    assert _one_to_one(lambda cluster: explore_module._digest(cluster)[0],
                       lambda cluster: explore_module._state_bytes(cluster)[0],
                       RACES["5379"]) > 50

    class Name(str):
        pass

    # A value pickle would write by its class's reduction: refused, marshal's form instead.
    with pytest.raises(explore_module._NotPlain):
        explore_module._PlainPickler(io.BytesIO(), 5).dump([("x", Name("a"))])
    assert explore_module._encoded([("x", Name("a"))]) == repr([("x", "a")]).encode()


def test_a_run_that_takes_states_is_freed_by_reference_counting():
    """A run of the search with states (its wrappers of the cluster's begin_call and run_inline
    are closures over the cluster) leaves no reference cycle once disposed: its cluster is
    freed by reference counting, with the collector off (the search's collection every 100
    runs was a tenth of #5379's search when they cycled).  Asked of the run's own cluster: in
    a full run other objects, left by earlier tests, may become garbage meanwhile."""
    import gc
    import weakref

    from jupyter_refs.zoo import RACES

    race = RACES["5379"]
    fp = explore_module.fingerprint(race.scenario)
    gc.collect()
    collecting = gc.isenabled()
    gc.disable()
    try:
        clusters = []
        for _ in range(2):
            run = explore_module._run(race.scenario, race.found_under, race.workers, fp, [],
                                      strict=False, states=explore_module._States())
            clusters.append(weakref.ref(run.cluster))
            run.cluster.dispose()
            del run
        assert [c() for c in clusters] == [None, None]
    finally:
        if collecting:
            gc.enable()


explore_module = importlib.import_module("jupyter_refs.explore")


def pure_false_race(client):
    x = client.submit(inc, 1, pure=False)
    del x
    client.submit(inc, 2, pure=False)


@pytest.mark.dask
def test_explore_on_a_dask_cluster_finds_what_one_process_finds(inproc):
    """The random runs go to the cluster's workers in seeded shares; the systematic search stays
    here, so its failures are the local one's, and the random shares' failures replay here."""
    import threading

    kwargs = dict(protocol="dask", bound=1, max_schedules=600, seed=3)
    here = explore(scatter_race, processes=1, **kwargs)
    there = explore(scatter_race, client=inproc, **kwargs)
    assert there.schedules == here.schedules == 600 and there.sampled == here.sampled
    assert _groups(there) >= {g for g, f in zip(map(_group_of, here.failures), here.failures)
                              if f.run.delays <= 1}
    again = explore(scatter_race, client=inproc, **kwargs)
    # The same failures, each with the same smallest schedule.  (On this in-process cluster
    # the random runs go as one share, run in this thread; benchmarks/bench_explore_dask.py
    # splits them among processes.)
    assert [(f.names, f.schedule, f.count) for f in again.failures] == \
        [(f.names, f.schedule, f.count) for f in there.failures] == \
        [(f.names, f.schedule, f.count) for f in here.failures]
    for failure in there.failures:
        assert replay(scatter_race, failure.schedule).failed

    lock = threading.Lock()

    def holds_a_lock(client):
        with lock:
            client.scatter(1)

    with pytest.raises(ValueError, match="picklable by cloudpickle, and .*holds_a_lock is not"):
        explore(holds_a_lock, client=inproc, **kwargs)


@pytest.mark.dask
def test_a_share_on_a_dask_worker_runs_as_here_whatever_its_profiler_samples():
    """A dask worker's profiler holds the frames of the threads running tasks while it samples
    them, and a held frame keeps a dropped future alive: the model's release then came when
    the profiler let go, and a share drew failures its runs' replays here do not make (3 of
    6 shares at a 1 ms interval).  A share leaves the profiler while it runs
    (``jupyter_refs/dask/share.py``): every share here is the share run in this thread."""
    distributed = pytest.importorskip("distributed")
    import dask

    fp = fingerprint(scatter_race)
    # Uniform picks (no PCT): nearly every draw a run of its own, few counted from the memo.
    share = (scatter_race, "dask", 1, fp, 7, None, (), None)
    here = explore_module._Share(*share).summary(range(2500))
    with dask.config.set({"distributed.worker.profile.interval": "1ms"}), \
            distributed.LocalCluster(n_workers=1, processes=False, threads_per_worker=1,
                                     dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client:
        futures = [client.submit(explore_module._share_away, share, 0, 1, range(2500),
                                 pure=False)
                   for _ in range(4)]
        there = client.gather(futures)
        worker = next(iter(cluster.workers.values()))
        assert not worker.active_threads  # each share's thread listed again, then done
    assert there == [here] * 4


def _profiling_while_a_share_runs():
    """In a dask task: whether the worker's profiler callback still runs once the task is in
    a share's ``unprofiled`` block (given a moment to stop: it is stopped on the loop)."""
    from distributed import get_worker

    from jupyter_refs.dask.share import unprofiled

    callback = get_worker().periodic_callbacks["profile"]
    with unprofiled():
        deadline = time.monotonic() + 5
        while callback.is_running() and time.monotonic() < deadline:
            time.sleep(0.01)
        return callback.is_running()


@pytest.mark.dask
def test_a_worker_profiler_sleeps_while_its_shares_run_and_wakes_after():
    """With its thread out of the profiler's list, the profiler's callback still woke the
    worker's loop every 10 ms, and a share lost about 5% of its CPU to the wakes: it is stopped
    while shares run on the worker (both threads' here), and runs again after the last."""
    distributed = pytest.importorskip("distributed")

    with distributed.LocalCluster(n_workers=1, processes=False, threads_per_worker=2,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client:
        def profiling():
            return client.run(lambda dask_worker:
                              dask_worker.periodic_callbacks["profile"].is_running())

        assert list(profiling().values()) == [True]
        futures = [client.submit(_profiling_while_a_share_runs, pure=False) for _ in range(2)]
        assert client.gather(futures) == [False, False]
        deadline = time.monotonic() + 5
        while list(profiling().values()) != [True]:
            assert time.monotonic() < deadline, "the profiler was not started again"
            time.sleep(0.01)


def _race_sent_whole():
    """#8576's scenario made inside a function, so cloudpickle sends it whole to worker
    processes (which cannot import the tests)."""
    def plus(v):
        return v + 1

    def race(client):
        x = client.scatter(123)
        del x
        x = client.scatter(123)
        client.submit(plus, x)

    return race


@pytest.mark.dask
def test_explore_on_worker_processes_replays_every_share_under_a_busy_profiler():
    """``explore(client=)`` where its shares really go to dask (the in-process cluster's one
    share runs in the caller's thread): worker processes, each share on a thread dask's
    profiler samples every millisecond.  Every share's failures replay here by their picks,
    the groups are the one-process search's, and two searches with one seed count each group
    alike.  (The profiler's sway itself is caught by the in-process share test above: here
    it did not show in 3 runs without ``unprofiled``.)"""
    distributed = pytest.importorskip("distributed")
    import dask

    race = _race_sent_whole()
    kwargs = dict(protocol="dask", bound=1, max_schedules=4000, seed=5)
    here = explore(race, processes=1, **kwargs)
    with dask.config.set({"distributed.worker.profile.interval": "1ms"}), \
            distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                     dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client:
        there = explore(race, client=client, **kwargs)
        again = explore(race, client=client, **kwargs)
        # A search whose systematic part takes the whole budget: its shares ran ahead and
        # count nothing.
        short = explore(race, client=client, protocol="dask", bound=2, max_schedules=40)
    assert short.sampled == 0 and short.schedules == 40
    assert there.schedules == here.schedules == 4000
    assert _groups(there) == _groups(here)
    # Each draw counted once, by whichever share its order is: the one process's result.
    assert _counts(there) == _counts(again) == _counts(here)
    assert [f.schedule for f in there.failures] == [f.schedule for f in here.failures]
    for failure in there.failures:
        assert replay(race, failure.schedule).failed


def _executing(client) -> list[int]:
    """How many tasks each worker of ``client``'s cluster is running, sorted."""
    return sorted(client.run(lambda dask_worker: len(dask_worker.state.executing)).values())


class _Interrupted(Exception):
    """What a progress callback raises, as a notebook's interrupt would."""


@pytest.mark.dask
def test_an_interrupted_search_on_dask_stops_its_shares_on_the_workers():
    """dask cannot stop a running task: a search interrupted while its shares run (here its
    progress callback raises, as a notebook's interrupt would) releases them, and each
    share, seeing its task cancelled on its worker, returns within a few draws.  Without
    that, each of a million-order search's shares kept its worker's thread for every draw
    it was given."""
    distributed = pytest.importorskip("distributed")

    race = _race_sent_whole()

    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client:
        def progress(runs, total, groups):
            # The shares started (sent with the in-order run): both workers busy with one.
            deadline = time.monotonic() + 30
            while _executing(client) != [1, 1]:
                assert time.monotonic() < deadline, _executing(client)
                time.sleep(0.01)
            raise _Interrupted

        with pytest.raises(_Interrupted):
            explore(race, client=client, protocol="dask", max_schedules=10_000_000,
                    progress=progress)
        stopped = time.monotonic() + 10
        while _executing(client) != [0, 0]:
            assert time.monotonic() < stopped, "a released share still runs on its worker"
            time.sleep(0.05)
        # The workers are free for the next search at once.
        assert explore(race, client=client, protocol="dask", max_schedules=400).schedules == 400


_DIGESTS = """
import sys
from jupyter_refs.explore import _run, fingerprint, state_digest
from jupyter_refs.zoo import RACES

def digest(name):
    race = RACES[name]
    run = _run(race.scenario, race.found_under, race.workers, fingerprint(race.scenario), [],
               strict=False)
    return name, state_digest(run.cluster).hex()

print(dict(digest(name) for name in sys.argv[1:]))
"""


def test_a_state_is_named_alike_in_every_process():
    """``state_digest`` names a state the same in every process, whatever its hash seed and
    whatever states it met before (a dask worker is a process of its own, and a search
    shared there compares its states with the ones met here): two interpreters with other
    hash seeds, digesting two zoo races' end states in opposite orders, agree.  (A plan's
    number was its place in the process's table, so the order mattered.)"""
    import ast
    import os
    import subprocess
    import sys

    def digests(seed: str, *names: str) -> dict:
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run([sys.executable, "-c", _DIGESTS, *names], env=env, check=True,
                              capture_output=True, text=True)
        return ast.literal_eval(done.stdout.strip().splitlines()[-1])

    one = digests("1", "5379", "7498")
    assert digests("2", "7498", "5379") == one and len(set(one.values())) == 2


@pytest.mark.dask
def test_a_shared_pass_goes_to_the_dask_cluster_and_counts_as_forked_helpers_count_it():
    """``explore(client=)`` deals the systematic search's last pass to the cluster's worker
    processes, a task per worker, as ``processes`` deals it to forked helpers: #5379's
    bound 2 (its last pass shared) gives the same schedules, pruned runs, distinct states,
    revisits, failure groups and counts either way; the random shares, sent with the in-order
    run, are let go for the pass and sent again after it for the draws left, so a search
    with random runs too counts as the forked one does.  The workers are other processes:
    a state must name itself alike there (not by this process's hash or table order)."""
    distributed = pytest.importorskip("distributed")
    from jupyter_refs.zoo import RACES

    race = RACES["5379"]
    forked = race.find(bound=2, sample=False, processes=2)
    forked_sampled = race.find(bound=2, max_schedules=2000, processes=2)
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client:
        with distributed.get_task_stream(client) as stream:
            there = race.find(bound=2, sample=False, client=client)
        sampled = race.find(bound=2, max_schedules=2000, client=client)
    passes = {task["key"] for task in stream.data if "-pass-" in str(task["key"])}
    assert len(passes) == 2 and len({task["worker"] for task in stream.data}) == 2
    for mine, theirs in ((there, forked), (sampled, forked_sampled)):
        assert (mine.schedules, mine.systematic, mine.sampled, mine.pruned, mine.states,
                mine.revisited) == (theirs.schedules, theirs.systematic, theirs.sampled,
                                    theirs.pruned, theirs.states, theirs.revisited)
        assert _counts(mine) == _counts(theirs)
        assert [f.schedule for f in mine.failures] == [f.schedule for f in theirs.failures]
    assert sampled.sampled > 0 and there.exhaustive


@pytest.mark.dask
def test_workers_in_this_process_take_no_share_whatever_their_addresses():
    """Workers of this process are this interpreter's threads, even on TCP
    (``LocalCluster(processes=False, protocol="tcp")``): their shares would take turns with
    the search on its GIL and not replay alike, so the search is made here, as one process
    makes it, and nothing is sent to them."""
    distributed = pytest.importorskip("distributed")

    race = _race_sent_whole()
    kwargs = dict(protocol="dask", bound=1, max_schedules=1500, seed=4)
    here = explore(race, processes=1, **kwargs)
    with distributed.LocalCluster(n_workers=2, processes=False, protocol="tcp",
                                  threads_per_worker=1, dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client:
        assert all(a.startswith("tcp://") for a in client.nthreads())
        with distributed.get_task_stream(client) as stream:
            there = explore(race, client=client, **kwargs)
    assert stream.data == []
    assert (there.schedules, there.repeats) == (here.schedules, here.repeats)
    assert _counts(there) == _counts(here)


@pytest.mark.dask
def test_a_worker_of_several_threads_takes_one_share():
    """A search's shares go one per worker process, whatever its threads: runs are pure
    Python (two in one interpreter only take turns on its GIL), and two at once there did
    not replay alike — the memo of a share turned itself off, and a shared pass met other
    states from search to search.  On one worker of two threads: one share of the random
    runs, the bounded search made here, and the one process's result."""
    distributed = pytest.importorskip("distributed")

    race = _race_sent_whole()
    kwargs = dict(protocol="dask", bound=2, max_schedules=3000, seed=3)
    here = explore(race, processes=1, **kwargs)
    with distributed.LocalCluster(n_workers=1, processes=True, threads_per_worker=2,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client:
        with distributed.get_task_stream(client) as stream:
            there = explore(race, client=client, **kwargs)
    assert len([t for t in stream.data if "-draws-" in str(t["key"])]) == 1
    assert (there.schedules, there.systematic, there.repeats, there.states) == \
        (here.schedules, here.systematic, here.repeats, here.states)
    assert _counts(there) == _counts(here)


@pytest.mark.dask
def test_an_interrupted_shared_pass_on_dask_stops_its_tasks_on_the_workers(monkeypatch):
    """A search interrupted while its last pass runs on the workers (its progress callback
    raises, as a notebook's interrupt would) lets go of the pass's tasks, and each stops at
    its next run: the workers are free for the next search at once."""
    distributed = pytest.importorskip("distributed")
    from jupyter_refs.zoo import RACES

    monkeypatch.setattr(explore_module, "_PROGRESS_SECONDS", 0.02)
    race = RACES["5379"]

    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client:
        def progress(runs, total, groups):
            if _executing(client) == [1, 1]:  # the pass's two tasks under way
                raise _Interrupted

        with pytest.raises(_Interrupted):
            race.find(bound=2, sample=False, client=client, progress=progress)
        stopped = time.monotonic() + 10
        while _executing(client) != [0, 0]:
            assert time.monotonic() < stopped, "a released subtree task still runs on its worker"
            time.sleep(0.02)
        assert race.find(bound=1, sample=False, client=client).exhaustive


@pytest.mark.dask
def test_a_search_on_dask_shows_its_shares_progress_while_it_waits(monkeypatch):
    """While the shares run on the workers, the search's ``progress`` hears how far they have
    got (read on each worker), rising, before the last call that counts everything in."""
    distributed = pytest.importorskip("distributed")
    monkeypatch.setattr(explore_module, "_PROGRESS_SECONDS", 0.05)
    race = _race_sent_whole()
    seen = []

    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client:
        result = explore(race, client=client, protocol="dask", max_schedules=60_000,
                         progress=lambda done, total, groups: seen.append(done))
        # Once its workers have forgotten a search's shares (released, as the search ends),
        # the next search's shares drop their counts: a worker keeps its newest search's only.
        deadline = time.monotonic() + 10
        while any(client.run(lambda dask_worker: len(dask_worker.state.tasks)).values()):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        explore(race, client=client, protocol="dask", max_schedules=2_000)
        kept = client.run(lambda: len(__import__("jupyter_refs.dask.share").dask.share.MADE))
        assert kept == dict.fromkeys(client.nthreads(), 1)
    assert seen[-1] == result.schedules == 60_000
    searched = result.systematic
    meanwhile = [done for done in seen[:-1] if searched < done < 60_000]
    assert len(meanwhile) >= 2 and meanwhile == sorted(meanwhile)


def test_progress_counts_the_forked_helpers_runs_as_they_go():
    """With a forked helper, ``progress`` hears the helper's draws as it makes them (a counter
    in memory both processes share), not only this process's: the bar does not sit at half
    and jump at the end."""
    seen = []
    total = 20_000
    result = explore(scatter_race, protocol="dask", max_schedules=total, processes=2,
                     progress=lambda done, of, groups: seen.append(done))
    assert seen[-1] == result.schedules == total
    assert seen == sorted(seen)
    # This process counts about half of the draws; with the helper's, nearly all of them
    # were reported before the end.
    assert max(seen[:-1]) > 0.7 * total, seen[-5:]


def _counts(result):
    from jupyter_refs.explore import _group
    return sorted((_group(f.run), f.count) for f in result.failures)


def _group_of(failure):
    from jupyter_refs.explore import _group
    return _group(failure.run)


def test_a_loop_that_starves_a_message_is_found_with_states_and_replays():
    """dask#8215's scenario at bound 2: an order that keeps one message back (counted once)
    while the others go round a loop never ends.  Without states the search walks such
    orders to MAX_DELIVERIES (twelve minutes here); with them the run that comes back to a
    state of its own path stops at once, and its schedule — the loop's picks repeated —
    replays to the same LivelockError."""
    from jupyter_refs.zoo import RACES

    race = RACES["8215"]
    result = race.find(bound=2, sample=False, max_schedules=100_000, processes=1)
    assert result.exhaustive and result.elapsed < 30
    [loop] = [f for f in result.failures if f.raised and f.raised.name == "LivelockError"]
    again = replay(race.scenario, loop.schedule)
    assert again.raised is not None and again.raised.message == loop.raised.message
    assert {"scenario_raised", "outcome_differs"} <= {n for f in result.failures for n in f.names}


def test_a_long_schedule_is_shortened_in_print_and_whole_on_the_object():
    from jupyter_refs.explore import short_schedule

    short = "dask@a6d9f7:0>1,1>1,2>1"
    assert short_schedule(short) == short
    long = "dask@a6d9f7:3>2," + ",".join(f"{i}>1" for i in range(5, 10016))
    shown = short_schedule(long)
    assert len(shown) <= 72 and shown.startswith("dask@a6d9f7:3>2,5>1,")
    assert shown.endswith(",…(10,012 deviations)")


def test_a_cells_last_expression_is_its_outcome_unless_a_future():
    from jupyter_refs.explore import cell_scenario

    with Cluster(protocol="dask", network="immediate") as cluster:
        client = cluster.client()
        value = cell_scenario("x = client.submit(inc, 1)\nx.result() * 10", {"inc": inc})(client)
        assert value == 20
        assert cell_scenario("client.submit(inc, 1)", {"inc": inc})(client) is None
        assert cell_scenario("y = 3", {})(client) is None


def test_a_cell_carries_the_names_it_reads_and_all_of_them_when_it_reads_by_name():
    """A cell's scenario keeps only the notebook names its code reads (so it pickles without
    the rest of the notebook); one that reads names by ``eval`` or ``globals()`` keeps them
    all, or it would fail with a NameError for a name the notebook has."""
    import cloudpickle

    from jupyter_refs.explore import cell_scenario

    namespace = {"inc": inc, "n": 4, "shell": threading.Lock()}  # (a lock does not pickle)
    with Cluster(protocol="dask", network="immediate") as cluster:
        client = cluster.client()
        plain = cell_scenario("client.submit(inc, n).result()", namespace)
        assert plain(client) == 5
        cloudpickle.dumps(plain)
        for cell in ('eval("client.submit(inc, n).result()")',
                     'globals()["inc"](globals()["n"])'):
            assert cell_scenario(cell, namespace)(client) == 5


def test_a_cells_future_dropped_is_released_though_a_library_makes_cycles(monkeypatch):
    """A function a cell defines has the cell's module (``__main__``, as in a notebook): pickle
    found one with no module by asking every module for it, and a module whose
    ``__getattr__`` makes a cycle (Cython's shadow modules do, where Cython is installed) then
    kept the run's frames, and the dropped future with them: the explorer collects no cycles
    in a run, so the cell's ``del`` released nothing."""
    from jupyter_refs.explore import cell_scenario

    monkeypatch.setitem(sys.modules, "shadow_like_cython", CyclingModule("shadow_like_cython"))
    cell = ("def inc(x):\n    return x + 1\n"
            "a = client.submit(inc, 1)\na.result()\nk = a.key\ndel a\n"
            "assert k not in client.futures, 'the dropped future is still held'\n")
    # (Held, the in-order run raises it: ScenarioError, the scenario's own error.)
    result = explore(cell_scenario(cell, {}), protocol="dask", max_schedules=50, processes=1)
    assert result.failures == []


@pytest.mark.parametrize("protocol, sampler", [("legacy", "pct"), ("fixed", "pct"),
                                               ("dask-2024.7", "uniform")])
def test_a_sampled_order_drawn_again_counts_as_when_it_was_run(monkeypatch, protocol, sampler):
    """The random runs remember the orders they ran (``sampling.Memo``): an order drawn again is
    counted as its first run was, not run again — the same counts, groups and smallest runs,
    the generator drawn on as a run would."""
    def summary(result):
        return (result.schedules, result.sampled, [(f.names, f.count, f.schedule, f.overtakes)
                                                   for f in result.failures])

    kwargs = dict(protocol=protocol, max_schedules=1200, processes=1, sampler=sampler, seed=5)
    made = []
    real = explore_module._run
    monkeypatch.setattr(explore_module, "_run", lambda *a, **k: made.append(1) or real(*a, **k))
    remembered = explore(scatter_race, **kwargs)
    runs = len(made)
    monkeypatch.setattr(importlib.import_module("jupyter_refs.sampling"), "MEMO_NODES", 0)
    plain = explore(scatter_race, **kwargs)
    assert summary(remembered) == summary(plain)
    assert runs < len(made) - (100 if sampler == "pct" else 0)  # PCT draws most orders again
    # The result says how many were drawn again: exactly the runs the memo did not make.
    assert plain.repeats == 0 and remembered.repeats == (len(made) - runs) - runs
    assert remembered.distinct == remembered.schedules - remembered.repeats
    assert ("orders drawn again" in remembered.summary()) == (remembered.repeats > 0)


_TREE_SEARCH = """
from jupyter_refs import explore

def add(a, b):
    return a + b

def tree(client, objs):
    while len(objs) > 1:
        objs = [client.submit(add, objs[i], objs[i + 1]) if i + 1 < len(objs) else objs[i]
                for i in range(0, len(objs), 2)]
    return objs[0]

def twice(client):
    root = tree(client, client.scatter([1, 2]))
    del root
    root = tree(client, client.scatter([1, 2]))

r = explore(twice, protocol="dask", bound=1, sample=False, processes=1)
print(r.systematic, r.states, sorted(f.schedule for f in r.failures))
"""


def test_a_search_is_the_same_in_every_process_whatever_its_hash_seed():
    """Lesson 6's tree, scattered twice: the scheduler forgets the first tree's inputs as it
    walks a task's dependencies, a set of strings, whose order is the process's hash seed's.
    Walked in that order, the ``free-keys`` it sent came in another order under another
    seed, and the same search made other runs and listed other smallest schedules (under
    seeds 0 and 1: 475 states against 484).  Each search here is a fresh interpreter."""
    import os
    import subprocess
    import sys

    seen = {subprocess.run([sys.executable, "-c", _TREE_SEARCH], capture_output=True, text=True,
                           check=True, env={**os.environ, "PYTHONHASHSEED": seed}).stdout
            for seed in ("0", "1")}
    assert len(seen) == 1, seen


def _tallied(results, below=None):
    """Shares' runs (``_Share.summary``) as ``_merge`` counts them: draws, same, repeats,
    and per failure group its count and smallest (size, picks)."""
    draws = same = repeats = 0
    groups: dict = {}
    for share in results:
        made, passed, failed = set(share.made), set(share.same), dict(share.failed)
        for draw in share.draws:
            if below is not None and draw >= below:
                continue
            draws, same, repeats = draws + 1, same + (draw in passed), repeats + (draw not in made)
            if draw in failed:
                group, size, picks = share.failing[failed[draw]]
                count, best = groups.get(group, (0, (size, picks)))
                groups[group] = (count + 1, min(best, (size, picks)))
    return draws, same, repeats, groups


@pytest.mark.parametrize("sampler", ["pct", "uniform"])
def test_shares_split_the_orders_and_count_each_draw_once(sampler):
    """Two shares of a random phase (``_Share``), each given every draw: together they count
    each draw once, with the one share's verdicts (the same failure groups, counts and
    smallest runs), and each order is run by one share only — so each runs about half the
    orders one share runs, not the ~70% that splitting the draws alone leaves each (PCT
    draws most orders again).  Counted below a limit (as ``explore(client=…)`` counts
    shares that ran ahead of its search), they are the one share's first draws."""
    fp = fingerprint(scatter_race)
    args = (scatter_race, "legacy", 1, fp, 11, None, (), (3, 12) if sampler == "pct" else None)
    n = 1500
    one = explore_module._Share(*args, 0, 1).summary(range(n))
    shorter = explore_module._Share(*args, 0, 1).summary(range(1100))
    for below, alone in ((n, one), (1100, shorter)):
        shares = [explore_module._Share(*args, s, 2).summary(range(n)) for s in range(2)]
        assert not set(shares[0].draws) & set(shares[1].draws)
        split = _tallied(shares, below)
        whole = _tallied([alone])
        assert split[0] == whole[0] == below
        assert split[1] == whole[1] and split[3] == whole[3]
        if below == n:  # every order run once, by one share
            assert split[2] == whole[2]
            made = [len(r.made) for r in shares]
            assert sum(made) == whole[0] - whole[2]
            if sampler == "pct":
                assert max(made) < 0.65 * (whole[0] - whole[2])


@pytest.mark.parametrize("race, length", [("7583", 9), ("5379", 26)])
def test_shares_split_a_scenarios_work_evenly_and_count_as_one(race, length):
    """Orders are dealt to shares by their first picks, each new prefix to the share with
    the least load so far (``sampling.Owners``).  Dealt by a hash of their first picks
    instead, a few heavy prefixes fell to one share: of 600 draws' orders 228 / 97 on
    #7583, 412 / 146 on #5379.  Now each share runs under 57% — and the two still count
    each draw once, with one share's verdicts."""
    race = RACES[race]
    args = (race.scenario, race.found_under, race.workers, fingerprint(race.scenario), 0, None,
            (), (3, length))  # PCT as explore draws it: the in-order run's decisions
    n = 600
    whole = _tallied([explore_module._Share(*args, 0, 1).summary(range(n))])
    shares = [explore_module._Share(*args, s, 2).summary(range(n)) for s in range(2)]
    made = [len(r.made) for r in shares]
    assert sum(made) == whole[0] - whole[2]
    assert max(made) < 0.57 * sum(made)
    assert _tallied(shares) == whole


def test_a_scenario_that_answers_otherwise_turns_the_memo_off_and_every_draw_still_counts():
    """A scenario that changes its calls after a while (a counter of its own) no longer makes
    the decisions the memo remembers: the share notices, makes that draw again from its
    start with the memo off, and counts every draw (no remembered head is read as a
    message, as a run made on a stale tree once did)."""
    calls = []

    def drifting(client):
        calls.append(1)
        x = client.scatter(123)
        del x
        x = client.scatter(123)
        if len(calls) > 150:
            client.submit(inc, 1)
        client.submit(inc, x)

    share = explore_module._Share(drifting, "legacy", 1, fingerprint(drifting), 3, None, (),
                                  (3, 12))
    counted = share.summary(range(400))
    repeats = len(counted.draws) - len(counted.made)
    assert list(counted.draws) == list(range(400)) and not share.memo.on
    assert 0 < repeats < 400 - 150  # counted from the memo only while it held
    for _group, _size, picks in counted.failing:
        assert picks


def test_a_helper_process_that_dies_is_reported_with_its_exit_code():
    """A forked helper that dies (here its scenario leaves the process) is reported as such,
    not as a broken pipe, and the search raises instead of counting short."""
    import os

    parent = os.getpid()

    def leaves_in_a_helper(client):
        if os.getpid() != parent:
            os._exit(3)
        scatter_race(client)

    with pytest.raises(RuntimeError, match=r"an explorer process died \(exit code 3\)"):
        explore(leaves_in_a_helper, protocol="legacy", max_schedules=2000, processes=2)
