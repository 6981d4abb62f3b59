"""The saved trace: a MIME bundle that JupyterLab draws with no kernel running.

A live timeline is a widget; once the kernel is gone, a saved notebook keeps
only a pointer to a widget model that no longer exists.  So every timeline
output also carries ``application/vnd.jupyter-refs.trace+json``: the trace,
laid out by the same :class:`TimelineModel` the live widget uses — lanes top to
bottom, a row per event (seq, time, lane, kind, key, what happened), a row per
message (sent and received seq, lanes, op, keys), each key's scheduler states,
refcount steps and the violations.  The JupyterLab extension (``labextension/``)
only draws these columns, so the saved picture cannot drift from the live one,
and the palettes travel with the data rather than being written twice.

The bundle is bounded: at most ``max_events`` events, chosen around the first
violation (the part of a race worth handing out) or else the latest ones; what
was left out is counted in ``window``.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

from ..trace import Trace, trace_source
from .timeline_model import DEFAULT_COLOR, KIND_COLORS, OP_COLORS, STATE_COLORS, TimelineModel

MIME = "application/vnd.jupyter-refs.trace+json"
VERSION = 1
MAX_EVENTS = 3_000

_LANE_COLUMNS = {"events": ("lane",), "messages": ("lane0", "lane1", "chan"), "states": ("lane",),
                 "refcounts": ("lane",), "violations": ("lane",), "pending": ("lane",)}


class _Violations:
    """Where each trace's violations are, scanned once: a live timeline's bundle is rebuilt
    every couple of seconds, and rescanning a long log for them each time was most of it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: weakref.WeakKeyDictionary[Trace, tuple[int, list[tuple[int, int]]]] = (
            weakref.WeakKeyDictionary())

    def of(self, trace: Trace) -> list[tuple[int, int]]:
        """``(seq, first_seq)`` of every violation in the trace, in order."""
        with self._lock:
            scanned, found = self._seen.get(trace, (0, []))
            end = trace.next_seq
            found = found + [(v.seq, v.get("first_seq", v.seq))
                             for v in trace.events(kind="violation", since=scanned)]
            self._seen[trace] = (end, found)
            return found


_VIOLATIONS = _Violations()


def window(trace: Trace, max_events: int, since: int = 0, until: int | None = None) -> tuple[int, int]:
    """``[lo, hi)``: at most ``max_events`` seqs of the trace, around the first violation if any."""
    if max_events < 1:
        raise ValueError(f"max_events must be at least 1, not {max_events}")
    lo = max(since, trace.next_seq - len(trace))
    hi = trace.next_seq if until is None else min(until, trace.next_seq)
    if hi - lo <= max_events:
        return lo, hi
    first = next((f for seq, f in _VIOLATIONS.of(trace) if lo <= seq < hi), None)
    if first is not None:
        # A third before the broken event, the rest after: the cause and what followed.
        start = max(lo, min(first - max_events // 3, hi - max_events))
        return start, start + max_events
    return hi - max_events, hi


def trace_bundle(trace: Trace, keys: list[str] | None = None, view: str = "logical",
                 title: str = "trace", since: int = 0, until: int | None = None,
                 max_events: int = MAX_EVENTS, max_key_lanes: int = 8,
                 timeline_id: str | None = None) -> dict[str, Any]:
    """The trace (or its ``[since, until)`` part), laid out for a static timeline, as JSON data."""
    lo, hi = window(trace, max_events, since, until)
    model = TimelineModel(keys, view, max_key_lanes, since=lo)
    model.add_events(trace.events(since=lo, until=hi))
    order = model.lane_order()
    top = {lane: pos for pos, lane in enumerate(order)}  # lane id -> row from the top
    columns: dict[str, dict[str, list[Any]]] = {}
    for name, cols in (("events", model.events.cols), ("messages", model.messages.cols),
                       ("states", _joined(model.states.cols, model.open_states())),
                       ("refcounts", _joined(model.refcounts.cols, model.open_refcounts())),
                       ("violations", model.violations.cols), ("pending", model.pending())):
        out = {c: list(v) for c, v in cols.items()}
        for c in _LANE_COLUMNS[name]:
            out[c] = [top[lane] for lane in out[c]]
        columns[name] = out
    return {
        "version": VERSION,
        "timeline_id": timeline_id,
        "title": title,
        "view": view,
        "keys": sorted(keys) if keys else None,
        "window": {"first": lo, "next": hi, "total": trace.next_seq, "dropped": trace.missing},
        "lanes": [{"name": model.label(lane), "group": model.lane_groups[lane]} for lane in order],
        **columns,
        "seen_keys": list(model.seen_keys)[:500],
        "colors": {"op": OP_COLORS, "kind": KIND_COLORS, "state": STATE_COLORS,
                   "default": DEFAULT_COLOR},
    }


def _joined(closed: dict[str, list[Any]], still_open: dict[str, list[Any]]) -> dict[str, list[Any]]:
    return {c: [*closed[c], *still_open[c]] for c in closed}


class SavedTrace:
    """Display a trace as the saved bundle alone: ``display(SavedTrace(trace))``.

    What a notebook shows for it with no kernel is what every timeline output
    falls back to; it is also handy to hand a trace to someone as one output.
    """

    def __init__(self, trace: Trace, **kwargs: Any):
        from .svg import picture

        if not isinstance(trace, Trace):
            trace = trace_source(trace, "trace").trace  # a cluster's or a tracer's

        self.bundle = trace_bundle(trace, **kwargs)
        #: Drawn now: the object keeps no reference to the trace.
        self.picture = picture(self.bundle, lambda n: trace_bundle(trace, **{**kwargs, "max_events": n}))

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        w = self.bundle["window"]
        text = (f"<jupyter_refs trace: events {w['first']}..{w['next'] - 1} of {w['total']}, "
                f"{len(self.bundle['violations']['x'])} violations>")
        from .svg import SVG_MIME

        return {MIME: self.bundle, SVG_MIME: self.picture, "text/plain": text}
