"""Invariants, evaluated as events arrive.

The checks see nothing but the trace: they rebuild what each side believes
(client refcounts and future states, the scheduler's task states and
``who_wants``) from events, so they work the same on the kernel-side cluster
and on a traced dask cluster.

``dangling_future``
    A client holds a finished future (refcount > 0) for a key the scheduler
    has forgotten — or has registered in memory on workers that no longer hold
    the data.  Fires on the event that makes it true: the forget, the
    registration, or the future finishing after either.
``spurious_cancel``
    Once the channels are drained, a client's future is cancelled although the
    scheduler holds the key in memory for that very client: the cancellation
    was about an earlier life of the key, and the client could not tell.
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
``refcount_mismatch``
    Once the channels are drained, a client holds a key (refcount > 0) but is
    not in that key's ``who_wants``.  Judged only at ``network.drained``,
    because in between a desire may legitimately still be on its way.

Each violation is recorded in the trace (kind ``violation``) and kept in
:attr:`Checks.violations`, naming the first event that broke the invariant
and explaining, in words a student can follow, what each side believed.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from . import events as ev
from .protocol import messages as m
from .trace import ACTOR, EXTRA, KEY, KIND, MSG_ID, OP, THREAD, Batch, Trace

# Where each handler's values sit in an event's ``extra``, read from the declarations
# (events.py): a field moved there moves here, instead of silently feeding a check another value.
_CREATED_REFS = ev.FUTURE_CREATED.at("refcount_after")
_REFS_AFTER = ev.REFCOUNT_INC.at("after")
assert _REFS_AFTER == ev.REFCOUNT_DEC.at("after")  # one handler reads both
_STATE_TO, _STATE_REASON = ev.FUTURE_STATE.at("to"), ev.FUTURE_STATE.at("reason")
_FINISH = ev.TRANSITION.at("finish")
_WANTS_AFTER = ev.DESIRE_APPLIED.at("who_wants_after")
assert _WANTS_AFTER == ev.RELEASE_APPLIED.at("who_wants_after")  # one handler reads both
_DESIRE_CLIENT, _DESIRE_CREATED = ev.DESIRE_APPLIED.at("client"), ev.DESIRE_APPLIED.at("created_task")
_ASSERTION_TEXT = ev.SCHEDULER_ASSERTION.at("message")
_UNKNOWN_CLIENT = ev.DESIRE_UNKNOWN.at("client")
_REMOVED_CLIENT = ev.CLIENT_REMOVED.at("client")
_REG_WHO_HAS, _REG_WHO_WANTS = (ev.SCATTER_REGISTERED.at(f) for f in ("who_has", "who_wants_after"))
_PUT_COPY, _PUT_REPLACED = ev.WORKER_PUT.at("incarnation"), ev.WORKER_PUT.at("replaced")
_FREE_COPY = ev.WORKER_FREE.at("incarnation")
_HAS_AFTER = ev.WHO_HAS_REMOVED.at("who_has_after")
_RELEASE_CLIENT = ev.RELEASE_APPLIED.at("client")
_ALLOC_VALUE = ev.ID_ALLOC.at("value")
_REJECT_REASON = ev.FUTURE_PUT_REJECTED.at("reason")
_MSG_KEYS = ev.MSG_SENT.at("keys")


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


@dataclass(frozen=True, slots=True)
class KeyRefs:
    """What each side believes about one key, as the refs table shows it."""

    key: str
    clients: dict[str, tuple[int, str]]  # client -> (refcount, future state)
    scheduler: str  # task state, or "forgotten"
    who_wants: tuple[str, ...]
    on_workers: tuple[str, ...]  # workers that really hold a copy
    violations: tuple[str, ...]


def _nothing() -> None:
    pass


_CLOSED_STATES = {"cancelled", "lost", "error"}
_DESIRES = ("scatter", "update-graph", "client-desires-keys")


class Checks:
    """Subscribes to a trace and records a ``violation`` event for each broken invariant."""

    def __init__(self, trace: Trace):
        self.trace = trace
        self.violations: list[Violation] = []
        self._refcount: dict[tuple[str, str], int] = {}
        self._fstate: dict[tuple[str, str], str] = {}
        self._holders: dict[str, set[str]] = {}  # key -> clients with refcount > 0
        self._sched: dict[str, str] = {}
        self._forgotten: set[str] = set()
        self._allocated: dict[int, tuple[int, str, str]] = {}  # id -> (seq, actor, thread)
        self._forgotten_by: dict[str, tuple[int, str, int, str] | None] = {}  # key -> the message that did it
        self._copies: dict[str, dict[str, set[int]]] = {}  # key -> worker -> incarnations held
        self._vanished: dict[str, str] = {}  # key in memory on workers without the data -> why
        # key -> the workers the scheduler believes hold it (scatter.registered, a task's
        # result, who_has.removed); absent where the trace does not say (a dask trace).
        self._who_has: dict[str, set[str]] = {}
        self._unbacked: dict[str, int] = {}  # key whose backing may have gone -> seq of that event
        self._who_wants: dict[str, tuple[str, ...]] = {}
        self._open: set[tuple[str, str, str]] = set()
        self._suspects: dict[tuple[str, str], int] = {}
        self._cancelled: dict[tuple[str, str], int] = {}  # held and cancelled -> seq
        self._sent: dict[int, tuple[int, str, str]] = {}  # msg_id -> (seq, op, sender)
        self._receiving: tuple[int, str, int, str] | None = None  # (msg_id, op, sent seq, sender)
        self._desired_by: dict[tuple[str, str], tuple[int, int, str]] = {}  # -> (msg_id, seq, op)
        self._released_by: dict[tuple[str, str], tuple[int, int]] = {}  # -> (msg_id, sent seq)
        # (client, key) -> (seq, msg_id, op, sent seq) of the last desire the scheduler applied
        self._applied: dict[tuple[str, str], tuple[int, int, str, int]] = {}
        self._clients: set[str] = set()  # actors with refcounts: real clients, not pseudo-clients
        self._leak_check: set[str] = set()  # keys whose who_wants or holders changed since a drain
        self._late_ff: dict[str, int] = {}  # key -> seq of a fire-and-forget desire after its end
        self._removed_at: dict[tuple[str, str], int] = {}  # seq of the release.applied
        self._ghosts: dict[str, int] = {}  # key -> seq of the desire that created it
        self._removed: set[str] = set()  # clients dropped by the scheduler, not yet told
        # (client, key) whose cancellation both sides agree on: a lost connection (already
        # reported as ghost_task) or a desire for a key the scheduler no longer knows.
        self._settled: set[tuple[str, str]] = set()
        self._disconnected: set[tuple[str, str]] = set()  # cancelled by a lost connection
        self._lock = threading.Lock()
        self.unsubscribe = trace.subscribe(self._on_batch, from_start=True)

    def close(self) -> None:
        """Stop following the trace (and drop the handler table, a cycle through ``self``)."""
        self.unsubscribe()
        self.unsubscribe = _nothing  # the closure holds our callback: another cycle

    def _on_batch(self, batch: Batch) -> None:
        # The dispatch table is the class's (plain functions): a Checks is made per
        # explored run, and a table of bound methods per instance cost more than the run's
        # events did to check.
        # Half of all events are message sends and receipts: they are handled inline,
        # the rest through the table.
        get = _HANDLERS.get
        sent = self._sent
        with self._lock:
            for seq, row in enumerate(batch.rows, batch.start):
                kind = row[KIND]
                if kind == "msg.received":
                    got = sent.pop(row[MSG_ID], None)
                    self._receiving = ((row[MSG_ID], row[OP], got[0], got[2]) if got is not None
                                       else (row[MSG_ID], row[OP], -1, "?"))
                elif kind == "msg.sent":
                    op = row[OP]
                    sent[row[MSG_ID]] = (seq, op, row[ACTOR])
                    if op in _DESIRES:
                        self._desired(seq, row)
                    elif op == "client-releases-keys":
                        self._releasing(seq, row)
                else:
                    handler = get(kind)
                    if handler is not None:
                        handler(self, seq, row)

    def snapshot(self, keys: list[str] | None = None) -> list[KeyRefs]:
        """Per key: every client's refcount and future state, the scheduler's view, the verdict.

        Without ``keys``: the keys some client holds or the scheduler knows, and
        every key with a violation, in order of first appearance.
        """
        with self._lock:
            if keys is None:
                wanted = dict.fromkeys(k for (_c, k) in self._refcount)
                wanted.update(dict.fromkeys(self._sched))
                wanted.update(dict.fromkeys(v.key for v in self.violations))
                keys = list(wanted)
            verdicts: dict[str, list[str]] = {}
            for v in self.violations:
                verdicts.setdefault(v.key, []).append(v.name)
            return [
                KeyRefs(
                    key,
                    {c: (self._refcount[(c, key)], self._fstate.get((c, key), "?"))
                     for c in sorted(self._holders.get(key, ()))},
                    self._sched.get(key, "forgotten") + (" (ghost)" if key in self._ghosts else ""),
                    tuple(sorted(self._who_wants.get(key, ()))),
                    tuple(sorted(self._copies.get(key, {}))),
                    tuple(dict.fromkeys(verdicts.get(key, ()))),
                )
                for key in keys
            ]

    # -- client side ---------------------------------------------------------------

    def _future_created(self, seq: int, row: tuple) -> None:
        client = row[ACTOR]
        pair = (client, row[KEY])
        if row[EXTRA][_CREATED_REFS] == 1 or pair in self._disconnected:
            # A new hold; after a lost connection, any new future starts one.
            self._fstate[pair] = "pending"
            self._settled.discard(pair)
            self._disconnected.discard(pair)

    def _refcount_changed(self, seq: int, row: tuple) -> None:
        client, key, after = row[ACTOR], row[KEY], row[EXTRA][_REFS_AFTER]
        pair = (client, key)
        self._clients.add(client)
        self._leak_check.add(key)
        if after:
            if self._open:
                self._open.discard(("leaked_key", client, key))
            self._refcount[pair] = after
            self._holders.setdefault(key, set()).add(client)
            self._update_suspect(pair, seq)
            return
        self._refcount.pop(pair, None)
        self._fstate.pop(pair, None)
        self._cancelled.pop(pair, None)
        self._suspects.pop(pair, None)
        self._removed_at.pop(pair, None)
        self._settled.discard(pair)
        self._disconnected.discard(pair)
        holders = self._holders.get(key)
        if holders is not None:
            holders.discard(client)
        if self._open:
            self._open = {o for o in self._open if o[1:] != pair}

    def _future_state(self, seq: int, row: tuple) -> None:
        client, key = row[ACTOR], row[KEY]
        to = row[EXTRA][_STATE_TO]
        self._fstate[(client, key)] = to
        if to == "cancelled":
            self._cancelled[(client, key)] = seq
            if row[EXTRA][_STATE_REASON] == "scheduler-connection-lost":
                # Cancelled by the lost connection: the ghost_task violation that dropped
                # it already names the client; do not report each future again.
                self._settled.add((client, key))
                self._disconnected.add((client, key))
                self._update_suspect((client, key), seq)
        else:
            self._cancelled.pop((client, key), None)
        if to in _CLOSED_STATES:
            self._open.discard(("dangling_future", client, key))
        elif to == "finished" and self._refcount.get((client, key)):
            if key in self._forgotten:
                overtaken = self._overtaken(client, key, self._forgotten_by.get(key))
                self._report(
                    "dangling_future", key, client, seq,
                    (overtaken + " " if overtaken else "")
                    + f"{client}'s future for {key} has just been marked finished, but the "
                    f"scheduler had already forgotten {key}. The client believes the data exists; "
                    "the next computation that uses it will be cancelled as lost data.")
            elif key in self._vanished:
                self._report("dangling_future", key, client, seq,
                             f"{client}'s future for {key} has just been marked finished, but "
                             + self._vanished[key])

    # -- scheduler side -------------------------------------------------------------

    def _transition(self, seq: int, row: tuple) -> None:
        key, finish = row[KEY], row[EXTRA][_FINISH]
        self._vanished.pop(key, None)
        if finish != "forgotten":
            self._sched[key] = finish
            self._forgotten.discard(key)
            if finish == "memory":
                receiving = self._receiving
                if receiving is not None and receiving[1] == "task-finished":
                    self._who_has[key] = {receiving[3]}
            else:
                self._who_has.pop(key, None)
            return
        self._who_has.pop(key, None)
        self._sched.pop(key, None)
        self._ghosts.pop(key, None)
        self._forgotten.add(key)
        self._forgotten_by[key] = self._receiving
        wanted = self._who_wants.pop(key, ())
        for client in sorted(self._holders.get(key, ())):
            pair = (client, key)
            self._update_suspect(pair, seq)
            if self._fstate.get(pair) == "finished" and client not in self._removed:
                first, why = self._why_forgotten(client, key, seq, told=client in wanted)
                self._report("dangling_future", key, client, first, why)

    def _who_wants_changed(self, seq: int, row: tuple) -> None:
        key = row[KEY]
        self._who_wants[key] = row[EXTRA][_WANTS_AFTER]
        self._leak_check.add(key)
        for client in self._holders.get(key, ()):
            self._update_suspect((client, key), seq)

    def _desire_applied(self, seq: int, row: tuple) -> None:
        self._who_wants_changed(seq, row)
        key, extra = row[KEY], row[EXTRA]
        client, who_wants, created = extra[_DESIRE_CLIENT], extra[_WANTS_AFTER], extra[_DESIRE_CREATED]
        receiving = self._receiving
        if receiving is not None:
            self._applied[(client, key)] = (seq, receiving[0], receiving[1], receiving[2])
        if client == _FIRE_AND_FORGET and self._sched.get(key) in ("memory", "erred"):
            self._late_ff.setdefault(key, seq)
        if not created:
            return
        receiving = self._receiving
        msg = f" (msg #{receiving[0]})" if receiving else ""
        # A desire comes on the client's stream, or inside an RPC (Variable.set before PR 8827).
        op = receiving[1] if receiving else m.CLIENT_DESIRES_KEYS
        via = f"{client}'s stream" if op == m.CLIENT_DESIRES_KEYS else f"the {op} RPC"
        release = self._forgotten_by.get(key) if key in self._forgotten else None
        self._ghosts[key] = seq
        self._sched[key] = "released"
        self._forgotten.discard(key)
        if release and release[1] == "client-releases-keys":
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
            f"run_spec, who_wants={{{', '.join(who_wants)}}}. It came from {where}. " + before
            + "Nothing can compute this task: the next transition that reaches it fails an "
            "assertion, and the scheduler drops the connection of the client that caused it.",
            once=False)

    def _assertion(self, seq: int, row: tuple) -> None:
        key = row[KEY]
        receiving = self._receiving
        if key not in self._ghosts or receiving is None:
            return
        client = receiving[3]
        self._report(
            "ghost_task", key, client, seq,
            f"{receiving[1]} (msg #{receiving[0]}) from {client} reached the ghost task {key} "
            f"(created at event {self._ghosts[key]}): {row[EXTRA][_ASSERTION_TEXT]}. The assertion "
            f"escapes the handler of {client}'s stream, so the scheduler closes it: every future {client} "
            "holds is cancelled with 'scheduler-connection-lost', whatever key it is for.",
            once=False)

    def _desire_unknown(self, seq: int, row: tuple) -> None:
        pair = (row[EXTRA][_UNKNOWN_CLIENT], row[KEY])
        self._settled.add(pair)
        self._update_suspect(pair, seq)

    def _client_removed(self, seq: int, row: tuple) -> None:
        # Its stream is closing: what the scheduler forgets for it now is not dangling.
        self._removed.add(row[EXTRA][_REMOVED_CLIENT])

    def _connection_lost(self, seq: int, row: tuple) -> None:
        self._removed.discard(row[ACTOR])

    def _registered(self, seq: int, row: tuple) -> None:
        key, extra = row[KEY], row[EXTRA]
        who_has, who_wants = extra[_REG_WHO_HAS], extra[_REG_WHO_WANTS]
        self._who_has[key] = set(who_has)
        self._unbacked.setdefault(key, seq)
        self._ghosts.pop(key, None)  # the data a scatter registers is something to hold
        self._sched[key] = "memory"
        self._forgotten.discard(key)
        self._who_wants[key] = who_wants
        self._leak_check.add(key)
        for client in self._holders.get(key, ()):
            self._update_suspect((client, key), seq)
        if self._copies.get(key, {}).keys() & set(who_has):
            self._vanished.pop(key, None)
            return
        why = self._vanished[key] = (
            f"the scheduler registered {key} in memory on {', '.join(who_has)}, which no longer "
            "hold it: a free-keys meant for the key's previous life deleted the data this "
            "scatter had just put, and the worker's release-worker-data reached the scheduler "
            "before the registration, so it was ignored. Both the scheduler and the client "
            "believe the data exists.")
        for client in sorted(self._holders.get(key, ())):
            if self._fstate.get((client, key)) == "finished":
                self._report("dangling_future", key, client, seq, f"for {client}: {why}")

    def _worker_put(self, seq: int, row: tuple) -> None:
        key, extra = row[KEY], row[EXTRA]
        incarnation, replaced = extra[_PUT_COPY], extra[_PUT_REPLACED]
        held = self._copies.setdefault(key, {}).setdefault(row[ACTOR], set())
        held.difference_update(replaced)
        held.add(incarnation)
        self._vanished.pop(key, None)

    def _worker_free(self, seq: int, row: tuple) -> None:
        key, worker = row[KEY], row[ACTOR]
        by_worker = self._copies.get(key, {})
        held = by_worker.get(worker)
        if held is not None:
            held.discard(row[EXTRA][_FREE_COPY])
            if not held:
                del by_worker[worker]
            if not by_worker:
                del self._copies[key]
            self._unbacked.setdefault(key, seq)

    def _who_has_removed(self, seq: int, row: tuple) -> None:
        key = row[KEY]
        self._who_has[key] = set(row[EXTRA][_HAS_AFTER])
        self._unbacked.setdefault(key, seq)

    def _release_applied(self, seq: int, row: tuple) -> None:
        client = row[EXTRA][_RELEASE_CLIENT]
        if self._refcount.get((client, row[KEY])):
            # The scheduler drops a client that still holds the key: remember where.
            self._removed_at[(client, row[KEY])] = seq
        self._who_wants_changed(seq, row)

    # -- ids ------------------------------------------------------------------------

    def _id_alloc(self, seq: int, row: tuple) -> None:
        value = row[EXTRA][_ALLOC_VALUE]
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

    def _put_rejected(self, seq: int, row: tuple) -> None:
        self._report(
            "set_twice", row[KEY], None, seq,
            f"a second task tried to set {row[KEY]}, which already had a value: "
            f"{row[EXTRA][_REJECT_REASON]}. Two futures were created with the same id, so they "
            "alias one key; the second computation's result is refused and both futures report "
            "the error.", once=False)

    # -- network --------------------------------------------------------------------

    def _releasing(self, seq: int, row: tuple) -> None:
        sender = row[ACTOR]
        for key in row[EXTRA][_MSG_KEYS]:
            self._released_by[(sender, key)] = (row[MSG_ID], seq)

    def _desired(self, seq: int, row: tuple) -> None:
        """A message that may start a hold: remember it per (client, key) for explanations."""
        sender = row[ACTOR]  # only clients send these operations, whatever they are called
        for key in row[EXTRA][_MSG_KEYS]:
            self._desired_by[(sender, key)] = (row[MSG_ID], seq, row[OP])

    def _drained(self, seq: int, row: tuple) -> None:
        if (not self._cancelled and not self._suspects and not self._late_ff and not self._unbacked
                and not self._leak_check):
            return  # the usual case: nothing to judge
        if self._leak_check:
            self._leaks(seq)
        for key, freed in list(self._unbacked.items()):
            del self._unbacked[key]
            if self._sched.get(key) != "memory":
                continue
            believed = self._who_has.get(key)
            copies = self._copies.get(key, {})
            if (copies.keys() & believed) if believed is not None else copies:
                continue
            for client in sorted(self._holders.get(key, ())):
                pair = (client, key)
                if (self._fstate.get(pair) == "finished" and client not in self._removed
                        and pair not in self._settled):
                    self._report(
                        "dangling_future", key, client, freed,
                        f"with every channel drained, the scheduler holds {key} in memory on "
                        f"{', '.join(sorted(believed or ())) or 'no worker'} and {client}'s "
                        "future says finished, but no worker it knows of has the data "
                        f"(event {freed}): a free-keys meant for an earlier life of the key "
                        "deleted a fresh copy, or a release-worker-data about an old copy "
                        "made the scheduler forget the worker that holds the new one. The "
                        "value cannot be fetched and no message in flight will bring it back.")
        for key, first in list(self._late_ff.items()):
            if (self._who_wants.get(key) == (_FIRE_AND_FORGET,)
                    and self._sched.get(key) in ("memory", "erred")):
                del self._late_ff[key]
                self._report(
                    "leaked_key", key, None, first,
                    f"fire_and_forget's client-desires-keys for {key} reached the scheduler after "
                    f"the task had ended ({self._sched[key]}), overtaken by its result. The "
                    "scheduler lets go of a fire-and-forget key only when the task finishes, "
                    "which has already happened: the result stays on its worker, wanted by no "
                    "one, for the life of the cluster.")
            elif _FIRE_AND_FORGET not in self._who_wants.get(key, ()):
                del self._late_ff[key]
        for (client, key), first in list(self._cancelled.items()):
            if self._sched.get(key) == "memory" and client in self._who_wants.get(key, ()):
                self._report(
                    "spurious_cancel", key, client, first,
                    f"{client}'s future for {key} is cancelled, yet the scheduler holds {key} in "
                    f"memory and counts {client} among those who want it. The cancelled-keys "
                    "the client obeyed was about an earlier life of the key, and nothing in it "
                    "said so: the user gets CancelledError for data that exists.")
        for (client, key), first in sorted(self._suspects.items(), key=lambda kv: kv[1]):
            self._report(
                "refcount_mismatch", key, client, first,
                f"with every channel drained, {client} still holds {key} "
                f"(refcount {self._refcount.get((client, key))}) but the scheduler does not "
                f"count {client} among those who want it (who_wants = "
                f"{set(self._who_wants.get(key, ())) or '{}'}). The two sides disagree for "
                "good: no message in flight will reconcile them.")

    def _leaks(self, seq: int) -> None:
        """Keys the scheduler keeps for a client that let go of them: nothing will free them."""
        keys, self._leak_check = self._leak_check, set()
        for key in sorted(keys):
            state = self._sched.get(key)
            if state is None:
                continue
            for client in self._who_wants.get(key, ()):
                pair = (client, key)
                if (client not in self._clients or self._refcount.get(pair)
                        or client in self._removed):
                    continue
                applied = self._applied.get(pair)
                released = self._released_by.get(pair)
                sent = self._desired_by.get(pair)
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

    # -- helpers -----------------------------------------------------------------------

    def _update_suspect(self, pair: tuple[str, str], seq: int) -> None:
        client, key = pair
        if (self._refcount.get(pair) and client not in self._who_wants.get(key, ())
                and pair not in self._settled):
            self._suspects.setdefault(pair, seq)
        else:
            self._suspects.pop(pair, None)
            self._open.discard(("refcount_mismatch", client, key))

    def _why_forgotten(self, client: str, key: str, seq: int, told: bool) -> tuple[int, str]:
        """The first event that broke the invariant and a paragraph saying why."""
        if told:
            return seq, (
                f"the scheduler forgot {key} while {client} held a finished future for it: the "
                "last worker copy of the data was freed (a free-keys meant for the key's "
                "previous life deleted the data a scatter had just put there). The client will "
                "hear lost-data then cancelled-keys: its future ends cancelled, with refcount "
                f"{self._refcount.get((client, key))}.")
        removed = self._removed_at.get((client, key))
        first = removed if removed is not None else seq
        overtaken = self._overtaken(client, key, self._receiving)
        if overtaken:
            return first, overtaken + " Nothing tells the client: its future still says finished."
        return first, (
            f"the scheduler forgot {key} while {client} held a finished future for it and "
            f"was not in who_wants; the client was not told.")

    def _overtaken(self, client: str, key: str, release: tuple[int, str, int, str] | None) -> str:
        """Why a release that forgot ``key`` was late, if it was sent before the client's last desire."""
        desire = self._desired_by.get((client, key))
        if not (release and release[1] == "client-releases-keys" and desire
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


_FIRE_AND_FORGET = "fire-and-forget"  # dask's pseudo-client (``distributed/client.py``)

#: Event kind -> the handler that reads it (plain functions, shared by every ``Checks``).
_HANDLERS = {
    "future.created": Checks._future_created,
    "refcount.inc": Checks._refcount_changed,
    "refcount.dec": Checks._refcount_changed,
    "future.state": Checks._future_state,
    "transition": Checks._transition,
    "scatter.registered": Checks._registered,
    "worker.put": Checks._worker_put,
    "worker.free": Checks._worker_free,
    "desire.applied": Checks._desire_applied,
    "scheduler.assertion": Checks._assertion,
    "client.removed": Checks._client_removed,
    "desire.unknown": Checks._desire_unknown,
    "connection.lost": Checks._connection_lost,
    "release.applied": Checks._release_applied,
    "who_has.removed": Checks._who_has_removed,
    "network.drained": Checks._drained,
    "id.alloc": Checks._id_alloc,
    "future.put_rejected": Checks._put_rejected,
}
