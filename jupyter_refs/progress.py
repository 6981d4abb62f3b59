"""dask's ``progress`` outside a notebook: a text bar that blocks until the futures are done
(``distributed/diagnostics/progressbar.py``: ``TextProgressBar`` over a ``Progress``).

As dask 2026.8.0's: the keys tracked are the futures' keys and every key they depend on in
the scheduler's graph (``complete=True``, dask's default); the bar counts those not yet in
memory, is drawn at once and then every ``interval`` (``"\\r[####    ] | 50% Completed |
 0.1s"``, 40 wide), and ends — its line erased (``"\\33[2K\\r"``) — when none remain or one
errs.  ``progress`` returns nothing; the futures' own errors are not raised by it.

In a notebook (``notebook=True``, or by default in a kernel) dask draws an ipywidgets
widget that does not block; the model does not have that widget, and says so.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from timeit import default_timer
from typing import TYPE_CHECKING, Any

from .client_parts import FutureBase, default_client
from .coordination import futures_of
from .errors import NotModelledError

if TYPE_CHECKING:
    from .cluster import Cluster


def _is_kernel() -> bool:
    """dask's ``is_kernel``: running in an IPython kernel (a notebook, most likely)."""
    if "IPython" not in sys.modules:
        return False
    from IPython import get_ipython

    return getattr(get_ipython(), "kernel", None) is not None


class _Progress:
    """dask's ``Progress`` plugin, read from the scheduler's state when the bar is drawn."""

    def __init__(self, cluster: Cluster, keys: set[str], complete: bool):
        self.cluster, self.keys, self.complete = cluster, keys, complete
        self.all_keys: set[str] | None = None

    def _setup(self) -> bool:
        """Every key tracked, once the scheduler knows the futures' keys (dask waits too)."""
        tasks = self.cluster.scheduler.tasks
        if not self.keys <= tasks.keys():
            return False
        seen: set[str] = set()
        stack = list(self.keys)
        while stack:
            key = stack.pop()
            if key in seen or key not in tasks:
                continue
            ts = tasks[key]
            if not self.complete and ts.state == "memory" and key not in self.keys:
                continue
            seen.add(key)
            stack.extend(ts.dependencies)
        self.all_keys = seen
        return True

    def status(self) -> dict[str, Any]:
        """``{"all", "remaining", "status"}``, as dask's feed sends it (under the lock)."""
        if self.all_keys is None and not self._setup():
            return {"all": 0, "remaining": 0, "status": None}
        tasks = self.cluster.scheduler.tasks
        remaining, status = 0, None
        for key in self.all_keys:
            ts = tasks.get(key)
            if ts is None:
                if key in self.keys:
                    status = "error"  # dask: a key forgotten while tracked stops the bar
                continue
            if ts.state == "erred":
                status = "error"
            if ts.state != "memory":
                remaining += 1
        if status is None and remaining == 0:
            status = "finished"
        return {"all": len(self.all_keys), "remaining": remaining, "status": status}


class TextProgressBar:
    """dask's ``TextProgressBar``: drawn on stdout until the keys are done (blocks)."""

    def __init__(self, keys: list[Any], interval: Any = "100ms", width: int = 40,
                 complete: bool = True, start: bool = True, **kwargs: Any):
        from dask.utils import parse_timedelta

        futures = [k for k in keys if isinstance(k, FutureBase) and k.client is not None]
        client = futures[0].client if futures else default_client()
        if client is None:
            raise ValueError("No clients found")
        self.cluster = client.cluster
        self.progress = _Progress(self.cluster, {getattr(k, "key", k) for k in keys}, complete)
        self.interval = parse_timedelta(interval, default="s")
        self.width = width
        self._start_time = default_timer()
        self.status: str | None = None
        if start:
            self.listen()

    @property
    def elapsed(self) -> float:
        return default_timer() - self._start_time

    def listen(self) -> None:
        """Draw the bar at once, then every interval, until the keys are done — looking at
        the scheduler only then, as dask's feed does (so a client hears of its futures'
        ends in the meantime, as with dask's).  The cluster goes on between looks."""
        import time

        cluster = self.cluster
        progress = self.progress
        with cluster.call(None) as user_call:  # dask's setup: until the scheduler has the keys
            user_call.wait(lambda: progress.all_keys is not None or progress._setup(),
                           "progress")
        while True:
            began = time.monotonic()
            with cluster.call(None):
                response = progress.status()
            self.status = response["status"]
            self._draw_bar(**response)
            if self.status in ("error", "finished"):
                self._draw_stop()
                return
            with cluster.call(None) as user_call:
                try:  # the cluster runs until the next look (or the keys are done)
                    user_call.wait(lambda: progress.status()["status"] is not None,
                                   "progress", self.interval)
                except TimeoutError:
                    pass
            rest = self.interval - (time.monotonic() - began)
            if rest > 0:
                time.sleep(rest)

    def _draw_bar(self, remaining: int, all: int, **kwargs: Any) -> None:  # noqa: A002 - dask's
        from dask.utils import format_time

        frac = (1 - remaining / all) if all else 1.0
        bar = "#" * int(self.width * frac)
        msg = f"\r[{bar:<{self.width}}] | {int(100 * frac)}% Completed | {format_time(self.elapsed)}"
        try:
            sys.stdout.write(msg)
            sys.stdout.flush()
        except ValueError:
            pass

    def _draw_stop(self) -> None:
        sys.stdout.write("\33[2K\r")
        sys.stdout.flush()


def progress(*futures: Any, notebook: bool | None = None, multi: bool = True,
             complete: bool = True, group_by: Any = "prefix", **kwargs: Any) -> None:
    """dask's ``progress``: a text bar on stdout that returns once the futures are done."""
    found = futures_of(list(futures))
    if notebook is None:
        notebook = _is_kernel()
    if group_by not in ("spans", "prefix") and not isinstance(group_by, Callable):
        raise ValueError("`group_by` should be 'spans', 'prefix', or a Callable")
    if notebook:
        raise NotModelledError("progress in a notebook (dask's ipywidgets progress widget)",
                               "progress(..., notebook=False) draws dask's text bar")
    TextProgressBar(found, complete=complete, **kwargs)
