"""The live timeline: a bokeh figure inside ipywidgets, fed by the trace.

The widget never touches an actor.  It subscribes to the trace; the
subscription only queues batches (cheap, on whatever thread flushed), and a
small pump thread turns them into bokeh updates at most ``rate`` times a
second — so a loop generating thousands of events costs the cluster a deque
append per batch, and the front end gets a few patches a second instead of
one per event.

With a manual network, the widget also shows the in-flight messages with
buttons to deliver the next, the selected or all of them: the only place a
view calls into the cluster, and only through its public driver API.
"""

from __future__ import annotations

import threading
import weakref
from collections import deque
from typing import TYPE_CHECKING, Any

import ipywidgets as w
import numpy as np
from bokeh.models import (
    Arrow,
    ColumnDataSource,
    FixedTicker,
    HoverTool,
    Range1d,
    VeeHead,
)
from bokeh.plotting import figure

from ..trace import Batch, Trace
from .timeline_model import TimelineModel

if TYPE_CHECKING:
    from ..cluster import Cluster

_TOOLS = "xpan,xwheel_zoom,xbox_zoom,reset,save"


def _with_y(cols: dict[str, list[Any]], y: np.ndarray, lanes: dict[str, str]) -> dict[str, Any]:
    """Column data for bokeh: lists as arrays, each lane column joined by its y."""
    data: dict[str, Any] = {}
    for name, values in cols.items():
        data[name] = np.asarray(values, dtype=float) if name.startswith(("x", "left", "right", "off")) \
            else list(values)
    for lane_col, y_col in lanes.items():
        ids = np.asarray(cols[lane_col], dtype=np.int64)
        data[y_col] = y[ids] if len(ids) else np.zeros(0)
    return data


_Y = {
    "events": {"lane": "y"},
    "messages": {"lane0": "y0", "lane1": "y1", "chan": "yc"},
    "pending": {"lane": "y"},
    "states": {"lane": "y"},
    "refcounts": {"lane": "y"},
    "violations": {"lane": "y"},
}


class TimelineFigure:
    """The bokeh figure and its sources, kept in step with a :class:`TimelineModel`."""

    def __init__(self, model: TimelineModel, width: int = 960, height: int | None = None,
                 title: str = ""):
        self.model = model
        self.sources = {name: ColumnDataSource(name=name) for name in _Y}
        self.sources["open_states"] = ColumnDataSource(name="open_states")
        self.sources["open_refcounts"] = ColumnDataSource(name="open_refcounts")
        x_label = "event seq (logical order)" if model.view == "logical" else "time (ms)"
        self.fig = figure(width=width, height=height or 420, tools=_TOOLS, title=title,
                          x_axis_label=x_label, y_range=Range1d(0, 1), name="timeline",
                          sizing_mode="stretch_width", output_backend="canvas")
        self.fig.toolbar.logo = None
        self.fig.yaxis.ticker = FixedTicker(ticks=[])
        self.fig.ygrid.grid_line_alpha = 0.3
        self._draw()
        self.refresh()

    def _draw(self) -> None:
        f, s = self.fig, self.sources
        for src in ("states", "open_states"):
            f.quad(left="left", right="right", bottom="y0", top="y1", fill_color="color",
                   line_color=None, fill_alpha=0.55, source=s[src], name=f"{src}_glyph")
        for src in ("refcounts", "open_refcounts"):
            f.segment(x0="x0", x1="x1", y0="ya", y1="yb", line_color="color", line_width=2,
                      source=s[src], name=f"{src}_glyph")
        chan = f.segment(x0="x0", x1="x1", y0="yc", y1="yc", line_color="color", line_width=6,
                         line_alpha=0.6, source=s["messages"], name="channel_bars_glyph")
        body = f.segment(x0="x0", x1="x1", y0="y0", y1="y1", line_color="color", line_width=1.5,
                         source=s["messages"], name="messages_glyph")
        f.add_layout(Arrow(source=s["messages"], x_start="x0", y_start="y0", x_end="x1", y_end="y1",
                           line_color="color", line_width=1.5,
                           end=VeeHead(size=7, fill_color="color", line_color="color")))
        pend = f.segment(x0="x0", x1="x1", y0="y", y1="y", line_color="color", line_width=2,
                         line_dash="dashed", source=s["pending"], name="pending_glyph")
        marks = f.scatter(x="x", y="y", color="color", size=6, source=s["events"], name="events_glyph")
        viol = f.scatter(x="x", y="y", marker="x", size=22, line_width=4, color="#e31a1c",
                         source=s["violations"], name="violations_glyph")
        f.add_tools(
            HoverTool(renderers=[marks], tooltips=[("event", "@seq @actor"), ("", "@desc"),
                                                   ("key", "@key"), ("line", "@cell")]),
            HoverTool(renderers=[body, chan], tooltips=[("message", "@desc"), ("keys", "@keys"),
                                                        ("sent/recv", "@seq0 → @seq1")]),
            HoverTool(renderers=[pend], tooltips=[("", "@desc")]),
            HoverTool(renderers=[viol], tooltips=[("VIOLATION", "@name on @key"),
                                                  ("first event", "@first_seq"),
                                                  ("why", "@explanation")]),
        )

    def _lanes(self) -> np.ndarray:
        y = np.asarray(self.model.lane_y(), dtype=float)
        names = self.model.lanes
        self.fig.yaxis.ticker.ticks = [float(v) for v in y]
        self.fig.yaxis.major_label_overrides = {float(y[i]): names[i] for i in range(len(names))}
        self.fig.y_range.start, self.fig.y_range.end = 0.4, len(names) + 0.6
        self.fig.height = max(220, 40 + 26 * len(names))
        self.model.lanes_changed = False
        return y

    def _data(self, name: str, cols: dict[str, list[Any]], y: np.ndarray) -> dict[str, Any]:
        data = _with_y(cols, y, _Y.get(name, {"lane": "y"}))
        if name in ("states", "open_states"):
            data["y0"], data["y1"] = data["y"] - 0.42, data["y"] + 0.42
        if name in ("refcounts", "open_refcounts"):
            data["ya"], data["yb"] = data["y"] + data["off0"], data["y"] + data["off1"]
        return data

    def refresh(self) -> None:
        """Replace every source's data (after a new lane, or the first time)."""
        y = self._lanes()
        m = self.model
        for name in ("events", "messages", "states", "refcounts", "violations"):
            cols = getattr(m, name)
            self.sources[name].data = self._data(name, cols.cols, y)
            cols.taken = len(cols)
        self._open(y)

    def update(self) -> None:
        """Stream the rows added since the last update; redraw what is still open."""
        if self.model.lanes_changed:
            self.refresh()
            return
        y = np.asarray(self.model.lane_y(), dtype=float)
        m = self.model
        for name in ("events", "messages", "states", "refcounts", "violations"):
            cols = getattr(m, name)
            if cols.taken < len(cols):
                new = {k: v[cols.taken:] for k, v in cols.cols.items()}
                self.sources[name].stream(self._data(name, new, y))
                cols.taken = len(cols)
        self._open(y)

    def _open(self, y: np.ndarray) -> None:
        m = self.model
        self.sources["pending"].data = self._data("pending", m.pending(), y)
        self.sources["open_states"].data = self._data("open_states", m.open_states(), y)
        self.sources["open_refcounts"].data = self._data("open_refcounts", m.open_refcounts(), y)


class _Pump:
    """Moves queued trace batches into the figure, at most ``rate`` times a second."""

    def __init__(self, owner: Timeline, rate: float):
        self.owner = weakref.ref(owner)
        self.interval = 1.0 / rate
        self.wake = threading.Event()
        self.stop_event = threading.Event()
        self.updates = 0
        self.thread = threading.Thread(target=self.run, name="jupyter-refs-timeline", daemon=True)
        self.thread.start()

    def run(self) -> None:
        while True:
            self.wake.wait()
            self.wake.clear()
            if self.stop_event.is_set():
                return
            owner = self.owner()
            if owner is None:
                return
            owner._apply_pending()
            self.updates += 1
            del owner
            if self.stop_event.wait(self.interval):  # throttle: at most `rate` updates a second
                return

    def stop(self) -> None:
        self.stop_event.set()
        self.wake.set()


class Timeline:
    """A live timeline of a cluster's (or a trace's) events.

    >>> Timeline(cluster)                       # every key, logical order, live
    >>> Timeline(cluster, keys=[x.key], view="wall")
    """

    def __init__(self, source: Cluster | Trace, keys: list[str] | None = None,
                 view: str = "logical", live: bool = True, rate: float = 8.0,
                 max_key_lanes: int = 8, title: str | None = None):
        self.trace: Trace = source if isinstance(source, Trace) else source.trace
        self.cluster = None if isinstance(source, Trace) else source
        self.rate = rate
        self._keys = list(keys) if keys else None
        self._max_key_lanes = max_key_lanes
        self._title = title if title is not None else self._default_title()
        self._queue: deque[Batch] = deque()
        self._lock = threading.Lock()
        self._pump: _Pump | None = None
        self._unsubscribe = self.trace.subscribe(self._on_batch, from_start=True)
        self.trace.flush()
        self.model = TimelineModel(self._keys, view, max_key_lanes)
        self._drain()
        self.figure = TimelineFigure(self.model, title=self._title)
        self.widget = self._build_widget()
        if live:
            self._pump = _Pump(self, rate)
            self._pump.wake.set()  # catch up with whatever arrived while building

    def _default_title(self) -> str:
        if self.cluster is None:
            return "trace"
        c = self.cluster
        return f"protocol={c.variant.name} network={c.network_name}"

    # -- data --------------------------------------------------------------------------

    def _on_batch(self, batch: Batch) -> None:
        """Runs on whichever thread flushed the trace: queue, wake the pump, return."""
        self._queue.append(batch)
        pump = self._pump
        if pump is not None:
            pump.wake.set()

    def _drain(self) -> bool:
        got = False
        queue = self._queue
        while queue:
            batch = queue.popleft()
            self.model.add_rows(batch.start, batch.rows)
            got = True
        return got

    def _apply_pending(self) -> None:
        with self._lock:
            changed = self._drain()
            doc = self.figure.fig.document
            if doc is not None:
                doc.hold("combine")
            try:
                if changed:
                    self.figure.update()
                    self._refresh_keys()
                if self._step is not None:
                    self._refresh_in_flight()
            finally:
                if doc is not None:
                    doc.unhold()

    def update(self) -> None:
        """Bring the figure up to date now (the pump does this by itself when live)."""
        self.trace.flush()
        self._apply_pending()

    # -- widget ------------------------------------------------------------------------

    def _build_widget(self) -> w.VBox:
        from jupyter_bokeh import BokehModel

        self._bokeh = BokehModel(self.figure.fig)
        self._key_filter = w.Combobox(placeholder="all keys", description="key",
                                      ensure_option=False, layout=w.Layout(width="360px"))
        self._key_filter.observe(self._on_key, names="value")
        self._view = w.ToggleButtons(options=[("logical order", "logical"), ("wall time", "wall")],
                                     value=self.model.view)
        self._view.observe(self._on_view, names="value")
        self._status = w.HTML()
        self._refresh_keys()
        rows = [w.HBox([self._key_filter, self._view]), self._bokeh, self._status]
        self._step = None
        if self.cluster is not None and not self.cluster.policy.autonomous:
            self._step = self._step_controls()
            rows.insert(2, self._step)
        return w.VBox(rows)

    def _refresh_keys(self) -> None:
        keys = list(self.model.seen_keys)
        if len(keys) != len(self._key_filter.options):
            self._key_filter.options = keys[:500]
        m = self.model
        self._status.value = (f"<small>{len(m.events)} events, {len(m.messages)} messages, "
                              f"{len(m.violations)} violations shown; trace: {len(self.trace)} "
                              f"events, {self.trace.dropped} dropped</small>")

    def _rebuild(self, keys: list[str] | None, view: str) -> None:
        with self._lock:
            self._queue.clear()
            self.model = TimelineModel(keys, view, self._max_key_lanes)
            self.model.add_events(self.trace.events())
            self.figure.model = self.model
            self.figure.fig.xaxis.axis_label = ("event seq (logical order)" if view == "logical"
                                                else "time (ms)")
            self.figure.refresh()

    def _on_key(self, change: dict[str, Any]) -> None:
        value = (change["new"] or "").strip()
        if value and value not in self.model.seen_keys:
            return  # still typing
        self._keys = [value] if value else None
        self._rebuild(self._keys, self.model.view)

    def _on_view(self, change: dict[str, Any]) -> None:
        self._rebuild(self._keys, change["new"])

    # -- step controls (manual network) ---------------------------------------------------------

    def _step_controls(self) -> w.VBox:
        self._in_flight = w.Select(options=[], rows=6, layout=w.Layout(width="600px"),
                                   description="in flight")
        buttons = []
        for label, action in (("deliver next", self._deliver_next),
                              ("deliver selected", self._deliver_selected),
                              ("deliver all", self._deliver_all)):
            b = w.Button(description=label)
            b.on_click(action)
            buttons.append(b)
        self._deliver_next_button, self._deliver_selected_button, self._deliver_all_button = buttons
        self._step_status = w.HTML()
        self._refresh_in_flight()
        return w.VBox([self._in_flight, w.HBox(buttons), self._step_status])

    def _refresh_in_flight(self) -> None:
        options = [(str(m), m.msg_id) for m in self.cluster.in_flight]
        if options != list(self._in_flight.options):
            self._in_flight.options = options

    def _act(self, what: str, call: Any) -> None:
        try:
            delivered = call()
        except Exception as exc:  # noqa: BLE001 - shown to the user, the cluster is unchanged
            self._step_status.value = f"<span style='color:#b00'>{what}: {exc}</span>"
        else:
            n = len(delivered) if isinstance(delivered, list) else delivered
            self._step_status.value = f"<small>{what}: {n} delivered</small>"
        self.update()

    def _deliver_next(self, _button: Any = None) -> None:
        self._act("deliver next", lambda: self.cluster.step())

    def _deliver_selected(self, _button: Any = None) -> None:
        msg_id = self._in_flight.value
        if msg_id is None:
            self._step_status.value = "<small>select a message first</small>"
            return
        self._act(f"deliver #{msg_id}", lambda: [self.cluster.deliver(msg_id)])

    def _deliver_all(self, _button: Any = None) -> None:
        self._act("deliver all", lambda: self.cluster.run_until_idle())

    # -- display and lifetime ----------------------------------------------------------------------

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        from .resources import ensure_bokehjs

        ensure_bokehjs()
        return self.widget._repr_mimebundle_(**kwargs)

    def close(self) -> None:
        """Stop following the trace and close the widgets."""
        if self._pump is not None:
            self._pump.stop()
        self._unsubscribe()
        self.widget.close()

    @property
    def updates_sent(self) -> int:
        return self._pump.updates if self._pump is not None else 0
