"""Protocol variants as data.

The dask and fixed protocols use the *same* channels (scatter is an RPC,
releases ride the batched client stream, frees ride the batched worker stream),
so any delivery order that can happen under one can happen under the other.
They differ only in what the messages carry and how a receiver treats a
message that arrives late:

``generations``
    The client numbers each *hold* of a key: the refcount going 0→1 starts a
    new generation.  Desires (scatter, update-graph) and releases carry it.
    The scheduler applies a scatter's desire when the request arrives, before
    the worker put, and drops a release whose generation is older than the
    newest desire it has seen from that client: such a release belongs to a
    hold that has already been superseded.  Reports to the client
    (key-in-memory, lost-data, cancelled-keys) carry the generation they are
    about, so the client ignores those meant for an earlier hold.  This closes
    #8576 variant A (the late release) and variant B (the release landing
    inside the scatter RPC).

``incarnations``
    Every copy of a key that the scheduler puts on a worker (a scatter put or a
    computed result) gets a fresh, increasing incarnation number.  A worker
    keeps each copy apart and ``free-keys`` deletes exactly the copy it names;
    the scheduler remembers which copy each worker holds, and ignores a
    ``release-worker-data`` about any other copy.  A scatter whose hold was
    released while its put travelled is not registered: its copy is freed.  A
    free for the previous life of a key can no longer delete the data of its
    next life, whatever order the batched free and the put RPC take.

Both are needed: the property tests find lost futures with either one alone.

``fire_and_forget_ended`` (fixed only)
    A ``fire_and_forget`` desire that reaches the scheduler after the task has
    ended is let go at once.  dask releases the pseudo-client ``fire-and-forget``
    only when the task finishes or errs, so a desire overtaken by the result
    pins the key in memory for good (check ``leaked_key``).

``deserialized_claims`` (``dask-2024.7``)
    A future deserialized inside a task's arguments on a worker claims its key
    for the worker's client: it sends ``client-desires-keys``, as dask did
    before PR 8827.  Today (``dask``, and ``fixed``) such a future arrives
    *unbound*: it names a key, holds no reference and tells nobody.

``returned_announced`` (fixed only)
    A future that arrived unbound in a task (``deserialized_claims`` off) and comes back to a
    client in the task's result is adopted there as a reference of the client's own and
    announced (``client-desires-keys``), so that a refused key tells the client it is gone.
    dask (2026.8.0 too) hands the client the same unbound future the task had: ``status``
    None, no reference, nothing sent.

``desire_creates`` (``dask-2024.7``)
    ``client-desires-keys`` for a key the scheduler does not know creates a
    task for it — in ``released``, with no run spec: a *ghost*, which the next
    transition that reaches it trips over.  Today an unknown key is never
    created: the scheduler records a warning (``desire.unknown``) and reports
    the future cancelled, saying the key was unknown.

``publish_unordered`` (releases before 2024.4.2, PR 8577)
    ``publish_dataset``'s ``publish_put`` RPC goes at once, without the stream
    marker: it can overtake the batched ``update-graph`` of the futures it
    publishes.  Its desire then makes their tasks (``desire_creates``, as every
    release then did), and when the graph comes, dask's ``update_graph`` gives
    them the run spec but not the annotations (``retries``, ``workers``), which
    it applies to the tasks it creates only (check ``annotations_dropped``).

``unpublish_unordered`` (releases before 2026.6.0, PR 9217)
    ``unpublish_dataset``'s ``publish_delete`` RPC does not wait for the client's
    stream: sent just after ``get_dataset``, it can overtake the batched
    ``client-desires-keys`` with which the reader announced the dataset's futures,
    and forget their keys (check ``hung_future``).  The put, too, waits as dask
    did then: by a ``publish_wait_flush`` RPC before each name's ``publish_put``.
    Since PR 9217 both calls carry the marker's ``uid`` and the scheduler holds
    them until the client's stream has brought it.

``override_keeps_keys`` (releases before 2026.6.0, PR 9217)
    ``publish_dataset(..., override=True)`` replaces a dataset without releasing
    the old one's keys: they stay wanted by ``published-<name>`` for good.

``get_desires`` (fixed only)
    ``publish_get`` desires the dataset's keys for a pseudo-client of its own
    (``dataset-get-<n>``) as it answers, and the reader, once it has sent its own
    desire, confirms on its stream (``publish-get-confirm``), which lets that hold
    go — as dask's ``Variable.get`` does with its tokens.  dask
    (2026.8.0 too) leaves that to the reader's batched ``client-desires-keys``; the
    marker of PR 9217 orders it before the *reader's own* unpublish only, so an
    unpublish by another client, sent after the reader's get returned, can still
    overtake it (zoo race ``9217-two-clients``, open).

``variable_readers_by_client`` (``dask-1.17.0.dev0``: before PR 1132's commit 744c7431)
    A Variable counts its readers by *client*, not by get: ``variable_get`` adds the
    reader's client to a set, its confirmation takes the client out (or, when it is not
    there, remembers a "pre-release" that the client's next get of the key uses up instead of
    adding it), and setting the variable to the future it already holds releases its hold.
    Two gets by one client count once, so the first confirmation lets a ``set``'s release of
    the old key go while the second get's confirmation (and desire) still travels: the key is
    forgotten under the reader's future.  Since the fix each get hands out a token of its own.
    No release had it: Variable came days before (PR 1128) and the fix is in 1.17.0, so it is
    modelled as the development state ``dask-1.17.0.dev0``.

``queue_uncounted`` (``dask-1.17.0.dev0``: before PR 1133)
    ``queue-future-release`` lets the queue's hold on the key go at every get, however many
    records of the queue still hold the same future: put it twice, get it once, and the
    queue no longer holds it for the second record (a refcount mistake, found in order, not
    an order's race).  Since PR 1133 the queue counts its records per key.

``heartbeat_restarts`` (releases before 2024.2.1, PR 8522)
    A worker whose heartbeat the scheduler answers "missing" closes with ``nanny=False``:
    its nanny, seeing the process end unasked, starts a new one, which registers with the
    scheduler again.  ``retire_workers`` removes a worker and sends it ``close`` on the
    batched stream; a heartbeat landing between the two gets "missing", and when its answer
    beats the ``close`` the retired worker comes back (check ``retired_worker_returned``).
    Since PR 8522 the worker closes with its nanny.  The model's workers have a nanny
    unless made without one (``LocalCluster(processes=False)``).

``future_tokens_by_key`` (releases before 2024.3.0, PR 8569)
    ``tokenize`` of a Future is its key (``normalize_future``: ``[key, type]``): two futures
    of one key give ``submit(f, future)`` one key.  Since PR 8569 a future's token is its own
    (its ``_id``).  No zoo race turns on it; carried so that 2024.2.x is modelled as it was.
``steal_by_key`` (releases before 2021.10.0, PR 5379)
    A ``steal-response`` is matched to the steal in flight by its key alone: the
    request carried no stimulus id.  A late answer to a request about the task's
    previous life (it was released and processes again, and was asked for again)
    consumes the current request's record and is acted on: a ``ready`` from the old
    victim moves the task off the worker it processes on now, which was not asked
    yet (check ``stale_steal``); an ``executing`` or ``None`` drops the record, and
    the current victim's own answer then finds nothing in flight and is ignored.
    Since PR 5379 an answer to another request is a ``stale-response``.

``steal_release`` (releases before 2021.10.0, PR 5046's worker)
    The worker before its state machine (PR 5046, shipped with PR 5379) followed its
    ``steal-response`` with a ``release`` of the task it gave up, and the scheduler
    released (and sent again) a task still processing on that worker.  This is
    what kept ``steal_by_key`` from dask#5370's deadlock in a release: a victim
    that gave the task up while its answer was ignored still said so.  Together
    with PR 5379 the worker stopped sending it; the deadlock of #5370 needed the new
    worker and the old confirmation, which met only on main between the two PRs.

``unsigned_results`` (releases before 2023.1.1, PR 7463)
    ``task-finished`` is not checked against the run the scheduler asked for: a
    result from the worker a task is processing on is taken, whichever run it came
    from.  dask had no run ids before PR 7463; the model keeps numbering runs (so
    the trace can tell, check ``stale_result``) but the scheduler does not look.
    Why it matters: a key released and resubmitted at once with another function
    or arguments (``submit(f, key="k")``, release, ``submit(g, key="k")``) is
    processing on the same worker again when the first run's ``task-finished``
    arrives, and the first run's value becomes the second's.  Since PR 7463 the
    scheduler releases the task and runs it again (``task.stale_run``).  A result
    from *another* worker is dropped with ``free-keys`` in both (dask raised "This
    should be impossible" from ``transition_processing_memory`` then; the model
    does not carry a failing stream handler's consequences for a worker).

``unsigned_errors`` (releases before 2023.7.0, PR 7933)
    The same for ``task-erred``, whose run id came later: until PR 7933 a
    ``task-erred`` for a task in ``processing`` was taken from any worker and any
    run, so the first run's exception (or a spent retry) fell on the resubmitted task.

``cancel_reports_uncancelled`` (releases before 2022.5.1, PR 6016)
    dask's ``cancel_key`` reports ``cancelled-key`` to every client that wants the key whether
    it cancelled the key or not: ``who_wants == {client}`` (or ``force``) guards only the
    recursion into the dependents, so one client's cancel of a key another client also
    wants cancels that client's future too (its hold stays: the user's ``result()`` raises
    ``CancelledError`` for a key the scheduler keeps computing for it; check
    ``cancelled_for_another``).  Since PR 6016 the report goes out only for a key it cancelled.

``cancel_retry_detached`` (releases before 2022.5.1, PR 6016)
    The ``cancel`` RPC answers at once: a key the scheduler does not know yet (or that nobody
    wants) is retried by ``call_later`` every 0.2 s, five times (``cancel-poll`` timers), and the
    retry drops ``force=``.  Since PR 6016 the RPC awaits each key's wait (``cancel_rpc``).

``cancel_rpc`` (releases before 2023.3.1, PR 7583)
    ``Client.cancel`` awaits a ``cancel`` RPC, and cancels its futures only when it returns;
    the scheduler's ``_cancel_key`` polls every 0.1 s for a key that is unknown or that no
    client wants (``cancel-poll``, a timer of the scheduler's own), for at most 1 s, and then
    gives up without a word; it awaits its dependents' cancels before it reports
    ``cancelled-key`` for a key to the clients that want it, and releases the cancelling
    client's hold of every key it was asked about, cancelled or not.  The RPC runs beside the
    client's batched stream: sent right after ``submit``, it overtakes the ``update-graph``,
    and the poll waits for the key to be *known and wanted by anyone*, not by the cancelling
    client — another client's want ends it, the cancel finds a key it may not cancel, and the
    client's own graph then makes it want the key for good (check ``cancel_ignored``); a graph
    more than 1 s late does the same alone.  Since PR 7583 ``cancel-keys`` rides the stream
    behind the graph, its report goes to every client (dask#8215's mechanism) and it releases
    the client's hold only of the keys it cancelled.

``cancel_releases_own`` (fixed only)
    A client's cancel of a key another client also wants releases the cancelling client's
    hold, as dask did before PR 7583.  Since then (2026.8.0 too) ``stimulus_cancel`` releases
    only the keys it cancelled: the client's future is cancelled, but the scheduler keeps the
    key for it until its ``Future`` objects are dropped (check ``cancel_ignored``; confirmed
    on 2026.8.0: after the other client lets go, the key stays in memory).

``annotations_to_existing`` (releases before 2023.4.0, PR 7564)
    ``update_graph`` applies a graph's annotations (``retries``, worker restrictions) to
    every task the graph names, one a desire made before it included; since PR 7564 it
    applies them to the tasks it creates only (what ``annotations_dropped`` reports when a
    dataset's desire made the task first, before PR 8577).

``ids``
    Where the keys of ``submit(pure=False)`` and ``scatter(hash=False)`` come
    from.  dask draws a ``uuid4``: no coordination, no collision.  ``racy-ids``
    models Julia's ``next_ref_id()`` before JuliaLang/julia#42167 — a counter
    read and written in two steps (race 3); ``counter`` is the same counter made
    atomic (``atomic-ids``: Julia's fix, #42167).

``rules`` (no registered protocol has any: a student's fix, ``jupyter_refs.labs``)
    The one place where a protocol takes code rather than a flag: for a message about
    *one hold* of a key — a ``client-releases-keys`` reaching the scheduler, or a report
    (``cancelled-keys``, ``lost-data``, ``key-in-memory``, ``task-erred``) reaching a
    client — a function decides whether it still applies.  It is called with an
    :class:`Arrival` (the generation the message carries, the hold the receiver has now, the
    receiver's state of the key) and returns True to handle the message as dask does, False
    to drop it (traced as ``release.stale`` / ``report.stale``).  Why a hook and not a flag:
    the decision every fix of #8576 and #8215 makes is this one — *is this message about the
    hold I have now?* — and a student who writes it meets the race where it is decided.
    The hook sees what the receiver knows and nothing more; it changes no channel, so the
    explorer explores the same orders with and without it.  Made with :func:`with_rules`.

Versions are named: ``dask`` is today's dask (distributed 2026.8); behaviour
dask has since changed is a variant named for the last version that had it.
``legacy`` is an alias of ``dask``, so notebooks saved before the rename run.

**Releases by name.**  ``dask-<release>`` (``dask-2024.5.0``, ``dask-2024.8.2``) is the
model of that release of distributed: each change in :data:`HISTORY` (a mechanism
the model carries, and the release that first shipped it, read with ``git tag
--contains``) is switched on from its release.  Only releases from :data:`OLDEST`
on are modelled: older ones differ in mechanisms the model does not carry (see
:data:`OLDER_LACKS`), and are refused with the range, not silently modelled as newer.  Run
ids (PR 7463, PR 7933), the steal's stimulus id (PR 5379) and the cancel's RPC (PR 6016,
PR 7583) are carried by flags, so the
releases before them are modelled as far as 2021.9.1: the last before the worker's state
machine (PR 5046, 2021.10.0), of whose old worker the model carries only the ``release`` of a
stolen task (``steal_release``).  That worker had no ``cancelled`` state; the model's worker
keeps its own, which zoo race 5379's order under 2021.9.1 does not go through.  Between
2024.2.0 and 2024.4.2, dask changed nothing else a zoo scenario uses (read with ``git log
2024.2.0..2024.4.2 -- distributed/``: restarts, p2p, scatter's choice among workers, the
dashboard, in-process comms, a warning and kept dependencies for one key submitted with two
run specs (PR 8185, PR 8512), and memory → erred (PR 8549), which the model has no path
for).  A development version is modelled only where a change names it
(``dask-1.17.0.dev0``): no release had the race.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

from ..errors import ProtocolError

UUID, RACY_COUNTER, COUNTER = "uuid", "racy-counter", "counter"


@dataclass(frozen=True, slots=True)
class Arrival:
    """A message about one hold of a key, as its receiver sees it when it arrives (``rules``).

    ``gen`` is the generation the message carries: the hold it is about (the client numbers
    each hold of a key; the refcount going 0→1 starts the next).  ``held`` is the hold the
    receiver has now: on the scheduler, the newest generation it has applied for ``client``
    and ``key`` (None: the client is not among those who want it); on a client, its future's
    generation (None: it holds no future for the key).  ``state`` is the receiver's state of
    the key: the task's state on the scheduler (None: it has no task), the future's on a client.

    On the worker hop (:data:`COPY_OPS`) the message is about one *copy* of the key on one
    worker, and the numbers are copies' (the scheduler numbers each copy it puts on a worker):
    ``client`` is the worker whose copy it is, ``gen`` the copy the message names, ``held`` the
    copy the receiver has — on a worker (``free-keys``), the copy it holds; on the scheduler
    (``release-worker-data``), the copy it has registered on that worker (a receiver with no
    copy of the key there does nothing and asks no rule).
    """

    op: str
    receiver: str
    client: str
    key: str
    gen: int
    held: int | None
    state: str | None


#: A rule: does the message still apply?  True: handled as dask does; False: dropped as stale.
Rule = Callable[[Arrival], bool]
#: The ruled operations about a copy on a worker: their ``Arrival`` is about copies, not holds.
COPY_OPS = ("free-keys", "release-worker-data")
#: The operations a rule can be given for: the release on the scheduler, the reports on a client
#: (about a hold), and the worker hop's messages about one *copy* of a key: ``free-keys`` reaching
#: a worker, ``release-worker-data`` reaching the scheduler (:data:`COPY_OPS`).
RULED_OPS = ("client-releases-keys", "cancelled-keys", "lost-data", "key-in-memory", "task-erred",
             *COPY_OPS)


@dataclass(frozen=True, slots=True)
class ProtocolVariant:
    name: str
    generations: bool
    incarnations: bool
    summary: str
    #: Where non-hashed keys come from (see ``jupyter_refs.ids``).
    ids: str = UUID
    deserialized_claims: bool = False
    returned_announced: bool = False
    desire_creates: bool = False
    fire_and_forget_ended: bool = False
    publish_unordered: bool = False
    unpublish_unordered: bool = False
    override_keeps_keys: bool = False
    get_desires: bool = False
    variable_readers_by_client: bool = False
    queue_uncounted: bool = False
    heartbeat_restarts: bool = False
    future_tokens_by_key: bool = False
    steal_by_key: bool = False
    steal_release: bool = False
    unsigned_results: bool = False
    unsigned_errors: bool = False
    cancel_rpc: bool = False
    cancel_reports_uncancelled: bool = False
    cancel_retry_detached: bool = False
    cancel_releases_own: bool = False
    annotations_to_existing: bool = False
    #: ``(op, rule)`` pairs (see ``rules`` above): a tuple, so the variant stays hashable.
    rules: tuple[tuple[str, Rule], ...] = ()

    @property
    def atomic_ids(self) -> bool:
        return self.ids != RACY_COUNTER

    def rule(self, op: str) -> Rule | None:
        """The rule deciding whether an ``op`` about an older hold applies (None: no rule)."""
        for name, rule in self.rules:
            if name == op:
                return rule
        return None


DASK = ProtocolVariant(
    name="dask",
    generations=False,
    incarnations=False,
    summary="today's dask (distributed 2026.8): a late client-releases-keys can forget a "
    "re-scattered key (#8576)",
)
DASK_2024_7 = ProtocolVariant(
    name="dask-2024.7",
    generations=False,
    incarnations=False,
    summary="dask up to 2024.7, before PR 8827: a future deserialized in a task claims its key, "
    "and a claim on a forgotten key creates a ghost task",
    deserialized_claims=True,
    desire_creates=True,
    unpublish_unordered=True,
    override_keeps_keys=True,
)
RACY_IDS = ProtocolVariant(
    name="racy-ids",
    generations=False,
    incarnations=False,
    summary="today's dask, with non-hashed keys from a counter read and written in two steps "
    "(Julia's next_ref_id before #42167): two threads can get one key",
    ids=RACY_COUNTER,
)
ATOMIC_IDS = dataclasses.replace(
    RACY_IDS,
    name="atomic-ids",
    summary="racy-ids with Julia's fix (#42167): the counter is an atomic fetch-and-add, so no "
    "two threads get one key",
    ids=COUNTER,
)
FIXED = ProtocolVariant(
    name="fixed",
    generations=True,
    incarnations=True,
    summary="releases carry the hold's generation and frees the key's incarnation; "
    "stale ones are ignored; an unknown key is never created",
    fire_and_forget_ended=True,
    returned_announced=True,
    get_desires=True,
    cancel_releases_own=True,
)

VARIANTS = {v.name: v for v in (DASK, DASK_2024_7, RACY_IDS, ATOMIC_IDS, FIXED)}


@dataclass(frozen=True)
class Change:
    """A change of dask the model carries: the first release with it, what dask did until
    then, and the flags that model it.

    ``dev``: a development version (PEP 440, ``1.17.0.dev0``) that names the state before the
    fix when no release had it (the mechanism came in the same release as its fix): the
    protocol ``dask-<dev>`` models it, the one unreleased name accepted."""

    release: str
    link: str
    what: str
    before: dict
    dev: str | None = None


#: dask's changes the model carries, oldest first.
HISTORY = (
    Change("1.17.0", "https://github.com/dask/distributed/pull/1132",
           "a Variable counts its readers by client, not by get (a get overtaking the same "
           "client's confirmation is not waited for), and a Queue lets its hold go at the first "
           "get of a future put twice (PR 1133); no release had either",
           {"variable_readers_by_client": True, "queue_uncounted": True}, dev="1.17.0.dev0"),
    Change("2021.10.0", "https://github.com/dask/distributed/pull/5379",
           "a steal-response is matched to the steal in flight by key alone (a late answer "
           "about the task's previous life moves it)", {"steal_by_key": True}),
    Change("2021.10.0", "https://github.com/dask/distributed/pull/5046",
           "a victim that gives a stolen task up also sends release, and a task still "
           "processing there is sent again", {"steal_release": True}),
    Change("2022.5.1", "https://github.com/dask/distributed/pull/6016",
           "cancel reports cancelled-key to every client that wants the key, whether it "
           "cancelled it or not (another client's future of a shared key is cancelled), and "
           "its RPC answers at once, retrying an unknown key five times at 0.2 s without force",
           {"cancel_reports_uncancelled": True, "cancel_retry_detached": True}),
    Change("2023.1.1", "https://github.com/dask/distributed/pull/7463",
           "task-finished carries no run id: a stale result from the worker a resubmitted "
           "task is processing on again is taken as the new run's", {"unsigned_results": True}),
    Change("2023.3.1", "https://github.com/dask/distributed/pull/7583",
           "cancel is an RPC beside the client's stream: sent right after submit it overtakes "
           "the update-graph, and its handler polls up to 1 s for the key to be known and "
           "wanted by anyone, then gives up", {"cancel_rpc": True}),
    Change("2023.4.0", "https://github.com/dask/distributed/pull/7564",
           "update_graph applies a graph's annotations to every task it names, those a desire "
           "made first included", {"annotations_to_existing": True}),
    Change("2023.7.0", "https://github.com/dask/distributed/pull/7933",
           "task-erred carries no run id: a stale error from any worker falls on the task "
           "processing again", {"unsigned_errors": True}),
    Change("2024.2.1", "https://github.com/dask/distributed/pull/8522",
           "a worker told 'missing' by the scheduler's answer to its heartbeat closes without its "
           "nanny, which restarts it: a heartbeat between retire_workers' removal and its "
           "close brings the retired worker back", {"heartbeat_restarts": True}),
    Change("2024.3.0", "https://github.com/dask/distributed/pull/8569",
           "a Future's token is its key (two futures of one key tokenize alike)",
           {"future_tokens_by_key": True}),
    Change("2024.4.2", "https://github.com/dask/distributed/pull/8577",
           "publish_dataset's RPC does not wait for the client's stream (it can overtake the "
           "graph of the futures it publishes, whose annotations are then dropped)",
           {"publish_unordered": True}),
    Change("2024.8.2", "https://github.com/dask/distributed/pull/8827",
           "a future deserialized in a task claims its key, and a claim on a forgotten key "
           "creates a ghost task", {"deserialized_claims": True, "desire_creates": True}),
    Change("2026.6.0", "https://github.com/dask/distributed/pull/9217",
           "unpublish_dataset's RPC does not wait for the client's stream (it can overtake "
           "get_dataset's desire), and override keeps the old dataset's keys",
           {"unpublish_unordered": True, "override_keeps_keys": True}),
)
#: The oldest release modelled, and the newest (today's ``dask``).
OLDEST, NEWEST = "2021.9.1", "2026.8.0"
#: Every release of distributed from 1.17.0 (the first with ``Variable`` and ``Queue``) to
#: NEWEST: dask/distributed's tags (``git tag``, without ``.dev0``, leading zeros dropped as
#: ``packaging`` does: ``2021.01.0`` is ``2021.1.0``), and 2026.8.0 from PyPI.  A version between
#: them that was never released (2026.5.1) is refused, not modelled.
RELEASES = frozenset("""
1.17.0 1.17.1 1.18.0 1.18.1 1.18.2 1.18.3 1.19.0 1.19.1 1.19.2 1.19.3 1.20.0 1.20.1 1.20.2
1.21.0 1.21.1 1.21.2 1.21.3 1.21.4 1.21.5 1.21.6 1.21.7 1.21.8 1.22.0 1.22.1 1.23.0 1.23.1
1.23.2 1.23.3 1.24.0 1.24.1 1.24.2 1.25.0 1.25.1 1.25.2 1.25.3 1.26.0 1.26.1 1.27.0 1.27.1
1.28.0 1.28.1 2.0.0 2.0.1 2.1.0 2.2.0 2.3.0 2.3.1 2.3.2 2.4.0 2.5.0 2.5.1 2.5.2 2.6.0 2.7.0
2.8.0 2.8.1 2.9.0 2.9.1 2.9.2 2.9.3 2.10.0 2.11.0 2.12.0 2.13.0 2.14.0 2.15.0 2.15.1 2.15.2
2.16.0 2.17.0 2.18.0 2.19.0 2.20.0 2.21.0 2.22.0 2.23.0 2.24.0 2.25.0 2.26.0 2.27.0 2.28.0
2.29.0 2.30.0 2.30.1 2020.12.0 2021.1.0 2021.1.1 2021.2.0 2021.3.0 2021.3.1 2021.4.0 2021.4.1
2021.5.0 2021.5.1 2021.6.0 2021.6.1 2021.6.2 2021.7.0 2021.7.1 2021.7.2 2021.8.0 2021.8.1
2021.9.0 2021.9.1 2021.10.0 2021.11.0 2021.11.1 2021.11.2 2021.12.0 2022.1.0 2022.1.1 2022.2.0
2022.2.1 2022.3.0 2022.4.0 2022.4.1 2022.4.2 2022.5.0 2022.5.1 2022.5.2 2022.6.0 2022.6.1
2022.7.0 2022.7.1 2022.8.0 2022.8.1 2022.9.0 2022.9.1 2022.9.2 2022.10.0 2022.10.1 2022.10.2
2022.11.0 2022.11.1 2022.12.0 2022.12.1 2023.1.0 2023.1.1 2023.2.0 2023.2.1 2023.3.0 2023.3.1
2023.3.2 2023.3.2.1 2023.4.0 2023.4.1 2023.5.0 2023.5.1 2023.6.0 2023.6.1 2023.7.0 2023.7.1
2023.8.0 2023.8.1 2023.9.0 2023.9.1 2023.9.2 2023.9.3 2023.10.0 2023.10.1 2023.11.0 2023.12.0
2023.12.1 2024.1.0 2024.1.1 2024.2.0 2024.2.1 2024.3.0 2024.3.1 2024.4.0 2024.4.1 2024.4.2
2024.5.0 2024.5.1 2024.5.2 2024.6.0 2024.6.1 2024.6.2 2024.7.0 2024.7.1 2024.8.0 2024.8.1
2024.8.2 2024.9.0 2024.9.1 2024.10.0 2024.11.0 2024.11.1 2024.11.2 2024.12.0 2024.12.1 2025.1.0
2025.2.0 2025.3.0 2025.3.1 2025.4.0 2025.4.1 2025.5.0 2025.5.1 2025.7.0 2025.9.0 2025.9.1
2025.9.2 2025.9.3 2025.10.0 2025.11.0 2025.12.0 2026.1.0 2026.1.1 2026.1.2 2026.1.3 2026.3.0
2026.6.0 2026.7.0 2026.7.1 2026.8.0
""".split())
#: What releases older than OLDEST differ in that the model does not carry (the refusal says it).
OLDER_LACKS = ("the worker without its state machine before 2021.10.0 beyond a stolen task's "
               "release; before 1.21.0, a desire for an unknown key kept in who_wants with no "
               "task (desire_creates models the ghost TaskState of 1.21.0 to 2024.8.1)")
_RELEASE = re.compile(r"dask-(\d+(?:\.\d+)+(?:\.?(?:a|b|rc)\d+)?(?:\.dev\d*)?)")


def release_of(name: str) -> Version | None:
    """The version ``dask-<release>`` names (``dask-2021.01.0`` is 2021.1.0), or None."""
    match = _RELEASE.fullmatch(name)
    if match is None:
        return None
    try:
        return Version(match[1])
    except InvalidVersion:
        return None


@functools.lru_cache(maxsize=64)
def release_variant(name: str) -> ProtocolVariant | None:
    """``dask-<release>`` as a variant (None for a name of another form); a release outside
    the modelled range raises :class:`ProtocolError` saying which range is."""
    version = release_of(name)
    if version is None:
        return None
    said = name.removeprefix("dask-")
    if version.is_prerelease or version.is_devrelease:
        devs = [c.dev for c in HISTORY if c.dev is not None]
        if said not in devs:
            raise ProtocolError(
                f"{name}: a development version is modelled only where no release had the race "
                f"({', '.join(f'dask-{d}' for d in devs) or 'none'}); releases {OLDEST} to "
                f"{NEWEST} of distributed are modelled")
    elif not Version(OLDEST) <= version <= Version(NEWEST):
        raise ProtocolError(
            f"{name}: releases {OLDEST} to {NEWEST} of distributed are modelled"
            + (f"; {said} differs in mechanisms the model does not carry ({OLDER_LACKS})"
               if version < Version(OLDEST) else f"; {said} is newer than today's dask")
            + "".join(f"; {c.release} before its fixes ({c.link}) is dask-{c.dev}"
                      for c in HISTORY if c.dev and version < Version(OLDEST)))
    if str(version) not in RELEASES and not version.is_devrelease:
        ordered = sorted(RELEASES, key=Version)
        before = [r for r in ordered if Version(r) < version][-1:]
        after = [r for r in ordered if Version(r) > version][:1]
        raise ProtocolError(
            f"{name}: distributed has no release {said} (the nearest: "
            f"{', '.join(before + after)}); releases {OLDEST} to {NEWEST} of distributed are "
            "modelled")
    flags: dict = {}
    for change in HISTORY:
        if version < Version(change.release):
            flags.update(change.before)
    summary = (f"distributed {version}" + "".join(
        f"; until {c.release}, {c.what} ({c.link})" for c in HISTORY
        if version < Version(c.release)))
    return dataclasses.replace(DASK, name=name, summary=summary, **flags)


def with_rules(base: str | ProtocolVariant, name: str, rules: Mapping[str, Rule],
               summary: str | None = None) -> ProtocolVariant:
    """``base`` with ``rules`` (operation -> rule) deciding which late messages apply.

    ``name`` goes into schedule strings, so it must be a name of its own (``explore`` refuses
    one that a registered protocol has).  A rule for an operation the receivers do not ask
    about (see :data:`RULED_OPS`), or that is not a function, is refused here.
    """
    variant = get_variant(base)
    for op, rule in rules.items():
        if op not in RULED_OPS:
            raise ProtocolError(f"no rule is asked for {op!r}: rules are for {', '.join(RULED_OPS)}")
        if not callable(rule):
            raise ProtocolError(f"the rule for {op!r} must be a function of an Arrival, "
                                f"not {type(rule).__name__}")
    said = ", ".join(f"{op}: {getattr(rule, '__name__', 'a rule')}" for op, rule in rules.items())
    return dataclasses.replace(
        variant, name=name, rules=tuple(rules.items()),
        summary=summary or f"{variant.name} with rules for late messages ({said})")


#: Old names that saved notebooks and schedule strings still use.
ALIASES = {"legacy": DASK}
#: Every name ``protocol=`` takes (magics and the command line offer these).
PROTOCOL_NAMES = sorted([*VARIANTS, *ALIASES])
PROTOCOL_HELP = ("dask (today's), dask-2024.7 (before PR 8827: ghost tasks), racy-ids "
                 "(non-atomic ids), atomic-ids (Julia's fix), fixed, or dask-<release> "
                 f"({OLDEST} to {NEWEST}, and "
                 + ", ".join(f"dask-{c.dev}" for c in HISTORY if c.dev) + "); legacy = dask")


def get_variant(protocol: str | ProtocolVariant) -> ProtocolVariant:
    if isinstance(protocol, ProtocolVariant):
        return protocol
    variant = VARIANTS.get(protocol) or ALIASES.get(protocol) or release_variant(protocol)
    if variant is None:
        raise ProtocolError(
            f"unknown protocol {protocol!r}; choose one of {', '.join(VARIANTS)} "
            f"(or {', '.join(ALIASES)}, an alias of dask), or dask-<release> for a release "
            f"of distributed from {OLDEST} to {NEWEST}"
        )
    return variant


def protocol_type(name: str) -> str:
    """``name`` when it names a protocol: an argument parser's ``type=`` (choices cannot list
    every release)."""
    import argparse

    try:
        get_variant(name)
    except ProtocolError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return name


def is_registered(name: str) -> bool:
    """Whether ``name`` names a protocol without a variant object: registered, an alias, or a
    modelled release (one outside the range raises, saying so)."""
    return name in VARIANTS or name in ALIASES or release_variant(name) is not None
