"""The timeline as columns: what to draw, computed from events, with no drawing library.

:class:`TimelineModel` consumes trace rows incrementally and keeps, for each
kind of glyph, plain column lists that the bokeh widget turns into
``ColumnDataSource`` data (``data()``) or appends (``take_new()``):

* ``events``   — a marker per event on its actor's lane;
* ``messages`` — an arrow per delivered message, sender lane → receiver lane,
  and a bar on its channel's lane while it was in flight;
* ``pending``  — messages still in flight (rebuilt on every update);
* ``states``   — each shown key's scheduler state as bars on the key's lane;
* ``refcounts``— each shown key's client refcount as a step line on its lane;
* ``violations`` — a marker on the event that broke an invariant.

Lanes are stored as ids; their y positions are assigned when drawing, so a
lane that appears late (a new worker, a new key) only shifts numbers, not rows.
x is the event's seq in the logical view and its time in ms in the wall view.
"""

from __future__ import annotations

import linecache
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import events as ev
from ..trace import ACTOR, CELL, CHANNEL, EXTRA, KEY, KIND, MSG_ID, MSG_KEYS, OP, Event, T

# The fields the model draws from, at their declared positions (events.py).
_VIOLATION = tuple(ev.VIOLATION.at(f) for f in ("name", "first_seq", "client", "explanation"))
_FINISH = ev.TRANSITION.at("finish")
_CREATED_TASK = ev.DESIRE_APPLIED.at("created_task")
_REFS_AFTER = ev.REFCOUNT_INC.at("after")
_GONE_WORKER, _GONE_REASON = ev.WORKER_REMOVED.at("worker"), ev.WORKER_REMOVED.at("reason")
#: What a removed worker's lane label says after its name.
GONE = " (gone)"

OP_COLORS = {
    "scatter": "#1f77b4",
    "scatter-reply": "#6baed6",
    "update-data": "#2ca02c",
    "update-data-reply": "#74c476",
    "client-releases-keys": "#d62728",
    "client-desires-keys": "#ff9896",
    "update-graph": "#9467bd",
    "free-keys": "#8c564b",
    "release-worker-data": "#c49c94",
    "key-in-memory": "#17becf",
    "lost-data": "#ff7f0e",
    "cancelled-keys": "#e377c2",
    "task-erred": "#7f0000",
    "compute-task": "#bcbd22",
    "steal-request": "#637939",
    "steal-response": "#8ca252",
    "balance": "#cedb9c",
    "task-finished": "#dbdb8d",
    "gather": "#7f7f7f",
    "gather-reply": "#a0a0a0",
    "get-data": "#7f7f7f",
    "get-data-reply": "#a0a0a0",
    "stream-closed": "#000000",
}
STATE_COLORS = {
    "released": "#d9d9d9",
    "waiting": "#fdd49e",
    "processing": "#fdae6b",
    "memory": "#74c476",
    "erred": "#de2d26",
    # released with no run spec, created by a desire for a forgotten key (race 2)
    "ghost": "#c51b8a",
}
KIND_COLORS = {
    "refcount.inc": "#3182bd",
    "refcount.dec": "#e6550d",
    "future.state": "#756bb1",
    "transition": "#31a354",
    "release.applied": "#d62728",
    "desire.applied": "#1f77b4",
    "desire.unknown": "#ff7f0e",
    "scheduler.assertion": "#a50f15",
    "client.removed": "#a50f15",
    "connection.lost": "#a50f15",
    "worker.removed": "#a50f15",
}
DEFAULT_COLOR = "#969696"


def lane_of_channel(channel: str, sender: str, receiver: str) -> str:
    """One lane per batched stream; RPC calls grouped per pair of actors."""
    if channel.startswith("rpc:"):
        a, b = sorted((sender, receiver))
        return f"rpc {a}<->{b}"
    return channel


def source_line(cell: str | None) -> str:
    if not cell:
        return ""
    filename, _, line = cell.rpartition(":")
    try:
        return linecache.getline(filename, int(line)).strip()
    except (ValueError, OSError):
        return ""


@dataclass
class Columns:
    """Column lists for one glyph kind, plus how many rows were already handed out."""

    names: tuple[str, ...]
    cols: dict[str, list[Any]] = field(default_factory=dict)
    taken: int = 0

    def __post_init__(self) -> None:
        self.cols = {n: [] for n in self.names}
        self._appends = [column.append for column in self.cols.values()]

    def add(self, *values: Any) -> None:
        for append, value in zip(self._appends, values):
            append(value)

    def __len__(self) -> int:
        return len(self.cols[self.names[0]])


# Colours come from the kind / op column through a colour mapper in the figure, so no
# per-row colour string is sent: string columns are what a live update costs to serialize.
EVENT_COLS = ("x", "lane", "kind", "seq", "key", "desc", "cell")
MESSAGE_COLS = ("x0", "x1", "lane0", "lane1", "chan", "op", "msg_id", "keys", "desc",
                "seq0", "seq1")
STATE_COLS = ("left", "right", "lane", "state", "color", "key")
REFCOUNT_COLS = ("x0", "x1", "lane", "off0", "off1", "client", "color")
VIOLATION_COLS = ("x", "lane", "name", "key", "explanation", "first_seq", "seq")
CLIENT_COLORS = ["#08519c", "#a63603", "#006d2c", "#54278f", "#7f2704"]


#: Descriptions kept for reuse by a timeline (``TimelineModel._describe``).
_DESCRIBED = 200_000


class TimelineModel:
    """Incremental timeline data from trace rows."""

    def __init__(self, keys: Iterable[str] | None = None, view: str = "logical",
                 max_key_lanes: int = 8, since: int = 0):
        if view not in ("logical", "wall"):
            raise ValueError(f"view must be 'logical' or 'wall', not {view!r}")
        self.keys = set(keys) if keys is not None else None
        self.view = view
        self.since = since  # events before this seq are not drawn
        self.max_key_lanes = max_key_lanes
        self.lanes: list[str] = []
        self._lane_ids: dict[str, int] = {}
        self.lane_groups: list[int] = []  # 0 actors, 1 channels, 2 keys
        self.gone: dict[str, str] = {}  # actors the scheduler removed (worker.removed) -> why
        self.lanes_changed = False
        self.events = Columns(EVENT_COLS)
        self.messages = Columns(MESSAGE_COLS)
        self.states = Columns(STATE_COLS)
        self.refcounts = Columns(REFCOUNT_COLS)
        self.violations = Columns(VIOLATION_COLS)
        self._sent: dict[int, tuple] = {}  # msg_id -> (x, sender lane, chan lane, op, keys, seq)
        self._open_state: dict[str, tuple[float, str]] = {}
        self._open_refcount: dict[tuple[str, str], tuple[float, int]] = {}
        self._key_lanes: dict[str, int] = {}
        self._clients: dict[str, int] = {}
        self._first_seq = -1
        self._x = array("d")  # x of every seq seen, to place violations on their first event
        self._lane_by_seq = array("l")
        self.seen_keys: dict[str, None] = {}  # every key, in order of appearance
        self._cells: dict[str, str] = {}
        #: (kind, an event's extra) -> its description: see ``_describe``.
        self._described: dict[tuple[str, tuple], str] = {}
        self.last_x = 0.0
        self.next_seq = since  # one past the last row consumed

    # -- lanes ------------------------------------------------------------------------

    def lane(self, name: str, group: int) -> int:
        lane = self._lane_ids.get(name)
        if lane is None:
            lane = self._lane_ids[name] = len(self.lanes)
            self.lanes.append(name)
            self.lane_groups.append(group)
            self.lanes_changed = True
        return lane

    def label(self, lane: int) -> str:
        """A lane's label: its name, and "(gone)" for a worker the scheduler removed."""
        name = self.lanes[lane]
        return name + GONE if name in self.gone else name

    def lane_order(self) -> list[int]:
        """Lane ids top to bottom: clients, scheduler, workers, channels, keys."""
        def rank(i: int) -> tuple:
            name, group = self.lanes[i], self.lane_groups[i]
            kind = name.split(":", 1)[0]
            order = {"client": 0, "scheduler": 1, "worker": 2, "checks": 3}.get(kind, 4)
            return (group, order if group == 0 else 0, i)

        return sorted(range(len(self.lanes)), key=rank)

    def lane_y(self) -> list[float]:
        """y of each lane id (top lane highest)."""
        order = self.lane_order()
        y = [0.0] * len(order)
        for pos, lane in enumerate(order):
            y[lane] = float(len(order) - pos)
        return y

    def _key_lane(self, key: str) -> int | None:
        lane = self._key_lanes.get(key)
        if lane is None:
            if self.keys is None and len(self._key_lanes) >= self.max_key_lanes:
                return None
            lane = self._key_lanes[key] = self.lane(f"key {key}", 2)
        return lane

    def _shown(self, key: str | None, keys: tuple = ()) -> bool:
        if self.keys is None:
            return True
        return (key is not None and key in self.keys) or any(k in self.keys for k in keys)

    # -- consuming rows ----------------------------------------------------------------------

    def add_events(self, events: Iterable[Event]) -> None:
        # Runs of consecutive events go in as one add_rows call each (its set-up is per call).
        start, rows = 0, []
        for e in events:
            if rows and e.seq != start + len(rows):
                self.add_rows(start, rows)
                rows = []
            if not rows:
                start = e.seq
            rows.append((*e[1:EXTRA + 1], *e.data))
        if rows:
            self.add_rows(start, rows)

    def add_rows(self, start: int, rows: Sequence[tuple]) -> None:
        """Take in trace rows, the first of them event ``start``: every row gets its x; its
        kind says what else it draws (``_ROWS``: a message's send and receipt make one arrow,
        a violation marks the event it names; every other kind is a marker on its actor's
        lane, and ``_KEY_LANE`` says what it draws on its key's lane).

        One loop over the rows with what it reads bound once, not a call per row: the pump
        takes in every row of a live trace, and ``%timeline`` every row of a trace of a
        40,000-task map (three quarters of a million) at once.
        """
        if start < self.since:
            rows, start = rows[self.since - start:], self.since
        if not rows:
            return
        if self._first_seq < 0:
            self._first_seq = start
        logical = self.view == "logical"
        put_x, put_lane = self._x.append, self._lane_by_seq.append
        seen, lane_ids, lane, keys = self.seen_keys, self._lane_ids, self.lane, self.keys
        add_event, describe, cell_text = self.events.add, self._describe, self._cell_text
        x = self.last_x
        for seq, row in enumerate(rows, start):
            x = float(seq) if logical else row[T] / 1e6
            put_x(x)
            kind, key = row[KIND], row[KEY]
            if key is not None and key not in seen:
                seen[key] = None
            special = _ROWS.get(kind)
            if special is not None:
                special(self, seq, row, x)
                continue
            if kind == "network.drained":
                put_lane(-1)
                continue  # hidden: only its x
            actor = row[ACTOR]
            at = lane_ids.get(actor)
            if at is None:
                at = lane(actor, 0)
            put_lane(at)
            if kind == "worker.removed":  # before the key filter: a lane's label says it is gone
                # Its lane is drawn even in a window that starts after its last event.
                worker = row[_GONE_WORKER]
                self.gone[worker] = row[_GONE_REASON]
                lane(worker, 0)
                self.lanes_changed = True
            if keys is not None and not self._shown(key):
                continue
            cell = row[CELL]
            add_event(x, at, kind, seq, key, describe(kind, row[EXTRA:]),
                      cell_text(cell) if cell else "")
            if key is not None:
                on_key = _KEY_LANE.get(kind)
                if on_key is not None:
                    on_key(self, key, row, x)
        self.last_x = x
        self.next_seq = start + len(rows)

    def add_row(self, seq: int, row: tuple) -> None:
        """Take in one trace row (see :meth:`add_rows`)."""
        self.add_rows(seq, (row,))

    def _sent_row(self, seq: int, row: tuple, x: float) -> None:
        """A send: remembered until its receipt draws the arrow."""
        keys = row[MSG_KEYS]
        for k in keys:
            self.seen_keys.setdefault(k, None)
        lane = self.lane(row[ACTOR], 0)
        self._lane_by_seq.append(lane)
        if self._shown(row[KEY], keys):
            self._sent[row[MSG_ID]] = (x, lane, row[CHANNEL], row[OP], keys, seq)

    def _received_row(self, seq: int, row: tuple, x: float) -> None:
        """A receipt: the arrow from its send, and the bar on its channel's lane."""
        actor, msg_id = row[ACTOR], row[MSG_ID]
        lane = self.lane(actor, 0)
        self._lane_by_seq.append(lane)
        sent = self._sent.pop(msg_id, None)
        if sent is not None:
            x0, lane0, channel, op, keys, seq0 = sent
            sender = self.lanes[lane0]
            chan = self.lane(lane_of_channel(channel, sender, actor), 1)
            self.messages.add(x0, x, lane0, lane, chan, op, msg_id, ",".join(keys[:4]),
                              f"#{msg_id} {op} {sender} → {actor} on {channel}", seq0, seq)

    def _violation_row(self, seq: int, row: tuple, x: float) -> None:
        """Drawn on the event that broke the invariant, not on a lane of its own."""
        self._lane_by_seq.append(-1)
        key = row[KEY]
        name, first_seq, client, explanation = (row[i] for i in _VIOLATION)
        if not self._shown(key):
            return
        i = first_seq - self._first_seq
        if 0 <= i < len(self._lane_by_seq) and self._lane_by_seq[i] >= 0:
            fx, flane = self._x[i], self._lane_by_seq[i]
        else:  # the first event was dropped from the log: mark it on the client's lane
            fx, flane = x, self.lane(client or "scheduler", 0)
        self.violations.add(fx, flane, name, key, explanation, first_seq, seq)

    # What an event draws on its key's lane: the scheduler's state, or a client's refcount.

    def _transition(self, key: str, row: tuple, x: float) -> None:
        self._state_change(key, x, row[_FINISH])

    def _registered(self, key: str, row: tuple, x: float) -> None:
        self._state_change(key, x, "memory")

    def _desired(self, key: str, row: tuple, x: float) -> None:
        if row[_CREATED_TASK]:
            self._state_change(key, x, "ghost")

    def _refcount(self, key: str, row: tuple, x: float) -> None:
        self._refcount_change(key, row[ACTOR], x, row[_REFS_AFTER])

    def _state_change(self, key: str, x: float, state: str) -> None:
        lane = self._key_lane(key)
        if lane is None:
            return
        prev = self._open_state.pop(key, None)
        if prev is not None:
            self.states.add(prev[0], x, lane, prev[1], STATE_COLORS.get(prev[1], DEFAULT_COLOR), key)
        if state != "forgotten":
            self._open_state[key] = (x, state)

    def _refcount_change(self, key: str, client: str, x: float, after: int) -> None:
        lane = self._key_lane(key)
        if lane is None:
            return
        color = CLIENT_COLORS[self._clients.setdefault(client, len(self._clients)) % len(CLIENT_COLORS)]
        prev = self._open_refcount.pop((key, client), None)
        before_off = _offset(prev[1]) if prev else _offset(0)
        if prev is not None:
            self.refcounts.add(prev[0], x, lane, before_off, before_off, client, color)
        self.refcounts.add(x, x, lane, before_off, _offset(after), client, color)
        self._open_refcount[(key, client)] = (x, after)

    def _describe(self, kind: str, extra: tuple) -> str:
        """``events.describe``, once per event extra: most events say what many others say
        (a graph's tasks' transitions, ``waiting → processing`` by one stimulus), and
        describing each of a 40,000-task map's 560,000 markers was a quarter of building its
        timeline.  Known by kind and value: an equal value of another type (``1`` for
        ``True``) would read as the first one seen, and the recorders give each field one
        type.  An unhashable extra (a set a recorder passed) is described
        each time.  The table is emptied past :data:`_DESCRIBED` entries."""
        described = self._described
        try:
            text = described.get((kind, extra))
        except TypeError:
            return ev.describe(kind, extra)
        if text is None:
            if len(described) >= _DESCRIBED:
                described.clear()
            text = described[(kind, extra)] = ev.describe(kind, extra)
        return text

    def _cell_text(self, cell: str) -> str:
        """``file:line  source`` — where the user's call was, and what it said."""
        text = self._cells.get(cell)
        if text is None:
            line = source_line(cell)
            text = self._cells[cell] = f"{cell}  {line}" if line else cell
        return text

    # -- what is still open, drawn up to the latest event ---------------------------------------

    def pending(self) -> dict[str, list[Any]]:
        cols: dict[str, list[Any]] = {"x0": [], "x1": [], "lane": [], "op": [], "desc": []}
        for msg_id, (x0, lane0, channel, op, keys, _seq) in self._sent.items():
            cols["x0"].append(x0)
            cols["x1"].append(self.last_x)
            cols["lane"].append(lane0)
            cols["op"].append(op)
            cols["desc"].append(f"#{msg_id} {op} in flight on {channel} ({','.join(keys[:4])})")
        return cols

    def open_states(self) -> dict[str, list[Any]]:
        cols: dict[str, list[Any]] = {n: [] for n in STATE_COLS}
        for key, (left, state) in self._open_state.items():
            lane = self._key_lanes.get(key)
            if lane is None:
                continue
            for name, value in zip(STATE_COLS, (left, self.last_x, lane, state,
                                                 STATE_COLORS.get(state, DEFAULT_COLOR), key)):
                cols[name].append(value)
        return cols

    def open_refcounts(self) -> dict[str, list[Any]]:
        cols: dict[str, list[Any]] = {n: [] for n in REFCOUNT_COLS}
        for (key, client), (x0, count) in self._open_refcount.items():
            lane = self._key_lanes[key]
            color = CLIENT_COLORS[self._clients[client] % len(CLIENT_COLORS)]
            for name, value in zip(REFCOUNT_COLS, (x0, self.last_x, lane, _offset(count),
                                                    _offset(count), client, color)):
                cols[name].append(value)
        return cols


#: The kinds of row that are not a marker on their actor's lane, and how each is taken in.
_ROWS = {"msg.sent": TimelineModel._sent_row, "msg.received": TimelineModel._received_row,
         "violation": TimelineModel._violation_row}
#: What a marker's event also draws on its key's lane.
_KEY_LANE = {"transition": TimelineModel._transition,
             "scatter.registered": TimelineModel._registered,
             "desire.applied": TimelineModel._desired,
             "refcount.inc": TimelineModel._refcount, "refcount.dec": TimelineModel._refcount}


def _offset(refcount: int) -> float:
    """Where a refcount sits inside its key's lane: 0 at the bottom, 3+ near the top."""
    return -0.35 + 0.2 * min(refcount, 3)
