"""The race zoo: dask's known ordering races, each a scenario the explorer finds under its release.

Each :class:`Race` says where it comes from (dask's tracker and the pull request that
fixed it, with the first release that shipped the fix, read with ``git tag --contains``),
the message order in words, the symptom a user saw, and a scenario: a function of one
client (or two), written as the report's reproducer was.  ``race.find()`` explores it under the
release it affects; ``race.find(race.absent_under[0])`` under one it does not.

Only races whose mechanisms the model carries are here; the others of dask's history are
listed in :data:`NOT_MODELLED` with what the model lacks (see ``protocol.variants`` for the
releases modelled).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from packaging.version import Version

from .coordination import Queue, Variable
from .explore import ExploreResult, Failure, explore
from .protocol.variants import OLDEST, release_of


def inc(x: int) -> int:
    return x + 1


def dec(x: int) -> int:
    return x - 1


def fail(x: int) -> int:
    raise ValueError(f"the first submission's error ({x})")


def keep(box: Any) -> Any:
    return box


class Box:
    """An object of the user's own class: dask does not look inside it, so a future in it
    travels pickled, as a Future (the ghost task's way in)."""

    def __init__(self, items: list):
        self.items = items


def scatter_drop_scatter(client: Any) -> None:
    """crusaderky's loop from dask#8576, once: the same value scattered, dropped, scattered."""
    x = client.scatter(123)
    del x
    x = client.scatter(123)
    client.submit(inc, x)


def future_in_a_task(client: Any) -> None:
    """dask#7498: a future inside an object dask does not unpack, its owner's hold dropped."""
    x = client.scatter(41)
    g = client.submit(keep, Box([x]))  # noqa: F841 - held until the scenario ends
    del x


def cancel_then_same_key(client: Any) -> int:
    """dask#8215 as reported: cancel a future, then submit the same key again at once."""
    f = client.submit(inc, 1, key="k")
    client.cancel([f])
    g = client.submit(inc, 1, key="k")
    return g.result()


def resubmit_other_function(client: Any) -> int:
    """PR 7463's case (``test_secede_cancelled_or_resumed_scheduler``; PR 7348's test with
    another function): a key submitted, released while it runs, and submitted again at once
    with another function."""
    f = client.submit(inc, 1, key="k")
    f.release()
    client.who_has()  # a round trip: dask's release() only queues the release on its loop
    g = client.submit(dec, 1, key="k")
    return g.result()


def resubmit_after_error(client: Any) -> int:
    """PR 7933's case (``test_cancelled_task_error_rejected``): the first submission of the key
    fails, the second would not."""
    f = client.submit(fail, 1, key="k")
    f.release()
    client.who_has()  # a round trip: dask's release() only queues the release on its loop
    g = client.submit(dec, 1, key="k")
    return g.result()


def blocked(x: int, event: Any) -> int:
    """Holds its worker's thread until ``event`` is set (PR 7348's test blocks its tasks so)."""
    event.wait()
    return x


def release_while_stolen(client: Any) -> tuple[int, int, int]:
    """dask#5370's chain on two workers of two threads (``test_reschedule_concurrent_requests_
    deadlock`` asks by hand; here the balance does): ``a`` and ``c`` hold worker:0's threads,
    ``b`` queues behind them and may move; it is released while a steal of it travels and
    submitted again at once, then stolen again."""
    from .coordination import Event

    go = Event("go", client)
    a = client.submit(blocked, 1, go, key="a", workers=["worker:0"])
    c = client.submit(blocked, 3, go, key="c", workers=["worker:0"])
    b = client.submit(inc, 2, key="b", workers=["worker:0"], allow_other_workers=True)
    b.release()
    b = client.submit(inc, 2, key="b", workers=["worker:0"], allow_other_workers=True)
    value = b.result()
    go.set()
    return value, a.result(), c.result()


def cancel_right_after_submit(client: Any) -> int:
    """PR 7583's test (``test_cancel_before_known_to_scheduler``): cancel a future right after
    submitting it, keep it, and go on working."""
    f = client.submit(inc, 1, key="k")  # noqa: F841 - kept, as the test keeps it
    client.cancel([f])
    return client.submit(inc, 2, key="next").result()


def other_client_cancels(client: Any, other: Any) -> int:
    """PR 6016's test (``test_cancel_multi_client``): two clients submit the same key, both
    see it finish, then one of them cancels it."""
    x = client.submit(inc, 1, key="k")
    y = other.submit(inc, 1, key="k")
    y.result()
    x.result()
    client.cancel([x])
    return y.result()


def cancel_before_the_others_graph(client: Any, other: Any) -> int:
    """Two clients submit the same key; the first cancels its future right away, before the
    other's graph has reached the scheduler."""
    y = other.submit(inc, 1, key="k")
    client.submit(inc, 1, key="k").cancel()
    return y.result()


def publish_right_after_submit(client: Any) -> int:
    """PR 8577's test (``test_publish_submit_ordering``): publish a future just submitted with
    an annotation (there ``resources=``, which the model does not carry; here ``retries=``)."""
    f = client.submit(inc, 1, retries=2)
    client.publish_dataset(f, name="foo")
    return f.result()


def get_then_unpublish(client: Any) -> int:
    """PR 9217's test (``test_publish_unpublish_wait_for_batched_comms``), its second race:
    the user takes a published dataset, then unpublishes it at once."""
    x = client.submit(inc, 122, key="x")
    client.publish_dataset(x=x)
    del x
    y = client.get_dataset("x")
    client.unpublish_dataset("x")
    return y.result()


def reader_then_owner_unpublishes(owner: Any, reader: Any) -> int:
    """PR 9217's race with two clients: one takes the dataset, then its owner unpublishes it."""
    x = owner.submit(inc, 122, key="x")
    owner.publish_dataset(x=x)
    del x
    y = reader.get_dataset("x")
    owner.unpublish_dataset("x")
    return y.result()


def _coordination(client: Any, name: str) -> Any:
    """``Variable`` or ``Queue`` for ``client``: dask's for a real dask client (so that
    ``jupyter_refs.dask.confirm`` runs the scenario there), the model's otherwise."""
    if type(client).__module__.startswith("distributed"):
        import distributed

        return getattr(distributed, name)
    return {"Variable": Variable, "Queue": Queue}[name]


def variable_get_twice_then_set(client: Any) -> int:
    """PR 1132's race (commit 744c7431, "pass tokens back to variables"), as its stress test
    met it in one client: the variable holds x alone; the client gets it, lets it go, gets it
    again at once, and sets the variable to another value."""
    v = _coordination(client, "Variable")("x", client=client)
    x = client.submit(inc, 1, key="x")
    x.result()
    v.set(x)
    del x
    f = v.get()
    del f
    g = v.get()
    v.set(0)
    return g.result()


def same_future_twice_in_a_queue(client: Any) -> str:
    """PR 1133's test (``test_same_futures``), its putter letting go: the same future put in a
    queue twice, then got twice.  The second get's future is returned unwaited (by its key):
    before the fix it waits for ever in every order, which is no order's doing."""
    q = _coordination(client, "Queue")("q", client=client)
    x = client.submit(inc, 1, key="x")
    x.result()
    q.put(x)
    q.put(x)
    del x
    first = q.get()
    first.result()
    del first
    second = q.get()
    return second.key


def retire_a_worker(client: Any) -> tuple[list[str], int]:
    """PR 8522's race as a user meets it: retire the worker holding a result (its data moves
    to the other worker first), then look at the cluster and the result.  Two workers with
    nannies (dask's ``LocalCluster(processes=True)``)."""
    x = client.submit(inc, 1, key="x", workers=["worker:1"])
    x.result()
    client.retire_workers(["worker:1"])
    return sorted(client.scheduler_info()["workers"]), x.result()


def _modelled(*protocols: str) -> tuple[str, ...]:
    """``protocols`` less the releases older than :data:`OLDEST`: a race whose fix shipped in a
    release the model does not reach yet is shown absent under the protocols it does reach."""
    return tuple(p for p in protocols if (v := release_of(p)) is None or v >= Version(OLDEST))


@dataclass(frozen=True)
class Race:
    """One race of dask's history: where from, which releases, the order, the symptom."""

    name: str
    title: str
    links: tuple[str, ...]
    releases: str  # the releases of distributed it affects, in words
    found_under: str  # the protocol that models an affected release
    absent_under: tuple[str, ...]  # protocols that model the fix (a release, or ``fixed``)
    order: str
    symptom: str
    scenario: Callable[..., Any]
    #: The failures that are this race (the checks' names, or ``scenario_raised``).
    names: frozenset[str]
    #: The workers its cluster has (the report's; work stealing needs two).
    workers: int = 1

    def find(self, protocol: str | None = None, **kwargs: Any) -> ExploreResult:
        """Explore the scenario under ``protocol`` (default: the release it affects)."""
        kwargs.setdefault("max_schedules", 3000)
        kwargs.setdefault("workers", self.workers)
        return explore(self.scenario, protocol=protocol or self.found_under, **kwargs)

    def failures(self, result: ExploreResult) -> list[Failure]:
        """The failures of ``result`` that are this race."""
        return [f for f in result.failures if self.names & set(f.names)]


RACES: dict[str, Race] = {r.name: r for r in (
    Race("8576", "scatter, drop, scatter: a late release forgets the new hold",
         ("https://github.com/dask/distributed/issues/8576",),
         "every release modelled (open on 2026.8.0)", "dask", ("fixed",),
         "the batched client-releases-keys of the dropped future is overtaken by the next "
         "scatter RPC of the same value (form A), or lands inside it, between the worker's put "
         "and the scheduler's registration (form B)",
         "a future that says finished points at a forgotten key; the next submit on it is "
         "cancelled: 'lost dependencies'",
         scatter_drop_scatter, frozenset({"dangling_future"})),
    Race("7498", "a claim on a forgotten key creates a ghost task",
         ("https://github.com/dask/distributed/issues/7498",
          "https://github.com/dask/distributed/pull/8827"),
         "until 2024.8.1 (fixed in 2024.8.2, PR 8827)", "dask-2024.8.1", ("dask-2024.8.2", "fixed"),
         "the owner's release forgets the key before the task's deserialized future sends "
         "client-desires-keys, which creates a task with no run spec",
         "the scheduler trips over the ghost and drops the client: FutureCancelledError "
         "… scheduler-connection-lost",
         future_in_a_task, frozenset({"ghost_task"})),
    Race("8215", "cancel, then the same key again",
         ("https://github.com/dask/distributed/issues/8215",),
         "every release modelled (open on 2026.8.0)", "dask", ("fixed",),
         "cancelled-keys (sent to every client, with no epoch) reaches the client after it "
         "made the new future of the same key, and cancels it; only when the first run's "
         "result and the gather overtake the cancel does the new future survive",
         "FutureCancelledError: k cancelled for reason: unknown — on real dask in most runs "
         "(20 of 20 on 2026.8.0 here), the in-order one included",
         cancel_then_same_key, frozenset({"scenario_raised", "outcome_differs"})),
    Race("7463", "release, resubmit with another function: the first run's result is taken",
         ("https://github.com/dask/distributed/issues/7200",
          "https://github.com/dask/distributed/pull/7348",
          "https://github.com/dask/distributed/pull/7463"),
         "until 2023.1.0 (fixed in 2023.1.1, PR 7463: compute-task and task-finished carry a "
         "run id)", "dask-2023.1.0", ("dask-2023.1.1", "fixed"),
         "the worker runs the first submission before the free-keys of its release reaches it; "
         "its task-finished reaches the scheduler after the release and the second "
         "update-graph, when the key is processing on that same worker again, and is taken as "
         "the second run's result",
         "the scheduler registers the first function's result as the second's: a gather that "
         "reaches the worker before the release's free-keys returns 2 (inc) for the dec future; "
         "otherwise the free-keys deletes it and the key is reported lost and recomputed (PR "
         "7463's test, where the worker's cancelled run resumed, got 123 instead of 2)",
         resubmit_other_function, frozenset({"stale_result"})),
    Race("7933", "release, resubmit: the first run's error falls on the second",
         ("https://github.com/dask/distributed/pull/7933",),
         "until 2023.6.1 (fixed in 2023.7.0, PR 7933: task-erred carries the run id)",
         "dask-2023.6.1", ("dask-2023.7.0", "fixed"),
         "as for 7463, with a first submission that raises: its task-erred reaches the scheduler "
         "when the key is processing again, and a task-erred for a processing task was taken "
         "from any run (and any worker)",
         "the second future raises the first function's exception (ValueError) instead of "
         "returning 0",
         resubmit_after_error, frozenset({"stale_result"})),
    Race("5379", "a late steal-response moves a task released and processing again",
         ("https://github.com/dask/distributed/issues/5370",
          "https://github.com/dask/distributed/pull/5379"),
         "until 2021.9.1 (fixed in 2021.10.0, PR 5379: steal-request and steal-response carry "
         "a stimulus id)", "dask-2021.9.1", ("dask-2021.10.0", "fixed"),
         "the balance asks worker:0 for b (steal-1); the client's release of b and its "
         "resubmission reach the scheduler, b processes on worker:0 again and is asked for "
         "again (steal-2); worker:0's answer to steal-1 ('ready': it gave the first b up) "
         "arrives and, matched by key alone, confirms steal-2",
         "the scheduler moves the new b to worker:1 while worker:0 still has it queued and "
         "was never told (its steal-2 is on its way): with a free thread it runs b too. The "
         "issue's deadlock — an 'executing' or None answer consuming steal-2's record, so "
         "the victim's own 'ready' is ignored and b stays processing on a worker that gave "
         "it up — needed the worker of PR 5046, which shipped with the fix: 2021.9.1's worker "
         "followed a given-up task with 'release', and the scheduler sent the task again",
         release_while_stolen, frozenset({"stale_steal"}), workers=2),
    Race("7583", "cancel right after submit: the cancel overtakes the graph and is lost",
         ("https://github.com/dask/distributed/pull/7583",),
         "until 2023.3.0 (fixed in 2023.3.1, PR 7583)", "dask-2023.3.0",
         ("dask-2023.3.1", "fixed"),
         "Client.cancel awaits a cancel RPC, which overtakes the batched update-graph sent just "
         "before it; the scheduler's _cancel_key polls every 0.1 s for the key to be known and "
         "wanted (by anyone) and, the graph still on its way after ten looks (1 s), gives up "
         "without a word; the RPC returns, the client cancels its future, and the graph then "
         "makes the client want the key",
         "the task runs although cancelled, and its result stays in memory for a future the user "
         "cancelled until the Future object is dropped (PR 7583's test: 'Scheduler cancels key' "
         "never logged); the cancel itself blocks for up to a second",
         cancel_right_after_submit, frozenset({"cancel_ignored"})),
    Race("6016", "one client's cancel cancels another client's future of the same key",
         ("https://github.com/dask/distributed/pull/6016",),
         "until 2022.5.0 (fixed in 2022.5.1, PR 6016)", "dask-2022.5.0",
         ("dask-2022.5.1", "dask", "fixed"),
         "no order is needed: with both graphs applied, the cancel finds who_wants = {both}, "
         "cancels nothing and releases only the cancelling client's hold, yet cancel_key "
         "reports cancelled-key to every client that wants the key (who_wants == {client} "
         "guarded only the recursion into the dependents); an order decides only whether the "
         "other client's graph had arrived when the cancel looked",
         "the other client's future says cancelled and its result() raises CancelledError, "
         "while the scheduler computes and keeps the key for it (PR 6016's test: "
         "'assert not y.cancelled()' fails)",
         other_client_cancels, frozenset({"cancelled_for_another"})),
    Race("7583-two-clients", "one client's cancel reaches every client: still open",
         ("https://github.com/dask/distributed/pull/7583",
          "https://github.com/dask/distributed/issues/8215"),
         "from 2023.3.1 (open on 2026.8.0: PR 7583 made the cancel's report go to every "
         "client; before it the report went to the clients that wanted the key)", "dask",
         ("fixed",),
         "the first client's update-graph and cancel-keys (one stream) reach the scheduler "
         "before the other client's update-graph (another stream): the cancel finds who_wants "
         "= {first}, cancels the key and reports cancelled-keys, with no hold in it, to every "
         "client; the other client, whose graph is still on its way, cancels its future",
         "the other client's result() raises FutureCancelledError, then its graph arrives and "
         "the scheduler computes the key for it (on 2026.8.0 over TCP, its stream 0.5 s late: "
         "5 of 5 raised, and the key ended in memory wanted by it)",
         cancel_before_the_others_graph, frozenset({"scenario_raised", "cancelled_for_another"})),
    Race("8577", "publish right after submit: the put overtakes the graph, annotations dropped",
         ("https://github.com/dask/distributed/pull/8577",),
         "2023.4.0 to 2024.4.1 (fixed in 2024.4.2, PR 8577; before PR 7564, 2023.4.0, "
         "update_graph gave a task made first its annotations too)", "dask-2024.4.1",
         ("dask-2024.4.2", "fixed"),
         "publish_dataset's publish_put RPC overtakes the batched update-graph of the future it "
         "publishes; its desire for published-<name> makes the unknown key's task (as every "
         "release before PR 8827 did), and update_graph, finding the task made, gives it the "
         "run spec but not the annotations, which it applies to new tasks only",
         "the task runs without its annotations: resources, worker restrictions, retries "
         "(PR 8577's test as a loop on 2024.4.1 over TCP: {} instead of {'resources': {'A': 1}} "
         "in 18 of 20 runs, scripts/dask_8577_probe.py)",
         publish_right_after_submit, frozenset({"annotations_dropped"})),
    Race("9217", "get_dataset, then unpublish: the delete overtakes the reader's claim",
         ("https://github.com/dask/distributed/pull/9217",),
         "until 2026.3.0 (fixed in 2026.6.0, PR 9217; no release between)", "dask-2026.3.0",
         ("dask-2026.6.0", "dask", "fixed"),
         "get_dataset binds the dataset's futures and announces them with client-desires-keys "
         "on the batched stream; unpublish_dataset's publish_delete RPC overtakes it and "
         "releases published-<name>, the last holder, so the key is forgotten before the "
         "desire lands (or a late key-in-memory of the key's previous hold finishes the new "
         "future first)",
         "the future never finishes: result() waits for ever, the scheduler logs 'Client … "
         "desires key 'x' but key is unknown' (5 of 5 on 2026.3.0 over TCP, "
         "scripts/dask_9217_probe.py); or it says finished and the gather is cancelled: 'x "
         "cancelled for reason: already forgotten'",
         get_then_unpublish, frozenset({"hung_future", "dangling_future"})),
    Race("9217-two-clients", "get_dataset by one client, unpublish by another: still open",
         ("https://github.com/dask/distributed/pull/9217",),
         "every release modelled (open on 2026.8.0: PR 9217's marker orders the unpublishing "
         "client's own stream only)", "dask", ("fixed",),
         "the reader's get_dataset returns and its client-desires-keys waits on its batched "
         "stream; the owner's unpublish_dataset flushes the owner's stream, not the reader's, "
         "so its publish_delete still overtakes the reader's desire",
         "the reader's future never finishes: result() waits for ever, and the scheduler logs "
         "'Client … desires key 'x' but key is unknown' (over TCP, the reader's stream flushing "
         "0.5 s late: 5 of 5 on 2026.3.0, 2026.6.0 and 2026.8.0, scripts/dask_9217_probe.py)",
         reader_then_owner_unpublishes, frozenset({"hung_future", "dangling_future"})),
    Race("1132", "a Variable's get overtaking the same client's confirmation: the old key "
         "released under the reader",
         ("https://github.com/dask/distributed/pull/1132",
          "https://github.com/dask/distributed/commit/744c7431cb28d37fec732e5e0f66e5b829022444"),
         "no release: Variable came in PR 1128 (2017-06-04) and its fix (commit 744c7431, "
         "merged with PR 1132 on 2017-06-05) is in 1.17.0, the first release with either; "
         "modelled as the development state dask-1.17.0.dev0", "dask-1.17.0.dev0",
         _modelled("dask-1.17.0", "fixed"),
         "the variable counts its readers by client: the client's second variable_get RPC "
         "overtakes the first get's confirmation on its batched stream and adds nobody; the "
         "first confirmation empties the readers, so the set's release of the old key goes, "
         "the client's release of its first future forgets the key, and the second get's "
         "confirmation (its desire) comes after",
         "the future the second get returned never finishes (1.17's scheduler adds a desire "
         "for a forgotten key to who_wants with no task; every release before PR 8827 made "
         "a ghost task, which the model reports); the commit: 'it was possible for a future "
         "to be forgotten in a complex race condition'",
         variable_get_twice_then_set, frozenset({"ghost_task", "hung_future", "dangling_future"})),
    Race("1133", "the same future twice in a Queue: the first get lets the queue's hold go",
         ("https://github.com/dask/distributed/pull/1133",),
         "no release: Queue came in PR 1117 (2017-06-03) and PR 1133 (2017-06-05) is in "
         "1.17.0, the first release with either; modelled as dask-1.17.0.dev0",
         "dask-1.17.0.dev0", _modelled("dask-1.17.0", "fixed"),
         "no order: a refcount mistake.  queue-future-release lets the queue's hold on the "
         "key go at every get, although a second record of the queue still holds the same "
         "future; once the putter and the first reader let go, the key is forgotten, and the "
         "second get hands out a future of a forgotten key — in every order, the in-order one "
         "first",
         "PR 1133: 'if the same future was in the queue twice then after getting the first one "
         "we would tell the scheduler that we no longer needed the future'; the second get's "
         "future never finishes (the model: a ghost task, as every release before PR 8827 "
         "made for a desire of a forgotten key)",
         same_future_twice_in_a_queue, frozenset({"ghost_task", "hung_future",
                                                  "dangling_future"})),
    Race("8522", "retire_workers: a heartbeat between the removal and the close brings the "
         "worker back",
         ("https://github.com/dask/distributed/pull/8522",),
         "until 2024.2.0 (fixed in 2024.2.1, PR 8522)", "dask-2024.2.0",
         _modelled("dask-2024.2.1", "fixed"),
         "the retiring worker's heartbeat reaches the scheduler after retire_workers removed "
         "the worker, and is answered 'missing'; that answer (an RPC's) reaches the worker "
         "before the scheduler's close (batched, on the worker's stream), so the worker "
         "closes itself with nanny=False, and the nanny restarts it",
         "the retired worker comes back: its nanny starts a new worker process, which "
         "registers, and scheduler_info() lists it again, empty, taking tasks (PR 8522's "
         "test: after retire_workers the nanny 'resuscitates' the worker; with adaptive "
         "scaling, workers retired come back); on a cluster without nannies, nothing",
         retire_a_worker, frozenset({"retired_worker_returned"}), workers=2),
)}

#: Races of dask's history whose mechanisms the model does not carry, and what it lacks.
NOT_MODELLED: dict[str, str] = {
    "7583": "cancel as an RPC (fixed in 2023.3.1): until then Client.cancel awaited a cancel RPC "
            "whose handler polled up to 1 s for the key to be known and wanted, so a cancel "
            "sent right after submit overtook its update-graph; before the oldest release "
            "modelled (2024.3.0)",
    "6016": "one client's cancel cancelling another's future (fixed in 2022.5.1): until then "
            "cancel_key reported cancelled-key to every client whether it cancelled the key or "
            "not (who_wants == {client} guarded only the dependents), and its retry dropped "
            "force=; an order decides only whether the other client's graph came first; before "
            "the oldest release modelled",
    "7200/7348": "a stale task-finished taken by a resubmitted task that is *queued* (2022.11.0 "
                 "and 2022.11.1, when queuing became the default; fixed in 2022.12.0, PR 7348: "
                 "queued joins released among the states that ignore it): the queued -> memory "
                 "transition failed an assertion and the computation deadlocked.  The model has no "
                 "queued state (as if worker-saturation were inf); what run ids fixed for a task "
                 "processing again is race 7463",
}
