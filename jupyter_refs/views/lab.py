"""The kernel's end of the JupyterLab refs sidebar: one comm target, a feed of the refs.

``%load_ext jupyter_refs`` starts a :class:`LabChannel`.  It registers the comm
target ``jupyter-refs`` and waits: the sidebar opens the comm — when it sees a
kernel, after a restart, and after a cell that mentions ``jupyter_refs`` has run.
The kernel never opens one itself, since a front end without the extension
(nbclassic, VS Code, plain JupyterLab) would log "No handler found for comm
target" for it.  Each open comm gets:

* ``{"type": "refs", ...}`` — every key the current cluster knows, as the refs
  table shows it (client refcounts and future states, scheduler state,
  who_wants, violations, the workers the scheduler removed), sent when the
  trace changes, a few times a second at most, and at once when ``%cluster``
  replaces the cluster;
* ``{"type": "trace", "timeline_id": ..., "bundle": ..., "svg": ...}`` — the
  saved-trace bundle of each open timeline whose figure has moved on, and its
  static SVG picture, every couple of seconds, so the front end can keep the
  output's saved copies as current as the live picture.

The front end may send ``{"type": "filter", "key": KEY or null}`` (show only that
key in this kernel's timelines), ``{"type": "focus", "key": KEY or null}`` (trace
only that key from now on — on every source of a dask cluster — or every key
again: the current cluster's ``focus``) and ``{"type": "refresh"}``.

Like every view, the channel reads the trace and the checks, never an actor;
like every view, it runs in its own thread and a failure stops only it.
"""

from __future__ import annotations

import sys
import threading
import weakref
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from ..trace import Batch
from .pump import Pump, not_following

if TYPE_CHECKING:
    from ..handle import ClusterHandle

TARGET = "jupyter-refs"
MAX_ROWS = 500  # keys sent to the sidebar; the rest are counted
MAX_VIOLATIONS = 50
SAVE_INTERVAL = 2.0  # seconds between refreshes of the open timelines' saved traces


def _describe(source: ClusterHandle) -> dict[str, Any]:
    focus = source.focused
    checks = source.checks
    return {"title": source.title, "events": source.trace.next_seq,
            "dropped": source.trace.missing,
            "violations": len(checks.violations) if checks else 0,
            "focus": None if focus is None else str(focus),
            # Workers the scheduler removed, and why (``worker.removed``): as the refs table
            # and the timeline's lanes say, so a key's data on no worker is not a mystery.
            "gone": dict(checks.beliefs.gone) if checks else {}}


def refs_message(source: ClusterHandle | None) -> dict[str, Any]:
    """What the sidebar shows for ``source`` (a cluster, a dask tracer, or None)."""
    if source is None or source.closed or source.checks is None:
        # ``ended``: the sidebar says the cluster was closed, not that there is none yet.
        ended = source.ended if source is not None and source.closed else None
        return {"type": "refs", "cluster": None, "rows": [], "violations": [], "more": 0,
                "ended": ended}
    rows = source.checks.snapshot()
    violations = source.checks.violations[-MAX_VIOLATIONS:]
    return {
        "type": "refs",
        "cluster": _describe(source),
        "rows": [{"key": r.key, "clients": {c: list(v) for c, v in r.clients.items()},
                  "scheduler": r.scheduler, "who_wants": list(r.who_wants),
                  "on_workers": list(r.on_workers), "violations": list(r.violations)}
                 for r in rows[:MAX_ROWS]],
        "more": max(0, len(rows) - MAX_ROWS),
        "violations": [asdict(v) for v in violations],
    }


class LabChannel:
    """Feeds every open sidebar comm of this kernel; follows the magics' current cluster."""

    _view_name = "the JupyterLab sidebar feed"

    def __init__(self, rate: float = 4.0, save_interval: float = SAVE_INTERVAL):
        from comm import get_comm_manager

        self.comms: list[Any] = []
        self.source: ClusterHandle | None = None
        self.sent = 0
        self._lock = threading.Lock()
        self._unsubscribe = not_following
        self._saved: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
        self._manager = get_comm_manager()
        self._manager.register_target(TARGET, self._on_comm_open)
        self._pump: Pump | None = Pump(self, rate, "jupyter-refs-lab")
        self._stop = threading.Event()
        self._saver = threading.Thread(target=self._save_loop, args=(save_interval,),
                                       name="jupyter-refs-lab-saver", daemon=True)
        self._saver.start()

    # -- comms ----------------------------------------------------------------------------

    def _on_comm_open(self, comm: Any, msg: dict[str, Any]) -> None:
        self._add(comm)

    def _add(self, comm: Any) -> None:
        comm.on_msg(lambda msg, comm=comm: self._on_msg(comm, msg))
        comm.on_close(lambda _msg, comm=comm: self._drop(comm))
        with self._lock:
            self.comms.append(comm)
        self._send_to(comm, refs_message(self.source))

    def _drop(self, comm: Any) -> None:
        with self._lock:
            if comm in self.comms:
                self.comms.remove(comm)

    def _on_msg(self, comm: Any, msg: dict[str, Any]) -> None:
        data = msg.get("content", {}).get("data", {}) or {}
        what = data.get("type")
        if what == "filter":
            self.filter(data.get("key"))
        elif what == "focus":
            self.focus(data.get("key"))
        elif what == "refresh":
            self._send_to(comm, refs_message(self.source))

    def _send_to(self, comm: Any, data: dict[str, Any]) -> None:
        try:
            comm.send(data)
        except Exception:  # noqa: BLE001 - a front end that went away is just dropped
            self._drop(comm)
        else:
            self.sent += 1

    def _broadcast(self, data: dict[str, Any]) -> None:
        with self._lock:
            comms = list(self.comms)
        for comm in comms:
            self._send_to(comm, data)

    # -- following the cluster ----------------------------------------------------------------

    def follow(self, source: ClusterHandle | None) -> None:
        """Show ``source`` from now on (``%cluster`` calls this when it replaces the cluster)."""
        self._unsubscribe()
        self.source = source
        self._unsubscribe = not_following
        if source is not None:
            self._unsubscribe = source.trace.subscribe(self._on_batch)
        self._broadcast(refs_message(source))

    def _on_batch(self, batch: Batch) -> None:
        if self._pump is not None:
            self._pump.wake.set()

    def apply_pending(self) -> None:
        if self.comms:
            self._broadcast(refs_message(self.source))

    def update_failed(self, exc: Exception) -> None:
        import warnings

        self._pump = None
        warnings.warn(f"jupyter_refs: {self._view_name} stopped: {exc!r}", RuntimeWarning, stacklevel=1)

    # -- the timelines ---------------------------------------------------------------------------

    def filter(self, key: str | None) -> int:
        """Show only ``key`` in every open timeline of this kernel; returns how many took it."""
        return sum(t.show_key(key) for t in _open_timelines())

    def focus(self, key: str | None) -> None:
        """Trace only ``key`` from now on (None: every key again), then say so to every sidebar.

        A failure (the cluster closed meanwhile, a dask call that timed out) is told to the
        sidebars as the refs message's ``error``: a click must never raise in the kernel."""
        source = self.source
        if source is None or source.closed:
            return
        from ..focus import exactly

        try:
            source.focus(None if key is None else exactly(key))
        except Exception as exc:  # noqa: BLE001 - reported to the front end instead
            self._broadcast({**refs_message(source), "error": f"could not focus: {exc}"})
            return
        source.sync()
        self._broadcast(refs_message(source))

    def save_timelines(self) -> int:
        """Send the saved trace of every open timeline whose figure moved on; returns how many."""
        if not self.comms:
            return 0
        sent = 0
        for timeline in _open_timelines():
            drawn = timeline.drawn_until
            if self._saved.get(timeline) == drawn:
                continue
            self._saved[timeline] = drawn
            bundle = timeline.saved_bundle()
            self._broadcast({"type": "trace", "timeline_id": timeline.id, "bundle": bundle,
                             "svg": timeline.picture(bundle)})
            sent += 1
        return sent

    def _save_loop(self, interval: float) -> None:
        while not self._stop.wait(interval):
            try:
                self.save_timelines()
            except Exception as exc:  # noqa: BLE001 - saving stops; the kernel goes on
                self.update_failed(exc)
                return

    def close(self) -> None:
        """Stop feeding: unregister the target, close the comms, end the threads."""
        self._stop.set()
        if self._pump is not None:
            self._pump.stop()
        self._unsubscribe()
        self._manager.unregister_target(TARGET, self._on_comm_open)
        with self._lock:
            comms, self.comms = self.comms, []
        for comm in comms:
            try:
                comm.close()
            except Exception:  # noqa: BLE001, S110 - closing a comm whose kernel went away
                pass


def _open_timelines() -> list[Any]:
    """The open timelines, without importing bokeh when no timeline was ever made.

    The module may be in ``sys.modules`` half-imported (a cell importing it while this
    runs on the save thread): then it has no timeline open yet.
    """
    module = sys.modules.get("jupyter_refs.views.timeline")
    return list(getattr(module, "OPEN_TIMELINES", ()))
