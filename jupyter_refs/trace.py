"""The event log: every lifecycle event of every future, cheap to record.

Recording sits on the hot path of every message, so a recorded event is one
tuple appended to a deque — no object construction, no dict, no lock:

    (t_ns, actor, thread, kind, key, msg_id, channel, op, cell, *extra)

``extra`` is the positional tail of the ``record`` call, in the row itself (a
message's is its keys); its field names come from the kind's declaration in
:mod:`jupyter_refs.events`, so the tuple never carries them.  ``seq`` is not stored
either: it is the event's position in the log plus the number of events
dropped before it, which is stable because events never move.

The log is bounded.  When it overflows, the oldest events go and
:attr:`Trace.dropped` counts them — the count appears in every export and in
``repr``, so a loss is never silent.

Consumers (the checks, the views) subscribe and receive batches when the
driver calls :meth:`Trace.flush`, so a slow consumer never slows a record.

A driver may keep events back and merge them later (a traced dask cluster sorts
what its scheduler and workers send by time): it sets :attr:`Trace.before_read`,
and every reader (``len``, ``events``, ``to_jsonl``, …) first brings them in, so
what the user reads is never behind what happened.  A view's own thread, which
follows the subscribed batches anyway, reads without asking (:func:`following`).
"""

from __future__ import annotations

import json
import sys
import threading
import time
import warnings
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from itertools import islice
from typing import Any, NamedTuple

from . import arguments
from .errors import ArgumentTypeError
from .events import FIELDS, FIELDS_AT, describe
from .focus import Focus, filter_while_focused
from .protocol.messages import Message

#: The actor of the trace's own events (``focus.changed``): no actor of the cluster's records them.
TRACE_ACTOR = "trace"

# Positions in a stored row.
T, ACTOR, THREAD, KIND, KEY, MSG_ID, CHANNEL, OP, CELL = range(FIELDS_AT)
#: Where the kind's own fields start (``row[EXTRA:]`` is an event's ``data``).
EXTRA = FIELDS_AT
#: A message's keys, the one field of ``msg.sent`` and ``msg.received``.
MSG_KEYS = FIELDS_AT + FIELDS["msg.sent"].index("keys")

Row = tuple  # (t_ns, actor, thread, kind, key, msg_id, channel, op, cell, *extra)


class Event(NamedTuple):
    """One event, as consumers see it (built on read, never stored)."""

    seq: int
    t_ns: int
    actor: str
    thread: str
    kind: str
    key: str | None
    msg_id: int | None
    channel: str | None
    op: str | None
    cell: str | None
    data: tuple

    @property
    def fields(self) -> dict[str, Any]:
        return dict(zip(FIELDS.get(self.kind, ()), self.data))

    def get(self, name: str, default: Any = None) -> Any:
        return self.fields.get(name, default)

    def describe(self) -> str:
        """The event's own words: what happened, without the common columns."""
        if self.kind in ("msg.sent", "msg.received"):
            arrow = "→ sent" if self.kind == "msg.sent" else "← recv"
            return f"{arrow} #{self.msg_id} {self.op} on {self.channel}"
        return describe(self.kind, self.data)

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "seq": self.seq,
            "t_ns": self.t_ns,
            "actor": self.actor,
            "thread": self.thread,
            "kind": self.kind,
            "key": self.key,
        }
        for name in ("msg_id", "channel", "op", "cell"):
            value = getattr(self, name)
            if value is not None:
                d[name] = value
        d.update(self.fields)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Event:
        kind = d["kind"]
        data = tuple(_tuplify(d.get(name)) for name in FIELDS.get(kind, ()))
        return cls(
            d["seq"], d["t_ns"], d["actor"], d["thread"], kind, d.get("key"),
            d.get("msg_id"), d.get("channel"), d.get("op"), d.get("cell"), data,
        )


def _tuplify(value: Any) -> Any:
    """JSON turns tuples into lists; the log stores tuples."""
    if isinstance(value, list):
        return tuple(_tuplify(v) for v in value)
    return value


class Batch(NamedTuple):
    """What a subscriber receives: rows ``start, start+1, …`` and how many it missed."""

    start: int
    rows: list
    missed: int

    def events(self) -> Iterator[Event]:
        for i, row in enumerate(self.rows, self.start):
            yield _event(i, row)


def _event(seq: int, row: Row) -> Event:
    return Event(seq, *row[:EXTRA], row[EXTRA:])


Subscriber = Callable[[Batch], None]


class _ThreadName(threading.local):
    """The recording thread's name, as each thread first saw it: one attribute read per event
    (a thread-local's ``__init__`` runs once in every thread that reads it)."""

    def __init__(self) -> None:
        self.name = threading.current_thread().name


#: One for every trace: a thread's name is the same in each, and the explorer makes a trace
#: per run (a thread-local made and first read per trace cost more than a run's records).
_THREAD = _ThreadName()


class _Following(threading.local):
    active = False


_FOLLOWING = _Following()


@contextmanager
def following() -> Iterator[None]:
    """On this thread, read traces as they are: do not ask a lazy driver to merge first.

    For the threads of live views: they follow the subscribed batches (and a driver
    merges in the background while anyone subscribes), and asking on every update —
    a round trip to a dask scheduler and each worker — would cost more than it shows.
    """
    outer, _FOLLOWING.active = _FOLLOWING.active, True
    try:
        yield
    finally:
        _FOLLOWING.active = outer


class Trace:
    """Bounded, append-only event log with batched subscribers."""

    def __init__(self, capacity: int = 1_000_000, clock: Callable[[], int] | None = None):
        arguments.count(capacity, "trace capacity")
        arguments.function(clock, "clock", "a function returning nanoseconds", none=True)
        self.capacity = capacity
        self._rows: deque[Row] = deque()
        self._slack = max(1, capacity // 64)
        self._limit = capacity + self._slack  # trimmed past this
        self._dropped = 0
        #: Events that never reached the log: a source's own bounded buffer overflowed (a
        #: dask scheduler's or worker's recorder); the source counts them, the driver adds.
        self.lost = 0
        self._trim_lock = threading.Lock()
        self.clock: Callable[[], int] = clock or time.perf_counter_ns
        #: A simulated time, in nanoseconds, that the driver sets as it moves (a stepped
        #: cluster's): events are stamped with it, and ``clock`` is not called.  None: each
        #: event reads ``clock``.  Set, not called: every event reads the time, and the
        #: cheapest callable returning a driver's attribute cost ten times the attribute.
        self.now: int | None = None
        #: The user's ``file:line`` (a notebook cell's line) of the call being served: stamped
        #: on its events, in the field the event vocabulary calls ``cell``.
        self.user_line: str | None = None
        self._subscribers: list[list] = []  # [callback, next_seq]
        self._flush_lock = threading.RLock()  # any thread may flush; batches stay in order
        #: Called before a read: a driver that merges lazily (``DaskTracer``) brings in what
        #: it holds back.  None (the kernel-side cluster): every event is in the log at once.
        self.before_read: Callable[[], None] | None = None

    def settle(self) -> None:
        """Bring in the events the driver still holds back (see :attr:`before_read`)."""
        before_read = self.before_read
        if before_read is not None and not _FOLLOWING.active:
            before_read()

    # -- recording (hot path) ------------------------------------------------

    def time(self) -> int:
        """The time an event recorded now is stamped with (:attr:`now`, else ``clock()``)."""
        now = self.now
        return self.clock() if now is None else now

    def record(self, actor: str, kind: str, key: str | None, *extra: Any) -> None:
        rows = self._rows
        now = self.now
        rows.append(
            (self.clock() if now is None else now, actor, _THREAD.name,
             kind, key, None, None, None, self.user_line) + extra
        )
        if len(rows) > self._limit:
            self._trim()

    def record_msg(self, actor: str, kind: str, msg: Message) -> None:
        rows = self._rows
        keys = msg.keys
        now = self.now
        rows.append(
            (self.clock() if now is None else now, actor, _THREAD.name,
             kind, keys[0] if len(keys) == 1 else None, msg.msg_id, msg.channel,
             msg.op, self.user_line, keys)
        )
        if len(rows) > self._limit:
            self._trim()

    def record_sent(self, messages: list[Message]) -> None:
        """``msg.sent`` for each of ``messages``, by its sender: ``record_msg`` for the batch an
        actor's step sends (one clock read, one thread lookup)."""
        rows, limit = self._rows, self._limit
        t_ns = self.time()
        thread = _THREAD.name
        cell = self.user_line
        for msg in messages:
            keys = msg.keys
            rows.append((t_ns, msg.sender, thread, "msg.sent", keys[0] if len(keys) == 1 else None,
                         msg.msg_id, msg.channel, msg.op, cell, keys))
            if len(rows) > limit:
                self._trim()

    # -- focus: swapped in only while focused, so the unfocused path stays as it is ------

    #: The keys recorded (None: every key); see :meth:`set_focus`.
    focus: Focus | None = None

    def set_focus(self, focus: Focus | None) -> None:
        """Record only events about keys in ``focus`` from now on (None: every key).

        ``record`` and ``record_msg`` become filtering ones (instance attributes) only while
        focused: a recorder that took ``trace.record`` before must take it again (the
        kernel-side cluster re-points its actors).  An event about no key is always kept; a
        message keeps the keys in focus and is left out when none is.
        """
        self.focus = focus
        filter_while_focused(self, focus, record="_record_focused",
                             record_msg="_record_msg_focused", record_sent="_record_sent_focused")

    def _record_focused(self, actor: str, kind: str, key: str | None, *extra: Any) -> None:
        if key is None or self.focus.wants(key):  # type: ignore[union-attr]
            Trace.record(self, actor, kind, key, *extra)

    def _record_sent_focused(self, messages: list[Message]) -> None:
        for msg in messages:
            self._record_msg_focused(msg.sender, "msg.sent", msg)

    def _record_msg_focused(self, actor: str, kind: str, msg: Message) -> None:
        keys = msg.keys
        kept = self.focus.keep(keys) if keys else keys  # type: ignore[union-attr]
        if len(kept) == len(keys):
            Trace.record_msg(self, actor, kind, msg)
        elif kept:  # the row record_msg makes, with the kept keys (written out: a hot path)
            self._rows.append(
                (self.time(), actor, _THREAD.name,
                 kind, kept[0] if len(kept) == 1 else None, msg.msg_id, msg.channel,
                 msg.op, self.user_line, kept))
            if len(self._rows) > self._limit:
                self._trim()

    def add(self, t_ns: int, actor: str, thread: str, kind: str, key: str | None,
            msg_id: int | None = None, channel: str | None = None, op: str | None = None,
            extra: tuple = (), cell: str | None = None) -> None:
        """Append an event recorded elsewhere (another process, another clock), as it is."""
        rows = self._rows
        rows.append((t_ns, actor, thread, kind, key, msg_id, channel, op, cell, *extra))
        if len(rows) > self._limit:
            self._trim()

    def extend(self, rows: list[Row]) -> None:
        """Append rows built elsewhere in the row shape (the dask merge builds them once)."""
        self._rows.extend(rows)
        if len(self._rows) > self._limit:
            self._trim()

    def _trim(self) -> None:
        with self._trim_lock:
            rows = self._rows
            excess = len(rows) - self.capacity
            for _ in range(max(0, excess)):
                rows.popleft()
            self._dropped += max(0, excess)

    # -- reading ---------------------------------------------------------------

    @property
    def dropped(self) -> int:
        """How many of the oldest events were discarded because the log was full."""
        return self._dropped

    def retained_bytes(self) -> int:
        """What the retained rows hold, in bytes, each object counted once (a key interned
        for its twenty events counts once).  A measure, not a hot path: it walks every row."""
        seen: set[int] = set()
        total = 0
        stack: list[Any] = list(self._rows)
        while stack:
            obj = stack.pop()
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            total += sys.getsizeof(obj)
            if isinstance(obj, tuple):
                stack.extend(obj)
        return total

    @property
    def missing(self) -> int:
        """Every event the log does not hold: dropped from it, or lost before it."""
        return self._dropped + self.lost

    def __len__(self) -> int:
        if self.before_read is not None:
            self.settle()
        return len(self._rows)

    @property
    def next_seq(self) -> int:
        """One past the last event's seq: every event the log ever took, dropped ones too."""
        if self.before_read is not None:
            self.settle()
        return self._dropped + len(self._rows)

    def _snapshot(self, since: int = 0, until: int | None = None) -> tuple[int, list[Row]]:
        """The first seq and the rows of ``[since, until)``, copied under the trim lock."""
        if self.before_read is not None:
            self.settle()
        with self._trim_lock:
            start, n = self._dropped, len(self._rows)
            first = max(since - start, 0)
            last = n if until is None else max(min(until - start, n), first)
            if first == 0 and last == n:
                return start, list(self._rows)
            return start + first, list(islice(self._rows, first, last))

    def events(
        self,
        key: str | None = None,
        kind: str | Iterable[str] | None = None,
        actor: str | None = None,
        since: int = 0,
        until: int | None = None,
    ) -> list[Event]:
        """Events in seq order, optionally only those about ``key``, of ``kind``, by ``actor``,
        with ``since <= seq < until``."""
        start, rows = self._snapshot(since, until)
        kinds = {kind} if isinstance(kind, str) else set(kind) if kind is not None else None
        out = []
        for seq, row in enumerate(rows, start):
            if kinds is not None and row[KIND] not in kinds:
                continue
            if actor is not None and row[ACTOR] != actor:
                continue
            if key is not None and not _about(row, key):
                continue
            out.append(_event(seq, row))
        return out

    filter = events

    def batch(self, since: int = 0, until: int | None = None) -> Batch:
        """The rows of ``[since, until)`` as a batch, as a subscriber would have received them."""
        start, rows = self._snapshot(since, until)
        return Batch(start, rows, 0)

    def channels(self) -> set[str]:
        """The channels of the messages in the log (``client:1->scheduler``, ``rpc:…#3``)."""
        _, rows = self._snapshot()
        return {row[CHANNEL] for row in rows if row[CHANNEL] is not None}

    def __iter__(self) -> Iterator[Event]:
        return iter(self.events())

    def __getitem__(self, seq: int) -> Event:
        if self.before_read is not None:
            self.settle()
        with self._trim_lock:
            start, n = self._dropped, len(self._rows)
            if not start <= seq < start + n:
                raise IndexError(f"event {seq} is not in the log (it holds {start}..{start + n - 1})")
            return _event(seq, self._rows[seq - start])

    def __repr__(self) -> str:
        lost = f", {self.lost} lost at the source" if self.lost else ""
        return f"<Trace {len(self)} events, {self.dropped} dropped{lost}, capacity {self.capacity}>"

    # -- subscribers -----------------------------------------------------------

    def subscribe(self, callback: Subscriber, from_start: bool = False) -> Callable[[], None]:
        """Call ``callback(batch)`` with new events at every :meth:`flush`.

        A callback that raises is removed and the failure reported once as a
        warning: a broken view must never break the cluster.
        """
        entry = [callback, 0 if from_start else self.next_seq]
        self._subscribers.append(entry)

        def unsubscribe() -> None:
            if entry in self._subscribers:
                self._subscribers.remove(entry)

        return unsubscribe

    @property
    def subscribers(self) -> int:
        """How many callbacks follow the log (a driver may skip work nobody watches live)."""
        return len(self._subscribers)

    def flush(self) -> None:
        """Hand every subscriber the events recorded since its last batch.

        Only the new tail of the log is copied, so a flush costs what it
        delivers, not what the log holds.
        """
        with self._flush_lock:
            self._flush()

    def _flush(self) -> None:
        subscribers = self._subscribers
        # A subscriber (the checks) may record while being flushed; loop so it
        # and everyone else also see those events before flush returns.
        while subscribers:
            since = subscribers[0][1] if len(subscribers) == 1 else min(e[1] for e in subscribers)
            if since >= self._dropped + len(self._rows):
                return  # nothing new for anyone
            first, end, tail = self._tail(since)
            if first == end:
                return
            for entry in list(subscribers):
                callback, cursor = entry
                if cursor >= end:
                    continue
                start = max(cursor, first)
                entry[1] = end
                try:
                    callback(Batch(start, tail if start == first else tail[start - first:],
                                   start - cursor))
                except Exception as exc:  # noqa: BLE001 - reported, not swallowed
                    subscribers.remove(entry)
                    warnings.warn(
                        f"jupyter_refs: trace subscriber {callback!r} raised {exc!r} "
                        "and was removed", RuntimeWarning, stacklevel=2,
                    )

    def _tail(self, since: int) -> tuple[int, int, list[Row]]:
        """``(first, end, rows)``: the retained rows with seq in ``[max(since, dropped), end)``."""
        while True:
            with self._trim_lock:
                rows, dropped = self._rows, self._dropped
                end = dropped + len(rows)
                first = max(since, dropped)
                try:
                    if first == dropped:  # the whole log (a new subscriber, an explored run)
                        tail = list(rows)
                    else:
                        tail = list(islice(reversed(rows), max(0, end - first)))
                        tail.reverse()
                except RuntimeError:  # appended to by another thread mid-copy
                    continue
                if dropped + len(rows) != end or len(tail) != end - first:
                    continue  # a record landed while copying: the tail shifted
            return first, end, tail

    # -- JSON Lines --------------------------------------------------------------

    def to_jsonl(self, path: str | None = None) -> str:
        text = "".join(json.dumps(e.as_dict(), separators=(",", ":")) + "\n" for e in self.events())
        if path is not None:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        return text

    @classmethod
    def from_jsonl(cls, source: str | Iterable[str], capacity: int | None = None) -> Trace:
        """Load a log written by :meth:`to_jsonl` (text, or an iterable of lines)."""
        lines = source.splitlines() if isinstance(source, str) else source
        events = [Event.from_dict(json.loads(line)) for line in lines if line.strip()]
        trace = cls(capacity=capacity or max(1, len(events)))
        trace._dropped = events[0].seq if events else 0
        for i, e in enumerate(events):
            if e.seq != trace._dropped + i:
                raise ValueError(f"line {i + 1}: seq {e.seq} breaks the sequence")
            trace._rows.append((*e[1:EXTRA + 1], *e.data))
        return trace

    def to_chrome_trace(self, path: str | None = None) -> dict[str, Any]:
        """The log as Chrome trace event JSON (Perfetto); written to ``path`` if given."""
        from .chrome import chrome_trace  # only its users pay for it

        doc = chrome_trace(self.events(), dropped=self.dropped, lost=self.lost)
        if path is not None:
            with open(path, "w", encoding="utf-8") as f:
                json.dump(doc, f)
        return doc


def _about(row: Row, key: str) -> bool:
    if row[KEY] == key:
        return True
    if row[MSG_ID] is not None:
        return key in row[MSG_KEYS]
    return False


def trace_source(value: Any, name: str = "source") -> Any:
    """What views read: a kernel-side ``Cluster``, an attached ``DaskTracer`` or a ``Trace``."""
    if isinstance(value, Trace) or isinstance(getattr(value, "trace", None), Trace):
        return value
    raise ArgumentTypeError(f"{name} must be a Cluster, a DaskTracer (attach(client)) or a "
                            f"Trace, not {arguments.shown(value)}")
