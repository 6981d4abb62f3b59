"""``client.loop``: dask's event loop, as far as code written for dask schedules work on it.

dask's client runs a tornado ``IOLoop`` on a thread of its own; user code (dask's own tests,
``test_as_completed_cancel_last``) hands it callbacks, often coroutines that await the
client's ``asynchronous=True`` calls.  The kernel-side client has no loop of its own, so
this one is an asyncio loop on one daemon thread, shared by every client, started on first
use: ``add_callback`` runs the callback there, and runs a coroutine it returns to its end,
side by side with the caller — as dask's loop does.  Anything else of tornado's loop says it
is not modelled.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Callable
from typing import Any

from .errors import NotModelledError

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None


def _running_loop() -> asyncio.AbstractEventLoop:
    """The shared loop, its thread started on first use."""
    global _loop
    with _lock:
        if _loop is None:
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="jupyter-refs-loop",
                             daemon=True).start()
            _loop = loop
        return _loop


class EventLoop:
    """dask's ``client.loop``: ``add_callback`` (see the module's doc)."""

    def add_callback(self, callback: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        """Run ``callback(*args, **kwargs)`` on the loop's thread soon; a coroutine it
        returns runs there to its end.  Its errors are the loop's to report, as tornado's."""
        loop = _running_loop()

        def run() -> None:
            result = callback(*args, **kwargs)
            if inspect.isawaitable(result):
                asyncio.ensure_future(result, loop=loop)

        loop.call_soon_threadsafe(run)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise NotModelledError(f"Client.loop.{name}", "add_callback is modelled")
