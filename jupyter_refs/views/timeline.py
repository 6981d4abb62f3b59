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

import html
import itertools
import threading
import time
import weakref
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import ipywidgets as w
import numpy as np
from bokeh.core.serialization import Serializer
from bokeh.models import ColumnDataSource, FixedTicker, HoverTool, Range1d
from bokeh.plotting import figure
from bokeh.transform import linear_cmap

from .. import arguments
from ..trace import Batch, Trace, trace_source
from .pump import LiveView, Pump, not_following
from .refs import focus_line
from .saved import MIME, trace_bundle
from .svg import SVG_MIME, picture
from .timeline_model import DEFAULT_COLOR, KIND_COLORS, OP_COLORS, TimelineModel

if TYPE_CHECKING:
    from ..handle import ClusterHandle

_IDS = itertools.count(1)
#: Every timeline of this kernel that is still open: the JupyterLab sidebar filters them all
#: to a key, and keeps their saved traces up to date (``views/lab.py``).
OPEN_TIMELINES: weakref.WeakSet[Timeline] = weakref.WeakSet()

_TOOLS = "xpan,xwheel_zoom,xbox_zoom,reset,save"
_SLICE_S = 0.001  # how long the pump works before letting other threads run


class _Text(list):
    """A column of strings (or None), sent to the page as the list it is.

    Bokeh's serializer encodes a plain list row by row through a chain of type tests; a
    trace of 40,000 tasks has half a million rows, and that took longer than building
    the rest of the figure.  Strings and None need no encoding: JSON takes them as they are
    (anything else, as bokeh would send it).
    """


Serializer.register(_Text, lambda column, serializer: [
    v if v is None or type(v) is str else serializer.encode(v) for v in column])


class _Box(w.VBox):
    """The timeline's widget.  Its text form (``text/plain`` beside the widget) is the
    timeline's one line, not ipywidgets' repr of every trait: that repr holds the figure's
    whole document, and on a 40,000-task trace it took seconds, only to be cut at 110
    characters."""

    #: The timeline's own text, held weakly: the timeline holds its widget.
    text: weakref.WeakMethod | None = None

    def __repr__(self) -> str:
        text = self.text() if self.text is not None else None
        return text() if text is not None else "<jupyter_refs timeline>"


def _with_y(cols: dict[str, list[Any]], y: np.ndarray, lanes: dict[str, str]) -> dict[str, Any]:
    """Column data for bokeh: numbers as arrays (sent as binary), lane ids replaced by y.

    Every string column costs per row to serialize, so only what a glyph or a
    hover uses is sent.
    """
    data: dict[str, Any] = {}
    for name, values in cols.items():
        coded = _CODED.get(name)
        if coded is not None:  # colour by a number: sent as binary, not as a string per row
            column, codes = coded
            data[column] = np.fromiter((codes.get(v, 0) for v in values), dtype=float,
                                       count=len(values))
        elif name in lanes:
            ids = np.asarray(values, dtype=np.int64)
            data[lanes[name]] = y[ids] if len(ids) else np.zeros(0)
        elif name in _TEXT:
            data[name] = _Text(values)  # a copy: bokeh's stream() extends list columns in place
        else:
            data[name] = np.asarray(values, dtype=float)
    return data


#: The violation's hover: the explanation is a paragraph, so it wraps at a width that fits
#: beside a cross anywhere on the plot (a table row would run off the plot's right edge).
VIOLATION_TOOLTIP = """
<div class="jupyter-refs-violation" style="max-width: 360px; white-space: normal;
     overflow-wrap: anywhere; font-size: 12px; line-height: 1.35">
  <div><b style="color: #e31a1c">VIOLATION</b> @name on <code>@key</code></div>
  <div style="color: #57606a">first event @first_seq</div>
  <div style="margin-top: 4px">@explanation</div>
</div>
"""

_TEXT = {"key", "desc", "cell", "keys", "state", "client", "color", "name", "explanation"}
_KIND_PALETTE = [DEFAULT_COLOR, *KIND_COLORS.values()]
_OP_PALETTE = [DEFAULT_COLOR, *OP_COLORS.values()]
_CODED = {
    "kind": ("kind_id", {k: i for i, k in enumerate(KIND_COLORS, 1)}),
    "op": ("op_id", {k: i for i, k in enumerate(OP_COLORS, 1)}),
}

_Y = {
    "events": {"lane": "y"},
    "messages": {"lane0": "y0", "lane1": "y1", "chan": "yc"},
    "pending": {"lane": "y"},
    "states": {"lane": "y"},
    "refcounts": {"lane": "y"},
    "violations": {"lane": "y"},
}
#: What the chain's thick message segments need (``why_messages``).
_WHY_MESSAGE_COLUMNS = ("x0", "x1", "y0", "y1")


class TimelineFigure:
    """The bokeh figure and its sources, kept in step with a :class:`TimelineModel`."""

    def __init__(self, model: TimelineModel, width: int = 960, height: int | None = None,
                 title: str = "", output_backend: str = "canvas", highlight: Any = None):
        self.model = model
        #: Event seqs drawn ringed (a loss's causal chain, ``%timeline --why KEY``).
        self.highlight = set(highlight or ())
        self.sources = {name: ColumnDataSource(name=name) for name in _Y}
        # The chain's sources start with the columns their glyphs name, empty: bokeh
        # validates every glyph against its source when the figure is saved (E-1001).
        self.sources["why"] = ColumnDataSource({"x": [], "y": []}, name="why")
        self.sources["why_messages"] = ColumnDataSource(
            {k: [] for k in _WHY_MESSAGE_COLUMNS}, name="why_messages")
        self.sources["open_states"] = ColumnDataSource(name="open_states")
        self.sources["open_refcounts"] = ColumnDataSource(name="open_refcounts")
        self._last_open: dict[str, dict[str, list[Any]]] = {}
        x_label = "event seq (logical order)" if model.view == "logical" else "time (ms)"
        self.fig = figure(width=width, height=height or 420, tools=_TOOLS, title=title,
                          x_axis_label=x_label, y_range=Range1d(0, 1), name="timeline",
                          sizing_mode="stretch_width", output_backend=output_backend)
        self.fig.toolbar.logo = None
        self.fig.yaxis.ticker = FixedTicker(ticks=[])
        self.fig.ygrid.grid_line_alpha = 0.3
        self._draw()
        self.refresh()

    def _draw(self) -> None:
        f, s = self.fig, self.sources
        # Bins centred on the integer codes: code i gets palette[i].
        op_color = linear_cmap("op_id", _OP_PALETTE, -0.5, len(_OP_PALETTE) - 0.5)
        kind_color = linear_cmap("kind_id", _KIND_PALETTE, -0.5, len(_KIND_PALETTE) - 0.5)
        for src in ("states", "open_states"):
            f.quad(left="left", right="right", bottom="y0", top="y1", fill_color="color",
                   line_color=None, fill_alpha=0.55, source=s[src], name=f"{src}_glyph")
        for src in ("refcounts", "open_refcounts"):
            f.segment(x0="x0", x1="x1", y0="ya", y1="yb", line_color="color", line_width=2,
                      source=s[src], name=f"{src}_glyph")
        chan = f.segment(x0="x0", x1="x1", y0="yc", y1="yc", line_color=op_color, line_width=6,
                         line_alpha=0.6, source=s["messages"], name="channel_bars_glyph")
        body = f.segment(x0="x0", x1="x1", y0="y0", y1="y1", line_color=op_color, line_width=1.5,
                         source=s["messages"], name="messages_glyph")
        # Arrowheads as markers at the receiving end (up, down, or along the lane): an
        # Arrow annotation per message makes the browser three times slower to draw.
        f.scatter(x="x1", y="y1", marker="triangle", angle="angle", size=7, color=op_color,
                  source=s["messages"], name="heads_glyph")
        pend = f.segment(x0="x0", x1="x1", y0="y", y1="y", line_color=op_color, line_width=2,
                         line_dash="dashed", source=s["pending"], name="pending_glyph")
        marks = f.scatter(x="x", y="y", color=kind_color, size=6, source=s["events"],
                          name="events_glyph")
        viol = f.scatter(x="x", y="y", marker="x", size=22, line_width=4, color="#e31a1c",
                         source=s["violations"], name="violations_glyph")
        f.segment(x0="x0", x1="x1", y0="y0", y1="y1", line_color="#ff7f0e", line_width=5,
                  line_alpha=0.5, source=s["why_messages"], name="why_messages_glyph")
        f.scatter(x="x", y="y", marker="circle", size=16, fill_alpha=0, line_width=3,
                  line_color="#ff7f0e", source=s["why"], name="why_glyph")
        f.add_tools(
            HoverTool(renderers=[marks], tooltips=[("event", "@seq"), ("", "@desc"),
                                                   ("key", "@key"), ("line", "@cell")]),
            HoverTool(renderers=[body, chan], tooltips=[("message", "@desc"), ("keys", "@keys"),
                                                        ("sent/recv", "@seq0 → @seq1")]),
            HoverTool(renderers=[pend], tooltips=[("", "@desc")]),
            HoverTool(renderers=[viol], tooltips=VIOLATION_TOOLTIP),
        )

    def _lanes(self) -> np.ndarray:
        y = np.asarray(self.model.lane_y(), dtype=float)
        names = [self.model.label(i) for i in range(len(self.model.lanes))]
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
        if name == "messages":
            dy = data["y1"] - data["y0"]
            data["angle"] = np.where(dy > 0, 0.0, np.where(dy < 0, np.pi, -np.pi / 2))
        return data

    def refresh(self) -> None:
        """Replace every source's data (after a new lane, or the first time)."""
        y = self._lanes()
        m = self.model
        for name in ("events", "messages", "states", "refcounts", "violations"):
            cols = getattr(m, name)
            self.sources[name].data = self._data(name, cols.cols, y)
            cols.taken = len(cols)
        if self.highlight:
            self._highlight()
        self._open(y, force=True)

    def _highlight(self) -> None:
        """Ring the chain's events and thicken its messages (from the sources just set)."""
        chain = self.highlight
        ev = self.sources["events"].data
        rows = [i for i, seq in enumerate(ev.get("seq", ())) if int(seq) in chain]
        self.sources["why"].data = {"x": [float(ev["x"][i]) for i in rows],
                                    "y": [float(ev["y"][i]) for i in rows]}
        msg = self.sources["messages"].data
        rows = [i for i, (a, b) in enumerate(zip(msg.get("seq0", ()), msg.get("seq1", ())))
                if int(a) in chain or int(b) in chain]
        self.sources["why_messages"].data = {
            k: [float(msg[k][i]) for i in rows] for k in _WHY_MESSAGE_COLUMNS}

    def update(self, pause: Any = None, chunk: int = 1000, window: int | None = None) -> None:
        """Stream the rows added since the last update; redraw what is still open.

        ``pause()`` is called after every ``chunk`` rows, so a live caller can let
        other threads run before going on.  ``window`` keeps only the latest rows
        of each glyph kind on screen (violations are never dropped).
        """
        if self.model.lanes_changed:
            self.refresh()
            return
        y = np.asarray(self.model.lane_y(), dtype=float)
        m = self.model
        for name in ("events", "messages", "states", "refcounts", "violations"):
            cols = getattr(m, name)
            while cols.taken < len(cols):
                end = min(len(cols), cols.taken + chunk)
                new = {k: v[cols.taken:end] for k, v in cols.cols.items()}
                self.sources[name].stream(self._data(name, new, y),
                                          rollover=None if name == "violations" else window)
                cols.taken = end
                if pause is not None:
                    pause()
        self._open(y)

    def _open(self, y: np.ndarray, force: bool = False) -> None:
        """Redraw what is still open (in flight, current state, current refcount) if it changed."""
        m = self.model
        for name, cols in (("pending", m.pending()), ("open_states", m.open_states()),
                           ("open_refcounts", m.open_refcounts())):
            if force or cols != self._last_open.get(name):
                self._last_open[name] = cols
                self.sources[name].data = self._data(name, cols, y)


def _batched_bokeh_model(fig: Any, lock: Any) -> Any:
    """jupyter_bokeh's BokehModel, sending one PATCH-DOC per update instead of one per change,
    and the figure as it is now to a front end that asks for the whole state.

    An update streams rows into several sources; unbatched, each change is its
    own patch (three or four comm messages each), and their serialization is
    what a live timeline costs the kernel.  ``lock`` is held while updates change
    the figure.
    """
    from bokeh.core.serialization import Serializer
    from bokeh.protocol.messages.patch_doc import patch_doc
    from jupyter_bokeh import BokehModel

    class BatchedBokehModel(BokehModel):
        _held: list | None = None

        @contextmanager
        def batched(self) -> Iterator[None]:
            self._held = []
            try:
                yield
            finally:
                self.send_held()
                self._held = None

        def send_held(self) -> None:
            """Send what was batched so far as one patch (and keep batching)."""
            if self._held:
                events, self._held = self._held, []
                self._send_patch(events)

        def get_state(self, key: Any = None, drop_defaults: bool = False) -> dict[str, Any]:
            if key is None and self.comm is not None:
                # The whole state, for a front end that has no view yet (a reloaded page's
                # request_states).  jupyter_bokeh's render_bundle is the figure as it was
                # made — patches never touch it — so a reloaded page drew the timeline as
                # first shown, without the lanes and crosses added since: make it now.  Set
                # quietly: as a change it would also go out to every view, which re-renders.
                with lock:
                    self._trait_values["render_bundle"] = self._model_to_traits(self._model)
            return super().get_state(key, drop_defaults)

        def _document_patched(self, event: Any) -> None:
            if event.setter is self:
                return
            if self._held is not None:
                self._held.append(event)
            else:
                self._send_patch([event])

        def _send_patch(self, events: list) -> None:
            # Arrays inline (base64) rather than as binary buffers: jupyter_bokeh
            # sends every buffer as two more comm messages, and a live update
            # carries a dozen arrays — three messages beat thirty.
            doc = events[0].document
            serializer = Serializer(references=doc.models.synced_references, deferred=False)
            content = {"events": serializer.encode(events)}
            doc.models.flush_synced(lambda model: not serializer.has_ref(model))
            msg = patch_doc(patch_doc.create_header(), {}, content)
            self.send({"msg": "patch", "payload": msg.header_json})
            self.send({"msg": "patch", "payload": msg.metadata_json})
            self.send({"msg": "patch", "payload": msg.content_json})

    return BatchedBokehModel(fig)


class Timeline(LiveView):
    """A live timeline of a cluster's (or a trace's) events.

    >>> Timeline(cluster)                       # every key, logical order, live
    >>> Timeline(cluster, keys=[x.key], view="wall")
    """

    _view_name = "the live timeline"
    #: The model was started again (``_pull``): the figure must be redrawn whole.
    _redraw = False

    @property
    def _status_widget(self) -> Any:
        return self._status

    def __init__(self, source: ClusterHandle | Trace, keys: list[str] | None = None,
                 view: str = "logical", live: bool = True, rate: float = 6.0,
                 max_key_lanes: int = 8, title: str | None = None, live_window: int = 10_000,
                 since: int = 0, highlight: Any = None):
        trace_source(source)
        arguments.keys(keys)
        arguments.number(rate, "rate")
        self.trace: Trace = source if isinstance(source, Trace) else source.trace
        self.cluster: ClusterHandle | None = None if isinstance(source, Trace) else source
        #: Names this timeline's outputs, so a front end can refresh their saved trace.
        self.id = f"{time.time_ns():x}-{next(_IDS)}"
        #: How far the trace in this timeline's last displayed output goes (None: not shown).
        self.saved_until: int | None = None
        self.rate = rate
        #: While live, only the latest rows of each kind stay drawn, so the page keeps up
        #: with a fast loop; ``update()`` or a filter change redraws the whole trace.
        self.live_window = live_window
        self._keys = list(keys) if keys else None
        self._since = since
        self._max_key_lanes = max_key_lanes
        self._title = title if title is not None else self._default_title()
        self._queue: deque[Batch] = deque()
        self._lock = threading.RLock()
        self._pump: Pump | None = None
        #: Live, the trace hands every batch it flushes to the pump's queue.  Not live, nothing
        #: is queued (a queue nobody drains kept every row recorded after the timeline was
        #: made, past the trace's own bound): ``update()`` reads what the trace holds past the
        #: model's last row (``_pull``).
        self._live = live
        self._unsubscribe = (self.trace.subscribe(self._on_batch, from_start=True) if live
                             else not_following)
        self.trace.flush()
        self.model = TimelineModel(self._keys, view, max_key_lanes, since)
        self._drain()
        #: Event seqs ringed on the figure: a loss's causal chain (``%timeline --why KEY``).
        self.highlight = sorted(highlight or ())
        self.figure = TimelineFigure(self.model, title=self._title, highlight=self.highlight)
        self.widget = self._build_widget()
        if live:
            self._pump = Pump(self, rate, "jupyter-refs-timeline")
            self._pump.wake.set()  # catch up with whatever arrived while building
            self._follow_cells()
        OPEN_TIMELINES.add(self)

    def _default_title(self) -> str:
        return "trace" if self.cluster is None else self.cluster.title

    # -- data --------------------------------------------------------------------------

    def _on_batch(self, batch: Batch) -> None:
        """Runs on whichever thread flushed the trace: queue, wake the pump, return."""
        self._queue.append(batch)
        pump = self._pump
        if pump is not None:
            pump.wake.set()

    def _drain(self) -> bool:
        if not self._live:
            return self._pull()
        got = False
        queue = self._queue
        live = self._pump is not None
        slice_end = time.perf_counter() + _SLICE_S
        while queue:
            batch = queue.popleft()
            self.model.add_rows(batch.start, batch.rows)
            got = True
            if live and time.perf_counter() > slice_end:
                # Let the cluster's threads in: a live network is latency-bound, and a
                # view holding the GIL for a whole switch interval delays its deliveries.
                time.sleep(0)
                slice_end = time.perf_counter() + _SLICE_S
        return got

    def _pull(self) -> bool:
        """Not live: take in the rows the trace holds past this timeline's last.  If the trace
        dropped some of them meanwhile (it is bounded), the timeline starts again from what it
        holds, as a filter change does: a timeline's rows have no gaps."""
        model = self.model
        batch = self.trace.batch(model.next_seq)
        if not batch.rows:
            return False
        if batch.start > model.next_seq > self._since:  # rows dropped after the model's last
            model = self._new_model(self._keys, model.view)
            self._redraw = True
        model.add_rows(batch.start, batch.rows)
        return True

    def _new_model(self, keys: list[str] | None, view: str) -> TimelineModel:
        """An empty model of ``keys`` in ``view``, the one the figure draws from now on."""
        self.model = self.figure.model = TimelineModel(keys, view, self._max_key_lanes,
                                                       self._since)
        return self.model

    def apply_pending(self) -> None:
        with self._lock, self._bokeh.batched():
            if self._drain():
                self.figure.update(pause=self._pause, window=self.live_window)
                self._refresh_keys()
            if self._step is not None:
                self._refresh_in_flight()

    def _pause(self) -> None:
        """Between chunks of a live update: let the cluster's threads run."""
        time.sleep(0)

    def update(self) -> None:
        """Bring the figure up to date now, redrawing the whole trace if a live window cut it."""
        self.trace.settle()
        self.trace.flush()
        self.apply_pending()
        if self._redraw or any(
                len(self.figure.sources[n].data.get("x", self.figure.sources[n].data.get("x0", [])))
                < len(getattr(self.model, n)) for n in ("events", "messages")):
            with self._lock, self._bokeh.batched():
                self._redraw = False
                self.figure.refresh()

    # -- widget ------------------------------------------------------------------------

    def _build_widget(self) -> w.VBox:
        self._bokeh = _batched_bokeh_model(self.figure.fig, self._lock)
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
        #: Called after each press of a deliver button (a game judges the trace then).
        self.after_delivery: list[Any] = []
        if self.cluster is not None and self.cluster.steppable:
            self._step = self._step_controls()
            rows.insert(2, self._step)
        box = _Box(rows)
        box.text = weakref.WeakMethod(self._text)
        return box

    def _text(self) -> str:
        m = self.model
        return (f"<jupyter_refs timeline of {self._title}: {len(m.events)} events, "
                f"{len(m.messages)} messages, {len(m.violations)} violations>")

    def _refresh_keys(self) -> None:
        keys = list(self.model.seen_keys)
        if len(keys) != len(self._key_filter.options):
            self._key_filter.options = keys[:500]
        m = self.model
        focus = focus_line(self.cluster.focused if self.cluster is not None else None)
        self._status.value = (f"<small>{len(m.events)} events, {len(m.messages)} messages, "
                              f"{len(m.violations)} violations shown; trace: {len(self.trace)} "
                              f"events, {self.trace.missing} dropped"
                              + (f"; {html.escape(focus)}" if focus else "") + "</small>")

    def _rebuild(self, keys: list[str] | None, view: str) -> None:
        with self._lock, self._bokeh.batched():
            self._queue.clear()
            batch = self.trace.batch(self._since)
            self._new_model(keys, view).add_rows(batch.start, batch.rows)
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

    def show_key(self, key: str | None) -> bool:
        """Show only ``key`` (None: every key), as typing it in the key box does.

        Returns whether the filter applied: a key this timeline has not seen is ignored.
        """
        if key is not None and key not in self.model.seen_keys:
            return False
        self._key_filter.value = key or ""
        return True

    # -- step controls (manual network) ---------------------------------------------------------

    def _step_controls(self) -> w.VBox:
        self._in_flight = w.Select(options=self._in_flight_options(), rows=6,
                                   layout=w.Layout(width="600px"), description="in flight")
        buttons = []
        for label, action in (("deliver next", self._deliver_next),
                              ("deliver selected", self._deliver_selected),
                              ("deliver all", self._deliver_all)):
            b = w.Button(description=label)
            b.on_click(action)
            buttons.append(b)
        self._deliver_next_button, self._deliver_selected_button, self._deliver_all_button = buttons
        self._step_status = w.HTML()
        return w.VBox([self._in_flight, w.HBox(buttons), self._step_status])

    def _in_flight_options(self) -> list[tuple[str, int]]:
        # The channel's kind with each message: a stream's messages go in the order sent,
        # an RPC's whenever (what a student delivering by hand must know).
        return [(f"{m}  · {'RPC' if m.channel.startswith('rpc:') else 'stream'}", m.msg_id)
                for m in self.cluster.in_flight]

    def _refresh_in_flight(self) -> None:
        options = self._in_flight_options()
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
        for hook in list(self.after_delivery):
            hook()

    def enable_delivery(self, on: bool) -> None:
        """Let the deliver buttons be pressed, or not (a game that is over)."""
        if self._step is None:
            return
        for b in (self._deliver_next_button, self._deliver_selected_button,
                  self._deliver_all_button):
            b.disabled = not on

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

    @property
    def drawn_until(self) -> int:
        """One past the last event the figure has taken in (what a saved trace shows)."""
        return self.model.next_seq

    def saved_bundle(self, max_events: int | None = None) -> dict[str, Any]:
        """What the figure shows, as the saved-trace MIME data (``views/saved.py``)."""
        kwargs = {} if max_events is None else {"max_events": max_events}
        return trace_bundle(self.trace, keys=self._keys, view=self.model.view, title=self._title,
                            since=self._since, until=self.drawn_until, timeline_id=self.id,
                            max_key_lanes=self._max_key_lanes, **kwargs)

    def picture(self, saved: dict[str, Any] | None = None) -> str:
        """The static SVG of what the figure shows (of ``saved``, its saved bundle, if given)."""
        return picture(saved or self.saved_bundle(), lambda n: self.saved_bundle(max_events=n))

    def settle(self) -> bool:
        """Bring the figure and its status up to date now and, if this timeline was shown and
        its figure moved on since, its output too; returns whether the output was re-sent.

        At the end of a cell (``views/pump.py``): an output's saved trace is what it was
        when shown, and a live timeline shown before the loop that ran the race would
        otherwise be saved without it.  ``update_display`` replaces the output's data by
        display id — nbclient/nbconvert apply it to the notebook, and JupyterLab to the
        cell still running; for other cells its extension does the same over its comm.
        """
        from IPython.display import update_display

        self.update()
        if self.saved_until is None or self.drawn_until == self.saved_until:
            return False
        update_display(self._bundle(), raw=True, display_id=self.id)
        self.saved_until = self.drawn_until
        return True

    def _ipython_display_(self) -> None:
        """Display under this timeline's id, so its saved trace can be brought up to date."""
        from IPython.display import display

        display(self._repr_mimebundle_(), raw=True, display_id=self.id)
        self.saved_until = self.drawn_until

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        from .resources import ensure_bokehjs

        ensure_bokehjs()
        return self._bundle(**kwargs)

    def _bundle(self, **kwargs: Any) -> dict[str, Any]:
        """The output's data, without the BokehJS loader: a refreshed output is shown where
        it already is, and a loader displayed then would land in whatever cell is running."""
        bundle = self.widget._repr_mimebundle_(**kwargs)
        exclude = kwargs.get("exclude") or ()
        if MIME not in exclude or SVG_MIME not in exclude:
            # With no kernel (or after a restart) the widget is gone; JupyterLab's extension
            # then draws the saved trace instead, and any other viewer (nbconvert's HTML,
            # GitHub) shows the SVG picture of it, so a saved notebook still shows its race.
            saved = self.saved_bundle()
            if MIME not in exclude:
                bundle[MIME] = saved
            if SVG_MIME not in exclude:
                bundle[SVG_MIME] = self.picture(saved)
        return bundle

    def close(self) -> None:
        OPEN_TIMELINES.discard(self)
        super().close()

    @property
    def updates_sent(self) -> int:
        return self._pump.updates if self._pump is not None else 0
