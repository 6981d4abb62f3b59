"""CPython's collector while a cluster serves a call: as dask's scheduler process sets it.

``dask scheduler`` and ``dask worker`` triple the collector's thresholds when
they start (distributed#1653): a scheduler builds up long-lived bookkeeping —
task states, futures, sets of holders — a few objects per task, and with the
default thresholds CPython runs a full collection every few thousand tasks,
walking every object in the process.  On a 10,000-task ``map`` that was a fifth
of the kernel-side cluster's time.

The kernel-side scheduler shares its process with the user's kernel, so the
thresholds are raised only while a cluster call is served and restored when the
last concurrent call returns: the user's own code between calls sees the
collector as they set it.  Nothing is disabled; collections only come less often.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from . import interrupts

#: The factor ``distributed/cli/dask_scheduler.py`` applies to each threshold.
FACTOR = 3

_F = TypeVar("_F", bound=Callable[..., Any])

_lock = threading.Lock()
_isenabled = gc.isenabled
_depth = 0
_saved: tuple[int, ...] = ()


def enter() -> bool:
    """A call begins: the first of any concurrent calls raises the thresholds.

    Returns whether it did anything: with the collector off (the explorer turns it off
    for its runs) thresholds do not matter, and the caller must not ``leave()``.
    """
    global _depth, _saved
    if not _isenabled():
        return False
    with _lock:
        if _depth == 0:
            _saved = gc.get_threshold()
            gc.set_threshold(*(t * FACTOR for t in _saved))
        _depth += 1
    return True


def leave() -> None:
    """A call ends: the last one restores the thresholds it found."""
    global _depth
    with _lock:
        _depth -= 1
        if _depth == 0:
            gc.set_threshold(*_saved)


@contextlib.contextmanager
def scope() -> Iterator[None]:
    """The raised thresholds for a block: the dask tracer's merge, which builds a row per
    event and grows long-lived state (the trace, the checks' beliefs) as a scheduler does."""
    entered = enter()
    try:
        yield
    finally:
        if entered:
            leave()


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """The collector off for a block, on again after if it was on: an explorer's runs, each
    of which leaves young cycles (a cluster and its actors), collected in bulk by the
    explorer itself (``gc.collect(0)`` every 100 runs)."""
    collecting = _isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def served(method: _F) -> _F:
    """Raise the thresholds for the whole of a public call (``Client.map``, ``gather``, …).

    The cluster's own section (``Cluster.call``) enters the scope too, but a call does
    much before it: a 10,000-task ``map`` builds its keys and pickles its arguments
    first, and with the user's thresholds a full collection landed there on most runs.
    """

    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> Any:
        # ``enter`` and ``leave`` are shielded from interrupts, the call itself is not: one
        # landing between the two would leave the thresholds raised for the session.
        shield = interrupts.enter()
        try:
            entered = enter()
            try:
                gate = interrupts.opened()
                try:
                    return method(*args, **kwargs)
                finally:
                    interrupts.close(gate)
            finally:
                if entered:
                    leave()
        finally:
            interrupts.leave(shield)

    return call  # type: ignore[return-value]
