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

from .explore import ExploreResult, Failure, explore


def inc(x: int) -> int:
    return x + 1


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

    def find(self, protocol: str | None = None, **kwargs: Any) -> ExploreResult:
        """Explore the scenario under ``protocol`` (default: the release it affects)."""
        kwargs.setdefault("max_schedules", 3000)
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
)}

#: Races of dask's history whose mechanisms the model does not carry, and what it lacks.
NOT_MODELLED: dict[str, str] = {
    "7200/7348": "a stale task-finished accepted by a resubmitted, queued task (fixed in "
                 "2022.12.0, PR 7348: queued joins released among the states that ignore it); "
                 "run ids signed compute-task only from 2023.1.1 (PR 7463) and task-erred from "
                 "2023.7.0 (PR 7933); the model has no queued state and has run ids in every "
                 "release it models",
    "5370/5379": "a late steal-response moving a re-processed task (fixed in 2021.10.0): before "
                 "the oldest release modelled",
    "1132/1133": "Variable / Queue get overtaken by a set (fixed in 1.17.0): before the oldest "
                 "release modelled",
    "8522": "retire_workers' heartbeat between remove_worker and the close (fixed in 2024.2.1): "
            "the model does not retire workers (releases 2022.5.0 to 2024.2.0 are modelled "
            "without it: no zoo scenario retires one)",
}
