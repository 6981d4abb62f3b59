"""Holds on a real, in-process dask cluster: #8576 forced by hand, confirmed from the explorer.

Nothing here waits for a race to happen on its own: every order is made by holding a
channel in dask and delivering its messages one by one.  ``wait_held`` waits for a sent
message to reach its gate (a condition, not a race).  Select with ``pytest -m dask``.
"""

from __future__ import annotations

import concurrent.futures
import gc
import threading
import time

import pytest

distributed = pytest.importorskip("distributed")

from distributed import Client, LocalCluster  # noqa: E402
from helpers import inc  # noqa: E402

from jupyter_refs import ScheduleError, explore, replay  # noqa: E402
from jupyter_refs.dask import ConfirmError, attach, confirm, holds, remote  # noqa: E402
from jupyter_refs.dask.holds import HoldsUnavailableError  # noqa: E402
from jupyter_refs.errors import NotDeliverableError, UnknownMessageError  # noqa: E402
from jupyter_refs.explore import fingerprint  # noqa: E402
from jupyter_refs.zoo import RACES  # noqa: E402

pytestmark = pytest.mark.dask

#: What each variant holds, and the order it then delivers in ("scattered": the second
#: scatter has returned).
VARIANTS = {
    "A": (["client:1->scheduler"], ["scattered", "client-releases-keys"]),
    "B": (["client:1->scheduler", "rpc:scheduler#*", "scheduler->worker:*", "worker:*->scheduler"],
          ["update-data", "client-releases-keys", "free-keys", "update-data-reply", "scattered",
           "release-worker-data"]),
}


def force_8576(client, tracer, variant, value: int, timeout: float = holds.STEP_TIMEOUT_S):
    """Scatter ``value``, drop it, scatter it again, delivering in the variant's order (a name
    of ``VARIANTS`` or its pair of lists), as lesson 4's ``force`` does.

    Returns the second future, its key and whether the steps could all be taken: under
    ordered scatter the second scatter waits behind the held release (its barrier is held
    there), so the forced order cannot happen; then everything is released in order.
    """
    channels, order = VARIANTS[variant] if isinstance(variant, str) else variant
    x = client.scatter(value)
    key = x.key
    pool = concurrent.futures.ThreadPoolExecutor(1)
    try:
        for channel in channels:
            tracer.hold(channel)
        del x
        holds.wait_step(tracer, "client-releases-keys", key, timeout=timeout)
        second = pool.submit(client.scatter, value)
        forced = holds.deliver_in_order(tracer, order, key, second, timeout)
    finally:
        tracer.release_holds()
        pool.shutdown(wait=False)
    return second.result(timeout=10), key, forced


def test_a_step_that_never_comes_fails_fast_and_the_next_recipe_works(inproc):
    """Lesson 4's Exercise 2, written wrong: ``free-keys`` named, its channel not held.  The
    step fails within its timeout, in one line naming itself and the channels held; the holds
    are gone, and a right recipe works at once (it used to hang the kernel for good)."""
    with attach(inproc) as tracer:
        wrong = (["client:1->scheduler", "rpc:client:1#*"], ["client-releases-keys", "free-keys"])
        start = time.monotonic()
        with pytest.raises(holds.StepNeverCameError) as failed:
            force_8576(inproc, tracer, wrong, 3000, timeout=1.0)
        assert time.monotonic() - start < 8
        said = str(failed.value)
        assert "\n" not in said and said.startswith("step 'free-keys' never came within 1 s"), said
        assert said.endswith("channels held: client:1->scheduler, rpc:client:1#*"), said
        assert tracer.held == set() and tracer.in_flight == []
        y, key, forced = force_8576(inproc, tracer, "A", 3001)
        assert forced and lost(inproc, tracer, y, key)
        del y


def lost(client, tracer, y, key: str) -> bool:
    """Whether the scheduler lost what the client still holds, and the checks said so."""
    tracer.sync()
    state = client.run_on_scheduler(remote.task_state, key=key)
    dangling = [v for v in tracer.violations if v.name == "dangling_future" and v.key == key]
    gone = state != "memory" or y.status != "finished" or not client.run(
        lambda dask_worker, key=key: key in dask_worker.data)
    assert bool(dangling) == gone, (state, y.status, tracer.violations)
    return gone


@pytest.mark.parametrize("variant", ["A", "B"])
def test_8576_is_forced_ten_times_out_of_ten(inproc, variant):
    with attach(inproc) as tracer:
        outcomes = []
        for i in range(10):
            y, key, forced = force_8576(inproc, tracer, variant, 1000 * (variant == "B") + i)
            assert forced
            outcomes.append(lost(inproc, tracer, y, key))
            if variant == "A":
                assert y.status == "finished"  # the client never hears of it
            else:
                assert y.status == "cancelled" and inproc.refcount[key] == 1
            with pytest.raises(distributed.client.FutureCancelledError):
                inproc.submit(lambda v: v + 1, y, pure=False).result(timeout=10)
            del y
        assert outcomes == [True] * 10


@pytest.mark.parametrize("variant", ["A", "B"])
def test_ordered_scatter_keeps_the_key_under_the_same_steps(inproc, variant):
    with attach(inproc, ordered_scatter=True) as tracer:
        for i in range(3):
            y, key, forced = force_8576(inproc, tracer, variant, 2000 + 100 * (variant == "B") + i)
            assert not forced  # the scatter waited behind the release
            assert not lost(inproc, tracer, y, key)
            assert inproc.submit(lambda v: v + 1, y, pure=False).result(timeout=10) == 2001 + (
                100 * (variant == "B") + i)
            del y
        assert tracer.violations == []


def wants_nothing(client, timeout: float = 10.0) -> None:
    """Wait until the scheduler knows no key wanted by ``client``: a future of an earlier test
    that the collector frees sends its release on the client's stream, where a test that
    holds that stream would find it beside its own (once under load)."""
    gc.collect()

    def wanted(dask_scheduler, client=client.id):
        state = dask_scheduler.clients.get(client)
        return len(state.wants_what) if state is not None else 0

    deadline = time.monotonic() + timeout
    while client.run_on_scheduler(wanted):
        assert time.monotonic() < deadline, "the client's earlier keys are still wanted"
        time.sleep(0.02)


def test_held_means_held_in_dask_and_ids_are_the_traces(inproc):
    wants_nothing(inproc)
    with attach(inproc) as tracer:
        x = inproc.scatter(7)
        key = x.key
        tracer.hold("client:1->scheduler")
        assert tracer.held == {"client:1->scheduler"}
        del x
        [release] = tracer.wait_held("client-releases-keys")
        assert str(release) == f"#{release.msg_id} client-releases-keys[{key}] client:1->scheduler"
        # The scheduler has not seen it: the key is still wanted, in memory.
        assert inproc.run_on_scheduler(remote.task_state, key=key) == "memory"
        sent = [e for e in tracer.trace.events(key=key) if e.kind == "msg.sent"
                and e.op == "client-releases-keys"]
        assert [e.msg_id for e in sent] == [release.msg_id]
        assert sent[0].channel == release.channel == "client:1->scheduler"
        with pytest.raises(UnknownMessageError):
            tracer.deliver(10_000)
        assert tracer.step() == [release]
        assert inproc.run_on_scheduler(remote.task_state, key=key) == "forgotten"
        tracer.sync()
        received = [e for e in tracer.trace.events(key=key) if e.kind == "msg.received"
                    and e.op == "client-releases-keys"]
        assert [e.msg_id for e in received] == [release.msg_id]
        assert tracer.in_flight == []


def test_fifo_a_later_message_waits_behind_the_held_one(inproc):
    with attach(inproc) as tracer:
        a, b = inproc.scatter(11), inproc.scatter(12)
        tracer.hold("client:1->scheduler")
        del a
        tracer.wait_held("client-releases-keys")
        del b
        first, second = tracer.wait_held("client-releases-keys", n=2)
        with pytest.raises(NotDeliverableError, match=f"waits behind #{first.msg_id}"):
            tracer.deliver(second.msg_id)
        assert tracer.release_holds() == {"client:1->scheduler"}
        assert tracer.in_flight == []


def test_a_send_the_trace_did_not_see_is_listed_at_its_place_on_the_channel(inproc):
    # CI caught this once: a future the collector freed after an earlier test sent its
    # release before the traced client's hooks saw it; held behind it, a later release got
    # the lower id.  Here the unseen send is made on purpose, past the hooks, as dask sends
    # its own heartbeats, then a hooked one in the same turn of the loop.
    with attach(inproc) as tracer:
        a, b = inproc.scatter(13), inproc.scatter(14)
        tracer.hold("client:1->scheduler")

        def unseen_then_seen():
            inproc.scheduler_comm.send({"op": "client-desires-keys", "keys": [a.key],
                                        "client": inproc.id})
            inproc._send_to_scheduler({"op": "client-desires-keys", "keys": [b.key],
                                       "client": inproc.id})

        inproc.loop.add_callback(unseen_then_seen)
        first, second = tracer.wait_held("client-desires-keys", n=2)
        assert (first.keys, second.keys) == ((a.key,), (b.key,))  # the channel's order
        assert first.msg_id > second.msg_id  # numbered when first listed
        with pytest.raises(NotDeliverableError, match=f"deliver #{first.msg_id} first"):
            tracer.deliver(second.msg_id)
        assert tracer.step(2) == [first, second]
        assert tracer.in_flight == []
        tracer.sync()
        sent = {e.msg_id for e in tracer.trace if e.kind == "msg.sent"}
        assert {first.msg_id, second.msg_id} <= sent
        assert tracer.violations == []


class _Witness:
    """A controller that holds nothing and notes what the scheduler knows of a key when each
    message about it counts as delivered."""

    def __init__(self, scheduler):
        self.scheduler = scheduler
        self.seen: dict[tuple, str | None] = {}
        self.done = threading.Event()

    def must_wait(self, sig, occurrence):
        return False

    def sent(self, sig, occurrence):
        pass

    def delivered(self, sig, occurrence):
        (_, _, op, keys) = sig
        if op == "update-data-reply":
            ts = self.scheduler.tasks.get(keys[0])
            self.seen[sig] = ts.state if ts is not None else None
            self.done.set()


def test_a_message_let_through_counts_as_delivered_once_its_receiver_handled_it(inproc):
    # The put's reply passes its gate before the scheduler registers the scatter (it resumes
    # behind asyncio.gather): a release that must follow the reply would overtake it if the
    # reply counted as delivered at its gate (CI, 8576 group 0>1,1>1,2>1, 1 run in 2 here).
    with attach(inproc) as tracer:
        holds = tracer.need_holds()
        witness = _Witness(inproc.cluster.scheduler)
        holds.steer(witness)
        try:
            x = inproc.scatter(1357)
            assert witness.done.wait(10)
        finally:
            holds.steer(None)
        assert list(witness.seen.values()) == ["memory"], witness.seen
        assert x.result(timeout=10) == 1357


def test_detach_after_holds_leaves_dask_working(inproc):
    def tables(dask_scheduler):
        wrapped = [op for op, h in dask_scheduler.stream_handlers.items() if hasattr(h, "__wrapped__")]
        wrapped += [op for op, h in dask_scheduler.handlers.items() if hasattr(h, "__wrapped__")]
        return wrapped, type(dask_scheduler.rpc).__name__

    def worker_tables(dask_worker):
        return [op for op, h in {**dask_worker.stream_handlers, **dask_worker.handlers}.items()
                if hasattr(h, "__wrapped__")]

    before = inproc.run_on_scheduler(tables), inproc.run(worker_tables)
    tracer = attach(inproc)
    x = inproc.scatter(21)
    for channel in ("client:1->scheduler", "scheduler->client:1", "scheduler->worker:*",
                    "worker:*->scheduler", "rpc:*"):
        tracer.hold(channel)
    del x
    f = inproc.submit(lambda v: v * 2, 4, pure=False)
    tracer.wait_held("update-graph")
    assert f.status == "pending"
    tracer.detach()  # delivers what is held, then removes every gate
    assert f.result(timeout=10) == 8
    assert inproc.gather(inproc.map(lambda v: v + 1, range(20), pure=False)) == list(range(1, 21))
    assert (inproc.run_on_scheduler(tables), inproc.run(worker_tables)) == before
    assert before[0][1] == "ConnectionPool"
    assert not any(hasattr(h, "__wrapped__") for h in inproc._stream_handlers.values())
    assert type(inproc.scheduler).__name__ == "PooledRPCCall"


def test_a_worker_that_joins_after_the_first_hold_is_held_too():
    with LocalCluster(n_workers=1, processes=False, threads_per_worker=1,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        with attach(client) as tracer:
            tracer.hold("scheduler->worker:*")
            [first] = client.scheduler_info()["workers"]
            cluster.scale(2)
            client.wait_for_workers(2, timeout=30)
            [new] = set(client.scheduler_info()["workers"]) - {first}
            f = client.submit(inc, 1, workers=[new], pure=False)
            [held] = tracer.wait_held("compute-task", timeout=5)
            assert held.channel == f"scheduler->{tracer.actor_name(new)}" and f.status == "pending"
            tracer.release_holds()
            assert f.result(timeout=10) == 2


def test_worker_processes_refuse_what_they_cannot_hold():
    with LocalCluster(n_workers=1, processes=True, threads_per_worker=1,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        with attach(client) as tracer:
            assert "worker(s) run in other processes" in tracer.reach()
            with pytest.raises(HoldsUnavailableError, match="runs in another process"):
                tracer.hold("scheduler->worker:*")
            with pytest.raises(HoldsUnavailableError, match="worker's data put"):
                tracer.hold("rpc:scheduler#*")
            tracer.hold("client:1->scheduler")  # the scheduler is here: this one works
            x = client.scatter(5)
            del x
            [release] = tracer.wait_held("client-releases-keys")
            tracer.deliver(release.msg_id)
            tracer.release_holds()
            assert client.submit(lambda v: v + 1, 1, pure=False).result(timeout=30) == 2


# -- confirm: the explorer's failures, on real dask ----------------------------------------------


def scatter_race(client):  # the explorer's #8576 scenario (tests/test_explore.py)
    x = client.scatter(123)
    del x
    x = client.scatter(123)
    client.submit(inc, x)


def scatter_then_compute(client):  # held out: a task holds the first scatter's key
    x = client.scatter(5)
    y = client.submit(inc, x)  # noqa: F841 - held until the scenario ends
    del x
    z = client.scatter(5)
    w = client.submit(inc, z)  # noqa: F841


@pytest.fixture(scope="module")
def race_failures():
    return explore(scatter_race, protocol="dask", max_schedules=2000, bound=2, processes=1).failures


#: The group whose forcing also needs the *default* orders (release before scatter, free-keys
#: before the put): see test_the_late_worker_release_group below.
LATE_WORKER_RELEASE = ("update-data-reply overtook release-worker-data",)


@pytest.mark.slow
def test_every_8576_failure_group_is_confirmed_on_real_dask(inproc, race_failures):
    assert len(race_failures) >= 2
    for failure in race_failures:
        result = confirm(scatter_race, failure, inproc)
        assert result.confirmed, (failure.schedule, str(result))
        assert result.expected.name == failure.violations[0].name
        assert any(v.name == result.expected.name and v.key == result.expected.key
                   for v in result.violations)
        assert len(result.trace) > 0 and result.overtakes
        assert failure.confirmed.startswith(f"confirmed on distributed {distributed.__version__}")
    # dask keeps working after each run (its tracer detached, every hold let go)
    assert inproc.gather(inproc.map(inc, range(10), pure=False)) == list(range(1, 11))


def test_a_fresh_task_key_pairs_with_the_models_by_prefix_and_order():
    from jupyter_refs.dask.confirm import _Keys

    def k(prefix: str, digit: str) -> str:  # a key as dask makes them: prefix-<32 hex digits>
        return f"{prefix}-{digit}{'0' * 31}"

    keys = _Keys([k("int", "1"), k("inc", "a"), k("inc", "b"), k("add", "c")],
                 fresh={k("inc", "a"), k("inc", "b"), k("add", "c")})
    assert keys.key(k("int", "1")) == k("int", "1")  # the same in every run: as it is
    assert keys.key(k("inc", "9")) == k("inc", "a")  # the first fresh inc- the model sent
    assert keys.key(k("inc", "9")) == k("inc", "a")  # once paired, kept
    assert keys.key(k("inc", "8")) == k("inc", "b")
    assert keys.key(k("inc", "7")) == k("inc", "7")  # none left: a key the model never had
    assert keys.key(k("int", "2")) == k("int", "2")  # int-1… is not fresh: not taken
    assert keys.sig(("a", "b", "op", (k("inc", "8"), k("int", "1")))) == (
        "a", "b", "op", (k("inc", "b"), k("int", "1")))


def test_every_choice_of_every_group_is_enforced(inproc, race_failures):
    """Every choice of the model is enforced in every run, the waits for the task's messages
    too (``update-graph`` of ``inc``), whose key no two runs share: the controller pairs
    dask's key with the model's (before, those waits never came).  Whether dask then fails
    is timing beyond the messages (a handler's turns of the loop): the retries of
    ``orders="auto"`` above are for that."""
    for failure in race_failures:
        result = confirm(scatter_race, failure, inproc, orders="every", attempts=1)
        assert result.enforced and not result.unmet, str(result)
        assert any("[inc-" in s for s in result.overtakes)


def test_the_late_worker_release_group(inproc, race_failures):
    """The worker's release-worker-data (for the old copy, freed before the put) must reach the
    scheduler after the scatter is registered.  On dask the registration runs in the scatter
    handler a few turns of the loop after the put's reply is delivered: a message that waits
    for that reply is let go only once its delivery has been handled, so one run, with every
    choice of the model enforced, confirms it — no retry needed."""
    [failure] = [f for f in race_failures if f.overtakes == LATE_WORKER_RELEASE]
    result = confirm(scatter_race, failure, inproc, orders="every", attempts=1)
    assert result.confirmed, str(result)
    assert result.attempts == 1 and result.enforced


def cancel_then_same_key_slowly(client):
    """dask#8215's scenario with a user thread that lags behind dask's event loop."""
    f = client.submit(inc, 1, key="k")
    client.cancel([f])
    time.sleep(0.3)  # the first run ends, and its key-in-memory is on its way, meanwhile
    g = client.submit(inc, 1, key="k")
    return g.result()


def test_a_lagging_user_thread_still_meets_the_models_order(inproc):
    """The model runs the user's code until it waits; dask's user thread may lag behind its
    loop.  A message to the client waits until the client sent what the model's sent first
    (key-in-memory waits for the second update-graph; cancelled-keys for the gather, a request
    gated while confirm steers, whose reply then waits behind cancelled-keys): #8215's
    returning order is made in every run (CI: 3 of 3 runs cancelled under load, and the
    gather, never gated, left every choice of the model unmade)."""
    from jupyter_refs.dask.confirm import sent_first

    race = RACES["8215"]
    returning = next(f for f in race.find(max_schedules=300, processes=1, sample=False).failures
                     if f.names == ("outcome_differs",)).schedule
    # The same messages in the same order: only the scenario's fingerprint differs.
    returning = returning.replace(fingerprint(race.scenario),
                                  fingerprint(cancel_then_same_key_slowly))
    first = sent_first(replay(cancel_then_same_key_slowly, returning), {},
                       lambda receiver, op: op != "execute")
    update_graph = ("client:1", "scheduler", "update-graph", ("k",))
    gather = next(n for n in first[(("scheduler", "client:1", "cancelled-keys", ("k",)), 1)]
                  if n[0][2] == "gather")
    assert gather == (("client:1", "scheduler", "gather", ("k",)), 1)
    assert first[(("scheduler", "client:1", "key-in-memory", ("k",)), 1)] == {(update_graph, 2)}
    for _ in range(3):
        result = confirm(cancel_then_same_key_slowly, returning, inproc, orders="every",
                         attempts=1)
        assert result.confirmed and result.enforced, str(result)
        assert result.outcome == "returned 2"
        # The gated gather is in real dask's trace, its send paired with its receipt.
        gathers = [e for e in result.trace.events() if e.op == "gather"]
        sent = {e.msg_id for e in gathers if e.kind == "msg.sent"}
        assert sent and sent == {e.msg_id for e in gathers if e.kind == "msg.received"}


@pytest.mark.slow
def test_no_8576_failure_group_is_confirmed_under_ordered_scatter(inproc, race_failures):
    for failure in race_failures:
        result = confirm(scatter_race, failure.schedule, inproc, ordered_scatter=True, stall=1.5)
        assert not result.confirmed, str(result)
        assert not result.enforced and "never came" in str(result)
        assert result.violations == []


@pytest.mark.slow
def test_a_held_out_scenario_is_confirmed_the_same_way(inproc):
    failures = explore(scatter_then_compute, protocol="dask", max_schedules=600, bound=2,
                       processes=1).failures
    assert failures
    for failure in failures:
        assert confirm(scatter_then_compute, failure, inproc).confirmed, failure.schedule


def test_confirm_refuses_a_schedule_that_does_not_fail(inproc):
    with pytest.raises(ConfirmError, match="does not fail"):
        confirm(scatter_race, replay(scatter_race, "dask@" + fingerprint(scatter_race) + ":").schedule,
                inproc)


def _plugins(dask_scheduler) -> list[str]:
    return sorted(dask_scheduler.plugins)


def test_confirm_refuses_a_failure_judged_only_at_a_drain(inproc):
    """A dask trace records no drain, so a failure that breaks only promises judged at one
    (PR 6016's in-order cancel_ignored, under today's dask) can be neither confirmed nor
    refuted there: confirm says so before it touches the cluster, rather than report real
    dask as not failing where the tracer never looked."""
    scenario = RACES["6016"].scenario
    failure = explore(scenario, protocol="dask", bound=0, sample=False).failures[0]
    assert [v.name for v in failure.run.violations] == ["cancel_ignored"]
    plugins = inproc.run_on_scheduler(_plugins)
    with pytest.raises(ConfirmError, match="only by cancel_ignored, judged once every channel has "
                                           "drained; a traced dask cluster records no drain"):
        confirm(scenario, failure, inproc)
    assert inproc.run_on_scheduler(_plugins) == plugins
    assert failure.confirmed is None


def test_confirm_expects_the_first_violation_a_dask_trace_can_judge(inproc):
    """PR 9217's two-client race breaks hung_future (judged at a drain) and then the scenario
    raises: real dask is asked for the second (it was asked for the first, which it could
    never show)."""
    scenario = RACES["9217-two-clients"].scenario
    failure = explore(scenario, protocol="dask", bound=2, sample=False, processes=1).failures[0]
    assert [v.name for v in replay(scenario, failure.schedule).violations] == [
        "hung_future", "scenario_raised"]
    result = confirm(scenario, failure, inproc, orders="delays", attempts=1, stall=0.5)
    assert result.expected.name == "scenario_raised", str(result)


def test_confirm_under_ordered_scatter_needs_a_tracer_that_orders(inproc, race_failures):
    """Asked to confirm under the workaround on a tracer attached without it, confirm says so
    rather than run without it."""
    with attach(inproc) as tracer:
        with pytest.raises(ConfirmError, match="without ordered scatter"):
            confirm(scatter_race, race_failures[0], tracer, ordered_scatter=True)


def test_confirm_on_an_attached_tracer_counts_from_its_own_run(inproc, race_failures):
    """Messages are known by their signature and how many such came before: on a tracer that
    has already seen the same messages (the user's traffic, an earlier run), the count starts
    again with the run.  Under ordered scatter the release must then wait for a scatter that
    never comes — rather than count as an earlier release and go at once."""
    form_a = next(f for f in race_failures if "scatter overtook client-releases-keys" in f.overtakes)
    with attach(inproc, ordered_scatter=True) as tracer:
        tracer.hold("client:1->scheduler")  # the gates are in: they see what follows
        tracer.release_holds()
        x = inproc.scatter(123)  # the scenario's own messages, once already
        del x
        inproc.submit(inc, 1).result(timeout=10)
        result = confirm(scatter_race, form_a, tracer, ordered_scatter=True, orders="delays",
                         attempts=1, stall=1.0)
        assert not result.enforced and "never came" in str(result), str(result)


def test_a_failure_of_a_variant_of_ones_own_is_confirmed_under_it(inproc):
    # Generations without incarnations (lesson 07's challenge) loses futures on the worker
    # side; confirm replays the failure under that variant, not under a registered name,
    # and real dask, which has neither mechanism, loses the future the same way.
    import dataclasses

    from jupyter_refs.protocol.variants import FIXED

    half = dataclasses.replace(FIXED, name="generations-only", incarnations=False)
    failure = explore(scatter_race, protocol=half, max_schedules=400, bound=2,
                      processes=1, first=True).failures[0]
    result = confirm(scatter_race, failure, inproc)
    assert result.schedule == failure.schedule and result.expected.name == failure.names[0]
    assert result.confirmed, str(result)  # real dask has neither mechanism: it loses it too
    with pytest.raises(ScheduleError, match="not registered"):
        confirm(scatter_race, failure.schedule, inproc)  # a bare string needs protocol=


def test_fire_and_forget_of_a_real_dask_future_is_dasks(inproc):
    """A scenario's ``from jupyter_refs import fire_and_forget``, run on a real client by
    ``%confirm``, sends dask's desire for the pseudo-client (it used to do nothing)."""
    from jupyter_refs import fire_and_forget

    f = inproc.submit(inc, 1, pure=False)
    key = f.result(timeout=10) and f.key
    fire_and_forget(f)

    def wanted_by(dask_scheduler, key=key):
        return sorted(c.client_key for c in dask_scheduler.tasks[key].who_wants)

    for _ in range(100):
        if "fire-and-forget" in inproc.run_on_scheduler(wanted_by):
            break
        threading.Event().wait(0.02)
    assert "fire-and-forget" in inproc.run_on_scheduler(wanted_by)
    del f

    def let_go(dask_scheduler, key=key):  # the shared cluster keeps nothing of this test
        dask_scheduler.client_releases_keys([key], "fire-and-forget")

    inproc.run_on_scheduler(let_go)
