"""The refs table: per key, what every client and the scheduler believe, and the verdict.

It reads the checks' model of the cluster (rebuilt from the trace), never the
actors, so the same table works for a traced dask cluster or a saved trace.
"""

from __future__ import annotations

import html
import itertools
import threading
import time
from typing import TYPE_CHECKING, Any

import ipywidgets as w

from .. import arguments
from ..beliefs import Beliefs
from ..checks import Checks, KeyRefs
from ..focus import Focus
from ..trace import Batch, Trace, trace_source
from .pump import LiveView, Pump

if TYPE_CHECKING:
    from ..handle import ClusterHandle

_STATE_STYLE = {
    "finished": "#1a7f37", "pending": "#6e7781", "lost": "#bc4c00", "cancelled": "#cf222e",
    "error": "#cf222e", "memory": "#1a7f37", "forgotten": "#cf222e", "borrowed": "#6e7781",
}


def _badge(text: str) -> str:
    color = "#c51b8a" if text.endswith("(ghost)") else _STATE_STYLE.get(text, "#24292f")
    return f"<span style='color:{color};font-weight:600'>{html.escape(text)}</span>"


def gone_lines(gone: dict[str, str]) -> list[str]:
    """A line per worker the scheduler removed, and why: its copies are no longer counted."""
    return [f"gone: {worker} ({why})" for worker, why in gone.items()]


def missing_line(trace: Trace) -> list[str]:
    """What the table cannot have judged, if anything: events the trace does not hold.

    The checks judged every event that reached the trace, even those the full log has
    since let go (``dropped``); events lost before the trace (``lost``: a source's bounded
    buffer overflowed) were never judged, so a verdict may miss them.
    """
    parts = []
    if trace.dropped:
        parts.append(f"{trace.dropped:,} oldest events dropped from the log (checked before "
                     f"they went; the log keeps {trace.capacity:,})")
    if trace.lost:
        parts.append(f"{trace.lost:,} events lost at their source, never checked")
    return ["missing: " + "; ".join(parts)] if parts else []


def empty_line(beliefs: Beliefs, events: int) -> str:
    """What a table with no rows says: that nothing happened yet, or what became of the keys
    (after a clean run every key is forgotten, and "no keys yet" read as if nothing ran)."""
    if not events:
        return "no keys yet"
    gone = len(beliefs.forgotten)
    if not gone:
        return f"no keys held ({events:,} events)"
    # Past the quiet limit the oldest forgotten keys are no longer remembered one by one.
    more = "+" if beliefs.quiet_limit is not None and gone >= beliefs.quiet_limit else ""
    return f"no keys held: {gone:,}{more} key{'s' * (gone != 1 or bool(more))} forgotten ({events:,} events)"


def focus_line(focus: Focus | None) -> str:
    """What a view says of a focused trace (nothing when every key is traced)."""
    return "" if focus is None else f"focused on {focus}: other keys are not traced"


def refs_html(rows: list[KeyRefs], notes: list[str] | None = None, focus: Focus | None = None,
              empty: str = "no keys yet") -> str:
    """The table as HTML: what the trace is focused on above it, ``notes`` (workers gone,
    events missing) under it, ``empty`` instead of it when it has no rows."""
    line = focus_line(focus)
    caption = f"<div><small>{html.escape(line)}</small></div>" if line else ""
    footer = "".join(f"<div style='color:#bc4c00;font-size:12px'>{html.escape(line)}</div>"
                     for line in notes or ())
    if not rows:
        return caption + f"<i>{html.escape(empty)}</i>" + footer
    head = ("<tr><th>key</th><th>clients (refcount, future)</th><th>scheduler</th>"
            "<th>who_wants</th><th>on workers</th><th>checks</th></tr>")
    body = []
    for r in rows:
        clients = "<br>".join(f"{html.escape(c)}: {n} {_badge(s)}" for c, (n, s) in r.clients.items())
        verdict = ("<span style='color:#cf222e;font-weight:700'>✗ " + ", ".join(r.violations)
                   + "</span>") if r.violations else "<span style='color:#1a7f37'>✓</span>"
        body.append(
            f"<tr><td><code>{html.escape(r.key)}</code></td><td>{clients or '–'}</td>"
            f"<td>{_badge(r.scheduler)}</td><td>{html.escape(', '.join(r.who_wants)) or '∅'}</td>"
            f"<td>{html.escape(', '.join(r.on_workers)) or '–'}</td><td>{verdict}</td></tr>")
    return (caption
            + "<table class='jupyter-refs-table' style='border-collapse:collapse;font-size:12px'>"
            f"{head}{''.join(body)}</table>{footer}")


#: Columns a notebook's output area shows without wrapping (JupyterLab, a laptop screen).
TEXT_WIDTH = 100


def refs_text(rows: list[KeyRefs], width: int = TEXT_WIDTH, notes: list[str] | None = None,
              focus: Focus | None = None, empty: str = "no keys yet") -> str:
    """The refs table as text, at most ``width`` columns wide: what the trace is focused on
    first, the ``notes`` lines last, ``empty`` instead of the table when it has no rows.

    Columns are as wide as what they hold.  When a row would still be too wide —
    keys are long — each key gets a line of its own and its references go on the
    next, indented: wrapped on purpose, never by the output area.
    """
    if notes:
        return "\n".join([refs_text(rows, width, focus=focus, empty=empty), *notes])
    first = [focus_line(focus)] if focus is not None else []
    if not rows:
        return "\n".join([*first, empty])
    head = ("key", "clients", "scheduler", "who_wants", "workers", "checks")
    cells = [(r.key,
              " ".join(f"{c}={n}/{s}" for c, (n, s) in r.clients.items()) or "-",
              r.scheduler,
              ",".join(r.who_wants) or "{}",
              ",".join(r.on_workers) or "-",
              "VIOLATION " + ",".join(r.violations) if r.violations else "ok") for r in rows]

    def table(lines: list[tuple[str, ...]]) -> list[str]:
        widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
        return ["  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in lines]

    flat = table([head, *cells])
    if max(map(len, flat)) <= width:
        return "\n".join(first + flat)
    rest = table([("  " + head[1], *head[2:]), *(("  " + c[1], *c[2:]) for c in cells)])
    out = [*first, "key", rest[0]]
    for c, line in zip(cells, rest[1:]):
        out += [c[0], line]
    return "\n".join(out)


_IDS = itertools.count(1)


class RefsTable(LiveView):
    """A live table of every key's references.

    Shown under its own display id, with the table as text and HTML next to the
    widget: a notebook read with no kernel (nbconvert, GitHub) shows the table as
    the cell left it — :meth:`settle` re-sends the output at the end of the cell.
    """

    _view_name = "the refs table"

    @property
    def _status_widget(self) -> Any:
        return self.widget  # the table itself says it stopped

    def __init__(self, source: ClusterHandle | Trace, keys: list[str] | None = None, live: bool = True,
                 rate: float = 4.0):
        trace_source(source)
        arguments.keys(keys)
        arguments.number(rate, "rate")
        if isinstance(source, Trace):
            self.trace, self.checks = source, Checks(source)
        else:
            self.trace = source.trace
            self.checks = source.checks or Checks(source.trace)
        self.keys = list(keys) if keys else None
        self.updates = 0
        self.id = f"{time.time_ns():x}-refs-{next(_IDS)}"
        #: The table text in this table's last displayed output (None: not shown).
        self.shown: str | None = None
        #: One refresh at a time: the pump's and a cell end's (``settle``) must not
        #: interleave, or an older snapshot could be written over a newer one.
        self._lock = threading.Lock()
        self.trace.flush()
        self.widget = w.HTML(self.to_html())
        self._unsubscribe = self.trace.subscribe(self._on_batch)
        self._pump = Pump(self, rate, "jupyter-refs-table") if live else None
        if live:
            self._follow_cells()

    @property
    def _thread(self) -> threading.Thread | None:
        return self._pump.thread if self._pump is not None else None

    def rows(self) -> list[KeyRefs]:
        return self.checks.snapshot(self.keys)

    def notes(self) -> list[str]:
        """The lines under the table: workers the scheduler removed and why (``worker.removed``,
        as the checks saw them), and events the trace does not hold."""
        return gone_lines(dict(self.checks.beliefs.gone)) + missing_line(self.trace)

    @property
    def focus(self) -> Focus | None:
        """The trace's focus, as its events say (``focus.changed``)."""
        return self.checks.beliefs.focus

    def refresh(self) -> None:
        with self._lock:
            self.widget.value = self.to_html()
            self.updates += 1

    def settle(self) -> bool:
        """Show every event the trace holds now (the pump may not have caught up yet) and,
        if this table was shown and changed since, re-send its output; returns whether it did."""
        from IPython.display import update_display

        self.trace.settle()
        self.trace.flush()
        self.refresh()
        bundle = self._repr_mimebundle_()
        if self.shown is None or bundle["text/plain"] == self.shown:
            return False
        update_display(bundle, raw=True, display_id=self.id)
        self.shown = bundle["text/plain"]
        return True

    def empty(self) -> str:
        """What the table says when it has no rows (``empty_line``)."""
        return empty_line(self.checks.beliefs, self.trace.next_seq)

    def to_text(self) -> str:
        return refs_text(self.rows(), notes=self.notes(), focus=self.focus, empty=self.empty())

    def to_html(self) -> str:
        return refs_html(self.rows(), self.notes(), self.focus, self.empty())

    def _on_batch(self, batch: Batch) -> None:
        if self._pump is not None:
            self._pump.wake.set()

    def apply_pending(self) -> None:
        self.refresh()

    def _ipython_display_(self) -> None:
        """Display under this table's id, so its output can be brought up to date."""
        from IPython.display import display

        bundle = self._repr_mimebundle_()
        display(bundle, raw=True, display_id=self.id)
        self.shown = bundle["text/plain"]

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        """The widget, and the table as text and HTML for a reader with no kernel."""
        return {**self.widget._repr_mimebundle_(**kwargs), "text/plain": self.to_text(),
                "text/html": self.to_html()}


