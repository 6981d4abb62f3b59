"""A throttled worker thread shared by the live views.

Views subscribe to the trace with a callback that only wakes the pump; the
pump calls its owner's ``apply_pending()`` at most ``rate`` times a second,
counting the update's own time.  It holds its owner weakly, so a view nobody
references goes away with its thread; an owner whose update raises is told
once (``update_failed``) and the pump stops — a broken view never breaks the cluster.

The end of a notebook cell brings every live view up to date on the kernel's own
thread (:func:`at_cell_end`, registered by the first live view): what a notebook
saves — widget state, a timeline's saved trace — is then what the cell ended
with, not whatever the pump had drawn, and the magics are not needed for it.
"""

from __future__ import annotations

import html
import threading
import time
import warnings
import weakref
from collections.abc import Callable
from typing import Any

from ..trace import following

#: Every live view still following its trace: brought up to date at the end of each cell.
OPEN_VIEWS: weakref.WeakSet[LiveView] = weakref.WeakSet()


class Pump:
    def __init__(self, owner: Any, rate: float, name: str):
        self.owner = weakref.ref(owner)
        self.interval = 1.0 / rate
        self.wake = threading.Event()
        self.stop_event = threading.Event()
        self.updates = 0
        self.thread = threading.Thread(target=self.run, name=name, daemon=True)
        self.thread.start()

    def run(self) -> None:
        with following():  # it reads what the trace holds; a cell end brings in the rest
            self._run()

    def _run(self) -> None:
        while True:
            self.wake.wait()
            self.wake.clear()
            if self.stop_event.is_set():
                return
            owner = self.owner()
            if owner is None:
                return
            started = time.perf_counter()
            try:
                owner.apply_pending()
            except Exception as exc:  # noqa: BLE001 - reported once; the cluster goes on
                owner.update_failed(exc)
                return
            self.updates += 1
            del owner
            if self.stop_event.wait(max(0.0, self.interval - (time.perf_counter() - started))):
                return

    def stop(self) -> None:
        self.stop_event.set()
        self.wake.set()
        if self.thread is not threading.current_thread():
            self.thread.join(timeout=10)


def not_following() -> None:
    """The ``unsubscribe`` of a view that follows no trace (not live, or its source gone)."""


class LiveView:
    """How a live view ends: by ``close()``, or by its update failing (said once, in the view).

    A subclass sets ``widget``, ``_pump`` (or None), ``_unsubscribe``, the widget its
    failure is written into (``_status_widget``) and what it is called (``_view_name``).
    """

    widget: Any
    _pump: Pump | None
    _unsubscribe: Callable[[], None]
    _status_widget: Any
    _view_name: str

    def settle(self) -> bool:
        """Bring the view up to date now, on the calling thread (the pump may be behind), and
        its output if it was shown; returns whether the output was re-sent."""
        raise NotImplementedError

    def _follow_cells(self) -> None:
        """Be brought up to date at the end of every notebook cell, from now on."""
        OPEN_VIEWS.add(self)
        _register_cell_end()

    def update_failed(self, exc: Exception) -> None:
        """The pump broke: say so once, stop following the trace, leave the cluster alone."""
        OPEN_VIEWS.discard(self)
        self._unsubscribe()
        self._status_widget.value = (f"<span style='color:#b00'>live updates stopped: "
                                     f"{type(exc).__name__}: {html.escape(str(exc))}</span>")
        warnings.warn(f"jupyter_refs: {self._view_name} stopped updating: {exc!r}", RuntimeWarning,
                      stacklevel=1)

    def close(self) -> None:
        """Stop following the trace and close the widgets."""
        OPEN_VIEWS.discard(self)
        if self._pump is not None:
            self._pump.stop()
        self._unsubscribe()
        self.widget.close()


def at_cell_end(_result: Any = None) -> None:
    """The end of a cell: every live view brought up to date, saved outputs included.

    An IPython ``post_run_cell`` hook, so it runs while the cell still counts as
    running: the widget updates and ``update_display`` it sends reach the cell's
    outputs in nbclient and in JupyterLab alike, before the notebook is saved.
    """
    for view in list(OPEN_VIEWS):
        try:
            view.settle()
        except Exception as exc:  # noqa: BLE001 - one broken view must not break the cell
            view.update_failed(exc)


def _register_cell_end() -> None:
    """Register :func:`at_cell_end` with the IPython shell, once (no shell: nothing to do)."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython is a dependency
        return
    shell = get_ipython()
    if shell is not None and at_cell_end not in shell.events.callbacks["post_run_cell"]:
        shell.events.register("post_run_cell", at_cell_end)
