"""Invariants, evaluated as events arrive.

The checks see nothing but the trace.  What each side believes — client
refcounts and future states, the scheduler's task states and ``who_wants``,
the workers' copies — is rebuilt from events by :class:`~jupyter_refs.beliefs.Beliefs`;
the checks judge over it, so they work the same on the kernel-side cluster,
on a traced dask cluster and on a saved trace — but for those judged "once the
channels are drained" (``promises.AT_DRAIN``): a dask trace records no
``network.drained``, so on real dask they are never judged.  Each handler below
looks at the beliefs before an event where it needs to, applies the event to
them, and judges what it made true.

``dangling_future``
    A client holds a finished future (refcount > 0) for a key the scheduler
    has forgotten — or has registered in memory on workers that no longer hold
    the data.  Fires on the event that makes it true: the forget, the
    registration, or the future finishing after either.  Not for a key forgotten
    by a worker's removal (``worker.removed``): data lost with its worker is
    lost data, which dask reports, not a reference the protocol lost.
``spurious_cancel``
    Once the channels are drained, a client's future is cancelled although the
    scheduler holds the key in memory for that very client: the cancellation
    was about an earlier life of the key, and the client could not tell.
``cancelled_for_another``
    Once the channels are drained, a client's future is cancelled by a
    ``cancelled-keys`` the scheduler sent about *another* client's cancel, yet the
    scheduler keeps the key for the first client (it is in ``who_wants``): dask
    before PR 6016 (2022.5.1) reported a shared key cancelled to every client that
    wanted it, cancelled or not; since PR 7583 (2023.3.1) the report goes to every
    client, so a client whose graph comes after another's cancel has its future
    cancelled as well.  The user's ``result()`` raises ``CancelledError`` for a key
    the scheduler computes and keeps for it.  (Judged on the kernel-side cluster,
    whose reports name the message that cancelled the future.)
``cancel_ignored``
    Once the channels are drained, a client's own cancel (``Client.cancel``) has
    cancelled its future, the scheduler has decided about it, and still keeps the
    key for that client: the cancel overtook the client's own ``update-graph`` and
    found a key the client did not want yet (an RPC before PR 7583), or waited
    1 s for it and gave up, or — dask since PR 7583 — found a key others want and
    released nothing.  The task runs for a future the user cancelled, and its
    result stays until the client's ``Future`` objects are dropped.
``id_collision``
    Two allocations returned the same id: two futures now alias one key
    (Julia's non-atomic ``next_ref_id``).
``set_twice``
    The owner of a key refused a second value for it: the visible consequence
    of an id collision.
``ghost_task``
    A ``client-desires-keys`` made the scheduler create a task it could not
    run (``desire.applied`` with ``created_task``): no run spec, so the next
    transition that reaches it fails.  Reported again, for the client whose
    connection the failure drops, when that happens.
``annotations_dropped``
    An ``update-graph`` found its task already made — with no run spec, by a
    desire that overtook the graph (``publish_put`` before PR 8577, 2024.4.2) —
    and, as dask's ``update_graph`` then did, gave it the run spec without the
    annotations (``retries``, ``workers``): the task runs, but not as submitted.
``stale_result``
    The scheduler took a ``task-finished`` (or ``task-erred``) from an earlier run of a
    task as the result of the run it asked for last (``task.stale_accepted``): the key
    was released and submitted again while the first run's result travelled, and dask
    before PR 7463 (2023.1.1; ``task-erred`` before PR 7933, 2023.7.0) had no run id to
    tell them apart.  The future of the second submission gets the first one's value.
``stale_steal``
    Work stealing moved a task to its thief (``steal.outcome`` ``confirm``) on an answer
    to another ``steal-request`` than the last one made for it (``steal.request``): the
    task was released and processes again, and the answer was about its previous life.
    The worker it processes on now was not asked (or its answer is still coming), still
    holds the task and may run it: the scheduler believes it moved off a worker that
    does not know it.  dask before PR 5379 (2021.10.0) matched answers by key alone.
``leaked_key``
    Once the channels are drained, the scheduler keeps a key for a client
    (it is in ``who_wants``) that holds no reference to it (refcount 0): that
    client has already sent its release, so nothing will ever free the key.
    Named with the messages that made it: the client's release and the desire
    the scheduler applied after it.  Also: a task's result kept for nobody but
    dask's ``fire-and-forget`` pseudo-client, whose desire arrived after the
    task had ended (the scheduler lets go of a fire-and-forget key only when
    its task finishes or errs; dask 2026.8: ``fire_and_forget`` on a fast
    task, its batched desire overtaken by the result).
``hung_future``
    Once the channels are drained, a client holds a *pending* future for a key
    the scheduler does not know, and the client's ``client-desires-keys`` for it
    met the unknown key (``desire.unknown``: dask only warns "Client … desires key
    … but key is unknown").  Nothing will ever finish or cancel the future:
    ``result()`` waits for ever.  dask before PR 9217 (2026.6.0): a
    ``get_dataset``'s desire overtaken by ``unpublish_dataset``'s RPC.
``retired_worker_returned``
    A worker the scheduler removed as retired (``worker.removed``, 'retired') joins again
    (``worker.added``): before PR 8522 (2024.2.1), its heartbeat, answered "missing" between
    ``retire_workers``' removal and the batched ``close``, made it close without its nanny,
    which started it again.  The user retired it (or scaled down) and sees it back in
    ``scheduler_info()``, taking tasks.
``refcount_mismatch``
    Once the channels are drained, a client holds a key (refcount > 0) but is
    not in that key's ``who_wants``.  Judged only at ``network.drained``,
    because in between a desire may legitimately still be on its way.

Each violation is recorded in the trace (kind ``violation``) and kept in
:attr:`Checks.violations`, naming the first event that broke the invariant
and explaining, in words a student can follow, what each side believed.

**Invariants of one's own.**  An :data:`Invariant` is a function of what each side
believes about one key (a :class:`KeyRefs`, as the refs table shows it) that returns None
while all is well, or a sentence saying what is wrong.  :func:`judge` runs invariants over
a finished trace, after every event about a key, and reports each as a :class:`Violation`
named after its function, at the event that first made it true (once per episode: again
only after it held in between); ``explore(..., invariants=[f])`` judges every run with it,
so a student's invariant becomes a finding like the ones above.  It sees the beliefs, not
the protocol's state, so it judges a trace of real dask as well.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from . import events as ev
from .beliefs import (
    DESIRE_CLIENT,
    DESIRE_CREATED,
    FINISH,
    OWN,
    REFS_AFTER,
    REG_WHO_HAS,
    STATE_REASON,
    STATE_TO,
    STIMULUS,
    WANTS_AFTER,
    Beliefs,
    Judge,
    KeyRecord,
    KeyRefs,
)
from .promises import CHECKED
from .protocol import messages as m
from .protocol.messages import CONNECTION_LOST
from .trace import ACTOR, KEY, THREAD, Batch, Trace

__all__ = ["NAMES", "Checks", "Invariant", "KeyRefs", "Violation", "cause_only", "judge"]

#: The checks' names (a violation's ``name``), declared in ``promises.py``: an invariant of
#: one's own takes another.
NAMES = CHECKED

# Where the judges' other values sit in a trace row (events.py); the beliefs' own are theirs.
_ASSERTION_TEXT = ev.SCHEDULER_ASSERTION.at("message")
_UNKNOWN_CLIENT = ev.DESIRE_UNKNOWN.at("client")
_ALLOC_VALUE = ev.ID_ALLOC.at("value")
_REJECT_REASON = ev.FUTURE_PUT_REJECTED.at("reason")
_DROPPED = ev.GRAPH_ANNOTATIONS_DROPPED.at("dropped")
_ADDED_WORKER = ev.WORKER_ADDED.at("worker")
_STEAL_ASKED = ev.STEAL_REQUEST.at("stimulus_id")
_STEAL_VICTIM = ev.STEAL_REQUEST.at("victim")
_STEAL_OUTCOME = ev.STEAL_OUTCOME.at("outcome")
_STEAL_ANSWERS = ev.STEAL_OUTCOME.at("stimulus_id")
_STEAL_FROM = ev.STEAL_OUTCOME.at("victim")
_STEAL_TO = ev.STEAL_OUTCOME.at("thief")
_STALE_WORKER = ev.TASK_STALE_ACCEPTED.at("worker")
_STALE_RUN = ev.TASK_STALE_ACCEPTED.at("run_id")
_STALE_CURRENT = ev.TASK_STALE_ACCEPTED.at("current_run_id")
_STATE_CAUSE = ev.FUTURE_STATE.at("cause_msg_id")


@dataclass(frozen=True, slots=True)
class Violation:
    name: str
    key: str
    client: str | None
    first_seq: int
    seq: int
    explanation: str

    def __str__(self) -> str:
        return f"{self.name} on {self.key} (event {self.first_seq}): {self.explanation}"

    @property
    def brief(self) -> str:
        """The violation in a few words: ``name on key``; one about no key (the explorer's
        judgement of a scenario's outcome) with its explanation's first clause, where
        ``name on`` alone said nothing."""
        if self.key:
            return f"{self.name} on {self.key}"
        return f"{self.name}: {self.explanation.split('; ')[0].split('. ')[0]}"


def _nothing() -> None:
    pass


#: Quiet keys whose history is kept, at the least (``quiet_limit_for``).
QUIET_KEPT = 1_000
#: Events of ``max_events`` per quiet key whose history is kept (``quiet_limit_for``).
EVENTS_PER_QUIET_KEY = 50


def quiet_limit_for(max_events: int) -> int:
    """How many quiet keys keep their history (``Beliefs.quiet_limit``) beside a trace of
    ``max_events``, so that the checks' memory is bounded with the trace's.

    A quiet key's history (the last desire and release of each client, what forgot it,
    what waits to be judged) costs ~1.2 kB with its name, while a kept event costs ~215 B:
    one quiet key per 20 events (as before) took ~60 B per event of ``max_events``, and a
    session's trace, buffers and checks could not stay within 300 B per event.  One per 50
    (~25 B) still keeps the keys of the newest ~2/5 of a trace of 20-odd events per key.
    """
    return max(QUIET_KEPT, max_events // EVENTS_PER_QUIET_KEY)


_CLOSED_STATES = {"cancelled", "lost", "error"}

#: The sentences of a violation's explanation that tell what comes *next* — the consequence,
#: not the broken invariant.  The checks' explanations keep them (``%refs --why``, a lesson's
#: check after the fact); a game's win message ends before them (:func:`cause_only`), since a
#: lesson's next prediction asks about that consequence (lesson 1's 01-1 and 01-2, lesson 2's
#: 02-3).
DANGLING_NEXT = (" The client believes the data exists; the next computation that uses it will "
                 "be cancelled as lost data.")
TOLD_NEXT = " The client will hear lost-data then cancelled-keys:"
GHOST_NEXT = (" The next transition that reaches it fails an assertion, and the scheduler drops "
              "the connection of the client that caused it.")
CONSEQUENCES = (DANGLING_NEXT, TOLD_NEXT, GHOST_NEXT)


def cause_only(explanation: str) -> str:
    """``explanation`` ended at the broken invariant: cut before its first consequence
    sentence (:data:`CONSEQUENCES`), if it has one."""
    cuts = [i for i in (explanation.find(c) for c in CONSEQUENCES) if i >= 0]
    return explanation[:min(cuts)] if cuts else explanation


class Checks:
    """Subscribes to a trace and records a ``violation`` event for each broken invariant.

    ``beliefs`` is the model the invariants are judged over (and what the views
    read); everything else here is the judging's own: conditions waiting for the
    network to drain, and the violations already reported.
    """

    # Slots: one Checks is made per explored run, and every event reads a few of these.
    __slots__ = ("trace", "beliefs", "violations", "_open", "_suspects", "_cancelled",
                 "_unbacked", "_leak_check", "_late_ff", "_settled", "_unheard", "_vanished", "_allocated",
                 "_steals", "_drains", "_lock", "unsubscribe")

    def __init__(self, trace: Trace, quiet_limit: int | None = None, drains: bool = True):
        """``quiet_limit``: how many keys long gone keep their history (``Beliefs``); a
        trace that runs for ever (a dask cluster's) sets one, so the checks' memory is bounded.

        ``drains=False``: the trace never records ``network.drained`` (a dask cluster's), so
        the checks judged only there (``promises.AT_DRAIN``) are never judged, and the keys
        that would wait for them are not kept: on a dask trace those tables grew to every
        key alive (85 B a key of the checks' ~640, touched by most events of each key).
        """
        self.trace = trace
        self._drains = drains
        # Only a bounded Checks hands the beliefs its method: a bound method is a cycle
        # through ``self``, and the explorer makes (and drops) a Checks per run.
        self.beliefs = Beliefs(quiet_limit, None if quiet_limit is None else self._erase)
        self.violations: list[Violation] = []
        self._open: set[tuple[str, str, str]] = set()  # (name, client, key) reported, still true
        # Judged at the next network.drained (in between, a message may still set them right):
        self._suspects: dict[tuple[str, str], int] = {}  # held, not in who_wants -> since seq
        # held and cancelled -> (seq, the message that cancelled it; None: the client itself)
        self._cancelled: dict[tuple[str, str], tuple[int, int | None]] = {}
        self._unbacked: dict[str, int] = {}  # key whose backing may have gone -> seq of that event
        self._leak_check: set[str] = set()  # keys whose who_wants or holders changed since a drain
        self._late_ff: dict[str, int] = {}  # key -> seq of a fire-and-forget desire after its end
        # (client, key) whose cancellation both sides agree on: a lost connection (already
        # reported as ghost_task) or a desire for a key the scheduler no longer knows.
        self._settled: set[tuple[str, str]] = set()
        #: (client, key) whose desire met an unknown key -> seq (judged at the next drain).
        self._unheard: dict[tuple[str, str], int] = {}
        self._vanished: dict[str, str] = {}  # key in memory on workers without the data -> why
        self._allocated: dict[int, tuple[int, str, str]] = {}  # id -> (seq, actor, thread)
        #: key -> (seq, stimulus id, victim) of the last steal-request made for it.
        self._steals: dict[str, tuple[int, str, str]] = {}
        self._lock = threading.Lock()
        self.unsubscribe = trace.subscribe(self._on_batch, from_start=True)

    def _erase(self, key: str) -> None:
        """The beliefs erased a quiet key: nothing about it waits to be judged either."""
        self._leak_check.discard(key)
        # Emptiness first: these hold a key only after a race (or a steal), and a long map
        # erases a key for every few dozen events.
        for table in (self._unbacked, self._late_ff, self._vanished, self._steals):
            if table:
                table.pop(key, None)

    def close(self) -> None:
        """Stop following the trace (and drop the handler table, a cycle through ``self``)."""
        self.unsubscribe()
        self.unsubscribe = _nothing  # the closure holds our callback: another cycle
        self.beliefs.stop_erasing()  # a bounded Checks's beliefs hold our method: a third

    def _on_batch(self, batch: Batch) -> None:
        # The judges are the module's (plain functions): a Checks is made per explored run,
        # and a table of bound methods per instance cost more than the run's events did to
        # check.  The beliefs' own loop applies what no judge looks at.
        with self._lock:
            self.beliefs.apply(batch, self, _JUDGES)

    def snapshot(self, keys: list[str] | None = None) -> list[KeyRefs]:
        """Per key: every client's refcount and future state, the scheduler's view, the verdict.

        Without ``keys``: the keys some client holds or the scheduler knows, and
        every key with a violation, in order of first appearance.
        """
        with self._lock:
            if keys is None:
                wanted = dict.fromkeys(self.beliefs.keys())
                wanted.update(dict.fromkeys(v.key for v in self.violations))
                keys = list(wanted)
            verdicts: dict[str, list[str]] = {}
            for v in self.violations:
                verdicts.setdefault(v.key, []).append(v.name)
            return self.beliefs.snapshot(keys, verdicts)

    # -- client side ---------------------------------------------------------------

    def _future_created(self, b: Beliefs, seq: int, row: tuple) -> None:
        if b.future_created(seq, row) and self._settled:  # a new hold: nothing settled yet
            self._settled.discard((row[ACTOR], row[KEY]))

    def _refcount_changed(self, b: Beliefs, seq: int, row: tuple) -> None:
        b.refcount_changed(seq, row)
        client, key = row[ACTOR], row[KEY]
        pair = (client, key)
        if self._drains:
            self._leak_check.add(key)
        if row[REFS_AFTER]:
            if self._open:
                self._open.discard(("leaked_key", client, key))
            self._update_suspect(b, pair, seq, b.records[key])
            return
        # Emptiness first: each of these holds a pair only while a race plays out.
        if self._cancelled:
            self._cancelled.pop(pair, None)
        if self._suspects:
            self._suspects.pop(pair, None)
        if self._settled:
            self._settled.discard(pair)
        if self._open:
            self._end_episodes(pair)

    def _end_episodes(self, pair: tuple[str, str]) -> None:
        """Forget the violations reported about ``pair`` (client, key): its hold has ended, and
        a new one is judged afresh.  (Apart from ``_refcount_changed``: a comprehension there
        would make ``pair`` a cell, made for every refcount event.)"""
        self._open = {o for o in self._open if o[1:] != pair}

    def _future_state(self, b: Beliefs, seq: int, row: tuple) -> None:
        b.future_state(seq, row)
        client, key = row[ACTOR], row[KEY]
        pair = (client, key)
        to = row[STATE_TO]
        record = b.records[key]
        if to == "cancelled":
            self._cancelled[pair] = (seq, row[_STATE_CAUSE])
            if row[STATE_REASON] == CONNECTION_LOST:
                # Cancelled by the lost connection: the ghost_task violation that dropped
                # it already names the client; do not report each future again.
                self._settled.add(pair)
                self._update_suspect(b, pair, seq, record)
        elif self._cancelled:
            self._cancelled.pop(pair, None)
        if to in _CLOSED_STATES:
            if self._open:
                self._open.discard(("dangling_future", client, key))
            return
        if to != "finished":
            return
        held = record if record.client == client else record.take(client)
        if held.refcount:
            cancelling = None if held.race is None else held.race.cancel_sent
            if cancelling is not None and cancelling in b.sent:
                # A cancelled-keys for it is on its way on the same stream (a cancel RPC still
                # awaited, before PR 7583): the future ends cancelled, not dangling.
                return
            if record.forgotten and not self._desired_again(b, client, key):
                overtaken = self._overtaken(b, client, key, b.forgotten_by.get(key))
                self._report(
                    "dangling_future", key, client, seq,
                    (overtaken + " " if overtaken else "")
                    + f"{client}'s future for {key} has just been marked finished, but the "
                    f"scheduler had already forgotten {key}." + DANGLING_NEXT)
            elif key in self._vanished:
                self._report("dangling_future", key, client, seq,
                             f"{client}'s future for {key} has just been marked finished, but "
                             + self._vanished[key])

    # -- scheduler side -------------------------------------------------------------

    def _transition(self, b: Beliefs, seq: int, row: tuple) -> None:
        key = row[KEY]
        if self._vanished:
            self._vanished.pop(key, None)
        if row[FINISH] != "forgotten":
            b.transition(seq, row)
            return
        record = b.records.get(key)
        # Who the scheduler will tell (cancelled-keys).
        wanted = () if record is None or record.who_wants is None else record.who_wants
        b.transition(seq, row)
        record = b.records[key]
        # Forgotten because its only worker was removed (killed, lost): the data is gone and
        # the scheduler tells the client (its future ends cancelled), not a lost reference.
        holders = record.holders
        if not holders:
            return  # the usual case: no client holds a future for it
        with_worker = row[STIMULUS] in b.removals
        for client in sorted(holders):
            pair = (client, key)
            self._update_suspect(b, pair, seq, record)
            if (record.take(client).fstate == "finished" and client not in b.dropping
                    and not with_worker
                    and not self._desired_again(b, client, key)):
                first, why = self._why_forgotten(b, client, key, seq, told=client in wanted)
                self._report("dangling_future", key, client, first, why)

    @staticmethod
    def _desired_again(b: Beliefs, client: str, key: str) -> bool:
        """The client's release forgot the key, and a desire it sent after that release is
        still on its way (behind it on the stream): it re-creates the task when it lands.  Its
        future says finished because a key-in-memory about the key's previous life arrived
        after the new hold began (threads computing one key) — late news, not a dangling
        future: the data comes again."""
        desire = b.desired_by.get((client, key))
        release = b.forgotten_by.get(key)
        return bool(desire and release and release[1] == m.CLIENT_RELEASES_KEYS
                    and release[2] < desire[1] and desire[0] in b.sent)

    def _who_wants_changed(self, b: Beliefs, seq: int, key: str) -> None:
        if self._drains:
            self._leak_check.add(key)
        record = b.records[key]
        holders = record.holders
        if holders is not None:
            for client in holders:
                self._update_suspect(b, (client, key), seq, record)

    def _desire_applied(self, b: Beliefs, seq: int, row: tuple) -> None:
        key = row[KEY]
        client, created = row[DESIRE_CLIENT], row[DESIRE_CREATED]
        if client == m.FIRE_AND_FORGET and b.sched.get(key) in ("memory", "erred"):
            self._late_ff.setdefault(key, seq)
        # What the scheduler had done with the key before this desire re-created it.
        release = b.forgotten_by.get(key) if created and key in b.forgotten else None
        b.desire_applied(seq, row)
        self._who_wants_changed(b, seq, key)
        if not created or client.startswith("published-"):
            # A dataset's desire that overtook its graph (publish_put before PR 8577): the
            # graph, already on the publisher's stream, gives the task its run spec
            # (``annotations_dropped`` says what it loses).
            return
        receiving = b.receiving
        msg = f" (msg #{receiving[0]})" if receiving else ""
        # A desire comes on the client's stream, or inside an RPC (Variable.set before PR 8827).
        op = receiving[1] if receiving else m.CLIENT_DESIRES_KEYS
        via = f"{client}'s stream" if op == m.CLIENT_DESIRES_KEYS else f"the {op} RPC"
        if release and release[1] == m.CLIENT_RELEASES_KEYS:
            sender = release[3]
            before = (f"The scheduler had forgotten {key} when {sender}'s client-releases-keys "
                      f"(msg #{release[0]}) emptied who_wants; that release travelled on "
                      f"{sender}'s stream and this desire on {via}, so nothing ordered them. ")
        else:
            before = f"The scheduler did not know {key}. "
        if client.startswith("client:worker:"):
            where = f"a future deserialized in a task's arguments on {client.removeprefix('client:')}"
        elif client.startswith("variable-"):
            where = ("Variable.set, which desired the key at once for the variable (dask before "
                     "PR 8827; since then it waits until the key is known)")
        else:
            where = f"a future deserialized by {client}"
        self._report(
            "ghost_task", key, client, seq,
            f"{client}'s {op}{msg} created a task for {key}: state released, no "
            f"run_spec, who_wants={{{', '.join(row[WANTS_AFTER])}}}. It came from {where}. "
            + before + "Nothing can compute this task." + GHOST_NEXT, once=False)

    def _release_applied(self, b: Beliefs, seq: int, row: tuple) -> None:
        b.release_applied(seq, row)
        self._who_wants_changed(b, seq, row[KEY])

    def _assertion(self, b: Beliefs, seq: int, row: tuple) -> None:
        key = row[KEY]
        receiving = b.receiving
        record = b.records.get(key)
        if record is None or record.ghost is None or receiving is None:
            return
        client = receiving[3]
        self._report(
            "ghost_task", key, client, seq,
            f"{receiving[1]} (msg #{receiving[0]}) from {client} reached the ghost task {key} "
            f"(created at event {record.ghost}): {row[_ASSERTION_TEXT]}. The assertion "
            f"escapes the handler of {client}'s stream, so the scheduler closes it: every future "
            f"{client} holds is cancelled with '{CONNECTION_LOST}', whatever key it is for.",
            once=False)

    def _desire_unknown(self, b: Beliefs, seq: int, row: tuple) -> None:
        pair = (row[_UNKNOWN_CLIENT], row[KEY])
        self._settled.add(pair)
        self._update_suspect(b, pair, seq)
        if b.refcount.get(pair):
            self._unheard.setdefault(pair, seq)

    def _worker_added(self, b: Beliefs, seq: int, row: tuple) -> None:
        worker = row[_ADDED_WORKER]
        why = b.gone.get(worker)
        b.worker_added(seq, row)
        if why != "retired":
            return
        self._report(
            "retired_worker_returned", "", None, seq,
            f"{worker} joined the cluster again after retire_workers had removed it: its "
            "heartbeat reached the scheduler after the removal and was answered 'missing' "
            "before the scheduler's close (batched, on the worker's stream) arrived, so the "
            "worker closed without its nanny (as every release before PR 8522 did), and the "
            "nanny, seeing its process end unasked, started a new one, which registered. The "
            f"cluster has {worker} again, empty, taking new tasks.", once=False)

    def _annotations_dropped(self, b: Beliefs, seq: int, row: tuple) -> None:
        key, dropped = row[KEY], row[_DROPPED]
        record = b.records.get(key)
        if record is not None:
            record.ghost = None  # a run spec at last: no longer a ghost
        if not dropped:
            return
        receiving = b.receiving
        client = receiving[3] if receiving else None
        self._report(
            "annotations_dropped", key, client, seq,
            f"{client or 'a client'}'s update-graph (msg #{receiving[0] if receiving else '?'}) "
            f"found {key} already made, with no run spec: a desire for it had arrived first "
            "(publish_dataset's publish_put RPC, which did not wait for the client's stream "
            "before PR 8577, overtook the graph on the stream and, as every release before PR "
            "8827 did, made a task for the unknown key). dask's update_graph gave the task its "
            f"run spec but applies annotations to the tasks it creates only: {key} runs without "
            f"its {', '.join(dropped)}.")

    def _stale_accepted(self, b: Beliefs, seq: int, row: tuple) -> None:
        key = row[KEY]
        receiving = b.receiving
        op = receiving[1] if receiving else "task-finished"
        msg = f" (msg #{receiving[0]})" if receiving else ""
        self._report(
            "stale_result", key, None, seq,
            f"the scheduler took {row[_STALE_WORKER]}'s {op}{msg} for {key} as the result of "
            f"run {row[_STALE_CURRENT]}, the run it last sent, but it came from run "
            f"{row[_STALE_RUN]}: {key} was released and submitted again while that run's "
            "result travelled, and the worker it runs on again is the one that sent it. With "
            "no run id to compare (dask before PR 7463 for task-finished, PR 7933 for "
            "task-erred), the new submission gets the old run's outcome — whatever function "
            "and arguments it was given.", once=False)

    def _steal_request(self, b: Beliefs, seq: int, row: tuple) -> None:
        self._steals[row[KEY]] = (seq, row[_STEAL_ASKED], row[_STEAL_VICTIM])

    def _steal_outcome(self, b: Beliefs, seq: int, row: tuple) -> None:
        key = row[KEY]
        asked = self._steals.get(key)
        if row[_STEAL_OUTCOME] != "confirm" or asked is None or asked[1] == row[_STEAL_ANSWERS]:
            return
        receiving = b.receiving
        sender = receiving[3] if receiving else row[_STEAL_FROM]
        self._report(
            "stale_steal", key, None, asked[0],
            f"work stealing moved {key} from {row[_STEAL_FROM]} to {row[_STEAL_TO]} on "
            f"{sender}'s answer to {row[_STEAL_ANSWERS]}, a request about {key}'s previous "
            f"life; the request in flight is {asked[1]} (event {asked[0]}), to {asked[2]}, "
            f"which has not answered. {key} was released and processes again; matched by key "
            "alone (dask before PR 5379), the late answer moved the task off a worker that "
            "still holds it and was never told: it may run there too, and that worker's own "
            "answer will find nothing in flight.", once=False)

    def _registered(self, b: Beliefs, seq: int, row: tuple) -> None:
        b.registered(seq, row)
        key = row[KEY]
        who_has = row[REG_WHO_HAS]
        self._unbacked.setdefault(key, seq)
        self._who_wants_changed(b, seq, key)
        copies = b.holding(key)
        if copies and not set(copies).isdisjoint(who_has):
            if self._vanished:
                self._vanished.pop(key, None)
            return
        why = self._vanished[key] = (
            f"the scheduler registered {key} in memory on {', '.join(who_has)}, which no longer "
            "hold it: a free-keys meant for the key's previous life deleted the data this "
            "scatter had just put, and the worker's release-worker-data reached the scheduler "
            "before the registration, so it was ignored. Both the scheduler and the client "
            "believe the data exists.")
        record = b.records[key]
        for client in sorted(record.holders or ()):
            if record.take(client).fstate == "finished":
                self._report("dangling_future", key, client, seq, f"for {client}: {why}")

    def _who_has_removed(self, b: Beliefs, seq: int, row: tuple) -> None:
        b.who_has_removed(seq, row)
        self._unbacked.setdefault(row[KEY], seq)

    # -- workers -------------------------------------------------------------------

    def _worker_put(self, b: Beliefs, seq: int, row: tuple) -> None:
        b.worker_put(seq, row)
        if self._vanished:
            self._vanished.pop(row[KEY], None)

    def _worker_free(self, b: Beliefs, seq: int, row: tuple) -> None:
        if b.worker_free(seq, row):
            self._unbacked.setdefault(row[KEY], seq)

    # -- ids ------------------------------------------------------------------------

    def _id_alloc(self, b: Beliefs, seq: int, row: tuple) -> None:
        value = row[_ALLOC_VALUE]
        first = self._allocated.get(value)
        if first is None:
            self._allocated[value] = (seq, row[ACTOR], row[THREAD])
            return
        self._report(
            "id_collision", str(value), row[ACTOR], seq,
            f"id {value} was handed out twice: to {first[1]} in thread {first[2]} (event "
            f"{first[0]}) and now to {row[ACTOR]} in thread {row[THREAD]}. The allocator reads "
            "the next id, then writes it back plus one; another thread ran in between and read "
            "the same value. Both futures now name one key, and the second value will be refused.",
            once=False)

    def _put_rejected(self, b: Beliefs, seq: int, row: tuple) -> None:
        self._report(
            "set_twice", row[KEY], None, seq,
            f"a second task tried to set {row[KEY]}, which already had a value: "
            f"{row[_REJECT_REASON]}. Two futures were created with the same id, so they "
            "alias one key; the second computation's result is refused and both futures report "
            "the error.", once=False)

    # -- when the network drains ------------------------------------------------------

    def _drained(self, b: Beliefs, seq: int, row: tuple) -> None:
        if (not self._cancelled and not self._suspects and not self._late_ff and not self._unbacked
                and not self._leak_check and not self._unheard):
            return  # the usual case: nothing to judge
        if self._unheard:
            self._hung(b)
        if self._leak_check:
            self._leaks(b, seq)
        if self._unbacked:
            unbacked, self._unbacked = self._unbacked, {}
            for key, freed in unbacked.items():
                record = b.records.get(key)
                if record is None or record.sched != "memory":
                    continue
                believed = record.who_has
                copies = b.holding(key)
                if copies and (believed is None or not set(copies).isdisjoint(believed)):
                    continue
                for client in sorted(record.holders or ()):
                    pair = (client, key)
                    held = record.take(client)
                    if (held.fstate == "finished" and client not in b.dropping
                            and pair not in self._settled
                            and (held.race is None or held.race.cancelled_by_client is None)):
                        self._report(
                            "dangling_future", key, client, freed,
                            f"with every channel drained, the scheduler holds {key} in memory on "
                            f"{', '.join(sorted(believed or ())) or 'no worker'} and {client}'s "
                            "future says finished, but no worker it knows of has the data "
                            f"(event {freed}): a free-keys meant for an earlier life of the key "
                            "deleted a fresh copy, or a release-worker-data about an old copy "
                            "made the scheduler forget the worker that holds the new one. The "
                            "value cannot be fetched and no message in flight will bring it back.")
        if self._late_ff:
            for key, first in list(self._late_ff.items()):
                if (b.who_wants.get(key) == (m.FIRE_AND_FORGET,)
                        and b.sched.get(key) in ("memory", "erred")):
                    del self._late_ff[key]
                    self._report(
                        "leaked_key", key, None, first,
                        f"fire_and_forget's client-desires-keys for {key} reached the scheduler after "
                        f"the task had ended ({b.sched[key]}), overtaken by its result. The "
                        "scheduler lets go of a fire-and-forget key only when the task finishes, "
                        "which has already happened: once the clients let go, the result stays on "
                        "its worker for fire-and-forget alone, which nothing releases, for the life "
                        "of the cluster.")
                elif m.FIRE_AND_FORGET not in b.who_wants.get(key, ()):
                    del self._late_ff[key]
        if self._cancelled:
            for (client, key), (first, cause) in list(self._cancelled.items()):
                record = b.records.get(key)
                state = None if record is None else record.sched
                if state is None or client not in (record.who_wants or ()):  # type: ignore[union-attr]
                    continue
                held = record.hold(client)  # type: ignore[union-attr]
                race = None if held is None else held.race
                decided = None if race is None else race.cancels
                foreign = None if race is None else race.foreign
                if cause is None and decided is not None:
                    self._report("cancel_ignored", key, client, first,
                                 self._why_kept(b, client, key, state, decided))
                elif foreign is not None and cause == foreign[0]:
                    self._report("cancelled_for_another", key, client, first,
                                 self._why_foreign(b, client, key, state, foreign))
                elif state == "memory":
                    self._report(
                        "spurious_cancel", key, client, first,
                        f"{client}'s future for {key} is cancelled, yet the scheduler holds {key} in "
                        f"memory and counts {client} among those who want it. The cancelled-keys "
                        "the client obeyed was about an earlier life of the key, and nothing in it "
                        "said so: the user gets CancelledError for data that exists.")
        if self._suspects:
            records = b.records
            for (client, key), first in sorted(self._suspects.items(), key=lambda kv: kv[1]):
                record = records.get(key)
                held = None if record is None else record.hold(client)
                if (held is not None and held.race is not None
                        and held.race.cancelled_by_client is not None):
                    # Cancelled at the client's request after it became a suspect (the
                    # scheduler forgets a cancelled dependent before it answers the cancel).
                    del self._suspects[(client, key)]
                    continue
                self._report(
                    "refcount_mismatch", key, client, first,
                    f"with every channel drained, {client} still holds {key} "
                    f"(refcount {b.refcount.get((client, key))}) but the scheduler does not "
                    f"count {client} among those who want it (who_wants = "
                    f"{set(b.who_wants.get(key, ())) or '{}'}). The two sides disagree for "
                    "good: no message in flight will reconcile them.")

    @staticmethod
    def _why_kept(b: Beliefs, client: str, key: str, state: str, decided: tuple) -> str:
        """Why the scheduler still keeps ``key`` for ``client``, who cancelled it."""
        seq, cancelled, found = decided
        kept = (f"The task ran for a future the user cancelled, and {key} ({state}) stays for "
                f"{client} until its Future objects are dropped.")
        if cancelled is None:
            return (f"{client} cancelled its future for {key}, but its cancel — an RPC beside the "
                    f"stream before PR 7583 — reached the scheduler before {client}'s own "
                    f"update-graph, and dask's handler, having looked {found} times for {key} to be "
                    f"known and wanted, gave up without a word (event {seq}). The graph then "
                    f"made {client} want {key}. " + kept)
        others = ", ".join(c for c in found if c != client) or "nobody"
        if cancelled:
            return (f"the scheduler cancelled {key} for {client} (event {seq}), yet a desire of "
                    f"{client}'s that came after its cancel made it want {key} again. " + kept)
        if client not in found:
            return (f"{client}'s cancel reached the scheduler before {client}'s own update-graph "
                    f"(the cancel was an RPC beside the stream before PR 7583), when {others} "
                    f"wanted {key}: dask's poll waits for a key wanted by anyone, cancels nothing "
                    f"another client wants, and released {client}'s hold of a key {client} did "
                    f"not yet want — nothing (event {seq}). The graph that came after made "
                    f"{client} want {key}. " + kept)
        return (f"{client} cancelled its future for {key}, which {others} also want(s): dask's "
                f"stimulus_cancel cancels nothing for anyone then (event {seq}), and since PR "
                f"7583 it releases a client's hold only of the keys it cancelled, so {client} "
                f"stays in who_wants (before PR 7583 its hold was released). " + kept)

    @staticmethod
    def _why_foreign(b: Beliefs, client: str, key: str, state: str, foreign: tuple) -> str:
        msg_id, canceller = foreign
        decided = b.cancels.get((canceller, key))
        if decided is not None and decided[1] is False:
            why = (f"it did not cancel {key} (others wanted it), yet, as dask's cancel_key did "
                   "before PR 6016, reported it cancelled to every client that wanted it")
        else:
            why = (f"it cancelled {key} for {canceller} and, as dask's stimulus_cancel has done "
                   f"since PR 7583, reported it to every client, {client} among them, whose "
                   f"update-graph came after the cancel")
        return (f"{client}'s future for {key} was cancelled by cancelled-keys (msg #{msg_id}) "
                f"that the scheduler sent while handling {canceller}'s cancel: {why}. The "
                f"scheduler keeps {key} ({state}) for {client}, which still wants it: the user's "
                "result() raises CancelledError for a value that is computed for them.")

    def _hung(self, b: Beliefs) -> None:
        """Futures left pending for a key the scheduler does not know: nothing will end them."""
        unheard, self._unheard = self._unheard, {}
        for (client, key), first in sorted(unheard.items(), key=lambda kv: kv[1]):
            record = b.records.get(key)
            held = None if record is None else record.hold(client)
            if (held is None or not held.refcount or record.sched is not None  # type: ignore[union-attr]
                    or held.fstate != "pending"):
                continue
            forgot = b.forgotten_by.get(key)
            how = (f" (the scheduler had forgotten it on {forgot[1]} from {forgot[3]}, msg "
                   f"#{forgot[0]})" if forgot else "")
            self._report(
                "hung_future", key, client, first,
                f"with every channel drained, {client} holds a pending future for {key}, but "
                f"its client-desires-keys reached a scheduler that no longer knew {key}"
                f"{how}: dask only warns 'desires key {key!r} but key is unknown'. Nothing "
                "will finish or cancel the future; result() waits for ever. The desire rode "
                f"{client}'s batched stream, and a call on an RPC of its own (unpublish_dataset "
                "before PR 9217) overtook it.")

    def _leaks(self, b: Beliefs, seq: int) -> None:
        """Keys the scheduler keeps for a client that let go of them: nothing will free them."""
        keys, self._leak_check = self._leak_check, set()
        records = b.records
        for key in sorted(keys):
            record = records.get(key)
            state = None if record is None else record.sched
            if state is None:
                continue
            for client in record.who_wants or ():  # type: ignore[union-attr]
                held = record.hold(client)  # type: ignore[union-attr]
                if (client not in b.clients or (held is not None and held.refcount)
                        or client in b.dropping):
                    continue
                if held is None:
                    applied = released = sent = None
                else:
                    applied, released, sent = held.applied, held.released_by, held.desired_by
                desire = f"its {sent[2]} (msg #{sent[0]})" if sent else "a desire"
                if released is not None:
                    how = (f"{client} released {key} (client-releases-keys, msg #{released[0]})"
                           + (" after " + desire[4:] + ", but the release overtook it: the "
                              "scheduler applied the release first, to a key it did not yet "
                              f"count for {client}, then the desire"
                              if sent and sent[1] < released[1] else
                              f", and the scheduler applied {desire} after it"))
                else:
                    how = f"the scheduler applied {desire} for {client}, which never held {key}"
                self._report(
                    "leaked_key", key, client, applied[0] if applied else seq,
                    f"with every channel drained, the scheduler keeps {key} ({state}) for "
                    f"{client}, whose refcount for it is 0: {how}. {client} has nothing left to "
                    f"release, so {key} stays in who_wants — and its data on the workers — for "
                    "the life of the cluster.")

    # -- the focus -------------------------------------------------------------------

    def _refocus(self, b: Beliefs, seq: int, row: tuple) -> None:
        """Forget what is judged about keys that left the focus or joined it alive (the
        beliefs forget theirs).  From here on ``Beliefs.apply`` lets through only the events
        the beliefs admit, the rest of this batch included."""
        left = b.refocus(seq, row)
        if left:
            self._open = {o for o in self._open if o[2] not in left}
            for table in (self._suspects, self._cancelled):
                for pair in [p for p in table if p[1] in left]:
                    del table[pair]
            self._settled = {p for p in self._settled if p[1] not in left}
            self._unheard = {p: s for p, s in self._unheard.items() if p[1] not in left}
            for table in (self._unbacked, self._late_ff, self._vanished, self._steals):
                for key in left & table.keys():
                    del table[key]
            self._leak_check -= left

    # -- helpers -----------------------------------------------------------------------

    def _update_suspect(self, b: Beliefs, pair: tuple[str, str], seq: int,
                        record: KeyRecord | None = None) -> None:
        """Whether ``pair``'s client holds the key the scheduler does not count it in
        ``who_wants`` for: a suspect, judged at the next drain.  ``record``: the key's, if
        the caller has it (the beliefs' record is read once per event)."""
        client, key = pair
        if record is None:
            record = b.records.get(key)
        held = None if record is None else record.hold(client)
        if (held is not None and held.refcount and client not in (record.who_wants or ())
                and pair not in self._settled
                and (held.race is None or held.race.cancelled_by_client is None)):
            if self._drains:
                self._suspects.setdefault(pair, seq)
        else:
            if self._suspects:
                self._suspects.pop(pair, None)
            if self._open:
                self._open.discard(("refcount_mismatch", client, key))

    def _why_forgotten(self, b: Beliefs, client: str, key: str, seq: int, told: bool
                       ) -> tuple[int, str]:
        """The first event that broke the invariant and a paragraph saying why."""
        if told:
            kept = sorted(b.holding(key))
            by = b.forgotten_by.get(key)
            if kept and by is not None and by[1] == m.RELEASE_WORKER_DATA:
                cause = (f", though {', '.join(kept)} still holds a copy: a release-worker-data "
                         "about the key's previous copy reached the scheduler after the new copy "
                         "was registered, and the scheduler took it as the new one's.")
            else:
                cause = (": the last worker copy of the data was freed (a free-keys meant for the "
                         "key's previous life deleted the data a scatter had just put there).")
            return seq, (f"the scheduler forgot {key} while {client} held a finished future for "
                         f"it{cause}" + TOLD_NEXT + " its future ends cancelled, with refcount "
                         f"{b.refcount.get((client, key))}.")
        released = b.released_at.get((client, key))
        first = released if released is not None else seq
        overtaken = self._overtaken(b, client, key, b.receiving)
        if overtaken:
            return first, overtaken + " Nothing tells the client: its future still says finished."
        return first, (
            f"the scheduler forgot {key} while {client} held a finished future for it and "
            f"was not in who_wants; the client was not told.")

    @staticmethod
    def _overtaken(b: Beliefs, client: str, key: str, release: tuple | None) -> str:
        """Why a release that forgot ``key`` was late, if it was sent before the client's last desire."""
        desire = b.desired_by.get((client, key))
        if not (release and release[1] == m.CLIENT_RELEASES_KEYS and desire
                and release[2] < desire[1]):
            return ""
        return (f"{client} sent client-releases-keys for {key} (msg #{release[0]}) before it "
                f"scattered {key} again (msg #{desire[0]}), but the release travelled on the "
                "batched stream and the scatter on an RPC, so the scatter arrived first. The "
                "scheduler's who_wants is a set: the second desire changed nothing, and the "
                f"late release then emptied it and forgot {key}.")

    def _report(self, name: str, key: str, client: str | None, first_seq: int,
                explanation: str, once: bool = True) -> None:
        """Record a violation; with ``once``, a condition that persists is reported once."""
        if once:
            episode = (name, client or "", key)
            if episode in self._open:
                return
            self._open.add(episode)
        seq = self.trace.next_seq
        self.trace.record("checks", "violation", key, name, first_seq, client, explanation)
        self.violations.append(Violation(name, key, client, first_seq, seq, explanation))


#: Event kind -> the judge that applies it to the beliefs and judges it (``Beliefs.apply``
#: calls it for every event of its kind).  A judge calls the update itself, where the
#: invariant needs to look before or after; an update nothing judges is called as it is.
_JUDGES: dict[str, Judge] = {
    **OWN,
    "future.created": Checks._future_created,
    "refcount.inc": Checks._refcount_changed,
    "refcount.dec": Checks._refcount_changed,
    "future.state": Checks._future_state,
    "transition": Checks._transition,
    "desire.applied": Checks._desire_applied,
    "release.applied": Checks._release_applied,
    "scatter.registered": Checks._registered,
    "who_has.removed": Checks._who_has_removed,
    "worker.put": Checks._worker_put,
    "worker.free": Checks._worker_free,
    "scheduler.assertion": Checks._assertion,
    "desire.unknown": Checks._desire_unknown,
    "graph.annotations_dropped": Checks._annotations_dropped,
    "worker.added": Checks._worker_added,
    "task.stale_accepted": Checks._stale_accepted,
    "steal.request": Checks._steal_request,
    "steal.outcome": Checks._steal_outcome,
    "network.drained": Checks._drained,
    "id.alloc": Checks._id_alloc,
    "future.put_rejected": Checks._put_rejected,
    "focus.changed": Checks._refocus,
}


#: An invariant of one's own: what each side believes about one key -> None, or what is wrong.
Invariant = Callable[[KeyRefs], str | None]


def invariant_name(invariant: Invariant) -> str:
    """The name an invariant's violations carry: its function's (refused if a check has it)."""
    name = getattr(invariant, "__name__", None)
    if not callable(invariant) or not name or name == "<lambda>":
        raise ValueError("an invariant is a named function of a KeyRefs (def my_check(key): ...)")
    if name in NAMES:
        raise ValueError(f"{name!r} is the name of one of the checks: give the invariant its own")
    return name


def judge(trace: Trace, invariants: Sequence[Invariant]) -> list[Violation]:
    """Run ``invariants`` over ``trace``: after each event about a key, each is asked about
    that key; a violation is reported when one first answers (again after it answered None).

    An invariant that raises is a violation of its own, with the exception as the
    explanation: the student sees their bug where it happened, and the run goes on.

    An invariant with a true ``at_end`` attribute is asked only once, about every key the
    trace names, after its last event: for what must hold when a run is over (an explored run
    ends with every channel drained), not at each moment in between.
    """
    named = [(invariant_name(f), f) for f in invariants]
    at_end = [(name, f) for name, f in named if getattr(f, "at_end", False)]
    named = [(name, f) for name, f in named if not getattr(f, "at_end", False)]
    beliefs = Beliefs()
    found: list[Violation] = []
    broken: set[tuple[str, str]] = set()  # (name, key) reported and still answering
    batch = trace.batch(0)
    keys: dict[str, int] = {}  # every key named, with its last event
    for seq, row in enumerate(batch.rows, batch.start):
        beliefs.apply(Batch(seq, [row], 0))
        key = row[KEY]
        if key is None:
            continue
        keys[key] = seq
        if not named:
            continue
        [refs] = beliefs.snapshot([key])
        _ask(named, refs, seq, broken, found)
    for refs in beliefs.snapshot(keys) if at_end else ():
        _ask(at_end, refs, keys[refs.key], broken, found)
    return found


def _ask(named: list[tuple[str, Invariant]], refs: KeyRefs, seq: int,
         broken: set[tuple[str, str]], found: list[Violation]) -> None:
    """Ask each invariant about ``refs`` (after event ``seq``); a new answer is a violation."""
    key = refs.key
    for name, invariant in named:
        try:
            said = invariant(refs)
        except Exception as exc:  # noqa: BLE001 - the student's bug, reported as found
            said = f"the invariant raised {type(exc).__name__}: {exc}"
        episode = (name, key)
        if not said:
            broken.discard(episode)
        elif episode not in broken:
            broken.add(episode)
            client = next(iter(refs.clients), None)
            found.append(Violation(name, key, client, seq, seq, str(said)))
