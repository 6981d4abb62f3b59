"""What each side believes, rebuilt from the trace alone.

A client believes it holds a key (its refcount) and that the key's future is
pending, finished or cancelled; the scheduler believes the key is in some task
state, wanted by ``who_wants`` and held by ``who_has``; each worker holds copies.
:class:`Beliefs` replays events into those beliefs and nothing else: it judges
nothing, so the refs table, the sidebar and the explorer's ``beliefs()`` read it
without running a check, and :class:`~jupyter_refs.checks.Checks` — the
invariants — judges over it, as dask's ``validate_state()`` reads the state its
transitions keep.

It also keeps the causal facts the explanations quote: which message each
side last sent about a key (a desire, a release) and which message the
scheduler is applying right now.  Like the rest, they come from events only,
so the same model serves a trace of the kernel-side cluster, of real dask, or
one read back from a file.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from . import events as ev
from .focus import Focus
from .protocol import messages as m
from .protocol.messages import CONNECTION_LOST
from .trace import ACTOR, CHANNEL, EXTRA, KEY, KIND, MSG_ID, OP, Batch, Trace

# Where each update's values sit in an event's ``extra``, read from the declarations
# (events.py): a field moved there moves here, instead of silently feeding another value.
_CREATED_REFS = ev.FUTURE_CREATED.at("refcount_after")
REFS_AFTER = ev.REFCOUNT_INC.at("after")
assert REFS_AFTER == ev.REFCOUNT_DEC.at("after")  # one update reads both
STATE_TO, STATE_REASON = ev.FUTURE_STATE.at("to"), ev.FUTURE_STATE.at("reason")
STATE_CAUSE = ev.FUTURE_STATE.at("cause_msg_id")
FINISH = ev.TRANSITION.at("finish")
WANTS_AFTER = ev.DESIRE_APPLIED.at("who_wants_after")
assert WANTS_AFTER == ev.RELEASE_APPLIED.at("who_wants_after")  # one update reads both
DESIRE_CLIENT, DESIRE_CREATED = ev.DESIRE_APPLIED.at("client"), ev.DESIRE_APPLIED.at("created_task")
_REMOVED_CLIENT = ev.CLIENT_REMOVED.at("client")
REG_WHO_HAS, _REG_WHO_WANTS = (ev.SCATTER_REGISTERED.at(f) for f in ("who_has", "who_wants_after"))
_PUT_COPY, _PUT_REPLACED = ev.WORKER_PUT.at("incarnation"), ev.WORKER_PUT.at("replaced")
_FREE_COPY = ev.WORKER_FREE.at("incarnation")
_HAS_AFTER = ev.WHO_HAS_REMOVED.at("who_has_after")
_RELEASE_CLIENT = ev.RELEASE_APPLIED.at("client")
_MSG_KEYS = ev.MSG_SENT.at("keys")
_GONE_WORKER, _GONE_REASON, _GONE_STIMULUS = (ev.WORKER_REMOVED.at(f) for f in (
    "worker", "reason", "stimulus_id"))
_ADDED_WORKER = ev.WORKER_ADDED.at("worker")
STIMULUS = ev.TRANSITION.at("stimulus_id")
_FOCUS_KEYS, _FOCUS_SAMPLE, _FOCUS_JOINED = (ev.FOCUS_CHANGED.at(f)
                                             for f in ("keys", "sample", "joined"))
#: Kinds about a key applied as soon as the key is in focus, joined or not: a worker's copies
#: are whole from the focus change on (a worker announces what it holds of the keys joining).
_COPIES = ("worker.put", "worker.free")

#: Operations a client sends that may start a hold of their keys.
DESIRES = ("scatter", "update-graph", "client-desires-keys")
#: The sends whose keys the beliefs note (see ``Beliefs._sent_about_holds``).
_ABOUT_HOLDS = frozenset({*DESIRES, m.CLIENT_RELEASES_KEYS, m.CANCEL_KEYS, m.CANCEL,
                          m.CANCELLED_KEYS})
#: The client's requests to cancel: on the stream since PR 7583, an RPC before.
_CANCELS = (m.CANCEL_KEYS, m.CANCEL)
_DECIDED_CLIENT, _DECIDED_CANCELLED, _DECIDED_WANTS = (ev.CANCEL_DECIDED.at(f) for f in (
    "client", "cancelled", "who_wants"))
_GAVE_UP_CLIENT, _GAVE_UP_POLLS = ev.CANCEL_GAVE_UP.at("client"), ev.CANCEL_GAVE_UP.at("polls")

#: A judge of the checks: ``judge(checks, beliefs, seq, row)`` (see ``Beliefs.apply``).
Judge = Callable[[Any, "Beliefs", int, tuple], None]

#: A message being applied, as the explanations quote it: (msg id, op, seq of its send, sender).
Receipt = tuple[int, str, int, str]


@dataclass(frozen=True, slots=True)
class KeyRefs:
    """What each side believes about one key, as the refs table shows it."""

    key: str
    clients: dict[str, tuple[int, str]]  # client -> (refcount, future state)
    scheduler: str  # task state, or "forgotten"
    who_wants: tuple[str, ...]
    on_workers: tuple[str, ...]  # workers that really hold a copy
    violations: tuple[str, ...]  # names of the violations on this key
    #: The holders that cancelled their own future for the key in this hold (their
    #: ``cancel``: the future marked cancelled with no message as its cause, or a
    #: ``cancel-keys`` they sent) — a cancel they asked for, read off the trace's events.
    cancel_requested: tuple[str, ...] = ()


class Beliefs:
    """Each side's beliefs about every key, updated event by event.

    Keys of the per-client maps are ``(client, key)`` pairs.  Everything is
    public and read-only to everyone but the updates below and the checks.
    """

    # Slots: one Beliefs is made per explored run, and every event reads a few of these.
    __slots__ = ("quiet_limit", "_quiet", "_on_erase", "_pair_clients", "refcount", "fstate",
                 "holders", "clients", "disconnected", "sched", "forgotten", "who_wants",
                 "who_has", "ghosts", "dropping", "copies", "gone", "removals", "sent",
                 "receiving", "desired_by", "released_by", "cancelled_by_client", "applied",
                 "forgotten_by", "released_at", "cancels", "cancelling", "foreign", "cancel_sent", "focus",
                 "gate", "asked_cancel")

    def __init__(self, quiet_limit: int | None = None,
                 on_erase: Callable[[str], None] | None = None) -> None:
        #: How many *quiet* keys — forgotten by the scheduler, held by no client — keep their
        #: history (who desired and released them, what forgot them); None: all.  A key
        #: comes back to life only through new events, which start a new history, so on a
        #: long trace (a million-task map) the oldest quiet keys are erased, and memory is
        #: bounded by the keys in play rather than by every key ever seen.
        self.quiet_limit = quiet_limit
        # The oldest quiet key first.  An OrderedDict, not a dict: a dict used as a queue
        # keeps the slots of the keys taken from its front until it resizes, and finding its
        # first key walks them — 46 µs a key, the whole merge's growth, at 40,000 tasks.
        self._quiet: OrderedDict[str, None] = OrderedDict()
        self._on_erase = on_erase
        #: Every actor that appears in a (client, key) pair below: the pairs to erase.
        self._pair_clients: set[str] = set()
        # -- clients ---------------------------------------------------------------
        self.refcount: dict[tuple[str, str], int] = {}  # absent: 0
        self.fstate: dict[tuple[str, str], str] = {}  # the future's state, while held
        #: key -> the clients with refcount > 0, in the order they took it.  A tuple, not a
        #: set: a key is held by one client or a few, and the collector stops walking a tuple of
        #: names at its first look — a set per key held, 53,000 of them mid-merge, was enough
        #: to run a full collection over the dask process's heap.
        self.holders: dict[str, tuple[str, ...]] = {}
        self.clients: set[str] = set()  # actors with refcounts: real clients, not pseudo-clients
        #: (client, key) whose future was cancelled by a lost connection: its next future
        #: starts a new hold whatever its refcount says.
        self.disconnected: set[tuple[str, str]] = set()
        # -- the scheduler ---------------------------------------------------------
        self.sched: dict[str, str] = {}  # key -> task state (absent: forgotten or never known)
        self.forgotten: set[str] = set()
        self.who_wants: dict[str, tuple[str, ...]] = {}
        #: key -> the workers the scheduler believes hold it (scatter.registered, a task's
        #: result, who_has.removed); absent where the trace does not say (a dask trace).
        self.who_has: dict[str, set[str]] = {}
        self.ghosts: dict[str, int] = {}  # key -> seq of the desire that created it, no run spec
        self.dropping: set[str] = set()  # clients the scheduler dropped, not yet told
        # -- workers ---------------------------------------------------------------
        #: key -> the copies workers hold, flat: ``(worker, incarnation, worker, incarnation,
        #: …)`` (:meth:`holding` names the workers).  A tuple of names and numbers, which the
        #: collector stops walking at its first look: a dict and a set per key in memory — 80,000
        #: containers on a 40,000-task map, for the run's whole length — made the full
        #: collections over the dask process's heap come sooner.
        self.copies: dict[str, tuple[str | int, ...]] = {}
        self.gone: dict[str, str] = {}  # worker the scheduler removed -> why (worker.removed)
        #: The stimulus ids of those removals: the transitions a removal makes carry it.
        self.removals: set[str] = set()
        # -- causality, for the explanations -------------------------------------------
        #: msg id in flight -> its receipt, (msg id, op, seq of its send, sender): a send is
        #: received at most once, so the receipt is made when it is sent.
        self.sent: dict[int, Receipt] = {}
        self.receiving: Receipt | None = None  # the message whose effects are being recorded
        self.desired_by: dict[tuple[str, str], tuple[int, int, str]] = {}  # -> (msg id, seq, op)
        self.released_by: dict[tuple[str, str], tuple[int, int]] = {}  # -> (msg id, sent seq)
        #: (client, key) the client cancelled itself (``Future.cancel``, ``client.cancel``) ->
        #: seq of its cancel-keys: both sides then agree the future is gone.
        self.cancelled_by_client: dict[tuple[str, str], int] = {}
        #: (client, key) whose hold the client cancelled itself -> seq: its own cancel marks
        #: the future cancelled (no message its cause) before its cancel-keys is even sent.
        self.asked_cancel: dict[tuple[str, str], int] = {}
        #: (client, key) -> (seq, msg id, op, sent seq) of the last desire the scheduler applied.
        self.applied: dict[tuple[str, str], tuple[int, int, str, int]] = {}
        self.forgotten_by: dict[str, Receipt | None] = {}  # key -> the message that forgot it
        #: (client, key) -> seq of the release.applied that took a still-holding client off.
        self.released_at: dict[tuple[str, str], int] = {}
        #: (client, key) -> what the scheduler's cancel asked by that client decided, (seq,
        #: True: cancelled / False: kept for others / None: gave up waiting, who_wants it
        #: found, or the polls it gave up after): ``cancel.decided``, ``cancel.gave_up``.
        self.cancels: dict[tuple[str, str], tuple[int, bool | None, Any]] = {}
        #: (the receipt being applied, the client) of the last ``cancel.decided``: whose cancel
        #: the reports that follow in the same stimulus are (a poll's receipt names no client).
        self.cancelling: tuple[Receipt | None, str] | None = None
        #: (client, key) -> (msg id, the client whose cancel it was) of a cancelled-keys sent to
        #: a client about another client's cancel (dask before PR 6016, or since PR 7583 to
        #: every client): what ``cancelled_for_another`` judges.
        self.foreign: dict[tuple[str, str], tuple[int, str]] = {}
        #: (client, key) -> msg id of the last cancelled-keys that answers the client's own
        #: cancel of the key (on its way while the id is in ``sent``: the future is about to
        #: end cancelled, as the client asked).
        self.cancel_sent: dict[tuple[str, str], int] = {}
        # -- the focus (focus.changed): None until the trace's focus first changes --------------
        #: The keys the trace follows now (None: every key).
        self.focus: Focus | None = None
        #: Once the focus has changed: the keys that joined it alive and have not been
        #: forgotten by the scheduler since (their history is half a history).
        self.gate: set[str] | None = None

    # -- following a trace ---------------------------------------------------------------

    @classmethod
    def of(cls, trace: Trace, until: int | None = None) -> Beliefs:
        """The beliefs after the events of ``trace`` before seq ``until`` (all: None).

        No check runs: reading what each side believed at some point costs one pass.
        """
        beliefs = cls()
        beliefs.apply(trace.batch(0, until))
        return beliefs

    def apply(self, batch: Batch, judge: Any = None, judges: Mapping[str, Judge] | None = None
              ) -> None:
        """Update from a batch of rows, in order.

        ``judges`` maps each kind to apply to its handler, called as ``judges[kind](judge,
        self, seq, row)``; without it, the beliefs' own updates (:data:`OWN`).  A judge applies
        the update itself, where it needs to look before or after (the checks follow a trace
        through this loop, with a table that covers every update).  Half of all events are
        sends and receipts, which only the beliefs read: they are applied here, inline.  One
        table, one lookup per event: this loop runs for every event of every explored run.
        """
        sent = self.sent
        pop_sent = sent.pop
        handler_of = (OWN if judges is None else judges).get
        rows = enumerate(batch.rows, batch.start)
        # The gate is None until the focus first changes: read once here, and again only after
        # a focus.changed (rare), not on every row.
        gated = self.gate is not None
        for seq, row in rows:
            if gated and not self.admits(row):
                continue
            kind = row[KIND]
            if kind == "msg.received":
                receipt = pop_sent(row[MSG_ID], None)
                self.receiving = (receipt if receipt is not None
                                  else (row[MSG_ID], row[OP], -1, "?"))  # its send is not here
            elif kind == "msg.sent":
                msg_id, op = row[MSG_ID], row[OP]
                sent[msg_id] = (msg_id, op, seq, row[ACTOR])  # the receipt, made once
                if op in _ABOUT_HOLDS:
                    self._sent_about_holds(seq, row, op)
            else:
                handler = handler_of(kind)
                if handler is not None:
                    handler(judge, self, seq, row)
                    if kind == "focus.changed":
                        gated = self.gate is not None

    # -- the focus --------------------------------------------------------------------------

    def refocus(self, seq: int, row: tuple) -> set[str]:
        """The trace follows other keys from here: forget every key that left the focus.

        Returns the keys forgotten: those, and the ones that joined the focus while alive
        (``joined``: the scheduler knew them, a client held them or a worker had them).  A
        joined key arrives with half a history — its earlier events were never recorded —
        so nothing is believed about it until the scheduler forgets it (:meth:`admits`):
        judging half a history would report what never happened.  Any other key that
        joins starts its life in the trace.
        """
        extra = row[EXTRA]
        new = Focus.from_fields(extra[_FOCUS_KEYS], extra[_FOCUS_SAMPLE])
        self.focus = new
        left = set() if new is None else {k for k in self.known_keys() if not new.wants(k)}
        partial = self.gate or set()
        partial = {k for k in partial if new is None or new.wants(k)}
        partial.update(extra[_FOCUS_JOINED])
        self.gate = partial
        forgotten = left | set(extra[_FOCUS_JOINED])
        self.forget(forgotten)
        return forgotten

    def admits(self, row: tuple) -> bool:
        """Whether an event after a focus change is believed: it is about no key, or about a
        key in focus whose history is whole (not one that joined the focus while alive,
        until the scheduler forgets it).  A worker's copies are believed at once: a worker
        announces what it holds of the keys that join."""
        key = row[KEY]
        if key is None or row[MSG_ID] is not None:
            return True  # messages carry only the keys in focus (the sources filter them)
        focus = self.focus
        if focus is not None and not focus.wants(key):
            return False
        if key not in self.gate:  # type: ignore[operator]
            return True
        kind = row[KIND]
        if kind == "transition" and row[EXTRA][FINISH] == "forgotten":
            self.gate.discard(key)  # type: ignore[union-attr]
            return True  # its next life is whole
        return kind in _COPIES

    def known_keys(self) -> set[str]:
        """Every key some belief is about."""
        keys = {k for (_c, k) in self.refcount} | {k for (_c, k) in self.fstate}
        keys.update(self.sched, self.forgotten, self.who_wants, self.who_has, self.ghosts,
                    self.copies, self.forgotten_by, self.holders)
        keys.update(k for (_c, k) in self.desired_by)
        keys.update(k for (_c, k) in self.released_by)
        keys.update(k for (_c, k) in self.applied)
        return keys

    def forget(self, keys: set[str]) -> None:
        """Believe nothing more about ``keys`` (they left the focus)."""
        if not keys:
            return
        for table in (self.refcount, self.fstate, self.desired_by, self.released_by,
                      self.cancelled_by_client, self.applied, self.released_at, self.cancels,
                      self.foreign, self.cancel_sent, self.asked_cancel):
            for pair in [p for p in table if p[1] in keys]:
                del table[pair]
        self.disconnected = {p for p in self.disconnected if p[1] not in keys}
        for table in (self.sched, self.who_wants, self.who_has, self.ghosts, self.copies,
                      self.forgotten_by, self.holders):
            for key in keys & table.keys():
                del table[key]
        self.forgotten -= keys

    # -- reading ---------------------------------------------------------------------------

    def keys(self) -> list[str]:
        """Keys some client holds or the scheduler knows, in order of first appearance."""
        wanted = dict.fromkeys(k for (_c, k) in self.refcount)
        wanted.update(dict.fromkeys(self.sched))
        return list(wanted)

    def snapshot(self, keys: Iterable[str], verdicts: dict[str, list[str]] | None = None
                 ) -> list[KeyRefs]:
        """Per key: every client's refcount and future state, the scheduler's view."""
        verdicts = verdicts or {}
        return [
            KeyRefs(
                key,
                {c: (self.refcount[(c, key)], self.fstate.get((c, key), "?"))
                 for c in sorted(self.holders.get(key, ()))},
                self.sched.get(key, "forgotten") + (" (ghost)" if key in self.ghosts else ""),
                tuple(sorted(self.who_wants.get(key, ()))),
                tuple(sorted(self.holding(key))),
                tuple(dict.fromkeys(verdicts.get(key, ()))),
                tuple(c for c in sorted(self.holders.get(key, ())) if (c, key) in self.asked_cancel)
                if self.asked_cancel else (),
            )
            for key in keys
        ]

    # -- messages --------------------------------------------------------------------------
    # A send is noted in ``sent`` (and a receipt sets ``receiving``) inline, in ``apply``.

    def _sent_about_holds(self, seq: int, row: tuple, op: str) -> None:
        """A client's message that may start, end or cancel a hold of its keys."""
        sender, msg_id = row[ACTOR], row[MSG_ID]
        if op == "cancelled-keys":
            # The scheduler's answer to a client's cancel names the dependents it cancelled
            # too (dask's stimulus_cancel): those holds end at a client's request.  Whose
            # cancel: the request being applied, or (a cancel's poll, before PR 7583) the
            # client of the decision just recorded.  Its answer to the client's own
            # update-graph refuses the graph (a dependency is lost): the keys never lived, and
            # both sides know it at once.  A loss a race caused is judged on the lost key
            # itself, which the client still holds.
            receiver = row[CHANNEL].rpartition("->")[2]
            receiving = self.receiving
            if receiving is not None and receiving[1] == "update-graph" and (
                    receiving[3] == receiver):
                for key in row[EXTRA][_MSG_KEYS]:
                    self.cancelled_by_client[(receiver, key)] = seq
                return
            cancelling = self.cancelling
            if cancelling is not None and cancelling[0] is receiving:
                canceller = cancelling[1]
            elif receiving is not None and receiving[1] in _CANCELS:
                canceller = receiving[3]
            else:
                return
            for key in row[EXTRA][_MSG_KEYS]:
                self.cancelled_by_client[(receiver, key)] = seq
                if receiver != canceller:
                    self.foreign[(receiver, key)] = (msg_id, canceller)
                else:
                    self.cancel_sent[(receiver, key)] = msg_id
            return
        self._pair_clients.add(sender)
        if op in DESIRES:
            # A message that may start a hold (only clients send these, whatever their name).
            for key in row[EXTRA][_MSG_KEYS]:
                self.desired_by[(sender, key)] = (msg_id, seq, op)
        elif op == m.CLIENT_RELEASES_KEYS:
            for key in row[EXTRA][_MSG_KEYS]:
                self.released_by[(sender, key)] = (msg_id, seq)
        else:  # cancel-keys, or the cancel RPC before PR 7583
            for key in row[EXTRA][_MSG_KEYS]:
                self.cancelled_by_client[(sender, key)] = seq
                self.asked_cancel[(sender, key)] = seq

    # -- clients ---------------------------------------------------------------------------

    def future_created(self, seq: int, row: tuple) -> bool:
        """Returns whether the ``future.created`` starts a hold: a refcount of 1 after it, or
        any new future after a lost connection."""
        pair = (row[ACTOR], row[KEY])
        disconnected = self.disconnected
        if row[EXTRA][_CREATED_REFS] != 1 and pair not in disconnected:
            return False
        self.fstate[pair] = "pending"
        if disconnected:
            disconnected.discard(pair)
        if self.cancelled_by_client:
            self.cancelled_by_client.pop(pair, None)
        if self.asked_cancel:
            self.asked_cancel.pop(pair, None)
        return True

    def refcount_changed(self, seq: int, row: tuple) -> None:
        client, key, after = row[ACTOR], row[KEY], row[EXTRA][REFS_AFTER]
        self.clients.add(client)
        if after:
            self.refcount[(client, key)] = after
            holders = self.holders.get(key)
            if holders is None:
                self.holders[key] = (client,)
            elif client not in holders:
                self.holders[key] = (*holders, client)
            return
        pair = (client, key)
        self.refcount.pop(pair, None)
        self.fstate.pop(pair, None)
        # Emptiness first: these hold a pair only after a race, and a release is every key's.
        if self.released_at:
            self.released_at.pop(pair, None)
        if self.cancelled_by_client:
            self.cancelled_by_client.pop(pair, None)
        if self.asked_cancel:
            self.asked_cancel.pop(pair, None)
        if self.cancels:
            self.cancels.pop(pair, None)
        if self.foreign:
            self.foreign.pop(pair, None)
        if self.cancel_sent:
            self.cancel_sent.pop(pair, None)
        if self.disconnected:
            self.disconnected.discard(pair)
        holders = self.holders.get(key)
        if holders is not None and client in holders:
            if len(holders) > 1:
                self.holders[key] = tuple(c for c in holders if c != client)
            else:  # nothing empty stays behind for a key no longer held
                del self.holders[key]
                if self.quiet_limit is not None and key in self.forgotten:
                    self._quiet_key(key)

    def future_state(self, seq: int, row: tuple) -> None:
        pair = (row[ACTOR], row[KEY])
        to = self.fstate[pair] = row[EXTRA][STATE_TO]
        if to == "cancelled":
            if row[EXTRA][STATE_REASON] == CONNECTION_LOST:
                self.disconnected.add(pair)
            elif row[EXTRA][STATE_CAUSE] is None:
                # The model's client names the message behind every state it is told; none:
                # its own cancel, at once.  (A traced dask client names none, but its report
                # is a receipt with no send here, just before: not a cancel it asked for.)
                receiving = self.receiving
                if receiving is None or receiving[1] != "cancelled-keys" or receiving[2] != -1:
                    self.asked_cancel[pair] = seq

    def connection_lost(self, seq: int, row: tuple) -> None:
        self.dropping.discard(row[ACTOR])

    # -- the scheduler ---------------------------------------------------------------------

    def transition(self, seq: int, row: tuple) -> None:
        key, finish = row[KEY], row[EXTRA][FINISH]
        if finish != "forgotten":
            self.sched[key] = finish
            self.forgotten.discard(key)
            if finish == "memory":
                receiving = self.receiving
                if receiving is not None and receiving[1] == "task-finished":
                    self.who_has[key] = {receiving[3]}
            elif self.who_has:  # empty on a dask trace (its receipts are not task-finished)
                self.who_has.pop(key, None)
            return
        if self.who_has:
            self.who_has.pop(key, None)
        self.sched.pop(key, None)
        if self.ghosts:
            self.ghosts.pop(key, None)
        self.forgotten.add(key)
        self.forgotten_by[key] = self.receiving
        self.who_wants.pop(key, None)
        if self.quiet_limit is not None and not self.holders.get(key):
            self._quiet_key(key)

    def _quiet_key(self, key: str) -> None:
        """``key`` is quiet now: past ``quiet_limit`` quiet keys, erase the oldest one."""
        quiet = self._quiet
        quiet[key] = None
        quiet.move_to_end(key)
        if len(quiet) > self.quiet_limit:
            oldest = quiet.popitem(last=False)[0]
            if oldest in self.forgotten and not self.holders.get(oldest):  # still quiet
                self._erase(oldest)

    def stop_erasing(self) -> None:
        """Tell no one of erased keys any more: the callback of a bounded ``Checks`` is its
        bound method, a cycle through it that ``Checks.close`` cuts (the explorer makes and
        drops a cluster, and its checks, per run)."""
        self._on_erase = None

    def _erase(self, key: str) -> None:
        self.forgotten.discard(key)
        self.forgotten_by.pop(key, None)
        self.holders.pop(key, None)
        # Only the tables that hold anything: most hold a pair only after a race, and a map
        # of 40,000 tasks erases 20,000 keys (nine pops per client each were a quarter of
        # its checks' time).
        pairs = [(client, key) for client in self.clients | self._pair_clients]
        for table in (self.desired_by, self.released_by, self.applied, self.released_at,
                      self.cancelled_by_client, self.cancels, self.foreign,
                      self.cancel_sent, self.asked_cancel):
            if table:
                for pair in pairs:
                    table.pop(pair, None)
        if self.disconnected:
            self.disconnected.difference_update(pairs)
        if self._on_erase is not None:
            self._on_erase(key)

    def desire_applied(self, seq: int, row: tuple) -> None:
        key, extra = row[KEY], row[EXTRA]
        client = extra[DESIRE_CLIENT]
        self._pair_clients.add(client)
        self.who_wants[key] = extra[WANTS_AFTER]
        receiving = self.receiving
        if receiving is not None:
            self.applied[(client, key)] = (seq, receiving[0], receiving[1], receiving[2])
        if extra[DESIRE_CREATED]:
            # A desire for an unknown key made a task with no run spec: dask <= 2024.7.
            self.ghosts[key] = seq
            self.sched[key] = "released"
            self.forgotten.discard(key)

    def cancel_decided(self, seq: int, row: tuple) -> None:
        extra = row[EXTRA]
        client = extra[_DECIDED_CLIENT]
        self.cancels[(client, row[KEY])] = (seq, extra[_DECIDED_CANCELLED], extra[_DECIDED_WANTS])
        self.cancelling = (self.receiving, client)

    def cancel_gave_up(self, seq: int, row: tuple) -> None:
        extra = row[EXTRA]
        self.cancels[(extra[_GAVE_UP_CLIENT], row[KEY])] = (seq, None, extra[_GAVE_UP_POLLS])

    def release_applied(self, seq: int, row: tuple) -> None:
        key, client = row[KEY], row[EXTRA][_RELEASE_CLIENT]
        if self.refcount.get((client, key)):
            # The scheduler drops a client that still holds the key: remember where.
            self.released_at[(client, key)] = seq
        self.who_wants[key] = row[EXTRA][WANTS_AFTER]

    def registered(self, seq: int, row: tuple) -> None:
        key, extra = row[KEY], row[EXTRA]
        self.who_has[key] = set(extra[REG_WHO_HAS])
        self.ghosts.pop(key, None)  # the data a scatter registers is something to hold
        self.sched[key] = "memory"
        self.forgotten.discard(key)
        self.who_wants[key] = extra[_REG_WHO_WANTS]

    def who_has_removed(self, seq: int, row: tuple) -> None:
        self.who_has[row[KEY]] = set(row[EXTRA][_HAS_AFTER])

    def client_removed(self, seq: int, row: tuple) -> None:
        # Its stream is closing: what the scheduler forgets for it now is not dangling.
        self.dropping.add(row[EXTRA][_REMOVED_CLIENT])

    def worker_removed(self, seq: int, row: tuple) -> None:
        """The scheduler removed a worker: its copies are gone with it, and the scheduler
        no longer counts it in any ``who_has`` (rare: a pass over the keys is fine)."""
        extra = row[EXTRA]
        worker = extra[_GONE_WORKER]
        self.gone[worker] = extra[_GONE_REASON]
        self.removals.add(extra[_GONE_STIMULUS])
        copies = self.copies
        for key in [k for k, held in copies.items() if worker in held[::2]]:
            kept = _without(copies[key], lambda w, _i: w == worker)
            if kept:
                copies[key] = kept
            else:
                del copies[key]
        for holders in self.who_has.values():
            holders.discard(worker)

    def worker_added(self, seq: int, row: tuple) -> None:
        """A worker joined (again: its nanny restarted it): it is no longer gone."""
        self.gone.pop(row[EXTRA][_ADDED_WORKER], None)

    # -- workers ---------------------------------------------------------------------------

    def holding(self, key: str) -> tuple[str, ...]:
        """The workers that hold a copy of ``key``, each once, in the order they took it."""
        held = self.copies.get(key)
        if held is None:
            return ()
        workers = held[::2]
        return workers if len(workers) == 1 else tuple(dict.fromkeys(workers))

    def worker_put(self, seq: int, row: tuple) -> None:
        extra = row[EXTRA]
        key, worker, copy = row[KEY], row[ACTOR], extra[_PUT_COPY]
        held = self.copies.get(key)
        if held is None:  # the usual case: a key's first copy
            self.copies[key] = (worker, copy)
            return
        replaced = extra[_PUT_REPLACED]
        kept = _without(held, lambda w, i: w == worker and (i in replaced or i == copy))
        self.copies[key] = (*kept, worker, copy)

    def worker_free(self, seq: int, row: tuple) -> bool:
        """Returns whether the worker held a copy of the key."""
        key, worker = row[KEY], row[ACTOR]
        held = self.copies.get(key)
        if held is None or worker not in held[::2]:
            return False
        if len(held) == 2:  # the usual case: its only copy
            if held[1] == row[EXTRA][_FREE_COPY]:
                del self.copies[key]
            return True
        freed = row[EXTRA][_FREE_COPY]
        kept = _without(held, lambda w, i: w == worker and i == freed)
        if kept:
            self.copies[key] = kept
        else:
            del self.copies[key]
        return True


def _without(held: tuple, drop: Callable[[str, int], bool]) -> tuple:
    """A key's flat copies (``Beliefs.copies``) without the (worker, incarnation) pairs
    ``drop`` names."""
    return tuple(x for w, i in zip(held[::2], held[1::2]) if not drop(w, i) for x in (w, i))

Update = Callable[[Beliefs, int, tuple], Any]

#: Event kind -> the update that applies it (plain functions, shared by every ``Beliefs``:
#: one is made per explored run, and a table of bound methods would cost more than its events).
UPDATES: dict[str, Update] = {
    "future.created": Beliefs.future_created,
    "refcount.inc": Beliefs.refcount_changed,
    "refcount.dec": Beliefs.refcount_changed,
    "future.state": Beliefs.future_state,
    "connection.lost": Beliefs.connection_lost,
    "transition": Beliefs.transition,
    "desire.applied": Beliefs.desire_applied,
    "release.applied": Beliefs.release_applied,
    "cancel.decided": Beliefs.cancel_decided,
    "cancel.gave_up": Beliefs.cancel_gave_up,
    "scatter.registered": Beliefs.registered,
    "who_has.removed": Beliefs.who_has_removed,
    "who_has.added": Beliefs.who_has_removed,  # both name the holders after the change
    "client.removed": Beliefs.client_removed,
    "worker.removed": Beliefs.worker_removed,
    "worker.added": Beliefs.worker_added,
    "worker.put": Beliefs.worker_put,
    "worker.free": Beliefs.worker_free,
    "focus.changed": Beliefs.refocus,
}


def as_judge(update: Update) -> Judge:
    """``update`` with a judge's signature, for a table of judges that judges nothing of it."""
    def judged(_judge: Any, beliefs: Beliefs, seq: int, row: tuple) -> None:
        update(beliefs, seq, row)
    judged.__name__ = judged.__qualname__ = update.__name__
    return judged


#: The beliefs' own updates as ``apply`` calls them (read without a check: the views).
OWN: Mapping[str, Judge] = MappingProxyType({kind: as_judge(u) for kind, u in UPDATES.items()})
