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
from collections.abc import Callable, Iterable, Mapping, Set
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from . import events as ev
from .focus import Focus
from .protocol import messages as m
from .protocol.messages import CONNECTION_LOST
from .trace import ACTOR, CHANNEL, KEY, KIND, MSG_ID, MSG_KEYS, OP, Batch, Trace

# Where each update's values sit in a trace row, read from the declarations
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


#: ``KeyRecord.forgotten_by`` while nothing forgot the key (a forget by no message is None).
UNSET: Any = object()


class Race:
    """What a race leaves on one client's hold of a key: its own cancel, a lost connection, a
    release the scheduler applied while it held the key, the scheduler's answers to cancels.
    Apart from the :class:`Hold`, made only when one happens: a trace without races (a
    map on real dask) never makes one, and a hold is the smaller for it."""

    __slots__ = ("disconnected", "cancelled_by_client", "asked_cancel", "released_at", "cancels",
                 "foreign", "cancel_sent")

    def __init__(self) -> None:
        self.disconnected = False
        self.cancelled_by_client: int | None = None
        self.asked_cancel: int | None = None
        self.released_at: int | None = None
        self.cancels: tuple[int, bool | None, Any] | None = None
        self.foreign: tuple[int, str] | None = None
        self.cancel_sent: int | None = None

    def idle(self) -> bool:
        """Whether nothing is believed of it."""
        return not self.disconnected and (
            self.cancelled_by_client is self.asked_cancel is self.released_at is self.cancels
            is self.foreign is self.cancel_sent is None)


#: The fields of a :class:`Race`: the views read them through ``Hold.race``.
RACE_FIELDS = frozenset(Race.__slots__)


class Hold:
    """What is believed about one client's hold of one key: the fields that were tables keyed
    by ``(client, key)``.  Each field's meaning is that of the :class:`Beliefs` view of the
    same name; its default (0, None) is the view's *absent*; ``race``: the rarer ones.

    A record per key (and per hold), not a table per field: with 40,000 keys alive each table
    is cold, and an event that touched ten of them paid ten cache misses (the merge's growth
    from 4,000 to 40,000 tasks, issue 44); now it touches one record.  The slots are the
    concrete classes' (:class:`ClientHold`, :class:`KeyRecord`), each in its own order.
    """

    __slots__ = ()
    refcount: int
    fstate: str | None
    applied: tuple[int, int, str, int] | None
    race: Race | None
    desired_by: tuple[int, int, str] | None
    released_by: tuple[int, int] | None
    refcount_at: int  # when the refcount last became > 0 (the views' order)

    def __init__(self) -> None:
        self.refcount = self.refcount_at = 0
        self.fstate = self.applied = self.race = self.desired_by = self.released_by = None

    def raced(self) -> Race:
        """The hold's :class:`Race`, made if it is new."""
        race = self.race
        if race is None:
            race = self.race = Race()
        return race

    def idle(self) -> bool:
        """Whether nothing is believed about this hold."""
        return not self.refcount and (self.fstate is self.applied is self.desired_by
                                      is self.released_by is None) and (
            self.race is None or self.race.idle())

    def end_history(self) -> None:
        """Forget the hold's causal history (what ``Beliefs`` erases of a quiet key)."""
        self.desired_by = self.released_by = self.applied = self.race = None


class ClientHold(Hold):
    """A hold of a key by a client other than its :class:`KeyRecord`'s first."""

    __slots__ = ("refcount", "fstate", "applied", "race", "desired_by", "released_by",
                 "refcount_at")


class KeyRecord(Hold):
    """Everything believed about one key: the scheduler's and the workers' side, and the
    holds of its clients.  The first client to hold the key has its :class:`Hold` fields
    here, in the record itself (``client``): a key is held by one client almost always, and
    one object is a few cache lines.  Other clients' holds are in ``others``.

    The slots are in the order the events touch them: those a cold event reads (a desire
    applied, a transition, a release) in the object's first lines.
    """

    __slots__ = ("client", "refcount", "fstate", "holders", "race", "sched", "forgotten",
                 "who_wants", "who_has", "applied", "desired_by", "released_by", "copies",
                 "sched_at", "refcount_at", "ghost", "forgotten_by", "others")

    def __init__(self) -> None:
        self.client: str | None = None
        self.refcount = self.refcount_at = self.sched_at = 0
        self.forgotten = False
        self.fstate = self.holders = self.race = self.sched = self.who_wants = self.who_has = None
        self.applied = self.desired_by = self.released_by = self.copies = self.ghost = None
        self.others: dict[str, ClientHold] | None = None
        self.forgotten_by: Receipt | None = UNSET

    # What the checks read here, with their types (the slots above hold them).
    holders: tuple[str, ...] | None  # the clients with refcount > 0, in the order they took it
    sched: str | None  # task state (None: forgotten or never known)
    sched_at: int  # when the task state last became known (the views' order)
    who_wants: tuple[str, ...] | None
    who_has: set[str] | None
    ghost: int | None
    copies: tuple[str | int, ...] | None

    def hold(self, client: str) -> Hold | None:
        """``client``'s hold of the key, if anything was believed about it."""
        if self.client == client:
            return self
        others = self.others
        return others.get(client) if others else None

    def take(self, client: str) -> Hold:
        """``client``'s hold of the key, made if it is new."""
        if self.client == client:
            return self
        if self.client is None:
            self.client = client
            return self
        others = self.others
        if others is None:
            others = self.others = {}
        held = others.get(client)
        if held is None:
            held = others[client] = ClientHold()
        return held

    def holds(self) -> Iterable[tuple[str, Hold]]:
        """Every client's hold of the key: (client, hold)."""
        if self.client is not None:
            yield self.client, self
        if self.others:
            yield from self.others.items()

    def idle(self) -> bool:
        """Whether nothing is believed about the key: its record can go."""
        return (self.sched is self.who_wants is self.who_has is self.ghost is self.copies
                is self.holders is None and not self.forgotten and self.forgotten_by is UNSET
                and Hold.idle(self) and not (self.others and any(
                    not h.idle() for h in self.others.values())))


class KeyView(Mapping[str, Any]):
    """A read-only view of one field of every key's record, as the dict keyed by key it
    replaced (``Beliefs.sched`` and the like): for readers that are not on the hot path."""

    __slots__ = ("_records", "_field", "_absent")

    def __init__(self, records: dict[str, KeyRecord], field: str, absent: Any = None) -> None:
        self._records, self._field, self._absent = records, field, absent

    def __getitem__(self, key: str) -> Any:
        record = self._records.get(key)
        if record is not None:
            value = getattr(record, self._field)
            if value is not self._absent:
                return value
        raise KeyError(key)

    def __iter__(self) -> Any:
        field, absent = self._field, self._absent
        # A copy (one object: a list of pairs would be an allocation per key, and on a heap
        # of millions the collections it sets off): the merge may change the records meanwhile.
        return (k for k, r in dict(self._records).items() if getattr(r, field) is not absent)

    def __len__(self) -> int:
        field, absent = self._field, self._absent
        return sum(getattr(r, field) is not absent for r in list(self._records.values()))

    def __repr__(self) -> str:
        return f"{self._field}({dict(self)!r})"


class HoldView(Mapping[tuple[str, str], Any]):
    """A read-only view of one field of every hold, as the dict keyed by ``(client, key)`` it
    replaced (``Beliefs.refcount`` and the like)."""

    __slots__ = ("_records", "_field", "_absent")

    def __init__(self, records: dict[str, KeyRecord], field: str, absent: Any = None) -> None:
        self._records, self._field, self._absent = records, field, absent

    def __getitem__(self, pair: tuple[str, str]) -> Any:
        record = self._records.get(pair[1])
        held = None if record is None else record.hold(pair[0])
        if held is not None:
            value = self._value(held)
            if value != self._absent:
                return value
        raise KeyError(pair)

    def _value(self, held: Hold) -> Any:
        if self._field in RACE_FIELDS:
            return self._absent if held.race is None else getattr(held.race, self._field)
        return getattr(held, self._field)

    def __iter__(self) -> Any:
        absent = self._absent
        return ((c, k) for k, r in dict(self._records).items() for c, h in r.holds()
                if self._value(h) != absent)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __repr__(self) -> str:
        return f"{self._field}({dict(self)!r})"


class FlagView(Set):
    """A read-only set view of a true/false field of the records (``Beliefs.forgotten``, by
    key) or of the holds (``Beliefs.disconnected``, by ``(client, key)``)."""

    __slots__ = ("_members",)

    def __init__(self, members: Mapping[Any, Any]) -> None:
        self._members = members

    def __contains__(self, item: object) -> bool:
        return item in self._members

    def __iter__(self) -> Any:
        return iter(self._members)

    def __len__(self) -> int:
        return len(self._members)

    def __repr__(self) -> str:
        return f"{{{', '.join(map(repr, self))}}}"


class Beliefs:
    """Each side's beliefs about every key, updated event by event.

    What is believed about a key is its :class:`KeyRecord` in ``records`` (the checks read
    it there); the per-field mappings (``refcount``, ``sched``, ``who_wants`` …) are views of
    the records, keyed by key or by ``(client, key)`` as the tables they replaced.  Everything
    is public and read-only to everyone but the updates below and the checks.
    """

    # Slots: one Beliefs is made per explored run, and every event reads a few of these.
    __slots__ = ("quiet_limit", "_quiet", "_on_erase", "_pair_clients", "records", "_stamp",
                 "clients", "dropping", "gone", "removals", "sent", "receiving", "cancelling",
                 "focus", "gate")

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
        #: key -> everything believed about it.  A record goes when the key is erased or
        #: leaves the focus with nothing left in it.
        self.records: dict[str, KeyRecord] = {}
        # Counts the times a refcount or a task state became known: the views' order (the
        # order of the tables they replaced, where a key came back at the end).
        self._stamp = 0
        self.clients: set[str] = set()  # actors with refcounts: real clients, not pseudo-clients
        self.dropping: set[str] = set()  # clients the scheduler dropped, not yet told
        self.gone: dict[str, str] = {}  # worker the scheduler removed -> why (worker.removed)
        #: The stimulus ids of those removals: the transitions a removal makes carry it.
        self.removals: set[str] = set()
        # -- causality, for the explanations -------------------------------------------
        #: msg id in flight -> its receipt, (msg id, op, seq of its send, sender): a send is
        #: received at most once, so the receipt is made when it is sent.
        self.sent: dict[int, Receipt] = {}
        self.receiving: Receipt | None = None  # the message whose effects are being recorded
        #: (the receipt being applied, the client) of the last ``cancel.decided``: whose cancel
        #: the reports that follow in the same stimulus are (a poll's receipt names no client).
        self.cancelling: tuple[Receipt | None, str] | None = None
        # -- the focus (focus.changed): None until the trace's focus first changes --------------
        #: The keys the trace follows now (None: every key).
        self.focus: Focus | None = None
        #: Once the focus has changed: the keys that joined it alive and have not been
        #: forgotten by the scheduler since (their history is half a history).
        self.gate: set[str] | None = None

    # -- the views: each field of the records, as the table it was -----------------------
    # Made when read (nothing on the hot path reads them), so a Beliefs per explored run
    # costs none of them.

    @property
    def refcount(self) -> Mapping[tuple[str, str], int]:
        """(client, key) -> the client's refcount, while > 0."""
        return HoldView(self.records, "refcount", 0)

    @property
    def fstate(self) -> Mapping[tuple[str, str], str]:
        """(client, key) -> the state of the client's future, while held."""
        return HoldView(self.records, "fstate")

    @property
    def disconnected(self) -> Set[tuple[str, str]]:
        """(client, key) whose future was cancelled by a lost connection: its next future
        starts a new hold whatever its refcount says."""
        return FlagView(HoldView(self.records, "disconnected", False))

    @property
    def desired_by(self) -> Mapping[tuple[str, str], tuple[int, int, str]]:
        """(client, key) -> (msg id, seq, op) of the client's last message that may start a
        hold of the key."""
        return HoldView(self.records, "desired_by")

    @property
    def released_by(self) -> Mapping[tuple[str, str], tuple[int, int]]:
        """(client, key) -> (msg id, sent seq) of the client's last release of the key."""
        return HoldView(self.records, "released_by")

    @property
    def cancelled_by_client(self) -> Mapping[tuple[str, str], int]:
        """(client, key) the client cancelled itself (``Future.cancel``, ``client.cancel``) ->
        seq of its cancel-keys: both sides then agree the future is gone."""
        return HoldView(self.records, "cancelled_by_client")

    @property
    def asked_cancel(self) -> Mapping[tuple[str, str], int]:
        """(client, key) whose hold the client cancelled itself -> seq: its own cancel marks
        the future cancelled (no message its cause) before its cancel-keys is even sent."""
        return HoldView(self.records, "asked_cancel")

    @property
    def applied(self) -> Mapping[tuple[str, str], tuple[int, int, str, int]]:
        """(client, key) -> (seq, msg id, op, sent seq) of the last desire the scheduler
        applied."""
        return HoldView(self.records, "applied")

    @property
    def released_at(self) -> Mapping[tuple[str, str], int]:
        """(client, key) -> seq of the release.applied that took a still-holding client off."""
        return HoldView(self.records, "released_at")

    @property
    def cancels(self) -> Mapping[tuple[str, str], tuple[int, bool | None, Any]]:
        """(client, key) -> what the scheduler's cancel asked by that client decided, (seq,
        True: cancelled / False: kept for others / None: gave up waiting, who_wants it
        found, or the polls it gave up after): ``cancel.decided``, ``cancel.gave_up``."""
        return HoldView(self.records, "cancels")

    @property
    def foreign(self) -> Mapping[tuple[str, str], tuple[int, str]]:
        """(client, key) -> (msg id, the client whose cancel it was) of a cancelled-keys sent
        to a client about another client's cancel (dask before PR 6016, or since PR 7583 to
        every client): what ``cancelled_for_another`` judges."""
        return HoldView(self.records, "foreign")

    @property
    def cancel_sent(self) -> Mapping[tuple[str, str], int]:
        """(client, key) -> msg id of the last cancelled-keys that answers the client's own
        cancel of the key (on its way while the id is in ``sent``: the future is about to end
        cancelled, as the client asked)."""
        return HoldView(self.records, "cancel_sent")

    @property
    def holders(self) -> Mapping[str, tuple[str, ...]]:
        """key -> the clients with refcount > 0, in the order they took it.  A tuple, not a
        set: a key is held by one client or a few, and the collector stops walking a tuple of
        names at its first look."""
        return KeyView(self.records, "holders")

    @property
    def sched(self) -> Mapping[str, str]:
        """key -> task state (absent: forgotten or never known)."""
        return KeyView(self.records, "sched")

    @property
    def forgotten(self) -> Set[str]:
        """The keys the scheduler forgot (and that have not come back)."""
        return FlagView(KeyView(self.records, "forgotten", False))

    @property
    def who_wants(self) -> Mapping[str, tuple[str, ...]]:
        """key -> the scheduler's ``who_wants``."""
        return KeyView(self.records, "who_wants")

    @property
    def who_has(self) -> Mapping[str, set[str]]:
        """key -> the workers the scheduler believes hold it (scatter.registered, a task's
        result, who_has.removed); absent where the trace does not say (a dask trace)."""
        return KeyView(self.records, "who_has")

    @property
    def ghosts(self) -> Mapping[str, int]:
        """key -> seq of the desire that created it with no run spec."""
        return KeyView(self.records, "ghost")

    @property
    def copies(self) -> Mapping[str, tuple[str | int, ...]]:
        """key -> the copies workers hold, flat: ``(worker, incarnation, worker, incarnation,
        …)`` (:meth:`holding` names the workers).  A tuple of names and numbers, which the
        collector stops walking at its first look."""
        return KeyView(self.records, "copies")

    @property
    def forgotten_by(self) -> Mapping[str, Receipt | None]:
        """key -> the message that forgot it (None: no message)."""
        return KeyView(self.records, "forgotten_by", UNSET)
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
        new = Focus.from_fields(row[_FOCUS_KEYS], row[_FOCUS_SAMPLE])
        self.focus = new
        left = set() if new is None else {k for k in self.known_keys() if not new.wants(k)}
        partial = self.gate or set()
        partial = {k for k in partial if new is None or new.wants(k)}
        partial.update(row[_FOCUS_JOINED])
        self.gate = partial
        forgotten = left | set(row[_FOCUS_JOINED])
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
        if kind == "transition" and row[FINISH] == "forgotten":
            self.gate.discard(key)  # type: ignore[union-attr]
            return True  # its next life is whole
        return kind in _COPIES

    def known_keys(self) -> set[str]:
        """Every key some belief is about (the tables a focus change forgets a key from)."""
        return {key for key, r in self.records.items()
                if r.sched is not None or r.forgotten or r.who_wants is not None
                or r.who_has is not None or r.ghost is not None or r.copies is not None
                or r.forgotten_by is not UNSET or r.holders is not None
                or any(h.refcount or h.fstate is not None or h.desired_by is not None
                       or h.released_by is not None or h.applied is not None
                       for _c, h in r.holds())}

    def forget(self, keys: set[str]) -> None:
        """Believe nothing more about ``keys`` (they left the focus)."""
        records = self.records
        for key in keys:
            records.pop(key, None)

    # -- reading ---------------------------------------------------------------------------

    def keys(self) -> list[str]:
        """Keys some client holds or the scheduler knows, in order of first appearance (a
        key's refcount or task state that ended and began again counts from its return)."""
        held: list[tuple[int, str]] = []
        known: list[tuple[int, str]] = []
        for key, r in self.records.items():
            if r.refcount:
                held.append((r.refcount_at, key))
            if r.others:
                held.extend((h.refcount_at, key) for h in r.others.values() if h.refcount)
            if r.sched is not None:
                known.append((r.sched_at, key))
        held.sort()
        known.sort()
        wanted = dict.fromkeys(key for _at, key in held)
        wanted.update(dict.fromkeys(key for _at, key in known))
        return list(wanted)

    def snapshot(self, keys: Iterable[str], verdicts: dict[str, list[str]] | None = None
                 ) -> list[KeyRefs]:
        """Per key: every client's refcount and future state, the scheduler's view."""
        verdicts = verdicts or {}
        return [self._refs(key, self.records.get(key), verdicts) for key in keys]

    def _refs(self, key: str, record: KeyRecord | None, verdicts: dict[str, list[str]]
              ) -> KeyRefs:
        if record is None:
            return KeyRefs(key, {}, "forgotten", (), (), tuple(dict.fromkeys(verdicts.get(key, ()))))
        holds = [(c, record.hold(c)) for c in sorted(record.holders or ())]
        return KeyRefs(
            key,
            {c: (h.refcount, h.fstate or "?") for c, h in holds},  # type: ignore[union-attr]
            (record.sched or "forgotten") + (" (ghost)" if record.ghost is not None else ""),
            tuple(sorted(record.who_wants or ())),
            tuple(sorted(self.holding(key))),
            tuple(dict.fromkeys(verdicts.get(key, ()))),
            tuple(c for c, h in holds if h.race is not None  # type: ignore[union-attr]
                  and h.race.asked_cancel is not None),  # type: ignore[union-attr]
        )

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
                for key in row[MSG_KEYS]:
                    self._record(key).take(receiver).raced().cancelled_by_client = seq
                return
            cancelling = self.cancelling
            if cancelling is not None and cancelling[0] is receiving:
                canceller = cancelling[1]
            elif receiving is not None and receiving[1] in _CANCELS:
                canceller = receiving[3]
            else:
                return
            for key in row[MSG_KEYS]:
                race = self._record(key).take(receiver).raced()
                race.cancelled_by_client = seq
                if receiver != canceller:
                    race.foreign = (msg_id, canceller)
                else:
                    race.cancel_sent = msg_id
            return
        self._pair_clients.add(sender)
        record = self._record
        if op in DESIRES:
            # A message that may start a hold (only clients send these, whatever their name).
            desire = (msg_id, seq, op)
            for key in row[MSG_KEYS]:
                record(key).take(sender).desired_by = desire
        elif op == m.CLIENT_RELEASES_KEYS:
            release = (msg_id, seq)
            for key in row[MSG_KEYS]:
                record(key).take(sender).released_by = release
        else:  # cancel-keys, or the cancel RPC before PR 7583
            for key in row[MSG_KEYS]:
                race = record(key).take(sender).raced()
                race.cancelled_by_client = race.asked_cancel = seq

    def _record(self, key: str) -> KeyRecord:
        """``key``'s record, made if it is new."""
        record = self.records.get(key)
        if record is None:
            record = self.records[key] = KeyRecord()
        return record

    # -- clients ---------------------------------------------------------------------------

    def future_created(self, seq: int, row: tuple) -> bool:
        """Returns whether the ``future.created`` starts a hold: a refcount of 1 after it, or
        any new future after a lost connection."""
        client, key = row[ACTOR], row[KEY]
        record = self.records.get(key)
        held = None if record is None else record.hold(client)
        race = None if held is None else held.race
        if row[_CREATED_REFS] != 1 and (race is None or not race.disconnected):
            return False
        if held is None:
            if record is None:
                record = self.records[key] = KeyRecord()
            held = record.take(client)
        held.fstate = "pending"
        if race is not None:
            race.disconnected = False
            race.cancelled_by_client = race.asked_cancel = None
        return True

    def refcount_changed(self, seq: int, row: tuple) -> None:
        client, key, after = row[ACTOR], row[KEY], row[REFS_AFTER]
        self.clients.add(client)
        record = self.records.get(key)
        if after:
            if record is None:
                record = self.records[key] = KeyRecord()
            held = record if record.client == client else record.take(client)
            if not held.refcount:
                self._stamp += 1
                held.refcount_at = self._stamp
            held.refcount = after
            holders = record.holders
            if holders is None:
                record.holders = (client,)
            elif client not in holders:
                record.holders = (*holders, client)
            return
        if record is None:
            return
        held = record if record.client == client else record.hold(client)
        if held is not None:
            held.refcount = 0
            held.fstate = held.race = None
        holders = record.holders
        if holders is not None and client in holders:
            if len(holders) > 1:
                record.holders = _without_holder(holders, client)
            else:  # nothing empty stays behind for a key no longer held
                record.holders = None
                if self.quiet_limit is not None and record.forgotten:
                    self._quiet_key(key)

    def future_state(self, seq: int, row: tuple) -> None:
        client, key = row[ACTOR], row[KEY]
        record = self.records.get(key)
        if record is None:
            record = self.records[key] = KeyRecord()
        held = record if record.client == client else record.take(client)
        to = held.fstate = row[STATE_TO]
        if to == "cancelled":
            if row[STATE_REASON] == CONNECTION_LOST:
                held.raced().disconnected = True
            elif row[STATE_CAUSE] is None:
                # The model's client names the message behind every state it is told; none:
                # its own cancel, at once.  (A traced dask client names none, but its report
                # is a receipt with no send here, just before: not a cancel it asked for.)
                receiving = self.receiving
                if receiving is None or receiving[1] != "cancelled-keys" or receiving[2] != -1:
                    held.raced().asked_cancel = seq

    def connection_lost(self, seq: int, row: tuple) -> None:
        self.dropping.discard(row[ACTOR])

    # -- the scheduler ---------------------------------------------------------------------

    def transition(self, seq: int, row: tuple) -> None:
        key, finish = row[KEY], row[FINISH]
        record = self.records.get(key)
        if record is None:
            record = self.records[key] = KeyRecord()
        if finish != "forgotten":
            if record.sched is None:
                self._stamp += 1
                record.sched_at = self._stamp
            record.sched = finish
            record.forgotten = False
            if finish == "memory":
                receiving = self.receiving
                if receiving is not None and receiving[1] == "task-finished":
                    record.who_has = {receiving[3]}
            else:
                record.who_has = None
            return
        record.who_has = record.sched = record.ghost = record.who_wants = None
        record.forgotten = True
        record.forgotten_by = self.receiving
        if self.quiet_limit is not None and not record.holders:
            self._quiet_key(key)

    def _quiet_key(self, key: str) -> None:
        """``key`` is quiet now: past ``quiet_limit`` quiet keys, erase the oldest one."""
        quiet = self._quiet
        quiet[key] = None
        quiet.move_to_end(key)
        if len(quiet) > self.quiet_limit:
            oldest = quiet.popitem(last=False)[0]
            record = self.records.get(oldest)
            if record is not None and record.forgotten and not record.holders:  # still quiet
                self._erase(oldest, record)

    def stop_erasing(self) -> None:
        """Tell no one of erased keys any more: the callback of a bounded ``Checks`` is its
        bound method, a cycle through it that ``Checks.close`` cuts (the explorer makes and
        drops a cluster, and its checks, per run)."""
        self._on_erase = None

    def _erase(self, key: str, record: KeyRecord) -> None:
        record.forgotten = False
        record.forgotten_by = UNSET
        record.holders = None
        if record.client is not None:
            clients, pair_clients = self.clients, self._pair_clients
            for client, held in list(record.holds()):
                if client in clients or client in pair_clients:
                    held.end_history()
            others = record.others
            if others:
                for client in [c for c, held in others.items() if held.idle()]:
                    del others[client]
                if not others:
                    record.others = None
        if record.idle():
            del self.records[key]
        if self._on_erase is not None:
            self._on_erase(key)

    def desire_applied(self, seq: int, row: tuple) -> None:
        key = row[KEY]
        client = row[DESIRE_CLIENT]
        self._pair_clients.add(client)
        record = self.records.get(key)
        if record is None:
            record = self.records[key] = KeyRecord()
        record.who_wants = row[WANTS_AFTER]
        receiving = self.receiving
        if receiving is not None:
            held = record if record.client == client else record.take(client)
            held.applied = (seq, receiving[0], receiving[1], receiving[2])
        if row[DESIRE_CREATED]:
            # A desire for an unknown key made a task with no run spec: dask <= 2024.7.
            record.ghost = seq
            self._known(record, "released")

    def _known(self, record: KeyRecord, state: str) -> None:
        """The scheduler knows the key, in ``state``."""
        if record.sched is None:
            self._stamp += 1
            record.sched_at = self._stamp
        record.sched = state
        record.forgotten = False

    def cancel_decided(self, seq: int, row: tuple) -> None:
        client = row[_DECIDED_CLIENT]
        self._record(row[KEY]).take(client).raced().cancels = (
            seq, row[_DECIDED_CANCELLED], row[_DECIDED_WANTS])
        self.cancelling = (self.receiving, client)

    def cancel_gave_up(self, seq: int, row: tuple) -> None:
        self._record(row[KEY]).take(row[_GAVE_UP_CLIENT]).raced().cancels = (
            seq, None, row[_GAVE_UP_POLLS])

    def release_applied(self, seq: int, row: tuple) -> None:
        key, client = row[KEY], row[_RELEASE_CLIENT]
        record = self.records.get(key)
        if record is None:
            record = self.records[key] = KeyRecord()
        held = record if record.client == client else record.hold(client)
        if held is not None and held.refcount:
            # The scheduler drops a client that still holds the key: remember where.
            held.raced().released_at = seq
        record.who_wants = row[WANTS_AFTER]

    def registered(self, seq: int, row: tuple) -> None:
        key = row[KEY]
        record = self._record(key)
        record.who_has = set(row[REG_WHO_HAS])
        record.ghost = None  # the data a scatter registers is something to hold
        self._known(record, "memory")
        record.who_wants = row[_REG_WHO_WANTS]

    def who_has_removed(self, seq: int, row: tuple) -> None:
        self._record(row[KEY]).who_has = set(row[_HAS_AFTER])

    def client_removed(self, seq: int, row: tuple) -> None:
        # Its stream is closing: what the scheduler forgets for it now is not dangling.
        self.dropping.add(row[_REMOVED_CLIENT])

    def worker_removed(self, seq: int, row: tuple) -> None:
        """The scheduler removed a worker: its copies are gone with it, and the scheduler
        no longer counts it in any ``who_has`` (rare: a pass over the keys is fine)."""
        worker = row[_GONE_WORKER]
        self.gone[worker] = row[_GONE_REASON]
        self.removals.add(row[_GONE_STIMULUS])
        for record in self.records.values():
            held = record.copies
            if held is not None and worker in held[::2]:
                record.copies = _without(held, lambda w, _i: w == worker) or None
            if record.who_has is not None:
                record.who_has.discard(worker)

    def worker_added(self, seq: int, row: tuple) -> None:
        """A worker joined (again: its nanny restarted it): it is no longer gone."""
        self.gone.pop(row[_ADDED_WORKER], None)

    # -- workers ---------------------------------------------------------------------------

    def holding(self, key: str) -> tuple[str, ...]:
        """The workers that hold a copy of ``key``, each once, in the order they took it."""
        record = self.records.get(key)
        held = None if record is None else record.copies
        if held is None:
            return ()
        workers = held[::2]
        return workers if len(workers) == 1 else tuple(dict.fromkeys(workers))

    def worker_put(self, seq: int, row: tuple) -> None:
        key, worker, copy = row[KEY], row[ACTOR], row[_PUT_COPY]
        record = self.records.get(key)
        if record is None:
            record = self.records[key] = KeyRecord()
        held = record.copies
        if held is None:  # the usual case: a key's first copy
            record.copies = (worker, copy)
            return
        record.copies = _put_again(held, worker, copy, row[_PUT_REPLACED])

    def worker_free(self, seq: int, row: tuple) -> bool:
        """Returns whether the worker held a copy of the key."""
        key, worker = row[KEY], row[ACTOR]
        record = self.records.get(key)
        held = None if record is None else record.copies
        if held is None or worker not in held[::2]:
            return False
        if len(held) == 2:  # the usual case: its only copy
            if held[1] == row[_FREE_COPY]:
                record.copies = None  # type: ignore[union-attr]
            return True
        freed = row[_FREE_COPY]
        record.copies = _without(held, lambda w, i: w == worker and i == freed) or None  # type: ignore[union-attr]
        return True


def _without(held: tuple, drop: Callable[[str, int], bool]) -> tuple:
    """A key's flat copies (``Beliefs.copies``) without the (worker, incarnation) pairs
    ``drop`` names."""
    return tuple(x for w, i in zip(held[::2], held[1::2]) if not drop(w, i) for x in (w, i))


# The two helpers below hold what would otherwise be a comprehension or a lambda in an update
# that runs for every event of its kind: its variables would be cells, made on every call.

def _without_holder(holders: tuple[str, ...], client: str) -> tuple[str, ...]:
    """``holders`` without ``client``."""
    return tuple(c for c in holders if c != client)


def _put_again(held: tuple, worker: str, copy: int, replaced: tuple[int, ...]) -> tuple:
    """A key's flat copies after ``worker`` put copy ``copy`` of a key that has copies,
    replacing ``replaced`` (and any copy of the same incarnation) there."""
    kept = _without(held, lambda w, i: w == worker and (i in replaced or i == copy))
    return (*kept, worker, copy)

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
